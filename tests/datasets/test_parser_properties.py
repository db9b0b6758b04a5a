"""Property tests (Hypothesis) of the user-file readers: TWITTER_TICKER, WIKIPEDIA_PAGEVIEWS (the
reference's lines and WikiBench's), WIKIPEDIA_PAGEVIEWS_BY_LANG, WIKIPEDIA_CLICKSTREAM and
TWITTER_ELECTION, on generated files (plain, .gz, .bz2) of generated lines and bytes of every kind.

Each test reads a file through the dataset (`records()`) and through an independent reading of its
format written here from the reference's rules (docs/reference/dkg-reference.md §11): Java's
`BufferedReader.readLine` (lines end at LF, CR or CR LF), `String.trim`, `String.split` and
`Long.parseLong` / `Integer.parseInt` (which take any Unicode decimal digit of the BMP). Every line
is either the record the independent reading gives, or counted as malformed with its file and line
number, or skipped by design (a header, a stream notice); nothing raises and no line is lost.
`make test` runs Hypothesis's default number of examples per test, `make fuzz` ten thousand.
"""

from __future__ import annotations

import bz2
import gzip
import json
import re
import tempfile
import unicodedata
import zlib
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st

from datasets import MalformedRecord, get_dataset
from datasets.files import BZIP2_MAGIC, GZIP_MAGIC, DatasetFileCorrupt
from datasets.twitter import ELECTION_SUBSTRINGS

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# --- the independent reading ------------------------------------------------------------------

TERMINATOR = re.compile(r"\r\n|\r|\n")


def java_lines(data: bytes) -> list[str]:
    """`BufferedReader.readLine` over the file decoded as UTF-8 (U+FFFD for invalid bytes)."""
    text = data.decode("utf-8", "replace")
    lines = TERMINATOR.split(text)
    if lines and lines[-1] == "":  # a file that ends with a terminator has no empty last line
        lines.pop()
    return lines


def java_trim(s: str) -> str:
    return re.fullmatch(r"[\x00-\x20]*(.*?)[\x00-\x20]*", s, re.DOTALL).group(1)


def java_split(s: str, sep: str) -> list[str]:
    """`String.split` on a one-character literal: "" gives [""], trailing empty strings go."""
    if s == "":
        return [""]
    fields = s.split(sep)
    while len(fields) > 1 and fields[-1] == "":
        fields.pop()
    return fields if fields != [""] else []


def java_number(s: str, bits: int) -> int | None:
    """`Long.parseLong` (64) / `Integer.parseInt` (32): a sign, then decimal digits, each one UTF-16
    char for which `Character.digit(c, 10)` is a digit (Unicode category Nd); None where Java throws."""
    sign, digits = (s[0], s[1:]) if s[:1] in ("+", "-") else ("+", s)
    if not digits or any(ord(c) > 0xFFFF or unicodedata.category(c) != "Nd" for c in digits):
        return None
    value = int("".join(str(unicodedata.decimal(c)) for c in digits)) * (-1 if sign == "-" else 1)
    return value if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None


def compact(obj: dict) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()


def ticker(line: str, file: Path):
    fields = java_split(java_trim(line), "\t")
    ts = java_number(fields[0], 64) if len(fields) == 2 else None
    if ts is None:
        return "malformed"
    return compact({"ticker": fields[1], "timestamp": ts}), ts * 1000


def pageviews(line: str, file: Path):
    line = java_trim(line)
    if "\t" in line:
        fields = java_split(line, "\t")
        ts = java_number(fields[0], 64) if len(fields) == 2 else None
        return "malformed" if ts is None else (compact({"page": fields[1], "timestamp": ts}), ts * 1000)
    fields = line.split(" ")  # WikiBench: counter, epoch seconds with up to 3 decimals, url, flag
    m = re.fullmatch(r"([0-9]+)(?:\.([0-9]{1,3}))?", fields[1]) if len(fields) == 4 else None
    if m is None:
        return "malformed"
    ts = int(m.group(1))
    return compact({"page": fields[2], "timestamp": ts}), ts * 1000 + int((m.group(2) or "").ljust(3, "0"))


def by_lang(line: str, file: Path):
    fields = java_split(java_trim(line), " ")
    n, m = (java_number(fields[2], 32), java_number(fields[3], 32)) if len(fields) == 4 else (None, None)
    if n is None or m is None:
        return "malformed"
    hour = re.search(r"pageviews-20240101-130000", file.name)
    return compact({"lang": fields[0], "page": fields[1], "n": n, "m": m}), 1704114000000 if hour else None


