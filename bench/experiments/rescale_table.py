"""`make rescale-bench`'s rows and tables (bench.experiments.rescale_bench): the medians of each Spark cell
over its runs beside the simulator's figures, per rescale event, and the order of the protocols by
pause, on Spark, in the simulator and across the engines."""

from __future__ import annotations

import statistics

from bench.peers import rescale as rescale_peers


def event_label(summary: dict) -> str:
    """`10 -> 12`: a run's (first) rescale event, from its summary.json `rescale.events`."""
    e = summary["rescale"]["events"][0]
    return f"{e['workers_before']} -> {e['workers_after']}"


def cell_name(protocol: str, batch: int) -> str:
    """`HANDOFF b64` for a HANDOFF batch other than 1, else the protocol's name."""
    return f"{protocol} b{batch}" if protocol == "HANDOFF" and batch != 1 else protocol


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spark_row(routing: str, protocol: str, event: str, runs: list[dict]) -> dict:
    """One Spark cell: the medians over its runs (summary.json dicts of one rescale event each)."""
    events = [s["rescale"]["events"][0] for s in runs]
    pauses = [e["pause_ms"] for e in events if e.get("pause_ms") is not None]
    steps = sorted({k for e in events for k, v in (e.get("steps") or {}).items() if isinstance(v, int | float)})
    return {
        "routing": routing, "protocol": protocol, "event": event, "where": "Spark", "runs": len(runs),
        "pause_ms": statistics.median(pauses) if pauses else None,
        "pause_ms_runs": pauses,
        "hold_delay_ms_p99": _median([e.get("hold_delay_ms_p99") for e in events]),
        "hold_delay_ms_p99_runs": [e.get("hold_delay_ms_p99") for e in events if e.get("hold_delay_ms_p99")],
        "held_tuples": _median([e.get("held_tuples") for e in events]),
        "rescale_ms": _median([e.get("rescale_ms") for e in events]),
        "steps_ms": {k: statistics.median([e["steps"][k] for e in events if k in (e.get("steps") or {})])
                     for k in steps},
        "moved_groups": statistics.median([e["moved_groups"] for e in events]),
        "moved_keys": statistics.median([e["moved_keys"] for e in events]),
        "transfer_records": statistics.median([e.get("transfer_records", 0) for e in events]),
        "exact": all(s["status"] == "completed" and all(v is not False for v in s["checks"].values()) for s in runs),
        "ownership_violations": sum(s["rescale"]["ownership_violations"] for s in runs),
        "load": [(s.get("bench") or {}).get("load_before") for s in runs],
    }


def simulator_row(s: dict) -> dict:
    """One simulated cell: its summary.json's (first) event."""
    e = s["rescale"]["events"][0]
    batch = s["rescale"].get("handoff_batch", 1)
    return {
        "routing": s["grouping"], "protocol": cell_name(s["rescale"]["protocol"], batch), "event": event_label(s),
        "where": "simulator", "runs": 1, "pause_ms": e.get("pause_ms"), "hold_delay_ms_p99": e.get("hold_delay_ms_p99"),
        "held_tuples": e.get("held_tuples"), "rescale_ms": e.get("rescale_ms"),
        "moved_groups": e.get("moved_groups"), "moved_keys": e.get("moved_keys"),
        "exact": s["status"] == "completed", "ownership_violations": e.get("ownership_violations"),
    }


def cell_rows(spark_runs: list[dict], simulated: list[dict]) -> list[dict]:
    """The table's rows: one per (routing, protocol, event) measured on Spark, with the medians over
    its runs (`spark_row`), and one per simulated (routing, protocol, batch, event).

    Args: spark_runs / simulated: summary.json dicts (one rescale event each), with `grouping`.
    """
    by_cell: dict[tuple[str, str, str], list[dict]] = {}
    for s in spark_runs:
        cell = cell_name(s["rescale"]["protocol"], s["rescale"].get("handoff_batch", 1))
        by_cell.setdefault((s["grouping"], cell, event_label(s)), []).append(s)
    return [spark_row(*cell, runs) for cell, runs in by_cell.items()] + [simulator_row(s) for s in simulated]


def events_of(rows: list[dict]) -> list[str]:
    """The rows' events, in their first appearance's order (the scale-out first in the bench)."""
    return list(dict.fromkeys(r["event"] for r in rows))


