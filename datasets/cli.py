"""``python -m datasets``: list, show, sql, fetch.

- ``list [NAMES...] [--fast] [--refresh]``: name, records, tuples, distinct keys, top-1/top-10 key
  shares (of tuples; ``w.top1`` is the top-1 share of the weighted count when the dataset carries
  counts). Full statistics are cached under ``.cache/datasets/stats/`` keyed by the dataset's
  fingerprint, so only the first listing reads everything (about a minute for the eleven 10M-record
  COUNTRY streams); ``--fast`` reads at most the first 1,000,000 records of each (marked ``*``).
- ``show NAME [-n N] [-p k=v ...]``: the first records and the tuples the splitter extracts.
- ``sql NAME [-p k=v ...]``: the splitter rule as Spark SQL.
- ``fetch``: the npm-registry data (US_FLIGHTS_3M) into the cache.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from typing import Any

from . import DATASETS, get_dataset
from .base import Dataset, DatasetFileMissing, KeyStats
from .common import cache_dir
from .flights import fetch_flights_3m
from .stats import distribution_summary

FAST_LIMIT = 1_000_000


def parse_params(items: list[str] | None) -> dict[str, str]:
    """``["key=dest", "length=1000"]`` -> ``{"key": "dest", "length": "1000"}`` (datasets coerce)."""
    out: dict[str, str] = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise SystemExit(f"bad dataset parameter {item!r}: expected NAME=VALUE")
        out[k.strip()] = v
    return out


def _stats_cache_path(ds: Dataset, limit: int | None):
    ident = json.dumps({"fp": ds.fingerprint(), "limit": limit}, sort_keys=True, default=str)
    return cache_dir() / "datasets" / "stats" / f"{hashlib.sha256(ident.encode()).hexdigest()[:24]}.json"


def cached_summary(ds: Dataset, limit: int | None, refresh: bool = False) -> dict[str, Any]:
    path = _stats_cache_path(ds, limit)
    if not refresh and path.is_file():
        try:
            return json.loads(path.read_text())
        except ValueError:
            pass
    st: KeyStats = ds.key_stats(limit)
    summary = distribution_summary(st)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary))
    except OSError:
        pass
    return summary


def _fmt_share(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.2f}%"


def cmd_list(args: argparse.Namespace) -> int:
    names = args.names or list(DATASETS)
    params = parse_params(args.param)
    limit = FAST_LIMIT if args.fast else None
    header = f"{'dataset':30} {'records':>12} {'tuples':>12} {'keys':>9} {'top1':>8} {'top10':>8} {'w.top1':>8}  seconds"
    print(header)
    print("-" * len(header))
    rc = 0
    for name in names:
        t = time.perf_counter()
        try:
            ds = get_dataset(name, **params) if args.names else get_dataset(name)
            s = cached_summary(ds, limit, args.refresh)
        except DatasetFileMissing:
            print(f"{name:30} {'(user files: pass -p path=...)':>51}")
            continue
        except Exception as e:  # noqa: BLE001 - one broken dataset must not hide the others
            print(f"{name:30} error: {type(e).__name__}: {e}")
            rc = 1
            continue
        mark = "*" if limit is not None and s["records"] >= limit else " "
        w = s.get("weighted", {}).get("top1_share")
        print(
            f"{ds.name:30} {s['records']:>11,}{mark} {s['tuples']:>12,} {s['distinct_keys']:>9,} "
            f"{_fmt_share(s['top1_share']):>8} {_fmt_share(s['top10_share']):>8} {_fmt_share(w):>8}"
            f"  {time.perf_counter() - t:6.1f}"
        )
    if limit is not None:
        print(f"* --fast: first {limit:,} records only")
    return rc


def cmd_show(args: argparse.Namespace) -> int:
    ds = get_dataset(args.name, **parse_params(args.param))
    print(f"# {ds.name}: {ds.description}\n# origin: {ds.origin}\n# licence: {ds.licence}\n# format: {ds.record_format}")
    for rec in ds.records(args.n):
        value = rec.value.decode("utf-8")
        try:
            tuples = ds.extract(value)
        except ValueError as e:
            tuples = f"MALFORMED: {e}"
        print(f"{value}\t event_ms={rec.event_ms}\t -> {tuples}")
    if ds.malformed.count:
        print(f"# malformed lines: {json.dumps(ds.malformed.to_dict())}")
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    ds = get_dataset(args.name, **parse_params(args.param))
    sql = ds.splitter_sql
    print(f"-- {ds.name}: prelude (selected beside value)\n{sql.prelude}\n\n"
          f"-- {ds.name}: tuples\n{sql.tuples}\n\n-- {ds.name}: error\n{sql.error}")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    path = fetch_flights_3m(force=args.force)
    print(f"US_FLIGHTS_3M: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m datasets", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="names, record counts, distinct keys, top-1/top-10 shares")
    p.add_argument("names", nargs="*")
    p.add_argument("--fast", action="store_true", help=f"first {FAST_LIMIT:,} records only")
    p.add_argument("--refresh", action="store_true", help="recompute cached statistics")
    p.add_argument("-p", "--param", action="append", help="NAME=VALUE for the named datasets")
    p.set_defaults(fn=cmd_list)
    p = sub.add_parser("show", help="first records and their tuples")
    p.add_argument("name")
    p.add_argument("-n", type=int, default=5)
    p.add_argument("-p", "--param", action="append")
    p.set_defaults(fn=cmd_show)
    p = sub.add_parser("sql", help="the splitter rule as Spark SQL")
    p.add_argument("name")
    p.add_argument("-p", "--param", action="append")
    p.set_defaults(fn=cmd_sql)
    p = sub.add_parser("fetch", help="fetch npm-registry data into the cache (US_FLIGHTS_3M)")
    p.add_argument("--force", action="store_true")
    p.set_defaults(fn=cmd_fetch)
    args = ap.parse_args(argv)
    try:
        return args.fn(args)
    except (ValueError, TypeError, DatasetFileMissing, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
