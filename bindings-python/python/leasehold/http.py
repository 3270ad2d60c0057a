"""Carrying leasehold's wire messages over HTTP with the standard library only.

A landlord is served at any path: the request body is a request message, the response body the
reply message; ``Content-Type: application/json`` selects the JSON encoding, anything else the
binary one.  Transport failures on the client side raise :class:`~leasehold.IndefiniteError`
(worth retrying), which is what the renewal manager expects to be told.  :class:`Cluster` is a
client of several servers (a ``leasehold-server`` cluster): it tries them in turn.
"""

from __future__ import annotations

import asyncio
import http.client
import inspect
import ssl
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Awaitable, Callable, Dict, Generator, List, Mapping, Optional, Sequence, Tuple, Type, Union

from ._errors import IndefiniteError
from ._types import Encoding

__all__ = [
    "Cluster",
    "serve_threaded",
    "serve_asyncio",
    "post",
    "apost",
    "content_type",
    "encoding_of",
    "landlord_query",
]

#: What a server calls for each request: (body, encoding) -> reply body.
Handler = Callable[[bytes, Encoding], bytes]
#: The same, for ``serve_asyncio``: it may also return an awaitable (``aio.LandlordDriver.handle``).
AsyncHandler = Callable[[bytes, Encoding], Union[bytes, Awaitable[bytes]]]

#: Largest request body a server reads (the landlord's own limits apply after that).
MAX_BODY = 2 << 20


def content_type(encoding: Encoding) -> str:
    """The Content-Type for an encoding."""
    return "application/json" if encoding == "json" else "application/octet-stream"


def landlord_query(landlord: Union[int, str]) -> str:
    """The query naming ``landlord``: ``landlord=`` and the id as the wire writes it, 16 hex
    digits (landlord 16 is ``landlord=0000000000000010``). A ``leasehold-server`` refuses any
    other form with a 400, so no renewal can reach the wrong shard."""
    if isinstance(landlord, str):
        if len(landlord) != 16 or any(c not in "0123456789abcdefABCDEF" for c in landlord):
            raise ValueError(f"a landlord id is 16 hex digits, got {landlord!r}")
        return f"landlord={landlord.lower()}"
    if not 0 <= int(landlord) < 1 << 64:
        raise ValueError(f"a landlord id is a 64-bit unsigned number, got {landlord!r}")
    return f"landlord={int(landlord):016x}"


def encoding_of(content_type_header: Optional[str]) -> Encoding:
    """The encoding a Content-Type asks for."""
    if content_type_header and content_type_header.split(";")[0].strip().lower() == "application/json":
        return "json"
    return "binary"


def serve_threaded(handle: Handler, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """Serves ``handle`` (e.g. ``LandlordDriver.handle_bytes``) with ``http.server`` on a thread.

    HTTP/1.1 with keep-alive: a client may send many requests on one connection.  Each reply
    goes out in one write on a socket with ``TCP_NODELAY`` (headers and body written apart
    would meet Nagle's algorithm and the client's delayed ACK: about 40 ms per request).

    Returns the running server; ``server.server_address`` has the port, ``server.shutdown()``
    followed by ``server.server_close()`` stops it.
    """

    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # TCP_NODELAY on each accepted socket

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                length = -1
            if length < 0 or length > MAX_BODY:
                self.send_error(413 if length > MAX_BODY else 400)
                return
            body = self.rfile.read(length)
            encoding = encoding_of(self.headers.get("Content-Type"))
            reply = handle(body, encoding)
            head = "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n" % (
                content_type(encoding),
                len(reply),
                "Connection: close\r\n" if self.close_connection else "",
            )
            self.wfile.write(head.encode("latin-1") + reply)  # one write per reply

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="leasehold-http", daemon=True).start()
    return server


async def _read_head(reader: asyncio.StreamReader) -> Tuple[str, dict[str, str]]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    return lines[0], headers


