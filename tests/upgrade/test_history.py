"""A configuration's history across revisions (afbench.upgrade.history) in the report: on a store
built by afbench.exports.store from real imports and real runs of two constructed revisions, each
figure equals the comparison across revisions (afbench.upgrade.crossrev) of the same two results on
the same comparable subset; what is not compared says why; the refusals name the file; and on the
demo's two revisions, built by Snakemake into one store, the reports' figures equal the compare
artifacts and the store they came from, the report reruns when another revision's partitions
change, and not otherwise."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from test_crossrev import _run, _side, _statuses
from test_crossrev import world as world  # a fixture: the two constructed revisions
from test_store import SECOND, UPGRADE

from afbench.cli.actions import read_store_partitions
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import json_bytes
from afbench.exports import store
from afbench.kinds import ANALYSIS
from afbench.report.page import history_section, visible_text
from afbench.task_analysis.anatomy import configuration_rows, read_outcome_rows
from afbench.tasks.catalog import select_tasks
from afbench.upgrade.crossrev import comparable_subset, compare_results, local_side
from afbench.upgrade.history import STORED_TABLES, history

from conftest import demo_revision, planned, snakemake

REV1, REV2 = "1" * 40, "2" * 40
# what a side of the store holds that its import or run file held otherwise
FROM_THE_FILE = ("label", "results", "selection_sha256")


@pytest.fixture(scope="module")
def built(world, tmp_path_factory):
    """Revision 1's results (its catalog, model-x's import, a run of verdicts) written into a
    store by afbench.exports.store; revision 2's as the report has them (model-x and model-y, a
    run)."""
    root = tmp_path_factory.mktemp("history")
    old = root / "results" / REV1
    old.mkdir(parents=True)
    (old / "catalog.json").write_bytes(json_bytes(world["old"]))
    (old / "model-x.json").write_bytes(json_bytes(world["imports"]["x-old"]))
    old_tasks = select_tasks(world["old"], "first-two", sources=["s1", "s2"])["tasks"]
    new_tasks = select_tasks(world["new"], "first-two", sources=["s1", "s2"])["tasks"]
    before = _run(old, world["old"], "verdicts", {"1": _statuses(old_tasks, 1)})
    (root / "new").mkdir()
    after = _run(root / "new", world["new"], "verdicts", {"1": _statuses(new_tasks, 2)})
    partitions = [store.partition(root / "store", t, REV1) for t in store.TABLES]
    store.store_revision(old, partitions, REV1)
    return {
        "root": root,
        "partitions": [p for p in partitions if p.parent.parent.name in STORED_TABLES],
        "before": before,
        "after": after,
    }


def run_side(folder: Path) -> dict:
    summary = json.loads((folder / "summary.json").read_text())
    rows = configuration_rows(summary, read_outcome_rows(folder / "outcomes.csv"))
    return local_side(summary, rows, summary["configurations"][0]["configuration"])


def current_sides(world, built) -> list[dict]:
    imports = world["imports"]
    return [_side(imports["x-new"]), _side(imports["y-new"]), run_side(built["after"])]


def made(world, built, subsets=None, partitions=None) -> dict:
    subset = comparable_subset(world["comparable"])
    return history(
        REV2,
        world["new"]["inputs"],
        current_sides(world, built),
        read_store_partitions(built["partitions"] if partitions is None else partitions, REV2),
        [(subset, "comparable.json")] if subsets is None else subsets,
        0.95,
    )


# what depends on the family a comparison's p-values are adjusted over
FAMILY = ("p_sign_flip_holm", "p_holm", "significant", "significant_tasks_as_unit", "marked")


def without_holm(row: dict) -> dict:
    return {
        k: without_holm(v) if isinstance(v, dict) else v for k, v in row.items() if k not in FAMILY
    }


def test_each_figure_is_the_comparison_across_revisions_on_the_subset(world, built):
    block = made(world, built)
    ANALYSIS.field("history").type.check(block, "history")
    subset = comparable_subset(world["comparable"])
    (other,) = block["revisions"]
    assert other["revision"] == REV1 and other["comparable"] == subset.about
    assert (other["configurations"], other["compared"]) == (2, 2)
    x, y, run = block["configurations"]
    assert y["revisions"] == []  # model-y is not in revision 1
    imports = world["imports"]
    expected = {
        "x": compare_results([(_side(imports["x-old"]), _side(imports["x-new"]))], subset, 0.95)[
            "comparisons"
        ][0],
        "run": compare_results(
            [(run_side(built["before"]), run_side(built["after"]))], subset, 0.95
        )["comparisons"][0],
    }
    for name, entry in (("x", x), ("run", run)):
        (against,) = entry["revisions"]
        assert (against["revision"], against["status"]) == (REV1, "compared")
        row, want = against["comparison"], expected[name]
        assert against["tasks"] == row["tasks"] == want["tasks"] > 2
        for role in ("previous", "current"):
            assert {k: v for k, v in row[role].items() if k not in FROM_THE_FILE} == {
                k: v for k, v in want[role].items() if k not in FROM_THE_FILE
            }
        # the same numbers, every one; Holm is over this revision pair's two comparisons
        assert without_holm({**row, "previous": None, "current": None}) == without_holm(
            {**want, "previous": None, "current": None}
        )
        assert row["p_sign_flip_holm"] >= row["p_sign_flip"]
    # each side keeps its revision and its own rate: never one rate over both revisions
    row = run["revisions"][0]["comparison"]
    assert (row["previous"]["revision"], row["current"]["revision"]) == (REV1, REV2)
    assert row["previous"]["label"].endswith(REV1[:12])
    assert row["previous"]["success_rate"] == row["previous"]["solved"] / row["tasks"]
    assert row["current"]["success_rate"] == row["current"]["solved"] / row["tasks"]
    # the store's rows are named with the partitions they came from
    files = {f["file"]: f for f in block["store"]}
    assert sorted(files) == [f"{t}/revision={REV1}/part-0.parquet" for t in STORED_TABLES]
    assert x["revisions"][0]["comparison"]["previous"]["results"]["file"] in files


def test_the_section_shows_the_figures_and_says_what_is_not_compared(world, built):
    text = visible_text(history_section(made(world, built)))
    assert "History across revisions" in text
    row = made(world, built)["configurations"][2]["revisions"][0]["comparison"]
    assert f"{100 * row['difference']:+.1f} pp" in text
    assert f"{100 * row['previous']['success_rate']:.1f}%" in text
    assert "In no other revision of the store: MODEL-Y" in text
    # no diff between the two revisions among the inputs: each shared configuration says so
    block = made(world, built, subsets=[])
    assert block["revisions"][0]["comparable"] is None
    assert {e["status"] for c in block["configurations"] for e in c["revisions"]} == {"no-diff"}
    text = visible_text(history_section(block))
    assert "no diff between this revision and that one" in text
    assert "no comparable subset between the two revisions: not compared" in text
    # a store with no other revision, or none at all
    empty = made(world, built, partitions=[])
    assert empty["revisions"] == [] and all(not c["revisions"] for c in empty["configurations"])
    assert "holds no other revision than this one" in visible_text(history_section(empty))
    assert history_section(None) == ""
    # the same inputs, the same bytes
    assert history_section(made(world, built)) == history_section(made(world, built))


def test_a_configuration_with_too_few_comparable_tasks_says_so(world, built):
    """The run's outcomes on one comparable task and on changed ones only: nothing to pair."""
    side = run_side(built["after"])
    unchanged = set(comparable_subset(world["comparable"]).task_ids)
    keep = [t for t in side["tasks"] if t not in unchanged]
    assert keep  # the run has tasks the upgrade changed
    for common in (0, 1):
        tasks = keep + [t for t in side["tasks"] if t in unchanged][:common]
        block = history(
            REV2,
            world["new"]["inputs"],
            [{**side, "tasks": {t: side["tasks"][t] for t in tasks}}],
            read_store_partitions(built["partitions"], REV2),
            [(comparable_subset(world["comparable"]), "comparable.json")],
            0.95,
        )
        (entry,) = block["configurations"][0]["revisions"]
        assert (entry["status"], entry["tasks"], entry["comparison"]) == (
            "too-few-tasks",
            common,
            None,
        )
        assert f"{common} task(s) of the comparable subset on both sides" in visible_text(
            history_section(block)
        )