def clickstream(line: str, file: Path):
    line = java_trim(line)
    if line == "prev\tcurr\ttype\tn":
        return "skip"
    fields = java_split(line, "\t")
    n = java_number(fields[3], 32) if len(fields) == 4 else None
    if n is None:
        return "malformed"
    return compact({"prev": fields[0], "curr": fields[1], "type": fields[2], "n": n}), None


READINGS = {
    "TWITTER_TICKER": ticker,
    "WIKIPEDIA_PAGEVIEWS": pageviews,
    "WIKIPEDIA_PAGEVIEWS_BY_LANG": by_lang,
    "WIKIPEDIA_CLICKSTREAM": clickstream,
}

# --- generated files --------------------------------------------------------------------------

DIGITS = "0123456789" + "\u0660\u0665\u0669" + "\u06f3" + "\u0967" + "\uff10\uff15\uff19" + "\U0001d7ce"
"""ASCII digits, and others Java's number parsers take (Arabic-Indic, extended Arabic-Indic,
Devanagari, fullwidth) or refuse (a mathematical digit outside the BMP)."""
TRIMMED = "".join(chr(c) for c in range(0x21) if chr(c) not in "\r\n")
"""What `String.trim` removes, but the line terminators."""

numbers = st.one_of(
    st.integers(-(2**64), 2**64).map(str),
    st.sampled_from(["2147483647", "2147483648", "-2147483648", "-2147483649", "9223372036854775807",
                     "9223372036854775808", "-9223372036854775808", "+7", "+", "-", "", "007", "1.5", "1e3"]),
    st.text(DIGITS, min_size=1, max_size=12),
    st.builds(lambda sign, d: sign + d, st.sampled_from(["+", "-"]), st.text(DIGITS, min_size=1, max_size=5)),
    st.builds(lambda s, ms: f"{s}.{ms}", st.integers(0, 2**40), st.text("0123456789", max_size=4)),
)
words = st.one_of(
    st.text(st.characters(exclude_characters="\r\n"), max_size=12),
    st.sampled_from(["en", "en.m", "..", ".", "http://en.wikipedia.org/wiki/Turkey", "AAPL", "$GOOG", "-", "link"]),
)
field = st.one_of(numbers, words)
separators = st.sampled_from(["\t", " ", "  ", "\t\t", "\t ", ","])


@st.composite
def lines(draw) -> bytes:
    """One line without its terminator: fields joined by separators, padded with what `trim`
    removes, or arbitrary text, or arbitrary bytes."""
    kind = draw(st.sampled_from(["fields", "fields", "fields", "text", "bytes"]))
    if kind == "text":
        return draw(st.text(st.characters(exclude_characters="\r\n"), max_size=40)).encode("utf-8", "surrogatepass")
    if kind == "bytes":
        return draw(st.binary(max_size=40)).replace(b"\r", b"").replace(b"\n", b"")
    parts = draw(st.lists(field, min_size=1, max_size=6))
    text = parts[0]
    for part in parts[1:]:
        text += draw(separators) + part
    pad = st.text(TRIMMED, max_size=3)
    return (draw(pad) + text + draw(pad)).encode("utf-8", "surrogatepass")


@st.composite
def files(draw, header: bytes | None = None) -> bytes:
    """A file's bytes: generated lines, each ended by LF, CR LF or CR (the last one maybe by none)."""
    body = draw(st.lists(st.one_of(lines(), st.just(header)) if header else lines(), max_size=25))
    ends = [draw(st.sampled_from([b"\n", b"\r\n", b"\r"])) for _ in body]
    if ends and draw(st.booleans()):
        ends[-1] = b""
    data = b"".join(line + end for line, end in zip(body, ends, strict=True))
    # A plain file that starts with a compressed file's header is a corrupt compressed file
    # (test_a_corrupt_compressed_file_is_an_error_naming_it).
    assume(not data.startswith(GZIP_MAGIC) and not BZIP2_MAGIC.match(data))
    return data


def write(folder: Path, name: str, data: bytes, compression: str) -> Path:
    path = folder / (name + {"plain": "", "gz": ".gz", "bz2": ".bz2"}[compression])
    path.write_bytes({"plain": lambda d: d, "gz": gzip.compress, "bz2": bz2.compress}[compression](data))
    return path


def read(name: str, path: Path):
    """The dataset's records of `path`, and the dataset (its `malformed` and `skipped`)."""
    ds = get_dataset(name, path=str(path))
    return [(r.value, r.event_ms) for r in ds.records()], ds


def check_counts(ds, path: Path, want: list) -> None:
    """Every line accounted for: the malformed ones counted, the first ten with their file and line."""
    malformed = [n for n, w in enumerate(want, 1) if w == "malformed"]
    assert ds.malformed.count == len(malformed)
    assert [(e["file"], e["line"]) for e in ds.malformed.examples] == [(str(path), n) for n in malformed[:10]]
    assert sum(ds.skipped.values()) == sum(1 for w in want if w == "skip")


