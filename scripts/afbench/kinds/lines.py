"""Reading an artifact by its layout: a kind whose last field is a long list of flat records
(a model import's per-task results, a task table's rows) is written by fsutil.json_bytes one
record a line, each record's fields in the declared order. A file in exactly that form (no
escape anywhere, every value of the form afbench writes) is checked by one regular expression
per record line, made from the declaration (each field's name in its place, a byte pattern for
its declared type and least value), instead of a Python call per object of the strict reader;
any other text goes to the strict reader. A line the expression matches is valid JSON with
distinct keys, finite numbers and no escapes, of its declared types, so what is accepted and
what is read are the same either way (tests/imports/test_official.py holds the two readers to
that)."""

from __future__ import annotations

import json
import re
from functools import cache

from afbench.core.errors import AfbenchError

from . import Field, Kind, ListOf, Shape

TEXT = rb'[^"\\\x00-\x1f]*+'  # a JSON string's characters that need no escape
_DIGITS = rb"(?:0|[1-9][0-9]{0,17}+)"  # at most 18 digits: never refused as too long
_FRACTION = rb"(?:\.[0-9]++)?(?:[eE][+-]?[0-9]{1,2}+)?"  # a 2-digit exponent: finite
# a value's pattern by declared type and least value: each matches only values the strict
# reader accepts (what it does not match goes to the strict reader)
VALUE = {
    (str, None): b'"' + TEXT + b'"',
    (bool, None): b"(?:true|false)",
    (int, None): b"-?+" + _DIGITS,
    (int, 0): _DIGITS,
    (int, 1): rb"[1-9][0-9]{0,17}+",
    (float, None): b"-?+" + _DIGITS + _FRACTION,
    (float, 0): _DIGITS + _FRACTION,
}
INDENT = b"    "


def has_pattern(field: Field) -> bool:
    return (field.type, field.minimum) in VALUE and not field.values and not field.optional


def value_pattern(field: Field) -> bytes:
    pattern = VALUE[field.type, field.minimum]
    return b"(?:null|" + pattern + b")" if field.null else pattern


def record_line(pieces: list[bytes]) -> bytes:
    """One record line of `pieces` (each `"name": value`), without its end."""
    return INDENT + rb"\{" + b", ".join(pieces) + rb"\}"


def record_pattern(pieces: list[bytes]) -> re.Pattern:
    """One record line, anchored at a line start and running to the line's end, so that as
    many matches as lines cover the records exactly (for a reader that takes groups)."""
    return re.compile(b"^" + record_line(pieces) + rb"(?:,\n|\Z)", re.M)


def records_pattern(pieces: list[bytes]) -> re.Pattern:
    """All the record lines at once: one match over the whole of them, nothing allocated."""
    line = record_line(pieces)
    return re.compile(b"(?:" + line + rb",\n)*+" + line)


def field_pieces(shape: Shape) -> list[bytes]:
    return [b'"' + f.name.encode() + b'": ' + value_pattern(f) for f in shape.fields]


@cache
def layout(kind: Kind) -> tuple[str, re.Pattern] | None:
    """The name of the kind's last field and the expression of its record lines, when that
    field is a list of records whose every field has a byte pattern; else None."""
    last = kind.fields[-1]
    if not isinstance(last.type, ListOf) or not isinstance(last.type.of, Shape):
        return None
    shape = last.type.of
    if last.null or last.type.null or not all(has_pattern(f) for f in shape.fields):
        return None
    return last.name, records_pattern(field_pieces(shape))


def split(kind: Kind, data: bytes, file: str) -> tuple[dict, int, int] | None:
    """The head of an artifact laid out as afbench writes it (every field but the last, read
    by the strict reader and checked against the declaration with an empty list in the last
    field's place: JSON's grammar makes the whole text valid if and only if that is, the
    records being valid values), and where its record lines start and end; None for any
    other text."""
    from afbench.core.fsutil import parse_json_bytes

    name = kind.fields[-1].name
    start_marker = b'\n  "' + name.encode() + b'": [\n'
    end_marker = b"\n  ]\n}\n"
    if b"\\" in data:
        return None
    if not data.isascii():
        try:
            data.decode("utf-8-sig")
        except UnicodeDecodeError:
            return None
    start = data.rfind(start_marker)
    if start < 0 or not data.endswith(end_marker):
        return None
    try:
        head = parse_json_bytes(
            data[:start] + b'\n  "' + name.encode() + b'": []\n}\n', file, kind.what
        )
        kind.check(head, file)
    except AfbenchError:
        return None  # the strict reader of the whole text words the refusal
    return head, start + len(start_marker), len(data) - len(end_marker)


def lines_match(pattern: re.Pattern, data: bytes, first: int, end: int) -> list | None:
    """Every record line's match (its groups), or None unless every line is one."""
    found = pattern.findall(data, first, end)  # ^ holds at `first`: a line starts there
    if len(found) != data.count(b"\n", first, end) + 1:
        return None
    return found


def parse(kind: Kind, data: bytes, file: str) -> dict:
    """The artifact in `data` (read from `file`), through its declaration: by its layout when
    afbench wrote it so, else by the strict reader; the same record and the same refusals
    either way."""
    from afbench.core.fsutil import parse_json_bytes

    found = layout(kind)
    if found is not None:
        name, pattern = found
        parts = split(kind, data, file)
        if parts is not None:
            head, first, end = parts
            if pattern.fullmatch(data, first, end) is not None:
                head[name] = json.loads(b"[" + data[first:end] + b"]")
                return head
    return kind.check(parse_json_bytes(data, file, kind.what), file)
