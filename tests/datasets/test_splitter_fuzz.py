"""The streaming splitter and the simulator decode every Kafka record value alike, malformed ones
included: the same tuples, or the same dead letter with the same reason.

A streaming run decodes a record in Spark SQL (`spout._columns`, then `splitter.parse` for its
tuples and `splitter.dead_letters` for its reason); `bench simulate` decodes the same record of a
recorded topic in Python (`sources._Builder.add_record`, the dataset's `extract`). Simulated and
streaming runs of one topic are only comparable if both sides count the same dead letters and
produce the same tuples. tests/datasets/test_splitter_sql.py checks the datasets' two rules on
fixed records; here Hypothesis generates the record values, for each dataset:

- records made of the dataset's own JSON fields, holding values of every JSON type (strings with
  unicode, quotes, backslashes, control characters and `\\uXXXX` escapes, lone surrogates among
  them; integers about the int32 and int64 limits; floats; booleans; null; arrays; objects; numbers
  and nestings about the parsers' limits), written compact or not (spaces, line breaks, leading
  whitespace, a BOM, trailing bytes, duplicate keys, escaped field names);
- the compact form `{"<field>":"<s>"}` that the key-only rules read without parsing
  (`jsonrule.sql_canonical_string`), `s` as drawn (quotes and backslashes unescaped) or encoded;
- keys about the `MAX_KEY_BYTES` limit (1,024 UTF-8 bytes) in characters of one to four bytes;
- bytes that are not UTF-8 (spliced into a record, or drawn alone), null values, and text that is
  not JSON.

One Hypothesis example is a list of values decoded by one Spark job. The number of examples and
the list sizes follow the Hypothesis profile (`settings.default.max_examples`, tests/conftest.py):
each dataset gets at least that many generated records, in a few Spark jobs under the default
profile (100) and in jobs of `RECORDS_PER_JOB` under `--hypothesis-profile=fuzz` (10,000).
"""

from __future__ import annotations

import json
import operator
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bench.simulate.sources import _Builder
from datasets.base import MAX_KEY_BYTES
from datasets import Dataset, get_dataset
from datasets.flights import NYC_FIELDS
from datasets.twitter import ELECTION_SUBSTRINGS
from datasets.wikipedia import PAGE_PREFIX_REGEX

RECORDS_PER_JOB = 100
"""The most records one example (one Spark job) holds. A job costs about 0.6 s whatever its size,
and Hypothesis caps the choices one example may make (`BUFFER_SIZE`, 8 KiB): 100 generated records
(35-57 bytes of choices each, on average) fit with room to spare. Under the fuzz profile the file
then runs 100 jobs a dataset, about 9 minutes in all on 2 cores."""

MIN_EXAMPLES = 2
"""Examples per dataset under the default profile (Hypothesis's first is its simplest), besides
the explicit one (`regressions`): three Spark jobs a dataset, about 3 s."""

PYTHON_RECURSION_LIMIT = 1000
"""CPython's default recursion limit, which `bench simulate` runs under: Python's `json` parses
nested values recursively, so how deep a record may nest depends on it. Hypothesis raises the limit
to the caller's depth + 2,000 while a test runs (`ensure_free_stackframes`); the simulator's side of
each comparison runs under this one again, so that the test sees what the simulator does."""

KAFKA_SCHEMA = "topic string, partition int, offset long, timestamp timestamp, value binary"
"""The Kafka source's columns that `spout._columns` reads."""
KAFKA_TS = datetime(2024, 11, 5, 12, 0)

# Kinds of field, by what the dataset's splitter rule reads in them.
KEY = "key"  # the key, a string
TAGS = "tags"  # the keys, an array of strings
COUNT = "count"  # the tuple's count, an integer
TEXT = "text"  # a string the rule does not read
INT = "int"  # an integer the rule does not read
NUM = "num"  # a number the rule does not read

