"""The reference's Wikipedia datasets, read from user-supplied files in the public formats
(reference §11)."""

from __future__ import annotations

import calendar
import re
from pathlib import Path

from . import jsonrule as J
from .base import MalformedRecord, SourceRecord, SplitterSQL
from .files import FileDataset, Skip, java_split, java_trim, parse_java_int

# --- WIKIPEDIA_PAGEVIEWS -----------------------------------------------------------------------

PAGE_PREFIX_REGEX = "http://en.wikipedia.org/wiki/"
"""Reference splitter: ``page.replaceFirst(PAGE_PREFIX_REGEX, "")``; a *regex*, so its dots match
any character but a line terminator, and it is not anchored (Q25, reproduce)."""

# Java's '.' excludes \n, \r, \u0085, \u2028, \u2029; Python's excludes only \n.
_JAVA_DOT = "[^\n\r\u0085\u2028\u2029]"
_PAGE_PREFIX_PY = re.compile("".join(_JAVA_DOT if ch == "." else re.escape(ch) for ch in PAGE_PREFIX_REGEX))


def strip_page_prefix(page: str) -> str:
    return _PAGE_PREFIX_PY.sub("", page, count=1)


class WikipediaPageviews(FileDataset):
    name = "WIKIPEDIA_PAGEVIEWS"
    description = "Wikipedia page requests (the WikiBench trace); key = page title (URL prefix stripped)"
    origin = "user-supplied: the WikiBench trace of Wikipedia requests (the PKG papers' pageviews input)"
    licence = "of the user's files (WikiBench traces: derived from Wikimedia request logs, see wikibench.eu)"
    record_format = '{"page":"<url>","timestamp":<seconds>} (reference WIKIPEDIA_PAGEVIEWS message)'
    published_at = (
        "http://www.wikibench.eu/?page_id=60 (WikiBench traces, 2007-2008: lines '<counter> <epoch.ms> <url> <flag>'); "
        "the reference's own file (ts_seconds<TAB>url) was never published"
    )
    expected_format = (
        "either the reference's 'ts_seconds<TAB>url' lines or WikiBench lines "
        "'<counter> <epoch_seconds.millis> <url> <save flag>'"
    )

    def parse_line(self, line: str, file: Path) -> SourceRecord:
        line = java_trim(line)
        if "\t" in line:
            fields = java_split(line, "\t")
            if len(fields) != 2:
                raise MalformedRecord("expected 2 tab-separated fields")
            try:
                ts = parse_java_int(fields[0], 64)
            except ValueError:
                raise MalformedRecord("timestamp is not an integer") from None
            ts_ms, page = ts * 1000, fields[1]
        else:
            fields = line.split(" ")
            if len(fields) != 4:
                raise MalformedRecord("expected 'ts<TAB>url' or 4 space-separated WikiBench fields")
            m = re.fullmatch(r"([0-9]+)(?:\.([0-9]{1,3}))?", fields[1])  # ASCII digits, as WikiBench writes
            if not m:
                raise MalformedRecord("timestamp is not epoch seconds")
            ts = int(m.group(1))
            ts_ms = ts * 1000 + int((m.group(2) or "0").ljust(3, "0"))
            page = fields[2]
        return SourceRecord(J.encode({"page": page, "timestamp": ts}), ts_ms)

    def extract(self, value: str) -> list[tuple[str, int]]:
        obj = J.parse_object(value)
        return [(strip_page_prefix(J.str_field(obj, "page")), 1)]

    @property
    def splitter_sql(self) -> SplitterSQL:
        error = J.sql_error(J.sql_check("page", "string"))
        # replaceFirst: anchor at the start and keep everything before the first match; the
        # prefix group may cross line terminators, the reference's dots may not.
        regex = "^(?s:(.*?))" + PAGE_PREFIX_REGEX
        key = f"regexp_replace({J.sql_get('page', 'string')}, {J.sql_str(regex)}, '$1')"
        return SplitterSQL(tuples=J.sql_tuples_when_ok(error, J.sql_one_tuple(key)), error=error)


# --- WIKIPEDIA_PAGEVIEWS_BY_LANG ---------------------------------------------------------------

_DUMP_HOUR = re.compile(r"(?:pageviews|pagecounts)-(\d{4})(\d{2})(\d{2})-(\d{2})(\d{2})(\d{2})")
LANG_ONLY_DOTS = "lang made only of dots"
ONLY_DOTS_REGEX = r"^[.]+\z"
"""A lang made only of dots, in Java's regex syntax: `\\z`, not `$`, which also matches before a final
line break (".\\n" is not only dots: Java's `split("\\\\.")` gives it a key)."""


def dump_hour_ms(file: Path) -> int | None:
    """Start of the hour of a Wikimedia hourly dump, from its file name (UTC), else None."""
    m = _DUMP_HOUR.search(file.name)
    if not m:
        return None
    y, mo, d, h, mi, s = (int(g) for g in m.groups())
    return calendar.timegm((y, mo, d, h, mi, s)) * 1000


