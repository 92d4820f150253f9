"""Strict CSV reading shared by every upstream file: UTF-8 (BOM tolerated), RFC 4180 quoting,
LF or CRLF, columns found by name through the config's column mapping, extra columns listed.

The file is tokenised by the standard library's strict RFC 4180 reader (or, for text with no
quote at all, by plain splitting, which gives the same cells), bounded before anything grows
with it (columns, rows, field size), and kept as columns: our field name -> the raw text of
every data row, in file order. Every check is then made one column at a time in plain Python
(no pandas: importing it costs a job more than the parse it would speed up); a value a check
refuses is passed through the scalar parse_* helper of the same rule, so that each refusal
carries the one message (file, row, field, expected, found) of that rule.

All patterns are full-match (``re.fullmatch``): ``$`` would accept a value that ends in a
newline."""

from __future__ import annotations

import csv
import gc
import io
import itertools
import math
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from operator import itemgetter
from typing import NamedTuple

from afbench.core.budget import MAX_USD, USD_RULE
from afbench.core.errors import AfbenchError, Problem

MAX_FIELD = 100_000  # characters in one cell
MAX_COLUMNS = 1_000  # the widest upstream file has 13
MAX_ROWS = 1_000_000  # data rows; the release has 341 tasks (the benchmarks go to 34,100)
MAX_SHOWN = 2_000  # characters of a header quoted in a message
INT_LIMIT = 2**63 - 1  # a count beyond this is never real (and Python's int() caps digits)
INT_DIGITS = len(str(INT_LIMIT))
INTEGER = re.compile(r"[0-9]+")
DECIMAL = re.compile(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
FIRST_ROW = 2  # spreadsheet numbering: the header is row 1


class Table(NamedTuple):
    file: str
    header: list[str]
    columns: dict[str, list[str]]  # our field names -> raw text of every data row
    length: int  # data rows
    extra_columns: list[str]

    @property
    def row_numbers(self) -> range:
        """Each data row's number as a spreadsheet shows it (the header is row 1)."""
        return range(FIRST_ROW, FIRST_ROW + self.length)

    @property
    def rows(self) -> list[dict[str, str]]:
        names = list(self.columns)
        return [dict(zip(names, cells, strict=True)) for cells in self.cells()]

    def cells(self) -> list[tuple[str, ...]]:
        """Each data row's mapped cells, in mapping order."""
        if not self.columns:
            return [()] * self.length
        return list(zip(*self.columns.values(), strict=True))


def closest(name: str, candidates: list[str]) -> list[str]:
    import difflib

    return difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)


def _shown(header: list[str]) -> object:
    """The header as quoted in a message, cut short when it is huge."""
    text = repr(header)
    if len(text) <= MAX_SHOWN:
        return header
    return f"{text[:MAX_SHOWN]}... ({len(header)} columns)"


def _too_wide(file: str, width: int) -> AfbenchError:
    return AfbenchError(
        "too many columns in header",
        file=file,
        row=1,
        expected=f"at most {MAX_COLUMNS}",
        found=width,
    )


def _too_long(file: str) -> AfbenchError:
    return AfbenchError(
        "too many rows", file=file, expected=f"at most {MAX_ROWS} data rows", found="more"
    )


class _Cells(NamedTuple):
    """Every cell of a file, row after row, each row followed by one marker cell."""

    flat: list[str]
    width: int
    lines: int  # the header included

    def column(self, position: int) -> list[str]:
        return self.flat[self.width + 1 + position :: self.width + 1]


def _split_plain(text: str, file: str) -> _Cells | None:
    """Text without a quote character, a blank line or a lone CR, whose every line has the
    header's number of fields: its cells by plain splitting, which is what the strict reader
    gives for such text, many times faster. None for any other text: the strict reader reads
    it (and words any refusal)."""
    if '"' in text or not text:
        return None
    if "\r" in text:
        if text.count("\r") != text.count("\r\n"):
            return None
        text = text.replace("\r\n", "\n")
    text = text.removesuffix("\n")
    if not text or text.startswith("\n") or text.endswith("\n") or "\n\n" in text:
        return None
    lines = text.count("\n") + 1
    header_end = text.find("\n")
    width = text.count(",", 0, header_end if header_end >= 0 else len(text)) + 1
    if width > MAX_COLUMNS:
        return None  # the strict reader refuses it after reading the header alone
    if lines - 1 > MAX_ROWS:
        raise _too_long(file)
    if max(map(len, text.split("\n"))) > MAX_FIELD:
        return None  # a line this long may hold a cell over the limit
    # Every line end becomes a cell of its own, a NUL (never in the text: refused before), so
    # that one split gives every cell; then if every (width + 1)-th cell is a NUL, and there
    # are as many cells as that needs, every line has the header's width.
    flat = (text + "\n").replace("\n", ",\x00,").split(",")
    flat.pop()  # the empty cell after the last NUL
    if len(flat) != lines * (width + 1) or flat[width :: width + 1].count("\x00") != lines:
        return None
    return _Cells(flat, width, lines)


