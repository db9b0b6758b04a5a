"""Installs the stack's binaries into the cache folder, once: Kafka broker jars and HdrHistogram's
(Maven Central, via `mvn dependency:copy-dependencies`) and `influxd` 1.8.10 (`go install`); Spark's
Kafka connector is `bench.stack.connector`'s.

Each artefact set lands in its own folder and is marked complete by a stamp file holding the exact
coordinates, so a second call does nothing and a change of version re-resolves. Broker jars and
connector jars never share a folder: the broker's Kafka and Scala jars must not reach Spark's
classpath.

Versions (see docs/stack.md for why they are what they are):
- Kafka broker `org.apache.kafka:kafka_2.13:4.3.1` (KRaft, runs on JDK 17).
- InfluxDB OSS 1.8.10, built with `CGO_ENABLED=0 go install`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from textwrap import dedent

from bench.stack import tools
from bench.stack.config import StackConfig
from bench.stack.process import StackError

KAFKA_VERSION = "4.3.1"
LOG4J_VERSION = "2.25.4"
INFLUXDB_MODULE = "github.com/influxdata/influxdb/cmd/influxd@v1.8.10"

KAFKA_DEPENDENCIES = (
    ("org.apache.kafka", "kafka_2.13", KAFKA_VERSION, ()),
    # kafka.tools.StorageTool (`kafka-storage format`) lives in kafka_2.13; kafka-tools adds the CLI tools.
    ("org.apache.kafka", "kafka-tools", KAFKA_VERSION, ()),
    # Kafka 4 logs through SLF4J 1.7 -> Log4j 2; without a binding the broker logs nothing.
    ("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION, ()),
)


def pyspark_version() -> str:
    """The installed pyspark's version, e.g. `4.3.0` (the Kafka connector must match it exactly)."""
    return metadata.version("pyspark")


def pyspark_jars_dir() -> Path:
    """The folder of jars pyspark's own JVM loads (`<site-packages>/pyspark/jars`)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise StackError("pyspark is not installed in this interpreter; run `make install`")
    return Path(spec.origin).parent / "jars"


def _pom(name: str, dependencies) -> str:
    deps = []
    for group, artifact, version, exclusions in dependencies:
        excl = "".join(
            f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>" for g, a in exclusions
        )
        excl = f"<exclusions>{excl}</exclusions>" if excl else ""
        deps.append(
            f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version>{excl}</dependency>"
        )
    body = "\n".join(deps)
    return dedent(
        f"""\
        <project xmlns="http://maven.apache.org/POM/4.0.0">
          <modelVersion>4.0.0</modelVersion>
          <groupId>local.stream-groupings-bench</groupId>
          <artifactId>{name}</artifactId>
          <version>1</version>
          <packaging>pom</packaging>
          <dependencies>
        {body}
          </dependencies>
        </project>
        """
    )


def artifact_id(jar: Path) -> str:
    """The artifact of a jar named `<artifact>-<version>[-<classifier>].jar`: `kafka-clients-3.9.2.jar`
    -> `kafka-clients`, `spark-sql-kafka-0-10_2.13-4.2.0.jar` -> `spark-sql-kafka-0-10_2.13` (the
    version is the first `-<digits>.<digits>...`); a name with no such version: its stem."""
    found = re.match(r"(.+?)-\d+(?:\.\d+)+(?:[-.][^/]*)?\.jar$", jar.name)
    return found.group(1) if found else jar.stem


def resolve(config: StackConfig, name: str, dependencies, quiet: bool, cached_only: bool = False,
            force_update: bool = False) -> Path | None:
    """`dependencies` ((group, artifact, version, exclusions), ...) with their runtime dependencies,
    copied into `<cache>/jars/<name>` once (a stamp of the coordinates marks it complete).

    Args: cached_only: return None instead of resolving when the folder is not complete;
        force_update: ask the repository again for what Maven cached as missing (`-U`).
    Raises: ToolMissing (java/mvn), StackError with Maven's first error lines."""
    target = config.cache_dir / "jars" / name
    pom = _pom(name, dependencies)
    stamp = hashlib.sha256(pom.encode()).hexdigest()
    stamp_file = target / ".complete"
    if stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return target
    if cached_only:
        return None
    tools.require(tools.JAVA)
    tools.require(tools.MAVEN)
    work = config.cache_dir / "mvn" / name
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(pom)
    staging = config.cache_dir / "jars" / f".{name}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    if not quiet:
        print(f"resolving {name} jars from Maven Central into {target} ...", flush=True)
    proc = subprocess.run(
        [
            "mvn", "-q", "-B", *(["-U"] if force_update else []), "-f", str(work / "pom.xml"),
            "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={staging}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line][:3]
        raise StackError(f"mvn could not resolve the {name} jars:\n" + "\n".join(errors))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    stamp_file.write_text(stamp + "\n")
    return target


def kafka_broker_jars(config: StackConfig, quiet: bool = False) -> Path:
    """Folder with the Kafka broker's classpath (resolved on first use).

    Raises: ToolMissing (java/mvn), StackError when Maven cannot resolve the artefacts.
    """
    return resolve(config, "kafka", KAFKA_DEPENDENCIES, quiet)


def influxd_binary(config: StackConfig, quiet: bool = False) -> Path:
    """Path of `influxd` 1.8.10, built once into `<cache>/bin` with `go install` (2-4 min).

    Raises: ToolMissing (go), StackError with Go's last lines when the build fails.
    """
    binary = config.cache_dir / "bin" / "influxd"
    stamp_file = binary.with_name(".influxd.complete")
    if binary.is_file() and stamp_file.is_file() and stamp_file.read_text().strip() == INFLUXDB_MODULE:
        return binary
    tools.require(tools.GO)
    binary.parent.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"building {INFLUXDB_MODULE} into {binary.parent} (a few minutes, once) ...", flush=True)
    env = {**os.environ, "CGO_ENABLED": "0", "GOBIN": str(binary.parent)}
    proc = subprocess.run(
        ["go", "install", INFLUXDB_MODULE], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0 or not binary.is_file():
        last = "\n".join((proc.stdout + proc.stderr).splitlines()[-10:])
        raise StackError(f"go install {INFLUXDB_MODULE} failed:\n{last}")
    stamp_file.write_text(INFLUXDB_MODULE + "\n")
    return binary


def install_all(config: StackConfig, quiet: bool = False) -> None:
    """Install every artefact of this module (idempotent); `bench.stack.connector.install` adds Spark's."""
    kafka_broker_jars(config, quiet)
    influxd_binary(config, quiet)
