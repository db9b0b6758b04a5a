"""Spark's Kafka connector (`org.apache.spark:spark-sql-kafka-0-10_2.13`) at the installed pyspark's
version: the official artifact when Maven Central serves it, else built once from official sources.

The connector links against Spark SQL internals, so it must match the Spark that runs it. Two ways
to get it, tried in this order:

1. **official**: the artifact at pyspark's exact version, with its dependencies, from Maven Central
   (`mvn dependency:copy-dependencies`).
2. **built**: when the registry does not serve that version (4.3.0 on 2026-11-29: 404), the official
   sources jar of SOURCE_VERSION, the newest version served, compiled against the installed
   pyspark's own jars with the Scala compiler that pyspark ships (`scala-compiler-*.jar` in
   `pyspark/jars`), about 20 s and 0.5 GB once. The sources jar also holds the connector's
   resources (its `DataSourceRegister` service file, its error conditions), which the built jar
   keeps. Its class path: the sources version's own dependencies (kafka-clients,
   commons-pool2, spark-token-provider-kafka), less the jars pyspark already ships. Real-Time
   Mode's interfaces that the connector implements (`SupportsRealTimeMode`, the reader's
   `nextWithTimeout`) are the same in 4.2.0 and 4.3.0.

`make install` (`install`) tries the official artifact again each time (`mvn -U`: past Maven's
cached "not found"), so the built connector gives way as soon as the registry serves the real one;
a run takes whichever is in the cache (`connector`). Every run records which one ran (`Connector.record`,
run.json's `versions.kafka_connector`; docs/stack.md).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bench.stack import tools
from bench.stack.artifacts import artifact_id, pyspark_jars_dir, pyspark_version, resolve
from bench.stack.config import StackConfig
from bench.stack.process import StackError

GROUP, ARTIFACT = "org.apache.spark", "spark-sql-kafka-0-10_2.13"
SOURCE_VERSION = "4.2.0"
"""The newest `spark-sql-kafka-0-10_2.13` whose sources jar Maven Central serves here (2026-11-29)."""

BUILT_DIR = "spark-kafka-built"
"""The built connector's folder under `<cache>/jars`: its jar, its class path, `connector.json`."""


@dataclass(frozen=True)
class Connector:
    """The Kafka connector a Spark session loads.

    jars: absolute paths for `spark.jars` (the connector and the dependencies pyspark does not ship);
    origin: "official" or "built"; version: the Spark version it is for (pyspark's);
    built_from: the sources' Maven coordinates ("" for official); compiler: the scalac jar
    that built it ("" for official)."""

    jars: tuple[Path, ...]
    origin: str
    version: str
    built_from: str = ""
    compiler: str = ""

    def record(self) -> dict[str, str]:
        """What a run's record says of it: `{"artifact", "origin", "version", "built_from", "compiler"}`."""
        return {"artifact": f"{GROUP}:{ARTIFACT}:{self.version}", "origin": self.origin, "version": self.version,
                "built_from": self.built_from, "compiler": self.compiler}

    def describe(self) -> str:
        """One line for a console: `official 4.3.0` or `4.3.0 built from ...:4.2.0 sources with scala-compiler-2.13.18`."""
        if self.origin == "official":
            return f"{ARTIFACT} {self.version} (official)"
        return f"{ARTIFACT} {self.version} built from {self.built_from} with {self.compiler}"


def _official_dependencies(version: str):
    return ((GROUP, ARTIFACT, version, ()),)


def _not_shipped(jars) -> tuple[Path, ...]:
    """`jars` less those whose artifact pyspark ships (scala-library, slf4j, lz4, ...): Spark keeps its own."""
    shipped = {artifact_id(jar) for jar in pyspark_jars_dir().glob("*.jar")}
    return tuple(sorted(jar.resolve() for jar in jars if artifact_id(jar) not in shipped))


def _official(config: StackConfig, quiet: bool, cached_only: bool, force_update: bool = False) -> Connector | None:
    version = pyspark_version()
    dependencies = _official_dependencies(version)
    try:
        folder = resolve(config, "spark", dependencies, quiet, cached_only=cached_only, force_update=force_update)
    except StackError:
        return None
    if folder is None:
        return None
    return Connector(jars=_not_shipped(folder.glob("*.jar")), origin="official", version=version)


def _scala_compiler() -> tuple[Path, list[Path]]:
    """pyspark's scalac jar and the class path that runs it (compiler, library, reflect)."""
    jars = pyspark_jars_dir()
    compiler = sorted(jars.glob("scala-compiler-*.jar"))
    if not compiler:
        raise StackError(f"the installed pyspark ships no scala-compiler jar in {jars}: cannot build the Kafka "
                         f"connector from sources; install a pyspark whose {ARTIFACT} Maven Central serves")
    runtime = [compiler[-1], *sorted(jars.glob("scala-library-*.jar")), *sorted(jars.glob("scala-reflect-*.jar"))]
    return compiler[-1], runtime


def _build_stamp(compiler: Path) -> str:
    return hashlib.sha256(f"{pyspark_version()}\0{SOURCE_VERSION}\0{compiler.name}\0{Path(__file__).read_bytes()!r}"
                          .encode()).hexdigest()


