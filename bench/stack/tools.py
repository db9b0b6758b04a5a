"""Checks that the external tools the stack needs are present and recent enough.

Each failure is one line naming the tool and the version needed, e.g.
`java 17 or newer is required (found 11.0.2 at /usr/bin/java)`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass

from bench.stack.process import StackError


class ToolMissing(StackError):
    """A required command-line tool is absent or older than the version the stack needs."""


@dataclass(frozen=True)
class Tool:
    """A command, how to ask its version, and the oldest version accepted."""

    command: str
    version_args: tuple[str, ...]
    pattern: str  # regex whose first group is the dotted version
    minimum: tuple[int, ...]
    purpose: str


JAVA = Tool("java", ("-version",), r'version "?(\d+(?:\.\d+)*)', (17,), "the Kafka broker and Spark")
MAVEN = Tool("mvn", ("--version",), r"Apache Maven (\d+(?:\.\d+)*)", (3, 6), "resolving the Kafka and Spark jars")
GO = Tool("go", ("version",), r"go(\d+(?:\.\d+)*)", (1, 21), "building InfluxDB 1.8.10 once")


def _parse(command: str, version: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in version.split("."))
    # Java 8 and older report "1.8.0_x": the feature version is the second number.
    return parts[1:] if command == "java" and parts[:1] == (1,) and len(parts) > 1 else parts


def require(tool: Tool) -> tuple[int, ...]:
    """Return the installed version of `tool`.

    Raises: ToolMissing if the command is not on PATH, prints no recognisable version, or is older
    than `tool.minimum`.
    """
    need = ".".join(map(str, tool.minimum))
    path = shutil.which(tool.command)
    if path is None:
        raise ToolMissing(f"{tool.command} {need} or newer is required for {tool.purpose}, and it is not on PATH")
    try:
        out = subprocess.run(
            [path, *tool.version_args], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolMissing(f"{tool.command} {need} or newer is required; running {path} failed: {exc}") from None
    match = re.search(tool.pattern, out.stdout + out.stderr)
    if match is None:
        raise ToolMissing(f"{tool.command} {need} or newer is required; {path} printed no version")
    found = _parse(tool.command, match.group(1))
    if found < tool.minimum:
        raise ToolMissing(
            f"{tool.command} {need} or newer is required for {tool.purpose} (found {match.group(1)} at {path})"
        )
    return found