NYC_KINDS = {"time_hour": TEXT, "carrier": TEXT, "flight": INT, "tailnum": TEXT, "origin": TEXT, "dest": TEXT,
             "dep_delay": NUM, "arr_delay": NUM, "distance": INT}
assert tuple(NYC_KINDS) == NYC_FIELDS

ELECTION_WORDS = ("?", "#", "Trump", "vote", "VOTE", "us", "USA", "MAGA", "ElectionDay", "Hillary", "İSTANBUL",
                  "ABDSEÇİMLERİ", "ma\u212aeamerica", *ELECTION_SUBSTRINGS[::4])
LINE_BREAKS = ("\n", "\r", "\r\n", "\u0085", "\u2028", "\u2029")


@dataclass(frozen=True)
class Case:
    """A dataset as the fuzzer sees it: its record's JSON fields, by kind, and words its rule treats
    specially."""

    id: str
    name: str
    params: dict = field(default_factory=dict)
    fields: dict = field(default_factory=dict)
    words: tuple[str, ...] = ()

    def dataset(self) -> Dataset:
        return get_dataset(self.name, **self.params)

    @property
    def key_field(self) -> str:
        return next(name for name, kind in self.fields.items() if kind in (KEY, TAGS))

    @property
    def count_field(self) -> str | None:
        return next((name for name, kind in self.fields.items() if kind == COUNT), None)


CASES = [
    Case("COUNTRY_SKEW_R80", "COUNTRY_SKEW_R80", {"length": 10}, {"country": KEY}, ("Turkey", "Türkiye")),
    Case("NYC_FLIGHTS", "NYC_FLIGHTS", {}, {**NYC_KINDS, "dest": KEY}, ("JFK", "IAH")),
    Case("NYC_FLIGHTS-tailnum", "NYC_FLIGHTS", {"key": "tailnum"}, {**NYC_KINDS, "tailnum": KEY}, ("N14228",)),
    Case("TWITTER_ELECTION", "TWITTER_ELECTION", {"path": "unused"},
         {"text": TEXT, "hashtags": TAGS, "timestamp": INT}, ELECTION_WORDS),
    Case("WIKIPEDIA_PAGEVIEWS", "WIKIPEDIA_PAGEVIEWS", {"path": "unused"}, {"page": KEY, "timestamp": INT},
         (PAGE_PREFIX_REGEX, "http://en\nwikipedia.org/wiki/", "http://enXwikipedia\u2028org/wiki/",
          "http://fr.wikipedia.org/wiki/", "http://en.wikipedia.org/wiki", "$1", "Main_Page")),
    Case("WIKIPEDIA_PAGEVIEWS_BY_LANG", "WIKIPEDIA_PAGEVIEWS_BY_LANG", {"path": "unused"},
         {"lang": KEY, "page": TEXT, "n": COUNT, "m": INT}, (".", "..", "en", "en.m", ".m", *LINE_BREAKS)),
    Case("WIKIPEDIA_CLICKSTREAM", "WIKIPEDIA_CLICKSTREAM", {"path": "unused"},
         {"prev": TEXT, "curr": KEY, "type": TEXT, "n": COUNT}, ("link", "external", "other-search", "İstanbul")),
    Case("TRUMP_TWEETS", "TRUMP_TWEETS", {}, {"text": TEXT, "hashtags": TAGS, "timestamp": INT}, ELECTION_WORDS),
]


# -- the two sides ---------------------------------------------------------------------------------

Outcome = tuple[list[tuple[str, int]] | None, str | None]
"""A record's tuples as (key, count) pairs and None, or None and its dead letter's reason (or
`RAISED` and the exception the simulator stopped on)."""
RAISED = "raised "


