"""The project's Maven modules (the Java groupings, groupings/jvm; the peers, bench/peers/<system>/):
built on first use, rebuilt when a source changes.

A peer is a module of the repository's Maven reactor (pom.xml at its root) whose `mvn package` writes
`target/<artifactId>.jar` and copies its runtime classpath to `target/lib/` (the Storm peer's pom.xml
shows the layout); `mvn test` runs its JUnit tests. The reactor builds a peer with the project's
modules it uses (the Java groupings, `groupings/jvm`); Maven resolves the rest from Maven Central.
"""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.stack import tools

REACTOR_DIR = Path(__file__).resolve().parents[2]
"""The repository's root: its pom.xml lists every JVM module."""

PEERS_DIR = REACTOR_DIR / "bench" / "peers"
"""bench/peers: one Maven project per peer system, and the `contract` every peer shares."""

PEER_CONTRACT_DIR = PEERS_DIR / "contract"
"""The Maven module of what every peer shares with its driver (the rescale peers' options, schedule and
files; every peer's result line): bench/peers/peer_contract.py reads its resource file."""

GROUPINGS_JVM_DIR = REACTOR_DIR / "groupings" / "jvm"
"""The Java groupings (the Storm peer and the JVM grouping stage route with them), checked against the
golden vectors by JUnit."""

TOPOLOGY_JVM_DIR = REACTOR_DIR / "bench" / "topology" / "jvm"
"""The topology's JVM stages (the grouping stage, the worker task, the worker-state operator), compiled
against Spark as a provided dependency (its pom.xml says which version and why)."""


BUILD_LOCK = REACTOR_DIR / ".cache" / "jvm-build.lock"
"""Held while a JVM module is built (`build_lock`)."""


@contextmanager
def build_lock() -> Iterator[None]:
    """Hold the exclusive lock BUILD_LOCK: processes that build the project's JVM modules on first use
    at the same time (a test session and its killed drivers; a peer's reactor build that includes the
    Java groupings) build them one after the other, never into the same `target/` at once."""
    BUILD_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with BUILD_LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def source_digest(*projects: Path) -> str:
    """sha256 over each project's pom.xml and src/main (paths and bytes): what a built jar depends on."""
    digest = hashlib.sha256()
    for project in projects:
        for path in sorted([project / "pom.xml", *(project / "src" / "main").rglob("*")]):
            if path.is_file():
                digest.update(str(path.relative_to(REACTOR_DIR)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build(project: Path, jar_name: str, what: str, quiet: bool = False,
          uses: tuple[Path, ...] = ()) -> list[Path]:
    """Build `project` with the modules it uses (`mvn -q -B -pl <project> -am package -DskipTests` on
    the repository's reactor) unless their sources are unchanged since the last build, and return its
    classpath: `target/<jar_name>` and `target/lib/*.jar`.

    Args: jar_name: the jar `package` writes (the pom's finalName + `.jar`); what: the peer's name
        in messages ("the Storm peer"); uses: the project's own modules it depends on (their sources
        count in the digest), e.g. (GROUPINGS_JVM_DIR,).
    Raises: ToolMissing (java/mvn), RuntimeError with Maven's error lines when the build fails.
    """
    tools.require(tools.JAVA)
    tools.require(tools.MAVEN)
    target = project / "target"
    stamp = target / ".built"
    digest = source_digest(project, *uses)
    jar = target / jar_name
    with build_lock():
        if not (stamp.is_file() and stamp.read_text().strip() == digest and jar.is_file()):
            if not quiet:
                print(f"building {what} ({project}) with Maven ...", flush=True)
            proc = subprocess.run(["mvn", "-q", "-B", "-f", str(REACTOR_DIR / "pom.xml"),
                                   "-pl", str(project.relative_to(REACTOR_DIR)), "-am", "package", "-DskipTests"],
                                  capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line][:5]
                raise RuntimeError(f"mvn could not build {what}:\n" + "\n".join(errors))
            stamp.write_text(digest + "\n")
    return [jar, *sorted((target / "lib").glob("*.jar"))]


def topology_jars(quiet: bool = True) -> list[Path]:
    """The topology's JVM stages for `spark.jars`: `grouping-stage.jar`, then what Spark does not ship
    (the Java groupings' jar, HdrHistogram's), built with the Java groupings (`build`).

    Raises: as `build`."""
    return build(TOPOLOGY_JVM_DIR, "grouping-stage.jar", "the topology's JVM stages", quiet, uses=(GROUPINGS_JVM_DIR,))