def _tokenise(text: str, file: str) -> tuple[list[str], list[list[str]]]:
    old_limit = csv.field_size_limit(MAX_FIELD)
    header: list[str] = []
    body: list[list[str]] = []
    try:
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        header = next(reader, [])
        if len(header) > MAX_COLUMNS:
            raise _too_wide(file, len(header))
        body.extend(itertools.islice(reader, MAX_ROWS + 1))
    except csv.Error as exc:
        # the row the reader stopped in: the header, or the one after the rows it read
        row = len(body) + FIRST_ROW if header else 1
        if "field larger than field limit" in str(exc):
            raise _cell_too_large(text, file) from None
        raise AfbenchError(
            f"malformed CSV: {exc}",
            file=file,
            row=row,
            expected="RFC 4180 CSV",
            found=f"line {reader.line_num} of the file",
        ) from None
    finally:
        csv.field_size_limit(old_limit)
    if len(body) > MAX_ROWS:
        raise _too_long(file)
    return header, body


def _cell_too_large(text: str, file: str) -> AfbenchError:
    """The first cell over MAX_FIELD characters, found by reading the text again without the
    limit (only on this refusal): its row, its column's name and its size."""
    old_limit = csv.field_size_limit(sys.maxsize)
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header: list[str] = []
        for row, cells in enumerate(reader, start=1):
            header = header or cells
            for position, cell in enumerate(cells):
                if len(cell) > MAX_FIELD:
                    named = header[position] if row > 1 and position < len(header) else None
                    return AfbenchError(
                        "a cell larger than the cell limit",
                        file=file,
                        row=row,
                        field=named if named is not None else f"column {position + 1}",
                        expected=f"at most {MAX_FIELD:,} characters",
                        found=f"{len(cell):,} characters",
                    )
    except csv.Error:
        pass
    finally:
        csv.field_size_limit(old_limit)
    return AfbenchError(  # pragma: no cover - the first reading found it
        "a cell larger than the cell limit", file=file, expected=f"at most {MAX_FIELD:,} characters"
    )


@contextmanager
def paused_gc():
    """No cyclic garbage collection while hundreds of thousands of cells (acyclic strings and
    lists) are made: the collector would otherwise walk them again and again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
    plain = _split_plain(text, file)
    if plain is not None:
        raw_header, body = plain.flat[: plain.width], None
    else:
        raw_header, body = _tokenise(text, file)
    del text
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
            expected="each column once",
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
    position = {name: i for i, name in enumerate(header)}
    if body is None:
        columns = {ours: plain.column(position[theirs]) for ours, theirs in mapping.items()}
        length = plain.lines - 1
    else:
        wrong = [(number, len(r)) for number, r in enumerate(body, FIRST_ROW) if len(r) != width]
        if wrong:
            raise AfbenchError(
                problems=[
                    Problem(
                        "wrong number of fields", file=file, row=row, expected=width, found=found
                    )
                    for row, found in wrong
                ]
            )
        columns = {
            ours: list(map(itemgetter(position[theirs]), body)) for ours, theirs in mapping.items()
        }
        length = len(body)
    mapped = set(mapping.values())
    return Table(file, header, columns, length, [h for h in header if h not in mapped])


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
    top = INT_LIMIT if maximum is None else maximum
    value = int(text) if len(text.lstrip("0")) <= INT_DIGITS else top + 1
    if value < minimum or value > top:
        bound = f"{minimum}..{maximum}" if maximum is not None else f">= {minimum}"
        if value > INT_LIMIT:
            bound = f"{minimum}..{maximum if maximum is not None else INT_LIMIT}"
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
    if not value <= MAX_USD:
        raise AfbenchError(
            "cost out of range" if math.isfinite(value) else "number is not finite",
            file=file,
            row=row,
            field=field,
            expected=USD_RULE,
            found=text,
        )
    return value


def require_text(text: str, *, file: str, row: int, field: str) -> str:
    if not text.strip():
        raise AfbenchError(
            "empty value", file=file, row=row, field=field, expected="a non-empty value"
        )
    return text


# Column-wise forms of the rules above, on one column's texts with the row number of each
# (`rows[i]` for `texts[i]`). Each returns the parsed values (None where refused), or which
# rows are acceptable, and appends (row, order, Problem) for every refused value to `found`,
# the Problem made by the scalar helper of the same rule. Low-cardinality columns are checked
# once per distinct value.

Found = list[tuple[int, int, Problem]]


def per_distinct(texts: list[str], parse: Callable[[str], object]) -> list:
    """[parse(text) for text in texts], parsing each distinct value once when few are."""
    distinct = dict.fromkeys(texts)
    if len(distinct) > len(texts) // 4:
        return list(map(parse, texts))
    for text in distinct:
        distinct[text] = parse(text)
    return list(map(distinct.__getitem__, texts))


def _refuse(
    found: Found,
    order: int,
    texts: list[str],
    rows: Sequence[int],
    bad: list[int],
    check: Callable[[str, int, int], object],
) -> None:
    """The scalar rule's own problem for each refused position."""
    for i in bad:
        row = rows[i]
        try:
            check(texts[i], row, i)
        except AfbenchError as exc:
            found.extend((row, order, problem) for problem in exc.problems)
        else:  # the column-wise rule and the scalar one disagree: never accept silently
            raise AssertionError(f"row {row}: {texts[i]!r} passed the scalar check")


