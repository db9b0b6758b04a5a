"""Small files in each user-supplied public format, with malformed lines at known line numbers."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

TICKER_LINES = [
    "1478563200\tAAPL",
    "1478563201\tGOOG",
    "  1478563202\tAAPL  ",  # trimmed like Java's String.trim()
    "no tab here",  # line 4: malformed
    "x\tAAPL",  # line 5: malformed
    "1478563203\tMSFT",
]

PAGEVIEWS_LINES = [
    "1190146243\thttp://en.wikipedia.org/wiki/Main_Page",
    "1190146244\thttp://en.wikipedia.org/wiki/Turkey",
    "1190146245\thttp://fr.wikipedia.org/wiki/Paris",  # other wiki: prefix kept
    "1190146246\thttp://enXwikipediaYorg/wiki/Foo",  # the reference's regex dots match any char
    "garbage",  # line 5: malformed
    "929840891 1190146247.326 http://en.wikipedia.org/wiki/Special:Search -",  # WikiBench line
    "1190146248\tx\ty",  # line 7: malformed (3 fields)
]

BY_LANG_NAME = "pageviews-20240101-130000.gz"
BY_LANG_LINES = [
    "en Main_Page 42 0",
    "en.m Turkey 7 0",
    "de Berlin 3 1234",
    "fr Paris 5",  # line 4: malformed (3 fields)
    "en X notanint 0",  # line 5: malformed
    ".. Dots 1 0",  # a valid line whose splitter rule fails (lang made only of dots)
    "en  Double 1 0",  # line 7: malformed (split on ONE space gives 5 fields)
    "ja.wikibooks Foo 2147483647 0",
    "en Big 2147483648 0",  # line 9: malformed (int32 overflow)
]

CLICKSTREAM_NAME = "clickstream-enwiki-2017-01.tsv.bz2"
CLICKSTREAM_LINES = [
    "prev\tcurr\ttype\tn",  # header: skipped by design
    "other-search\tTurkey\texternal\t100",
    "Main_Page\tTurkey\tlink\t5",
    "other-empty\tIstanbul\texternal\t20",
    "bad\tline",  # line 5: malformed
    "a\tb\tlink\tnotint",  # line 6: malformed
    "a\tb\tlink\t99999999999",  # line 7: malformed (int32)
    "Ankara\tİstanbul\tlink\t3",
]

ELECTION_NAME = "election.jsonl.gz"
ELECTION_TWEETS = [
    {"created_at": "Tue Nov 08 12:00:00 +0000 2016", "timestamp_ms": "1478606400000", "text": "Go #Vote #ImWithHer",
     "entities": {"hashtags": [{"text": "Vote"}, {"text": "ImWithHer"}]}},
    {"limit": {"track": 10, "timestamp_ms": "1478606400100"}},  # skipped by design
    {"created_at": "Tue Nov 08 12:00:00 +0000 2016", "timestamp_ms": "1478606400200", "text": "#MAGA #Turkey #what?",
     "entities": {"hashtags": [{"text": "MAGA"}, {"text": "Turkey"}, {"text": "what?"}, {"text": "Business"}]}},
    "not json",  # line 4: malformed
    {"delete": {"status": {"id": 1}}},  # skipped by design
    {"created_at": "Tue Nov 08 12:00:01 +0000 2016", "text": "no tags", "entities": {"hashtags": []}},
    {"text": "x", "entities": {}},  # line 7: malformed
    {"timestamp": 1478606402000, "text": "#İstanbul", "entities": {"hashtags": [{"text": "İstanbul"}]}},
]


def _write(path: Path, lines: list[str]) -> Path:
    data = ("\n".join(lines) + "\n").encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data)
    elif path.suffix == ".bz2":
        data = bz2.compress(data)
    path.write_bytes(data)
    return path


def write_fixture_files(folder: Path) -> dict[str, Path]:
    """One file per user-supplied dataset: plain, .gz and .bz2 among them."""
    folder.mkdir(parents=True, exist_ok=True)
    election = [t if isinstance(t, str) else json.dumps(t, ensure_ascii=False) for t in ELECTION_TWEETS]
    return {
        "TWITTER_TICKER": _write(folder / "ticker.tsv", TICKER_LINES),
        "WIKIPEDIA_PAGEVIEWS": _write(folder / "pageviews.tsv", PAGEVIEWS_LINES),
        "WIKIPEDIA_PAGEVIEWS_BY_LANG": _write(folder / BY_LANG_NAME, BY_LANG_LINES),
        "WIKIPEDIA_CLICKSTREAM": _write(folder / CLICKSTREAM_NAME, CLICKSTREAM_LINES),
        "TWITTER_ELECTION": _write(folder / ELECTION_NAME, election),
    }
