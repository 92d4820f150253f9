"""Strict CSV reading shared by every upstream file: UTF-8 (BOM tolerated), RFC 4180 quoting,
LF or CRLF, columns found by name through the config's column mapping, extra columns listed.

The file is tokenised by the standard library's strict RFC 4180 reader (pandas' own CSV
parsers are lenient: they pad short rows, accept text after a closing quote and stop at the
first bad row), and bounded before anything grows with it (columns, rows, field size). The
cells then become a pandas DataFrame of untouched Python strings (no type guessing, no NA
values), and every check is made column-wise; a value that fails a check is then passed through
the scalar parse_* helper of the same rule, so that each refusal carries the same message
(file, row, field, expected, found) whichever way it was found.

All patterns are full-match (``re.fullmatch`` / ``Series.str.fullmatch``): ``$`` would accept a
value that ends in a newline."""

from __future__ import annotations

import csv
import io
import itertools
import math
import re
from collections import Counter
from collections.abc import Callable
from operator import itemgetter
from typing import TYPE_CHECKING, NamedTuple

from .errors import AfbenchError, Problem

if TYPE_CHECKING:  # pandas is imported when a CSV is read: commands without one stay light
    import numpy as np
    import pandas as pd

MAX_FIELD = 100_000  # characters in one cell
MAX_COLUMNS = 1_000  # the widest upstream file has 13
MAX_ROWS = 1_000_000  # data rows; the release has 341 tasks (the benchmarks go to 34,100)
MAX_SHOWN = 2_000  # characters of a header quoted in a message
INTEGER = re.compile(r"[0-9]+")
DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")


class Table(NamedTuple):
    file: str
    header: list[str]
    frame: pd.DataFrame  # our field names -> raw text (Python str, object dtype)
    extra_columns: list[str]

    @property
    def row_numbers(self) -> list[int]:
        """Spreadsheet numbering: the header is row 1 (the frame's index)."""
        return self.frame.index.tolist()

    @property
    def rows(self) -> list[dict[str, str]]:
        return self.frame.to_dict("records")


def closest(name: str, candidates: list[str]) -> list[str]:
    import difflib

    return difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)


def _shown(header: list[str]) -> object:
    """The header as quoted in a message, cut short when it is huge."""
    text = repr(header)
    if len(text) <= MAX_SHOWN:
        return header
    return f"{text[:MAX_SHOWN]}... ({len(header)} columns)"


def _tokenise(text: str, file: str) -> tuple[list[str], list[list[str]]]:
    old_limit = csv.field_size_limit(MAX_FIELD)
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        header = next(reader, [])
        if len(header) > MAX_COLUMNS:
            raise AfbenchError(
                "too many columns in header",
                file=file,
                row=1,
                expected=f"at most {MAX_COLUMNS}",
                found=len(header),
            )
        body = list(itertools.islice(reader, MAX_ROWS + 1))
    except csv.Error as exc:
        raise AfbenchError(f"malformed CSV: {exc}", file=file) from None
    finally:
        csv.field_size_limit(old_limit)
    if len(body) > MAX_ROWS:
        raise AfbenchError(
            "too many rows", file=file, expected=f"at most {MAX_ROWS} data rows", found="more"
        )
    return header, body


def read_table(data: bytes, file: str, mapping: dict[str, str]) -> Table:
    import numpy as np
    import pandas as pd

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AfbenchError(
            f"not UTF-8 text (invalid byte at offset {exc.start})", file=file
        ) from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise AfbenchError(f"NUL character on line {line}; not a text CSV", file=file, row=line)
    raw_header, body = _tokenise(text, file)
    if not any(raw_header):
        raise AfbenchError("empty file: no header row", file=file)
    header = [name.strip() for name in raw_header]
    counts = Counter(header)  # linear: a header of a million columns is refused above anyway
    duplicated = sorted(name for name, count in counts.items() if count > 1)
    if duplicated:
        raise AfbenchError(
            "duplicate column in header",
            file=file,
            row=1,
            field=duplicated[0],
            found=f"columns {_shown(header)}",
        )
    missing = [(ours, theirs) for ours, theirs in mapping.items() if theirs not in counts]
    if missing:
        raise AfbenchError(
            problems=[
                Problem(
                    f"mapped column '{theirs}' (our field '{ours}') is missing; actual "
                    f"columns: {_shown(header)}; closest: {closest(theirs, header) or 'none'}",
                    file=file,
                    row=1,
                    field=theirs,
                )
                for ours, theirs in missing
            ]
        )
    width = len(header)
    lengths = np.fromiter(map(len, body), dtype=np.int64, count=len(body))
    wrong = np.flatnonzero(lengths != width)
    if wrong.size:
        raise AfbenchError(
            problems=[
                Problem(
                    "wrong number of fields",
                    file=file,
                    row=int(i) + 2,
                    expected=width,
                    found=int(lengths[i]),
                )
                for i in wrong
            ]
        )
    position = {name: i for i, name in enumerate(header)}
    columns = {}
    for ours, theirs in mapping.items():
        values = np.empty(len(body), dtype=object)
        values[:] = list(map(itemgetter(position[theirs]), body))
        columns[ours] = values
    frame = pd.DataFrame(columns, index=pd.RangeIndex(2, len(body) + 2), copy=False)
    mapped = set(mapping.values())
    return Table(file, header, frame, [h for h in header if h not in mapped])


