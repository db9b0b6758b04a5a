"""Sub-commands of `python -m bench`.

Each module here exposes `add_parsers(subparsers)`, which registers one or more sub-commands and
sets `handler=<callable(args) -> int>` as their parser default. `bench/__main__.py` imports every
module of this package, so a new command is a new module, nothing else.
"""