def simulator_outcome(dataset: Dataset, value: bytes | None) -> Outcome:
    """What `bench simulate` makes of a record of a recorded topic (`sources.from_topic`)."""
    builder = _Builder(MAX_KEY_BYTES)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(PYTHON_RECURSION_LIMIT)
    try:
        builder.add_record(dataset, value, 0, 0, {"partition": 0, "offset": 0})
    except Exception as exc:  # noqa: BLE001 - the simulator stops on it; a streaming run goes on
        return None, f"{RAISED}{type(exc).__name__}"
    finally:
        sys.setrecursionlimit(limit)
    if builder.dead.count:
        return None, builder.dead.first[0]["reason"]
    keys = list(builder.codes)
    return [(keys[code], count) for code, count in zip(builder.key_code, builder.count, strict=True)], None


def streaming_outcomes(spark, dataset: Dataset, values: list[bytes | None]) -> list[Outcome]:
    """What a streaming run makes of `values`, records of one partition at offsets 0, 1, ..."""
    # deferred: they import pyspark (seconds), which the fast tier never needs
    from bench.topology.splitter import dead_letters, parse
    from bench.topology.spout import _columns

    df = _columns(spark.createDataFrame([("fuzz", 0, offset, KAFKA_TS, value) for offset, value in enumerate(values)],
                                        KAFKA_SCHEMA))
    sql = dataset.splitter_sql
    tuples = {r["offset"]: r["tuples"] for r in parse(df, sql, MAX_KEY_BYTES).select("offset", "tuples").collect()}
    dead = dead_letters(df, sql, MAX_KEY_BYTES).select("offset", "reason").collect()
    reasons = {r["offset"]: r["reason"] for r in dead}
    assert sorted(tuples) == list(range(len(values)))
    return [(None if tuples[i] is None else [(t["key"], t["count"]) for t in tuples[i]], reasons.get(i))
            for i in range(len(values))]


RUN = re.compile(rb"(.)\1{15,}", re.DOTALL)


def shown(value: bytes | None, limit: int = 300) -> str:
    """A record value as a Python expression, runs of one byte written `b'[' * 943`."""
    if value is None:
        return "None"
    parts, at = [], 0
    for run in RUN.finditer(value):
        parts += [repr(value[at:run.start()])] if run.start() > at else []
        parts.append(f"{value[run.start():run.start() + 1]!r} * {run.end() - run.start()}")
        at = run.end()
    text = " + ".join(parts + ([repr(value[at:])] if at < len(value) or not parts else []))
    return text if len(text) <= limit else f"{text[:limit - 80]} ... {text[-60:]} ({len(value):,} bytes)"


def kind(outcome: Outcome) -> str:
    return "tuples" if outcome[0] is not None else outcome[1] or "neither tuples nor a reason"


def shown_outcome(outcome: Outcome) -> str:
    """An outcome, long keys by their head and size."""
    tuples, reason = outcome
    if tuples is None:
        return f"{reason} (the simulator stops)" if reason and reason.startswith(RAISED) else f"dead letter: {reason}"
    return "tuples: " + repr([(k if len(k) <= 40 else f"{k[:12]}... ({len(k)} characters, {len(k.encode())} bytes)",
                               n) for k, n in tuples])


def disagreements(case: Case, values: list, disagree: list[tuple[bytes | None, Outcome, Outcome]]) -> str:
    """The records decoded differently, by kind of difference: how many, and the smallest three."""
    ways: dict[tuple[str, str], list] = {}
    for value, simulated, streamed in sorted(disagree, key=lambda d: len(d[0] or b"")):
        ways.setdefault((kind(simulated), kind(streamed)), []).append((value, simulated, streamed))
    lines = [f"{case.id}: {len(disagree)} of {len(values)} records decoded differently, in {len(ways)} ways"]
    for (simulated, streamed), found in ways.items():
        lines.append(f"- simulator {simulated!r}, streaming {streamed!r}: {len(found)} records, the smallest:")
        lines += [f"  {shown(v)}\n    simulator: {shown_outcome(w)}\n    streaming: {shown_outcome(g)}"
                  for v, w, g in found[:3]]
    return "\n".join(lines)


