"""What a run record says about where it ran: versions, git revision, machine."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pyspark", "numpy", "numba", "pandas", "pyarrow", "confluent-kafka", "mmh3", "influxdb-client")


def git_revision() -> dict:
    """`{"commit": sha or None, "dirty": bool or None}` of the checkout the harness runs from."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def versions(kafka_connector: dict | None = None) -> dict:
    """Python and the packages whose behaviour shapes the figures, Spark's Kafka connector as its
    caller found it (`bench.stack.connector.cached_record`: official, or built from which sources;
    None when there is none) and Java."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    out["kafka_connector"] = kafka_connector
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        out["java"] = (java.stderr or java.stdout).splitlines()[0] if java.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, IndexError):
        out["java"] = None
    return out


def machine() -> dict:
    """Host facts: OS, CPU model and count, memory (GiB)."""
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem_gib = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError):
        mem_gib = None
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "memory_gib": mem_gib,
    }
