"""Argument parsing shared by the commands: `K=V` lists (`--param`, `--dataset-param`, `--cost`), and
the flags other commands share with `bench run` (`add_run_flag`), declared once in its settings."""

from __future__ import annotations

from dataclasses import Field, replace
from typing import Any

from bench.run.options import CommandSettings, RunOptions
from bench.topology.config import AS_DECLARED, Setting, settings_of, value_type


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


def flag_arguments(kind: type, f: Field, s: Setting, command: str = "") -> dict:
    """argparse's keyword arguments for the flag of setting `f` (a dataclass field whose metadata is `s`)
    of type `kind`: a switch for a bool, a repeatable `K=V` for a dict, else the value's type and the
    command line's default; help with unit and default (`Setting.help_for`)."""
    kwargs = {"help": s.help_for(f, command)}
    if kind is bool:
        return {**kwargs, "action": "store_true"}
    if kind is dict:
        return {**kwargs, "action": "append", "metavar": s.metavar}
    kwargs["default"] = s.default_for(f)
    if kind is not str:
        kwargs["type"] = kind
    if s.metavar is not None:
        kwargs["metavar"] = s.metavar
    if s.choices is not None:
        kwargs["choices"] = s.choices
    return kwargs


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
        found = [(f, s) for f, s in settings_of(cls) if f.name == name]
        if found:
            break
    else:
        raise KeyError(f"{name!r} is no setting of bench run")
    f, s = found[0]
    kind = value_type(cls, f)
    if default is not AS_DECLARED or required:
        s = replace(s, cli_default=None if required else default, default_text="")
    if many:
        s = replace(s, help=f"{s.help}, comma-separated" if not s.unit else s.help,
                    unit=f"{s.unit}, comma-separated" if s.unit else "")
    kwargs = flag_arguments(kind, f, s)
    kwargs["help"] = (kwargs["help"] + (f"; {also}" if also else "")).replace("%", "%%")
    if many:
        kwargs.pop("choices", None)
        kwargs["type"] = comma_separated(kind)
        kwargs["default"] = None if kwargs["default"] is None else comma_separated(kind)(kwargs["default"])
    if required:
        kwargs.pop("default", None)
        kwargs["required"] = True
    parser.add_argument(flag or s.flag_for(f), **kwargs)


def comma_separated(kind: type):
    """argparse type: `"a,b"` (or one value) -> a tuple of `kind` values, blank items skipped."""
    def parse(text: Any) -> tuple:
        return tuple(kind(item.strip()) for item in str(text).split(",") if item.strip())
    parse.__name__ = f"comma-separated {kind.__name__}"
    return parse
