"""ROUND_ROBIN_KEY, a grouping plugin: the example of docs/extending.md.

Each key goes, the first time its instance sees it, to the next worker in turn (worker
`first_worker`, then the one after, ...), and stays there: KEY's one worker per key, with the
distinct keys (not their tuples) spread evenly. Its state, the worker of each key seen, is kept
with the instance: on Spark it is pickled into the state store after every micro-batch.
"""

from __future__ import annotations

from groupings import Grouping
from groupings.base import check_int


class RoundRobinKeyGrouping(Grouping):
    """Deal new keys to the workers in turn; a key keeps its worker.

    Args: num_workers: n >= 1; start_ms: accepted and ignored; first_worker: the worker of the
        first key, in [0, n) (default 0).
    Raises: ValueError: a bad `num_workers`, `start_ms` or `first_worker`.
    """

    name = "ROUND_ROBIN_KEY"

    def __init__(self, num_workers: int, *, start_ms: int = 0, first_worker: int = 0) -> None:
        super().__init__(num_workers, start_ms=start_ms)
        self.first_worker = check_int("first_worker", first_worker, minimum=0)
        if self.first_worker >= self.num_workers:
            raise ValueError(f"first_worker must be < num_workers ({self.num_workers}), got {first_worker}")
        self._worker_of: dict[str, int] = {}

    def _choose(self, key: str, now: int) -> int:
        worker = self._worker_of.get(key)
        if worker is None:
            worker = (self.first_worker + len(self._worker_of)) % self.num_workers
            self._worker_of[key] = worker
        self._loads[worker] += 1
        return worker
