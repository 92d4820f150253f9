"""Release upgrades: the diff of two revisions from real exports in real git checkouts, the
declared-version check against Harbor 0.26's diff rules, the upgrade plan and its cost (the
execution guard's own line), the comparable subset as a selection, and frozen selections."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from afbench.core.config import default_columns
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import json_bytes, sha256_bytes
from afbench.core.harbor import task_checksum
from afbench.execution.approval import approve
from afbench.kinds import RELEASE, SELECTION
from afbench.release import demo
from afbench.tasks.catalog import build_catalog, content_digests, freeze, select_tasks
from afbench.upgrade.diff import compare_task, diff_releases, harbor_action, upgrade_plan

from conftest import (
    declared,
    project,
    run_afbench,
    snakemake,
)

TASKS = ("u_t1", "u_t2", "u_t3", "u_t4", "u_t5")
# revision 1 declares three versions; revision 2 changes one of each kind, and bumps the
# environment-changed task by a patch only (Harbor's diff would reuse it: flagged)
AMENDMENTS_1 = {
    "u_t1": {"version": "1.0.0"},
    "u_t3": {"version": "1.0.0"},
    "u_t5": {"version": "1.0.0"},
}
AMENDMENTS_2 = {
    "u_t1": {"version": "1.0.0"},
    "u_t2": {"statement": 2},
    "u_t3": {"version": "1.1.0", "verifier": 2},
    "u_t5": {"version": "1.0.1", "environment": 2},
}


def _manifest(ids) -> bytes:
    rows = [
        f"{t},src_a,Theorem {i},Up.S.theorem_{i:03d},{1 + i % 2},workspaces/{t}"
        for i, t in enumerate(ids, start=1)
    ]
    return (
        "task_id,source_id,source_ref,target_declaration,n_obligations,workspace\n"
        + "\n".join(rows)
        + "\n"
    ).encode()


def _sources(n: int) -> bytes:
    return f"source_id,title,authors,license,n_tasks\nsrc_a,Source A,Someone,CC0,{n}\n".encode()


def _json(data) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


def _write(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def _catalog(checkout: Path, revision: str) -> dict:
    manifest, sources = (
        (checkout / "MANIFEST.csv").read_bytes(),
        (checkout / "SOURCES.csv").read_bytes(),
    )
    tasks = manifest.count(b"\n") - 1
    obligations = sum(int(line.split(",")[4]) for line in manifest.decode().splitlines()[1:])
    release = declared(
        RELEASE,
        name="upgrade test",
        repository="afbench/upgrade-test",
        revision=revision,
        synthetic=True,
        nominal_budget_usd=200.0,
    )
    return build_catalog(
        (manifest, {"path": "MANIFEST.csv", "actual_sha256": sha256_bytes(manifest)}),
        (sources, {"path": "SOURCES.csv", "actual_sha256": sha256_bytes(sources)}),
        {"manifest": default_columns("manifest"), "sources": default_columns("sources")},
        {"tasks": tasks, "sources": 1, "obligations": obligations},
        release,
        "synthetic",
    )


@pytest.fixture(scope="module")
def revisions(tmp_path_factory):
    """Two revisions of a five-task release, each in its own real checkout, exported by the
    demo's exporter: (catalog, digests) of each."""
    root = tmp_path_factory.mktemp("upgrade")
    first = _write(
        root / "rev1",
        {
            "MANIFEST.csv": _manifest(TASKS),
            "SOURCES.csv": _sources(5),
            "harbor/export.py": demo.EXPORTER.encode(),
            "harbor/amendments.json": _json(AMENDMENTS_1),
        },
    )
    # u_t4 removed, u_t6 added; every other row as in revision 1
    ids = ("u_t1", "u_t2", "u_t3", "u_t5", "u_t6")
    second = _manifest(ids).replace(
        b"u_t6,src_a,Theorem 5,Up.S.theorem_005,2", b"u_t6,src_a,Theorem 6,Up.S.theorem_006,2"
    )
    second = second.replace(
        b"u_t5,src_a,Theorem 4,Up.S.theorem_004,1", b"u_t5,src_a,Theorem 5,Up.S.theorem_005,2"
    )
    overlay = _write(
        root / "rev2-files",
        {"MANIFEST.csv": second, "harbor/amendments.json": _json(AMENDMENTS_2)},
    )
    rev1 = demo.build_repository(first, root / "checkout1")
    rev2 = demo.build_repository(first, root / "checkout2", overlay)
    out = {}
    for name, checkout, rev in (
        ("old", root / "checkout1", rev1),
        ("new", root / "checkout2", rev2),
    ):
        catalog = _catalog(checkout, rev)
        out[name] = (catalog, content_digests(catalog, str(checkout), "tasks"))
    out["root"] = root
    return out


