"""Small helpers shared by the perf sections: timing with medians, result rows, table printing."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


class Rate(float):
    """A median rate (items/s) that also carries every timed run's rate in `runs`."""

    runs: tuple[float, ...]

    def __new__(cls, median: float, runs: Sequence[float]) -> Rate:
        rate = super().__new__(cls, median)
        rate.runs = tuple(runs)
        return rate


def median_rate(
    fn: Callable[..., Any],
    n_items: int,
    repeats: int = 5,
    warmup: int = 1,
    setup: Callable[[], Any] | None = None,
) -> Rate:
    """Median throughput of `fn` over `repeats` timed runs, after `warmup` untimed runs.

    Args:
        fn: the timed body; called as `fn()`, or `fn(setup())` when `setup` is given.
        n_items: items processed by one call (tuples, records ...).
        repeats: timed runs (the median is reported); warmup: untimed runs before them.
        setup: optional untimed preparation per run (e.g. a fresh grouping instance).
    Returns: `Rate`, a float (median items/s) with `.runs`, the items/s of each timed run.
    Raises: ValueError: `repeats < 1` or `n_items < 1`.
    """
    if repeats < 1 or n_items < 1:
        raise ValueError("repeats and n_items must be >= 1")

    def once() -> float:
        arg = setup() if setup is not None else None
        start = time.perf_counter()
        if setup is not None:
            fn(arg)
        else:
            fn()
        return time.perf_counter() - start

    for _ in range(warmup):
        once()
    runs = [n_items / max(once(), 1e-12) for _ in range(repeats)]
    return Rate(statistics.median(runs), runs)


def alternating_rates(
    cases: dict[str, tuple[Callable[[Any], Any], Callable[[], Any]]],
    n_items: int,
    repeats: int = 5,
    warmup: int = 1,
) -> dict[str, Rate]:
    """Median throughput of several cases timed in turn (A B A B ...), so that each is measured
    under the same, drifting, machine load as the others: for ratios between them.

    Args: cases: name -> (fn, setup), timed as `fn(setup())` (setup untimed); n_items: items per
        call; repeats: timed rounds; warmup: untimed rounds before them.
    Returns: name -> `Rate` (median items/s, with every round's rate in `.runs`).
    Raises: ValueError: `repeats < 1` or `n_items < 1`.
    """
    if repeats < 1 or n_items < 1:
        raise ValueError("repeats and n_items must be >= 1")
    runs: dict[str, list[float]] = {name: [] for name in cases}
    for round_ in range(warmup + repeats):
        for name, (fn, setup) in cases.items():
            arg = setup()
            start = time.perf_counter()
            fn(arg)
            elapsed = time.perf_counter() - start
            if round_ >= warmup:
                runs[name].append(n_items / max(elapsed, 1e-12))
    return {name: Rate(statistics.median(r), r) for name, r in runs.items()}


@dataclass
class Row:
    """One measured case of a perf section.

    Attributes: section, case: names; rate: median items/s; unit: e.g. "tuples/s";
        baseline_rate: rate of the same-run baseline (None if none); ratio: rate / baseline_rate;
        target: minimum acceptable rate (None if none); meets_target: rate >= target (None if no
        target); note: free text (e.g. JIT compile time); runs: every timed run's rate.
    """

    section: str
    case: str
    rate: float
    unit: str
    baseline_rate: float | None = None
    ratio: float | None = None
    target: float | None = None
    meets_target: bool | None = None
    note: str = ""
    runs: tuple[float, ...] = ()

    @classmethod
    def measured(
        cls,
        section: str,
        case: str,
        rate: float,
        unit: str,
        baseline_rate: float | None = None,
        target: float | None = None,
        note: str = "",
    ) -> Row:
        """A row with `ratio` and `meets_target` derived from the rates."""
        return cls(
            section=section,
            case=case,
            rate=float(rate),
            unit=unit,
            baseline_rate=None if baseline_rate is None else float(baseline_rate),
            ratio=None if not baseline_rate else float(rate) / float(baseline_rate),
            target=target,
            meets_target=None if target is None else float(rate) >= target,
            note=note,
            runs=tuple(getattr(rate, "runs", ())),
        )


def _si(value: float | None) -> str:
    if value is None:
        return "-"
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.2f}{suffix}"
    return f"{value:.1f}"


def format_table(rows: Sequence[Row]) -> str:
    """The rows as a fixed-width text table: median, unit, baseline, ratio, target, verdict."""
    header = ("case", "median", "unit", "baseline", "ratio", "target", "result", "note")
    lines = [
        (
            r.case,
            _si(r.rate),
            r.unit,
            _si(r.baseline_rate),
            "-" if r.ratio is None else f"{r.ratio:.3f}",
            "-" if r.target is None else ">= " + _si(r.target),
            "-" if r.meets_target is None else ("PASS" if r.meets_target else "FAIL"),
            r.note,
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*line) for line in lines]
    return "\n".join(line.rstrip() for line in out)


def print_table(title: str, rows: Sequence[Row]) -> None:
    """Print a section's title and table."""
    print(f"\n== {title} ==")
    print(format_table(rows))
