"""JSON message encoding and the splitter's JSON rules, in Python and in Spark SQL.

The reference's producers send Gson JSON and its splitters parse it with Jackson. Our streaming
splitter parses with Spark's VARIANT functions (Spark >= 4.0), because they are strict in the same
places as Python's ``json`` module and expose each field's JSON type:

==========================================  ===================  ===================================
input                                        Python twin           Spark SQL (``try_parse_json``)
==========================================  ===================  ===================================
not JSON, empty, NaN, duplicate keys,        ``invalid json``      NULL -> ``invalid json``
raw control chars, lone surrogate escape
top-level value not an object                ``invalid json``      does not start with ``{``
trailing bytes after the first value         ignored               ignored
field absent or ``null``                     ``missing field 'f'`` ``schema_of_variant`` NULL / VOID
field of another JSON type                   ``field 'f' is not    ``schema_of_variant`` differs
                                             a string`` ...
==========================================  ===================  ===================================

(``from_json`` would have been laxer: it accepts single quotes, NaN and duplicate keys, and casts
any scalar to a string, so its "malformed" would differ from Python's.)

Messages are written compact (``{"country":"Turkey"}``), UTF-8, non-ASCII unescaped, like Gson;
unlike Gson we do not escape ``<>&='`` as ``\\u003c`` etc. Parsers see the same strings either way.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from .base import MalformedRecord

INVALID_JSON = "invalid json"
JSON_WHITESPACE = " \t\n\r"
"""What JSON allows around a value (RFC 8259); an NBSP is not among it."""

# ---------------------------------------------------------------------------------------------
# Encoding


_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode(obj: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON, like Gson. A lone surrogate (from a ``\\ud83d`` escape in a source
    file) becomes ``?``, which is what Java's UTF-8 encoder writes for it."""
    return _encoder.encode(obj).encode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------
# Strict parsing (the Python twin of try_parse_json)


MAX_DEPTH = 1000
"""Spark's JSON parser (Jackson's read constraints) takes values nested up to 1,000 levels."""
MAX_NUMBER_DIGITS = 1000
"""... numbers of up to 1,000 digits: integer (a lone leading 0 not counted), fraction and exponent
digits together, the sign not counted."""
MAX_NAME_CHARS = 50_000
"""... and field names of up to 50,000 characters, Java's: UTF-16 code units, so that a character
above U+FFFF counts two (`_java_length`)."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard constant {name}")


def _object_no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate key")
    if any(len(name) > MAX_NAME_CHARS // 2 and _java_length(name) > MAX_NAME_CHARS for name in obj):
        raise ValueError("field name too long")
    return obj


def _java_length(text: str) -> int:
    """`text`'s length as Java's `String.length()` counts it: UTF-16 code units (a character above
    U+FFFF is two; a lone surrogate, which a `\\uD800` escape gives, one)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


_decoder = json.JSONDecoder(object_pairs_hook=_object_no_duplicates, parse_constant=_reject_constant)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_STRING_OR_NUMBER = re.compile(r'"(?:[^"\\]|\\.)*"|-?(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE][+-]?([0-9]+))?',
                               re.DOTALL)
_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def _too_long_number(text: str) -> bool:
    """Whether `text` holds a number of more than MAX_NUMBER_DIGITS digits (outside its strings)."""
    for m in _STRING_OR_NUMBER.finditer(text):
        whole, fraction, exponent = m.group(1), m.group(2), m.group(3)
        if whole is not None:
            digits = (0 if whole == "0" else len(whole)) + len(fraction or "") + len(exponent or "")
            if digits > MAX_NUMBER_DIGITS:
                return True
    return False


