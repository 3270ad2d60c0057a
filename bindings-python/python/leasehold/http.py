"""Carrying leasehold's wire messages over HTTP with the standard library only.

A landlord is served at any path: the request body is a request message, the response body the
reply message; ``Content-Type: application/json`` selects the JSON encoding, anything else the
binary one.  Transport failures on the client side raise :class:`~leasehold.IndefiniteError`
(worth retrying), which is what the renewal manager expects to be told.
"""

from __future__ import annotations

import asyncio
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional, Tuple

from ._errors import IndefiniteError
from ._types import Encoding

__all__ = ["serve_threaded", "serve_asyncio", "post", "apost", "content_type", "encoding_of"]

Handler = Callable[[bytes, Encoding], bytes]

#: Largest request body a server reads (the landlord's own limits apply after that).
MAX_BODY = 2 << 20


def content_type(encoding: Encoding) -> str:
    """The Content-Type for an encoding."""
    return "application/json" if encoding == "json" else "application/octet-stream"


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


async def serve_asyncio(handle: Handler, host: str = "127.0.0.1", port: int = 0) -> "asyncio.Server":
    """Serves ``handle`` over HTTP/1.1 with asyncio streams (one request per connection)."""

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
                reply = handle(body, encoding)
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


def post(url: str, data: bytes, encoding: Encoding = "binary", timeout: float = 5.0) -> bytes:
    """POSTs a message and returns the reply body; transport failures raise IndefiniteError."""
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": content_type(encoding)})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body: bytes = resp.read()
            return body
    except (urllib.error.URLError, OSError, ValueError) as e:
        raise IndefiniteError(f"indefinite failure: POST {url}: {e}", f"POST {url}: {e}") from e


async def apost(url: str, data: bytes, encoding: Encoding = "binary", timeout: float = 5.0) -> bytes:
    """POSTs a message with asyncio streams (http only); transport failures raise IndefiniteError."""
    u = urllib.parse.urlsplit(url)
    host, port = u.hostname or "127.0.0.1", u.port or 80

    async def exchange() -> bytes:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            writer.write(
                b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                % ((u.path or "/").encode(), host.encode(), content_type(encoding).encode(), len(data))
                + data
            )
            await writer.drain()
            status, headers = await _read_head(reader)
            if " 200 " not in status + " ":
                raise IndefiniteError(f"indefinite failure: {status}", status)
            return await reader.readexactly(int(headers.get("content-length", "0")))
        finally:
            writer.close()

    try:
        return await asyncio.wait_for(exchange(), timeout)
    except IndefiniteError:
        raise
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
        raise IndefiniteError(f"indefinite failure: POST {url}: {e!r}", f"POST {url}: {e!r}") from e