def test_partitions_and_subsets_that_do_not_fit_are_refused_by_name(
    world,
    built,
    tmp_path,
):
    partitions = built["partitions"]
    with pytest.raises(AfbenchError, match="this revision's own partition") as own:
        read_store_partitions(partitions, REV1)
    assert str(partitions[0]) in str(own.value)
    wrong = tmp_path / "official_results" / "part-0.parquet"
    wrong.parent.mkdir()
    shutil.copy(partitions[0], wrong)
    with pytest.raises(AfbenchError, match="not a store partition a history reads"):
        read_store_partitions([wrong], REV2)
    with pytest.raises(AfbenchError, match="its partition of run_outcomes is not given"):
        read_store_partitions(partitions[:1], REV2)
    damaged = store.partition(tmp_path / "s", "official_results", REV1)
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(partitions[0].read_bytes()[:-40])
    with pytest.raises(AfbenchError, match="not a readable partition of official_results") as bad:
        read_store_partitions([damaged], REV2)
    assert str(damaged) in str(bad.value)
    # a comparable subset of this revision made from other catalog files
    subset = comparable_subset(world["comparable"])
    subset.inputs = (subset.inputs[0], {"MANIFEST.csv": "0" * 64})
    with pytest.raises(AfbenchError, match="other catalog files than this report's"):
        made(world, built, subsets=[(subset, "elsewhere.json")])