def test_digests_are_byte_identical_across_checkouts_and_match_harbors_checksum(
    revisions, tmp_path
):
    catalog, digests = revisions["old"]
    # the same commit checked out elsewhere (another machine's path) gives the same bytes
    again = demo.build_repository(revisions["root"] / "rev1", tmp_path / "elsewhere")
    assert again == catalog["release"]["revision"]
    assert json_bytes(content_digests(catalog, str(tmp_path / "elsewhere"), "tasks")) == json_bytes(
        digests
    )
    exported = revisions["root"] / "checkout1" / "tasks" / "u_t3"
    entry = digests["tasks"]["u_t3"]
    assert entry["export"]["checksum"] == task_checksum(exported)  # the conformance checksum
    assert entry["manifest_row"] == catalog["task_digests"]["u_t3"]["manifest_row"]
    assert entry["export"]["declared"] == {"name": "afbench-demo/u_t3", "version": "1.0.0"}
    parts = {f["part"] for f in entry["export"]["files"].values()}
    assert parts == {"statement", "verifier", "environment", "solution", "metadata"}
    assert entry["export"]["files"]["environment/workspace/Task.lean"]["part"] == "statement"
    assert entry["export"]["files"]["tests/test.sh"] == {
        "part": "verifier",
        "sha256": sha256_bytes((exported / "tests/test.sh").read_bytes()),
        "executable": True,
    }
    assert "task.toml#task" not in entry["export"]["files"]  # the declaration is not content
    assert not any(
        str(revisions["root"]) in line for line in json_bytes(digests).decode().splitlines()
    )


def test_the_diff_gives_exactly_the_changes_made(revisions):
    (_, old), (catalog, new) = revisions["old"], revisions["new"]
    diff, comparable = diff_releases(old, new, catalog)
    classes = {t["task_id"]: t["class"] for t in diff["tasks"]}
    assert classes == {
        "u_t1": "unchanged",
        "u_t2": "statement-changed",
        "u_t3": "verifier-changed",
        "u_t4": "removed",
        "u_t5": "environment-changed",
        "u_t6": "added",
    }
    by_id = {t["task_id"]: t for t in diff["tasks"]}
    assert by_id["u_t2"]["changed"] == [
        "environment/workspace/Task.lean",
        "tests/test.sh",
        "solution/solve.sh",
    ]
    assert by_id["u_t3"]["changed"] == ["tests/test.sh"]
    assert by_id["u_t5"]["changed"] == ["environment/Dockerfile"]
    # the patch bump over an environment change is flagged; the minor bump over a verifier
    # change matches Harbor's regrade; the unchanged versioned task is fine
    assert [f["task_id"] for f in diff["flagged"]] == ["u_t5"]
    assert "patch bump 1.0.0 -> 1.0.1" in diff["flagged"][0]["message"]
    assert by_id["u_t3"]["declared"]["harbor_action"] == "regrade"
    assert not by_id["u_t3"]["declared"]["mismatch"]
    assert not by_id["u_t1"]["declared"]["mismatch"]
    # the comparable subset: a selection like any other, of the unchanged tasks only
    SELECTION.check(comparable, "comparable.json")
    assert comparable["task_ids"] == ["u_t1"]
    assert (
        comparable["selection_sha256"]
        == select_tasks(catalog, comparable["name"], tasks=["u_t1"])["selection_sha256"]
    )
    assert comparable["comparable"]["excluded"] == {
        "statement-changed": 1,
        "verifier-changed": 1,
        "environment-changed": 1,
        "added": 1,
        "removed": 1,
    }
    assert json_bytes(diff_releases(old, new, catalog)[0]) == json_bytes(diff)


