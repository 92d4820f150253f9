"""Official results import: every validation rule with a counterexample, the demo end to end."""

from __future__ import annotations

import copy
import csv
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afbench.core.errors import AfbenchError
from afbench.core.fsutil import json_bytes
from afbench.imports.compare import summarize
from afbench.imports.official import parse_results
from afbench.release import demo

import properties as prop
from conftest import (
    afbench,
    config_for,
    examples,
    fetch_release,
    import_model,
    release_dir,
    write_tree,
)

MODEL = "demo-model-a"
PATH = f"results/{MODEL}.csv"


def rows_of(data: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(data.decode())))


def csv_of(rows: list[dict], header: list[str] | None = None) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header or list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def import_with(tmp_path, release_files, demo_yaml, data: bytes, slug=MODEL, **kw):
    files = {**release_files, PATH: data}
    mirror = write_tree(tmp_path / "m", files)
    cfg = config_for(
        files, "a" * 40, {"kind": "dir", "mirror": str(mirror)}, tmp_path / "r", demo_yaml
    )
    fetch_release(cfg)
    if "budget" in kw:  # the seed's import-results takes a budget; a job uses the nominal one
        out = tmp_path / "reference.json"
        afbench(
            "import-results",
            "--release-dir",
            release_dir(cfg),
            "--model",
            slug,
            "--budget-usd",
            kw["budget"],
            "--output",
            out,
            cfg=cfg,
        )
        return json.loads(out.read_text())["models"][0]
    return import_model(cfg, slug, kw.get("condition", "source-present"))


def mutated(release_files, index: int, **changes) -> bytes:
    rows = rows_of(release_files[PATH])
    rows[index].update(changes)
    return csv_of(rows)


def first_solved(release_files) -> int:
    return next(i for i, r in enumerate(rows_of(release_files[PATH])) if r["success"] == "true")


def first_failed(release_files) -> int:
    return next(
        i
        for i, r in enumerate(rows_of(release_files[PATH]))
        if r["success"] == "false" and r["stop_reason"] == "gave_up"
    )


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("target_declaration", "Evil.substituted", "differs from the MANIFEST row"),
        ("source_id", "demo_source_24", "differs from the MANIFEST row"),
        ("n_obligations", "99", "differs from the MANIFEST row"),
        ("success", "TRUE", "not a boolean"),
        ("success", "1", "not a boolean"),
        ("obligations_accepted", "-1", "not a whole number"),
        ("obligations_accepted", "1.0", "not a whole number"),
        ("obligations_accepted", "999", "out of range"),
        ("cost_usd", "nan", "not a finite"),
        ("cost_usd", "inf", "not a finite"),
        ("cost_usd", "-0.5", "not a finite"),
        ("cost_usd", "1e999", "not finite"),
        ("cost_usd", "1e308", "cost out of range"),
        ("cost_usd", "1000000000000.5", "cost out of range"),
        ("cost_usd", "", "not a finite"),
        ("stop_reason", "gave_up", "if and only if"),
        ("finished_at", "yesterday", "ISO-8601"),
        ("finished_at", "2026-13-01", "ISO-8601"),
        ("source_condition", "source-free", "constant within the file"),
        ("scaffold", "other-scaffold", "constant within the file"),
        ("tools", "none", "constant within the file"),
        ("stopping_policy", "never", "constant within the file"),
    ],
)
def test_each_rule_names_file_row_and_field(
    tmp_path, release_files, demo_yaml, field, value, match
):
    index = first_solved(release_files) if field != "finished_at" else 0
    data = mutated(release_files, index, **{field: value})
    with pytest.raises(AfbenchError, match=match) as err:
        import_with(tmp_path, release_files, demo_yaml, data)
    assert f"{PATH}: row {index + 2}: field '{field}'" in str(err.value)


