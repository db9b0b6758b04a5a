"""`python -m dashboards.build [--check]`: write the dashboards' JSON into dashboards/generated/.

`--check` writes nothing and exits 1 if a committed JSON file differs from what the code generates
(the test suite runs it, so stale JSON cannot land).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from grafana_foundation_sdk.cog.encoder import JSONEncoder

from dashboards import definition

GENERATED = Path(__file__).resolve().parent / "generated"
DASHBOARDS = {"stream-groupings.json": definition.dashboard}


def render(factory) -> str:
    """The dashboard as Grafana JSON text (sorted keys, 2-space indent, final newline).

    `factory()` returns a grafana-foundation-sdk dashboard builder; its built model serialises
    through the SDK's encoder (each model's `to_json`)."""
    data = json.loads(json.dumps(factory().build(), cls=JSONEncoder))
    return json.dumps(data, sort_keys=True, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboards.build", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the committed JSON is stale")
    args = parser.parse_args(argv)
    stale = []
    for name, factory in DASHBOARDS.items():
        target = GENERATED / name
        text = render(factory)
        if args.check:
            if not target.is_file() or target.read_text() != text:
                stale.append(str(target))
            continue
        GENERATED.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        print(f"wrote {target}")
    if stale:
        print("stale generated dashboards (run `make dashboards`): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