def test_the_plan_reruns_the_changed_and_added_tasks_at_the_guards_cost(revisions):
    (_, old), (catalog, new) = revisions["old"], revisions["new"]
    diff, _ = diff_releases(old, new, catalog)
    plan = upgrade_plan(diff, catalog["release"], attempts=2)
    actions = {t["task_id"]: t["action"] for t in plan["tasks"]}
    # the demo's verifier runs in the agent's environment: Harbor cannot regrade it, so rerun
    assert actions == {
        "u_t1": "reuse",
        "u_t2": "rerun",
        "u_t3": "rerun",
        "u_t5": "rerun",
        "u_t6": "rerun",
        "u_t4": "drop",
    }
    assert "cannot regrade" in next(t for t in plan["tasks"] if t["task_id"] == "u_t3")["reason"]
    trials = [
        {"selection": "x", "task_id": t, "job_name": f"{t}-{a}", "lock": None, "paid": True}
        for t in ("u_t2", "u_t3", "u_t5", "u_t6")
        for a in (1, 2)
    ]
    lines, _ = approve(trials, catalog["release"], None, Path("/nonexistent/ledger.jsonl"))
    assert "afbench execute: " + plan["cost"]["line"] == lines[0]
    assert "worst-case cost USD 1600 (8 x the nominal USD 200 per task)" in plan["cost"]["line"]
    # where Harbor can regrade (a verifier in its own environment), the verifier change is a
    # regrade, and costs no agent trial
    for task in diff["tasks"]:
        if task["task_id"] == "u_t3":
            task["regrade"] = None
    plan = upgrade_plan(diff, catalog["release"], attempts=1)
    assert {t["task_id"]: t["action"] for t in plan["tasks"]}["u_t3"] == "regrade"
    assert plan["counts"] == {"reuse": 1, "regrade": 1, "rerun": 3, "drop": 1}
    assert "worst-case cost USD 600 (3 x" in plan["cost"]["line"]


@pytest.mark.parametrize(
    ("before", "after", "changed", "action"),
    [
        ("1.0.0", "1.0.0", False, "reuse"),
        ("1.0.0", "1.0.0", True, "refused"),  # same version, other digest: Harbor refuses
        ("1.0.0", "1.0.1", True, "reuse"),
        ("1.0.0", "1.1.0", True, "regrade"),
        ("1.2.3", "2.0.0", True, "rerun"),
        ("1.0.0", "1.0.0-rc.1", True, "rerun"),
        ("1.0.0", None, True, "rerun"),
        (None, "1.0.0", True, "rerun"),
        ("1.0", "1.1", True, "refused"),  # not semantic versions
    ],
)
def test_harbors_reading_of_declared_versions(before, after, changed, action):
    assert harbor_action(before, after, changed)[0] == action


def test_a_frozen_selection_over_a_changed_member_is_refused_naming_it(revisions):
    (old_catalog, old), (catalog, new) = revisions["old"], revisions["new"]
    members = ["u_t1", "u_t2"]
    frozen = freeze(select_tasks(old_catalog, "fixed", tasks=members), old, None)
    assert frozen["frozen"]["since"] == old_catalog["release"]["revision"]
    assert set(frozen["frozen"]["members"]) == set(members)
    with pytest.raises(AfbenchError) as refused:
        freeze(select_tasks(catalog, "fixed", tasks=members), new, frozen)
    text = str(refused.value)
    assert "member u_t2 is statement-changed (environment/workspace/Task.lean" in text
    assert "u_t1" not in text.replace("u_t1,", "")  # only the changed member is named
    # a member that did not change keeps the selection, frozen since the first revision
    kept = freeze(
        select_tasks(catalog, "fixed", tasks=["u_t1"]),
        new,
        freeze(select_tasks(old_catalog, "fixed", tasks=["u_t1"]), old, None),
    )
    assert kept["frozen"]["since"] == old_catalog["release"]["revision"]
    # a removed member is named too
    gone = freeze(select_tasks(old_catalog, "gone", tasks=["u_t1", "u_t4"]), old, None)
    with pytest.raises(AfbenchError, match="member u_t4 is no longer in the release"):
        freeze(select_tasks(catalog, "gone", tasks=["u_t1"]), new, gone)