def _declared_cells():
    from afbench.kinds.official import RESULTS_ROW

    for f in RESULTS_ROW.fields:
        yield pytest.param(f.name, "", not f.null, id=f"{f.name}-empty")
        if f.minimum is not None:
            below = f.minimum - 1
            yield pytest.param(f.name, str(below), True, id=f"{f.name}-below-least")


@pytest.mark.parametrize("field,value,refused", list(_declared_cells()))
def test_a_results_row_is_read_as_its_declaration_says(
    tmp_path, release_files, demo_yaml, field, value, refused
):
    """RESULTS_ROW (afbench.kinds.official) is the upstream row the reader checks: an empty
    cell is refused where the field may not be null, a number below its least value always,
    each naming the row and the field."""
    index = first_failed(release_files)
    data = mutated(release_files, index, **{field: value})
    if not refused:
        import_with(tmp_path, release_files, demo_yaml, data)
        return
    with pytest.raises(AfbenchError) as err:
        import_with(tmp_path, release_files, demo_yaml, data)
    assert f"{PATH}: row {index + 2}: field '{field}'" in str(err.value)


@pytest.mark.parametrize("door", ["import-results", "job import-model"])
@pytest.mark.parametrize("cost", ["1e308", "1e400", "inf"])
def test_a_cost_beyond_the_usd_ceiling_is_a_refusal_not_an_overflow(
    tmp_path, release_files, demo_yaml, door, cost
):
    """Two costs near 1e308 sum to infinity, which the import's JSON cannot hold."""
    rows = rows_of(release_files[PATH])
    for row in rows[:2]:
        row["cost_usd"] = cost
    kw = {"budget": 200} if door == "import-results" else {}
    with pytest.raises(AfbenchError) as err:
        import_with(tmp_path, release_files, demo_yaml, csv_of(rows), **kw)
    first = err.value.problems[0]
    assert (first.file, first.row, first.field) == (PATH, 2, "cost_usd")
    assert first.found == cost
    # "inf" is no decimal at all; the other two are numbers beyond the ceiling
    rule = "a decimal such as 12.5" if cost == "inf" else "USD, a finite number from 0 to 1e12"
    assert first.expected == rule


def test_a_cost_at_the_usd_ceiling_is_read(tmp_path, release_files, demo_yaml):
    data = mutated(release_files, first_failed(release_files), cost_usd="1e12")
    record = import_with(tmp_path, release_files, demo_yaml, data, budget=200)
    assert record["cost_usd"]["max"] == 1e12


def test_success_needs_every_obligation(tmp_path, release_files, demo_yaml):
    index = next(
        i
        for i, r in enumerate(rows_of(release_files[PATH]))
        if r["success"] == "true" and int(r["n_obligations"]) > 1
    )
    data = mutated(release_files, index, obligations_accepted="1")
    with pytest.raises(AfbenchError, match="a success needs every obligation"):
        import_with(tmp_path, release_files, demo_yaml, data)


def test_missing_unknown_and_duplicate_ids_are_all_reported(tmp_path, release_files, demo_yaml):
    rows = rows_of(release_files[PATH])
    dropped = [rows.pop(5)["task_id"], rows.pop(5)["task_id"]]
    rows.append(dict(rows[0]))
    rows.append(dict(rows[1], task_id="demo_unknown_task"))
    with pytest.raises(AfbenchError) as err:
        import_with(tmp_path, release_files, demo_yaml, csv_of(rows))
    message = str(err.value)
    assert "duplicate task_id" in message and "unknown task_id" in message
    assert "2 MANIFEST task(s) missing" in message
    assert all(tid in message for tid in dropped)


def test_missing_column_names_actual_columns_and_closest(tmp_path, release_files, demo_yaml):
    text = release_files[PATH].decode().replace("cost_usd", "cost_in_usd", 1)
    with pytest.raises(AfbenchError) as err:
        import_with(tmp_path, release_files, demo_yaml, text.encode())
    assert "mapped column 'cost_usd'" in str(err.value)
    assert "closest: ['cost_in_usd']" in str(err.value)