async def serve_asyncio(handle: AsyncHandler, host: str = "127.0.0.1", port: int = 0) -> "asyncio.Server":
    """Serves ``handle`` over HTTP/1.1 with asyncio streams (one request per connection).

    ``handle`` may be a coroutine function (``aio.LandlordDriver.handle``, which answers a
    durable landlord's requests once they are on disk without blocking the loop)."""

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            start, headers = await _read_head(reader)
            try:
                length = int(headers.get("content-length", "0"))
            except ValueError:
                length = -1
            if not start.startswith("POST ") or length < 0 or length > MAX_BODY:
                writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            else:
                body = await reader.readexactly(length)
                encoding = encoding_of(headers.get("content-type"))
                answer = handle(body, encoding)
                reply = await answer if inspect.isawaitable(answer) else answer
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                    % (content_type(encoding).encode(), len(reply))
                    + reply
                )
            await writer.drain()
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(on_client, host, port)



#: Path of the lease endpoint of ``leasehold-server``, used when a URL names no path.
LEASE_PATH = "/lease"

#: Redirects followed within one attempt (307/308, same method and body).
MAX_REDIRECTS = 3

_Response = Tuple[int, Dict[str, str], bytes]
#: One exchange to make (the arguments of ``_exchange`` / ``_aexchange``), and what fails one.
_Exchange = Tuple[urllib.parse.SplitResult, str, bytes, Encoding, float, Dict[str, str], Optional[ssl.SSLContext]]
_Steps = Generator[_Exchange, _Response, bytes]
_SYNC_ERRORS = (OSError, http.client.HTTPException, ValueError)
_ASYNC_ERRORS = (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError)


#: Headers the helper writes itself: ones of these names in ``headers`` are left out.
_OWN_HEADERS = frozenset({"content-type", "content-length", "connection", "host"})


def _extra_headers(headers: Optional[Mapping[str, str]]) -> Dict[str, str]:
    """The caller's extra headers, checked (no line breaks; no colon in a name), without the
    ones the helper writes itself."""
    out: Dict[str, str] = {}
    for k, v in (headers or {}).items():
        if any(c in k for c in "\r\n:") or "\r" in v or "\n" in v:
            raise ValueError(f"header {k!r} would split the request")
        if k.lower() not in _OWN_HEADERS:
            out[k] = v
    return out


def _split(url: str) -> urllib.parse.SplitResult:
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError(f"not an http:// URL: {url!r}")
    return u


def _origin(u: urllib.parse.SplitResult) -> Tuple[str, str, int]:
    return (u.scheme, (u.hostname or "").lower(), u.port or (443 if u.scheme == "https" else 80))