def test_without_a_checkout_only_the_manifest_is_compared(revisions):
    (old_catalog, _), (catalog, _) = revisions["old"], revisions["new"]
    old, new = content_digests(old_catalog, None, "tasks"), content_digests(catalog, None, "tasks")
    assert new["tasks"]["u_t1"]["export"] is None
    diff, _ = diff_releases(old, new, catalog)
    assert diff["basis"] == "manifest" and "not seen" in diff["basis_note"]
    classes = {t["task_id"]: t["class"] for t in diff["tasks"]}
    # the statement and verifier edits live in the exported task only: unseen here
    assert classes["u_t2"] == "unchanged" and classes["u_t3"] == "unchanged"
    assert classes["u_t4"] == "removed" and classes["u_t6"] == "added"
    # a MANIFEST change still shows: obligations state the task, the rest describes it
    row = dict(old["tasks"]["u_t1"], row=dict(old["tasks"]["u_t1"]["row"], n_obligations=9))
    assert compare_task(old["tasks"]["u_t1"], row, "manifest") == {
        "class": "statement-changed",
        "parts": ["statement"],
        "changed": ["MANIFEST.csv:n_obligations"],
    }
    row = dict(old["tasks"]["u_t1"], row=dict(old["tasks"]["u_t1"]["row"], source_ref="Lemma 1"))
    assert compare_task(old["tasks"]["u_t1"], row, "manifest")["class"] == "metadata-changed"


def _cli(*argv: str) -> subprocess.CompletedProcess:
    """`afbench ARGV` in this process (run_afbench): these tests check what it wrote and said."""
    return run_afbench(*argv)


def test_afbench_diff_writes_the_three_artifacts_and_names_the_flag(revisions, tmp_path):
    files = {}
    for name in ("old", "new"):
        catalog, digests = revisions[name]
        files[name] = _write(
            tmp_path / name,
            {"catalog.json": json_bytes(catalog), "digests.json": json_bytes(digests)},
        )
    out = tmp_path / "upgrade"
    args = ["--catalog", str(files["new"] / "catalog.json"), "--output-dir"]
    old, new = str(files["old"] / "digests.json"), str(files["new"] / "digests.json")
    done = _cli("diff", "--previous", old, "--current", new, *args, str(out))
    assert done.returncode == 0, done.stderr
    assert (
        "1 unchanged, 1 statement-changed, 1 verifier-changed, 1 environment-changed, "
        "1 added, 1 removed; 1 declared version flagged" in done.stderr
    )
    assert "afbench: warning: task u_t5: declared version 1.0.0 -> 1.0.1 does not match" in (
        done.stderr
    )
    assert sorted(p.name for p in out.iterdir()) == ["comparable.json", "diff.json", "plan.json"]
    # the same revision twice is refused, nothing written
    again = _cli("diff", "--previous", new, "--current", new, *args, str(tmp_path / "none"))
    assert again.returncode == 2
    assert "the previous release is this release" in again.stderr
    assert not (tmp_path / "none" / "diff.json").exists()


