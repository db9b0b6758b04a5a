"""What Grafana does to a dashboard's InfluxQL before sending it: expand its macros and variables.

Only what our dashboards use: `$timeFilter`, `$__interval`, and multi-value variables inside
`=~ /^$var$/` regexes (Grafana's InfluxQL data source formats a multi-value selection, and "All"
without a custom all-value, as `(v1|v2|...)` with regex metacharacters escaped).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboards" / "generated" / "stream-groupings.json"


def load_dashboard(path: Path = DASHBOARD) -> dict:
    return json.loads(path.read_text())


def panel_queries(dashboard: dict) -> list[tuple[str, str]]:
    """(panel title, raw InfluxQL) of every target of every panel."""
    return [(p["title"], t["query"]) for p in dashboard["panels"] for t in p.get("targets", [])]


def annotation_queries(dashboard: dict) -> list[tuple[str, str]]:
    """(annotation name, raw InfluxQL) of every InfluxQL annotation (Grafana's built-in one has no query)."""
    return [(a["name"], a["query"]) for a in dashboard.get("annotations", {}).get("list", []) if a.get("query")]


def variable_queries(dashboard: dict) -> dict[str, str]:
    return {v["name"]: v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"}


def _regex_escape(value: str) -> str:
    return re.sub(r"([\\^$.|?*+()\[\]{}/])", r"\\\1", value)


def expand(query: str, variables: dict[str, list[str]], from_ms: int, to_ms: int, interval: str = "10s") -> str:
    """The query with Grafana's macros and multi-value variables substituted."""
    out = query.replace("$timeFilter", f"time >= {from_ms}ms and time <= {to_ms}ms")
    out = out.replace("$__interval", interval)
    for name, values in variables.items():
        out = out.replace(f"${name}", "(" + "|".join(_regex_escape(v) for v in values) + ")")
    if re.search(r"\$(\w|\{)", out):
        raise ValueError(f"unexpanded variable left in {out!r}")
    return out
