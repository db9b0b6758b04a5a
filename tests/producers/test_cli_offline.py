"""The producer CLI's failures that need no broker."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from datasets import get_dataset
from producers import BrokerUnreachable, replay

ROOT = Path(__file__).resolve().parents[2]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "producers", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_unknown_dataset_lists_names():
    p = _run("NO_SUCH", "-t", "x", "-b", f"127.0.0.1:{_closed_port()}")
    assert p.returncode == 2 and "NO_SUCH" in p.stderr and "NYC_FLIGHTS" in p.stderr


def test_bad_speed():
    p = _run("GOLDEN_SKEW", "-t", "x", "--speed", "fast")
    assert p.returncode == 2 and "speed" in p.stderr


def test_broker_unreachable_is_bounded():
    t = time.monotonic()
    p = _run("GOLDEN_SKEW", "-t", "x", "-b", f"127.0.0.1:{_closed_port()}", "--timeout", "3")
    assert p.returncode == 3
    assert "did not answer within 3 s" in p.stderr and "bench.stack up" in p.stderr
    assert time.monotonic() - t < 30


def test_broker_unreachable_api():
    t = time.monotonic()
    with pytest.raises(BrokerUnreachable):
        replay(get_dataset("GOLDEN_SKEW"), "x", f"127.0.0.1:{_closed_port()}", timeout_s=2, progress=False)
    assert time.monotonic() - t < 15


def test_dataset_as_option_or_positional():
    p = _run("--dataset", "NO_SUCH", "-t", "x")
    assert p.returncode == 2 and "NO_SUCH" in p.stderr
    p = _run("-t", "x")
    assert p.returncode == 2 and "dataset is required" in p.stderr
    p = _run("ZIPF", "--dataset", "GOLDEN_SKEW", "-t", "x")
    assert p.returncode == 2 and "two datasets" in p.stderr


@pytest.mark.parametrize("flag", ["--rate", "--limit"])
def test_a_negative_rate_or_limit_is_refused_before_the_broker(flag):
    """`--rate` and `--limit` are `bench run`'s settings: 0 means as fast as possible and every
    record; below 0 is a usage error (exit 2), refused before the broker is tried."""
    p = _run("GOLDEN_SKEW", "-t", "x", "-b", f"127.0.0.1:{_closed_port()}", flag, "-1")
    assert p.returncode == 2 and f"{flag} must be >= 0" in p.stderr