def order_by_pause(rows: list[dict], routing: str, where: str, protocols: list[str], event: str) -> list[list[str]]:
    """`protocols` of `routing` measured `where` on `event`, from the shortest median pause to the
    longest, the ones with equal pauses (those without a pause: 0) in one group, in `protocols`' order."""
    pause = {r["protocol"]: r["pause_ms"] for r in rows
             if r["routing"] == routing and r["where"] == where and r["event"] == event}
    groups: list[list[str]] = []
    for p in sorted((p for p in protocols if pause.get(p) is not None), key=lambda p: pause[p]):
        if groups and pause[groups[-1][0]] == pause[p]:
            groups[-1].append(p)
        else:
            groups.append([p])
    return groups


def order_text(groups: list[list[str]]) -> str:
    """`A = B < C`: the groups of `order_by_pause`."""
    return " < ".join(" = ".join(g) for g in groups)


def _f(v, fmt="{:,.0f}"):
    return "-" if v is None else fmt.format(v)


def _row_markdown(r: dict) -> str:
    steps = ", ".join(f"{k} {v:,.0f}" for k, v in (r.get("steps_ms") or {}).items()) or "-"
    return (f"| {r['event']} | {r['routing']} | {r['protocol']} | {r['where']} | {r['runs']} | {_f(r['pause_ms'])} | "
            f"{' / '.join(_f(p) for p in r.get('pause_ms_runs') or []) or '-'} | {steps} | "
            f"{_f(r.get('hold_delay_ms_p99'), '{:,.1f}')} | "
            f"{' / '.join(_f(p) for p in r.get('hold_delay_ms_p99_runs') or []) or '-'} | {_f(r.get('held_tuples'))} | "
            f"{_f(r.get('rescale_ms'))} | {_f(r['moved_groups'])} | {_f(r['moved_keys'])} | "
            f"{_f(r.get('transfer_records'))} | {'yes' if r['exact'] else 'NO'} | {_f(r['ownership_violations'])} | "
            f"{' / '.join(_f(x, '{:.1f}') for x in r.get('load') or []) or '-'} |")


def table_markdown(rows: list[dict], conditions: str, notes: list[str] | tuple = ()) -> str:
    """The Spark and simulator table, per event then routing, the order by pause per event and
    routing, and `notes` (one line each, e.g. why a cell was not run) under the table."""
    events = events_of(rows)
    lines = ["## Rescale protocols on Spark and in the simulator", "", conditions, "",
             "| event | routing | protocol | where | runs | pause ms (median) | pause ms (runs) | steps ms (medians) | "
             "hold p99 ms (median) | hold p99 ms (runs) | held | rescale ms | moved groups | moved keys | "
             "records moved | exact | violations | load (1 min) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [_row_markdown(r) for r in sorted(rows, key=lambda r: (events.index(r["event"]), r["routing"],
                                                                    r["where"] != "Spark", r["pause_ms"] or 0))]
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    lines += ["", "Order by pause (shortest first), Spark against the simulator, over the protocols that run on Spark:", ""]
    for event in events:
        for routing in sorted({r["routing"] for r in rows if r["event"] == event}):
            on_spark = [r["protocol"] for r in rows
                        if r["routing"] == routing and r["where"] == "Spark" and r["event"] == event]
            if not on_spark:
                continue
            spark = order_by_pause(rows, routing, "Spark", on_spark, event)
            sim = order_by_pause(rows, routing, "simulator", on_spark, event)
            lines.append(f"- {event}, {routing}: Spark {order_text(spark)}; simulator {order_text(sim)}"
                         f" ({'same order' if spark == sim else 'different order'})")
    return "\n".join(lines) + "\n"


def engines_order(rows: list[dict], peers: list[dict]) -> str:
    """Per event, the protocols by median pause across Spark (per routing) and the peers (their
    `rescale_peers.cell_row`s with `event`), with the runs' spread."""
    lines = []
    for event in events_of(rows + peers):
        cells = [(f"Spark {r['routing']} {r['protocol']}", r["pause_ms"], r.get("pause_ms_runs") or [])
                 for r in rows if r["where"] == "Spark" and r["event"] == event]
        cells += [(f"{p['title']} {p['protocol']}", p["pause_ms"], p["pause_ms_runs"]) for p in peers
                  if p["event"] == event]
        lines.append(f"Order by pause across the engines, {event} (median ms, min-max over the runs), shortest "
                     f"first: {rescale_peers.order_across_engines(cells)}")
    return "\n\n".join(lines) + "\n"
