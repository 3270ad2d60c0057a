#!/usr/bin/env python3
"""Hostile clients for scripts/test-security.sh (standard library only).

  hostile.py flood HOST PORT TOTAL CONNS          grants with pipelining; prints counts
  hostile.py slowloris HOST PORT CONNS SECONDS    heads a byte a second; prints when closed
  hostile.py holder HOST PORT SECONDS             grant + renews on one connection; p99 ms
  hostile.py bighead HOST PORT BYTES              one header line of BYTES; prints the status
  hostile.py idle HOST PORT SECONDS               connects, sends nothing; when closed
  hostile.py forward HOST PORT SECRET_FILE|-      forwarded requests: none, forged, signed

Every line printed is `key=value ...` for the script to check.
"""

import hashlib
import hmac
import json
import selectors
import socket
import sys
import threading
import time


def grant_body(resource: bytes, ms: int, rid: int = 1) -> bytes:
    return json.dumps(
        {"v": 1, "id": str(rid), "body": {"op": "grant", "resource": resource.hex(), "duration": str(ms)}}
    ).encode()


def request(host, port, path, body, headers=()):
    head = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json",
            f"Content-Length: {len(body)}"] + list(headers)
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def read_response(f):
    """(status, headers, body) of one response from a buffered socket file."""
    line = f.readline()
    if not line:
        raise ConnectionError("closed")
    status = int(line.split()[1])
    length = 0
    headers = {}
    while True:
        h = f.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode().partition(":")
        headers[k.strip().lower()] = v.strip()
        if k.strip().lower() == "content-length":
            length = int(v)
    return status, headers, f.read(length)


