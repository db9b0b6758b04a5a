"""The registry: names, parameters, errors, descriptive attributes, fingerprints."""

from __future__ import annotations

import json

import pytest

from datasets import DATASETS, Dataset, DatasetFileMissing, SplitterSQL, dataset_params, get_dataset

USER_FILE_DATASETS = {
    "TWITTER_TICKER", "TWITTER_ELECTION", "WIKIPEDIA_PAGEVIEWS", "WIKIPEDIA_PAGEVIEWS_BY_LANG", "WIKIPEDIA_CLICKSTREAM",
}  # fmt: skip


def test_reference_names_are_registered():
    # reference §11: 17 sources, COUNTRY_SKEW_R0..R100 in steps of 10
    reference = {f"COUNTRY_SKEW_R{r}" for r in range(0, 101, 10)} | {"COUNTRY_HALF_SKEW_R80"} | USER_FILE_DATASETS
    assert len(reference) == 17
    assert reference <= set(DATASETS)
    assert {"NYC_FLIGHTS", "US_FLIGHTS_3M", "TRUMP_TWEETS", "GEONAMES_COUNTRY", "ZIPF", "HOT_KEY_SHIFT", "GOLDEN_SKEW"} <= set(DATASETS)


@pytest.mark.parametrize("name", DATASETS)
def test_every_dataset_describes_itself(name):
    ds = get_dataset(name)
    assert isinstance(ds, Dataset)
    for attr in ("name", "description", "origin", "licence", "record_format"):
        assert isinstance(getattr(ds, attr), str) and getattr(ds, attr), attr
    assert ds.name == name
    sql = ds.splitter_sql
    assert isinstance(sql, SplitterSQL) and "value" in sql.tuples and "value" in sql.error


@pytest.mark.parametrize("name", sorted(set(DATASETS) - USER_FILE_DATASETS))
def test_fingerprint_is_json(name):
    fp = get_dataset(name).fingerprint()
    assert fp["name"] == name
    json.dumps(fp)


def test_unknown_dataset_lists_the_names():
    with pytest.raises(ValueError) as e:
        get_dataset("NO_SUCH_SET")
    msg = str(e.value)
    assert "NO_SUCH_SET" in msg and "COUNTRY_SKEW_R80" in msg and "NYC_FLIGHTS" in msg and "COUNTRY_SKEW_R<r>" in msg


def test_unknown_parameter_is_named():
    with pytest.raises(TypeError, match="no_such_param"):
        get_dataset("ZIPF", no_such_param=1)
    with pytest.raises(TypeError, match="accepted: s, keys, length, seed"):
        get_dataset("ZIPF", exponent=1)


def test_bad_parameter_values():
    with pytest.raises(ValueError, match="key"):
        get_dataset("NYC_FLIGHTS", key="nope")
    with pytest.raises(ValueError, match="length"):
        get_dataset("COUNTRY_SKEW_R80", length=-1)
    with pytest.raises(ValueError, match="min_population"):
        get_dataset("GEONAMES_COUNTRY", min_population=123)


def test_family_and_spellings():
    assert get_dataset("COUNTRY_SKEW_R37", length=10).name == "COUNTRY_SKEW_R37"
    assert get_dataset("country-skew-r80", length=10).name == "COUNTRY_SKEW_R80"
    with pytest.raises(ValueError):
        get_dataset("COUNTRY_SKEW_R101")
    assert set(dataset_params("COUNTRY_SKEW_R37")) == {"length", "seed"}


def test_string_parameters_are_coerced():
    # the CLI passes strings
    ds = get_dataset("ZIPF", s="1.5", keys="10", length="1_000", seed="3")
    assert (ds.s, ds.n_keys, ds.length, ds.seed) == (1.5, 10, 1000, 3)
    assert get_dataset("GEONAMES_COUNTRY", weighted="true").weighted is True


@pytest.mark.parametrize("name", sorted(USER_FILE_DATASETS))
def test_missing_user_file_says_where_and_what(name, tmp_path):
    ds = get_dataset(name, path=tmp_path / "absent.tsv")
    with pytest.raises(DatasetFileMissing) as e:
        next(ds.records())
    msg = str(e.value)
    assert "published at" in msg and "Expected format" in msg and "http" in msg
    with pytest.raises(DatasetFileMissing, match="no path given"):
        next(get_dataset(name).records())
