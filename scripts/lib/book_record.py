#!/usr/bin/env python3
"""Runs a script that prints tables, passes its output through, and on success writes it to
docs/book/src/generated/NAME.md for the book to include with {{#include}}.

A script opts in with one line near its top (NAME is the file the book includes):

    [ -n "${LEASEHOLD_BOOK_RECORDING:-}" ] || exec python3 "$(dirname "$0")/lib/book_record.py" NAME "$0" "$@"

The script is run again under this recorder (with LEASEHOLD_BOOK_RECORDING=1), its standard
output is echoed line by line as it comes and kept; standard error and standard input pass
through untouched. Only when the script exits 0 is the page written (to a temporary file, then
renamed): markdown tables (runs of lines starting with '|') stay tables, every other run of
lines becomes a ```text block, under a comment naming the script and a line saying which
command wrote it, when, at which commit and on what machine. LEASEHOLD_BOOK_RECORD=0 runs the
script without writing anything (a quick look that must not replace the book's table).

The docs check (scripts/test-docs.sh) fails on a table in the book that is not such an include,
and on an include in generated/ whose header does not name a script that records it.
"""
import datetime
import os
import re
import signal
import subprocess
import sys

HEADER = "<!-- Written by {script} through scripts/lib/book_record.py: do not edit; run the script again. -->"


def repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=repo_root(), capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def to_markdown(lines: list[str]) -> str:
    """Tables as tables; every other run of non-blank lines as a text block (kept verbatim)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        if not line.strip():
            i += 1
            continue
        j = i
        if line.startswith("#"):
            # A script's own markdown heading: a bold line (a heading would enter the page's
            # table of contents at a level the including page did not choose).
            out.append("**" + line.lstrip("#").strip() + "**")
            j = i + 1
        elif line.lstrip().startswith("|"):
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            out.append("\n".join(l.rstrip() for l in lines[i:j]))
        else:
            while j < len(lines) and lines[j].strip() and not lines[j].lstrip().startswith("|"):
                j += 1
            body = "\n".join(l.rstrip() for l in lines[i:j])
            # A fence longer than any run of backticks inside keeps the block closed.
            ticks = max([3] + [len(m) + 1 for m in re.findall(r"`{3,}", body)])
            out.append("`" * ticks + "text\n" + body + "\n" + "`" * ticks)
        i = j
    return "\n\n".join(out) + "\n"


def main() -> int:
    if len(sys.argv) < 3 or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", sys.argv[1]):
        sys.exit("usage: book_record.py NAME SCRIPT [ARGS...]   (NAME: lower case, digits, '-')")
    name, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    root = repo_root()
    rel_script = os.path.relpath(os.path.abspath(script), root)
    env = dict(os.environ, LEASEHOLD_BOOK_RECORDING="1")
    started = datetime.datetime.now(datetime.timezone.utc)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    proc = subprocess.Popen(["bash", script, *args], stdout=subprocess.PIPE, env=env)
    # Ctrl-C reaches the script through the terminal's process group; the recorder waits for it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    kept: list[str] = []
    assert proc.stdout is not None
    for raw in proc.stdout:
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
        kept.append(raw.decode("utf-8", "replace").rstrip("\n"))
    rc = proc.wait()
    if rc != 0:
        print(f"book_record: {rel_script} exited {rc}; docs/book/src/generated/{name}.md left as it was",
              file=sys.stderr)
        return rc
    if os.environ.get("LEASEHOLD_BOOK_RECORD", "1") == "0":
        return 0
    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = " with uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    command = " ".join([rel_script, *args])
    seconds = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()
    page = "\n".join([
        HEADER.format(script=rel_script),
        "",
        f"Printed by `{command}` on {started:%Y-%m-%d} at commit `{commit}`{dirty}, "
        f"in {seconds:.0f} s on {os.cpu_count()} CPUs (load average {load:.1f} at the start).",
        "",
        to_markdown(kept),
    ])
    out_dir = os.path.join(root, "docs", "book", "src", "generated")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{name}.md")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(path + ".tmp", path)
    print(f"book_record: wrote {os.path.relpath(path, root)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