# --- the demo's two revisions, built by Snakemake into one store ------------------------------
HISTORY_ON = "history.yaml"


def history_block(root: Path, revision: str) -> dict:
    analysis = json.loads((root / "results" / revision / "report/analysis.json").read_text())
    return analysis["history"]


@pytest.fixture(scope="module")
def demo_history(demo_store, tmp_path_factory) -> Path:
    """The demo's two revisions in one store, each report made again with report.history."""
    root = tmp_path_factory.mktemp("history-demo") / "project"
    shutil.copytree(demo_store, root, symlinks=True)
    (root / HISTORY_ON).write_text(yaml.safe_dump({"report": {"history": True}}))
    snakemake(root, "report", "--configfile", "config/demo.yaml", HISTORY_ON)
    snakemake(root, "report", *UPGRADE, HISTORY_ON)
    return root


def stored_successes(root: Path, revision: str, sql: str) -> dict[str, bool]:
    rows = store.query(root / "store", sql.format(revision=revision))[1]
    return {task: bool(solved) for task, solved in rows}


@pytest.mark.snakemake
@pytest.mark.xdist_group("store-demo")  # the session's one build of the demo's two revisions
def test_the_demo_reports_show_what_the_compare_artifacts_and_the_store_say(demo_history):
    first, root = demo_revision(), demo_history
    comparisons = json.loads((root / "results" / SECOND / "upgrade/comparisons.json").read_text())
    comparable = json.loads((root / "results" / SECOND / "upgrade/comparable.json").read_text())
    same = {
        (r["current"]["model"], r["current"]["run"]): r
        for r in comparisons["comparisons"]
        if (r["previous"]["model"], r["previous"]["run"])
        == (r["current"]["model"], r["current"]["run"])
    }
    assert set(same) == {("demo-model-a", None), (None, "demo-verdicts")}
    for revision in (SECOND, first):  # each report: the other revision, the one diff
        block = history_block(root, revision)
        (other,) = block["revisions"]
        assert other["revision"] == ({first, SECOND} - {revision}).pop()
        assert other["comparable"] == comparisons["comparable"]
        assert other["comparable"]["tasks"] == len(comparable["task_ids"])
        shown = {(c["model"], c["run"]): c for c in block["configurations"]}
        for key, want in same.items():
            (entry,) = shown[key]["revisions"]
            row = entry["comparison"]
            assert (row["previous"]["revision"], row["current"]["revision"]) == (first, SECOND)
            assert without_holm({**row, "previous": None, "current": None}) == without_holm(
                {**want, "previous": None, "current": None}
            )
            for role in ("previous", "current"):
                assert {k: v for k, v in row[role].items() if k not in FROM_THE_FILE} == {
                    k: v for k, v in want[role].items() if k not in FROM_THE_FILE
                }
        # the other revision's side, counted again from its store partition
        subset = set(comparable["task_ids"])
        other_side = "previous" if revision == SECOND else "current"
        solved = stored_successes(
            root,
            other["revision"],
            "SELECT task_id, success FROM official_results WHERE revision = '{revision}' "
            "AND model = 'demo-model-a'",
        )
        row = shown[("demo-model-a", None)]["revisions"][0]["comparison"]
        assert row[other_side]["solved"] == sum(v for t, v in solved.items() if t in subset)
        text = visible_text((root / "results" / revision / "report/index.html").read_text())
        assert "History across revisions" in text
        assert f"{100 * row['difference']:+.1f} pp" in text


