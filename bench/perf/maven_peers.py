"""The peers' Maven projects (bench/peers/<system>/): built on first use, rebuilt when a source changes.

A peer is a Maven project whose `mvn package` writes `target/<artifactId>.jar` and copies its runtime
classpath to `target/lib/` (the Storm peer's pom.xml shows the layout); `mvn test` runs its JUnit
tests. Maven resolves everything from Maven Central.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from bench.stack import tools

PEERS_DIR = Path(__file__).resolve().parents[1] / "peers"
"""bench/peers: one Maven project per peer system."""


def source_digest(project: Path) -> str:
    """sha256 over pom.xml and src/main (paths and bytes): what the built jar depends on."""
    digest = hashlib.sha256()
    for path in sorted([project / "pom.xml", *(project / "src" / "main").rglob("*")]):
        if path.is_file():
            digest.update(str(path.relative_to(project)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build(project: Path, jar_name: str, what: str, quiet: bool = False) -> list[Path]:
    """Build `project` (`mvn -q -B package -DskipTests`) unless its sources are unchanged since the
    last build, and return its classpath: `target/<jar_name>` and `target/lib/*.jar`.

    Args: jar_name: the jar `package` writes (the pom's finalName + `.jar`); what: the peer's name
        in messages ("the Storm peer").
    Raises: ToolMissing (java/mvn), RuntimeError with Maven's error lines when the build fails.
    """
    tools.require(tools.JAVA)
    tools.require(tools.MAVEN)
    target = project / "target"
    stamp = target / ".built"
    digest = source_digest(project)
    jar = target / jar_name
    if not (stamp.is_file() and stamp.read_text().strip() == digest and jar.is_file()):
        if not quiet:
            print(f"building {what} ({project}) with Maven ...", flush=True)
        proc = subprocess.run(["mvn", "-q", "-B", "-f", str(project / "pom.xml"), "package", "-DskipTests"],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line][:5]
            raise RuntimeError(f"mvn could not build {what}:\n" + "\n".join(errors))
        stamp.write_text(digest + "\n")
    return [jar, *sorted((target / "lib").glob("*.jar"))]
