"""How a run takes its replay's outcome (`bench.run.input.check_replay`)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench.run.input import check_replay
from bench.run.preflight import RunError


def test_a_replay_stopped_by_ctrl_c_interrupts_the_run_and_an_undelivered_record_fails_it():
    check_replay(SimpleNamespace(interrupted=False, ok=True, errors=[]), "t")
    with pytest.raises(KeyboardInterrupt):  # the run ends "interrupted", resumable with its run id
        check_replay(SimpleNamespace(interrupted=True, ok=False, errors=[]), "t")
    with pytest.raises(RunError, match="the replay into t did not complete: \\['undelivered'\\]"):
        check_replay(SimpleNamespace(interrupted=False, ok=False, errors=["undelivered"]), "t")
