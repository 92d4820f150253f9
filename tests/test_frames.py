"""afbench.frames and `afbench export` on the demo release: artifacts built by the pipeline's
chain (run_all), two local runs (the Harbor 0.22.0 fixtures, and verdict files on demo
tasks), then every table read, typed, cross-checked and written out."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
import warnings
from itertools import combinations
from pathlib import Path

import pandas as pd
import pytest
import test_watch

import afbench.frames as af
from afbench.cli import build_parser, main
from afbench.core.errors import AfbenchError
from afbench.execution import ledger

from conftest import (
    FIXTURES,
    VERDICTS,
    add_local_runs,
    afbench,
    copy_demo_run,
    revision_dir,
    verdict,
)

# tests/execution/test_watch.py's run in the middle: trial receipts and a live ledger, no Docker
run = test_watch.run

# docs/exports.md's example ("Results as DataFrames"), run as written by the test below.
README_EXAMPLE = """\
import afbench.frames as af

root = "results/32dc044889dee3431a6106dfb8d47867e2cc087c"  # what `make demo` wrote

board = af.leaderboard(root)  # one row per model, with the report's Wilson intervals
board[["rank", "model", "passes", "success_rate", "wilson_low", "wilson_high"]]

results = af.official_results(root)  # one row per model x task, as the authors reported it
results.pivot_table(index="source_id", columns="model", values="success", aggfunc="mean")

pairs = af.comparisons(root)  # paired comparisons: sign-flip over sources (and exact McNemar), Holm
pairs[pairs.significant][["a", "b", "difference", "difference_low", "difference_high"]]

tasks = af.tasks(root)
unsolved = results[~results.success].merge(tasks[["task_id", "source_ref"]], on="task_id")
unsolved.nlargest(5, "cost_usd")[["model", "task_id", "source_ref", "cost_usd", "stop_reason"]]
"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory, demo_run) -> Path:
    """results/<the demo revision>/ as the pipeline lays it out, under a folder that is the
    working directory of the README example; plus two local runs."""
    base = tmp_path_factory.mktemp("frames")
    rev = revision_dir(copy_demo_run(demo_run, base))  # run_all's tree, copied
    add_local_runs(base, rev)
    return rev


# the demo runs no trials (`snakemake execute`): its folder has every table but these
EXECUTED = ("receipts", "ledger_entries")
DEMO_TABLES = [name for name in af.TABLES if name not in EXECUTED]


def subset(rev: Path, dest: Path, *parts: str) -> Path:
    """A copy of some of the artifact directory (writable)."""
    for part in parts:
        src = rev / part
        if src.is_dir():
            shutil.copytree(src, dest / part)
        else:
            (dest / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / part)
    return dest


def check_schema(df: pd.DataFrame, table: str) -> None:
    schema = af.COLUMNS[table]
    assert list(df.columns) == list(schema)
    for column, spec in schema.items():
        dtype = df[column].dtype
        if isinstance(spec, tuple):
            assert list(dtype.categories) == list(spec), column
        elif spec == "category":
            assert isinstance(dtype, pd.CategoricalDtype), column
            assert list(dtype.categories) == sorted(df[column].dropna().unique()), column
        else:
            assert dtype == spec, (column, dtype)


# --- the tables -----------------------------------------------------------------------------
def test_tasks_has_one_typed_row_per_catalog_task(demo):
    tasks = af.tasks(demo)
    catalog = json.loads((demo / "tasks/catalog.json").read_text())
    check_schema(tasks, "tasks")
    assert len(tasks) == 341 and tasks.task_id.is_unique
    assert list(tasks.task_id) == [t["task_id"] for t in catalog["tasks"]]
    assert tasks.n_obligations.sum() == 1155
    assert tasks.source_id.nunique() == 24
    titles = {s["source_id"]: s["title"] for s in catalog["sources"]}
    assert (tasks.source_title == tasks.source_id.astype(str).map(titles)).all()
    assert all(
        u.endswith("/" + w) for u, w in zip(tasks.workspace_url, tasks.workspace, strict=True)
    )
    assert tasks.attrs["revision"] == demo.name
    assert tasks.attrs["artifacts"] == ["tasks/catalog.json"]


