#!/usr/bin/env python3
"""Checks of the documentation book (docs/book), run by scripts/test-docs.sh.

  book_check.py lint               sources: SUMMARY covers every page, every code block's info
                                   string follows the convention, every table is a generated
                                   include or marked as written by hand, every generated include
                                   names the script that writes it
  book_check.py blocks OUT         writes every non-Rust code block (includes expanded, as mdbook
                                   expands them) to OUT/ with a manifest; Rust blocks are doc
                                   tests of the crate leasehold-book (docs/book/doctest)
  book_check.py run OUT            runs or compiles the blocks written by `blocks` (environment:
                                   BOOK_PYTHON, BOOK_NODE_APP, BOOK_TSC, BOOK_C_LIBDIR, ...)
  book_check.py links BOOK_DIR     every link and anchor of the built book resolves (external
                                   links are not fetched)

The conventions themselves are the book's page "Writing for this book"
(docs/book/src/contributing.md). Each check prints one line per failure and ends with
"<check>: N passed, M failed".
"""
from __future__ import annotations

import html.parser
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "docs" / "book"
SRC = BOOK / "src"
GENERATED = SRC / "generated"

# Info strings: the language, then attributes. Anything else fails the check, so a typo never
# turns a tested block into an untested one.
LANGS: dict[str, set[str]] = {
    # compiled and run as doc tests by rustdoc (docs/book/doctest); rustdoc's own attributes
    "rust": {"ignore", "no_run", "should_panic", "compile_fail", "noplayground",
             "edition2018", "edition2021", "edition2024"},
    "python": {"ignore", "no_run"},   # run with the installed wheel; no_run: compiled + mypy
    "js": {"ignore", "no_run"},       # run in Node against the installed npm package; no_run: node --check
    "ts": {"ignore"},                 # type-checked by tsc --strict against the package's types
    "c": {"ignore", "no_run"},        # compiled against include/leasehold.h, linked, run under valgrind
    "sh": {"ignore"},                 # parsed by bash -n; repository paths, packages and binaries must exist
    "toml": {"ignore"},               # parsed
    "json": {"ignore"},               # parsed
    "text": set(),                    # not code: output, transcripts, diagrams
}
HAND_TABLE = re.compile(r"^\s*<!--\s*hand-written table\b.*-->\s*$")
RECORD_HEADER = re.compile(
    r"^<!-- Written by (?P<script>\S+) through scripts/lib/book_record\.py: do not edit; run the script again\. -->$")
INCLUDE = re.compile(r"\{\{#(include|rustdoc_include)\s+([^}\s]+)\s*\}\}")
TABLE_DELIM = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")


class Tally:
    def __init__(self, name: str) -> None:
        self.name, self.passed, self.failed = name, 0, 0

    def ok(self, what: str, quiet: bool = False) -> None:
        self.passed += 1
        if not quiet:
            print(f"  ok    {what}")

    def bad(self, what: str) -> None:
        self.failed += 1
        print(f"  FAILED {what}")

    def end(self) -> int:
        print(f"{self.name}: {self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


# ---------------------------------------------------------------------------------------------
# Markdown: includes and fenced blocks


def rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(SRC.resolve()))
    except ValueError:
        return str(p.resolve().relative_to(ROOT))