def lang_key(lang: str) -> str:
    """Reference: ``lang.split("\\\\.")[0]`` (``en.m`` -> ``en``); only dots makes it throw."""
    if lang and lang.strip(".") == "":
        raise MalformedRecord(LANG_ONLY_DOTS)
    return lang.split(".", 1)[0]


class WikipediaPageviewsByLang(FileDataset):
    name = "WIKIPEDIA_PAGEVIEWS_BY_LANG"
    description = "Wikimedia hourly pageview dumps; key = project language (en.m -> en), count = views"
    origin = "user-supplied: Wikimedia hourly pageview dumps (pageviews-YYYYMMDD-HH0000.gz or pagecounts-raw)"
    licence = "of the user's files (Wikimedia pageview dumps: CC0)"
    record_format = '{"lang":"<project>","page":"<title>","n":<views>,"m":<bytes>} (reference message)'
    weighted = True
    published_at = (
        "https://dumps.wikimedia.org/other/pageviews/ (hourly pageviews-YYYYMMDD-HH0000.gz) and "
        "https://dumps.wikimedia.org/other/pagecounts-raw/ (2007-2016)"
    )
    expected_format = "'project page_title views bytes' (exactly 4 fields separated by one space; views, bytes int32)"

    def __init__(self, path=None) -> None:
        super().__init__(path)
        self._hour_cache: tuple[Path, int | None] | None = None

    def parse_line(self, line: str, file: Path) -> SourceRecord:
        fields = java_split(java_trim(line), " ")
        if len(fields) != 4:
            raise MalformedRecord("expected 4 space-separated fields")
        try:
            n = parse_java_int(fields[2])
            m = parse_java_int(fields[3])
        except ValueError:
            raise MalformedRecord("views or bytes is not an int32") from None
        if self._hour_cache is None or self._hour_cache[0] != file:
            self._hour_cache = (file, dump_hour_ms(file))
        value = J.encode({"lang": fields[0], "page": fields[1], "n": n, "m": m})
        return SourceRecord(value, self._hour_cache[1])

    def extract(self, value: str) -> list[tuple[str, int]]:
        obj = J.parse_object(value)
        lang = J.str_field(obj, "lang")
        n = J.int_field(obj, "n")
        return [(lang_key(lang), n)]

    @property
    def splitter_sql(self) -> SplitterSQL:
        lang = J.sql_get("lang", "string")
        checks = J.sql_check("lang", "string") + J.sql_check("n", "integer")
        checks.append((f"regexp_like({lang}, {J.sql_str(ONLY_DOTS_REGEX)})", LANG_ONLY_DOTS))
        error = J.sql_error(checks)
        key = f"substring_index({lang}, '.', 1)"
        tuples = J.sql_tuples_when_ok(error, J.sql_one_tuple(key, J.sql_get("n", "bigint")))
        return SplitterSQL(tuples=tuples, error=error)


# --- WIKIPEDIA_CLICKSTREAM ---------------------------------------------------------------------

CLICKSTREAM_HEADER = "prev\tcurr\ttype\tn"


class WikipediaClickstream(FileDataset):
    name = "WIKIPEDIA_CLICKSTREAM"
    description = "Wikipedia clickstream (referrer, article) pairs; key = article, count = n"
    origin = "user-supplied: Wikimedia clickstream dumps (the reference used 2017_01_en_clickstream.tsv)"
    licence = "of the user's files (Wikimedia clickstream: CC0)"
    record_format = '{"prev":"<referrer>","curr":"<article>","type":"<link|external|other>","n":<count>}'
    weighted = True
    published_at = (
        "https://dumps.wikimedia.org/other/clickstream/ (monthly clickstream-<wiki>-YYYY-MM.tsv.gz); "
        "the reference's 2017_01_en_clickstream.tsv: https://doi.org/10.6084/m9.figshare.1305770"
    )
    expected_format = "TSV 'prev<TAB>curr<TAB>type<TAB>n' (n int32; an optional 'prev curr type n' header)"

    def parse_line(self, line: str, file: Path) -> SourceRecord:
        line = java_trim(line)
        if line == CLICKSTREAM_HEADER:
            raise Skip("header")
        fields = java_split(line, "\t")
        if len(fields) != 4:
            raise MalformedRecord("expected 4 tab-separated fields")
        try:
            n = parse_java_int(fields[3])
        except ValueError:
            raise MalformedRecord("n is not an int32") from None
        value = J.encode({"prev": fields[0], "curr": fields[1], "type": fields[2], "n": n})
        return SourceRecord(value, None)

    def extract(self, value: str) -> list[tuple[str, int]]:
        obj = J.parse_object(value)
        curr = J.str_field(obj, "curr")
        return [(curr, J.int_field(obj, "n"))]

    @property
    def splitter_sql(self) -> SplitterSQL:
        error = J.sql_error(J.sql_check("curr", "string") + J.sql_check("n", "integer"))
        tuples = J.sql_tuples_when_ok(
            error, J.sql_one_tuple(J.sql_get("curr", "string"), J.sql_get("n", "bigint"))
        )
        return SplitterSQL(tuples=tuples, error=error)