@pytest.mark.snakemake
def test_the_demo_upgrade_diff_gives_exactly_the_generated_changes(tmp_path):
    """The demo's two revisions, each in its own results tree: `snakemake digests` on the
    first, `snakemake diff` on the second gives exactly the classes the generator made, names
    the patch bump over a changed statement, plans reruns of exactly the changed and added
    tasks at the execution guard's cost, and a frozen selection over a changed member is
    refused by name."""
    from afbench.execution.approval import approve
    from afbench.release import demo

    root = project(tmp_path)
    upgrade = ["--configfile", "config/demo.yaml", "config/demo-upgrade.yaml"]
    frozen = root / "frozen.yaml"
    frozen.write_text(
        "selections: {headline: {tasks: [demo_s12_t001, demo_s12_t002], frozen: true}}\n"
    )
    first = yaml.safe_load((root / "config/demo.yaml").read_text())["release"]["revision"]
    second = yaml.safe_load((root / "config/demo-upgrade.yaml").read_text())["release"]["revision"]
    refused = snakemake(root, "diff", *upgrade, check=False)
    assert refused.returncode != 0
    assert "the previous release's task digests are missing" in refused.stdout + refused.stderr
    snakemake(
        root, "digests", f"results/{first}/tasks/selections/headline.json",
        "--configfile", "config/demo.yaml", str(frozen),
    )  # fmt: skip
    snakemake(root, "diff", *upgrade)
    out = root / "results" / second / "upgrade"
    diff = json.loads((out / "diff.json").read_text())
    classes = {t["task_id"]: t["class"] for t in diff["tasks"] if t["class"] != "unchanged"}
    made = {task: kind for kind, task in demo.UPGRADE.items()}
    made[demo.UPGRADE["patch-bump"]] = "statement-changed"
    assert classes == made
    assert diff["counts"]["unchanged"] == 341 - 5
    assert [f["task_id"] for f in diff["flagged"]] == [demo.UPGRADE["patch-bump"]]
    assert "patch bump 1.0.0 -> 1.0.1" in diff["flagged"][0]["message"]
    plan = json.loads((out / "plan.json").read_text())
    rerun = [t["task_id"] for t in plan["tasks"] if t["action"] == "rerun"]
    assert sorted(rerun) == sorted(t for t, kind in made.items() if kind != "removed")
    assert [t["task_id"] for t in plan["tasks"] if t["action"] == "drop"] == [
        demo.UPGRADE["removed"]
    ]
    trials = [
        {"selection": "s", "task_id": t, "job_name": t, "lock": None, "paid": True} for t in rerun
    ]
    release = json.loads((root / "results" / second / "tasks/catalog.json").read_text())["release"]
    lines, _ = approve(trials, release, None, tmp_path / "no-ledger.jsonl")
    assert lines[0] == "afbench execute: " + plan["cost"]["line"]
    comparable = json.loads((out / "comparable.json").read_text())
    assert (
        len(comparable["task_ids"]) == 336
        and demo.UPGRADE["statement-changed"] not in (comparable["task_ids"])
    )
    # the diff's artifacts are the same bytes when made again
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    snakemake(root, "diff", *upgrade, "--forcerun", "diff_releases", "plan_upgrade")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # the selection frozen on the first revision holds the second to it
    held = snakemake(
        root, f"results/{second}/tasks/selections/headline.json", *upgrade, str(frozen),
        check=False,
    )  # fmt: skip
    assert held.returncode != 0
    said = held.stdout + held.stderr
    assert "member demo_s12_t002 is statement-changed" in said
    assert not (root / "results" / second / "tasks/selections/headline.json").exists()


def _sign_flip_by_counting(sums: list[int]) -> float:
    """The sign-flip p by counting how many of the 2^G sign patterns reach each total (a
    dynamic programme over the sources; independent of afbench's generating function)."""
    ways = {0: 1}
    for t in sums:
        step: dict[int, int] = {}
        for total, count in ways.items():
            for signed in (t, -t):
                step[total + signed] = step.get(total + signed, 0) + count
        ways = step
    observed = abs(sum(sums))
    return sum(c for total, c in ways.items() if abs(total) >= observed) / 2 ** len(sums)