def include_text(path: Path, spec: str | None, rustdoc: bool) -> str:
    """The part of `path` that {{#include path:spec}} takes, as mdbook takes it: the whole file,
    a line N, lines N:M (1-based, either end open), or the lines between ANCHOR: name and
    ANCHOR_END: name; lines naming an anchor are dropped. rustdoc_include keeps the rest of the
    file as hidden lines ('# ')."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    anchor_line = re.compile(r"ANCHOR(_END)?:\s*[\w-]+")
    keep = [not anchor_line.search(l) for l in lines]
    chosen = [True] * len(lines)
    if spec:
        if re.fullmatch(r"\d*(:\d*)?", spec):
            a, _, b = spec.partition(":")
            lo = int(a) - 1 if a else 0
            hi = (int(b) if b else len(lines)) if ":" in spec else lo + 1
            chosen = [lo <= i < hi for i in range(len(lines))]
        else:
            inside, found = False, False
            chosen = []
            for l in lines:
                m = re.search(r"ANCHOR(_END)?:\s*([\w-]+)", l)
                if m and m.group(2) == spec:
                    inside, found = m.group(1) is None, True
                chosen.append(inside)
            if not found:
                raise ValueError(f"{rel(path)} has no anchor {spec!r}")
    out = []
    for l, k, c in zip(lines, keep, chosen):
        if not k:
            continue
        if c:
            out.append(l)
        elif rustdoc:
            out.append("# " + l if l.strip() else "#")
    return "\n".join(out)


def expand(text: str, base: Path, depth: int = 0) -> str:
    """Expands {{#include}} and {{#rustdoc_include}} (not those escaped with a backslash)."""
    if depth > 10:
        raise ValueError("includes nested deeper than 10")

    def one(m: re.Match[str]) -> str:
        if m.start() > 0 and text[m.start() - 1] == "\\":
            return m.group(0)
        target, _, spec = m.group(2).partition(":")
        path = (base / target).resolve()
        inner = include_text(path, spec or None, m.group(1) == "rustdoc_include")
        return expand(inner, path.parent, depth + 1)

    return INCLUDE.sub(one, text)


@dataclass
class Block:
    page: str
    line: int
    info: str
    lang: str
    attrs: list[str]
    code: str
    indent: str = ""


@dataclass
class Page:
    path: Path
    raw: str
    blocks: list[Block] = field(default_factory=list)
    text_lines: list[tuple[int, str]] = field(default_factory=list)  # lines outside code blocks


FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")


def parse(text: str, page: str) -> tuple[list[Block], list[tuple[int, str]]]:
    blocks: list[Block] = []
    outside: list[tuple[int, str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            outside.append((i + 1, lines[i]))
            i += 1
            continue
        fence, indent, info = m.group("fence"), m.group("indent"), m.group("info").strip()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            s = lines[j].strip()
            if s.startswith(fence[0] * len(fence)) and set(s) == {fence[0]}:
                break
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        parts = [p.strip() for p in re.split(r"[,\s]+", info) if p.strip()]
        lang = parts[0] if parts else ""
        blocks.append(Block(page, i + 1, info, lang, parts[1:], "\n".join(body) + "\n", indent))
        i = j + 1
    return blocks, outside


def pages() -> list[Page]:
    out = []
    for path in sorted(SRC.rglob("*.md")):
        if "figures" in path.relative_to(SRC).parts:
            continue
        out.append(Page(path, path.read_text(encoding="utf-8")))
    return out


# ---------------------------------------------------------------------------------------------
# lint


def summary_pages() -> list[str]:
    text = (SRC / "SUMMARY.md").read_text(encoding="utf-8")
    return [m.group(1) for m in re.finditer(r"\]\(([^)#\s]+\.md)\)", text)]


def recorder_scripts() -> dict[str, str]:
    """NAME -> the script that records docs/book/src/generated/NAME.md."""
    found: dict[str, str] = {}
    for script in sorted((ROOT / "scripts").glob("*.sh")):
        for m in re.finditer(r"book_record\.py\"?\s+([a-z0-9-]+)\s", script.read_text(encoding="utf-8")):
            found[m.group(1)] = str(script.relative_to(ROOT))
    return found


def lint() -> int:
    t = Tally("book lint")
    listed = set(summary_pages())
    recorders = recorder_scripts()
    all_pages = pages()
    included_generated: set[str] = set()
    for page in all_pages:
        name = rel(page.path)
        in_generated = page.path.parent == GENERATED
        if name != "SUMMARY.md" and not in_generated:
            if name in listed:
                t.ok(f"{name}: listed in SUMMARY.md", quiet=True)
            else:
                t.bad(f"{name}: not listed in SUMMARY.md (a page nobody can reach)")
        # Includes of generated pages: the page must name its script, and the script record it.
        for m in INCLUDE.finditer(page.raw):
            target = (page.path.parent / m.group(2).partition(":")[0]).resolve()
            if target.parent == GENERATED.resolve():
                included_generated.add(target.name)
        # Code blocks (of the page as written and of what it includes).
        try:
            expanded = expand(page.raw, page.path.parent)
        except (OSError, ValueError) as e:
            t.bad(f"{name}: include: {e}")
            continue
        blocks, _ = parse(expanded, name)
        for b in blocks:
            where = f"{name}:{b.line} ```{b.info}"
            if b.lang not in LANGS:
                t.bad(f"{where}: unknown language {b.lang!r} (allowed: {', '.join(sorted(LANGS))}; "
                      f"see contributing.md)")
            elif bad := [a for a in b.attrs if a not in LANGS[b.lang]]:
                t.bad(f"{where}: attribute {', '.join(bad)} not allowed for {b.lang} "
                      f"(allowed: {', '.join(sorted(LANGS[b.lang])) or 'none'})")
            else:
                t.ok(where, quiet=True)
        # Tables: only in generated pages, or marked as written by hand.
        if not in_generated:
            _, outside = parse(page.raw, name)
            for k, (lineno, line) in enumerate(outside):
                if k + 1 < len(outside) and line.strip().startswith("|") and TABLE_DELIM.match(outside[k + 1][1]) \
                        and outside[k + 1][0] == lineno + 1:
                    before = [l for _, l in outside[:k] if l.strip()]
                    if before and HAND_TABLE.match(before[-1]):
                        t.ok(f"{name}:{lineno}: table marked as written by hand", quiet=True)
                    else:
                        t.bad(f"{name}:{lineno}: a table written into the page: include the file its "
                              f"script writes ({{{{#include ../generated/NAME.md}}}}), or mark a table "
                              f"that no script prints with <!-- hand-written table: why -->")
        else:
            first = page.raw.split("\n", 1)[0]
            m = RECORD_HEADER.match(first)
            stem = page.path.stem
            if not m:
                t.bad(f"{name}: no header naming the script that wrote it (scripts/lib/book_record.py)")
            elif recorders.get(stem) != m.group("script"):
                t.bad(f"{name}: says it was written by {m.group('script')}, but "
                      f"{recorders.get(stem, 'no script')} records {stem!r}")
            else:
                t.ok(f"{name}: written by {m.group('script')}")
    for g in sorted(GENERATED.glob("*.md")):
        if g.name not in included_generated:
            t.bad(f"generated/{g.name}: included by no page")
    for stem, script in sorted(recorders.items()):
        if not (GENERATED / f"{stem}.md").exists():
            t.bad(f"{script} records generated/{stem}.md, which is missing: run the script")
    return t.end()


# ---------------------------------------------------------------------------------------------
# blocks: extract


EXT = {"python": "py", "js": "mjs", "ts": "ts", "c": "c", "sh": "sh", "toml": "toml", "json": "json"}


def extract(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    counts: dict[str, int] = {}
    failed = 0
    for page in pages():
        name = rel(page.path)
        try:
            blocks, _ = parse(expand(page.raw, page.path.parent), name)
        except (OSError, ValueError) as e:
            print(f"  FAILED {name}: include: {e}")
            failed += 1
            continue
        for b in blocks:
            if b.lang in ("rust", "text") or b.lang not in LANGS:
                continue
            mode = "ignore" if "ignore" in b.attrs else "no_run" if "no_run" in b.attrs else "run"
            stem = re.sub(r"[^A-Za-z0-9]+", "_", name.removesuffix(".md")) + f"_l{b.line}"
            path = out / b.lang / f"{stem}.{EXT[b.lang]}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(b.code, encoding="utf-8")
            manifest.append({"page": name, "line": b.line, "lang": b.lang, "mode": mode,
                             "file": str(path.relative_to(out))})
            counts[f"{b.lang} {mode}"] = counts.get(f"{b.lang} {mode}", 0) + 1
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    print("blocks: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    return 1 if failed else 0


# ---------------------------------------------------------------------------------------------
# blocks: run


def cargo_names() -> tuple[set[str], set[str]]:
    meta = json.loads(subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"],
                                     cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    packages = {p["name"] for p in meta["packages"]}
    targets = {t["name"] for p in meta["packages"] for t in p["targets"]}
    return packages, targets


REPO_PATH = re.compile(
    r"(?<![\w.$/-])(?:\./)?((?:scripts|docs|examples|bindings-[a-z]+|core|server|store|include|bench-e2e|client|cli|deploy)"
    r"/[\w./@+-]*)")


def check_shell(code: str, packages: set[str], targets: set[str]) -> list[str]:
    problems = []
    with tempfile.NamedTemporaryFile("w", suffix=".sh") as f:
        f.write(code)
        f.flush()
        r = subprocess.run(["bash", "-n", f.name], capture_output=True, text=True)
        if r.returncode:
            problems.append("bash -n: " + r.stderr.strip().replace(f.name, "block"))
    for m in REPO_PATH.finditer(code):
        p = m.group(1).rstrip(".")
        if any(c in p for c in "*?["):
            continue
        if not (ROOT / p).exists():
            ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", p], cwd=ROOT).returncode == 0
            if not ignored:
                problems.append(f"{p}: no such file in the repository (nor a build output git ignores)")
    try:
        words = shlex.split(code, comments=True)
    except ValueError:
        words = code.split()
    for k, w in enumerate(words[:-1]):
        nxt = words[k + 1]
        if w in ("-p", "--package") and nxt not in packages:
            problems.append(f"{w} {nxt}: no such package in the workspace")
        if w in ("--bin", "--example", "--bench", "--test") and nxt not in targets:
            problems.append(f"{w} {nxt}: no such target in the workspace")
    return problems


def run(out: Path) -> int:
    t = Tally("book blocks")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    env = os.environ
    packages, targets = cargo_names()
    timeout = int(env.get("BOOK_BLOCK_TIMEOUT", "120"))
    c_libdir = env.get("BOOK_C_LIBDIR", "")
    valgrind = shutil.which("valgrind")
    ts_files: list[dict[str, str]] = []

    def proc(cmd: list[str], cwd: Path | str, **kw: object) -> subprocess.CompletedProcess[str]:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)  # type: ignore[call-overload]

    def report(entry: dict[str, str], what: str, r: subprocess.CompletedProcess[str] | None, problems: list[str] | None = None) -> None:
        where = f"{entry['page']}:{entry['line']} {entry['lang']} ({what})"
        if problems:
            t.bad(where + "\n" + "\n".join("        " + p for p in problems))
        elif r is not None and r.returncode != 0:
            tail = (r.stdout + r.stderr).strip().splitlines()[-25:]
            t.bad(where + f": exit {r.returncode}\n" + "\n".join("        " + l for l in tail))
        else:
            t.ok(where)

    for e in manifest:
        path = out / e["file"]
        lang, mode = e["lang"], e["mode"]
        if mode == "ignore":
            t.ok(f"{e['page']}:{e['line']} {lang} (fragment: ignore)", quiet=True)
            continue
        with tempfile.TemporaryDirectory(prefix="leasehold-book-") as work:
            try:
                if lang == "python":
                    py = env["BOOK_PYTHON"]
                    if mode == "run":
                        report(e, "run", proc([py, str(path)], work))
                    else:
                        r = proc([py, "-m", "py_compile", str(path)], work)
                        if r.returncode == 0:
                            r = proc([py, "-m", "mypy", "--no-incremental", "--cache-dir", "/dev/null",
                                      "--ignore-missing-imports", str(path)], work)
                        report(e, "compiled, mypy", r)
                elif lang == "js":
                    app = Path(env["BOOK_NODE_APP"])
                    copy = app / f"book_{path.name}"
                    shutil.copy(path, copy)
                    try:
                        cmd = ["node", str(copy)] if mode == "run" else ["node", "--check", str(copy)]
                        report(e, "run in Node" if mode == "run" else "node --check", proc(cmd, app))
                    finally:
                        copy.unlink()
                elif lang == "ts":
                    ts_files.append(e)
                elif lang == "c":
                    exe = Path(work) / "a.out"
                    cmd = ["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'include'}", str(path),
                           "-o", str(exe), f"-L{c_libdir}", "-lleasehold", f"-Wl,-rpath,{c_libdir}"]
                    r = proc(cmd, work)
                    if r.returncode == 0 and mode == "run":
                        vg = [valgrind, "-q", "--leak-check=full", "--errors-for-leak-kinds=definite,indirect,possible",
                              "--error-exitcode=99"] if valgrind else []
                        r = proc([*vg, str(exe)], work)
                        report(e, "compiled, run under valgrind" if valgrind else "compiled, run", r)
                    else:
                        report(e, "compiled and linked", r)
                elif lang == "sh":
                    report(e, "bash -n, paths and packages", None, check_shell(path.read_text(), packages, targets))
                elif lang == "toml":
                    try:
                        tomllib.loads(path.read_text())
                        report(e, "parsed", None)
                    except tomllib.TOMLDecodeError as err:
                        report(e, "parsed", None, [str(err)])
                elif lang == "json":
                    try:
                        json.loads(path.read_text())
                        report(e, "parsed", None)
                    except json.JSONDecodeError as err:
                        report(e, "parsed", None, [str(err)])
            except subprocess.TimeoutExpired:
                report(e, mode, None, [f"timed out after {timeout} s"])
            except KeyError as err:
                report(e, mode, None, [f"environment variable {err} not set (run through scripts/test-docs.sh)"])
    if ts_files:
        app = Path(env["BOOK_NODE_APP"])
        tsdir = app / "book-ts"
        shutil.rmtree(tsdir, ignore_errors=True)
        tsdir.mkdir()
        for e in ts_files:
            shutil.copy(out / e["file"], tsdir / Path(e["file"]).name)
        (tsdir / "tsconfig.json").write_text(json.dumps({
            "compilerOptions": {"strict": True, "noEmit": True, "target": "es2022", "module": "nodenext",
                                "moduleResolution": "nodenext", "lib": ["esnext", "dom"], "skipLibCheck": False},
            "include": ["*.ts"]}))
        r = subprocess.run([env["BOOK_TSC"], "-p", str(tsdir)], capture_output=True, text=True, timeout=timeout)
        for e in ts_files:
            mine = [l for l in (r.stdout + r.stderr).splitlines() if Path(e["file"]).name in l]
            report(e, "tsc --strict", None, mine or ([] if r.returncode == 0 else None))
        if r.returncode and not any(Path(e["file"]).name in r.stdout for e in ts_files):
            t.bad("tsc failed outside the blocks:\n" + r.stdout + r.stderr)
    return t.end()


# ---------------------------------------------------------------------------------------------
# links


class Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for k in ("id", "name") if tag == "a" else ("id",):
            if a.get(k):
                self.ids.add(a[k] or "")
        for k in ("href", "src"):
            v = a.get(k)
            if v is not None and tag in ("a", "img", "link", "script", "iframe", "source", "embed"):
                self.refs.append((tag, v))


def parse_html(path: Path, cache: dict[Path, Links]) -> Links:
    if path not in cache:
        p = Links()
        p.feed(path.read_text(encoding="utf-8", errors="replace"))
        cache[path] = p
    return cache[path]


def links(book_dir: str) -> int:
    t = Tally("book links")
    root = Path(book_dir).resolve()
    cache: dict[Path, Links] = {}
    external: set[str] = set()
    # The book's own pages (not the API references' insides, which their tools check, nor the
    # 404 page, whose links are absolute for a server's root).
    own = [p for p in sorted(root.rglob("*.html"))
           if p.relative_to(root).parts[0] != "api" and p.name != "404.html"]
    for page in own:
        doc = parse_html(page, cache)
        for tag, ref in doc.refs:
            where = f"{page.relative_to(root)}: <{tag}> {ref}"
            parts = urlsplit(ref)
            if parts.scheme or ref.startswith("//"):
                if parts.scheme in ("http", "https"):
                    external.add(ref)
                continue
            if not parts.path and not parts.fragment:
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            try:
                target.relative_to(root)
            except ValueError:
                t.bad(f"{where}: leaves the book ({target})")
                continue
            if not target.exists():
                t.bad(f"{where}: no such file")
                continue
            if parts.fragment and target.suffix == ".html":
                frag = unquote(parts.fragment)
                if frag not in parse_html(target, cache).ids:
                    t.bad(f"{where}: no anchor #{frag} in {target.relative_to(root)}")
                    continue
            t.ok(where, quiet=True)
    for ref in sorted(external):
        print(f"  (external, not fetched) {ref}")
    return t.end()


def main() -> int:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd = sys.argv[1]
    if cmd == "lint":
        return lint()
    if cmd == "blocks":
        return extract(Path(sys.argv[2]))
    if cmd == "run":
        return run(Path(sys.argv[2]))
    if cmd == "links":
        return links(sys.argv[2])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