def int_column(
    texts: list[str],
    rows: Sequence[int],
    found: Found,
    order: int,
    *,
    file: str,
    field: str,
    minimum: int = 0,
    maximum: list[int] | None = None,
) -> list[int | None]:
    """Whole numbers, digits only, minimum <= value (<= maximum, one bound per row). Python
    ints: a cell of 30 digits is out of range, never wrapped around."""
    match = INTEGER.fullmatch

    def parse(text: str) -> int | None:
        if not match(text) or len(text.lstrip("0")) > INT_DIGITS:
            return None
        value = int(text)
        return value if minimum <= value <= INT_LIMIT else None

    values = per_distinct(texts, parse)
    if maximum is None:
        bad = [i for i, value in enumerate(values) if value is None]
    else:
        bad = [
            i
            for i, (value, top) in enumerate(zip(values, maximum, strict=True))
            if value is None or value > top
        ]
    if bad:
        _refuse(
            found,
            order,
            texts,
            rows,
            bad,
            lambda text, row, i: parse_int(
                text,
                file=file,
                row=row,
                field=field,
                minimum=minimum,
                maximum=None if maximum is None else maximum[i],
            ),
        )
        for i in bad:
            values[i] = None
    return values


def cost_column(
    texts: list[str], rows: Sequence[int], found: Found, order: int, *, file: str, field: str
) -> list[float | None]:
    """Non-negative decimals up to MAX_USD."""
    if all(map(DECIMAL.fullmatch, texts)):
        values = list(map(float, texts))
        if not values or max(values) <= MAX_USD:
            return values
    match = DECIMAL.fullmatch
    values = [float(text) if match(text) else None for text in texts]
    bad = [i for i, value in enumerate(values) if value is None or not value <= MAX_USD]
    if bad:
        _refuse(
            found,
            order,
            texts,
            rows,
            bad,
            lambda text, row, i: parse_cost(text, file=file, row=row, field=field),
        )
        for i in bad:
            values[i] = None
    return values


def text_column(
    texts: list[str], rows: Sequence[int], found: Found, order: int, *, file: str, field: str
) -> None:
    """Non-empty text (not only white space)."""
    if all(map(str.strip, texts)):
        return
    bad = [i for i, text in enumerate(texts) if not text.strip()]
    _refuse(
        found,
        order,
        texts,
        rows,
        bad,
        lambda text, row, i: require_text(text, file=file, row=row, field=field),
    )


def name_column(
    texts: list[str],
    rows: Sequence[int],
    found: Found,
    order: int,
    *,
    file: str,
    field: str,
    max_length: int = 200,
) -> list[bool]:
    """Values that become path components or argv elements (fsutil.check_name, column-wise);
    returns which rows are acceptable."""
    from afbench.core.fsutil import SAFE_NAME, check_name

    match = SAFE_NAME.fullmatch
    ok = per_distinct(
        texts, lambda text: bool(match(text)) and ".." not in text and len(text) <= max_length
    )
    if False in ok:
        bad = [i for i, good in enumerate(ok) if not good]
        _refuse(
            found,
            order,
            texts,
            rows,
            bad,
            lambda text, row, i: check_name(text, field, file=file, row=row),
        )
    return ok


def first_rows(values: list[str], keep: list[bool] | None = None) -> list[tuple[int, int]]:
    """(position, position of the value's first occurrence) for every position that repeats an
    earlier value (among the `keep` positions)."""
    if keep is None and len(set(values)) == len(values):
        return []
    first: dict[str, int] = {}
    repeats = []
    for i, value in enumerate(values):
        if keep is not None and not keep[i]:
            continue
        at = first.setdefault(value, i)
        if at != i:
            repeats.append((i, at))
    return repeats


def raise_found(found: Found, after: Sequence[Problem] = ()) -> None:
    """Raise every problem, in row order and, within a row, in the order of the checks."""
    if found or after:
        found.sort(key=itemgetter(0, 1))
        raise AfbenchError(problems=[p for _, _, p in found] + list(after))
