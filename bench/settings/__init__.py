"""Settings declared once: a setting is a dataclass field whose metadata (`setting(...)`) says its
help, unit, flag, command-line default and Makefile variable. Every command builds its flags from
these declarations (`add_flag`, `flag_arguments`), so a flag that several commands take has one
name, one type and one help; `docs/settings.md` and the README's table of Makefile variables are
generated from them too (`bench.run.settings_doc`).

The settings themselves live with what reads them: the topology's in `bench.topology.config`, a
run's in `bench.run.options`, the input's that `bench run` and the producer (`python -m producers`)
share in `bench.settings.input`.
"""

from __future__ import annotations

import functools
import types
import typing
from dataclasses import MISSING, Field, dataclass, fields, replace
from typing import Any

AS_DECLARED: Any = type("AsDeclared", (), {"__repr__": lambda self: "AS_DECLARED"})()
"""`Setting.cli_default` when the command line's default is the field's own."""


@dataclass(frozen=True)
class Setting:
    """What a setting says of itself, kept in its dataclass field's metadata (`setting(...)`).

    The flag's help reads `<help>[, <unit>][ (default <value or default_text>)][; <details>]`.
    """

    help: str
    unit: str = ""
    """Of the value: `ms`, `s`, `records/s`, `UTF-8 bytes`; empty for counts and names."""
    flag: str | None = ""
    """"": `--<name>` (dashes for underscores), `--no-<name>` for a switch that is on by default;
    another string: that flag; None: no flag (set by the code that builds the options)."""
    cli_default: Any = AS_DECLARED
    """The command line's default where it differs from the dataclass's (`--rate`: 500 records/s on
    the command line, as fast as possible for a caller that gives none)."""
    zero_is_none: bool = False
    """The flag's 0 means None (`--rate 0`: as fast as possible, `--limit 0`: every record)."""
    default_text: str = ""
    """How the help states a default that is not a value (`S`, `the local stack's`)."""
    details: str = ""
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    makefile: str = ""
    """The Makefile variable that passes this flag (`WORKERS`), if any."""
    commands: tuple[str, ...] = ()
    """The commands that take the flag (`run`, `run-all`); empty: every command of the settings."""
    command_help: tuple[tuple[str, str], ...] = ()
    """(command, help) where a command says it otherwise (`--run-id` of run-all: a prefix)."""

    def flag_for(self, f: Field) -> str | None:
        """The flag of field `f` (its name, dashed; `--no-<name>` for a switch on by default), or None."""
        if self.flag != "":
            return self.flag
        if f.default is True:
            return f"--no-{f.name.replace('_', '-')}"
        return f"--{f.name.replace('_', '-')}"

    def default_for(self, f: Field) -> Any:
        """The value a command line that does not give the flag leaves in the field."""
        if self.cli_default is not AS_DECLARED:
            return self.cli_default
        if f.default_factory is not MISSING:
            return f.default_factory()
        return None if f.default is MISSING else f.default

    @property
    def meaning(self) -> str:
        return f"{self.help}; {self.details}" if self.details else self.help

    @staticmethod
    def show(value: Any) -> str:
        """A default as the help and the docs write it: `500`, `1.5`, `kafka`."""
        return f"{value:g}" if isinstance(value, float) else str(value)

    def help_for(self, f: Field, command: str = "") -> str:
        """The flag's help text (`command`: the command whose flag it is, for `command_help`)."""
        text = dict(self.command_help).get(command, self.help) + (f", {self.unit}" if self.unit else "")
        default = self.default_for(f)
        if self.default_text:
            text += f" (default: {self.default_text})"
        elif not (isinstance(default, bool) or default is None or default == "" or default == {}):
            text += f" (default {self.show(default)})"
        return f"{text}; {self.details}" if self.details else text


def setting(help: str, unit: str = "", **more: Any) -> dict[str, Setting]:
    """Field metadata declaring a setting: `field(default=..., metadata=setting("help", "ms"))`."""
    return {"setting": Setting(help, unit, **more)}


def settings_of(cls: type) -> list[tuple[Field, Setting]]:
    """The fields of dataclass `cls` that are settings, in declaration order (inherited first)."""
    return [(f, f.metadata["setting"]) for f in fields(cls) if "setting" in f.metadata]


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)  # evaluates the annotations' text: 4 ms a call


def value_type(cls: type, f: Field) -> type:
    """The type of field `f`'s values without None: int, float, str, bool, dict or Path."""
    hint = _type_hints(cls)[f.name]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    return typing.get_origin(hint) or hint


def setting_field(cls: type, name: str) -> tuple[Field, Setting]:
    """The field of dataclass `cls` named `name` and its setting. Raises KeyError when `cls` has no
    such setting."""
    for f, s in settings_of(cls):
        if f.name == name:
            return f, s
    raise KeyError(f"{name!r} is no setting of {cls.__name__}")


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


def add_flag(parser, cls: type, name: str, *, default: Any = AS_DECLARED, many: bool = False,
             flag: str | None = None, short: tuple[str, ...] = (), also: str = "", required: bool = False,
             **more: Any) -> None:
    """Add to `parser` (or an argparse group) the flag of setting `name` of dataclass `cls`, as
    declared there: its flag, type, unit and help.

    Args: default: this command's default (AS_DECLARED: the declaration's command-line default);
        many: the flag takes a comma-separated list of such values (a ladder, a sweep), parsed into a
        tuple (`default` may be written as such a list, e.g. "0,1"); flag: the flag's name where a
        list reads better in the plural (`--modes`); short: more option strings (`-r`); also: what
        this command adds to the help, after a `;`; required: the command has no default; more:
        argparse's own keywords (`dest`).
    Raises: KeyError for a name that is no setting of `cls`."""
    f, s = setting_field(cls, name)
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
    parser.add_argument(flag or s.flag_for(f), *short, **kwargs, **more)


def comma_separated(kind: type):
    """argparse type: `"a,b"` (or one value) -> a tuple of `kind` values, blank items skipped."""
    def parse(text: Any) -> tuple:
        return tuple(kind(item.strip()) for item in str(text).split(",") if item.strip())
    parse.__name__ = f"comma-separated {kind.__name__}"
    return parse
