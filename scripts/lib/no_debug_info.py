#!/usr/bin/env python3
"""Fails if a shipped artifact carries debug info: an ELF shared object or archive with .debug_*
sections (readelf), a wasm module with .debug_* custom sections, or a wheel whose native
extension has any. Prints each file's size.  Usage: no_debug_info.py FILE..."""
import os
import subprocess
import sys
import tempfile
import zipfile


def elf_debug_sections(path):
    out = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True).stdout
    return sorted({w for line in out.splitlines() for w in line.split() if w.startswith(".debug_")})


def wasm_debug_sections(path):
    data = open(path, "rb").read()
    return [n for n in ("debug_info", "debug_line", "debug_str") if b"." + n.encode() in data]


failed = 0
for path in sys.argv[1:]:
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z, tempfile.TemporaryDirectory() as d:
            found = []
            for name in z.namelist():
                if name.endswith(".so"):
                    z.extract(name, d)
                    found += elf_debug_sections(os.path.join(d, name))
    elif path.endswith(".wasm"):
        found = wasm_debug_sections(path)
    else:
        found = elf_debug_sections(path)
    size = os.path.getsize(path) / 1e6
    if found:
        failed += 1
        print(f"  FAIL  {path} ({size:.1f} MB) carries debug info: {' '.join(found[:6])}")
    else:
        print(f"  ok    {path} ({size:.1f} MB): no debug info")
sys.exit(1 if failed else 0)
