"""``python -m producers DATASET --topic TOPIC [--rate R | --speed xK | --unlimited] ...``

Replays a dataset into a Kafka topic (created with P partitions if missing; record i to partition
i mod P), open-loop paced, and writes a JSON summary (stdout, or ``--summary PATH``); a
human-readable summary goes to stderr.

Exit status: 0 when every record was delivered; 1 when a record was not delivered; 2 for bad
arguments, an unknown dataset or a missing file; 3 when the broker is unreachable; 130 on Ctrl-C
(after flushing what was handed over and printing the summary of what was delivered).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bench.settings import add_flag
from bench.settings.input import DatasetSettings, PaceSettings, ReplaySettings
from datasets import DatasetFileMissing, get_dataset
from datasets.cli import parse_params

from .broker import BrokerUnreachable, TopicMismatch
from .pacing import MissingEventTime
from .replay import replay

EXIT_OK, EXIT_UNDELIVERED, EXIT_USAGE, EXIT_BROKER, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def default_bootstrap() -> str:
    return os.environ.get("BENCH_KAFKA_BOOTSTRAP") or f"127.0.0.1:{os.environ.get('BENCH_KAFKA_PORT', '9092')}"


def build_parser() -> argparse.ArgumentParser:
    """The producer's flags. Those `bench run` takes too (the dataset and its parameters, the topic,
    Kafka, partitions, rate, limit, progress) are its settings' (`bench.settings.input`), with the
    producer's defaults: one flag, one type and one help in both commands."""
    ap = argparse.ArgumentParser(
        prog="python -m producers", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("dataset", nargs="?", help="dataset name, as --dataset")
    add_flag(ap, DatasetSettings, "dataset", default=None, short=("-d",), dest="dataset_opt", metavar="DATASET")
    add_flag(ap, ReplaySettings, "topic", required=True, short=("-t",))
    add_flag(ap, ReplaySettings, "bootstrap_servers", default=default_bootstrap(), short=("-b",),
             also="that is $BENCH_KAFKA_BOOTSTRAP, else 127.0.0.1:$BENCH_KAFKA_PORT")
    add_flag(ap, ReplaySettings, "partitions", default=10, short=("-P",))
    pace = ap.add_mutually_exclusive_group()
    add_flag(pace, ReplaySettings, "rate", default=None, short=("-r",), also="open-loop")
    add_flag(pace, PaceSettings, "speed", short=("-s",))
    pace.add_argument("--unlimited", action="store_true", help="as fast as possible (the default)")
    add_flag(ap, ReplaySettings, "limit", default=None, short=("-n",))
    add_flag(ap, DatasetSettings, "dataset_params", short=("-p",))
    ap.add_argument("--start-ms", type=int, help="epoch ms of the schedule start (default: now)")
    ap.add_argument("--summary", type=Path, help="write the JSON summary here (default: stdout)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds to reach the broker (default 30)")
    ap.add_argument("--delivery-timeout", type=float, default=120.0,
                    help="seconds the replay waits for the broker to take records (its client's queue full) "
                         "before it stops, and for the final flush (default 120); no record expires on its own")
    ap.add_argument("--resume", action="store_true",
                    help="if the topic holds a prefix of this replay (a stopped one), send only the missing records")
    add_flag(ap, ReplaySettings, "progress")
    ap.add_argument("--no-key-stats", action="store_true", help="skip the realised key distribution")
    return ap


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.dataset and args.dataset_opt and args.dataset != args.dataset_opt:
        parser.error(f"two datasets given: {args.dataset} and {args.dataset_opt}")
    args.dataset = args.dataset or args.dataset_opt
    if not args.dataset:
        parser.error("a dataset is required (python -m datasets list)")
    try:
        for flag, value in (("--rate", args.rate), ("--limit", args.limit)):
            if value is not None and value < 0:
                raise ValueError(f"{flag} must be >= 0 (0: {'as fast as possible' if flag == '--rate' else 'all'}), "
                                 f"got {value}")
        if args.partitions < 1:
            raise ValueError(f"--partitions must be >= 1, got {args.partitions}")
        dataset = get_dataset(args.dataset, **parse_params(args.dataset_param))
        summary = replay(
            dataset,
            args.topic,
            args.bootstrap_servers,
            partitions=args.partitions,
            rate=args.rate or None,
            speed=args.speed,
            limit=args.limit or None,
            progress=not args.no_progress,
            start_ms=args.start_ms,
            timeout_s=args.timeout,
            delivery_timeout_s=args.delivery_timeout,
            key_stats=not args.no_key_stats,
            resume=args.resume,
        )
    except BrokerUnreachable as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_BROKER
    except (ValueError, TypeError, DatasetFileMissing, TopicMismatch, MissingEventTime, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # before any record was handed over
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

    text = summary.to_json()
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        args.summary.write_text(text + "\n")
    else:
        print(text)
    print(summary.human(), file=sys.stderr)
    if summary.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if summary.ok else EXIT_UNDELIVERED


if __name__ == "__main__":
    sys.exit(main())
