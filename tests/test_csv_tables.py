"""The release-CSV readers (plain Python, column by column): the fast path reads exactly what
the strict reader reads, values ending in a newline are refused, and wide, long or repetitive
files are refused before the work grows with them."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afbench import csvtable
from afbench.catalog import parse_manifest, parse_sources
from afbench.errors import AfbenchError
from afbench.fsutil import check_name, json_bytes
from afbench.official import parse_results

import properties as prop

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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


@FAST
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


@pytest.mark.parametrize("cost", ["12.5\n", "1\r\n"])
def test_a_number_ending_in_a_newline_is_refused(cost):
    data = prop.RESULTS.replace(b",12.5,", f',"{cost}",'.encode())
    with pytest.raises(AfbenchError, match="R: row 2: field 'cost_usd': not a finite"):
        prop.read_all(prop.MANIFEST, prop.SOURCES, data)
    accepted = prop.RESULTS.replace(b"true,2,12.5", b'true,"2\n",12.5')
    with pytest.raises(AfbenchError, match="row 2: field 'obligations_accepted': not a whole"):
        prop.read_all(prop.MANIFEST, prop.SOURCES, accepted)
    count = prop.MANIFEST.replace(b"A.one,2,", b'A.one,"2\n",')
    with pytest.raises(AfbenchError, match="M: row 2: field 'n_obligations': not a whole"):
        parse_manifest(count, "M", prop.MANIFEST_MAP)
    books = prop.SOURCES.replace(b"CC,2\n", b'CC,"2\n"\n')
    with pytest.raises(AfbenchError, match="S: row 2: field 'n_tasks': not a whole"):
        parse_sources(books, "S", prop.SOURCES_MAP)


@pytest.mark.parametrize("field", ["task_id", "source_id"])
def test_an_id_ending_in_a_newline_is_refused(field):
    value = {"task_id": b"t1", "source_id": b"s1"}[field]
    data = prop.MANIFEST.replace(b"t1,s1", b"t1,s1".replace(value, b'"' + value + b'\n"'), 1)
    with pytest.raises(AfbenchError, match=f"M: row 2: field '{field}': not a safe name"):
        parse_manifest(data, "M", prop.MANIFEST_MAP)
    with pytest.raises(AfbenchError, match="not a safe name"):
        check_name("t1\n", "task_id")
    results = prop.RESULTS.replace(b"t1,s1", b'"t1\n",s1', 1)
    with pytest.raises(AfbenchError, match="row 2: field 'task_id': unknown task_id"):
        prop.read_all(prop.MANIFEST, prop.SOURCES, results)


def test_a_million_empty_columns_are_refused_without_comparing_them_pairwise():
    data = b"," * 1_000_000 + b"\n"
    with pytest.raises(AfbenchError) as err:
        parse_manifest(data, "M", prop.MANIFEST_MAP)
    assert str(err.value) == (
        "M: row 1: too many columns in header (expected at most 1000, found 1000001)"
    )
    named = b"task_id" + b",x" * 1_000_000 + b"\nt1" + b"," * 1_000_000 + b"\n"
    with pytest.raises(AfbenchError, match="too many columns in header"):
        parse_manifest(named, "M", prop.MANIFEST_MAP)


def test_duplicate_columns_are_named_and_a_huge_header_is_quoted_short():
    data = b",".join([b"task_id", b"a" * 5000, b"a" * 5000] + [b"c%d" % i for i in range(990)])
    with pytest.raises(AfbenchError) as err:
        parse_manifest(data + b"\n", "M", prop.MANIFEST_MAP)
    message = str(err.value)
    assert message.startswith("M: row 1: field 'aaaa") and "duplicate column in header" in message
    assert len(message) < 2_100  # the header and the field name both quoted short


@pytest.mark.parametrize("quoted", [False, True])
def test_too_many_rows_are_refused(monkeypatch, quoted):
    monkeypatch.setattr(csvtable, "MAX_ROWS", 2)
    data = prop.MANIFEST if quoted else prop.MANIFEST.replace(b'"Thm 2, part b"', b"Thm 2")
    with pytest.raises(AfbenchError, match=r"M: too many rows \(expected at most 2 data rows"):
        parse_manifest(data, "M", prop.MANIFEST_MAP)


def test_every_wrong_row_is_reported_with_its_spreadsheet_row():
    data = prop.MANIFEST + b"t4,s2\n\nt5,s2,x,y,1,w,extra\n"
    with pytest.raises(AfbenchError) as err:
        parse_manifest(data, "M", prop.MANIFEST_MAP)
    assert [str(p) for p in err.value.problems] == [
        "M: row 5: wrong number of fields (expected 6, found 2)",
        "M: row 6: wrong number of fields (expected 6, found 0)",
        "M: row 7: wrong number of fields (expected 6, found 7)",
    ]


def test_a_huge_count_is_out_of_range_not_a_traceback():
    data = prop.MANIFEST.replace(b"A.one,2,", b"A.one," + b"9" * 5000 + b",")
    with pytest.raises(AfbenchError, match="row 2: field 'n_obligations': number out of range"):
        parse_manifest(data, "M", prop.MANIFEST_MAP)


def test_problems_come_in_row_order_then_file_level():
    data = (
        prop.RESULTS.replace(b"t1,s1,A.one,2,true,2,12.5", b"t1,s9,A.one,2,yes,2,-1")
        .replace(
            b"B.three,3,false,1,3.25e1,infrastructure_error,source-present,sc,",
            b"B.three,3,false,x,3.25e1,infrastructure_error,source-present,other,",
        )
        .replace(b"t2,s1,A.two,1,false,0,200.0,budget_exhausted,source-present,sc,tl,sp,\n", b"")
    )
    with pytest.raises(AfbenchError) as err:
        parse_results(data, "R", prop.RESULTS_MAP, prop.TASKS, "source-present")
    assert [str(p) for p in err.value.problems] == [
        "R: row 2: field 'source_id': differs from the MANIFEST row (expected s1, found 's9')",
        "R: row 2: field 'success': not a boolean (expected true or false, found 'yes')",
        "R: row 2: field 'cost_usd': not a finite, non-negative number "
        "(expected a decimal such as 12.5, found '-1')",
        "R: row 3: field 'obligations_accepted': not a whole number "
        "(expected digits only, found 'x')",
        "R: field 'task_id': 1 MANIFEST task(s) missing: t2",
        "R: row 3: field 'scaffold': must be constant within the file (most rows differ) "
        "(expected sc, found 'other')",
    ]


def test_records_are_plain_python_values_and_serialise():
    records, constants, extra = parse_results(
        prop.RESULTS, "R", prop.RESULTS_MAP, prop.TASKS, "source-present"
    )
    assert [type(v) for v in records[0].values()] == [str, str, bool, int, int, float, str, str]
    assert records[1]["finished_at"] is None and constants["scaffold"] == "sc" and extra == []
    assert json_bytes(records).count(b"\n") == len(records) + 2


def test_the_table_holds_untouched_strings_column_by_column():
    data = b'\xef\xbb\xbfa,b,note\r\n007,NaN,x\r\n,true,"y, z"\r\n'
    table = csvtable.read_table(data, "T", {"first": "a", "second": "b"})
    assert table.header == ["a", "b", "note"] and table.extra_columns == ["note"]
    assert table.columns == {"first": ["007", ""], "second": ["NaN", "true"]}
    assert table.rows == [{"first": "007", "second": "NaN"}, {"first": "", "second": "true"}]
    assert table.length == 2 and csvtable.read_table(data, "T", {}).cells() == [(), ()]
