"""The wheel's landlord served over HTTP the way a Python user would host it: a threaded
``LandlordDriver`` (expiry on its own thread) answering through ``leasehold.http.serve_threaded``
(``http.server``, HTTP/1.1 keep-alive).  Prints ``listening <port>`` once bound.

Usage: python server.py [PORT]
"""

from __future__ import annotations

import os
import signal
import sys

from leasehold import Landlord, Policy
from leasehold.http import serve_threaded
from leasehold.threaded import LandlordDriver

LEASE = 600_000


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    driver = LandlordDriver(Landlord(1, Policy.bounded(LEASE, LEASE), seed=os.urandom(32))).start()
    server = serve_threaded(driver.handle_bytes, port=port)
    print(f"listening {server.server_address[1]}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        signal.pause()
    finally:
        server.shutdown()
        server.server_close()
        driver.stop()


if __name__ == "__main__":
    main()
