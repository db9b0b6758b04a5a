"""``Dataset.extract`` (Python) and ``Dataset.splitter_sql`` (Spark SQL) agree on every fixture
record, malformed ones included: same tuples, same reasons."""

from __future__ import annotations

from itertools import islice

import pytest

from datasets import MalformedRecord, get_dataset
from tests.datasets.test_extract import CASES

pytestmark = pytest.mark.spark

GENERIC_BAD = [v for v, _ in CASES] + [
    '{"a":{"b":1,"b":2},"country":"x"}',  # a duplicate key deeper down
    '{"country":"x"}{"y":1}',
    "\ufeff{}",
    '{"country":"Türkiye","count":1}',
    '{"country":""}',
    # Near the compact form, which key-only rules read without parsing (jsonrule.sql_canonical_string)
    '{"country":"x"}\n', ' {"country":"x"}', '{"country":"x"} ', '{"country": "x"}', '{"country":"x"}}',
    '{"country":"a\\"b"}', '{"country":"a\\\\b"}', '{"country":"\\u0041"}', '{"country":"a\x00b"}',
    '{"country":"a\x7fb"}', '{"country":"a\u2028b"}', '{"country":"\U0001f600"}', '{"country":"x\\"}',
    '{"Country":"x"}', '{"country":"x","country":"y"}', '{"country":"x"',
]

SPECIFIC_BAD = {
    "WIKIPEDIA_CLICKSTREAM": [
        '{"curr":"A","n":7}', '{"curr":"A"}', '{"curr":"A","n":7.0}', '{"curr":"A","n":"7"}', '{"curr":"A","n":true}',
        '{"curr":"A","n":12345678901234567890}', '{"curr":"A","n":-3}', '{"curr":"A","n":null}', '{"n":1}',
        '{"curr":"A","n":9223372036854775807}', '{"curr":"A","n":1e3}',
    ],
    "WIKIPEDIA_PAGEVIEWS_BY_LANG": [
        '{"lang":"..","n":1}', '{"lang":".","n":1}', '{"lang":".en","n":2}', '{"lang":"en..m","n":2}', '{"lang":"","n":2}',
        '{"lang":"en.m","n":"x"}', '{"lang":5,"n":1}',
    ],
    "WIKIPEDIA_PAGEVIEWS": [
        '{"page":"x http://en.wikipedia.org/wiki/A http://en.wikipedia.org/wiki/B"}',
        '{"page":"http://en\\nwikipedia.org/wiki/A"}', '{"page":"a\\nb http://en.wikipedia.org/wiki/C"}',
        '{"page":"http://en\\u2028wikipedia.org/wiki/A"}', '{"page":"http://en.wikipedia.org/wiki/$1\\\\x"}',
        '{"page":"http://enXwikipediaYorg/wiki/Foo"}', '{"page":7}',
    ],
    "TWITTER_ELECTION": [
        '{"hashtags":[]}', '{"hashtags":"x"}', '{"hashtags":[1]}', '{"hashtags":["a",null]}', '{"hashtags":[null]}',
        '{"hashtags":["Vote","a?b","Business","İSTANBUL","ABDSEÇİMLERİ","ok"]}', '{"text":"x"}',
    ],
    "TRUMP_TWEETS": ['{"hashtags":["MAGA","USA"]}', '{"hashtags":[]}', '{"mentions":["CNN"]}'],
}


def _datasets(user_files):
    out = [
        get_dataset("COUNTRY_SKEW_R80", length=300),
        get_dataset("GOLDEN_SKEW", length=300),
        get_dataset("NYC_FLIGHTS", key="tailnum"),
        get_dataset("NYC_FLIGHTS"),
        get_dataset("US_FLIGHTS_3M"),
        get_dataset("TRUMP_TWEETS"),
        get_dataset("TRUMP_TWEETS", keys="mentions", election_day_rule=True),
        get_dataset("GEONAMES_COUNTRY"),
        get_dataset("GEONAMES_COUNTRY", weighted=True),
        get_dataset("ZIPF", length=300),
        get_dataset("HOT_KEY_SHIFT", length=300),
    ]
    out += [get_dataset(name, path=path) for name, path in user_files.items()]
    return out


def _python(ds, value):
    try:
        return ds.extract(value), None
    except MalformedRecord as e:
        return None, e.reason


def test_extract_agrees_with_splitter_sql(spark, user_files):
    checked = 0
    for ds in _datasets(user_files):
        values = [r.value.decode() for r in ds.records(300)]
        if ds.name == "NYC_FLIGHTS" and ds.key_field == "tailnum":
            nulls = (r.value.decode() for r in ds.records() if b'"tailnum":null' in r.value)
            values += list(islice(nulls, 5))  # the first five: a full pass would cost half a minute
        values += GENERIC_BAD + SPECIFIC_BAD.get(ds.name, [])
        sql = ds.splitter_sql
        df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i int, value string").selectExpr(
            "*", sql.prelude)
        rows = df.selectExpr("i", f"{sql.tuples} AS tuples", f"{sql.error} AS error").orderBy("i").collect()
        assert len(rows) == len(values)
        for row in rows:
            value = values[row["i"]]
            want_tuples, want_error = _python(ds, value)
            got_tuples = None if row["tuples"] is None else [(t["key"], t["count"]) for t in row["tuples"]]
            assert (got_tuples, row["error"]) == (want_tuples, want_error), f"{ds.name}: {value!r}"
            checked += 1
    assert checked > 3000


def test_sql_types(spark):
    ds = get_dataset("WIKIPEDIA_CLICKSTREAM")
    df = spark.createDataFrame([('{"curr":"A","n":7}',)], "value string").selectExpr("*", ds.splitter_sql.prelude)
    out = df.selectExpr(f"{ds.splitter_sql.tuples} AS tuples", f"{ds.splitter_sql.error} AS error")
    assert out.schema["tuples"].dataType.simpleString() == "array<struct<key:string,count:bigint>>"
    assert out.schema["error"].dataType.simpleString() == "string"


def test_key_only_rules_read_compact_records_without_parsing(spark):
    """The prelude of a key-only JSON rule matches exactly the compact records (the fast path the
    agreement test above covers both sides of)."""
    sql = get_dataset("COUNTRY_SKEW_R80", length=10).splitter_sql
    values = ['{"country":"Turkey"}', '{"country":""}', '{"country":"Türkiye"}', '{"country":"a\\"b"}',
              '{"country":"x"}\n', '{"country":"x","n":1}']
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i int, value string")
    got = [r[0] for r in df.selectExpr(sql.prelude).collect()]
    assert got == ['"Turkey', '"', '"Türkiye', "", "", ""]
