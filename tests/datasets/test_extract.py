"""The Python splitter rule on malformed records: stable reasons, the same for every dataset."""

from __future__ import annotations

import pytest

from datasets import MalformedRecord, get_dataset

CASES = [
    ("", "invalid json"),
    ("not json", "invalid json"),
    ('["country"]', "invalid json"),
    ('"Turkey"', "invalid json"),
    ('{"country":"a","country":"b"}', "invalid json"),
    ('{"country":NaN}', "invalid json"),
    ('{"country":"\\ud800"}', "invalid json"),
    ("{'country':'x'}", "invalid json"),
    ('{"country":"x\ty"}', "invalid json"),  # a raw control character
    ("{}", "missing field 'country'"),
    ('{"country":null}', "missing field 'country'"),
    ('{"country":5}', "field 'country' is not a string"),
    ('{"country":["Turkey"]}', "field 'country' is not a string"),
]


@pytest.mark.parametrize("value,reason", CASES)
def test_country_malformed(value, reason):
    ds = get_dataset("COUNTRY_SKEW_R80", length=10)
    with pytest.raises(MalformedRecord) as e:
        ds.extract(value)
    assert e.value.reason == reason


def test_lenient_where_spark_is():
    ds = get_dataset("COUNTRY_SKEW_R80", length=10)
    assert ds.extract('  {"country":"Turkey"} trailing') == [("Turkey", 1)]
    assert ds.extract('{"country":"\\ud83d\\ude00"}') == [("\U0001f600", 1)]


def test_counts():
    ds = get_dataset("WIKIPEDIA_CLICKSTREAM")
    assert ds.extract('{"curr":"A","n":7}') == [("A", 7)]
    for v, reason in [
        ('{"curr":"A"}', "missing field 'n'"),
        ('{"curr":"A","n":7.0}', "field 'n' is not an integer"),
        ('{"curr":"A","n":"7"}', "field 'n' is not an integer"),
        ('{"curr":"A","n":true}', "field 'n' is not an integer"),
        ('{"curr":"A","n":12345678901234567890}', "field 'n' is not an integer"),
        ('{"n":1}', "missing field 'curr'"),
    ]:
        with pytest.raises(MalformedRecord) as e:
            ds.extract(v)
        assert e.value.reason == reason, v


def test_hashtag_arrays():
    ds = get_dataset("TWITTER_ELECTION")
    assert ds.extract('{"hashtags":[]}') == []
    for v in ('{"hashtags":"x"}', '{"hashtags":[1]}', '{"hashtags":["a",null]}'):
        with pytest.raises(MalformedRecord, match="is not an array of strings"):
            ds.extract(v)
