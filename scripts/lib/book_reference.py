#!/usr/bin/env python3
"""Renders the book's reference pages from the artefacts that define them, so they cannot drift
from the code.  Run by scripts/book-reference.sh, which gathers the inputs (it builds the
binaries, starts a server for its OpenAPI document and metrics, and runs every --help).

  book_reference.py INPUTS OUT

INPUTS is a directory with:
  openapi.json            GET /openapi.json of a running leasehold-server
  metrics.txt             GET /metrics of a running leasehold-server (file store)
  help/<cmd words>.txt    `<cmd words> --help` for every command and subcommand, e.g.
                          help/leasehold lease grant.txt
OUT receives ref-http-api.md, ref-cli.md, ref-server.md, ref-config.md, ref-errors.md, ref-metrics.md,
ref-dashboard.md, ref-alerts.md (each starting with the header the book's lint expects).  Every output is a pure
function of its inputs: no dates, no ports, no commit, so `--check` can compare byte for byte.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "scripts/book-reference.sh"


def header(source: str) -> str:
    return (f"<!-- Written by {SCRIPT} from {source}: do not edit; run the script again. -->\n\n")


def cell(text: object) -> str:
    """Text for one table cell: one line, pipes escaped."""
    s = " ".join(str(text).split())
    return s.replace("|", "\\|")


def code(text: str) -> str:
    return "`" + text.replace("`", "'") + "`"


# ---------------------------------------------------------------------------------------------
# HTTP API from the OpenAPI document


def resolve(doc: dict, node: dict) -> dict:
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        cur: object = doc
        for part in ref[2:].split("/"):
            cur = cur[part.replace("~1", "/").replace("~0", "~")]  # type: ignore[index]
        node = cur  # type: ignore[assignment]
    return node


def schema_name(node: dict) -> str:
    """A compact type: a schema's name, `const "x"`, `array of T`, `{a: T, b?: U}`, `A | B`."""
    if "$ref" in node:
        return node["$ref"].rsplit("/", 1)[-1]
    if "oneOf" in node:
        return " | ".join(schema_name(n) for n in node["oneOf"])
    if "const" in node:
        return json.dumps(node["const"])
    if node.get("type") == "array":
        return f"array of {schema_name(node.get('items', {}))}"
    if node.get("type") == "object" and "properties" in node:
        req = set(node.get("required", []))
        return "{" + ", ".join(f"{k}{'' if k in req else '?'}: {schema_name(v)}"
                               for k, v in node["properties"].items()) + "}"
    t = node.get("type", "any")
    return "/".join(t) if isinstance(t, list) else str(t)


def anchor(text: str) -> str:
    """The anchor mdbook gives a heading."""
    a = re.sub(r"[^\w\- ]", "", text.lower()).strip().replace(" ", "-")
    return a


def render_schema(doc: dict, name: str, node: dict, out: list[str]) -> None:
    node = resolve(doc, node)
    out.append(f"### {name}\n")
    if node.get("description"):
        out.append(" ".join(node["description"].split()) + "\n")
    if "oneOf" in node:
        variants = node["oneOf"]
        if all(v.get("type") == "object" and "op" in v.get("properties", {}) for v in variants):
            out.append("One of these, by `op`:\n")
            out.append("| op | fields |")
            out.append("|---|---|")
            for v in variants:
                req = set(v.get("required", []))
                fields = ", ".join(f"`{k}`{'' if k in req else ' (optional)'}: {schema_name(t)}"
                                   for k, t in v["properties"].items() if k != "op")
                out.append(f"| `{v['properties']['op'].get('const')}` | {cell(fields) or '(none)'} |")
            out.append("")
        else:
            out.append("One of: " + ", ".join(code(schema_name(n)) for n in variants) + ".\n")
    props = node.get("properties", {})
    if props:
        required = set(node.get("required", []))
        out.append("| field | type | required | meaning |")
        out.append("|---|---|---|---|")
        for k, v in props.items():
            typ = schema_name(v)
            if "enum" in v:
                typ += " (" + ", ".join(json.dumps(e) for e in v["enum"]) + ")"
            elif "const" in v:
                typ = "const " + json.dumps(v["const"])
            elif "pattern" in v:
                typ += f" matching `{v['pattern']}`"
            out.append(f"| `{k}` | {cell(typ)} | {'yes' if k in required else 'no'} | "
                       f"{cell(v.get('description', ''))} |")
        out.append("")
    elif "oneOf" not in node:
        typ = schema_name(node)
        extra = ""
        if "pattern" in node:
            extra = f" matching `{node['pattern']}`"
        if "enum" in node:
            extra = " (" + ", ".join(json.dumps(e) for e in node["enum"]) + ")"
        out.append(f"Type: {typ}{extra}.\n")