def flood(host, port, total, conns):
    """TOTAL grants of distinct resources over CONNS connections, 64 in flight on each."""
    counts = {"granted": 0, "denied": 0, "other": 0}
    reason = [""]
    lock = threading.Lock()
    per = total // conns

    def worker(w):
        s = socket.create_connection((host, port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        f = s.makefile("rb", buffering=1 << 16)
        local = {"granted": 0, "denied": 0, "other": 0}
        sent = done = 0
        depth = 64
        while done < per:
            batch = []
            while sent < per and sent - done < depth:
                batch.append(request(host, port, "/lease", grant_body(b"flood/%d/%d" % (w, sent), 60000)))
                sent += 1
            if batch:
                s.sendall(b"".join(batch))
            status, _, body = read_response(f)
            done += 1
            if status == 200:
                local["granted"] += 1
            elif status == 409:
                local["denied"] += 1
                if not reason[0]:
                    reason[0] = json.loads(body)["body"]["message"]
            else:
                local["other"] += 1
        s.close()
        with lock:
            for k in counts:
                counts[k] += local[k]

    t0 = time.time()
    ts = [threading.Thread(target=worker, args=(i,)) for i in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dt = time.time() - t0
    print(f"sent={per * conns} granted={counts['granted']} denied={counts['denied']} "
          f"other={counts['other']} seconds={dt:.1f} rate={per * conns / dt:.0f}")
    print(f"reason={reason[0]!r}")


def slowloris(host, port, n, seconds):
    """N connections each sending a request head one byte a second; reports how many the
    server closed, and the longest any stayed open after its first byte was sent."""
    head = b"POST /lease HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: " + b"a" * 4000
    sel = selectors.DefaultSelector()
    socks = []
    opened = time.time()
    for _ in range(n):
        s = socket.create_connection((host, port))
        s.setblocking(False)
        socks.append(s)
        sel.register(s, selectors.EVENT_READ)
    closed_at = {}
    first = {}
    i = 0
    end = time.time() + seconds
    while time.time() < end and len(closed_at) < n:
        for s in socks:
            if s.fileno() in closed_at or s.fileno() == -1:
                continue
            try:
                s.send(head[i % len(head): i % len(head) + 1])
                first.setdefault(s.fileno(), time.time())
            except OSError:
                closed_at[s.fileno()] = time.time()
        i += 1
        stop = time.time() + 1.0
        while time.time() < stop:
            for key, _ in sel.select(timeout=max(0.0, stop - time.time())):
                s = key.fileobj
                # The server closed it (EOF or a reset): a slow head is never answered.
                try:
                    s.recv(4096)
                except OSError:
                    pass
                if s.fileno() not in closed_at:
                    closed_at[s.fileno()] = time.time()
                sel.unregister(s)
    longest = max((t - first.get(fd, opened) for fd, t in closed_at.items()), default=float("nan"))
    print(f"connections={n} closed={len(closed_at)} longest_open_s={longest:.1f}")
    for s in socks:
        s.close()


def holder(host, port, seconds):
    """One holder on one kept-alive connection: a grant, then a renewal every 20 ms; the
    latencies' p50 and p99 in ms."""
    s = socket.create_connection((host, port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = s.makefile("rb")
    s.sendall(request(host, port, "/lease", grant_body(b"holder/steady", 60000)))
    status, _, body = read_response(f)
    reply = json.loads(body)
    assert status == 200, (status, body)
    cookie, landlord = reply["body"]["cookie"], reply["landlord"]
    renew = json.dumps({"v": 1, "id": "2", "body": {"op": "renew", "cookie": cookie, "duration": "60000"}}).encode()
    lat = []
    end = time.time() + seconds
    while time.time() < end:
        t = time.perf_counter()
        s.sendall(request(host, port, f"/lease?landlord={landlord}", renew))
        status, _, _ = read_response(f)
        lat.append((time.perf_counter() - t) * 1000)
        assert status == 200
        time.sleep(0.02)
    lat.sort()
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"renewals={len(lat)} p50_ms={p(0.5):.2f} p99_ms={p(0.99):.2f} max_ms={lat[-1]:.2f}")


def bighead(host, port, size):
    s = socket.create_connection((host, port))
    body = grant_body(b"x", 1000)
    s.sendall(request(host, port, "/lease", body, [f"X-Big: {'a' * size}"]))
    s.settimeout(5)
    data = b""
    try:
        while b"\r\n" not in data:
            d = s.recv(4096)
            if not d:
                break
            data += d
    except OSError:
        pass
    status = data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else "closed"
    print(f"status={status}")


def idle(host, port, seconds):
    s = socket.create_connection((host, port))
    s.settimeout(seconds)
    t = time.time()
    try:
        d = s.recv(1)
        print(f"closed_after_s={time.time() - t:.1f} bytes={len(d)}")
    except socket.timeout:
        print(f"closed_after_s=never")


def forward(host, port, secret_file):
    """A forwarded grant without proof, with a forged proof, and (given the secret) with a
    real one: the statuses."""
    query = "landlord=0000000000000001"
    body = grant_body(b"fwd/x", 1000)

    def send(value):
        s = socket.create_connection((host, port))
        f = s.makefile("rb")
        s.sendall(request(host, port, "/lease?" + query, body, [f"X-Leasehold-Forwarded: {value}"]))
        st, _, b = read_response(f)
        s.close()
        return st, json.loads(b)["body"].get("message", "")

    at = int(time.time() * 1000)
    forged = hmac.new(b"not the cluster secret, 32 bytes!!", f"leasehold-forward\n{at}\n-\n{query}\n".encode() + body, hashlib.sha256).hexdigest()
    out = {"bare": send("1"), "forged": send(f"{at}.-.{forged}")}
    if secret_file != "-":
        secret = open(secret_file, "rb").read().strip()
        mac = hmac.new(secret, f"leasehold-forward\n{at}\n-\n{query}\n".encode() + body, hashlib.sha256).hexdigest()
        out["signed"] = send(f"{at}.-.{mac}")
        old = at - 120_000
        mac = hmac.new(secret, f"leasehold-forward\n{old}\n-\n{query}\n".encode() + body, hashlib.sha256).hexdigest()
        out["replayed_old"] = send(f"{old}.-.{mac}")
    print(" ".join(f"{k}={v[0]}" for k, v in out.items()))
    for k, v in out.items():
        print(f"{k}_message={v[1]!r}")


def tlskeep(host, port, ca, pid):
    """Two requests on one TLS connection with a SIGHUP to the server between them."""
    import os
    import signal
    import ssl
    ctx = ssl.create_default_context(cafile=ca)
    s = ctx.wrap_socket(socket.create_connection((host, port)), server_hostname=host)
    f = s.makefile("rb")
    get = f"GET /livez HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    s.sendall(get)
    first = read_response(f)[0]
    os.kill(pid, signal.SIGHUP)
    time.sleep(0.5)
    s.sendall(get)
    second = read_response(f)[0]
    print(f"before={first} after={second}")


if __name__ == "__main__":
    cmd, host, port, *rest = sys.argv[1:]
    port = int(port)
    if cmd == "flood":
        flood(host, port, int(rest[0]), int(rest[1]))
    elif cmd == "slowloris":
        slowloris(host, port, int(rest[0]), float(rest[1]))
    elif cmd == "holder":
        holder(host, port, float(rest[0]))
    elif cmd == "bighead":
        bighead(host, port, int(rest[0]))
    elif cmd == "idle":
        idle(host, port, float(rest[0]))
    elif cmd == "tlskeep":
        tlskeep(host, port, rest[0], int(rest[1]))
    elif cmd == "forward":
        forward(host, port, rest[0])
    else:
        sys.exit(__doc__)