class RecordValues(list):
    """One example's record values; Hypothesis reports them by their number (the assertion shows
    those that disagree)."""

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(f"RecordValues(<{len(self)} record values, {sum(len(v or b'') for v in self):,} bytes>)")


# -- record values ---------------------------------------------------------------------------------

SPECIALS = ('"', "\\", "/", "\x00", "\x08", "\x1f", "\x7f", "\x85", "\u2028", "\u2029", "\ufeff", "\ufffd", "é", "€",
            "\U0001f600", "\n", "\r\n", "\t", " ", "İ", "ı", "\u212a", "ß", "$1", ".", "?", "{", "}", ":", ",")
"""Characters that JSON, the splitter rules or UTF-8 treat specially."""
SURROGATES = ("\ud83d", "\ude00", "\ud800", "\udfff", "\ud83d\ude00")
"""Lone surrogates: raw they make the record's bytes invalid UTF-8, escaped they make it invalid
JSON, and a high then a low one escaped is one supplementary character."""

BYTE_SEQUENCES = (b"\xff", b"\xfe", b"\x80", b"\xbf", b"\xc2", b"\xe2\x82", b"\xf0\x9f\x98", b"\xc0\x80", b"\xc1\xbf",
                  b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80",
                  b"\xf8\x88\x80\x80\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbe", b"\xf4\x8f\xbf\xbf",
                  b"\xc2\x80", b"\xef\xbb\xbf", b"\x00")
"""Spliced into a record: invalid UTF-8 (stray continuation, truncated, overlong, surrogate, past
U+10FFFF, five bytes) and valid sequences at UTF-8's edges (U+D7FF, U+E000, U+FFFE, U+10FFFF)."""

INT_BOUNDS = (0, 2**31 - 1, -(2**31), 2**32, 2**53, 2**63 - 1, -(2**63), 2**64, 10**18, 10**19, 10**38)
ODD_NUMBERS = ("-0", "0.0", "1e3", "1E+2", "2.0", "0.5e1", "-1e-2", "1e999", "-1e999", "1e-999",
               "1.7976931348623157e309", "01", "-01", "+1", "1.", ".5", "0x10", "1_0", "NaN", "Infinity", "-Infinity",
               "nan", "inf")
"""Numbers in other spellings: integers written as floats, out of double range, and not JSON."""
NOT_JSON = ("", " ", "{", "}", "[]", "[1,2]", "null", "true", "1", '"s"', "{'a':'x'}", '{a:"x"}', '{"a":"x",}',
            "/*c*/{}", '{"a":"x" /*c*/}', '{"a":"x"//c\n}', '{"a":NaN}', '{"a":1}{', '{"a"}', '{"a":}',
            '{"a":1 "b":2}', '{"a":[1,]}', '{"a":"\\x41"}', '{"a":"\\u12"}', '{"a":"\\U0041"}', '{"a":tru}',
            '{"a":True}', '{"a":None}', '{"a":"x\\"}', '{"a":"\\\'"}')