def http_api(doc: dict) -> str:
    out = [header("the server's OpenAPI document (GET /openapi.json)").rstrip("\n"), ""]
    info = doc.get("info", {})
    out.append(f"OpenAPI {doc.get('openapi')}, *{info.get('title', '')}*, version "
               f"{info.get('version', '')}.\n")
    if info.get("description"):
        out.append(" ".join(info["description"].split()) + "\n")
    out.append("### Endpoints\n")
    out.append("| method | path | what |")
    out.append("|---|---|---|")
    ops = []
    for path, item in doc.get("paths", {}).items():
        for method, op in item.items():
            if method not in ("get", "post", "put", "delete", "patch"):
                continue
            ops.append((path, method, op))
            title = f"{method.upper()} {path}"
            out.append(f"| {method.upper()} | [`{path}`](#{anchor(title)}) | {cell(op.get('summary', ''))} |")
    out.append("")
    for path, method, op in ops:
        # The path in code: mdbook would read a heading's trailing {...} as attributes.
        out.append(f"### {method.upper()} `{path}`\n")
        if op.get("description"):
            out.append(op["description"].strip() + "\n")
        elif op.get("summary"):
            out.append(op["summary"].strip() + "\n")
        params = [resolve(doc, p) for p in op.get("parameters", [])]
        if params:
            out.append("| parameter | in | required | type | meaning |")
            out.append("|---|---|---|---|---|")
            for p in params:
                typ = schema_name(p.get("schema", {}))
                if "pattern" in p.get("schema", {}):
                    typ += f" matching `{p['schema']['pattern']}`"
                out.append(f"| `{p['name']}` | {p['in']} | {'yes' if p.get('required') else 'no'} | "
                           f"{cell(typ)} | {cell(p.get('description', ''))} |")
            out.append("")
        body = op.get("requestBody")
        if body:
            body = resolve(doc, body)
            types = ", ".join(f"`{t}` ({schema_name(m.get('schema', {}))})"
                              for t, m in body.get("content", {}).items())
            out.append(f"Request body{' (required)' if body.get('required') else ''}: {types}."
                       + (f" {' '.join(body['description'].split())}" if body.get("description") else "") + "\n")
        responses = op.get("responses", {})
        if responses:
            out.append("| status | meaning | body | headers |")
            out.append("|---|---|---|---|")
            for status, r in responses.items():
                r = resolve(doc, r)
                types = ", ".join(f"`{t}` ({schema_name(m.get('schema', {}))})"
                                  for t, m in r.get("content", {}).items()) or "none"
                hdrs = ", ".join(f"`{h}`" for h in r.get("headers", {})) or ""
                out.append(f"| {status} | {cell(r.get('description', ''))} | {cell(types)} | {hdrs} |")
            out.append("")
        # Examples: the request examples, as the document gives them (made by the core's codec).
        sources = [("request", (resolve(doc, body) if body else {}).get("content", {}))]
        sources += [(f"reply ({status})", resolve(doc, r).get("content", {})) for status, r in responses.items()]
        for where, content in sources:
            for t, m in content.items():
                for ex_name, ex in m.get("examples", {}).items():
                    ex = resolve(doc, ex)
                    if "value" not in ex or not t.endswith("json"):
                        continue
                    out.append(f"Example {where}, *{cell(ex.get('summary', ex_name))}*:\n")
                    out.append("```json")
                    out.append(json.dumps(ex["value"], separators=(", ", ": ")))
                    out.append("```\n")
    schemas = doc.get("components", {}).get("schemas", {})
    if schemas:
        out.append("### Schemas\n")
        out.append("Every message of the wire protocol in its JSON form, and the admin types.\n")
        body_out: list[str] = []
        for name in sorted(schemas):
            render_schema(doc, name, schemas[name], body_out)
        out.extend(l.replace("### ", "#### ", 1) if l.startswith("### ") else l for l in body_out)
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------------------------
# Command lines from --help


def help_pages(inputs: Path, program: str) -> list[tuple[str, str]]:
    """(command words, help text) for `program` and its subcommands, in the order of the help."""
    found = {p.stem: p.read_text(encoding="utf-8") for p in (inputs / "help").glob("*.txt")}
    order: list[tuple[str, str]] = []

    def walk(words: str) -> None:
        text = found.get(words)
        if text is None:
            return
        order.append((words, text))
        for sub in subcommands(text):
            walk(f"{words} {sub}")

    walk(program)
    return order


