"""The results store (afbench.exports.store): the demo's two revisions built into one store by
`snakemake store`, typed as declared, byte-stable on a rebuild, each revision's partitions its
own; a revision's trial receipts and live ledger stored row for row; the store on S3 (moto's
server) written through Snakemake's storage and queried as the local one; and the queries of
docs/store.md answered from those stores as the artifacts they came from say."""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import test_watch
import test_workflow
import yaml

from afbench import frames
from afbench.audit.manifest import build_manifest
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import write_json
from afbench.execution import ledger
from afbench.exports import store

from conftest import DEMO_UPGRADE, REPO, demo_revision, job, planned, refusal_lines, snakemake
from properties import cli

# tests/execution/test_watch.py's run in the middle (receipts and a live ledger, no Docker) and
# tests/test_workflow.py's moto server: their fixtures, used here as they are
run = test_watch.run
s3_server = test_workflow.s3_server
BUCKET, CREDENTIALS = test_workflow.BUCKET, test_workflow.CREDENTIALS

UPGRADE = DEMO_UPGRADE
SECOND = yaml.safe_load((REPO / "config/demo-upgrade.yaml").read_text())["release"]["revision"]
IMPORTS = "imports/source-present/budget-200"


def digests(root: Path) -> dict[str, tuple[str, int]]:
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted((root / "store").rglob("*.parquet"))
    }


@pytest.mark.snakemake
@pytest.mark.xdist_group("store-demo")  # one build of the session's demo store
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
@pytest.mark.xdist_group("store-demo")  # one build of the session's demo store
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
@pytest.mark.xdist_group("store-demo")  # one build of the session's demo store
def test_the_wrong_revision_is_refused_by_name(demo_store, tmp_path):
    results = demo_store / "results" / demo_revision()
    with pytest.raises(AfbenchError, match="release.revision"):
        store.store_revision(
            results, [store.partition(tmp_path / "s", t, SECOND) for t in store.TABLES], SECOND
        )
    assert not (tmp_path / "s").exists()


@pytest.mark.snakemake
@pytest.mark.xdist_group("store-demo")  # one build of the session's demo store
def test_the_selections_are_every_selection_s_tasks_in_its_order(demo_store):
    expected = []
    for revision in sorted([demo_revision(), SECOND]):
        for path in sorted((demo_store / "results" / revision).rglob("*.json")):
            data = json.loads(path.read_text())
            if not isinstance(data, dict) or data.get("kind") != "afbench task selection":
                continue
            for place, task in enumerate(data["tasks"], start=1):
                selection = (data["name"], data["selection_sha256"], data["counts"]["tasks"])
                expected.append((revision, *selection, place, task["task_id"], task["source_id"]))
    found = store.query(
        demo_store / "store",
        "SELECT revision, selection, selection_sha256, selection_tasks, position, task_id, "
        "source_id FROM selections ORDER BY revision, selection, position",
    )[1]
    names = {row[1] for row in expected}
    assert {"all", "comparable"} <= names or {"all"} <= names, names
    assert found == sorted(expected, key=lambda row: (row[0], row[1], row[4]))


def documented_queries() -> list[str]:
    text = (REPO / "docs/store.md").read_text()
    return re.findall(r"```sql\n(.*?)```", text, re.S)


def outcomes(root: Path, revision: str, name: str) -> list[dict]:
    path = root / "results" / revision / "runs" / name / "outcomes.csv"
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
@pytest.mark.xdist_group("store-demo")  # one build of the session's demo store
def test_the_documented_queries_answer_from_the_demo_store(demo_store):
    rate, flips, spend, official_spend, errors, errors_by_day, discriminative = documented_queries()
    revisions = sorted([demo_revision(), SECOND])
    at = demo_store / "store"

    def ask(sql):
        return store.query(at, sql)[1]

    # the demo runs no trials: the ledger's questions have nothing to answer from
    assert ask(spend) == ask(errors_by_day) == []
    assert ask("SELECT count(*) FROM receipts") == [(0,)]
    assert ask("SELECT count(*) FROM ledger_entries") == [(0,)]

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
    assert ask(official_spend) == approximately(expected)

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