def test_official_results_one_row_per_model_and_task_with_the_leaderboards_passes(demo):
    results, board = af.official_results(demo), af.leaderboard(demo)
    check_schema(results, "official_results")
    assert len(results) == 9 * 341
    assert not results.duplicated(["model", "task_id"]).any()
    assert results.groupby("model").size().eq(341).all()
    passes = results.groupby("model").success.sum()
    assert passes.to_dict() == dict(zip(board.model.astype(str), board.passes, strict=True))
    summary = json.loads((demo / "imports/source-present/budget-200/summary.json").read_text())
    assert passes.to_dict() == {row["model"]: row["passes"] for row in summary["leaderboard"]}
    assert (results.success == (results.stop_reason == "solved")).all()
    assert set(results.source_condition) == {"source-present"}
    assert (results.budget_usd == 200).all()
    # unknown finish times stay unknown: NaT, as many as the imports count
    unknown = 0
    for path in (demo / "imports/source-present/budget-200").glob("demo-model-*.json"):
        unknown += json.loads(path.read_text())["finished_at"]["unknown"]
    assert unknown > 0 and results.finished_at.isna().sum() == unknown
    first = results.loc[results.finished_at.notna()].iloc[0]
    assert first.finished_at.tzinfo is not None
    # over budget exactly where the reported cost exceeds the budget, as the audit counts it
    assert (results.over_budget == (results.cost_usd > results.budget_usd)).all()
    assert results.over_budget.sum() == board.over_budget_records.sum() > 0


def test_leaderboard_is_the_summarys_with_the_reports_wilson_intervals(demo, tmp_path):
    board = af.leaderboard(demo)
    check_schema(board, "leaderboard")
    with open(demo / "imports/source-present/budget-200/leaderboard.csv", newline="") as f:
        written = list(csv.DictReader(f))
    assert list(board.model.astype(str)) == [row["model"] for row in written]
    assert list(board["rank"]) == list(range(1, 10))
    assert list(board.passes) == [int(row["passes"]) for row in written]
    assert (board.wilson_low < board.success_rate).all()
    assert (board.success_rate < board.wilson_high).all()
    assert (board.confidence == 0.95).all()
    assert len(board.attrs["artifacts"]) == 2  # the summary and the analysis
    # without the report: the same leaderboard, its interval columns unknown (not 0)
    bare = af.leaderboard(subset(demo, tmp_path, "imports"))
    check_schema(bare, "leaderboard")
    from_report = list(af.COLUMNS["leaderboard"])[20:]
    assert from_report[0] == "confidence" and "design_effect" in from_report
    assert "clustered_df" in from_report and "errors_clustered_low" in from_report
    assert bare[from_report].isna().all().all()
    pd.testing.assert_frame_equal(bare.iloc[:, :20], board.iloc[:, :20])
    # the summary's tiers, bounds and published counts are there without the report
    assert bare.leader_tier.iloc[0] and bare.letters.iloc[0] == "a"
    assert (bare.passes_errors_as_successes == bare.passes + bare.infrastructure_errors).all()
    assert (bare.published_passes == bare.passes).all() and bare.matches_published.all()


def test_leaderboard_refuses_an_analysis_of_another_comparison(demo, tmp_path):
    root = subset(demo, tmp_path, "imports", "report/analysis.json")
    analysis = root / "report/analysis.json"
    doc = json.loads(analysis.read_text())
    doc["leaderboard"][0]["passes"] -= 1
    analysis.write_text(json.dumps(doc))
    with pytest.raises(AfbenchError, match="does not come from the comparison summary") as err:
        af.leaderboard(root)
    assert str(analysis) in str(err.value)


