"""Real datasets that install offline: exact record counts and key extraction on known records."""

from __future__ import annotations

import json

import pytest

from datasets import MalformedRecord, get_dataset


def _first(ds, n=1):
    return list(ds.records(n))


class TestNycFlights:
    @pytest.mark.slow  # a full pass over 336,776 records: 5 s of CPU (tests/tiers.py)
    def test_count_and_first_record(self):
        ds = get_dataset("NYC_FLIGHTS")
        n = 0
        for n, _rec in enumerate(ds.records(), 1):
            pass
        assert n == ds.documented_records == 336_776
        first = _first(ds)[0]
        obj = json.loads(first.value)
        assert obj == {"time_hour": "2013-01-01T10:00:00Z", "carrier": "UA", "flight": 1545, "tailnum": "N14228",
                       "origin": "EWR", "dest": "IAH", "dep_delay": 2.0, "arr_delay": 11.0, "distance": 1400}
        assert first.event_ms == 1_357_034_400_000  # 2013-01-01T10:00:00Z
        assert ds.extract(first.value.decode()) == [("IAH", 1)]

    @pytest.mark.parametrize("key,expected", [("dest", "IAH"), ("origin", "EWR"), ("carrier", "UA"), ("tailnum", "N14228")])
    def test_key_choice(self, key, expected):
        ds = get_dataset("NYC_FLIGHTS", key=key)
        assert ds.extract(_first(ds)[0].value.decode()) == [(expected, 1)]

    def test_sorted_by_time_and_known_distribution(self):
        ds = get_dataset("NYC_FLIGHTS")
        ev = [r.event_ms for r in ds.records(50_000)]
        assert ev == sorted(ev)
        st = ds.key_stats()
        assert st.records == 336_776 and len(st.counts) == 105
        assert st.counts.most_common(2) == [("ORD", 17_283), ("ATL", 17_215)]

    def test_missing_tailnum_is_malformed_for_that_key(self):
        ds = get_dataset("NYC_FLIGHTS", key="tailnum")
        assert ds.key_stats().malformed == 2512
        with pytest.raises(MalformedRecord, match="missing field 'tailnum'"):
            ds.extract('{"dest":"IAH","tailnum":null}')


class TestUsFlights3M:
    @pytest.mark.slow  # a full pass over 3,000,000 records: 7 s of CPU (tests/tiers.py)
    def test_count_keys_and_first_records(self):
        ds = get_dataset("US_FLIGHTS_3M")
        n = 0
        last = None
        for n, rec in enumerate(ds.records(), 1):
            last = rec
        assert n == ds.documented_records == 3_000_000
        first = _first(ds, 2)
        assert first[0].value == b'{"date":"2001-01-01T00:01:00","delay":33,"distance":2176,"origin":"LAS","destination":"PHL"}'
        assert first[0].event_ms == 978_307_260_000
        assert ds.extract(first[1].value.decode()) == [("ATL", 1)]
        assert last.event_ms >= first[0].event_ms
        dest = get_dataset("US_FLIGHTS_3M", key="destination")
        assert dest.extract(first[0].value.decode()) == [("PHL", 1)]

    def test_distribution(self):
        st = get_dataset("US_FLIGHTS_3M").key_stats()
        assert st.records == 3_000_000 and len(st.counts) == 229
        key, count = st.counts.most_common(1)[0]
        assert key == "ORD" and abs(count / 3_000_000 - 0.0554) < 0.001

    def test_limit_cuts_inside_a_batch(self):
        recs = list(get_dataset("US_FLIGHTS_3M").records(70_000))
        assert len(recs) == 70_000


class TestTrumpTweets:
    def test_count_order_and_keys(self):
        ds = get_dataset("TRUMP_TWEETS")
        recs = list(ds.records())
        assert len(recs) == ds.documented_records == 20_761
        ev = [r.event_ms for r in recs]
        assert ev == sorted(ev) and ev[0] == recs[0].event_ms
        st = ds.key_stats()
        assert st.counts.most_common(1)[0] == ("Trump2016", 425)
        mentions = get_dataset("TRUMP_TWEETS", keys="mentions").key_stats()
        assert mentions.counts.most_common(1)[0] == ("BarackObama", 700)
        assert (len(st.counts), st.tuples, len(mentions.counts), mentions.tuples) == (652, 3213, 4498, 12449)

    def test_extraction_rules(self):
        ds = get_dataset("TRUMP_TWEETS")
        v = '{"text":"x","hashtags":["MAGA","Trump2016"],"timestamp":1}'
        assert ds.extract(v) == [("MAGA", 1), ("Trump2016", 1)]
        rule = get_dataset("TRUMP_TWEETS", election_day_rule=True)
        assert rule.extract(v) == [("MAGA", 1), ("ElectionDay", 1)]
        from datasets.twitter import HASHTAG_RE, MENTION_RE

        assert HASHTAG_RE.findall("#1 a#b #MAGA! (#Trump2016) &#39;") == ["MAGA", "Trump2016"]
        assert MENTION_RE.findall("@foxandfriends: a@b.com @CNN") == ["foxandfriends", "CNN"]

    def test_only_with_keys(self):
        ds = get_dataset("TRUMP_TWEETS", only_with_keys=True)
        recs = list(ds.records())
        assert len(recs) == 2432 and all(ds.extract(r.value.decode()) for r in recs)


class TestGeonames:
    # 1000 and 500: full passes over 170,391 and 234,908 cities, 5-6 s of CPU each (tests/tiers.py)
    @pytest.mark.parametrize("pop,count", [(15000, 34_006), (5000, 69_472),
                                           pytest.param(1000, 170_391, marks=pytest.mark.slow),
                                           pytest.param(500, 234_908, marks=pytest.mark.slow)])
    def test_counts(self, pop, count):
        ds = get_dataset("GEONAMES_COUNTRY", min_population=pop)
        assert sum(1 for _ in ds.records()) == ds.documented_records == count

    def test_known_city_and_weights(self):
        ds = get_dataset("GEONAMES_COUNTRY", weighted=True, order="geonameid")
        recs = {json.loads(r.value)["geonameid"]: r.value.decode() for r in ds.records()}
        istanbul = recs[745044]
        assert json.loads(istanbul)["city"] == "Istanbul"
        key, count = ds.extract(istanbul)[0]
        assert key == "TR" and count == json.loads(istanbul)["population"] > 10_000_000
        plain = get_dataset("GEONAMES_COUNTRY")
        assert plain.extract(istanbul) == [("TR", 1)]
        st = plain.key_stats()
        assert st.counts.most_common(2) == [("IN", 3779), ("US", 3407)] and len(st.counts) == 244

    def test_shuffle_is_seeded(self):
        a = [r.value for r in get_dataset("GEONAMES_COUNTRY", seed=1).records(50)]
        b = [r.value for r in get_dataset("GEONAMES_COUNTRY", seed=1).records(50)]
        c = [r.value for r in get_dataset("GEONAMES_COUNTRY", seed=2).records(50)]
        assert a == b != c
