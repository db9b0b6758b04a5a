"""docs/settings.md and the README's table of Makefile variables, generated from the settings'
dataclasses (`TopologySettings`, `RunOptions`, `CommandSettings`); tests/bench/test_settings.py
checks that both files hold what these functions return.

    python -m bench.run.settings_doc            print docs/settings.md
    python -m bench.run.settings_doc --write    rewrite docs/settings.md, and the README's block
                                                between the settings markers
"""

from __future__ import annotations

import sys
from dataclasses import Field
from pathlib import Path

from bench.run.options import CommandSettings, RunOptions
from bench.settings import Setting, settings_of, value_type
from bench.topology.config import TopologySettings

REPO_ROOT = Path(__file__).resolve().parents[2]
SETTINGS_MD = REPO_ROOT / "docs" / "settings.md"
README = REPO_ROOT / "README.md"
BEGIN, END = "<!-- settings:begin -->", "<!-- settings:end -->"
"""The markers around the README's table of Makefile variables."""

SECTIONS = (
    (TopologySettings, "The topology", "`TopologySettings`, bench/topology/config.py: what the Spark query is built "
                                       "with; its dataset and dataset parameters are `DatasetSettings`, "
                                       "bench/settings/input.py, which the producer takes too."),
    (RunOptions, "The run", "`RunOptions`, bench/run/options.py: the input's replay (`ReplaySettings`, "
                            "bench/settings/input.py, which the producer takes too), the services, the observer and "
                            "the run's limits."),
    (CommandSettings, "The command", "`CommandSettings`, bench/run/options.py: which runs `bench run` and "
                                     "`bench run-all` start, and what they print."),
)
HEADER = """# Settings of `bench run` and `bench run-all`

Every setting of a streaming run, one row each. This page is generated from the settings'
dataclasses (`python -m bench.run.settings_doc --write`; tests/bench/test_settings.py fails when
it is out of date): to add or change a setting, edit its field there, and its flag, this page and
the README's table follow. Defaults are the command line's (`--rate` and `--limit` default to none,
as fast as possible and every record, for a caller of `bench.run.RunOptions`). A flag without a
Makefile variable goes through `ARGS`, e.g. `make bench ARGS="--trigger-s 2"`.
"""


def _cell(text: str) -> str:
    """Table-cell text: `|` and angle brackets escaped (`<run_id>` is not an HTML tag)."""
    return text.replace("|", "\\|").replace("<", "\\<").replace(">", "\\>")


def _type(cls: type, f: Field, s: Setting) -> str:
    kind = value_type(cls, f)
    if kind is bool:
        return "switch"
    if kind is dict:
        return "K=V, repeatable"
    if s.choices:
        return " or ".join(f"`{c}`" for c in s.choices)
    return "path" if kind is Path else kind.__name__


def _default(f: Field, s: Setting) -> str:
    if s.default_text:
        return _cell(s.default_text)
    value = s.default_for(f)
    if isinstance(value, bool):
        return "on" if value else "off"
    return "-" if value in (None, "") or value == {} else f"`{Setting.show(value)}`"


def _flag(f: Field, s: Setting) -> str:
    flag = s.flag_for(f)
    if flag is None:
        return "(none)"
    return f"`{flag}`" + (f" ({', '.join(s.commands)} only)" if s.commands else "")


def settings_markdown() -> str:
    """docs/settings.md: one table per dataclass (setting, flag, Makefile variable, type, unit,
    default, meaning)."""
    lines = [HEADER]
    for cls, title, what in SECTIONS:
        lines += [f"## {title}", "", what, "",
                  "| setting | flag | Makefile | type | unit | default | meaning |",
                  "|---|---|---|---|---|---|---|"]
        inherited = set() if cls is TopologySettings else set(TopologySettings.__dataclass_fields__)
        for f, s in settings_of(cls):
            if f.name not in inherited:
                lines.append(f"| `{f.name}` | {_flag(f, s)} | {f'`{s.makefile}`' if s.makefile else ''} | "
                             f"{_type(cls, f, s)} | {s.unit} | {_default(f, s)} | {_cell(s.meaning)} |")
        lines.append("")
    return "\n".join(lines)


def makefile_settings() -> list[tuple[str, str, Field, Setting]]:
    """(Makefile variable, flag, field, setting) of every setting a Makefile variable passes, in
    the dataclasses' order."""
    return [(s.makefile, s.flag_for(f), f, s) for cls in (RunOptions, CommandSettings)
            for f, s in settings_of(cls) if s.makefile]


def makefile_settings_markdown() -> str:
    """The README's table of `make bench` / `make bench-all` variables (between its settings markers)."""
    lines = ["| variable | flag | default | meaning |", "|---|---|---|---|"]
    for variable, flag, f, s in makefile_settings():
        lines.append(f"| `{variable}` | `{flag}` | {_default(f, s)} | {_cell(s.help)}{', ' + s.unit if s.unit else ''} |")
    lines.append("| `ARGS` | any other flag | | passed verbatim (docs/settings.md lists every flag) |")
    return "\n".join(lines) + "\n"


def with_readme_block(readme: str) -> str:
    """`readme` with the text between its settings markers replaced by the generated table.
    Raises ValueError when the markers are missing."""
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"README.md has no {BEGIN} ... {END} block")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{makefile_settings_markdown()}{END}{tail}"


def main(argv: list[str]) -> int:
    if argv[:1] != ["--write"]:
        sys.stdout.write(settings_markdown())
        return 0
    SETTINGS_MD.write_text(settings_markdown())
    print(f"wrote {SETTINGS_MD.relative_to(REPO_ROOT)}")
    try:
        README.write_text(with_readme_block(README.read_text()))
        print(f"wrote the settings block of {README.relative_to(REPO_ROOT)}")
    except ValueError as e:
        print(f"README.md not changed: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
