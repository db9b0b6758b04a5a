"""User-supplied files in the public formats: plain/.gz/.bz2, malformed lines skipped, counted and
reported with their line numbers."""

from __future__ import annotations

import json

import pytest

from datasets import MalformedRecord, get_dataset
from tests.datasets import fixtures as F


def _run(name, path, **params):
    ds = get_dataset(name, path=path, **params)
    recs = list(ds.records())
    tuples = []
    for r in recs:
        try:
            tuples.extend(ds.extract(r.value.decode()))
        except MalformedRecord as e:
            tuples.append(("MALFORMED", e.reason))
    return ds, recs, tuples


def _lines(ds):
    return [(e["line"], e["reason"]) for e in ds.malformed.to_dict()["first"]]


def test_ticker(user_files):
    ds, recs, tuples = _run("TWITTER_TICKER", user_files["TWITTER_TICKER"])
    assert tuples == [("AAPL", 1), ("GOOG", 1), ("AAPL", 1), ("MSFT", 1)]
    assert recs[0].value == b'{"ticker":"AAPL","timestamp":1478563200}'
    assert recs[0].event_ms == 1_478_563_200_000
    assert ds.malformed.count == 2
    assert _lines(ds) == [(4, "expected 2 tab-separated fields"), (5, "timestamp is not an integer")]


def test_pageviews(user_files):
    ds, recs, tuples = _run("WIKIPEDIA_PAGEVIEWS", user_files["WIKIPEDIA_PAGEVIEWS"])
    assert tuples == [
        ("Main_Page", 1), ("Turkey", 1), ("http://fr.wikipedia.org/wiki/Paris", 1), ("Foo", 1), ("Special:Search", 1),
    ]  # fmt: skip
    assert recs[0].value == b'{"page":"http://en.wikipedia.org/wiki/Main_Page","timestamp":1190146243}'
    assert recs[4].event_ms == 1_190_146_247_326  # WikiBench's fractional seconds
    assert [n for n, _ in _lines(ds)] == [5, 7]


def test_prefix_strip_is_a_regex_replace_first():
    from datasets.wikipedia import strip_page_prefix

    assert strip_page_prefix("x http://en.wikipedia.org/wiki/A http://en.wikipedia.org/wiki/B") == "x A http://en.wikipedia.org/wiki/B"
    assert strip_page_prefix("http://en\nwikipedia.org/wiki/A") == "http://en\nwikipedia.org/wiki/A"  # Java's '.' skips \n
    assert strip_page_prefix("http://en\u2028wikipedia.org/wiki/A") == "http://en\u2028wikipedia.org/wiki/A"


def test_pageviews_by_lang(user_files):
    ds, recs, tuples = _run("WIKIPEDIA_PAGEVIEWS_BY_LANG", user_files["WIKIPEDIA_PAGEVIEWS_BY_LANG"])
    assert tuples == [
        ("en", 42), ("en", 7), ("de", 3), ("MALFORMED", "lang made only of dots"), ("ja", 2147483647),
    ]  # fmt: skip
    assert json.loads(recs[1].value) == {"lang": "en.m", "page": "Turkey", "n": 7, "m": 0}
    # the hour comes from the dump's file name
    assert recs[0].event_ms == 1_704_114_000_000  # 2024-01-01T13:00:00Z
    assert [n for n, _ in _lines(ds)] == [4, 5, 7, 9]
    assert ds.weighted


def test_clickstream(user_files):
    ds, recs, tuples = _run("WIKIPEDIA_CLICKSTREAM", user_files["WIKIPEDIA_CLICKSTREAM"])
    assert tuples == [("Turkey", 100), ("Turkey", 5), ("Istanbul", 20), ("İstanbul", 3)]
    assert json.loads(recs[0].value) == {"prev": "other-search", "curr": "Turkey", "type": "external", "n": 100}
    assert recs[0].event_ms is None
    assert ds.skipped == {"header": 1}
    assert _lines(ds) == [(5, "expected 4 tab-separated fields"), (6, "n is not an int32"), (7, "n is not an int32")]


def test_election(user_files):
    ds, recs, tuples = _run("TWITTER_ELECTION", user_files["TWITTER_ELECTION"])
    # ElectionDay rule (Q24): vote, withher ... and 'us' (Business); hashtags with '?' dropped
    assert tuples == [
        ("ElectionDay", 1), ("ElectionDay", 1),
        ("MAGA", 1), ("Turkey", 1), ("ElectionDay", 1),
        ("İstanbul", 1),
    ]  # fmt: skip
    msg = json.loads(recs[1].value)
    assert msg == {"text": "#MAGA #Turkey #what?", "hashtags": ["MAGA", "Turkey", "what?", "ElectionDay"], "timestamp": 1478606400200}
    assert [r.event_ms for r in recs] == [1478606400000, 1478606400200, 1478606401000, 1478606402000]
    assert ds.skipped == {"limit notice": 1, "stream notice": 1}
    assert _lines(ds) == [(4, "invalid json"), (7, "missing entities.hashtags")]


def test_election_day_rule():
    from datasets.twitter import ELECTION_DAY, election_day_rule

    for tag in ("Vote", "HillaryClinton", "USA", "Business", "focus", "ABDSeçimleri", "ElectionDay", "debates"):
        assert election_day_rule(tag) == ELECTION_DAY, tag
    for tag in ("MAGA", "Turkey", "Brexit", "what?"):
        assert election_day_rule(tag) == tag


def test_limit_directory_and_glob(user_files, tmp_path):
    folder = user_files["TWITTER_TICKER"].parent
    ds = get_dataset("TWITTER_TICKER", path=user_files["TWITTER_TICKER"])
    assert len(list(ds.records(2))) == 2
    by_glob = get_dataset("TWITTER_TICKER", path=str(folder / "tick*.tsv"))
    assert len(list(by_glob.records())) == 4
    sub = tmp_path / "dumps"
    sub.mkdir()
    for i in range(2):
        (sub / f"part{i}.tsv").write_text("1\tA\n2\tB\n")
    both = get_dataset("TWITTER_TICKER", path=sub)
    assert [json.loads(r.value)["ticker"] for r in both.records()] == ["A", "B", "A", "B"]
    fp = both.fingerprint()
    assert len(fp["files"]) == 2 and all(len(f["sha256"]) == 64 for f in fp["files"])


def test_invalid_utf8_is_replaced_not_fatal(tmp_path):
    f = tmp_path / "t.tsv"
    f.write_bytes(b"1\tAB\xffC\n")
    ds = get_dataset("TWITTER_TICKER", path=f)
    (rec,) = ds.records()
    assert ds.extract(rec.value.decode()) == [("AB\ufffdC", 1)]


@pytest.mark.parametrize("name", ["TWITTER_TICKER", "WIKIPEDIA_CLICKSTREAM"])
def test_malformed_file_never_crashes(name, tmp_path):
    f = tmp_path / "junk.bin"
    f.write_bytes(bytes(range(256)) * 20 + b"\n\n\t\t\t\n")
    ds = get_dataset(name, path=f)
    list(ds.records())  # no exception
    assert ds.malformed.count >= 1
