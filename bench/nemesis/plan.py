"""The nemesis's faults, drawn from a seed: what happens to which process at which instant.

Pure: `plan_faults(seed, ...)` gives the same `NemesisPlan` for the same arguments, on any machine,
so a printed seed replays a run's faults exactly (Jepsen's nemesis schedules are reproduced the
same way, from a generator's seed). Nothing here touches a process.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

TARGETS = ("driver", "spark", "kafka", "influxdb")
"""The processes a fault hits: the run's Python driver, its Spark JVM (which runs the run's
queries, the real-time one too), the Kafka broker, InfluxDB."""

ACTIONS = ("kill", "pause")
"""`kill`: SIGKILL (a driver or Spark JVM killed is resumed with the same RUN_ID, a service is started
again after `hold_s`); `pause`: SIGSTOP, then SIGCONT after `hold_s`."""

PROTOCOLS = ("STOP_THE_WORLD", "SHARED_STATE", "LEARNER", "HANDOFF")

HOLD_S = (2.0, 20.0)
"""The range a pause or a service's down time is drawn from, s."""

RESCALE_SPAN = (0.15, 0.75)
"""Where in the input a rescale is due, as fractions of its span (the schedule is on the input's clock)."""

MAX_RESCALES = 2
LEAD_S = 5.0
"""No fault in the run's first seconds: before them there is no process to hit but the driver's
interpreter starting."""


@dataclass(frozen=True)
class Fault:
    """One fault of a plan: at `at_s` (s after the nemesis started the run), `action` on `target`;
    for a rescale (`target` "rescale"), the event of the run's `--rescale` schedule instead, due at
    `at_s` on the input's clock (s after its first record), to `workers` workers."""

    index: int
    at_s: float
    target: str
    action: str
    hold_s: float = 0.0
    workers: int | None = None

    def describe(self) -> str:
        if self.target == "rescale":
            return f"rescale to {self.workers} workers"
        signal = "SIGKILL" if self.action == "kill" else "SIGSTOP"
        after = {"kill": f", restarted after {self.hold_s:.1f} s", "pause": f" for {self.hold_s:.1f} s"}
        tail = after[self.action] if self.target in ("kafka", "influxdb") or self.action == "pause" else ", resumed"
        return f"{signal} {self.target}{tail}"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class NemesisPlan:
    """A run's faults (process faults by `at_s`, then the rescales) and the protocol of its rescales."""

    seed: int
    faults: tuple[Fault, ...]
    protocol: str | None

    @property
    def process_faults(self) -> tuple[Fault, ...]:
        return tuple(f for f in self.faults if f.target != "rescale")

    @property
    def rescales(self) -> tuple[Fault, ...]:
        return tuple(f for f in self.faults if f.target == "rescale")

    def schedule(self) -> str | None:
        """The run's `--rescale` schedule ('37s:12,80s:10'), or None without a rescale."""
        if not self.rescales:
            return None
        return ",".join(f"{int(f.at_s)}s:{f.workers}" for f in self.rescales)

    def as_dict(self) -> dict:
        return {"seed": self.seed, "protocol": self.protocol, "schedule": self.schedule(),
                "faults": [f.as_dict() for f in self.faults]}


def plan_faults(seed: int, faults: int, span_s: float, input_span_s: float, workers: int,
                protocols: tuple[str, ...] = PROTOCOLS) -> NemesisPlan:
    """`faults` faults drawn from `seed`.

    Args:
        seed: the generator's seed (`random.Random`, whose sequence Python keeps stable across versions).
        faults: how many faults, rescales included (at least 1).
        span_s: the wall time the faults fall in, s after the run's start (LEAD_S, span_s).
        input_span_s: the input's span on its own clock, s: where a rescale can be due.
        workers: W, the run's workers: a rescale goes to W + 2 or W - 2 workers, the next one back.
        protocols: the rescale protocols the run's protocol is drawn from (none: no rescale).

    Returns: the plan; with rescales, between 1 and MAX_RESCALES of the `faults` are rescale events
        and the rest process faults, each target and action drawn uniformly, hold times from HOLD_S.
    Raises: ValueError for fewer than 1 fault, a span not past LEAD_S, or W below 3.
    """
    if faults < 1:
        raise ValueError(f"a nemesis needs at least 1 fault, got {faults}")
    if span_s <= LEAD_S:
        raise ValueError(f"the faults' span must be longer than {LEAD_S:g} s, got {span_s:g}")
    if workers < 3:
        raise ValueError(f"a nemesis rescales W +- 2 workers: W must be at least 3, got {workers}")
    rng = random.Random(seed)
    rescales = rng.randint(1, min(MAX_RESCALES, faults)) if protocols and faults > 1 else 0
    protocol = rng.choice(protocols) if rescales else None
    instants = sorted(round(rng.uniform(LEAD_S, span_s), 1) for _ in range(faults - rescales))
    out = []
    for at_s in instants:
        target, action = rng.choice(TARGETS), rng.choice(ACTIONS)
        out.append(Fault(len(out), at_s, target, action, round(rng.uniform(*HOLD_S), 1)))
    lo, hi = RESCALE_SPAN
    width = (hi - lo) / max(rescales, 1)  # one event in each slice of the span: the schedule's times are distinct
    due = [round((lo + width * (k + rng.random())) * input_span_s) for k in range(rescales)]
    step = rng.choice((2, -2))
    for k, at_s in enumerate(due):
        out.append(Fault(len(out), float(at_s), "rescale", "rescale", workers=workers + step if k % 2 == 0 else workers))
    return NemesisPlan(seed, tuple(out), protocol)
