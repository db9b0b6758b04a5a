"""One source of settings: the flags of `bench run` / `bench run-all`, the Makefile's bench
variables, docs/settings.md and the README's table of Makefile variables all agree with the
settings' dataclasses (`TopologySettings`, `RunOptions`, `CommandSettings`)."""

from __future__ import annotations

import argparse
import functools
import re
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from bench.__main__ import build_parser
from bench.cli.run import options_from
from bench.run.options import CommandSettings, RunOptions
from bench.run.settings_doc import (BEGIN, END, README, SETTINGS_MD, makefile_settings, makefile_settings_markdown,
                                    settings_markdown)
from bench.settings import settings_of, value_type
from producers.__main__ import build_parser as producer_parser

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ("run", "run-all")
WITHOUT_FLAG = {"own_topic", "stop_after_batches"}
"""RunOptions fields that the code building the options sets, not a flag."""
GIVEN = {"grouping", "run_id", "experiment_id"}
"""Fields whose flags the command resolves before `options_from` (run-all's run ids, ...)."""
ARGPARSE_TYPE = {int: int, float: float, Path: Path, str: None}


@functools.cache
def parser(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def flags_of(command: str) -> dict[str, argparse.Action]:
    return {opt: a for a in parser(command)._actions for opt in a.option_strings if opt not in ("-h", "--help")}


def declared(command: str) -> dict[str, tuple]:
    """flag -> (dataclass, field, setting) of every setting `command` takes."""
    out = {}
    for cls in (RunOptions, CommandSettings):
        for f, s in settings_of(cls):
            flag = s.flag_for(f)
            if flag is not None and (not s.commands or command in s.commands):
                out[flag] = (cls, f, s)
    return out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_is_a_setting_and_every_setting_a_flag(command):
    flags, settings = set(flags_of(command)), set(declared(command))
    assert flags == settings, {"flags without a setting": flags - settings, "settings without a flag": settings - flags}
    no_flag = {f.name for f in fields(RunOptions) if f.metadata["setting"].flag_for(f) is None}
    assert no_flag == WITHOUT_FLAG
    assert all("setting" in f.metadata for cls in (RunOptions, CommandSettings) for f in fields(cls))


@pytest.mark.parametrize("command", COMMANDS)
def test_each_flag_has_its_settings_type_and_default(command):
    flags = flags_of(command)
    for flag, (cls, f, s) in declared(command).items():
        action, kind = flags[flag], value_type(cls, f)
        if f.default is not MISSING and f.default is not None:
            assert isinstance(f.default, kind) or (kind is float and type(f.default) is int), (f.name, f.default)
        if kind is bool:
            assert isinstance(action, argparse._StoreTrueAction), flag
            assert flag == (f"--no-{f.name.replace('_', '-')}" if f.default else f"--{f.name.replace('_', '-')}")
        elif kind is dict:
            assert isinstance(action, argparse._AppendAction) and action.default is None, flag
        else:
            assert action.type is ARGPARSE_TYPE[kind], (flag, action.type, kind)
            assert action.default == s.default_for(f) and type(action.default) is type(s.default_for(f)), flag
            assert action.choices == s.choices, flag


def test_the_options_read_back_from_the_flags_are_the_settings_defaults():
    args = parser("run").parse_args([])
    options = options_from(args, "KEY", "r", "e")
    for f, s in settings_of(RunOptions):
        if f.name in GIVEN | WITHOUT_FLAG:
            continue
        default = s.default_for(f)
        expected = (default or None) if s.zero_is_none else default
        assert getattr(options, f.name) == expected, f.name
    assert options.own_topic  # a paced run into the derived topic
    zero = options_from(parser("run").parse_args(["--rate", "0", "--limit", "0"]), "KEY", None)
    assert zero.rate is None and zero.limit is None and not zero.own_topic


def sample(kind: type, default, choices: tuple[str, ...] | None = None):
    """A value of `kind` other than `default` (one of `choices` if given), and how the command line
    writes it."""
    if choices:
        other = next(c for c in choices if c != default)
        return other, other
    if kind is int:
        return (default or 0) + 3, str((default or 0) + 3)
    if kind is float:
        return (default or 0.0) + 0.25, str((default or 0.0) + 0.25)
    if kind is Path:
        return Path("/tmp/x"), "/tmp/x"
    return "text", "text"


def test_each_flag_sets_its_field():
    """Every flag given on the command line reaches its RunOptions field, with the field's type."""
    for flag, (cls, f, s) in declared("run").items():
        if cls is not RunOptions or f.name in GIVEN:
            continue
        kind = value_type(cls, f)
        if kind is bool:
            argv, expected = [flag], not f.default
        elif kind is dict:
            argv, expected = [flag, "k=2", flag, "x-y=a"], {"k": 2, "x_y": "a"}
        else:
            expected, text = sample(kind, s.default_for(f), s.choices)
            argv = [flag, text]
        options = options_from(parser("run").parse_args(argv), "KEY", None)
        assert getattr(options, f.name) == expected, (flag, getattr(options, f.name), expected)


def makefile_pairs() -> set[tuple[str, str]]:
    """(variable, flag) of the Makefile's bench parameters: BENCH_OPTS and the bench recipes."""
    text = (REPO_ROOT / "Makefile").read_text().replace("\\\n", " ")
    block = re.search(r"^BENCH_OPTS\s*=(.*)$", text, re.M).group(1)
    recipes = re.findall(r"^bench(?:-all)?:.*\n\t(.*)$", text, re.M)
    pairs = set(re.findall(r"\$\(if \$\((\w+)\),(--[\w-]+) \$\(\1\)\)", block + " ".join(recipes)))
    pairs |= {(var, flag) for recipe in recipes for flag, var in re.findall(r"(--[\w-]+) \$\((\w+)\)", recipe)}
    return pairs


def test_every_makefile_bench_variable_passes_an_existing_flag():
    pairs = makefile_pairs()
    assert len(pairs) >= 12, pairs  # the parse found the block
    flags = set(flags_of("run")) | set(flags_of("run-all"))
    assert {(v, flag) for v, flag in pairs if flag not in flags} == set(), "Makefile variables pass unknown flags"
    declared_pairs = {(variable, flag) for variable, flag, _, _ in makefile_settings()}
    assert pairs == declared_pairs, {"in the Makefile only": pairs - declared_pairs,
                                     "declared only (setting(makefile=...))": declared_pairs - pairs}
    default = re.search(r"^GROUPING \?= (\S+)", (REPO_ROOT / "Makefile").read_text(), re.M).group(1)
    assert default == parser("run").get_default("grouping")


def test_docs_settings_md_is_generated_from_the_dataclasses():
    assert SETTINGS_MD.read_text() == settings_markdown(), \
        "docs/settings.md is out of date: python -m bench.run.settings_doc --write"


def test_the_readme_table_of_makefile_variables_is_generated():
    readme = README.read_text()
    assert BEGIN in readme and END in readme, f"README.md has no {BEGIN} ... {END} block"
    block = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    assert block.strip() == makefile_settings_markdown().strip(), \
        "README.md's table of Makefile variables is out of date: python -m bench.run.settings_doc --write"


OWN_MEANING = {
    "simulate": {"--grouping", "--rate", "--limit", "--bootstrap-servers", "--run-id", "--experiment-id", "--rescale",
                 "--influx-url"},
    "capacity": {"--repeat"},
    "nemesis": set(),
}
"""Flags of another command that share a name with one of `bench run`'s but not its meaning: the
simulator's virtual clock, the records it reads, its points, its opt-in InfluxDB; capacity's
repetitions of a ladder."""


@pytest.mark.parametrize("command", sorted(OWN_MEANING))
def test_the_flags_other_commands_share_with_run_are_declared_once(command):
    """A flag that `simulate`, `capacity` or `nemesis` shares with `bench run` is run's setting
    (`add_run_flag`): its help begins with the setting's, its values have the setting's type (one
    value, or a comma-separated tuple of them); the exceptions are listed, with their reason."""
    shared = {flag: action for flag, action in flags_of(command).items()
              if flag in flags_of("run") and flag not in OWN_MEANING[command]}
    assert len(shared) >= 4, sorted(shared)
    assert_declared_as_runs(command, shared)


def test_the_producers_flags_that_run_takes_too_are_its_settings():
    """The producer (`python -m producers`) takes the input's flags from the same settings as `bench
    run` (`bench.settings.input`), with its own defaults."""
    producer = {opt: a for a in producer_parser()._actions for opt in a.option_strings if opt.startswith("--")}
    shared = {flag: action for flag, action in producer.items() if flag in flags_of("run")}
    assert set(shared) == {"--dataset", "--dataset-param", "--topic", "--bootstrap-servers", "--partitions", "--rate",
                           "--limit", "--no-progress"}
    assert_declared_as_runs("producer", shared)
    args = producer_parser().parse_args(["D", "-t", "T", "-p", "s=1.2", "--no-progress"])
    assert (args.dataset_param, args.no_progress, args.partitions, args.rate, args.limit) == (["s=1.2"], True, 10,
                                                                                             None, None)


def test_the_producer_and_the_simulator_take_one_speed():
    """`--speed xK` of the producer and of the simulator's virtual clock: one setting
    (`bench.settings.input.PaceSettings`), one type, one help."""
    from bench.settings.input import PaceSettings, Speed

    (f, s), = settings_of(PaceSettings)
    producer = {opt: a for a in producer_parser()._actions for opt in a.option_strings}
    for command, action in (("producer", producer["--speed"]), ("simulate", flags_of("simulate")["--speed"])):
        assert action.type is Speed and action.metavar == "xK" and action.help.startswith(s.help), command
    assert producer_parser().parse_args(["D", "-t", "T", "-s", "x10"]).speed == 10.0
    assert parser("simulate").parse_args(["--dataset", "D", "--speed", "0.5"]).speed == 0.5


def assert_declared_as_runs(command: str, shared: dict[str, argparse.Action]) -> None:
    """Each of `command`'s `shared` flags has the help and the type of `bench run`'s setting."""
    run = flags_of("run")
    settings = {s.flag_for(f): (cls, f, s) for cls in (RunOptions, CommandSettings) for f, s in settings_of(cls)}
    for flag, action in shared.items():
        cls, f, s = settings[flag]
        assert action.help.replace("%%", "%").startswith(s.help), (command, flag, action.help)
        kind = value_type(cls, f)
        if kind in (bool, dict):
            assert type(action) is type(run[flag]), (command, flag)
        elif getattr(action.type, "__name__", "").startswith("comma-separated"):
            assert action.type("1,2") == (kind("1"), kind("2")) and isinstance(action.default, tuple), (command, flag)
        else:
            assert action.type is ARGPARSE_TYPE[kind], (command, flag, action.type)


def test_a_list_flag_parses_into_the_settings_type_and_refuses_other_values():
    capacity = parser("capacity")
    args = capacity.parse_args(["--cost-ms", "0.5, 2", "--modes", "realtime"])
    assert args.cost_ms == (0.5, 2.0) and args.modes == ("realtime",)
    assert capacity.parse_args([]).cost_ms == (0.0, 1.0)
    with pytest.raises(SystemExit):
        capacity.parse_args(["--cost-ms", "one"])
