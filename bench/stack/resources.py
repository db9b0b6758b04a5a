"""The JVM modules' resource files that Python reads too: what both languages must agree on, written
once in a module's `src/main/resources` (the Java side reads it from its jar). Here, the routing
summary's JSON keys (`ROUTING_SUMMARY`); the peers' contract is read by `bench.peers.peer_contract`
and the Java groupings' list by `bench.topology.jvm_stage`."""

from __future__ import annotations

from typing import NamedTuple

from bench.stack import maven


def parse_properties(text: str, source: str) -> dict[str, str]:
    """A module's resource in the form both languages read (`java.util.Properties.load`, the subset
    the project writes; `groupings.Groupings.parsePort`): `name = value` per line, in the lines' order,
    blank lines and lines starting with `#` skipped, spaces around the name and the value dropped.

    Raises: ValueError naming `source` for a line without `=` or a name given twice."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        name = name.strip()
        if not equals:
            raise ValueError(f"a line of {source} without '=': {line}")
        if name in out:
            raise ValueError(f"{source} names {name} twice")
        out[name] = value.strip()
    return out


ROUTING_SUMMARY_FILE = maven.TOPOLOGY_JVM_DIR / "src" / "main" / "resources" / "bench" / "topology" / \
    "routing-summary.properties"
"""The keys of the routing summary's JSON: the one source that `RoutingSummary.java` (from its jar), the
Python grouping stage (`bench.topology.grouping_stage.routing_summary`) and the observer
(`bench.observer.batches`) read. Its comments say what each field holds."""


class RoutingSummaryKeys(NamedTuple):
    """The JSON key of each field of a routing summary (ROUTING_SUMMARY_FILE)."""

    loads: str
    tuples: str
    pairs: str
    released: str


def routing_summary_keys(text: str) -> RoutingSummaryKeys:
    """ROUTING_SUMMARY_FILE's text read (`RoutingSummary.parseKeys` reads it the same way).

    Raises: ValueError for a field missing or unknown, two fields with one key, or a bad line."""
    given = parse_properties(text, ROUTING_SUMMARY_FILE.name)
    fields = RoutingSummaryKeys._fields
    if sorted(given) != sorted(fields):
        raise ValueError(f"{ROUTING_SUMMARY_FILE.name} must give exactly the fields {', '.join(fields)}; "
                         f"it gives {', '.join(given) or 'none'}")
    if len(set(given.values())) != len(fields) or "" in given.values():
        raise ValueError(f"{ROUTING_SUMMARY_FILE.name} must give each field a key of its own: {given}")
    return RoutingSummaryKeys(**given)


ROUTING_SUMMARY = routing_summary_keys(ROUTING_SUMMARY_FILE.read_text(encoding="utf-8"))
"""The routing summary's JSON keys (ROUTING_SUMMARY_FILE)."""
