"""The JVM modules' JUnit tests, run by Maven from the pytest suite (tests/groupings/test_jvm_groupings.py,
tests/bench/test_rescale_peers.py)."""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path


REACTOR = Path(__file__).resolve().parents[1] / "pom.xml"
"""The repository's Maven reactor: a module's tests run with the modules it uses built beside it."""


def junit_suites(maven: str, project: Path) -> tuple[set[str], int, int]:
    """`mvn test` of a Maven module (a peer, the Java groupings) on the reactor, with the modules it uses
    (`-am`, whose tests run too): (the module's suites that ran, tests run, tests failed, errored or
    skipped), from its surefire reports. Fails the test when Maven does."""
    reports = project / "target" / "surefire-reports"
    shutil.rmtree(reports, ignore_errors=True)
    module = str(project.resolve().relative_to(REACTOR.parent))
    proc = subprocess.run([maven, "-q", "-B", "-f", str(REACTOR), "-pl", module, "-am", "test"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"mvn test failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
    # Maven passes with zero tests too: count what ran.
    suites = [ET.parse(p).getroot() for p in reports.glob("TEST-*.xml")]
    failed = sum(int(s.get("failures")) + int(s.get("errors")) + int(s.get("skipped")) for s in suites)
    return {s.get("name") for s in suites}, sum(int(s.get("tests")) for s in suites), failed