# --- a revision that ran trials: its receipts and its live ledger ----------------------------
REVISION = "a" * 40  # the revision of tests/execution/test_watch.py's receipts


def stored_run(run: dict, tmp_path: Path) -> Path:
    """tests/execution/test_watch.py's run in the middle (receipts of oracle and the paid agent, a
    live ledger of starts, costs, an interruption, a release and a trial still running), with the
    interrupted trial's receipt as a rerun refusing it writes it, stored by the pipeline's job
    into a fresh store."""
    test_watch.write_receipt(
        run["receipts"],
        "p2",
        "error",
        agent=test_watch.PAID,
        task="t2",
        refused="interrupted: not run again",
    )
    folder = run["receipts"]
    manifest = folder / "artifacts.json"
    write_json(manifest, build_manifest(folder, sorted(folder.rglob("*.json")), "0" * 64, REVISION))
    root = tmp_path / "store"
    outputs = [f"--output={store.partition(root, t, REVISION)}" for t in store.TABLES]
    job(
        "store-results",
        f"--manifest={manifest}",
        f"--revision={REVISION}",
        f"--ledger={run['ledger']}",
        *outputs,
    )
    return root


# the receipt's own fields the store holds as they are
RECEIPT_FIELDS = (
    *("task_id", "attempt", "job_name", "run_agent", "run_model", "action", "outcome"),
    *("refused", "worst_case_usd", "argv_sha256", "job_dir", "lock", "round"),
)


def rows(root: Path, table: str) -> list[dict]:
    return pq.read_table(store.partition(root, table, REVISION)).to_pylist()


def test_the_receipts_and_the_ledger_are_stored_as_their_files_hold_them(run, tmp_path):
    root = stored_run(run, tmp_path)
    receipts = {
        doc["job_name"]: doc
        for doc in (json.loads(p.read_text()) for p in run["receipts"].rglob("attempt-*.json"))
    }
    stored = rows(root, "receipts")
    assert [r["job_name"] for r in stored] == ["p1", "p2", "o1", "o2"]  # a:B before oracle
    for row in stored:
        receipt = receipts[row["job_name"]]
        made, meter = receipt["plan"], receipt["meter"] or {}
        costs = [t["cost_usd"] for t in receipt["trials"] if t["cost_usd"] is not None]
        assert row == {
            "selection": made["selection"]["name"],
            "selection_sha256": made["selection"]["selection_sha256"],
            "agent": made["agent"],
            "model": made["model"],
            **{key: receipt[key] for key in RECEIPT_FIELDS},
            "cost_usd": sum(costs) if costs else None,
            "trials": len(receipt["trials"]),
            **{f"meter_{k}": meter.get(k) for k in ("running_cost_usd", "stopped")},
            **{f"meter_{k}": meter.get(k) for k in ("cost_usd", "overshoot_usd")},
            "plan_sha256": made["sha256"],
        }
    assert stored[1]["refused"] == "interrupted: not run again"
    # the ledger's lines, whole, of the trials with a receipt: not o3 (running, no receipt
    # yet) nor p3 (released before Harbor, never run again)
    lines = [json.loads(line) for line in run["ledger"].read_text().splitlines() if line]
    kept = [(n, line) for n, line in enumerate(lines, start=1) if line["job_name"] in receipts]
    entries = rows(root, "ledger_entries")
    assert [r["entry"] for r in entries] == [n for n, _ in kept]
    assert {r["job_name"] for r in entries} == set(receipts)
    assert {line["job_name"] for line in lines} - set(receipts) == {"o3", "p3"}
    for row, (number, line) in zip(entries, kept, strict=True):
        assert row.pop("entry") == number
        assert row.pop("written_at") == datetime.fromisoformat(line.pop("at"))
        assert {k: v for k, v in row.items() if v is not None} == {
            k: v for k, v in line.items() if v is not None
        }
    events = [r["event"] for r in entries if r["job_name"] == "p2"]
    assert events == ["start", "interrupted"]