def subcommands(help_text: str) -> list[str]:
    """The subcommands a clap help lists under "Commands:" (without `help`)."""
    out, inside = [], False
    for line in help_text.splitlines():
        if line.strip() == "Commands:":
            inside = True
            continue
        if inside:
            if not line.strip() or not line.startswith("  "):
                break
            m = re.match(r"^  (\S+)", line)
            if m and m.group(1) != "help":
                out.append(m.group(1))
    return out


def cli(inputs: Path, programs: list[str], source: str) -> str:
    out = [header(source).rstrip("\n"), ""]
    for program in programs:
        for words, text in help_pages(inputs, program):
            level = "###" if words == program else "####"
            out.append(f"{level} `{words}`\n")
            out.append("```text")
            out.append(f"$ {words} --help")
            out.append(text.rstrip("\n"))
            out.append("```\n")
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------------------------
# Error codes, metrics, dashboard


def errors() -> str:
    data = json.loads((ROOT / "core/tests/vectors/errors.json").read_text(encoding="utf-8"))
    out = [header("core/tests/vectors/errors.json, the codes every binding's tests read").rstrip("\n"), ""]
    out.append("| code | name | definite | meaning |")
    out.append("|---:|---|---|---|")
    for c in data["codes"]:
        out.append(f"| {c['code']} | `{c['name']}` | {'yes' if c['definite'] else 'no: retrying may help'} | "
                   f"{cell(c['meaning'])} |")
    return "\n".join(out) + "\n"


def metrics(text: str) -> str:
    helps: dict[str, str] = {}
    types: dict[str, str] = {}
    labels: dict[str, set[str]] = {}
    order: list[str] = []
    for line in text.splitlines():
        if m := re.match(r"^# HELP (\S+) (.*)$", line):
            helps[m.group(1)] = m.group(2)
            if m.group(1) not in order:
                order.append(m.group(1))
        elif m := re.match(r"^# TYPE (\S+) (\S+)$", line):
            types[m.group(1)] = m.group(2)
        elif m := re.match(r"^([a-zA-Z_:][\w:]*)\{([^}]*)\}", line):
            base = re.sub(r"_(bucket|sum|count)$", "", m.group(1)) if m.group(1) not in helps else m.group(1)
            names = {kv.split("=", 1)[0] for kv in m.group(2).split(",") if "=" in kv}
            labels.setdefault(base, set()).update(names)
    out = [header("GET /metrics of a running leasehold-server on the file store").rstrip("\n"), ""]
    out.append("| metric | type | labels | meaning |")
    out.append("|---|---|---|---|")
    for name in order:
        lab = ", ".join(f"`{l}`" for l in sorted(labels.get(name, set())))
        out.append(f"| `{name}` | {types.get(name, '')} | {lab} | {cell(helps[name])} |")
    return "\n".join(out) + "\n"


def dashboard() -> str:
    path = "deploy/grafana-leasehold-server.json"
    d = json.loads((ROOT / path).read_text(encoding="utf-8"))
    out = [header(path).rstrip("\n"), ""]
    out.append(f"*{cell(d.get('title', ''))}*: {len(d.get('panels', []))} panels"
               + (", variables " + ", ".join(f"`${v['name']}`" for v in d.get("templating", {}).get("list", []))
                  if d.get("templating", {}).get("list") else "") + ".\n")
    out.append("| panel | kind | what it shows | queries |")
    out.append("|---|---|---|---|")
    for p in d.get("panels", []):
        if p.get("type") == "row":
            continue
        queries = "<br>".join(code(t.get("expr", "")) for t in p.get("targets", []) if t.get("expr"))
        out.append(f"| {cell(p.get('title', ''))} | {p.get('type', '')} | {cell(p.get('description', ''))} | "
                   f"{queries.replace('|', chr(92) + '|')} |")
    return "\n".join(out) + "\n"