def test_comparisons_counts_agree_with_the_per_task_results(demo):
    pairs, results = af.comparisons(demo), af.official_results(demo)
    check_schema(pairs, "comparisons")
    assert len(pairs) == 36  # 9 models, every pair once
    assert ((pairs.both + pairs.only_a + pairs.only_b + pairs.neither) == pairs.tasks).all()
    wide = results.pivot(index="task_id", columns="model", values="success").astype(bool)
    for a, b in combinations(sorted(wide.columns), 2):
        row = pairs[((pairs.a == a) & (pairs.b == b)) | ((pairs.a == b) & (pairs.b == a))]
        assert len(row) == 1
        row = row.iloc[0]
        first, second = wide[row.a], wide[row.b]
        assert row.both == (first & second).sum()
        assert row.only_a == (first & ~second).sum()
        assert row.only_b == (~first & second).sum()
    assert (pairs.difference - (pairs.only_a - pairs.only_b) / pairs.tasks).abs().max() < 1e-12
    assert (pairs.difference_low < pairs.difference).all()
    assert (pairs.difference < pairs.difference_high).all()
    # the decision shown is the sign-flip test's; the task-level one is beside it
    assert (pairs.significant == (pairs.p_sign_flip_holm < 0.05)).all()
    assert (pairs.significant_tasks_as_unit == (pairs.p_holm < 0.05)).all()
    assert (pairs.p_holm >= pairs.p_exact).all()
    assert (pairs.p_sign_flip_holm >= pairs.p_sign_flip).all()
    assert (pairs.clustered_sources == 24).all() and (pairs.clustered_df <= 23).all()


def test_run_tables_one_row_per_trial_and_per_configuration_and_task(demo):
    attempts, outcomes = af.run_attempts(demo), af.run_outcomes(demo)
    check_schema(attempts, "run_attempts")
    check_schema(outcomes, "run_outcomes")
    assert set(attempts.run) == set(outcomes.run) == {"harbor-fixtures", "verdicts-three"}
    harbor = attempts[attempts.run == "harbor-fixtures"]
    trials = [t for job in FIXTURES.iterdir() for t in job.iterdir() if t.is_dir()]
    assert len(harbor) == len(trials) == harbor.trial_name.nunique()
    summary = json.loads((demo / "runs/harbor-fixtures/summary.json").read_text())
    labels = [c["configuration"] for c in summary["configurations"]]
    runs_outcomes = outcomes[outcomes.run == "harbor-fixtures"]
    assert len(labels) > 1 and len(runs_outcomes) == len(labels) * 9
    assert set(runs_outcomes.configuration) == set(labels)
    for frame in (attempts, outcomes):
        # the reward follows the outcome; an error (or anything undecided) is null, never 0
        assert (frame.reward[frame.outcome == "accepted"] == 1).all()
        assert (frame.reward[frame.outcome == "rejected"] == 0).all()
        undecided = ~frame.outcome.isin(["accepted", "rejected"])
        assert undecided.any() and frame.reward[undecided].isna().all()
        assert (frame.outcome == "error").sum() > 0
    errors = attempts[(attempts.outcome == "error") & (attempts.run == "harbor-fixtures")]
    assert {"VerifierTimeoutError", "invalid_reward (0.5)"} <= set(errors.reason)
    per_config = outcomes.groupby(["run", "configuration"]).outcome.value_counts().unstack()
    for config in summary["configurations"]:
        row = per_config.loc[("harbor-fixtures", config["configuration"])]
        assert row.to_dict() == config["counts"]
    verdicts = outcomes[outcomes.run == "verdicts-three"].set_index("task_id")
    assert verdicts.outcome.to_dict() == VERDICTS
    assert verdicts.reward.loc["demo_s01_t003"] is pd.NA


def test_selections_have_one_row_per_task_of_each_selection_in_its_order(demo):
    found = af.selections(demo)
    check_schema(found, "selections")
    selections = [
        json.loads(p.read_text()) for p in sorted((demo / "tasks/selections").glob("*.json"))
    ]
    assert selections and len(found) == sum(len(s["tasks"]) for s in selections)
    for selection in selections:
        rows = found[found.selection == selection["name"]]
        assert list(rows.task_id) == selection["task_ids"]
        assert list(rows.position) == list(range(1, len(rows) + 1))
        assert set(rows.selection_sha256) == {selection["selection_sha256"]}
        assert set(rows.selection_tasks) == {selection["counts"]["tasks"]}
        assert list(rows.source_id) == [t["source_id"] for t in selection["tasks"]]
    assert list(found.selection.unique()) == sorted(s["name"] for s in selections)


