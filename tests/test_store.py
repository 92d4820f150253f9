"""The results store (afbench.store): the demo's two revisions built into one store by
`snakemake store`, typed as declared, byte-stable on a rebuild, each revision's partitions its
own; and the queries of docs/store.md answered from it as the artifacts they came from say."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from afbench import frames, store
from afbench.errors import AfbenchError

from conftest import REPO, demo_revision, snakemake

UPGRADE = ["--configfile", "config/demo.yaml", "config/demo-upgrade.yaml"]
SECOND = yaml.safe_load((REPO / "config/demo-upgrade.yaml").read_text())["release"]["revision"]
IMPORTS = "imports/source-present/budget-200"


@pytest.fixture(scope="module")
def demo_store(demo_project, tmp_path_factory) -> Path:
    """A demo project whose store holds both revisions: the session's demo (its store built by
    `all`) with the digests the second's diff needs, then the upgrade."""
    root = tmp_path_factory.mktemp("store") / "project"
    shutil.copytree(demo_project, root, symlinks=True)
    snakemake(root, "store", "digests")
    snakemake(root, "store", *UPGRADE)
    return root


def digests(root: Path) -> dict[str, tuple[str, int]]:
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted((root / "store").rglob("*.parquet"))
    }


@pytest.mark.snakemake
@pytest.mark.xdist_group("store-demo")  # one build of the module's demo store
def test_the_store_holds_every_table_of_both_revisions_typed_as_declared(demo_store):
    for table in store.TABLES:
        for revision in (demo_revision(), SECOND):
            path = store.partition(demo_store / "store", table, revision)
            written = pq.read_schema(path)
            assert written.equals(store.schema(table), check_metadata=False), (table, written)
            assert [f.name for f in written] == list(frames.COLUMNS[table])
    assert tuple(frames.TABLES) == store.TABLES
    meaning = store.schema("leaderboard").field("source_condition").metadata[b"meaning"]
    assert meaning.decode() == store.meaning(frames.SPECS["leaderboard"][0])


@pytest.mark.snakemake
@pytest.mark.xdist_group("store-demo")  # one build of the module's demo store
def test_a_rebuild_writes_the_same_bytes_and_never_another_revision(demo_store, tmp_path):
    before = digests(demo_store)
    assert len(before) == 2 * len(store.TABLES)
    snakemake(demo_store, "store", "--forcerun", "store_results")
    after = digests(demo_store)
    assert {k: v[0] for k, v in after.items()} == {k: v[0] for k, v in before.items()}
    second = {k: v for k, v in before.items() if f"revision={SECOND}" in k}
    assert {k: after[k] for k in second} == second  # not even rewritten
    # the same revision written into a fresh store: the same bytes again
    results = demo_store / "results" / demo_revision()
    again = [store.partition(tmp_path / "again", t, demo_revision()) for t in store.TABLES]
    written = store.store_revision(results, again, demo_revision())
    for path in written:
        relative = str(Path("store") / path.relative_to(tmp_path / "again"))
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before[relative][0]


@pytest.mark.snakemake
@pytest.mark.xdist_group("store-demo")  # one build of the module's demo store
def test_the_wrong_revision_is_refused_by_name(demo_store, tmp_path):
    results = demo_store / "results" / demo_revision()
    with pytest.raises(AfbenchError, match="release.revision"):
        store.store_revision(
            results, [store.partition(tmp_path / "s", t, SECOND) for t in store.TABLES], SECOND
        )
    assert not (tmp_path / "s").exists()


def documented_queries() -> list[str]:
    text = (REPO / "docs/store.md").read_text()
    return re.findall(r"```sql\n(.*?)```", text, re.S)


def outcomes(root: Path, revision: str, run: str) -> list[dict]:
    path = root / "results" / revision / "runs" / run / "outcomes.csv"
    return list(csv.DictReader(path.open(newline="")))


def records(root: Path, revision: str) -> dict[str, list[dict]]:
    folder = root / "results" / revision / IMPORTS
    found = {}
    for path in sorted(folder.glob("demo-model-*.json")):
        data = json.loads(path.read_text())
        found[data["model"]] = data["records"]
    return found


def approximately(rows: list[tuple]) -> list[tuple]:
    """Rows with each number compared to a float's precision (a sum's order differs)."""
    return [tuple(pytest.approx(v) if isinstance(v, float) else v for v in r) for r in rows]


@pytest.mark.snakemake
@pytest.mark.xdist_group("store-demo")  # one build of the module's demo store
def test_the_documented_queries_answer_from_the_demo_store(demo_store):
    rate, flips, spend, errors, discriminative = documented_queries()
    revisions = sorted([demo_revision(), SECOND])
    at = demo_store / "store"

    def ask(sql):
        return store.query(at, sql)[1]

    expected = []
    for revision in revisions:
        rows = outcomes(demo_store, revision, "demo-verdicts")
        accepted = sum(r["outcome"] == "accepted" for r in rows)
        expected.append(
            (revision, rows[0]["configuration"], len(rows), accepted, accepted / len(rows))
        )
    assert ask(rate) == expected

    by_config: dict[str, dict[str, bool]] = {}
    for row in outcomes(demo_store, SECOND, "demo-harbor"):
        by_config.setdefault(row["configuration"], {})[row["task_id"]] = (
            row["outcome"] == "accepted"
        )
    oracle = by_config["oracle 1.0.0 | model none | env docker | timeout x1 | n_attempts 1"]
    nop = by_config["nop 1.0.0 | model none | env docker | timeout x1 | n_attempts 1"]
    expected = [(t, oracle[t], nop[t]) for t in sorted(oracle) if oracle[t] != nop[t]]
    assert expected and ask(flips) == expected

    expected = []
    for revision in revisions:
        for model, rows in records(demo_store, revision).items():
            costs = [r["cost_usd"] for r in rows if r["cost_usd"] is not None]
            missing = len(rows) - len(costs)
            expected.append((revision, model, round(sum(costs), 2), missing))
    assert ask(spend) == approximately(expected)

    expected = []
    for revision in revisions:
        summary = json.loads(
            (demo_store / "results" / revision / IMPORTS / "summary.json").read_text()
        )
        (row,) = [r for r in summary["leaderboard"] if r["model"] == "demo-model-c"]
        expected.append((revision, "demo-model-c", row["infrastructure_errors"], row["tasks"]))
    assert ask(errors) == expected

    expected = []
    for revision in revisions:
        table = json.loads(
            (demo_store / "results" / revision / IMPORTS / "task-table.json").read_text()
        )
        chosen = {t["task_id"] for t in table["tasks"] if t["discriminative"]}
        for model, rows in records(demo_store, revision).items():
            solved = [r["success"] for r in rows if r["task_id"] in chosen]
            expected.append((revision, model, len(solved), sum(solved) / len(solved)))
    assert chosen and ask(discriminative) == approximately(expected)


def test_the_query_prints_a_table_csv_or_json():
    columns, rows = ["model", "rate"], [("a", 0.5), ("bb", None)]
    assert store.render(columns, rows, "table") == "model  rate\n-----  ----\na      0.5\nbb\n"
    assert store.render(columns, rows, "csv") == "model,rate\na,0.5\nbb,\n"
    assert json.loads(store.render(columns, rows, "json")) == [
        {"model": "a", "rate": 0.5},
        {"model": "bb", "rate": None},
    ]


def test_every_table_is_listed_with_its_columns_and_their_meaning():
    listed = store.describe()
    for table in store.TABLES:
        names = [column for t, column, _, _ in listed if t == table]
        assert names == [*frames.COLUMNS[table], "revision"]
    assert any(meaning for *_, meaning in listed)