def test_the_ledger_queries_answer_from_the_receipts_and_the_ledger(run, tmp_path):
    root = stored_run(run, tmp_path)
    queries = documented_queries()
    spend, errors_by_day = queries[2], queries[5]
    lines = [json.loads(line) for line in run["ledger"].read_text().splitlines() if line]
    receipts = [json.loads(p.read_text()) for p in run["receipts"].rglob("attempt-*.json")]
    ours = {r["job_name"] for r in receipts}
    groups: dict[tuple, list[dict]] = {}
    for line in lines:
        if line["job_name"] in ours:
            key = (line["at"][:7], REVISION, line["agent"], line["model"])
            groups.setdefault(key, []).append(line)
    expected = []
    for key in sorted(groups, key=lambda k: (*k[:3], k[3] or "")):
        closed = [e for e in groups[key] if e["event"] == "finish"]
        held = [e["held_usd"] for e in groups[key] if e["event"] == "interrupted"]
        spent = round(sum(e["cost_usd"] for e in closed), 2)
        expected.append((*key, len(closed), spent, round(sum(held), 2)))
    found = store.query(root, spend)[1]
    assert found == approximately(expected)
    assert {row[2]: (row[5], row[6]) for row in found} == {"a:B": (30.0, 200.0), "oracle": (0, 0)}

    last: dict[str, str] = {}
    for line in lines:
        if line["event"] == "finish":
            last[line["job_name"]] = line["at"][:10]
    days: dict[tuple, list[str]] = {}
    for receipt in receipts:
        if receipt["job_name"] in last:  # p2 never finished: interrupted, then refused
            made = receipt["plan"]
            key = (last[receipt["job_name"]], REVISION, made["agent"], made["model"])
            days.setdefault(key, []).append(receipt["outcome"])
    expected = [
        (*key, len(outcomes), outcomes.count("error")) for key, outcomes in sorted(days.items())
    ]
    assert store.query(root, errors_by_day)[1] == expected
    assert [row[2:] for row in expected] == [("a:B", None, 1, 1), ("oracle", None, 2, 0)]


@pytest.mark.snakemake
def test_a_ledger_that_appears_makes_the_store_again(demo_project, tmp_path):
    """The live ledger is the store job's input once `snakemake execute` has made it: a ledger
    newer than the store reruns it (and nothing that spends money)."""
    root = tmp_path / "project"
    shutil.copytree(demo_project, root, symlinks=True)
    snakemake(root, "store")  # the copy's own paths settled
    assert planned(root, "store") == {}
    ledger.refuse(
        root / "results" / demo_revision() / "jobs.ledger.jsonl",
        {"job_name": "afbench-x", "task_id": "t", "attempt": 1, "agent": "nop", "model": None},
        "a refusal, as a trial at the ceiling writes it",
    )
    assert planned(root, "store") == {"store_results": 1, "store": 1}


@pytest.mark.snakemake
@pytest.mark.xdist_group("store-demo")  # one build of the session's demo store
def test_a_store_on_s3_is_written_by_snakemake_s_storage_and_queried_as_the_local_one(
    demo_store, s3_server, tmp_path, monkeypatch
):
    endpoint, client = s3_server
    root = tmp_path / "project"
    shutil.copytree(demo_store, root, symlinks=True)
    url = f"s3://{BUCKET}/stores/demo"
    (root / "s3.yaml").write_text(yaml.safe_dump({"store": {"root": url}}))
    # the storage plugin's settings: the pipeline's writes and the query's reads both take them
    monkeypatch.setenv("SNAKEMAKE_STORAGE_S3_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("SNAKEMAKE_STORAGE_S3_ACCESS_KEY", CREDENTIALS["access_key"])
    monkeypatch.setenv("SNAKEMAKE_STORAGE_S3_SECRET_KEY", CREDENTIALS["secret_key"])
    snakemake(root, "store", "--configfile", "config/demo.yaml", "s3.yaml")
    snakemake(root, "store", *UPGRADE, "s3.yaml")
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix="stores/demo/")["Contents"]
    on_s3 = {
        item["Key"].removeprefix("stores/demo/"): client.get_object(Bucket=BUCKET, Key=item["Key"])[
            "Body"
        ].read()
        for item in listed
    }
    local = root / "store"
    assert on_s3 == {
        str(p.relative_to(local)): p.read_bytes() for p in sorted(local.rglob("*.parquet"))
    }
    assert len(on_s3) == 2 * len(store.TABLES)
    for sql in documented_queries():
        assert store.query(url, sql) == (
            store.query(local, sql)[0],
            approximately(store.query(local, sql)[1]),
        )
    # a partition gone from the bucket: the one line names it by its URL
    gone = store.relative("receipts", SECOND)
    client.delete_object(Bucket=BUCKET, Key=f"stores/demo/{gone}")
    code, err = cli("query", "--store", url, "SELECT count(*) FROM receipts")
    assert code == 2
    [line] = refusal_lines(err)
    assert line.startswith(f"afbench: error: {url}/{gone}: revision {SECOND} has no partition")


