"""The golden test of docs/extending.md's example grouping, ROUND_ROBIN_KEY (toy_site/toy_groupings.py).

Two kinds of vector, as tests/groupings/test_golden.py has for the built-in groupings:
- a small case worked by hand from the rule (each new key to the next worker in turn);
- the figures of the golden stream (dkg-reference §14: 60,000 tuples, 201 keys, Turkey 80%),
  tuple i to instance i mod S: per-worker counts, distinct (key, worker) pairs, and the MD5 of the
  whole trace, computed once and pinned. A change of the routing, however small, changes the MD5.
"""

from __future__ import annotations

import numpy as np
import pytest

from groupings import create_grouping
from tests.groupings.golden_stream import T0, golden_keys, golden_now_ms, run_protocol
from tests.plugins.conftest import TOY_NAME

# (n, S) -> (per-worker counts, distinct (key, worker) pairs, MD5 of the trace, Turkey's workers)
GOLDEN = {
    (5, 1): ([50462, 2422, 2393, 2332, 2391], 201, "05e3a0bc1b6a9cb23e6b009999ab8be8", {0}),
    (10, 10): ([34845, 10760, 6065, 1201, 1154, 1220, 1227, 1200, 1132, 1196], 1324,
               "54a0412ef751de5c9a8131c2d7caa280", {0, 1, 2}),
}


def test_a_hand_worked_case(toy_plugin):
    # n = 3: a -> 0, b -> 1, a stays on 0, c -> 2, d -> 0 (the turn wraps), b stays on 1.
    g = create_grouping(TOY_NAME, 3, start_ms=T0)
    assert g.route(["a", "b", "a", "c", "d", "b"], T0).tolist() == [0, 1, 0, 2, 0, 1]
    assert g.loads.tolist() == [3, 2, 1]


@pytest.mark.parametrize(("n", "sources"), sorted(GOLDEN), ids=lambda v: str(v))
def test_the_golden_stream(toy_plugin, n, sources):
    counts, pairs, md5, turkey = GOLDEN[(n, sources)]
    run = run_protocol(TOY_NAME, n, sources)
    assert np.bincount(run.tasks, minlength=n).tolist() == counts
    assert sum(g.loads for g in run.instances).tolist() == counts
    assert len(set(zip(run.keys, run.tasks.tolist()))) == pairs
    assert set(run.tasks[np.array(run.keys) == "Turkey"].tolist()) == turkey
    assert run.trace_md5(sources) == md5


def test_route_equals_choose(toy_plugin):
    """The batch path (`route`) and the per-tuple path (`choose`) agree, state included."""
    keys, now = golden_keys(5_000), golden_now_ms(5_000)
    fast, slow = create_grouping(TOY_NAME, 7, start_ms=T0), create_grouping(TOY_NAME, 7, start_ms=T0)
    routed = fast.route(keys, now)
    assert routed.tolist() == [slow.choose(k, t) for k, t in zip(keys, now.tolist())]
    assert fast == slow