def test_harmless_format_changes_give_the_same_import(tmp_path, release_files, demo_yaml):
    baseline = import_with(tmp_path / "a", release_files, demo_yaml, release_files[PATH])
    rows = rows_of(release_files[PATH])
    header = [*reversed(list(rows[0])), "note"]
    for r in rows:
        r["note"] = "extra, with comma"
    variant = b"\xef\xbb\xbf" + csv_of(rows, header).replace(b"\n", b"\r\n")
    other = import_with(tmp_path / "b", release_files, demo_yaml, variant)
    assert other["records"] == baseline["records"]
    assert other["passes"] == baseline["passes"]
    assert other["extra_columns"] == ["note"]


def test_relabelled_condition_and_other_budget_are_refused(tmp_path, release_files, demo_yaml):
    with pytest.raises(AfbenchError, match="cannot be relabelled source-free"):
        import_with(
            tmp_path / "a", release_files, demo_yaml, release_files[PATH], condition="source-free"
        )
    with pytest.raises(AfbenchError, match="nominal budget"):
        import_with(tmp_path / "b", release_files, demo_yaml, release_files[PATH], budget=100)


def test_demo_pass_counts_and_over_budget_record(fetched_config):
    imports = [import_model(fetched_config, slug) for slug in demo.INTENDED_PASS_COUNTS]
    assert {i["model"]: i["passes"] for i in imports} == demo.INTENDED_PASS_COUNTS
    over = [r for i in imports for r in i["budget_audit"]["over_budget"]]
    assert len(over) == 1 and over[0]["source"] == demo.OVER_BUDGET["model"]
    assert over[0]["cost_usd"] == 412.5 and over[0]["excess_usd"] == 212.5
    for imp in imports:
        assert imp["infrastructure_errors"]["count"] >= 1
        assert imp["tasks"] == 341  # nothing dropped
        assert imp["local_capability_score"] is None
    summary = summarize(imports, strict_budget=False)
    assert summary["budget_audit"]["over_budget_count"] == 1
    assert "not a certificate" in summary["budget_audit"]["note"]
    assert [r["model"] for r in summary["leaderboard"]][:2] == ["demo-model-a", "demo-model-b"]
    with pytest.raises(AfbenchError, match=r"strict budget comparison refused.*demo-model-d"):
        summarize(imports, strict_budget=True)


def test_comparison_refuses_different_scaffolds(fetched_config):
    imports = [import_model(fetched_config, slug) for slug in ("demo-model-a", "demo-model-b")]
    imports[1]["scaffold"] = "another-scaffold"
    with pytest.raises(AfbenchError, match="comparison refused: models differ in scaffold"):
        summarize(imports, strict_budget=False)
    imports[1]["scaffold"] = imports[0]["scaffold"]
    imports[1]["task_set_sha256"] = "0" * 64
    with pytest.raises(AfbenchError, match="differ in task_set"):
        summarize(imports, strict_budget=False)


def test_import_results_streams_models_into_the_bytes_of_the_whole_record(fetched_config, tmp_path):
    """The seed's one-process import keeps one model at a time: its file is byte for byte the
    record written whole, with each model as the pipeline's import-model job writes it."""
    from afbench.core.config import published_facts
    from afbench.core.fsutil import json_bytes
    from afbench.imports.compare import reduced
    from afbench.kinds import OFFICIAL_REFERENCE

    out = tmp_path / "reference.json"
    afbench(
        "import-results",
        "--release-dir",
        release_dir(fetched_config),
        "--all-models",
        "--output",
        out,
        cfg=fetched_config,
    )
    models = [import_model(fetched_config, slug) for slug in fetched_config["models"]]
    summary = summarize([reduced(m) for m in models], False, published_facts(fetched_config))
    whole = OFFICIAL_REFERENCE.record(summary=summary, models=models)
    assert out.read_bytes() == json_bytes(whole)
    lines = out.read_bytes().splitlines()
    assert (
        sum(line.startswith(b'    {"kind": "afbench official results import"') for line in lines)
        == 9
    )