@pytest.mark.snakemake
def test_the_demo_upgrade_compares_results_on_the_comparable_subset(tmp_path):
    """The second revision's comparisons (config/demo-upgrade.yaml) are refused until the
    first revision's results exist; then they are computed on the 336 unchanged tasks only,
    equal a hand computation from the two trees' per-task records, say what was left out,
    are the same bytes when made again, and the second revision's report shows them."""
    from scipy import stats as scipy_stats
    from test_stats import cr2_by_matrices

    root = project(tmp_path)
    upgrade = ["--configfile", "config/demo.yaml", "config/demo-upgrade.yaml"]
    first = yaml.safe_load((root / "config/demo.yaml").read_text())["release"]["revision"]
    second = yaml.safe_load((root / "config/demo-upgrade.yaml").read_text())["release"]["revision"]
    refused = snakemake(root, "comparisons", *upgrade, check=False)
    assert refused.returncode != 0
    said = refused.stdout + refused.stderr
    assert "the previous release's results to compare are missing" in said
    assert "Traceback" not in said
    snakemake(root, "imports", "runs", "digests", "--configfile", "config/demo.yaml")
    snakemake(root, "comparisons", *upgrade)
    out = root / "results" / second / "upgrade" / "comparisons.json"
    result = json.loads(out.read_text())
    assert result["kind"] == "afbench cross-revision comparisons"
    assert (result["previous_revision"], result["current_revision"]) == (first, second)
    comparable = json.loads((out.parent / "comparable.json").read_text())
    left_out = {
        "statement-changed": 2,
        "verifier-changed": 1,
        "environment-changed": 1,
        "metadata-changed": 0,
        "added": 1,
        "removed": 1,
    }
    assert result["comparable"]["left_out"] == left_out and result["comparable"]["tasks"] == 336
    same, across, run = result["comparisons"]
    # the second revision keeps every result: model A is the same on the unchanged tasks
    assert same["only_previous"] == same["only_current"] == 0 and same["tasks"] == 336
    assert same["previous"]["revision"] == first and same["current"]["revision"] == second
    # the verdicts, imported on each revision: three tasks, the rest not on both sides
    assert (run["tasks"], run["left_out"]["not-on-both-sides"]) == (3, 333)
    assert run["previous"]["kind"] == run["current"]["kind"] == "local"

    # model C of the first revision against model D of the second, by hand
    def records(rev: str, model: str) -> dict:
        path = root / "results" / rev / "imports/source-present/budget-200" / f"{model}.json"
        return {r["task_id"]: r for r in json.loads(path.read_text())["records"]}

    before, after = records(first, "demo-model-c"), records(second, "demo-model-d")
    tasks = comparable["task_ids"]
    assert set(tasks) <= set(before) and set(tasks) <= set(after)
    sources = [after[t]["source_id"] for t in tasks]
    old = [int(before[t]["success"]) for t in tasks]
    new = [int(after[t]["success"]) for t in tasks]
    differences = [b - a for a, b in zip(old, new, strict=True)]
    only_current, only_previous = differences.count(1), differences.count(-1)
    assert (across["only_current"], across["only_previous"]) == (only_current, only_previous)
    assert across["both"] == sum(a and b for a, b in zip(old, new, strict=True))
    assert across["previous"]["success_rate"] == pytest.approx(sum(old) / len(tasks))
    assert across["current"]["success_rate"] == pytest.approx(sum(new) / len(tasks))
    assert across["difference"] == pytest.approx(sum(differences) / len(tasks))
    discordant = only_current + only_previous
    assert across["p_exact"] == pytest.approx(
        scipy_stats.binomtest(only_current, discordant, 0.5).pvalue, rel=1e-12
    )
    by_source: dict[str, int] = {}
    for d, s in zip(differences, sources, strict=True):
        by_source[s] = by_source.get(s, 0) + d
    assert across["p_sign_flip"] == pytest.approx(
        _sign_flip_by_counting(list(by_source.values())), rel=1e-12
    )
    se, df = cr2_by_matrices([float(d) for d in differences], sources)
    t = scipy_stats.t.ppf(0.975, df)
    mean = sum(differences) / len(tasks)
    clustered = across["clustered"]
    assert (clustered["se_clustered"], clustered["df"]) == (
        pytest.approx(se, rel=1e-9),
        pytest.approx(df, rel=1e-9),
    )
    assert clustered["low"] == pytest.approx(mean - t * se, rel=1e-9)
    assert clustered["high"] == pytest.approx(mean + t * se, rel=1e-9)
    assert clustered["clusters"] == 24
    # Holm over the three comparisons: the k-th smallest p times (4 - k), never decreasing
    flips = [c["p_sign_flip"] for c in result["comparisons"]]
    ranked = sorted(range(3), key=flips.__getitem__)
    adjusted, running = {}, 0.0
    for k, i in enumerate(ranked):
        running = max(running, min(1.0, (3 - k) * flips[i]))
        adjusted[i] = running
    assert [c["p_sign_flip_holm"] for c in result["comparisons"]] == pytest.approx(
        [adjusted[i] for i in range(3)]
    )
    # the same bytes when made again
    made = out.read_bytes()
    snakemake(root, "comparisons", *upgrade, "--forcerun", "compare_revisions")
    assert out.read_bytes() == made
    # the second revision's report shows them, and what was left out
    snakemake(root, "report", *upgrade)
    report = root / "results" / second / "report"
    shown = json.loads((report / "analysis.json").read_text())["cross_revision"]
    assert shown["comparisons"] == result["comparisons"]
    html = (report / "index.html").read_text()
    assert 'id="previous-revision"' in html
    assert (
        "left out: 2 statement-changed, 1 verifier-changed, 1 environment-changed, 1 added, "
        "1 removed" in html
    )
    assert "the two revisions&#x27; rates are never pooled" in html
    # the upgrade's artifacts belong to the second revision's tree: its readers take it whole
    from afbench import frames

    board = frames.leaderboard(root / "results" / second)
    assert board.attrs["revision"] == second and len(board) == 9