"""Text that is not JSON, or not quite."""
TOKENS = ("{", "}", "[", "]", ":", ",", '"', "\\", " ", "\n", "1", "-", ".", "e", "null", "true", "\\u0041", "\\ud800")
PREFIXES = ("",) * 90 + (" ", "\n", "\t \r\n") * 5 + ("\ufeff", "\x0c", "\x0b", "\x00", "\u00a0", "\u2028", "x", "")
"""Before a record: nothing, JSON whitespace, or characters JSON does not skip."""
SUFFIXES = ("",) * 12 + ("\n", "\r\n", " ", "}", "]", ",", "x", " trailing", '{"a":1}', "\x00", "\ufeff", "\udc80", "")
SEPARATORS = ("",) * 40 + (" ", "  ", "\n", "\t", "\r\n  ") * 8 + ("\x0c", "\u00a0", "")
"""Between a record's tokens: compact, JSON whitespace, or whitespace JSON does not allow."""
LONG_UNITS = ("a", "é", "€", "\U0001f600", "\u2028", "\x7f", '"', "\\", "\n", "\ud83d\ude00")
"""Characters of 1 to 4 UTF-8 bytes (and JSON escapes) that keys about the limit are made of."""
STRING_STYLES = (0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 1, 2, 3, 4, 5, 0)
"""How a string is written; index 0 is what `jsonrule.encode` writes (see `json_string`)."""
ABSENT, ANY, OWN = "absent", "any JSON value", "its own kind"
FIELD_FORMS = ((OWN, 0),) * 30 + ((OWN, 1), (OWN, 2), (OWN, 3)) + ((ABSENT, 0), (ANY, 0)) * 3 + ((ANY, 2), (OWN, 0))
"""How a record holds one of the dataset's fields (and how its name is written)."""
NOT_AN_OBJECT, DEEP, LONG_NAME = "not an object", "deep", "long name"
SHAPES = ("",) * 40 + (NOT_AN_OBJECT, DEEP, DEEP, LONG_NAME, "")
"""Records that are not JSON objects, or hold a value nested about 1,000 levels or a name of about
50,000 characters (the parsers' limits: they cost, so they are few)."""


def json_string(s: str, style: int) -> str:
    """`s` as a JSON string: 0 compact UTF-8, 1 non-ASCII escaped, 2 every character escaped
    (upper-case hex), 3 `/` escaped too, 4 only `"` and `\\` escaped (control characters raw:
    not JSON), 5 nothing escaped (`s` as it is between quotes)."""
    if style == 0:
        return json.dumps(s, ensure_ascii=False)
    if style == 1:
        return json.dumps(s)
    if style == 2:
        units = s.encode("utf-16-be", "surrogatepass")
        return '"' + "".join(f"\\u{units[i]:02X}{units[i + 1]:02X}" for i in range(0, len(units), 2)) + '"'
    if style == 3:
        return json.dumps(s, ensure_ascii=False).replace("/", "\\/")
    if style == 4:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return '"' + s + '"'


def utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def mixed_radix(number: int, *options: tuple) -> tuple[list, int]:
    """One option of each tuple, chosen by the digits of `number` (one draw for many choices: each
    draw costs Hypothesis's budget of choices per example, `RECORDS_PER_JOB`), and what is left."""
    chosen = []
    for choices in options:
        number, digit = divmod(number, len(choices))
        chosen.append(choices[digit])
    return chosen, number


def weighted(*choices: tuple[int, st.SearchStrategy]) -> st.SearchStrategy:
    """One of the strategies, drawn about as often as its weight says (`one_of` draws its branches
    alike, and drops repeated ones). The first is also the last entry, which Hypothesis draws more
    often than the others: list the most common first."""
    table = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.sampled_from([*table, table[0]]).flatmap(lambda strategy: strategy)