@pytest.fixture(scope="module")
def written(tmp_path_factory, release_files, demo_yaml) -> tuple[bytes, dict]:
    """One model's import as `afbench job import-model` writes it, and its catalog."""
    base = tmp_path_factory.mktemp("outcomes")
    mirror = write_tree(base / "m", release_files)
    cfg = config_for(
        release_files, "a" * 40, {"kind": "dir", "mirror": str(mirror)}, base / "r", demo_yaml
    )
    fetch_release(cfg)
    import_model(cfg, MODEL)
    catalog = json.loads(next((base / "r").rglob("tasks/catalog.json")).read_text())
    return next((base / "r").rglob(f"imports/{MODEL}.json")).read_bytes(), catalog


@pytest.fixture(scope="module")
def written_import(written) -> bytes:
    return written[0]


def strictly(data: bytes):
    from afbench.core.fsutil import parse_json_bytes
    from afbench.imports.official import outcomes
    from afbench.kinds import MODEL_IMPORT

    try:
        return outcomes(MODEL_IMPORT.check(parse_json_bytes(data, "f", "x"), "f"), "f")
    except AfbenchError as exc:
        return str(exc)


JSON_BITS = [b'"', b"\\", b",", b":", b"{", b"}", b"[", b"]", b"\n", b" ", b"null", b"true"]
JSON_BITS += [b"1e999", b"NaN", b"-0", b"01", b"\\ud800", b"\x1f", b"\xff", b'"task_id": "x", ']
JSON_BITS += [b'"records": [], ', b"9" * 30, b"\xc3\xa9", b"\xef\xbb\xbf"]


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(
            st.integers(0, 10**6),
            st.sampled_from(["flip", "insert", "delete", "truncate"]),
            st.sampled_from(JSON_BITS),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_outcomes_read_by_layout_are_what_the_strict_reader_reads(written, edits):
    """The report's fast reading of an import (one regular expression over the records, when
    the file is laid out as afbench writes it) never accepts what the strict reader refuses,
    nor reads anything else: it gives the strict reader's outcomes or leaves the file to it."""
    from afbench.imports.official import _outcomes_as_written, task_order

    data, catalog = written
    for position, kind, payload in edits:
        data = prop.mutate(data, position, kind, payload)
    fast = _outcomes_as_written(data, "f")
    assert fast is None or fast == strictly(data)
    in_order = _outcomes_as_written(data, "f", task_order(catalog))
    assert in_order is None or in_order == strictly(data)


def whole(data: bytes):
    from afbench.core.fsutil import parse_json_bytes
    from afbench.kinds import MODEL_IMPORT

    try:
        return MODEL_IMPORT.check(parse_json_bytes(data, "f", MODEL_IMPORT.what), "f")
    except AfbenchError as exc:
        return str(exc)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(
            st.integers(0, 10**6),
            st.sampled_from(["flip", "insert", "delete", "truncate"]),
            st.sampled_from(JSON_BITS),
        ),
        min_size=0,
        max_size=3,
    )
)
def test_an_import_read_by_its_layout_is_what_the_strict_reader_reads(written, edits):
    """MODEL_IMPORT.read (afbench.kinds.lines: the records checked by the expression made from
    their declaration, when the file is laid out as afbench writes it) gives the strict
    reader's record, or its refusal, whatever the bytes."""
    from afbench.kinds import MODEL_IMPORT, lines

    data, _ = written
    for position, kind, payload in edits:
        data = prop.mutate(data, position, kind, payload)
    try:
        read = lines.parse(MODEL_IMPORT, data, "f")
    except AfbenchError as exc:
        read = str(exc)
    assert read == whole(data)