def parse_int(
    text: str, *, file: str, row: int, field: str, minimum: int = 0, maximum: int | None = None
) -> int:
    if not INTEGER.fullmatch(text):
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
    if not DECIMAL.fullmatch(text):
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


# Column-wise forms of the rules above. Each returns the parsed values (None where a value is
# refused) and appends (row, order, Problem) for every refused value, the Problem made by the
# scalar helper itself.

Found = list[tuple[int, int, Problem]]


def _refusals(
    found: Found, order: int, column: pd.Series, bad: np.ndarray, check: Callable[..., object]
) -> None:
    for row, text in zip(column.index[bad].tolist(), column.array[bad], strict=True):
        try:
            check(text, row)
        except AfbenchError as exc:
            found.extend((row, order, problem) for problem in exc.problems)
        else:  # the column-wise rule and the scalar one disagree: never accept silently
            raise AssertionError(f"{column.name} row {row}: {text!r} passed the scalar check")


def int_column(
    column: pd.Series,
    found: Found,
    order: int,
    *,
    file: str,
    minimum: int = 0,
    maximum: list[int] | None = None,
) -> list[int | None]:
    """Whole numbers, digits only, minimum <= value (<= maximum, one bound per row). Python
    ints, not int64: a cell of 30 digits is out of range, never wrapped around."""
    import numpy as np

    digits = column.str.fullmatch(INTEGER).to_numpy(dtype=bool)
    values = [int(text) if ok else None for text, ok in zip(column.array, digits, strict=True)]
    limits = [None] * len(values) if maximum is None else maximum
    ok = np.fromiter(
        (
            v is not None and v >= minimum and (top is None or v <= top)
            for v, top in zip(values, limits, strict=True)
        ),
        dtype=bool,
        count=len(values),
    )
    if not ok.all():
        at = dict(zip(column.index.tolist(), limits, strict=True))
        _refusals(
            found,
            order,
            column,
            ~ok,
            lambda text, row: parse_int(
                text, file=file, row=row, field=column.name, minimum=minimum, maximum=at[row]
            ),
        )
        for i in np.flatnonzero(~ok):
            values[i] = None
    return values


def cost_column(column: pd.Series, found: Found, order: int, *, file: str) -> list[float | None]:
    """Finite, non-negative decimals."""
    import numpy as np

    ok = column.str.fullmatch(DECIMAL).to_numpy(dtype=bool)
    values = [float(text) if good else None for text, good in zip(column.array, ok, strict=True)]
    finite = np.isfinite(np.array([math.inf if v is None else v for v in values], dtype=float))
    bad = ~(ok & finite)
    if bad.any():
        _refusals(
            found,
            order,
            column,
            bad,
            lambda text, row: parse_cost(text, file=file, row=row, field=column.name),
        )
        for i in np.flatnonzero(bad):
            values[i] = None
    return values


def text_column(column: pd.Series, found: Found, order: int, *, file: str) -> np.ndarray:
    """Non-empty text (not only white space); returns the mask of acceptable rows."""
    ok = (column.str.strip() != "").to_numpy(dtype=bool)
    if not ok.all():
        _refusals(
            found,
            order,
            column,
            ~ok,
            lambda text, row: require_text(text, file=file, row=row, field=column.name),
        )
    return ok


def name_column(
    column: pd.Series, found: Found, order: int, *, file: str, max_length: int = 200
) -> np.ndarray:
    """Values that become path components or argv elements (fsutil.check_name, column-wise);
    returns the mask of acceptable rows."""
    from .fsutil import SAFE_NAME, check_name

    ok = (
        column.str.fullmatch(SAFE_NAME)
        & ~column.str.contains("..", regex=False)
        & (column.str.len() <= max_length)
    ).to_numpy(dtype=bool)
    if not ok.all():
        _refusals(
            found,
            order,
            column,
            ~ok,
            lambda text, row: check_name(text, column.name, file=file, row=row),
        )
    return ok


def first_rows(column: pd.Series, keep: np.ndarray | None = None) -> tuple[np.ndarray, list]:
    """For each row: is it a repeat of an earlier value (among `keep` rows), and the row number
    of that value's first occurrence."""
    import numpy as np
    import pandas as pd

    values = column if keep is None else column[keep]
    codes, _ = pd.factorize(values.to_numpy(dtype=object), use_na_sentinel=False)
    first = np.full(codes.max() + 1 if codes.size else 0, -1, dtype=np.int64)
    first[codes[::-1]] = np.arange(codes.size - 1, -1, -1)  # the earliest write wins
    positions = first[codes]
    repeat = positions != np.arange(codes.size)
    rows = values.index.to_numpy()
    repeat_full = np.zeros(len(column), dtype=bool)
    first_full = np.zeros(len(column), dtype=np.int64)
    where = np.arange(len(column)) if keep is None else np.flatnonzero(keep)
    repeat_full[where] = repeat
    first_full[where] = rows[positions]
    return repeat_full, first_full.tolist()


def raise_found(found: Found, after: list[Problem] = ()) -> None:
    """Raise every problem, in row order and, within a row, in the order of the checks."""
    if found or after:
        found.sort(key=itemgetter(0, 1))
        raise AfbenchError(problems=[p for _, _, p in found] + list(after))
