"""Argument parsing shared by the commands: `K=V` lists (`--param`, `--dataset-param`, `--cost`), and
the flags other commands share with `bench run` (`add_run_flag`), declared once in its settings."""

from __future__ import annotations

from typing import Any

from bench.run.options import CommandSettings, RunOptions
from bench.settings import AS_DECLARED, add_flag


def parse_assignments(items: list[str] | None) -> dict:
    """`["k=v", ...]` -> dict; values become int, float, bool or stay strings."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise ValueError(f"expected KEY=VALUE, got {item!r}")
        key, raw = item.split("=", 1)
        value: object = raw
        for cast in (int, float):
            try:
                value = cast(raw)
                break
            except ValueError:
                pass
        if raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        out[key.strip().replace("-", "_")] = value
    return out


def add_run_flag(parser, name: str, *, default: Any = AS_DECLARED, many: bool = False, flag: str | None = None,
                 also: str = "", required: bool = False) -> None:
    """Give another command (nemesis, capacity, simulate, the rescale bench) a flag of `bench run`'s
    setting `name`, declared once (a field of `bench.run.RunOptions` or `bench.run.CommandSettings`,
    its topology settings included): the same flag, type, unit and help.

    Args: default: this command's default (AS_DECLARED: `bench run`'s); many: the flag takes a
        comma-separated list of such values (a ladder, a sweep), parsed into a tuple (`default` may be
        written as such a list, e.g. "0,1"); flag: the flag's name where a list reads better in the
        plural (`--modes`); also: what this command adds to the help, after a `;`; required: the
        command has no default.
    Raises: KeyError for a name that is no setting of bench run."""
    for cls in (RunOptions, CommandSettings):
        if name in cls.__dataclass_fields__:
            add_flag(parser, cls, name, default=default, many=many, flag=flag, also=also, required=required)
            return
    raise KeyError(f"{name!r} is no setting of bench run")
