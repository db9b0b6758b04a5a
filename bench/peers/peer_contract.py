"""What every peer and its Python driver agree on: the lines the driver waits for on the peer's stdout
and the columns of the files a rescale peer leaves, read from the one file the peers read too (the
contract module's resource, `PeerContract.java`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from bench.stack import maven
from bench.stack.resources import parse_properties

CONTRACT_FILE = maven.PEER_CONTRACT_DIR / "src" / "main" / "resources" / "bench" / "peers" / "contract" / \
    "peer-contract.properties"
"""The contract's one source; its comments say what each line means."""

TRACE_FIELDS = frozenset({"key", "unit", "worker", "release_ms", "processed_ms"})
"""trace.csv's columns (`PeerContract.TRACE_FIELDS`); the contract gives their order."""
STATE_FIELDS = frozenset({"key", "worker", "unit", "count", "sum", "first_ts_ms", "last_ts_ms"})
"""state.csv's columns (`PeerContract.STATE_FIELDS`)."""


@dataclass(frozen=True)
class PeerContract:
    """The contract: `ready_line`, a rescale peer's line once it reads its topic; `result_prefix`, the
    start of a peer's last line (then a space and its result as JSON); the files' columns in order."""

    ready_line: str
    result_prefix: str
    trace_columns: tuple[str, ...]
    state_columns: tuple[str, ...]


def parse_contract(text: str) -> PeerContract:
    """CONTRACT_FILE's text read as `PeerContract.parse` reads it.

    Raises: ValueError for a line missing, blank or holding a space, an unknown name, or columns other
    than their file's fields, each named once."""
    given = parse_properties(text, CONTRACT_FILE.name)
    unknown = sorted(set(given) - {"ready.line", "result.prefix", "trace.columns", "state.columns"})
    if unknown:
        raise ValueError(f"{CONTRACT_FILE.name} names what the contract does not have: {unknown}")

    def word(name: str) -> str:
        value = given.get(name, "")
        if not value or any(c.isspace() for c in value):
            raise ValueError(f"{CONTRACT_FILE.name}: {name} must be one word, got {value!r}")
        return value

    def columns(name: str, fields: frozenset[str]) -> tuple[str, ...]:
        names = tuple(c.strip() for c in given.get(name, "").split(","))
        if len(names) != len(fields) or set(names) != fields:
            raise ValueError(f"{CONTRACT_FILE.name}: {name} must name each of {sorted(fields)} once, got {list(names)}")
        return names

    return PeerContract(word("ready.line"), word("result.prefix"), columns("trace.columns", TRACE_FIELDS),
                        columns("state.columns", STATE_FIELDS))


CONTRACT = parse_contract(CONTRACT_FILE.read_text(encoding="utf-8"))
"""The contract as shipped."""


def result_of(stdout: str, peer: str, contract: PeerContract = CONTRACT) -> dict:
    """The JSON result on the last line of `stdout` that starts with the result prefix and a space.

    Raises: ValueError naming `peer` when there is no such line."""
    start = contract.result_prefix + " "
    for line in reversed(stdout.splitlines()):
        if line.startswith(start):
            return json.loads(line[len(start):])
    raise ValueError(f"the {peer} peer printed no {contract.result_prefix} line")


def read_csv(path: Path, columns: tuple[str, ...], **read_options) -> pd.DataFrame:
    """A peer's trace.csv or state.csv (`key` as text; an empty field is missing only where
    `read_options` say so).

    Raises: ValueError when its header is not `columns` (a peer built from another contract)."""
    frame = pd.read_csv(path, dtype={"key": str}, keep_default_na=False, **read_options)
    if tuple(frame.columns) != columns:
        raise ValueError(f"{path} has the columns {list(frame.columns)}, the contract says {list(columns)}")
    return frame