def _depth(text: str) -> int:
    """How deep `text`'s arrays and objects nest (outside its strings)."""
    depth = deepest = 0
    for m in _STRING_OR_BRACKET.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def _has_lone_surrogate(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def parse_object(value: str) -> dict[str, Any]:
    """Parse one raw record as a JSON object, or raise ``MalformedRecord("invalid json")``, with the
    limits of Spark's parser (MAX_DEPTH, MAX_NUMBER_DIGITS, MAX_NAME_CHARS) rather than Python's (its
    recursion limit, about 990 levels; 4,300-digit integers; any name)."""
    text = value.lstrip(JSON_WHITESPACE)
    if not text.startswith("{"):
        raise MalformedRecord(INVALID_JSON)
    if len(text) > MAX_NUMBER_DIGITS and _too_long_number(text):
        raise MalformedRecord(INVALID_JSON)
    deep = text.count("[") + text.count("{") > MAX_DEPTH // 2
    if deep and _depth(text) > MAX_DEPTH:
        raise MalformedRecord(INVALID_JSON)
    limit = sys.getrecursionlimit()
    if deep:  # Python's decoder recurses once per level, and so does the surrogate check's encoder
        sys.setrecursionlimit(limit + 3 * MAX_DEPTH)
    try:
        try:
            obj, _end = _decoder.raw_decode(text)
        except (ValueError, RecursionError):
            raise MalformedRecord(INVALID_JSON) from None
        # Pairs of surrogate escapes decode to one character; only lone ones are invalid (as in Spark).
        if _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(obj):
            raise MalformedRecord(INVALID_JSON)
    finally:
        if deep:
            sys.setrecursionlimit(limit)
    return obj


def missing(name: str) -> str:
    return f"missing field '{name}'"


def not_a(name: str, what: str) -> str:
    return f"field '{name}' is not {what}"


def str_field(obj: dict[str, Any], name: str) -> str:
    v = obj.get(name)
    if v is None:
        raise MalformedRecord(missing(name))
    if not isinstance(v, str):
        raise MalformedRecord(not_a(name, "a string"))
    return v


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def int_field(obj: dict[str, Any], name: str) -> int:
    v = obj.get(name)
    if v is None:
        raise MalformedRecord(missing(name))
    if type(v) is not int or not INT64_MIN <= v <= INT64_MAX:
        raise MalformedRecord(not_a(name, "an integer"))
    return v


def str_array_field(obj: dict[str, Any], name: str) -> list[str]:
    v = obj.get(name)
    if v is None:
        raise MalformedRecord(missing(name))
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise MalformedRecord(not_a(name, "an array of strings"))
    return v


# ---------------------------------------------------------------------------------------------
# Spark SQL builders (built-in functions only). They read ``parsed``, the record as a VARIANT:
# by default ``value_json``, the record parsed once (``SplitterSQL.prelude``), because
# try_parse_json written inline runs once per use in the CASE.


def sql_str(s: str) -> str:
    """A Spark SQL string literal (default parser: backslash escapes)."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


V = "value_json"
PARSE = "try_parse_json(value)"
"""The record parsed inline, for rules whose prelude is not ``value_json``."""


def sql_invalid(parsed: str = V) -> str:
    return f"({parsed} IS NULL OR NOT regexp_like(value, '^[ \\\\t\\\\n\\\\r]*[{{]'))"


def sql_type(name: str, parsed: str = V) -> str:
    """The JSON type of field ``name``: NULL when absent, 'VOID' when null, 'STRING', 'BIGINT'..."""
    return f"schema_of_variant(try_variant_get({parsed}, {sql_str('$.' + name)}))"


def sql_get(name: str, sql_type_name: str, parsed: str = V) -> str:
    return f"try_variant_get({parsed}, {sql_str('$.' + name)}, {sql_str(sql_type_name)})"


def sql_check(name: str, kind: str, parsed: str = V) -> list[tuple[str, str]]:
    """(condition, reason) pairs that reject field ``name`` unless it is of ``kind``
    (``string``, ``integer`` or ``string_array``), mirroring ``str_field``/``int_field``/...
    """
    t = sql_type(name, parsed)
    absent = (f"coalesce({t}, 'VOID') = 'VOID'", missing(name))
    if kind == "string":
        return [absent, (f"{t} <> 'STRING'", not_a(name, "a string"))]
    if kind == "integer":
        return [absent, (f"{t} <> 'BIGINT'", not_a(name, "an integer"))]
    if kind == "string_array":
        arr = sql_get(name, "array<string>", parsed)
        bad = f"({t} NOT IN ('ARRAY<STRING>', 'ARRAY<VOID>') OR exists({arr}, x -> x IS NULL))"
        return [absent, (bad, not_a(name, "an array of strings"))]
    raise ValueError(kind)


def sql_error(checks: list[tuple[str, str]], parsed: str = V) -> str:
    """``CASE`` over ``invalid json`` then the checks in order, like the Python twin."""
    whens = [f"WHEN {sql_invalid(parsed)} THEN {sql_str(INVALID_JSON)}"]
    whens += [f"WHEN {cond} THEN {sql_str(reason)}" for cond, reason in checks]
    return "CASE " + " ".join(whens) + " ELSE NULL END"


def sql_tuples_when_ok(error_sql: str, array_sql: str) -> str:
    return f"CASE WHEN ({error_sql}) IS NULL THEN {array_sql} ELSE NULL END"


def sql_one_tuple(key_sql: str, count_sql: str = "CAST(1 AS BIGINT)") -> str:
    return f"array(named_struct('key', {key_sql}, 'count', CAST({count_sql} AS BIGINT)))"


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def sql_canonical_string(name: str) -> str:
    """``'"' || s`` when the record is exactly ``{"<name>":"<s>"}`` with no quote, backslash or
    control character in ``s`` (the compact form ``encode`` writes), else ``''``.

    A JSON parser returns such an ``s`` verbatim, so a splitter may take the key from the text and
    parse only the other records; the leading quote tells the empty key from no match. Anchored
    with ``\\z``: Java's ``$`` would also match before a final line break. ``name`` must be an
    identifier (raises ``ValueError``), so that it needs no escaping in JSON or in the regex.
    """
    if not _IDENTIFIER.fullmatch(name):
        raise ValueError(f"not an identifier: {name!r}")
    regex = r'\A\{"' + name + r'":("[^"\\\x00-\x1f]*)"\}\z'
    return f"regexp_extract(value, {sql_str(regex)}, 1)"