def test_the_ledger_entry_declaration_is_the_ledger_s_own_lines():
    from afbench.kinds.execution import LEDGER_ENTRY

    assert set(LEDGER_ENTRY.names) == {"event", *ledger.FIELD_CHECKS}
    # every line has what every event's line has; the rest only some events' lines
    always = {f.name for f in LEDGER_ENTRY.fields if not f.optional} - {"event"}
    assert tuple(ledger.REQUIRED) == ledger.EVENTS
    for event, needed in ledger.REQUIRED.items():
        assert always <= set(needed) <= set(LEDGER_ENTRY.names), event
        own = {f.name for f in LEDGER_ENTRY.fields if f.optional and event in f.doc.split(":")[0]}
        assert set(needed) - always <= own, event


def test_receipts_and_ledger_entries_from_a_run_with_trials(run, tmp_path, capsys):
    folder = run["receipts"]
    receipts = {
        doc["job_name"]: doc
        for doc in (json.loads(p.read_text()) for p in sorted(folder.rglob("attempt-*.json")))
    }
    found = af.receipts(folder)
    check_schema(found, "receipts")
    assert list(found.job_name) == ["p1", "o1", "o2"]  # a:B's before oracle's, by task
    assert list(found.outcome) == [receipts[n]["outcome"] for n in found.job_name]
    assert found.attrs["revision"] == "a" * 40
    entries = ledger.read_entries(run["ledger"])
    kept = af.ledger_entries(folder, entries)
    check_schema(kept, "ledger_entries")
    assert set(kept.job_name) == set(receipts)  # o3, p2, p3 have no receipt here
    assert list(kept.entry) == [
        n for n, e in enumerate(entries, start=1) if e["job_name"] in receipts
    ]
    with pytest.raises(AfbenchError, match="no artifact of the folder"):
        af.ledger_entries(folder)
    # export: the ledger's table when its file is given, and only then (parquet: the
    # placeholder receipts' empty texts, which a CSV cell can not tell from unknown, kept)
    out = tmp_path / "tables"
    argv = ["export", "--root", str(folder), "--format", "parquet", "--output-dir", str(out)]
    assert main([*argv, "--ledger", str(run["ledger"])]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["ledger_entries.parquet", "receipts.parquet"]
    pd.testing.assert_frame_equal(af.read_export(out / "ledger_entries.parquet"), kept)
    pd.testing.assert_frame_equal(af.read_export(out / "receipts.parquet"), found)
    assert main([*argv, "--table", "ledger_entries"]) == 2
    assert "afbench export --ledger FILE" in capsys.readouterr().err
    paper = [*argv[:3], "--format", "markdown", "--output-dir", str(tmp_path / "paper")]
    assert main([*paper, "--ledger", str(run["ledger"])]) == 2
    assert "--ledger is for csv or parquet" in capsys.readouterr().err


def test_an_error_written_with_reward_0_is_refused(demo, tmp_path):
    root = subset(demo, tmp_path, "runs/verdicts-three")
    path = root / "runs/verdicts-three/outcomes.csv"
    lines = path.read_text().splitlines()
    row = next(i for i, line in enumerate(lines) if ",error,," in line)
    lines[row] = lines[row].replace(",error,,", ",error,0,")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(AfbenchError) as err:
        af.run_outcomes(root)
    message = str(err.value)
    assert str(path) in message and f"row {row + 1}" in message and "field 'reward'" in message
    assert "never 0" in message


@pytest.mark.parametrize("name", list(af.TABLES))
def test_a_folder_without_the_artifact_is_one_error_naming_it(name, demo, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(AfbenchError, match="no .* in this folder") as err:
        af.TABLES[name](tmp_path / "empty")
    assert str(tmp_path / "empty") in str(err.value)
    only_catalog = subset(demo, tmp_path / "catalog", "tasks/catalog.json")
    if name != "tasks":
        with pytest.raises(AfbenchError, match="no .* in this folder"):
            af.TABLES[name](only_catalog)
    with pytest.raises(AfbenchError, match="no such folder"):
        af.TABLES[name](tmp_path / "missing")


def test_a_folder_mixing_two_revisions_is_refused(demo, tmp_path):
    root = subset(demo, tmp_path, "tasks/catalog.json", "imports")
    other = root / "imports/source-present/budget-200/demo-model-a.json"
    doc = json.loads(other.read_text())
    doc["release"]["revision"] = "f" * 40
    other.write_text(json.dumps(doc, indent=2))
    with pytest.raises(AfbenchError, match="mixes artifacts of several release revisions") as e:
        af.tasks(root)  # even a table that does not read the odd artifact
    assert "f" * 40 in str(e.value) and demo.name in str(e.value) and str(root) in str(e.value)


def test_an_artifact_of_another_schema_version_is_refused_naming_it(demo, tmp_path):
    root = subset(demo, tmp_path, "tasks/catalog.json")
    path = root / "tasks/catalog.json"
    path.write_text(path.read_text().replace('"schema_version": 1', '"schema_version": 99', 1))
    with pytest.raises(AfbenchError, match="incompatible afbench") as err:
        af.tasks(root)
    assert str(path) in str(err.value) and "schema_version" in str(err.value)


def test_artifacts_are_found_by_kind_in_regular_files_only(demo, tmp_path):
    root = tmp_path / "anywhere"
    (root / "deep/er").mkdir(parents=True)
    # found by its kind, whatever its name, even with `kind` not its first key
    catalog = json.loads((demo / "tasks/catalog.json").read_text())
    (root / "deep/er/my-tasks.json").write_text(json.dumps(catalog, sort_keys=True))
    (root / "deep/result.json").write_text('{"id": "a Harbor job, not an artifact"}')
    (root / "notes.json").write_text("not JSON at all")
    assert len(af.tasks(root)) == 341
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "catalog.json").symlink_to(demo / "tasks/catalog.json")
    (linked / ".hidden.json").write_bytes((demo / "tasks/catalog.json").read_bytes())
    with pytest.raises(AfbenchError, match="no task catalog"):
        af.tasks(linked)
    shutil.copyfile(demo / "tasks/catalog.json", root / "second.json")
    with pytest.raises(AfbenchError, match="2 task catalogs") as err:
        af.tasks(root)
    assert str(root / "second.json") in str(err.value)


def test_available_tables_are_those_whose_artifacts_the_folder_holds(demo, tmp_path):
    assert af.available_tables(demo) == DEMO_TABLES
    assert af.available_tables(subset(demo, tmp_path, "imports")) == [
        "official_results",
        "leaderboard",
        "official_failures",  # the failure anatomy and the task table live beside the imports
        "task_table",
    ]


# --- export ---------------------------------------------------------------------------------
def test_export_csv_round_trips_every_table(demo, tmp_path):
    out = tmp_path / "tables"
    assert main(["export", "--root", str(demo), "--format", "csv", "--output-dir", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t}.csv" for t in DEMO_TABLES)
    for name in DEMO_TABLES:
        pd.testing.assert_frame_equal(af.read_export(out / f"{name}.csv"), af.TABLES[name](demo))
    text = (out / "official_results.csv").read_text()
    assert re.search(r",2026-\d\d-\d\dT\d\d:\d\d:\d\dZ,", text)  # ISO 8601 UTC
    header = (out / "run_outcomes.csv").read_text().splitlines()[0]
    assert header.startswith("run,configuration,task_id,outcome,reward,")


def test_export_parquet_round_trips_every_table(demo, tmp_path):
    pytest.importorskip("pyarrow", reason="the optional parquet extra (pyarrow) is absent")
    out = tmp_path / "tables"
    afbench("export", "--root", demo, "--format", "parquet", "--output-dir", out)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t}.parquet" for t in DEMO_TABLES)
    for name in DEMO_TABLES:
        frame = af.TABLES[name](demo)
        written = pd.read_parquet(out / f"{name}.parquet")
        pd.testing.assert_frame_equal(written, frame)
        assert written.attrs == frame.attrs and frame.attrs["revision"] == demo.name
        pd.testing.assert_frame_equal(af.read_export(out / f"{name}.parquet"), frame)
    again = tmp_path / "again"
    afbench("export", "--root", demo, "--format", "parquet", "--output-dir", again)
    for name in DEMO_TABLES:  # deterministic bytes, like every other artifact
        assert (again / f"{name}.parquet").read_bytes() == (out / f"{name}.parquet").read_bytes()


def test_export_writes_only_the_tables_asked_and_nothing_on_a_refusal(demo, tmp_path, capsys):
    out = tmp_path / "some"
    afbench(
        "export",
        "--root",
        demo,
        "--format",
        "csv",
        "--output-dir",
        out,
        "--table",
        "leaderboard",
        "--table",
        "comparisons",
    )
    assert sorted(p.name for p in out.iterdir()) == ["comparisons.csv", "leaderboard.csv"]
    imports_only = subset(demo, tmp_path / "imports-only", "imports")
    refused = tmp_path / "refused"
    argv = ["export", "--root", str(imports_only), "--format", "csv", "--output-dir", str(refused)]
    assert main([*argv, "--table", "leaderboard", "--table", "run_outcomes"]) == 2
    assert "no local run in this folder" in capsys.readouterr().err
    assert not refused.exists()  # not even the leaderboard, built before the refusal
    assert main([*argv, "--table", "nonsense"]) == 2
    assert "unknown table" in capsys.readouterr().err
    assert (
        main(
            [
                "export",
                "--root",
                str(tmp_path / "refused"),
                "--format",
                "csv",
                "--output-dir",
                str(refused),
            ]
        )
        == 2
    )
    assert "no such folder" in capsys.readouterr().err


def test_export_csv_guards_cells_a_spreadsheet_would_run(demo):
    board = af.leaderboard(demo)
    board["display_name"] = board["display_name"].astype(object)
    board.loc[0, "display_name"] = "=HYPERLINK(1)"
    board["display_name"] = board["display_name"].astype("string")
    text = af.table_bytes(board, "csv").decode()
    assert ",'=HYPERLINK(1)," in text and ",=HYPERLINK" not in text


def without_pyarrow(*argv: str) -> subprocess.CompletedProcess:
    """`afbench ARGV` in a Python where pyarrow cannot be imported (pandas then keeps its
    strings in Python objects)."""
    code = (
        "import sys; sys.modules['pyarrow'] = None\n"
        "from afbench.cli import main\n"
        f"sys.exit(main({list(argv)!r}))"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


def test_without_pyarrow_csv_is_the_same_and_parquet_one_error_naming_the_lock(demo, tmp_path):
    out = tmp_path / "tables"
    done = without_pyarrow(
        "export", "--root", str(demo), "--format", "parquet", "--output-dir", str(out)
    )
    assert done.returncode == 2
    assert "requirements/run.txt (pyarrow)" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
    done = without_pyarrow(
        "export", "--root", str(demo), "--format", "csv", "--output-dir", str(out)
    )
    assert done.returncode == 0, done.stderr
    afbench("export", "--root", demo, "--format", "csv", "--output-dir", tmp_path / "here")
    for name in DEMO_TABLES:
        assert (out / f"{name}.csv").read_bytes() == (tmp_path / f"here/{name}.csv").read_bytes()


def test_other_commands_do_not_import_pandas(tmp_path):
    (tmp_path / "v.json").write_text(json.dumps(verdict("t1", "accepted")))
    code = (
        "import sys\n"
        "from afbench.cli import main\n"
        f"rc = main(['verdict', '--path', {str(tmp_path / 'v.json')!r}, '--task', 't1', "
        f"'--output', {str(tmp_path / 'out.json')!r}])\n"
        "assert rc == 0 and 'pandas' not in sys.modules, sorted(sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.json").exists()


def test_export_help_names_every_table():
    text = build_parser().format_help()
    assert "export" in text
    sub = build_parser()._subparsers._group_actions[0].choices["export"]
    for name in af.TABLES:
        assert name in sub.format_help()


# --- the README's example -------------------------------------------------------------------
def test_readme_example_runs_as_written_on_the_demo_output(demo, monkeypatch):
    assert f'root = "results/{demo.name}"' in README_EXAMPLE, "the demo revision changed"
    monkeypatch.chdir(demo.parent.parent)  # the folder holding results/<revision>
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation in what users copy
        exec(compile(README_EXAMPLE, "README example", "exec"), namespace)
    assert len(namespace["board"]) == 9 and len(namespace["results"]) == 9 * 341
    assert namespace["pairs"].significant.any()
    assert len(namespace["unsolved"]) == (~namespace["results"].success).sum()
    from test_readme import blocks

    shown = [
        text
        for marker, _, text in blocks()
        if marker and "tests/test_frames.py::test_readme_example_runs_as_written" in marker
    ]
    assert shown == [README_EXAMPLE], "docs/exports.md's example differs from this test's"