def _key_renamed(digests: dict, old: str, new: str) -> None:
    digests["tasks"] = {(new if k == old else k): v for k, v in digests["tasks"].items()}


def _set_file_digest(digests: dict, task: str, path: str) -> None:
    digests["tasks"][task]["export"]["files"][path]["sha256"] = "1" * 64


# a hostile user's consistent-looking digests: each must be refused before anything is planned
TAMPERED = {
    "a key renamed to a path": (
        "current",
        lambda d: _key_renamed(d, "u_t1", "../../etc/passwd"),
        ["field 'tasks.../../etc/passwd'", "not a safe name"],
    ),
    "a key naming another task than its row": (
        "current",
        lambda d: _key_renamed(d, "u_t1", "u_t9"),
        ["field 'tasks.u_t9.row.task_id'", "the key names another task than its row"],
    ),
    "a task missing": (
        "current",
        lambda d: d["tasks"].pop("u_t2"),
        ["field 'tasks'", "task(s) of the catalog have no digests", "u_t2"],
    ),
    "two keys with one row": (
        "current",
        lambda d: d["tasks"].__setitem__("u_t7", d["tasks"]["u_t1"]),
        ["field 'tasks.u_t7.row.task_id'", "task(s) are not in the catalog"],
    ),
    "a digest that is not 64 hex digits": (
        "current",
        lambda d: d["tasks"]["u_t3"].__setitem__("manifest_row", "abc"),
        ["field 'tasks.u_t3.manifest_row'", "a SHA-256 digest"],
    ),
    "Harbor's checksum zeroed": (
        "current",
        lambda d: d["tasks"]["u_t1"]["export"].__setitem__("checksum", "0" * 64),
        ["field 'tasks.u_t1.export.checksum'", "Harbor's task checksum is not that of"],
    ),
    "a file's digest changed, the parts left alone": (
        "previous",
        lambda d: _set_file_digest(d, "u_t1", "instruction.md"),
        ["field 'tasks.u_t1.export.parts.statement'", "field 'tasks.u_t1.export.checksum'"],
    ),
    "a row changed, its catalog digests left alone": (
        "current",
        lambda d: d["tasks"]["u_t1"]["row"].__setitem__("source_ref", "Lemma 9"),
        ["field 'tasks.u_t1.manifest_row'", "field 'tasks.u_t1.row.source_ref'"],
    ),
    "a previous release of another repository": (
        "previous",
        lambda d: d["release"].__setitem__("repository", "someone/else"),
        ["field 'release.repository'", "the previous release is of another repository"],
    ),
    "a malformed previous revision": (
        "previous",
        lambda d: d["release"].__setitem__("revision", "main"),
        ["field 'release.revision'", "not a pinned commit"],
    ),
}


@pytest.mark.parametrize("case", TAMPERED, ids=list(TAMPERED))
def test_afbench_diff_refuses_digests_that_disagree_with_their_files_or_catalog(
    revisions, tmp_path, case
):
    which, tamper, said = TAMPERED[case]
    files = {}
    for name in ("old", "new"):
        catalog, digests = revisions[name]
        digests = json.loads(json_bytes(digests))
        if (which == "previous") == (name == "old"):
            tamper(digests)
        files[name] = _write(
            tmp_path / name,
            {"catalog.json": json_bytes(catalog), "digests.json": json_bytes(digests)},
        )
    out = tmp_path / "upgrade"
    tampered = files["old" if which == "previous" else "new"] / "digests.json"
    done = _cli(
        "diff",
        "--previous",
        str(files["old"] / "digests.json"),
        "--current",
        str(files["new"] / "digests.json"),
        "--catalog",
        str(files["new"] / "catalog.json"),
        "--output-dir",
        str(out),
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert str(tampered) in done.stderr
    for text in said:
        assert text in done.stderr
    assert not out.exists() or not any(out.iterdir())