@pytest.mark.parametrize("name", sorted(READINGS))
@SETTINGS
@given(data=st.data())
def test_every_line_is_its_record_or_counted(name, data):
    header = b"prev\tcurr\ttype\tn" if name == "WIKIPEDIA_CLICKSTREAM" else None
    raw = data.draw(files(header))
    compression = data.draw(st.sampled_from(["plain", "gz", "bz2"]))
    file_name = data.draw(st.sampled_from(["input", "pageviews-20240101-130000"]))
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), file_name, raw, compression)
        got, ds = read(name, path)
        want = [READINGS[name](line, path) for line in java_lines(raw)]
        assert got == [w for w in want if isinstance(w, tuple)]
        check_counts(ds, path, want)
    for value, _ in got:  # the splitter takes every record, or counts it as malformed
        try:
            ds.extract(value.decode("utf-8"))
        except MalformedRecord:
            event("a record the splitter rule rejects")
    event(f"{len(want)} lines, {len(got)} records")


@example(b"1478563200\tAAPL\r1478563201\tGOOG\r")  # CR alone ends a line, as in readLine
@example("\u0661\u0664\u0667\u0668\tAAPL".encode())  # Arabic-Indic digits: Long.parseLong takes them
@example(b"\x1f\x8b not gzip\t1\n")  # gzip's first two bytes in a plain file
@example(b"BZh9\t1\n")  # bzip2's first four
@SETTINGS
@given(raw=files())
def test_ticker_examples(raw):
    """The regressions the property above found, kept (and more generated lines of the same test)."""
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), "input", raw, "plain")
        got, ds = read("TWITTER_TICKER", path)
        want = [ticker(line, path) for line in java_lines(raw)]
        assert got == [w for w in want if isinstance(w, tuple)]
        check_counts(ds, path, want)


def independent_reading(compression: str, data: bytes) -> bytes | None:
    """What Python's own decompressor makes of `data`: its bytes, or None when it refuses them."""
    try:
        return {"gz": gzip.decompress, "bz2": bz2.decompress}[compression](data)
    except (OSError, EOFError, ValueError, zlib.error):
        return None


@pytest.mark.parametrize("compression", ["gz", "bz2"])
# The last byte of a bzip2 stream ends in padding bits after its end-of-stream marker: this cut and
# junk change only those, so the file is whole (found by make fuzz, 2026-11-29).
@example(raw=b" \t$GOOG \x1e\x0b\nF\r", cut=128, junk=b"\x81")
@SETTINGS
@given(raw=files(), cut=st.integers(0, 400), junk=st.binary(max_size=3))
def test_a_corrupt_compressed_file_is_an_error_naming_it(compression, raw, cut, junk):
    """A compressed file cut short (after its header), with or without bytes after the cut, is never
    read as text nor ends early in silence: where Python's own decompressor refuses it, the reader
    raises DatasetFileCorrupt with its path; where that decompressor still reads it (the junk put
    back the bytes the cut took, or changed only bzip2's padding bits), the reader gives the records
    of what it reads."""
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), "input", raw, compression)
        data = path.read_bytes()
        damaged = data[: 10 + cut % (len(data) - 10)] + junk
        path.write_bytes(damaged)
        accepted = independent_reading(compression, damaged)
        if accepted is None:
            with pytest.raises(DatasetFileCorrupt, match=re.escape(str(path))):
                read("TWITTER_TICKER", path)
        else:
            event("the damage left a file the decompressor reads")
            plain = write(Path(folder), "plain", accepted, "plain")
            assert read("TWITTER_TICKER", path)[0] == read("TWITTER_TICKER", plain)[0]


# --- TWITTER_ELECTION: raw tweets, one JSON object per line -----------------------------------

JSON_WHITESPACE = " \t\n\r"
NOTICES = ["delete", "scrub_geo", "status_withheld", "user_withheld", "disconnect", "warning"]
CREATED_AT = "%a %b %d %H:%M:%S %z %Y"
INT64 = (-(2**63), 2**63 - 1)


def long_or_none(value) -> int | None:
    """A tweet's `timestamp` / `timestamp_ms`: a JSON integer in int64, or a string Long.parseLong takes."""
    if isinstance(value, str):
        return java_number(value, 64)
    if isinstance(value, int) and not isinstance(value, bool) and INT64[0] <= value <= INT64[1]:
        return value
    return None


def election_rule(tag: str) -> str:
    return "ElectionDay" if any(s in tag.lower() for s in ELECTION_SUBSTRINGS) else tag