def strategies(case: Case) -> st.SearchStrategy[bytes | None]:
    """The record values of `case`'s dataset. (Strategies are built once here, not in the composite
    functions: Hypothesis validates each new strategy object, which would double the draw's cost.)"""
    words = case.words
    plain, special = st.text(st.characters(codec="utf-8"), max_size=8), st.sampled_from(SPECIALS + words)
    surrogates = st.sampled_from(SURROGATES)
    texts = st.lists(weighted((20, plain), (16, special), (1, surrogates)), max_size=3).map("".join)
    # keys: more of the words the rule treats specially, so that they meet (dots then a line break, ...)
    own_words = st.sampled_from(words or SPECIALS)
    key_texts = st.lists(weighted((10, plain), (8, special), (10, own_words), (1, surrogates)),
                         max_size=3).map("".join)
    heads, units = st.sampled_from(("", "", *words)), st.sampled_from(LONG_UNITS)
    sizes = st.integers(MAX_KEY_BYTES - 8, MAX_KEY_BYTES + 8)
    tails = st.sampled_from(("", "", "a", "é", ".m", "?", "\n"))

    @st.composite
    def long_texts(draw) -> str:
        """About MAX_KEY_BYTES UTF-8 bytes (without its head), so that a key crosses the limit or not."""
        head, unit = draw(heads), draw(units)
        return head + unit * (draw(sizes) // utf8_len(unit)) + draw(tails)

    string_styles = st.sampled_from(STRING_STYLES)

    def strings(text: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.builds(json_string, text, string_styles)

    digit_counts = st.one_of(st.integers(995, 1005), st.integers(1, 1100))
    digits, signs, forms = st.sampled_from("123456789"), st.sampled_from(("", "-")), st.integers(0, 2)
    exponents = st.sampled_from(("1", "-5", "+300", "400"))

    @st.composite
    def long_numbers(draw) -> str:
        """Numbers about the 1,000 digits Spark's JSON parser takes."""
        n, digit, sign, form = draw(digit_counts), draw(digits), draw(signs), draw(forms)
        if form == 0:
            return sign + digit * n
        if form == 1:
            return sign + digit + "." + digit * (n - 1)
        return sign + digit * n + "e" + draw(exponents)

    ints = st.one_of(st.integers(-3, 3), st.builds(operator.add, st.sampled_from(INT_BOUNDS), st.integers(-2, 2)),
                     st.integers()).map(str)
    numbers = weighted((8, ints), (1, st.floats().map(json.dumps)), (1, st.sampled_from(ODD_NUMBERS)),
                       (1, long_numbers()))
    leaves = st.one_of(strings(texts), numbers, st.sampled_from(("true", "false", "null")))
    depths = st.one_of(st.integers(995, 1005), st.integers(900, 1005), st.integers(0, 1100))
    nestings = st.sampled_from((("[", "]"), ('{"a":', "}")))

    @st.composite
    def deep(draw) -> str:
        """Values nested about the 1,000 levels Spark's JSON parser takes (and that Python's takes
        under its recursion limit), a leaf inside."""
        depth, (opener, closer) = draw(depths), draw(nestings)
        return opener * depth + draw(leaves) + closer * depth

    own_names = st.sampled_from(tuple(case.fields))
    other_names = st.one_of(st.sampled_from(("a", "", case.key_field.upper(), case.key_field + " ")), texts)
    name_styles = st.sampled_from(STRING_STYLES[:-1])
    field_forms = st.sampled_from(FIELD_FORMS)
    names = st.builds(json_string, weighted((6, other_names), (1, own_names)), name_styles)
    long_names = st.integers(49_995, 50_005).map(lambda n: '"' + "k" * n + '"')  # Spark's JSON parser: 50,000 chars
    separators = st.sampled_from(SEPARATORS)

    def container(items: st.SearchStrategy[str], is_object: bool) -> st.SearchStrategy[str]:
        def render(ws: str, entries: list) -> str:
            if is_object:
                return "{" + ws + ("," + ws).join(f"{k}{ws}:{ws}{v}" for k, v in entries) + ws + "}"
            return "[" + ws + ("," + ws).join(entries) + ws + "]"

        entries = st.lists(st.tuples(names, items), max_size=3) if is_object else st.lists(items, max_size=3)
        return st.builds(render, separators, entries)

    values = st.recursive(leaves, lambda kids: st.one_of(container(kids, False), container(kids, True)), max_leaves=4)
    key_strings = strings(weighted((6, key_texts), (1, long_texts())))
    own = {
        KEY: key_strings,
        TAGS: container(weighted((12, key_strings), (1, leaves)), False),
        COUNT: weighted((6, ints), (1, numbers)),
        TEXT: strings(texts),
        INT: weighted((6, ints), (1, numbers)),
        NUM: numbers,
    }
    rule_fields = [name for name, kind in case.fields.items() if kind in (KEY, TAGS, COUNT)]
    other_fields = st.lists(st.sampled_from([name for name in case.fields if name not in rule_fields] or [""]),
                            max_size=2, unique=True)
    extra_pairs = weighted((4, st.just([])), (1, st.lists(st.tuples(names, values), min_size=1, max_size=2)))
    layouts = st.integers(0, len(PREFIXES) * len(SEPARATORS) * len(SUFFIXES) * len(SHAPES) - 1)
    deep_values = deep()

    @st.composite
    def records(draw) -> str:
        """A JSON record of the dataset's fields (each absent, of its own kind or any value) and up to
        two more (maybe the same names again), in any order and layout; a few nest deep, have a name
        of 50,000 characters, or are not objects."""
        pairs = []
        for name in [*rule_fields, *(draw(other_fields) if len(rule_fields) < len(case.fields) else [])]:
            how, style = draw(field_forms)
            if how != ABSENT:
                pairs.append((json_string(name, style), draw(values if how == ANY else own[case.fields[name]])))
        pairs += draw(extra_pairs)
        # one draw for the layout (each part's first option is the plain one, where Hypothesis shrinks to)
        (prefix, ws, suffix, shape), _ = mixed_radix(draw(layouts), PREFIXES, SEPARATORS, SUFFIXES, SHAPES)
        if shape == DEEP:
            pairs.append((draw(names), draw(deep_values)))
        elif shape == LONG_NAME:
            pairs.append((draw(long_names), draw(leaves)))
        turn = draw(st.integers(0, max(len(pairs) - 1, 0)))
        pairs = pairs[turn:] + pairs[:turn]
        body = "{" + ws + ("," + ws).join(f"{k}{ws}:{ws}{v}" for k, v in pairs) + ws + "}"
        return prefix + (draw(values) if shape == NOT_AN_OBJECT else body) + suffix

    compact_names = st.sampled_from((case.key_field, case.key_field, *case.fields))
    compact_texts, compact_styles = weighted((6, key_texts), (1, long_texts())), st.sampled_from((5, 5, 0, 0, 1, 2, 5))
    compact_ends = st.sampled_from(("", "", "", "\n", " ", "\r\n"))

    @st.composite
    def compact(draw) -> str:
        """`{"<field>":"<s>"}`, `s` as drawn (style 5) or encoded: the form key-only rules read
        without parsing, and forms next to it."""
        name, value = draw(compact_names), json_string(draw(compact_texts), draw(compact_styles))
        return '{"' + name + '":' + value + "}" + draw(compact_ends)

    not_json = st.one_of(st.text(), st.sampled_from(NOT_JSON),
                         st.lists(st.sampled_from(TOKENS + tuple(f'"{name}"' for name in case.fields)),
                                  max_size=12).map("".join))
    splices, byte_sequences = st.integers(0, 14), st.sampled_from(BYTE_SEQUENCES)

    @st.composite
    def encoded(draw, text: st.SearchStrategy[str]) -> bytes:
        """`text` in UTF-8 (raw lone surrogates as their invalid 3-byte forms), sometimes with a
        byte sequence spliced in."""
        raw = draw(text).encode("utf-8", "surrogatepass")
        if draw(splices) == 5:
            at = draw(st.integers(0, len(raw)))
            raw = raw[:at] + draw(byte_sequences) + raw[at:]
        return raw

    records_bytes, compact_bytes = encoded(records()), encoded(compact())
    return weighted((12, records_bytes), (4, compact_bytes), (1, encoded(not_json)), (1, st.binary(max_size=48)),
                    (1, st.none()))


def regressions(case: Case) -> list[bytes | None]:
    """Record values the two sides decoded differently when this test was written (the smallest
    forms of what it found) and the values next to them, checked first on every run (one job):

    - numbers of more than 1,000 digits and names of more than 50,000 characters (Java's: UTF-16
      code units), which Spark's JSON parser rejects (Jackson's read constraints) and Python's takes;
    - nestings of 800 to 1,001 levels: Spark's parser takes 1,000, Python's as many as its recursion
      limit leaves, and just below that the twin's check for lone surrogates
      (`jsonrule._has_lone_surrogate`, when the record holds a surrogate escape) re-encodes the
      record recursively and raises RecursionError, which stops the simulator;
    - WIKIPEDIA_PAGEVIEWS_BY_LANG: a lang of dots then a line break, which the rule's SQL
      (`'^[.]+$'`) calls dots only: Java's `$` also matches before a final line break.
    """
    k = case.key_field
    key = '["a"]' if case.fields[k] == TAGS else '"a"'
    base = f'{{"{k}":{key}' + (f',"{case.count_field}":1' if case.count_field else "")
    pair = '"\\ud83d\\ude00"'  # a surrogate pair escape: the twin then re-encodes what it parsed
    values = [
        # Spark's parser: numbers of up to 1,000 digits, names of up to 50,000 characters;
        # Python's: any (integers of up to 4,300 digits)
        *(f'{base},"z":{"1" * n}}}' for n in (1000, 1001, 4300, 4301)),
        *(f'{base},"z":1.{"5" * n}}}' for n in (999, 1000)),
        *(f'{base},"{"k" * n}":1}}' for n in (50_000, 50_001)),
        # ... counted in Java chars: a character above U+FFFF is two (found by `make fuzz`, 2026-12-06:
        # 33,153 + 1 + 16,846 characters, 50,001 chars)
        *(f'{base},"{"k" * (n - 2)}\U0010ffff":1}}' for n in (50_000, 50_001)),
        # Spark's parser: 1,000 levels; Python's: what its recursion limit leaves
        *(f'{base},"z":{"[" * d}{pair}{"]" * d}}}' for d in range(800, 1002)),
    ]
    if case.count_field:
        values += [f'{{"{k}":{key},"{case.count_field}":{"1" * 1001}}}']
    if case.name == "WIKIPEDIA_PAGEVIEWS_BY_LANG":
        # '^[.]+$' matches '.\n' (and '.' then any line break); the twin's lang_key does not
        values += [json.dumps({"lang": "." + end, "n": 1}, separators=(",", ":")) for end in LINE_BREAKS]
        values += ['{"lang":"..","n":1}', '{"lang":"\\n.","n":1}']
    return [v.encode() for v in values]


# -- the property ----------------------------------------------------------------------------------


def budget() -> tuple[int, int]:
    """(examples, records per example) per dataset for the active Hypothesis profile: at least
    `settings.default.max_examples` records, in jobs of at most RECORDS_PER_JOB."""
    target = settings.default.max_examples
    examples = max(MIN_EXAMPLES, -(-target // RECORDS_PER_JOB))
    return examples, -(-target // examples)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_streaming_splitter_and_simulator_agree(spark, case):
    """Every generated record value gives the same tuples, or the same dead letter with the same
    reason, in the streaming splitter (Spark SQL) and in the simulator (Python), so that a
    simulated run of a recorded topic counts what its streaming run counts. Prints, per dataset, the
    records checked by outcome (`pytest -s`): valid records and every kind of dead letter."""
    dataset = case.dataset()
    examples, size = budget()
    fixed = regressions(case)
    outcomes: Counter[str] = Counter()

    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(st.lists(strategies(case), min_size=size, max_size=size).map(RecordValues))
    @example(RecordValues(fixed))
    def agree(values):
        streaming = streaming_outcomes(spark, dataset, values)
        disagree = []
        for value, got in zip(values, streaming, strict=True):
            want = simulator_outcome(dataset, value)
            outcomes[kind(want)] += 1
            if want != got:
                disagree.append((value, want, got))
        assert not disagree, disagreements(case, values, disagree)

    agree()
    checked = outcomes.total()
    print(f"{case.id}: {checked:,} records ({examples} examples of {size} and {len(fixed)} fixed), "
          + ", ".join(f"{what} {n}" for what, n in outcomes.most_common()))
    assert checked >= examples * size + len(fixed) >= settings.default.max_examples
    assert outcomes["tuples"] and len(outcomes) >= 4, outcomes  # valid records and three reasons at least