class Cluster:
    """The holder's side of landlord servers over HTTP: one URL, or the URLs of a
    ``leasehold-server`` cluster (docs/server-transports.md), tried in turn.

    Grants go to ``<server>/lease`` (a URL's own path, when it has one); renewals and cancels
    (every request the renewal driver sends, which names its landlord) add
    ``?landlord=<16 hex digits>`` (:func:`landlord_query`). Any answer that carries a wire
    reply (the request's content type and a body that decodes) is the landlord's definite
    answer, whatever its status: a ``404`` unknown lease or a ``409`` denial is returned, not
    retried elsewhere. Within one send, a refused or reset connection, a time-out (``timeout``
    seconds per attempt: a paused server accepts connections but never answers), a 5xx (such
    as ``503`` with ``Retry-After``) or any answer without a wire reply moves on to the next
    server, starting from the one that answered last, or from the owner of the landlord's
    shard once a server named it (``X-Leasehold-Owner``). A ``307``/``308`` is followed with
    the same method and body. Only when every server failed does the send raise
    :class:`~leasehold.IndefiniteError`, which the renewal manager retries until the lease
    would expire; a transport failure is never reported as a definite error.

    ``send`` / ``asend`` fit ``obtain_lease``; ``transport`` / ``atransport`` fit the renewal
    drivers (both also take the URLs themselves and build one of these). Thread-safe.

    ``https://`` URLs are checked against ``cafile`` (a PEM bundle; the system's CAs when
    None) or a ready ``ssl_context``; ``certfile`` and ``keyfile`` present a client
    certificate (servers started with ``--tls-client-ca``); ``token`` goes with every request
    as ``Authorization: Bearer <token>`` (servers started with ``--tokens``). A refusal for
    the identity (401, 403) or its quota (409) is a wire reply, so it is the server's definite
    answer, not a reason to try another server.
    """

    def __init__(
        self,
        urls: Union[str, Sequence[str]],
        *,
        encoding: Encoding = "binary",
        timeout: float = 1.0,
        token: Optional[str] = None,
        cafile: Optional[str] = None,
        certfile: Optional[str] = None,
        keyfile: Optional[str] = None,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        listed = [urls] if isinstance(urls, str) else list(urls)
        if not listed:
            raise ValueError("a cluster needs at least one server URL")
        self.urls: List[str] = listed
        self._servers = [_split(u) for u in listed]
        self.encoding: Encoding = encoding
        self.timeout = timeout
        if ssl_context is None:
            ssl_context = ssl.create_default_context(cafile=cafile)
            if certfile is not None:
                ssl_context.load_cert_chain(certfile, keyfile)
        elif cafile is not None or certfile is not None:
            raise ValueError("give ssl_context or cafile/certfile/keyfile, not both")
        self._ssl = ssl_context
        self._headers: Dict[str, str] = _extra_headers({"Authorization": f"Bearer {token}"} if token else {})
        self._lock = threading.Lock()
        self._current = 0
        self._owner: Dict[int, int] = {}

    def _target(self, i: int, landlord: Optional[int], endpoint: str = "lease") -> str:
        u = self._servers[i]
        path = u.path if u.path not in ("", "/") else LEASE_PATH
        if endpoint != "lease":  # beside the lease endpoint: /x/lease -> /x/coord
            path = path.rsplit("/", 1)[0] + "/" + endpoint
        query = [u.query] if u.query else []
        if landlord is not None:
            query.append(landlord_query(landlord))
        return path + ("?" + "&".join(query) if query else "")

    def _order(self, landlord: Optional[int]) -> List[int]:
        with self._lock:
            first = self._owner.get(landlord, self._current) if landlord is not None else self._current
        n = len(self._servers)
        return [(first + k) % n for k in range(n)]

    def _answered(self, i: int, landlord: Optional[int], headers: Dict[str, str]) -> None:
        owner = headers.get("x-leasehold-owner")
        at = i
        if owner:
            try:
                o = _origin(_split(owner))
                at = next((k for k, s in enumerate(self._servers) if _origin(s) == o), i)
            except ValueError:
                pass
        with self._lock:
            self._current = i
            if landlord is not None:
                self._owner[landlord] = at

    def _failed(self, failures: List[str]) -> IndefiniteError:
        detail = "every server failed: " + "; ".join(failures)
        return IndefiniteError(f"indefinite failure: {detail}", detail)

    def _settled(
        self, i: int, landlord: Optional[int], url: str, response: _Response, failures: List[str], kind: str = "Reply"
    ) -> Optional[bytes]:
        """The body of an answer that carries a wire reply of ``kind`` (remembering who
        answered); None, noted, for anything else."""
        status, headers, body = response
        if status == 200 or (400 <= status < 500 and self._is_wire_reply(headers, body, kind)):
            self._answered(i, landlord, headers)
            return body
        failures.append(f"{url}: HTTP {status}")
        return None

    def _is_wire_reply(self, headers: Dict[str, str], body: bytes, kind: str = "Reply") -> bool:
        """Whether an error status carries the landlord's reply: the request's content type
        and a body that decodes (a proxy's error page does not)."""
        if encoding_of(headers.get("content-type")) != self.encoding or (
            self.encoding == "binary" and not headers.get("content-type", "").startswith("application/octet-stream")
        ):
            return False
        from ._native import Reply, decode_message  # imported late so this module loads alone

        try:
            if kind == "Reply":
                Reply.decode(body, self.encoding)
            else:
                decode_message(kind, body, self.encoding)
        except Exception:
            return False
        return True

    def _attempts(self, data: bytes, landlord: Optional[int], headers: Optional[Mapping[str, str]], endpoint: str, kind: str,
                  wait: float, on_attempt: Optional[Callable[[], None]], errors: Tuple[Type[BaseException], ...]) -> _Steps:
        """The failover of :meth:`post` and :meth:`apost`, written once: it yields each exchange to
        make and is sent its response or thrown its error (one of ``errors``); it returns the body."""
        sent = {**self._headers, **_extra_headers(headers)}
        failures: List[str] = []
        timeout = self.timeout + wait
        for i in self._order(landlord):
            u, target, url = self._servers[i], self._target(i, landlord, endpoint), self.urls[i]
            if on_attempt is not None:
                on_attempt()
            try:
                response = yield u, target, data, self.encoding, timeout, sent, self._ssl
                for _ in range(MAX_REDIRECTS):
                    if (hop := _redirect(url, response)) is None:
                        break
                    u, target, url = hop
                    response = yield u, target, data, self.encoding, timeout, sent, self._ssl
            except errors as e:
                failures.append(f"{url}: {e!r}")
                continue
            if (body := self._settled(i, landlord, url, response, failures, kind)) is not None:
                return body
        raise self._failed(failures)

    def post(
        self,
        data: bytes,
        landlord: Optional[int] = None,
        *,
        headers: Optional[Mapping[str, str]] = None,
        endpoint: str = "lease",
        kind: str = "Reply",
        wait: float = 0.0,
        on_attempt: Optional[Callable[[], None]] = None,
    ) -> bytes:
        """POSTs a message (for ``landlord``: a renewal or cancel; None: a grant) and returns
        the reply body; raises ``IndefiniteError`` once every server failed. ``headers`` are
        sent as well (e.g. the ``leasehold-listener`` of a discovery registration; a header
        with a line break raises ``ValueError`` before anything is sent). ``endpoint``
        ``"coord"`` sends a coordination message (``kind`` ``"CoordReply"`` comes back) to
        ``/coord`` beside the lease endpoint; ``wait`` seconds (how long the server may hold
        it: an acquire that waits, a long poll) are added to each attempt's time-out.
        ``on_attempt`` is called as each server is tried, just before its request goes out: the
        last call before the reply is when the answered request was sent (what a lease it grants
        counts from; after a failover, not the first attempt)."""
        steps = self._attempts(data, landlord, headers, endpoint, kind, wait, on_attempt, _SYNC_ERRORS)
        step: Union[_Exchange, bytes] = next(steps)
        while not isinstance(step, bytes):
            step = _resume(steps, _tried(step))
        return step

    async def apost(
        self,
        data: bytes,
        landlord: Optional[int] = None,
        *,
        headers: Optional[Mapping[str, str]] = None,
        endpoint: str = "lease",
        kind: str = "Reply",
        wait: float = 0.0,
        on_attempt: Optional[Callable[[], None]] = None,
    ) -> bytes:
        """As :meth:`post`, with asyncio streams (TLS for https://)."""
        steps = self._attempts(data, landlord, headers, endpoint, kind, wait, on_attempt, _ASYNC_ERRORS)
        step: Union[_Exchange, bytes] = next(steps)
        while not isinstance(step, bytes):
            step = _resume(steps, await _atried(step))
        return step

    def send(self, data: bytes) -> bytes:
        """A grant (or any message naming no landlord): ``threaded.obtain_lease``'s ``send``."""
        return self.post(data)

    async def asend(self, data: bytes) -> bytes:
        """As :meth:`send`, for ``aio.obtain_lease``."""
        return await self.apost(data)

    def transport(self, landlord: int, data: bytes) -> bytes:
        """A renewal driver's transport (``threaded.RenewalDriver``)."""
        return self.post(data, landlord)

    async def atransport(self, landlord: int, data: bytes) -> bytes:
        """A renewal driver's transport (``aio.RenewalDriver``)."""
        return await self.apost(data, landlord)


def _path_of(u: urllib.parse.SplitResult) -> str:
    return (u.path or "/") + ("?" + u.query if u.query else "")


def _exchange(
    u: urllib.parse.SplitResult,
    target: str,
    data: bytes,
    encoding: Encoding,
    timeout: float,
    extra: Optional[Mapping[str, str]] = None,
    context: Optional[ssl.SSLContext] = None,
) -> _Response:
    """One POST on a fresh connection; the status, the headers (lower-case names) and the body."""
    conn: http.client.HTTPConnection
    if u.scheme == "https":
        conn = http.client.HTTPSConnection(u.hostname or "127.0.0.1", u.port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port, timeout=timeout)
    try:
        sent = {**(extra or {}), "Content-Type": content_type(encoding), "Connection": "close"}
        conn.request("POST", target, body=data, headers=sent)
        resp = conn.getresponse()
        body = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body
    finally:
        conn.close()


def _redirect(url: str, response: _Response) -> Optional[Tuple[urllib.parse.SplitResult, str, str]]:
    """Where a 307/308 sends the same POST next (``urllib`` would not follow it): the split
    URL, its path and query, and the URL; None for any other answer."""
    status, headers, _ = response
    if status not in (307, 308) or "location" not in headers:
        return None
    u = _split(urllib.parse.urljoin(url, headers["location"]))
    return u, _path_of(u), urllib.parse.urlunsplit(u)


async def _aexchange(
    u: urllib.parse.SplitResult,
    target: str,
    data: bytes,
    encoding: Encoding,
    timeout: float,
    extra: Optional[Mapping[str, str]] = None,
    context: Optional[ssl.SSLContext] = None,
) -> _Response:
    tls = u.scheme == "https"
    host = u.hostname or "127.0.0.1"
    more = b"".join(b"%s: %s\r\n" % (k.encode("latin-1"), v.encode("latin-1")) for k, v in (extra or {}).items())

    async def exchange() -> _Response:
        if tls:
            reader, writer = await asyncio.open_connection(
                host, u.port or 443, ssl=context or ssl.create_default_context(), server_hostname=host
            )
        else:
            reader, writer = await asyncio.open_connection(host, u.port or 80)
        try:
            writer.write(
                b"POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                % (target.encode(), host.encode(), more, content_type(encoding).encode(), len(data))
                + data
            )
            await writer.drain()
            start, headers = await _read_head(reader)
            parts = start.split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
                raise ValueError(f"not an HTTP status line: {start[:80]!r}")
            if "content-length" in headers:
                body = await reader.readexactly(int(headers["content-length"]))
            else:
                body = await reader.read()
            return int(parts[1]), headers, body
        finally:
            writer.close()

    return await asyncio.wait_for(exchange(), timeout)


def _resume(steps: _Steps, outcome: Union[_Response, BaseException]) -> Union[_Exchange, bytes]:
    """Hands an exchange's outcome to ``Cluster._attempts``: the next exchange, or the body."""
    try:
        return steps.throw(outcome) if isinstance(outcome, BaseException) else steps.send(outcome)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def _tried(step: _Exchange) -> Union[_Response, BaseException]:
    try:
        return _exchange(*step)
    except _SYNC_ERRORS as e:
        return e


async def _atried(step: _Exchange) -> Union[_Response, BaseException]:
    try:
        return await _aexchange(*step)
    except _ASYNC_ERRORS as e:
        return e


def post(
    url: Union[str, Sequence[str]],
    data: bytes,
    encoding: Encoding = "binary",
    timeout: float = 5.0,
    *,
    landlord: Optional[int] = None,
    headers: Optional[Mapping[str, str]] = None,
) -> bytes:
    """POSTs a message to a server (or to the first of a list of servers that answers: see
    :class:`Cluster`) and returns the reply body; transport failures raise IndefiniteError.
    ``headers`` go with the request (Content-Type and Connection are the helper's own)."""
    return Cluster(url, encoding=encoding, timeout=timeout).post(data, landlord, headers=headers)


async def apost(
    url: Union[str, Sequence[str]],
    data: bytes,
    encoding: Encoding = "binary",
    timeout: float = 5.0,
    *,
    landlord: Optional[int] = None,
    headers: Optional[Mapping[str, str]] = None,
) -> bytes:
    """POSTs a message with asyncio streams, as :func:`post`."""
    return await Cluster(url, encoding=encoding, timeout=timeout).apost(data, landlord, headers=headers)
