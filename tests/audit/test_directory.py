"""`afbench audit`: every relation between the artifacts of a results directory, checked on
the demo pipeline's own directory (conftest.demo_project, copied per test), and each tampering
a hostile user can make named by the relation it breaks, without the directory being
written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_sequential import small as small  # a fixture: a small sequential design

from afbench.core.fsutil import json_bytes

from conftest import demo_revision


@pytest.fixture
def demo_dir(demo_project, tmp_path) -> Path:
    """A copy of the demo pipeline's results/<revision> for this test alone."""
    copy = tmp_path / "results" / demo_revision()
    shutil.copytree(demo_project / "results" / demo_revision(), copy, symlinks=True)
    return copy


def _audit(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(Path(sys.executable).with_name("afbench")), "audit", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _snapshot(root: Path) -> dict[str, tuple[int, int, bytes]]:
    return {
        p.relative_to(root).as_posix(): (p.stat().st_mtime_ns, p.stat().st_mode, p.read_bytes())
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_bytes())
    change(data)
    os.chmod(path, 0o644)
    path.write_bytes(json_bytes(data))


def _edit_bytes(path: Path, change) -> None:
    os.chmod(path, 0o644)
    path.write_bytes(change(path.read_bytes()))


@pytest.mark.snakemake  # the demo pipeline's directory, built once per session
def test_the_demo_directory_audits_whole_and_is_never_written(demo_dir, tmp_path):
    rev = demo_dir
    before = _snapshot(rev)
    record = tmp_path / "audit.json"
    done = _audit(str(rev), "--output", str(record))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines and all(line.startswith("held ") for line in lines)
    for relation in (
        "manifest-files", "receipt-files", "release-block", "verified-receipt", "catalog-itself",
        "catalog-receipt", "selection-catalog", "import-receipt", "import-catalog",
        "summary-import", "analysis-summary", "analysis-receipt", "plan-selection",
        "run-selection", "run-tables", "analysis-run",
    ):  # fmt: skip
        assert any(f"held   {relation} (" in line for line in lines), relation
    assert f"all {len(lines)} checks held" in done.stderr
    audit = json.loads(record.read_bytes())
    assert audit["kind"] == "afbench audit" and audit["held"] is True
    assert audit["counts"] == {"checks": len(lines), "held": len(lines), "failed": 0}
    assert _snapshot(rev) == before
    # copied elsewhere (another machine's path), the same record to the byte
    elsewhere = tmp_path / "elsewhere" / rev.name
    shutil.copytree(rev, elsewhere)
    again = tmp_path / "again.json"
    assert _audit(str(elsewhere), "--output", str(again)).returncode == 0
    assert again.read_bytes() == record.read_bytes()
    # and it never writes its record into the directory it audits
    inside = _audit(str(rev), "--output", str(rev / "audit.json"))
    assert inside.returncode == 2 and not (rev / "audit.json").exists()


def _drop_first_task(selection: dict) -> None:
    selection["task_ids"] = selection["task_ids"][1:]
    selection["tasks"] = selection["tasks"][1:]
    selection["counts"] = {
        "tasks": len(selection["tasks"]),
        "obligations": sum(t["n_obligations"] for t in selection["tasks"]),
    }


def _first_import(rev: Path) -> Path:
    return sorted((rev / "imports/source-present/budget-200").glob("demo-model-*.json"))[0]


# each: what is changed (a consistent-looking forgery where it can be one), and what the audit
# must say of it
TAMPERINGS = {
    "a release file's bytes": (
        lambda rev: _edit_bytes(rev / "release/SOURCES.csv", lambda b: b + b"\n"),
        ["FAILED receipt-files", "SOURCES.csv is not the file verified"],
    ),
    "a catalog row, its digests left alone": (
        lambda rev: _edit_json(
            rev / "tasks/catalog.json", lambda c: c["tasks"][0].__setitem__("source_ref", "X")
        ),
        ["FAILED catalog-itself", "catalog digests are not those of its row"],
    ),
    "a selection no longer matching its hash": (
        lambda rev: _edit_json(rev / "tasks/selections/demo-stratified.json", _drop_first_task),
        ["FAILED selection-catalog", "do not hash to its selection_sha256"],
    ),
    "an import's record under another source": (
        lambda rev: _edit_json(
            _first_import(rev), lambda i: i["records"][0].__setitem__("source_id", "elsewhere")
        ),
        ["FAILED import-catalog", "field 'records[0].source_id'"],
    ),
    "a summary's passes": (
        lambda rev: _edit_json(
            rev / "imports/source-present/budget-200/summary.json",
            lambda s: s["leaderboard"][0].__setitem__("passes", s["leaderboard"][0]["passes"] + 1),
        ),
        ["FAILED summary-import", ".passes'"],
    ),
    "the analysis' passes": (
        lambda rev: _edit_json(
            rev / "report/analysis.json",
            lambda a: a["leaderboard"][0].__setitem__("passes", 0),
        ),
        ["FAILED analysis-summary", "the analysis' row is not the summary's"],
    ),
    "a release block": (
        lambda rev: _edit_json(
            rev / "tasks/catalog.json", lambda c: c["release"].__setitem__("lean", "v0")
        ),
        ["FAILED release-block", "field 'release.lean'"],
    ),
    "an artifact changed after its manifest": (
        lambda rev: _edit_bytes(
            rev / "report/index.html", lambda b: b.replace(b"</body>", b"<p>x</p></body>")
        ),
        ["FAILED manifest-files", "report/index.html is not the file listed"],
    ),
    "a plan resealed over another selection": (
        lambda rev: _edit_json(
            rev / "plans/demo-first-tasks/nop.json",
            lambda p: p["selection"].__setitem__("selection_sha256", "0" * 64),
        ),
        ["FAILED plan-selection", "field 'selection.selection_sha256'"],
    ),
    "a run's outcome rewritten in its table": (
        lambda rev: _edit_bytes(
            rev / "runs/demo-harbor/outcomes.csv",
            lambda b: b.replace(b",rejected,0,reward 0,", b",accepted,1,reward 1,", 1),
        ),
        ["FAILED run-tables", "outcomes.csv"],
    ),
    "a file that is not JSON": (
        lambda rev: _edit_bytes(rev / "tasks/catalog.json", lambda b: b[:-40]),
        ["FAILED readable (read): tasks/catalog.json"],
    ),
}


@pytest.mark.snakemake
@pytest.mark.parametrize("case", TAMPERINGS, ids=list(TAMPERINGS))
def test_each_tampering_is_named_by_the_relation_it_breaks(demo_dir, tmp_path, case):
    rev = demo_dir
    tamper, said = TAMPERINGS[case]
    tamper(rev)
    before = _snapshot(rev)
    done = _audit(str(rev), "--output", str(tmp_path / "audit.json"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    for text in said:
        assert text in done.stdout, done.stdout
    assert "checks failed" in done.stderr
    assert json.loads((tmp_path / "audit.json").read_bytes())["held"] is False
    assert _snapshot(rev) == before


def test_a_folder_that_is_no_artifact_directory_is_one_line(tmp_path):
    missing = _audit(str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    (tmp_path / "empty").mkdir()
    empty = _audit(str(tmp_path / "empty"))
    assert empty.returncode == 1 and "no artifact to audit" in empty.stderr


def test_the_guarantees_page_lists_every_relation_as_declared():
    from afbench.kinds.relations import RELATIONS

    page = (Path(__file__).resolve().parents[2] / "docs/guarantees.md").read_text()
    listed = [line for line in page.splitlines() if line.startswith("| `")]
    assert [line.split("`")[1] for line in listed] == [r.name for r in RELATIONS]
    for line, relation in zip(listed, RELATIONS, strict=True):
        assert f"| {relation.binds} | {relation.method} |" in line


def _reseal(plan: dict) -> None:
    from afbench.plans.preregister import seal

    plan["sealed_sha256"] = ""
    plan["sealed_sha256"] = seal(plan)


@pytest.mark.snakemake
def test_a_sealed_run_plan_is_made_again_from_its_selection(demo_dir, tmp_path):
    """A paid run's sealed plan holds while it is the plan its selection, configuration and
    money give; resealed over another selection or with its worst case halved, the audit
    names the field, whatever the seal says."""
    selection = demo_dir / "tasks/selections/demo-first-tasks.json"
    plan = tmp_path / "run-plan.json"
    sealed = subprocess.run(
        [
            *[str(Path(sys.executable).with_name("afbench")), "job", "seal-run-plan"],
            *[f"--selection={selection}", f"--catalog={demo_dir / 'tasks/catalog.json'}"],
            *["--agent=claude-code", "--model=anthropic/demo"],
            *["--environment-type=docker", "--attempts=1", "--max-cost-usd=50"],
            *["--trial-cap-usd=2", f"--output={plan}"],
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sealed.returncode == 0, sealed.stderr
    shutil.copy(plan, demo_dir / "run-plan.json")
    held = _audit(str(demo_dir))
    assert held.returncode == 0, held.stdout
    line = (
        "run-plan-selection (re-derived): run-plan.json <- tasks/selections/demo-first-tasks.json"
    )
    assert f"held   {line}" in held.stdout, held.stdout
    for change, field in (
        (lambda p: p["selection"].__setitem__("selection_sha256", "0" * 64), "selection_sha256"),
        (lambda p: p["money"].__setitem__("worst_case_usd", 1.0), "money.worst_case_usd"),
    ):
        shutil.copy(plan, demo_dir / "run-plan.json")
        _edit_json(demo_dir / "run-plan.json", lambda p, change=change: (change(p), _reseal(p)))
        done = _audit(str(demo_dir))
        assert done.returncode == 1 and "FAILED run-plan-selection" in done.stdout, done.stdout
        assert field in done.stdout and "Traceback" not in done.stderr


@pytest.mark.snakemake
def test_what_seals_or_plans_refuses_a_selection_its_catalog_contradicts(demo_dir, tmp_path):
    """A selection with a task dropped and its hash left alone (a consistent forgery of its
    shape) is refused by each command that seals a plan over it or plans its trials, naming
    the selection, its catalog and the field; nothing is written."""
    repo = Path(__file__).resolve().parents[2]
    afbench = str(Path(sys.executable).with_name("afbench"))
    catalog = demo_dir / "tasks/catalog.json"
    forged = demo_dir / "tasks/selections/demo-stratified.json"
    _edit_json(forged, _drop_first_task)
    on_it = tmp_path / "compare-stratified.yaml"
    on_it.write_text("preregister: {comparison: {selection: demo-stratified}}\n")
    out = tmp_path / "out"
    commands = {
        "preregister": [
            *[afbench, "preregister", "--config", str(repo / "config/demo.yaml")],
            *["--config", str(repo / "config/compare-demo.yaml"), "--config", str(on_it)],
            *["--selection", str(forged)],
            *["--catalog", str(catalog), "--output", str(out / "plan.json")],
        ],
        "seal-run-plan": [
            *[afbench, "job", "seal-run-plan", f"--selection={forged}", f"--catalog={catalog}"],
            *["--agent=claude-code", "--model=anthropic/demo", "--environment-type=docker"],
            *["--attempts=1", "--max-cost-usd=50", "--trial-cap-usd=", f"--output={out / 'r'}"],
        ],
        "write-plan": [
            *[afbench, "job", "write-plan", f"--catalog={catalog}", f"--selection={forged}"],
            *["--agent=nop", f"--repository-dir={tmp_path}", "--tasks-dir=harbor/tasks"],
            *["--jobs-dir=jobs", "--environment-type=docker", "--harbor=harbor"],
            f"--output={out / 'p.json'}",
        ],
    }
    for name, argv in commands.items():
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (name, done.stderr)
        assert "do not hash to its selection_sha256" in done.stderr, (name, done.stderr)
        assert str(forged) in done.stderr and str(catalog) in done.stderr, (name, done.stderr)
        assert not out.exists(), name


def test_an_executed_run_s_outcomes_are_the_decision_s_task_by_task(tmp_path, small):
    """A sealed comparison's first batch (a's trial of solve-fails erred, then was rejected
    on its rerun) imported as its executed run: its outcomes held to the decision's, task by
    task, through the attempt that stands. Imported with each attempt its own (the pooled rule,
    which made that task an error) or with an outcome rewritten, the audit names the outcomes
    file, the row, the task and the field; nothing of the directory is written."""
    from test_sequential import run_plan
    from test_summary import NOP_K1, ORACLE_K1, executed_attempt, import_executed

    from afbench.audit.directory import audit_directory
    from afbench.execution import sequential
    from afbench.kinds import RUN_SUMMARY

    order = ["solve-fails", "hello-pass", "agent-timeout", "no-reward", "bad-reward", "no-solution"]
    plan = run_plan(small, order)
    for side, agent in (("a", "oracle"), ("b", "nop")):
        plan["configurations"][side] |= {"agent": agent, "label": agent, "attempts": 2}
        plan["primary_comparison"][side] = agent
    plan["infrastructure_errors"] = {
        "rule": sequential.RERUN_THEN_EXCLUDE,
        "statement": sequential.ERROR_STATEMENT,
    }
    receipts = [
        executed_attempt(tmp_path, "solve-fails", 1, "error", 2.0),
        executed_attempt(tmp_path, "solve-fails", 2, "rejected", 2.0),
        executed_attempt(tmp_path, "solve-fails", 1, "rejected", 2.0, agent="nop"),
        executed_attempt(tmp_path, "hello-pass", 1, "accepted", 2.0),
        executed_attempt(tmp_path, "hello-pass", 1, "rejected", 2.0, agent="nop"),
    ]
    step = sequential.run_step(plan, receipts, step=2)
    assert step["looks"][0]["tasks"] == 2 and step["retries"] == 1
    root = tmp_path / "results" / "rev"
    (root / "execute/sequential").mkdir(parents=True)
    (root / "execute/sequential/step-2.json").write_bytes(json_bytes(step))
    checked = {
        "note": "the run against its sealed plan",
        "plan_sha256": plan["sealed_sha256"],
        "primary_comparison": {"selection": "s", "a": "oracle", "b": "nop"},
        "as_planned": True,
        "problems": [],
        # as afbench.runs.conformance lists the pairs: by the run's labels, so b's first here
        "comparisons": [
            {"a": "nop", "b": "oracle", "configurations": [NOP_K1, ORACLE_K1]}
            | {"role": "confirmatory", "reason": "as planned", "plan_sha256": "0" * 64}
        ],
    }
    run = root / "runs/executed"

    def imported(reruns: bool) -> None:
        summary, _, _ = import_executed(tmp_path, receipts, order, reruns=reruns, out=run)
        body = RUN_SUMMARY.body(summary)
        (run / "summary.json").write_bytes(
            json_bytes(RUN_SUMMARY.record(**body, analysis_plan=checked))
        )

    def decision_lines() -> list[dict]:
        before = _snapshot(root)
        lines = [c for c in audit_directory(root)["checks"] if c["relation"] == "run-decision"]
        assert _snapshot(root) == before
        return lines

    imported(reruns=True)
    [held] = decision_lines()
    assert held["held"], held["problems"]
    assert (held["artifact"], held["derived_from"]) == (
        "runs/executed/outcomes.csv",
        "execute/sequential/step-2.json",
    )
    # the old import's rule: every attempt pooled, so solve-fails is a's error
    imported(reruns=False)
    [failed] = decision_lines()
    [problem] = failed["problems"]
    assert not failed["held"] and problem.startswith(
        "runs/executed/outcomes.csv: row 8: field 'outcome': task 'solve-fails', configuration a "
        f"({ORACLE_K1}): not the outcome the decision read"
    )
    assert "(expected rejected, found 'error')" in problem
    # a verdict rewritten in the table
    imported(reruns=True)
    _edit_bytes(
        run / "outcomes.csv",
        lambda b: b.replace(b"hello-pass,rejected,0", b"hello-pass,accepted,1"),
    )
    [failed] = decision_lines()
    [problem] = failed["problems"]
    assert "row 3: field 'outcome': task 'hello-pass', configuration b" in problem
    assert "(expected rejected, found 'accepted')" in problem