def tweet_reading(tweet: dict):
    """The record of a tweet object (the spec's rules: `limit` and bare stream notices skipped;
    `entities.hashtags[].text`; the timestamp from `timestamp`, else `timestamp_ms`, else `created_at`)."""
    if "limit" in tweet or (any(k in tweet for k in NOTICES) and "text" not in tweet and "full_text" not in tweet):
        return "skip"
    entities = tweet.get("entities")
    tags = entities.get("hashtags") if isinstance(entities, dict) else None
    if not isinstance(tags, list) or not all(isinstance(t, dict) and isinstance(t.get("text"), str) for t in tags):
        return "malformed"
    ts = long_or_none(tweet.get("timestamp"))
    ts = long_or_none(tweet.get("timestamp_ms")) if ts is None else ts
    if ts is None and isinstance(tweet.get("created_at"), str):
        try:
            ts = int(datetime.strptime(tweet["created_at"], CREATED_AT).timestamp() * 1000)
        except ValueError:
            pass
    if ts is None:
        return "malformed"
    text = tweet["text"] if "text" in tweet else tweet.get("full_text", "")
    record = {"text": text if isinstance(text, str) else "", "hashtags": [election_rule(t["text"]) for t in tags],
              "timestamp": ts}
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace"), ts


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                         st.text(max_size=8))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=6)
tags = st.text(st.sampled_from("abcusvoteTRUMPİ?#é"), max_size=10)
timestamps = st.one_of(json_values, st.integers(*INT64), st.integers(*INT64).map(str),
                       st.text(DIGITS, min_size=1, max_size=19))
created_at = st.one_of(
    st.datetimes(timezones=st.timezones()).map(lambda d: d.replace(microsecond=0).strftime(CREATED_AT)),
    st.text(max_size=12))


@st.composite
def tweets(draw) -> dict:
    """A tweet object, or something shaped like one: every field of the rules present or not, of its
    type or another."""
    optional = {
        "text": st.one_of(st.text(max_size=20), json_values),
        "full_text": st.text(max_size=20),
        "entities": st.one_of(
            st.fixed_dictionaries({"hashtags": st.lists(st.fixed_dictionaries({"text": tags}), max_size=4)}),
            st.fixed_dictionaries({"hashtags": st.lists(st.one_of(st.fixed_dictionaries({"text": json_values}),
                                                                  json_values), max_size=3)}),
            json_values),
        "timestamp": timestamps,
        "timestamp_ms": timestamps,
        "created_at": created_at,
        "limit": json_values,
        **{notice: json_values for notice in NOTICES},
    }
    chosen = draw(st.lists(st.sampled_from(sorted(optional)), unique=True, max_size=6))
    weights = ["entities", "timestamp", "text"] if draw(st.booleans()) else []
    return {name: draw(optional[name]) for name in dict.fromkeys(weights + chosen)}


@st.composite
def election_lines(draw) -> tuple[str, object]:
    """(line, what the spec makes of it): a tweet as JSON, a blank or nearly blank line, arrays
    nested deeper than a parser's stack, or text that is not a JSON object."""
    kind = draw(st.sampled_from(["tweet", "tweet", "tweet", "blank", "nested", "text"]))
    if kind == "tweet":
        tweet = draw(tweets())
        return json.dumps(tweet, ensure_ascii=draw(st.booleans())), tweet_reading(tweet)
    if kind == "blank":
        line = draw(st.text(st.sampled_from(" \t\xa0\x1c\u2028\u3000"), max_size=4))
        return line, "skip" if line.strip(JSON_WHITESPACE) == "" else "malformed"
    if kind == "nested":
        depth = draw(st.sampled_from([10, 3_000, 100_000]))
        return "[" * depth + "]" * depth, "malformed"
    line = draw(st.text(st.characters(exclude_characters="\r\n\u2028\u2029\x85"), max_size=30)
                .filter(lambda s: not s.lstrip(JSON_WHITESPACE).startswith("{")))
    return line, "skip" if line.strip(JSON_WHITESPACE) == "" else "malformed"


@example(lines=[("[" * 100_000 + "]" * 100_000, "malformed"), ("\xa0", "malformed")])
@example(lines=[('{"entities":{"hashtags":[]},"timestamp":9223372036854775808}', "malformed")])  # past int64
@SETTINGS
@given(lines=st.lists(election_lines(), max_size=12))
def test_every_tweet_line_is_its_record_or_counted(lines):
    raw = "".join(line + "\n" for line, _ in lines).encode("utf-8", "surrogatepass")
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), "tweets", raw, "plain")
        got, ds = read("TWITTER_ELECTION", path)
        want = [w for _, w in lines]
        assert got == [w for w in want if isinstance(w, tuple)]
        check_counts(ds, path, want)
    event(f"{sum(isinstance(w, tuple) for w in want)} records of {len(want)} lines")