def alerts() -> str:
    """The alerting rules of deploy/, each with what it means, what holders see, what to do;
    fails on a rule without those annotations or on a metric the server does not render."""
    import yaml  # python3-yaml; scripts/book-reference.sh installs it where it is missing

    path = "deploy/prometheus-alerts.yml"
    rules = [r for g in yaml.safe_load((ROOT / path).read_text(encoding="utf-8"))["groups"] for r in g["rules"]]
    rendered = set(re.findall(r'"(leasehold_[a-z_]+)"', (ROOT / "server/src/metrics.rs").read_text(encoding="utf-8")))
    out = [header(f"{path} (its rules and their annotations)").rstrip("\n"), ""]
    problems = []
    for r in rules:
        a = r.get("annotations", {})
        for k in ("summary", "meaning", "holders", "action"):
            if not a.get(k):
                problems.append(f"{r.get('alert')}: no {k!r} annotation")
        for m in re.findall(r"\bleasehold_[a-z_]+\b", r["expr"]):
            if re.sub(r"_(bucket|sum|count)$", "", m) not in rendered:
                problems.append(f"{r.get('alert')}: {m} is not a metric of server/src/metrics.rs")
        out.append(f"### {r['alert']}\n")
        out.append("```text")
        out.append(r["expr"].strip())
        out.append("```\n")
        when = f"fires after {r['for']}" if r.get("for") not in (None, "0m", "0s") else "fires at once"
        out.append(f"Severity `{r.get('labels', {}).get('severity', '')}`, {when}.\n")
        out.append(f"- **What it means**: {' '.join(a.get('meaning', '').split())}")
        out.append(f"- **What holders see**: {' '.join(a.get('holders', '').split())}")
        out.append(f"- **What to do**: {' '.join(a.get('action', '').split())}")
        out.append("")
    if problems:
        raise SystemExit(f"{path}:\n  " + "\n  ".join(problems))
    return "\n".join(out).rstrip("\n") + "\n"


def file_config_fields() -> list[tuple[str, str, str]]:
    """(key, Rust type, doc comment) of every field of the server's FileConfig, in order."""
    src = (ROOT / "server/src/config.rs").read_text(encoding="utf-8")
    m = re.search(r"pub struct FileConfig \{(.*?)\n\}", src, re.S)
    if not m:
        raise SystemExit("server/src/config.rs: no `pub struct FileConfig`")
    fields, doc = [], []
    for line in m.group(1).splitlines():
        line = line.strip()
        if line.startswith("///"):
            doc.append(line[3:].strip())
        elif f := re.match(r"^(?:pub\s+)?(\w+):\s*Option<(.+)>,$", line):
            fields.append((f.group(1), f.group(2), " ".join(doc)))
            doc = []
        elif line and not line.startswith("#["):
            doc = []
    return fields


def flag_help(help_text: str) -> dict[str, tuple[str, str]]:
    """--flag -> (value name, help) from a clap help's Options."""
    out = {}
    for line in help_text.splitlines():
        if m := re.match(r"^\s+(?:-\w, )?--([\w-]+)(?: <(\w+)>)?\s{2,}(.*)$", line):
            out[m.group(1)] = (m.group(2) or "", m.group(3).strip())
    return out


def configuration(inputs: Path) -> str:
    flags = flag_help((inputs / "help" / "leasehold-server.txt").read_text(encoding="utf-8"))
    out = [header("server/src/config.rs (the keys the --config file takes) and leasehold-server --help").rstrip("\n"), ""]
    out.append("| key | TOML value | flag | meaning |")
    out.append("|---|---|---|---|")
    toml_type = {"SocketAddr": "string (`host:port`)", "PathBuf": "string (a path)", "String": "string",
                 "u64": "integer", "Duration": "integer (ms)", "PolicySpec": "table (a policy)",
                 "Limits": "table"}
    missing = []
    for key, typ, doc in file_config_fields():
        flag = key.replace("_", "-")
        if flag in flags:
            meaning, where = flags[flag][1], f"`--{flag}`"
        elif doc:
            meaning, where = doc, "file only"
        else:
            missing.append(key)
            continue
        out.append(f"| `{key}` | {toml_type.get(typ, typ)} | {where} | {cell(meaning)} |")
    if missing:
        raise SystemExit(f"server/src/config.rs: FileConfig keys {missing} are neither a flag nor "
                         f"documented: give each a doc comment")
    unknown = sorted(f for f in flags if f.replace("-", "_") not in {k for k, _, _ in file_config_fields()}
                     and f not in ("config", "help", "version"))
    if unknown:
        out.append("")
        out.append("Flags with no key in the file: " + ", ".join(f"`--{f}`" for f in unknown) + ".")
    return "\n".join(out) + "\n"


def main() -> int:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    inputs, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    pages = {
        "ref-http-api.md": http_api(json.loads((inputs / "openapi.json").read_text(encoding="utf-8"))),
        "ref-cli.md": cli(inputs, ["leasehold"], "the --help of the leasehold command and each subcommand"),
        "ref-server.md": cli(inputs, ["leasehold-server"],
                             "the --help of leasehold-server and each subcommand"),
        "ref-config.md": configuration(inputs),
        "ref-errors.md": errors(),
        "ref-metrics.md": metrics((inputs / "metrics.txt").read_text(encoding="utf-8")),
        "ref-dashboard.md": dashboard(),
        "ref-alerts.md": alerts(),
    }
    for name, text in pages.items():
        (out / name).write_text(text, encoding="utf-8")
        print(f"wrote {out / name} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
