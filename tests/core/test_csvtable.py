"""The release-CSV table (afbench.core.csvtable): the fast path reads exactly what the strict reader
reads, mutated or harmlessly changed files read the same or give our error, and a table too long is
refused."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afbench.core import csvtable
from afbench.core.errors import AfbenchError
from afbench.tasks.catalog import parse_manifest

import properties as prop
from conftest import (
    EXAMPLES_150,
    examples,
)


@EXAMPLES_150
@given(which=st.integers(0, 2), mutation=prop.mutations)
def test_mutated_csv_is_the_same_or_our_error(which, mutation):
    assert prop.check_csv_mutation(which, mutation) in ("same", "error", "changed-valid")


@EXAMPLES_150
@given(
    which=st.integers(0, 2),
    seed=st.integers(0, 100),
    crlf=st.booleans(),
    bom=st.booleans(),
    quote_all=st.booleans(),
    extra=st.booleans(),
)
def test_harmless_changes_give_the_clean_result(which, seed, crlf, bom, quote_all, extra):
    files = [prop.MANIFEST, prop.SOURCES, prop.RESULTS]
    files[which] = prop.harmless_variant(files[which], seed, crlf, bom, quote_all, extra)
    assert prop.read_all(*files) == prop.CLEAN


EXAMPLES_300 = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def outcome(read, data: bytes):
    try:
        table = read(data)
    except AfbenchError as exc:
        return "error", [str(p) for p in exc.problems]
    return "table", table.header, table.cells(), table.extra_columns


cell = st.text(alphabet="ab \x0bé\u2028", max_size=3)


row = st.lists(cell, min_size=2, max_size=2) | st.lists(cell, min_size=1, max_size=3)


rows_of_cells = st.lists(row.map(",".join), max_size=6).flatmap(
    lambda rows: st.sampled_from(["\n", "\r\n", "\r"]).map(
        lambda end: end.join(rows) + end * (len(rows) % 2)
    )
)


@EXAMPLES_300
@given(
    text=st.text(alphabet='ab,"\r\n\x0b \u2028é', max_size=60) | rows_of_cells,
    mapping=st.sampled_from([{"x": "a"}, {"x": "a", "y": "b"}, {"y": "b", "x": "a"}, {}]),
)
def test_plain_split_reads_what_the_strict_reader_reads(text, mapping):
    data = ("a,b\n" + text).encode()
    fast = outcome(lambda d: csvtable.read_table(d, "F", mapping), data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(csvtable, "_split_plain", lambda text, file: None)
        strict = outcome(lambda d: csvtable.read_table(d, "F", mapping), data)
    assert fast == strict


@pytest.mark.parametrize("quoted", [False, True])
def test_too_many_rows_are_refused(monkeypatch, quoted):
    monkeypatch.setattr(csvtable, "MAX_ROWS", 2)
    data = prop.MANIFEST if quoted else prop.MANIFEST.replace(b'"Thm 2, part b"', b"Thm 2")
    with pytest.raises(AfbenchError, match=r"M: too many rows \(expected at most 2 data rows"):
        parse_manifest(data, "M", prop.MANIFEST_MAP)


def test_the_table_holds_untouched_strings_column_by_column():
    data = b'\xef\xbb\xbfa,b,note\r\n007,NaN,x\r\n,true,"y, z"\r\n'
    table = csvtable.read_table(data, "T", {"first": "a", "second": "b"})
    assert table.header == ["a", "b", "note"] and table.extra_columns == ["note"]
    assert table.columns == {"first": ["007", ""], "second": ["NaN", "true"]}
    assert table.rows == [{"first": "007", "second": "NaN"}, {"first": "", "second": "true"}]
    assert table.length == 2 and csvtable.read_table(data, "T", {}).cells() == [(), ()]
