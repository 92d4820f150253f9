"""Strict CSV reading shared by every upstream file: UTF-8 (BOM tolerated), RFC 4180 quoting,
LF or CRLF, columns found by name through the config's column mapping, extra columns listed."""

from __future__ import annotations

import csv
import io
import math
import re
from typing import NamedTuple

from .errors import AfbenchError, Problem

MAX_FIELD = 100_000
INTEGER = re.compile(r"^[0-9]+$")
DECIMAL = re.compile(r"^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$")


class Table(NamedTuple):
    file: str
    header: list[str]
    rows: list[dict[str, str]]  # our field names -> raw text
    row_numbers: list[int]  # spreadsheet numbering: the header is row 1
    extra_columns: list[str]


def closest(name: str, candidates: list[str]) -> list[str]:
    import difflib

    return difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)


def read_table(data: bytes, file: str, mapping: dict[str, str]) -> Table:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AfbenchError(
            f"not UTF-8 text (invalid byte at offset {exc.start})", file=file
        ) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise AfbenchError(f"NUL character on line {line}; not a text CSV", file=file, row=line)
    old_limit = csv.field_size_limit(MAX_FIELD)
    try:
        records = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise AfbenchError(f"malformed CSV: {exc}", file=file) from None
    finally:
        csv.field_size_limit(old_limit)
    if not records or not any(records[0]):
        raise AfbenchError("empty file: no header row", file=file)
    header = [name.strip() for name in records[0]]
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        raise AfbenchError(
            "duplicate column in header",
            file=file,
            row=1,
            field=duplicated[0],
            found=f"columns {header}",
        )
    missing = [(ours, theirs) for ours, theirs in mapping.items() if theirs not in header]
    if missing:
        raise AfbenchError(
            problems=[
                Problem(
                    f"mapped column '{theirs}' (our field '{ours}') is missing; actual "
                    f"columns: {header}; closest: {closest(theirs, header) or 'none'}",
                    file=file,
                    row=1,
                    field=theirs,
                )
                for ours, theirs in missing
            ]
        )
    index = {ours: header.index(theirs) for ours, theirs in mapping.items()}
    mapped = set(mapping.values())
    rows, numbers, problems = [], [], []
    for number, record in enumerate(records[1:], start=2):
        if len(record) != len(header):
            problems.append(
                Problem(
                    "wrong number of fields",
                    file=file,
                    row=number,
                    expected=len(header),
                    found=len(record),
                )
            )
            continue
        rows.append({ours: record[i] for ours, i in index.items()})
        numbers.append(number)
    if problems:
        raise AfbenchError(problems=problems)
    return Table(file, header, rows, numbers, [h for h in header if h not in mapped])


def parse_int(
    text: str, *, file: str, row: int, field: str, minimum: int = 0, maximum: int | None = None
) -> int:
    if not INTEGER.match(text):
        raise AfbenchError(
            "not a whole number",
            file=file,
            row=row,
            field=field,
            expected="digits only",
            found=text,
        )
    value = int(text)
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
        raise AfbenchError(
            "number out of range", file=file, row=row, field=field, expected=bound, found=text
        )
    return value


def parse_cost(text: str, *, file: str, row: int, field: str) -> float:
    if not DECIMAL.match(text):
        raise AfbenchError(
            "not a finite, non-negative number",
            file=file,
            row=row,
            field=field,
            expected="a decimal such as 12.5",
            found=text,
        )
    value = float(text)
    if not math.isfinite(value):
        raise AfbenchError("number is not finite", file=file, row=row, field=field, found=text)
    return value


def require_text(text: str, *, file: str, row: int, field: str) -> str:
    if not text.strip():
        raise AfbenchError(
            "empty value", file=file, row=row, field=field, expected="a non-empty value"
        )
    return text