@pytest.mark.snakemake
@pytest.mark.xdist_group("store-demo")  # the session's one build of the demo's two revisions
def test_without_the_setting_the_report_has_no_history(demo_store):
    for revision in (demo_revision(), SECOND):
        report = demo_store / "results" / revision / "report"
        assert "history" not in json.loads((report / "analysis.json").read_text())
        assert "History across revisions" not in (report / "index.html").read_text()


@pytest.mark.snakemake
@pytest.mark.xdist_group("store-demo")  # the session's one build of the demo's two revisions
def test_the_report_reruns_when_another_revisions_partitions_change_and_not_otherwise(
    demo_history, tmp_path
):
    root = tmp_path / "project"
    shutil.copytree(demo_history, root, symlinks=True)
    second = [*UPGRADE, HISTORY_ON]
    assert "render_report" not in planned(root, "report", *second)
    report = root / "results" / SECOND / "report"
    before = {p.name: p.read_bytes() for p in (report / "index.html", report / "analysis.json")}
    snakemake(root, "report", *second, "--forcerun", "render_report")
    assert {p.name: p.read_bytes() for p in (report / "index.html", report / "analysis.json")} == (
        before
    )
    # the first revision's partitions written again, the same bytes: nothing to make again
    snakemake(root, "store", "--forcerun", "store_results")
    assert "render_report" not in planned(root, "report", *second)
    # a task of the verdict run flipped in the first revision's partition: made again from it
    row = shown(history_block(root, SECOND), None, "demo-verdicts")["comparison"]
    partition = store.partition(root / "store", "run_outcomes", demo_revision())
    frame = pq.read_table(partition).to_pandas()
    subset = json.loads((root / "results" / SECOND / "upgrade/comparable.json").read_text())
    flipped = frame.index[
        (frame["run"] == "demo-verdicts") & frame["task_id"].isin(subset["task_ids"])
    ][0]
    was = frame.at[flipped, "outcome"] == "accepted"
    frame.at[flipped, "outcome"] = "rejected" if was else "accepted"
    partition.write_bytes(store.table_parquet(frame, "run_outcomes"))
    assert planned(root, "report", *second).get("render_report") == 1
    snakemake(root, "report", *second)
    again = shown(history_block(root, SECOND), None, "demo-verdicts")["comparison"]
    assert again["previous"]["solved"] == row["previous"]["solved"] + (-1 if was else 1)
    assert again["current"] == row["current"]


def shown(block: dict, model: str | None, run: str | None) -> dict:
    """The one comparison of a configuration of the report with the other revision."""
    (configuration,) = [
        c for c in block["configurations"] if (c["model"], c["run"]) == (model, run)
    ]
    (entry,) = configuration["revisions"]
    return entry
