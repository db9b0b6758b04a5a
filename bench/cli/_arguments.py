"""Argument parsing shared by the commands: `K=V` lists (`--param`, `--dataset-param`, `--cost`)."""

from __future__ import annotations


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
