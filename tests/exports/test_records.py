"""Results that travel (afbench.exports.records): paper tables byte-identical to their golden files
and across runs, two conditions in one table refused; Every Eval Ever 0.3.0 records valid under
its own schema, a withheld rate refused, no errored trial written as an instance."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sys
from base64 import urlsafe_b64encode
from pathlib import Path

import pytest

from afbench.core import fsutil
from afbench.core.errors import AfbenchError
from afbench.exports import records as exports

import properties as prop
from conftest import (
    REPO,
    add_local_runs,
    afbench,
    cli,
    copy_demo_run,
    job,
    one_line,
    revision_dir,
    stalled_afbench,
    verdict,
    waiting_afbench,
)

AFBENCH = str(Path(sys.executable).with_name("afbench"))

GOLDEN = REPO / "tests" / "fixtures" / "exports"
# EEE 0.3.0's wheel (every_eval_ever-0.3.0-py3-none-any.whl) lists its files in RECORD:
# every_eval_ever/schemas/eval.schema.json,sha256=<urlsafe base64>,40118
EEE_SCHEMA_RECORD = "ycYZWuyKnfoLKrpJJKwaqKGEydjKl87neMtTEIjjm0g"
EEE_LICENSE_RECORD = "RClneMzKM1GiR-moiJ1PwqakoAQln51ygQV8xqd0I60"


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_run) -> Path:
    base = tmp_path_factory.mktemp("exports")
    rev = revision_dir(copy_demo_run(demo_run, base))  # run_all's tree, copied
    add_local_runs(base, rev)
    return rev


def with_runs(demo: Path, tmp_path: Path) -> Path:
    """A copy of the demo whose report shows its local runs (run_all's report has none): the
    two of add_local_runs (each with a task of no decided outcome: bounds only) and a verdict
    run whose two tasks are decided (its rate is given)."""
    root = tmp_path / demo.name
    shutil.copytree(demo, root)
    two = root / "tasks/selections/two.json"
    job(
        *["select-tasks", f"--catalog={root / 'tasks/catalog.json'}", "--name=two"],
        *["--task=demo_s01_t001", "--task=demo_s01_t002", f"--output={two}"],
    )
    folder = tmp_path / "decided"
    folder.mkdir()
    for task, status in (("demo_s01_t001", "accepted"), ("demo_s01_t002", "rejected")):
        (folder / f"{task}.json").write_text(json.dumps(verdict(task, status)))
    afbench(
        *["import-run", "--selection", two, "--name", "verdicts-decided", "--kind", "verdicts"],
        *["--path", folder, "--output-dir", root / "runs/verdicts-decided"],
    )
    imports = root / "imports/source-present/budget-200"
    afbench(
        *["report", "--summary", imports / "summary.json"],
        *[arg for p in sorted(imports.glob("demo-model-?.json")) for arg in ("--import", p)],
        *["--catalog", root / "tasks/catalog.json", "--receipt", root / "release/receipt.json"],
        *[
            arg
            for r in ("harbor-fixtures", "verdicts-three", "verdicts-decided")
            for arg in ("--run", root / f"runs/{r}/summary.json")
        ],
        *["--anatomy", imports / "failure-anatomy.json"],
        *["--output-dir", root / "report"],
    )
    return root


def export(root: Path, out: Path, *args: str) -> list[Path]:
    afbench("export", "--root", root, "--output-dir", out, *args)
    return sorted(p for p in out.rglob("*") if p.is_file())


# --- paper tables -------------------------------------------------------------------------------
@pytest.mark.parametrize(("fmt", "suffix"), [("markdown", "md"), ("latex", "tex")])
def test_paper_tables_are_their_golden_files_byte_for_byte_on_every_run(
    demo, tmp_path, fmt, suffix
):
    name = f"leaderboard-source-present-budget-200.{suffix}"
    (first,) = export(demo, tmp_path / "one", "--format", fmt)
    (second,) = export(demo, tmp_path / "two", "--format", fmt, "--condition", "source-present")
    assert first.name == second.name == name
    assert first.read_bytes() == second.read_bytes()
    golden = GOLDEN / name
    if os.environ.get("AFBENCH_UPDATE_GOLDEN"):
        golden.write_bytes(first.read_bytes())
    assert first.read_bytes() == golden.read_bytes(), (
        f"{golden} differs from what afbench export writes now; if the analysis changed on "
        "purpose, rewrite it with AFBENCH_UPDATE_GOLDEN=1 pytest tests/exports/test_records.py"
    )


def test_the_caption_names_condition_revision_budget_and_comparability(demo, tmp_path):
    (md,) = export(demo, tmp_path, "--format", "markdown")
    caption = md.read_text().splitlines()[0]
    assert caption.startswith("Table: SYNTHETIC demo data")
    for part in (
        "condition source-present",
        f"revision {demo.name}",
        "nominal budget USD 200 per task",
        "Not comparable to source-free results.",
        "clustered over sources",
    ):
        assert part in caption
    rows = md.read_text().splitlines()[4:]
    assert len(rows) == 9 and rows[0].startswith("| 1 | Demo Model A (synthetic) | a ★ |")
    assert "1 over budget" in md.read_text()  # demo-model-d's record above the budget


def two_conditions(demo: Path, tmp_path: Path) -> Path:
    """The demo with a second report analysis of another source condition beside it."""
    root = tmp_path / "two"
    shutil.copytree(demo, root)
    analysis = json.loads((root / "report/analysis.json").read_text())
    analysis["source_condition"] = "source-free"
    (root / "report/source-free").mkdir()
    (root / "report/source-free/analysis.json").write_text(json.dumps(analysis))
    return root


def test_two_conditions_in_one_table_are_refused(demo, tmp_path):
    root = two_conditions(demo, tmp_path)
    with pytest.raises(AfbenchError, match="more than one source condition or budget"):
        export(root, tmp_path / "a", "--format", "latex")
    with pytest.raises(AfbenchError, match="two source conditions in one table"):
        export(
            root,
            tmp_path / "b",
            *["--format", "markdown", "--condition", "source-present"],
            *["--condition", "source-free"],
        )
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    # one of them, chosen, is one table
    (only,) = export(root, tmp_path / "c", "--format", "markdown", "--condition", "source-free")
    assert "condition source-free" in only.read_text()


def test_a_paper_table_holds_no_local_run(demo, tmp_path):
    with pytest.raises(AfbenchError, match="official leaderboard only"):
        export(demo, tmp_path / "x", "--format", "latex", "--run", "verdicts-three")


def _leader_named(demo: Path, root: Path, name: str) -> Path:
    """A copy of the demo's results whose leader's display name is `name`."""
    shutil.copytree(demo, root)
    path = root / "report/analysis.json"
    analysis = json.loads(path.read_text())
    analysis["leaderboard"][0]["display_name"] = name
    path.write_text(json.dumps(analysis))
    return root


def test_names_are_escaped_and_cannot_reorder_the_table(demo, tmp_path):
    root = _leader_named(demo, tmp_path / "hostile", "A | b_\u202eevil\u200f $x^2$ \\ {&} <i>")
    (md,) = export(root, tmp_path / "md", "--format", "markdown")
    row = md.read_text().splitlines()[4]
    assert row.count(" | ") == 7  # the name's pipe does not make a column
    assert "A \\| b\\_[U+202E]evil[U+200F] \\$x^2\\$ \\\\ {\\&} \\<i\\>" in row
    (tex,) = export(root, tmp_path / "tex", "--format", "latex")
    assert (
        "A \\textbar{} b\\_[U+202E]evil[U+200F] \\$x\\textasciicircum{}2\\$ \\textbackslash{} "
        "\\{\\&\\} \\textless{}i\\textgreater{}" in tex.read_text()
    )


def test_an_entity_in_a_name_stays_text(demo, tmp_path):
    """Unescaped, `&#x202E;` is the right-to-left override itself once the Markdown is
    rendered, and `&lt;b&gt;` the text <b>, not what the name says."""
    root = _leader_named(demo, tmp_path / "entities", "x&#x202E;y &lt;b&gt; &amp;")
    (md,) = export(root, tmp_path / "md", "--format", "markdown")
    assert "| x\\&#x202E;y \\&lt;b\\&gt; \\&amp; |" in md.read_text()
    (tex,) = export(root, tmp_path / "tex", "--format", "latex")
    assert "x\\&\\#x202E;y \\&lt;b\\&gt; \\&amp; &" in tex.read_text()


# --- Every Eval Ever ------------------------------------------------------------------------------
def record_hash(path: Path) -> str:
    return urlsafe_b64encode(hashlib.sha256(path.read_bytes()).digest()).decode().rstrip("=")


def test_the_vendored_schema_is_eee_0_3_0s_own_with_its_licence():
    data = REPO / "scripts/afbench/data/eee-0.3.0"
    assert record_hash(data / "eval.schema.json") == EEE_SCHEMA_RECORD
    assert record_hash(data / "LICENSE") == EEE_LICENSE_RECORD
    assert exports.eee_schema()["version"] == "0.3.0"


def test_eee_records_validate_against_the_0_3_0_schema(demo, tmp_path, monkeypatch):
    from jsonschema import Draft7Validator

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1790000000")
    root = with_runs(demo, tmp_path)
    files = export(root, tmp_path / "eee", "--format", "eee", "--run", "verdicts-decided")
    schema = json.loads((REPO / "scripts/afbench/data/eee-0.3.0/eval.schema.json").read_text())
    validator = Draft7Validator(schema)
    records = {p.name: json.loads(p.read_text()) for p in files}
    for name, rec in records.items():
        assert list(validator.iter_errors(rec)) == [], name
        assert "detailed_evaluation_results" not in rec  # no instance-level records
    official = [r for n, r in records.items() if n.startswith("eee-source-present")]
    local = [r for n, r in records.items() if n.startswith("eee-run-")]
    assert len(official) == 9 and len(local) == 1
    (mine,) = local
    assert mine["evaluation_results"][0]["score_details"]["score"] == 0.5
    assert mine["eval_library"] == {"name": "comparator", "version": "1.0"}
    assert {r["source_metadata"]["source_type"] for r in official} == {"documentation"}
    assert {r["source_metadata"]["source_type"] for r in local} == {"evaluation_run"}
    a = next(r for r in official if r["model_info"]["id"] == "demo-model-a")
    analysis = json.loads((root / "report/analysis.json").read_text())
    row = analysis["leaderboard"][0]
    result = a["evaluation_results"][0]
    assert result["score_details"]["score"] == row["success_rate"]
    interval = result["score_details"]["uncertainty"]["confidence_interval"]
    assert (interval["lower"], interval["upper"]) == (
        row["clustered"]["low"],
        row["clustered"]["high"],
    )
    assert interval["method"] == row["clustered"]["method"]
    assert a["retrieved_timestamp"] == "1790000000" and a["evaluation_id"].endswith("/1790000000")
    assert result["metric_config"]["additional_details"]["comparable"] == (
        "Not comparable to source-free results."
    )
    # the same folder and timestamp give the same bytes
    again = export(root, tmp_path / "again", "--format", "eee", "--run", "verdicts-decided")
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in files]


def test_two_eee_exports_into_one_folder_at_once_leave_one_whole_set(demo, tmp_path):
    """Issue #41: `export --format eee` twice into one --output-dir at once left records of
    both. The first is stalled after its first rename while the second runs: the second waits
    for it, and the folder holds the second's whole set, byte for byte."""
    alone = {}
    for stamp in ("1790000000", "1790000001"):
        files = export(demo, tmp_path / stamp, "--format", "eee", "--retrieved-at", stamp)
        alone[stamp] = {p.name: p.read_bytes() for p in files}
    assert len(alone["1790000000"]) > 1
    assert all(alone["1790000000"][n] != alone["1790000001"].get(n) for n in alone["1790000000"])
    out = tmp_path / "shared"
    argv = ["export", "--root", demo, "--output-dir", out, "--format", "eee", "--retrieved-at"]
    first, release = stalled_afbench(
        [*argv, "1790000000"], tmp_path / "signals", after_first_rename=True
    )
    # it waits for the first, and says so (without the lock it runs on and is done)
    second = waiting_afbench([*argv, "1790000001"])
    release.touch()
    assert first.wait(timeout=120) == 0, first.communicate()[1]
    assert second.wait(timeout=120) == 0, second.communicate()[1]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == alone["1790000001"]


def test_an_export_replaces_an_earlier_exports_records(demo, tmp_path):
    """Whether the output folder lies in a results tree is a look at its files, not a read of
    an input: an earlier export's records there were refused as "the same file as the input"."""
    out = tmp_path / "eee"
    export(demo, out, "--format", "eee", "--retrieved-at", "1790000000")
    files = export(demo, out, "--format", "eee", "--retrieved-at", "1790000001")
    assert {p.name: p.read_bytes() for p in files} == {
        p.name: p.read_bytes()
        for p in export(demo, tmp_path / "alone", "--format", "eee", "--retrieved-at", "1790000001")
    }


def test_a_withheld_rate_is_refused_and_nothing_is_written(demo, tmp_path):
    root = with_runs(demo, tmp_path)
    analysis = json.loads((root / "report/analysis.json").read_text())
    withheld = [r for r in analysis["local_runs"] if r["success_rate"] is None]
    assert {r["run"] for r in withheld} >= {"verdicts-three"}  # an error: bounds only
    with pytest.raises(AfbenchError, match="withholds its success rate .* refusing to invent one"):
        export(root, tmp_path / "eee", "--format", "eee", "--run", "verdicts-three")
    assert not (tmp_path / "eee").exists()


def test_a_record_the_schema_refuses_is_never_written():
    with pytest.raises(AfbenchError, match="not valid under EEE 0.3.0's schema"):
        exports.validate_eee({"schema_version": "0.3.0"}, "record")


def test_export_never_writes_into_a_results_tree(built_config, tmp_path):
    rev = revision_dir(built_config)
    artifacts = {p: p.read_bytes() for p in rev.rglob("*") if p.is_file()}
    for out in (rev / "tables", rev / "imports" / "source-present" / "budget-200", rev):
        code, err = cli("export", "--root", rev, "--format", "csv", "--output-dir", out)
        assert code == 2 and "inside the input folder" in one_line(err), err
    # another revision's tree (it has an artifact manifest): refused too
    other = tmp_path / "other-rev"
    shutil.copytree(rev, other)
    code, err = cli("export", "--root", rev, "--format", "csv", "--output-dir", other / "imports")
    assert code == 2 and "inside the results tree" in one_line(err), err
    assert {p: p.read_bytes() for p in rev.rglob("*") if p.is_file()} == artifacts
    code, err = cli("export", "--root", rev, "--format", "csv", "--output-dir", tmp_path / "tables")
    assert code == 0, err


def _exporting(tmp_path, step: int, signum: int, phase: str) -> tuple[int, str, dict, dict]:
    rev = prop.write_tree().root
    out = tmp_path / f"tables-{phase}-{step}-{signum}"
    code, err = cli("export", "--root", rev, "--format", "csv", "--output-dir", out)
    assert code == 0, err
    new = {p.name: p.read_bytes() for p in out.iterdir()}
    for path in out.iterdir():
        path.write_bytes(b"old")
    real_stage, real_replace, calls = fsutil._stage, os.replace, {"stage": 0, "rename": 0}

    def stage(path, data, **kw):
        if phase == "stage" and calls["stage"] == step:
            os.kill(os.getpid(), signum)
        calls["stage"] += 1
        return real_stage(path, data, **kw)

    def replace(src, dst):
        if phase == "rename" and calls["rename"] == step:
            os.kill(os.getpid(), signum)
        calls["rename"] += 1
        return real_replace(src, dst)

    fsutil._stage, os.replace = stage, replace
    try:
        code, err = cli("export", "--root", rev, "--format", "csv", "--output-dir", out)
    finally:
        fsutil._stage, os.replace = real_stage, real_replace
    return code, err, new, {p.name: p.read_bytes() for p in out.iterdir()}


@pytest.mark.parametrize("phase", ["stage", "rename"])
def test_export_writes_its_tables_as_one_unit(tmp_path, phase):
    for step in range(3):
        code, err, new, now = _exporting(tmp_path, step, signal.SIGTERM, phase)
        assert code == 143 and one_line(err).startswith("afbench: interrupted by SIGTERM")
        assert now == (new if phase == "rename" else dict.fromkeys(new, b"old")), err


def test_eee_export_run_twice_into_one_folder_rewrites_the_same_bytes(demo, tmp_path):
    out = tmp_path / "eee"
    argv = ["export", "--root", demo, "--output-dir", out, "--format", "eee"]
    code, err = prop.cli(*argv, "--retrieved-at", "1790000000")
    assert code == 0, err
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    code, err = prop.cli(*argv, "--retrieved-at", "1790000000")
    assert code == 0, err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first


@pytest.mark.parametrize("fmt", ["csv", "markdown", "eee"])
def test_export_with_stdout_and_stderr_closed_succeeds_when_it_wrote_every_file(
    demo, tmp_path, fmt
):
    """A closed standard error (a detached job, `2>&-`) loses the line that names the files,
    never the files, and never turns their success into a failure."""
    import subprocess
    import sys

    out = tmp_path / "out"
    command = f'"$0" -m afbench export --root "$1" --output-dir "$2" --format {fmt} >&- 2>&-'
    done = subprocess.run(
        ["sh", "-c", command, sys.executable, str(demo), str(out)],
        capture_output=True,
        timeout=120,
        env={**os.environ, "SOURCE_DATE_EPOCH": "1790000000"},
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert sorted(p.name for p in out.iterdir())  # every file written


def test_a_refusal_with_stderr_closed_still_exits_2_and_keeps_stdout_clean(tmp_path):
    """print(file=None) would put the error line on standard output, among a command's
    results."""
    import subprocess
    import sys

    command = '"$0" -m afbench export --root "$1" --output-dir "$2" --format csv 2>&-'
    done = subprocess.run(
        ["sh", "-c", command, sys.executable, str(tmp_path / "none"), str(tmp_path / "out")],
        capture_output=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (2, b"")
