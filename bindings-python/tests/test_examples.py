"""The examples run as the README shows: a landlord service and a holder talking over HTTP."""

from __future__ import annotations

import select
import signal
import subprocess
import sys
from pathlib import Path

from conftest import repo_root


def read_line(proc: "subprocess.Popen[str]", timeout: float = 10) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "no output in time"
    return proc.stdout.readline().strip()


def test_landlord_service_and_holder(tmp_path: Path) -> None:
    ex = repo_root() / "examples" / "python"
    data = tmp_path / "landlord-data"
    service = subprocess.Popen(
        [sys.executable, str(ex / "landlord_service.py"), "--port", "0", "--max-ms", "400", "--default-ms", "300", "--data", str(data)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        banner = read_line(service)
        assert " on http://127.0.0.1:" in banner and f"durable in {data}: new store" in banner, banner
        url = banner.rsplit(" on ", 1)[1]
        holder = subprocess.run(
            [sys.executable, str(ex / "holder.py"), "--url", url, "--lease-ms", "300", "--hold-ms", "900"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert holder.returncode == 0, holder.stderr
        lines = holder.stdout.splitlines()
        assert lines[0].startswith("holding"), lines
        cookie = lines[0].split()[1]
        assert any(line.startswith("desired_expiration_reached") for line in lines), lines
        # The holder let the lease run out at its desired expiration: the landlord expires it.
        line = read_line(service)
        assert line.startswith("expired") and cookie in line and "b'printer'" in line, line
        service.send_signal(signal.SIGTERM)
        assert service.wait(10) == 0
        assert read_line(service) == "stopped with 0 lease(s) live"
    finally:
        if service.poll() is None:
            service.kill()
            service.wait()
        if service.stdout is not None:
            service.stdout.close()
