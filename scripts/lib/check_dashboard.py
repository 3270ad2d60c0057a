#!/usr/bin/env python3
"""Checks that every leasehold_* metric a Grafana dashboard queries exists in a server's /metrics
(a renamed metric would leave a panel empty without a word).
Usage: check_dashboard.py DASHBOARD.json METRICS_URL"""
import json
import re
import sys
import urllib.request

dash = json.load(open(sys.argv[1], encoding="utf-8"))
text = urllib.request.urlopen(sys.argv[2], timeout=10).read().decode()
served = {m.group(1) for m in re.finditer(r"^# TYPE (\S+) ", text, re.M)}
used = set()
for p in dash["panels"]:
    for t in p.get("targets", []):
        used |= set(re.findall(r"\bleasehold_[a-z_]+\b", t["expr"]))
for v in dash.get("templating", {}).get("list", []):
    used |= set(re.findall(r"\bleasehold_[a-z_]+\b", str(v.get("query", ""))))
missing = sorted(used - served)
print(f"dashboard: {len(dash['panels'])} panels query {len(used)} metrics; missing from /metrics: {missing or 'none'}")
sys.exit(1 if missing else 0)