def test_a_written_import_is_read_by_its_layout(written):
    from afbench.kinds import MODEL_IMPORT, lines

    data, _ = written
    name, pattern = lines.layout(MODEL_IMPORT)
    head, first, end = lines.split(MODEL_IMPORT, data, "f")
    assert name == "records" and head["records"] == []
    assert pattern.fullmatch(data, first, end) is not None


def test_outcomes_are_read_by_layout_and_a_repeated_key_is_refused(written, tmp_path):
    from afbench.imports.official import _outcomes_as_written, read_outcomes, task_order

    written_import, catalog = written
    fast = _outcomes_as_written(written_import, "f")
    assert fast is not None and fast == strictly(written_import)
    order = task_order(catalog)
    in_order = _outcomes_as_written(written_import, "f", order)
    assert in_order == fast and in_order.task_ids is order.task_ids
    assert len(fast.task_ids) == 341 and fast.successes.count(True) == fast.totals["passes"]
    inside = written_import.replace(
        b', "success": true,', b', "success": false, "success": true,', 1
    )
    assert _outcomes_as_written(inside, "f") is None
    path = tmp_path / "import.json"
    path.write_bytes(inside)
    with pytest.raises(AfbenchError, match="not valid JSON: duplicate key 'success'"):
        read_outcomes(path)
    value = written_import.replace(b'"stop_reason": "solved"', b'"stop_reason": "solved, fine"', 1)
    assert _outcomes_as_written(value, "f") == strictly(value)  # a value changed: still fast


def test_success_bits_follow_task_ids_whatever_the_record_order():
    """reduced() reuses the ranking of the import before when the records' keys are the same:
    an import in another order, or of other tasks, must still get its own ranking."""
    from afbench.imports.compare import reduced
    from afbench.imports.official import Outcomes

    def bits(pairs: list[tuple[str, bool]]) -> int:
        keys = [f'{task}", "source_id": "s'.encode() for task, _ in pairs]
        return reduced(Outcomes.from_keys({}, keys, [ok for _, ok in pairs]))["success_bits"]

    ordered = [("t1", True), ("t2", False), ("t3", True), ("t4", True)]
    assert bits(ordered) == 0b1101  # bit i is the i-th task id in sorted order
    assert bits(ordered) == 0b1101  # the same keys again: the ranking reused
    assert bits(ordered[::-1]) == 0b1101
    assert bits([("t3", True), ("t1", False), ("t2", False), ("t4", False)]) == 0b0100
    assert bits([("b", True), ("a", False)]) == 0b10
    assert bits([]) == 0


@pytest.mark.parametrize(
    "cost",
    [
        "NaN",
        "nan",
        "Infinity",
        "-inf",
        "-0",
        "-0.0",
        "1e309",
        "0x10",
        "1_000",
        " 5",
        "5 ",
        "",
        '"1,5"',
    ],
)
def test_non_finite_and_odd_costs_are_refused(cost):
    data = prop.RESULTS.replace(b",12.5,", f",{cost},".encode())
    with pytest.raises(AfbenchError, match="row 2: field 'cost_usd'"):
        prop.read_all(prop.MANIFEST, prop.SOURCES, data)


def test_strict_published_import_results_refuses_a_difference(demo_chain, tmp_path):
    demo_chain_rev, cfg = demo_chain
    cfg = copy.deepcopy(cfg)
    cfg["models"]["demo-model-a"]["published_passes"] = 265
    args = [
        "import-results",
        "--release-dir",
        demo_chain_rev / "release",
        "--model",
        "demo-model-a",
    ]
    warnings = afbench(*args, "--output", tmp_path / "ref.json", cfg=cfg)
    assert warnings and "'demo-model-a'" in warnings[0] and "266 passes" in warnings[0]
    with pytest.raises(AfbenchError, match=r"strict published check refused.*266 passes.*265"):
        afbench(*args, "--strict-published", "--output", tmp_path / "s.json", cfg=cfg)
    assert not (tmp_path / "s.json").exists()


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
