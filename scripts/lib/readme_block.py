#!/usr/bin/env python3
"""Prints the first fenced code block of a language from README.md, so the test command can run
the README's quickstarts exactly as written.  Usage: readme_block.py LANG [README]"""
import sys

lang = sys.argv[1]
path = sys.argv[2] if len(sys.argv) > 2 else "README.md"
lines = open(path, encoding="utf-8").read().splitlines()
out, inside = [], False
for line in lines:
    if not inside and line.strip() == "```" + lang:
        inside = True
        continue
    if inside and line.strip() == "```":
        print("\n".join(out))
        sys.exit(0)
    if inside:
        out.append(line)
sys.exit(f"no ```{lang} block in {path}")
