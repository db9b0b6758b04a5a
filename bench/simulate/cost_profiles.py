"""Cost profiles: the simulator's rescale cost model fitted on one engine's measurements, so that a
what-if study names the engine whose costs it assumes (`bench simulate --cost-profile
spark|flink|kstreams`, docs/rescaling.md "Cost profiles").

A profile is `cost_profiles/<engine>.json`: `engine`, `source` (what it was fitted on: command,
runs, date), `costs` (CostModel parameters that differ from the defaults), `fit` (per fitted
parameter: the value on each run of the fit and the spread) and `checks` (its predictions against
runs outside the fit, with their errors). Without a profile the simulator charges `CostModel`'s
defaults, part 1's model: a record-at-a-time engine's 5 ms control messages with Spark's measured
restart. The flink and kstreams profiles are written by `python -m bench.experiments.cost_fit` from a
rescale bench with peers; the spark profile holds the calibration of docs/rescaling.md ("Calibrating
the protocols that run inside the query"), where every control step is a micro-batch.
"""

from __future__ import annotations

import json
from pathlib import Path

from groupings.rescaling import CostModel

PROFILES_DIR = Path(__file__).resolve().parent / "cost_profiles"
"""The stored profiles, one JSON file per engine."""


def profile_names() -> list[str]:
    """The engines with a stored profile, sorted."""
    return sorted(p.stem for p in PROFILES_DIR.glob("*.json"))


def load_profile(name: str) -> dict:
    """The stored profile of engine `name` (case-insensitive).

    Raises: ValueError: no such profile (the message lists the stored ones)."""
    path = PROFILES_DIR / f"{name.strip().lower()}.json"
    if not path.is_file():
        raise ValueError(f"unknown cost profile {name!r}: stored are {', '.join(profile_names())}")
    return json.loads(path.read_text())


def cost_model(profile: str | None, overrides: dict | None = None) -> CostModel:
    """The cost model of `profile` (None: `CostModel`'s defaults) with `overrides` (`--cost name=value`)
    applied over it.

    Raises: ValueError: an unknown profile, or an unknown cost name or bad value."""
    base = load_profile(profile)["costs"] if profile else {}
    return CostModel.from_assignments({**base, **(overrides or {})})


def write_profile(engine: str, costs: dict, source: str, fit: dict, checks: list | tuple = ()) -> Path:
    """Store a fitted profile (its costs checked by `CostModel`) with its `checks` (predictions
    against runs outside the fit); returns its path.

    Raises: ValueError: a cost the model does not take, or a bad value."""
    CostModel.from_assignments(costs)
    path = PROFILES_DIR / f"{engine.lower()}.json"
    path.write_text(json.dumps({"engine": engine.lower(), "source": source, "costs": costs, "fit": fit,
                                "checks": list(checks)}, indent=1) + "\n")
    return path