def test_an_s3_endpoint_that_does_not_answer_is_one_line(monkeypatch):
    endpoint = f"http://127.0.0.1:{test_workflow.free_port()}"  # nothing listens there
    monkeypatch.setenv("SNAKEMAKE_STORAGE_S3_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("SNAKEMAKE_STORAGE_S3_ACCESS_KEY", CREDENTIALS["access_key"])
    monkeypatch.setenv("SNAKEMAKE_STORAGE_S3_SECRET_KEY", CREDENTIALS["secret_key"])
    code, err = cli("query", "--store", f"s3://{BUCKET}/store", "SELECT 1")
    assert code == 2
    [line] = refusal_lines(err)
    assert line.startswith(f"afbench: error: s3://{BUCKET}/store: cannot read the results store")
    assert f"found '{endpoint}'" in line and "SNAKEMAKE_STORAGE_S3_ENDPOINT_URL" in line


def test_a_url_of_another_scheme_is_refused_as_the_setting_is():
    code, err = cli("query", "--store", "gs://bucket/store", "SELECT 1")
    assert code == 2
    [line] = refusal_lines(err)
    assert "argument --store" in line and "s3://bucket/prefix" in line


def small_store(root: Path, tables: dict[str, list[str]]) -> Path:
    """A store of empty tables: each table's partitions of the revisions given."""
    for table, revisions in tables.items():
        for revision in revisions:
            path = store.partition(root, table, revision)
            path.parent.mkdir(parents=True)
            path.write_bytes(store.table_parquet(store.empty_frame(table), table))
    return root


def test_a_table_the_query_names_must_have_every_revision_in_its_declared_columns(tmp_path):
    root = small_store(tmp_path / "store", {"tasks": ["r", "s"], "leaderboard": ["r"]})
    with pytest.raises(AfbenchError) as refused:
        store.query(root, "SELECT count(*) FROM leaderboard JOIN tasks USING (revision)")
    [problem] = refused.value.problems
    assert problem.file == str(store.partition(root, "leaderboard", "s"))
    assert "revision s has no partition of table leaderboard" in problem.message
    # a table the query does not name is not held to it
    assert store.query(root, "SELECT revision, count(*) FROM tasks GROUP BY ALL ORDER BY 1") == (
        ["revision", "count_star()"],
        [],
    )
    written = store.partition(root, "tasks", "s")
    written.write_bytes(store.table_parquet(store.empty_frame("selections"), "selections"))
    with pytest.raises(AfbenchError) as refused:
        store.query(root, "SELECT * FROM tasks")
    [problem] = refused.value.problems
    assert (problem.file, problem.field) == (str(written), "task_id")
    assert "not table tasks's declared columns" in problem.message
    assert (problem.expected, problem.found) == ("task_id string", "selection string")


def test_without_store_the_query_reads_the_project_s_default_store(tmp_path, monkeypatch):
    assert store.default_root() == "store"  # results_dir's default is results/
    assert store.default_root("/data/afbench/results") == "/data/afbench/store"
    small_store(tmp_path / "store", {"tasks": ["r"]})
    monkeypatch.chdir(tmp_path)
    assert cli("query", "SELECT count(*) FROM tasks") == (0, "")
    monkeypatch.chdir(tmp_path / "store")
    code, err = cli("query", "SELECT 1")
    [line] = refusal_lines(err)
    assert code == 2 and line.startswith("afbench: error: store: no results store here")