def _built(config: StackConfig) -> Connector | None:
    folder = config.cache_dir / "jars" / BUILT_DIR
    info_file = folder / "connector.json"
    try:
        compiler, _ = _scala_compiler()
        info = json.loads(info_file.read_text())
    except (OSError, ValueError, StackError):
        return None
    if info.get("stamp") != _build_stamp(compiler):
        return None
    return Connector(jars=_not_shipped(folder.glob("*.jar")), origin="built", version=info["version"],
                     built_from=info["built_from"], compiler=info["compiler"])


def _sources_jar(config: StackConfig, into: Path) -> Path:
    coordinates = f"{GROUP}:{ARTIFACT}:{SOURCE_VERSION}:jar:sources"
    proc = subprocess.run(["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={coordinates}",
                           f"-DoutputDirectory={into}"], capture_output=True, text=True, check=False,
                          cwd=config.cache_dir)
    found = sorted(into.glob("*-sources.jar"))
    if proc.returncode != 0 or not found:
        errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "ERROR" in line][:3]
        raise StackError(f"mvn could not fetch {coordinates}:\n" + "\n".join(errors))
    return found[0]


def build(config: StackConfig, quiet: bool = False) -> Connector:
    """Compile the connector from the official SOURCE_VERSION sources jar against pyspark's jars
    into `<cache>/jars/spark-kafka-built` (see the module's docstring).

    Raises: ToolMissing (java, mvn); StackError when Maven cannot fetch the sources or their
    dependencies, when pyspark ships no scalac, or with the compiler's last lines."""
    tools.require(tools.JAVA)
    tools.require(tools.MAVEN)
    compiler, runtime = _scala_compiler()
    version = pyspark_version()
    built_from = f"{GROUP}:{ARTIFACT}:{SOURCE_VERSION}:sources"
    if not quiet:
        print(f"building {ARTIFACT} {version} from the official {SOURCE_VERSION} sources with "
              f"{compiler.name} (about 20 s, once) ...", flush=True)
    dependencies = resolve(config, "spark-kafka-sources", _official_dependencies(SOURCE_VERSION), quiet)
    class_path = [jar for jar in _not_shipped(dependencies.glob("*.jar")) if artifact_id(jar) != ARTIFACT]
    target = config.cache_dir / "jars" / BUILT_DIR
    with tempfile.TemporaryDirectory(prefix="kafka-connector-", dir=config.cache_dir) as work:
        work = Path(work)
        with zipfile.ZipFile(_sources_jar(config, work / "sources")) as sources:
            sources.extractall(work / "src")
        scala = sorted(str(path) for path in (work / "src").rglob("*.scala"))
        classes = work / "classes"
        classes.mkdir()
        proc = subprocess.run(
            ["java", "-Xmx1g", "-cp", ":".join(map(str, runtime)), "scala.tools.nsc.Main", "-nowarn",
             "-d", str(classes), "-classpath", ":".join([f"{pyspark_jars_dir()}/*", *map(str, class_path)]), *scala],
            capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise StackError(f"{compiler.name} could not compile {built_from}:\n{(proc.stdout + proc.stderr)[-2000:]}")
        staging = target.with_name(f".{BUILT_DIR}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        jar = staging / f"{ARTIFACT}-{version}-from-{SOURCE_VERSION}-sources.jar"
        with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as out:
            for path in sorted([*classes.rglob("*"), *(work / "src").rglob("*")]):
                if path.is_file() and path.suffix not in (".scala", ".java"):
                    out.write(path, path.relative_to(classes if classes in path.parents else work / "src"))
        for dependency in class_path:
            shutil.copy2(dependency, staging / dependency.name)
    (staging / "connector.json").write_text(json.dumps(
        {"stamp": _build_stamp(compiler), "version": version, "built_from": built_from,
         "compiler": compiler.name}, indent=2) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    connector = _built(config)
    assert connector is not None, "a connector just built is readable"
    return connector


def install(config: StackConfig, quiet: bool = False) -> Connector:
    """`make install`'s step: the official artifact at pyspark's version if Maven Central serves it
    (asked again each time, `-U`), else the connector built from sources (built once, then cached).

    Raises: as `build`, when neither way works."""
    official = _official(config, quiet, cached_only=False, force_update=True)
    if official is not None:
        return official
    if not quiet:
        print(f"{GROUP}:{ARTIFACT}:{pyspark_version()} is not served by the Maven repository here", flush=True)
    return _built(config) or build(config, quiet)


def cached(config: StackConfig | None = None) -> Connector | None:
    """The connector in the cache (the official one first), or None; never resolves or builds."""
    config = config or StackConfig.from_env()
    try:
        return _official(config, True, cached_only=True) or _built(config)
    except (OSError, StackError):
        return None


def cached_record(config: StackConfig | None = None) -> dict | None:
    """`Connector.record` of the connector in the cache (`cached`), None when there is none: what a
    run record states about it."""
    found = cached(config)
    return found.record() if found is not None else None


def connector(config: StackConfig | None = None, quiet: bool = True) -> Connector:
    """The connector in the cache (the official one first), installed when there is none yet.

    Raises: as `install`."""
    config = config or StackConfig.from_env()
    return _official(config, quiet, cached_only=True) or _built(config) or install(config, quiet)
