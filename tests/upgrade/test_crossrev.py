"""Results of two revisions compared on the comparable subset (afbench.upgrade.crossrev): the
numbers against a hand computation from the per-task records (scipy's binomial test, the sign
patterns counted one by one, CR2 and its df by the matrix formulas), what is left out and why, the
refusals of results that do not belong to the subset's revisions or catalog files, and the
command line, with real imports, real verdict folders and real artifacts on disk."""

from __future__ import annotations

import json
import random
import subprocess
from itertools import product
from pathlib import Path

import pytest
from test_stats import cr2_by_matrices

from afbench.cli.actions import import_run
from afbench.core.config import default_columns
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import json_bytes, sha256_bytes
from afbench.imports.official import ModelSpec, import_model, outcomes
from afbench.kinds import RELEASE
from afbench.report.analysis import compactor, paired_comparisons
from afbench.tasks.catalog import build_catalog, content_digests, select_tasks
from afbench.upgrade.crossrev import (
    catalog_subset,
    comparable_subset,
    compare_results,
    local_side,
    official_side,
)
from afbench.upgrade.diff import diff_releases

from conftest import declared, run_afbench

SOURCES = {"s1": 8, "s2": 7, "s3": 6, "s4": 6, "s5": 5, "s6": 4}
REV1, REV2 = "1" * 40, "2" * 40
RESULT_FIELDS = list(default_columns("results"))


def _rows(revision: int) -> list[list[str]]:
    """MANIFEST rows: revision 2 changes s1_t002's statement, s3_t001's obligations and
    s2_t003's source reference, removes s6_t004 and adds s6_t005."""
    rows = []
    for source, size in SOURCES.items():
        for i in range(1, size + 1):
            task = f"{source}_t{i:03d}"
            rows.append([task, source, f"Thm {i}", f"X.{source}.t{i}", "1", f"ws/{task}"])
    if revision == 2:
        for row in rows:
            if row[0] == "s1_t002":
                row[3] = "X.s1.t2_fixed"
            if row[0] == "s3_t001":
                row[4] = "2"
            if row[0] == "s2_t003":
                row[2] = "Theorem 3 (renumbered)"
        rows = [r for r in rows if r[0] != "s6_t004"]
        rows.append(["s6_t005", "s6", "Thm 5", "X.s6.t5", "1", "ws/s6_t005"])
    return rows


def _csv(header: list[str], rows: list[list[str]]) -> bytes:
    return ("\n".join(",".join(r) for r in [header, *rows]) + "\n").encode()


def _catalog(revision: int, title: str = "Source") -> dict:
    rows = _rows(revision)
    manifest = _csv(
        ["task_id", "source_id", "source_ref", "target_declaration", "n_obligations", "workspace"],
        rows,
    )
    sizes = {s: sum(r[1] == s for r in rows) for s in SOURCES}
    sources = _csv(
        ["source_id", "title", "authors", "license", "n_tasks"],
        [[s, f"{title} {s}", "Someone", "CC0", str(n)] for s, n in sizes.items()],
    )
    release = declared(
        RELEASE,
        name="crossrev test",
        repository="afbench/crossrev-test",
        revision=REV1 if revision == 1 else REV2,
        synthetic=True,
        nominal_budget_usd=200.0,
    )
    return build_catalog(
        (manifest, {"path": "MANIFEST.csv", "actual_sha256": sha256_bytes(manifest)}),
        (sources, {"path": "SOURCES.csv", "actual_sha256": sha256_bytes(sources)}),
        {"manifest": default_columns("manifest"), "sources": default_columns("sources")},
        {"tasks": len(rows), "sources": len(SOURCES), "obligations": sum(int(r[4]) for r in rows)},
        release,
        "synthetic",
    )


def _outcomes(seed: int, strength: float) -> dict[str, str]:
    """Per task: solved, failed or an infrastructure error; sources differ in difficulty."""
    rng = random.Random(seed)
    out = {}
    for source in SOURCES:
        easy = rng.random()
        for i in range(1, 6 + 4):
            roll = rng.random()
            out[f"{source}_t{i:03d}"] = (
                "error" if roll < 0.04 else "solved" if roll < strength * easy + 0.2 else "failed"
            )
    return out


def _import(catalog: dict, slug: str, outcome: dict[str, str], scaffold: str = "sc-1") -> dict:
    rows = []
    for task in catalog["tasks"]:
        kind = outcome[task["task_id"]]
        n = task["n_obligations"]
        rows.append(
            [
                task["task_id"],
                task["source_id"],
                task["target_declaration"],
                str(n),
                "true" if kind == "solved" else "false",
                str(n if kind == "solved" else 0),
                "12.5",
                {"solved": "solved", "failed": "gave_up", "error": "infrastructure_error"}[kind],
                "source-present",
                scaffold,
                "repl",
                "budget",
                "",
            ]
        )
    data = _csv(RESULT_FIELDS, rows)
    entry = {"path": f"results/{slug}.csv", "actual_sha256": sha256_bytes(data)}
    spec = ModelSpec(slug, slug.upper(), "source-present")
    return import_model(
        catalog, (data, entry), spec, default_columns("results"), "source-present", 200
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("crossrev")
    old, new = _catalog(1), _catalog(2)
    diff, comparable = diff_releases(
        content_digests(old, None, "tasks"), content_digests(new, None, "tasks"), new
    )
    model_x, model_y = _outcomes(7, 0.7), _outcomes(11, 0.5)
    imports = {
        "x-old": _import(old, "model-x", model_x),
        "x-new": _import(new, "model-x", model_x),
        "y-new": _import(new, "model-y", _outcomes(11, 0.5)),
    }
    files = {"comparable": root / "comparable.json", "catalog-new": root / "catalog-new.json"}
    files["comparable"].write_bytes(json_bytes(comparable))
    files["catalog-new"].write_bytes(json_bytes(new))
    for name, imp in imports.items():
        files[name] = root / f"{name}.json"
        files[name].write_bytes(json_bytes(imp))
    return {
        "root": root,
        "old": old,
        "new": new,
        "diff": diff,
        "comparable": comparable,
        "imports": imports,
        "files": files,
        "truth": {"x": model_x, "y": model_y},
    }


def _verdict(task: dict, status: str, version: str = "1") -> bytes:
    return json_bytes(
        {
            "task_id": task["task_id"],
            "status": status,
            "obligations": [
                {
                    "declaration": task["target_declaration"],
                    "status": "accepted" if status == "accepted" else "rejected",
                    "detail": "",
                }
            ],
            "checks": {
                "target_equivalence": True,
                "allowed_axioms": True,
                "lean_kernel": status == "accepted",
                "nanoda_replay": True,
            },
            "error": {"kind": "timeout", "message": "the verifier timed out"}
            if status == "error"
            else None,
            "verifier": {"name": "v", "version": version},
        }
    )


def _run(root: Path, catalog: dict, name: str, statuses: dict[str, list[str]]) -> Path:
    """A local run of verdicts over sources s1 and s2 on `catalog`'s revision, imported by
    afbench (summary.json, outcomes.csv); `statuses`: per verifier version, one status a task
    in catalog order."""
    selection = select_tasks(catalog, "first-two", sources=["s1", "s2"])
    folder = root / name
    folder.mkdir()
    (folder / "selection.json").write_bytes(json_bytes(selection))
    tasks = selection["tasks"]
    for version, column in statuses.items():
        verdicts = folder / f"verdicts-{version}"
        verdicts.mkdir()
        for task, status in zip(tasks, column, strict=True):
            (verdicts / f"{task['task_id']}.json").write_bytes(_verdict(task, status, version))
    out = {k: folder / "run" / f"{k}.csv" for k in ("outcomes", "attempts")}
    out["summary"] = folder / "run" / "summary.json"
    (folder / "run").mkdir()
    import_run(
        folder / "selection.json",
        name,
        "verdicts",
        [folder / f"verdicts-{v}" for v in statuses],
        None,
        out,
    )
    return folder / "run"


def _side(import_: dict) -> dict:
    return official_side(import_)


# --- the hand computation ----------------------------------------------------------------------
def _by_hand(before: dict, after: dict, task_ids: list[str], source: dict[str, str]) -> dict:
    """Every number of one comparison from the two imports' per-task records: counts, each
    side's rate, current - previous, the exact McNemar p (scipy's binomial test), the sign-flip
    p (every sign pattern counted), and the CR2 interval with its df (the matrix formulas)."""
    from scipy import stats as scipy_stats  # here: the package never imports scipy

    old = {r["task_id"]: r["success"] for r in before["records"]}
    new = {r["task_id"]: r["success"] for r in after["records"]}
    pairs = [(old[t], new[t]) for t in task_ids]
    both = sum(a and b for a, b in pairs)
    only_previous = sum(a and not b for a, b in pairs)
    only_current = sum(b and not a for a, b in pairs)
    n = len(pairs)
    differences = [int(b) - int(a) for a, b in pairs]
    sources = [source[t] for t in task_ids]
    discordant = only_previous + only_current
    p_exact = (
        1.0
        if discordant == 0
        else scipy_stats.binomtest(only_current, discordant, 0.5, alternative="two-sided").pvalue
    )
    per_source: dict[str, int] = {}
    for d, s in zip(differences, sources, strict=True):
        per_source[s] = per_source.get(s, 0) + d
    sums = list(per_source.values())
    observed = abs(sum(sums))
    extreme = sum(
        abs(sum(e * t for e, t in zip(signs, sums, strict=True))) >= observed
        for signs in product((1, -1), repeat=len(sums))
    )
    se, df = cr2_by_matrices([float(d) for d in differences], sources)
    mean = sum(differences) / n
    t = scipy_stats.t.ppf(0.975, df)
    return {
        "both": both,
        "only_previous": only_previous,
        "only_current": only_current,
        "neither": n - both - only_previous - only_current,
        "difference": mean,
        "previous_rate": sum(a for a, _ in pairs) / n,
        "current_rate": sum(b for _, b in pairs) / n,
        "p_exact": p_exact,
        "p_sign_flip": extreme / 2 ** len(sums),
        "se": se,
        "df": df,
        "low": max(-1.0, mean - t * se),
        "high": min(1.0, mean + t * se),
        "sources": len(sums),
    }


def test_a_comparison_across_revisions_equals_the_hand_computation(world):
    imports = world["imports"]
    subset = comparable_subset(world["comparable"])
    result = compare_results(
        [
            (_side(imports["x-old"]), _side(imports["y-new"])),
            (_side(imports["x-old"]), _side(imports["x-new"])),
        ],
        subset,
        0.95,
    )
    unchanged = [t["task_id"] for t in world["diff"]["tasks"] if t["class"] == "unchanged"]
    assert result["comparable"]["tasks"] == len(unchanged) == 36 - 4
    source = {t["task_id"]: t["source_id"] for t in world["new"]["tasks"]}
    order = [t["task_id"] for t in world["new"]["tasks"] if t["task_id"] in unchanged]
    hand = _by_hand(imports["x-old"], imports["y-new"], order, source)
    row = result["comparisons"][0]
    for key in ("both", "only_previous", "only_current", "neither"):
        assert row[key] == hand[key], key
    assert row["tasks"] == len(order) and row["sources"] == hand["sources"] == 6
    assert row["difference"] == pytest.approx(hand["difference"], abs=1e-15)
    assert row["p_exact"] == pytest.approx(hand["p_exact"], rel=1e-12)
    assert row["p_sign_flip"] == pytest.approx(hand["p_sign_flip"], rel=1e-15)
    assert row["clustered"]["se_clustered"] == pytest.approx(hand["se"], rel=1e-9)
    assert row["clustered"]["df"] == pytest.approx(hand["df"], rel=1e-9)
    assert row["clustered"]["low"] == pytest.approx(hand["low"], rel=1e-9)
    assert row["clustered"]["high"] == pytest.approx(hand["high"], rel=1e-9)
    assert row["clustered"]["clusters"] == 6
    # each side's rate over the compared tasks, labelled with its revision
    assert row["previous"]["success_rate"] == pytest.approx(hand["previous_rate"])
    assert row["current"]["success_rate"] == pytest.approx(hand["current_rate"])
    assert (row["previous"]["revision"], row["current"]["revision"]) == (REV1, REV2)
    assert row["previous"]["label"].endswith(REV1[:12]) and row["current"]["label"].endswith(
        REV2[:12]
    )
    # the same model's outcomes on the unchanged tasks are the same on both revisions
    same = result["comparisons"][1]
    assert same["only_previous"] == same["only_current"] == 0
    assert same["p_exact"] == same["p_sign_flip"] == 1.0 and same["difference"] == 0
    # Holm over the two comparisons, by hand
    for p, adjusted in (("p_exact", "p_holm"), ("p_sign_flip", "p_sign_flip_holm")):
        assert row[adjusted] == pytest.approx(min(1.0, 2 * row[p]))
        assert same[adjusted] == max(row[adjusted], 1.0)
    assert row["significant"] == (row["p_sign_flip_holm"] < 0.05)


def test_the_comparison_says_what_was_left_out_and_never_pools_the_rates(world):
    imports = world["imports"]
    result = compare_results(
        [(_side(imports["x-old"]), _side(imports["y-new"]))],
        comparable_subset(world["comparable"]),
        0.95,
    )
    row = result["comparisons"][0]
    assert row["left_out"] == {
        "statement-changed": 2,
        "verifier-changed": 0,
        "environment-changed": 0,
        "metadata-changed": 1,
        "added": 1,
        "removed": 1,
        "not-on-both-sides": 0,
    }
    # every task of either revision is compared or left out, once
    assert row["tasks"] + row["left_out_total"] == 36 + 1
    assert result["comparable"]["left_out"] == {
        k: v for k, v in row["left_out"].items() if k != "not-on-both-sides"
    }

    def rates(value, path=""):
        if isinstance(value, dict):
            for key, inner in value.items():
                yield from rates(inner, f"{path}/{key}")
        elif isinstance(value, list):
            for i, inner in enumerate(value):
                yield from rates(inner, f"{path}/{i}")
        elif isinstance(value, float):
            yield path, value

    numbers = dict(rates(result))
    # a rate only ever belongs to one side (one revision): none at the comparison's own level,
    # and the two revisions' solves over both sides' tasks appear nowhere
    assert sorted(p for p in numbers if "rate" in p.rsplit("/", 1)[-1]) == [
        "/comparisons/0/current/success_rate",
        "/comparisons/0/previous/success_rate",
    ]
    pooled = (row["previous"]["solved"] + row["current"]["solved"]) / (2 * row["tasks"])
    assert row["previous"]["success_rate"] != row["current"]["success_rate"]
    assert not [p for p, v in numbers.items() if v == pytest.approx(pooled, abs=1e-12)]


def test_infrastructure_errors_are_kept_unsolved_and_can_mark_the_decision(world):
    imports = world["imports"]
    row = compare_results(
        [(_side(imports["x-old"]), _side(imports["y-new"]))],
        comparable_subset(world["comparable"]),
        0.95,
    )["comparisons"][0]
    errors = [
        t
        for t, kind in world["truth"]["x"].items()
        if kind == "error" and t in world["comparable"]["task_ids"]
    ]
    assert row["previous"]["unresolved"] == len(errors) > 0
    favour = row["unresolved"]["favour_previous"]
    # counting x's errors as solved moves exactly those tasks
    assert favour["only_previous"] - row["only_previous"] == sum(
        1
        for t in errors
        if next(r for r in imports["y-new"]["records"] if r["task_id"] == t)["success"] is False
    )
    assert row["unresolved"]["marked"] == any(
        w["significant"] != row["significant"]
        for w in (favour, row["unresolved"]["favour_current"])
    )


def test_two_results_of_one_revision_need_no_comparable_subset(world):
    """On one revision the comparison is the report's own pair: the same counts, p-values and
    clustered interval as analysis.paired_comparisons gives the two models."""
    imports, new = world["imports"], world["new"]
    result = compare_results(
        [(_side(imports["x-new"]), _side(imports["y-new"]))], catalog_subset(new), 0.95
    )
    row = result["comparisons"][0]
    assert result["same_revision"] and result["comparable"] is None
    assert row["left_out"] == {"not-on-both-sides": 0} and row["tasks"] == 36
    compact = compactor(new)
    shown = [compact(outcomes(imports[k])) for k in ("x-new", "y-new")]
    pair = paired_comparisons(shown, new, 0.95)["pairs"][0]
    ahead = pair["a"] == "model-y"  # the report puts the leader first: a - b
    sign = 1 if ahead else -1
    assert row["difference"] == pytest.approx(sign * pair["difference_difference"])
    assert row["p_exact"] == pair["p_exact"] and row["p_sign_flip"] == pair["p_sign_flip"]
    assert row["clustered"]["se_clustered"] == pytest.approx(pair["clustered"]["se_clustered"])
    assert row["clustered"]["df"] == pytest.approx(pair["clustered"]["df"])


def test_results_not_of_the_subsets_revisions_or_catalog_files_are_refused(world):
    imports, subset = world["imports"], comparable_subset(world["comparable"])
    # sides swapped: the previous side is of the current revision
    with pytest.raises(AfbenchError) as swapped:
        compare_results([(_side(imports["y-new"]), _side(imports["x-old"]))], subset, 0.95)
    assert "previous side (MODEL-Y" in str(swapped.value)
    assert "not of the revision the comparable subset names for the previous release" in str(
        swapped.value
    )
    assert REV1 in str(swapped.value) and REV2 in str(swapped.value)
    # two revisions without the diff's subset: on one revision's catalog, refused
    with pytest.raises(AfbenchError, match="of another revision than the catalog's"):
        compare_results(
            [(_side(imports["x-old"]), _side(imports["y-new"]))], catalog_subset(world["new"]), 0.95
        )
    # an import of the current revision made from other catalog files (another SOURCES.csv)
    other = _catalog(2, title="Retitled")
    stray = _import(other, "model-y", world["truth"]["y"])
    with pytest.raises(AfbenchError) as files:
        compare_results([(_side(imports["x-old"]), _side(stray))], subset, 0.95)
    said = str(files.value)
    assert "imported against other catalog files than the diff's" in said
    assert "SOURCES.csv" in said
    # an edited comparable subset: its digest no longer holds
    edited = json.loads(json.dumps(world["comparable"]))
    edited["task_ids"] = edited["task_ids"][1:]
    edited["tasks"] = edited["tasks"][1:]
    with pytest.raises(AfbenchError, match="not as the diff wrote it"):
        comparable_subset(edited)
    # official results are never compared with a local run; unlike imports are refused
    scaffolded = _import(world["new"], "model-y", world["truth"]["y"], scaffold="sc-2")
    with pytest.raises(AfbenchError, match="differ in scaffold") as unlike:
        compare_results([(_side(imports["x-old"]), _side(scaffolded))], subset, 0.95)
    assert "'sc-1'" in str(unlike.value) and "'sc-2'" in str(unlike.value)


def _statuses(tasks: list[dict], seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(["accepted", "accepted", "rejected", "error"]) for _ in tasks]


def test_local_runs_of_each_revision_compare_on_the_subset(world, tmp_path):
    old_tasks = select_tasks(world["old"], "first-two", sources=["s1", "s2"])["tasks"]
    new_tasks = select_tasks(world["new"], "first-two", sources=["s1", "s2"])["tasks"]
    before = _run(tmp_path, world["old"], "r-old", {"1": _statuses(old_tasks, 1)})
    after = _run(
        tmp_path,
        world["new"],
        "r-new",
        {"1": _statuses(new_tasks, 2), "2": ["accepted"] * len(new_tasks)},
    )
    from afbench.task_analysis.anatomy import configuration_rows, read_outcome_rows

    def side(folder: Path, configuration: str | None) -> dict:
        summary = json.loads((folder / "summary.json").read_text())
        rows = configuration_rows(summary, read_outcome_rows(folder / "outcomes.csv"))
        return local_side(summary, rows, configuration)

    subset = comparable_subset(world["comparable"])
    with pytest.raises(AfbenchError, match="has 2 configurations: name the one"):
        side(after, None)
    row = compare_results(
        [(side(before, None), side(after, "verdicts | verifier v 1"))], subset, 0.95
    )["comparisons"][0]
    # s1 and s2 without s1_t002 (statement) and s2_t003 (metadata): 13 tasks in 2 sources
    assert (row["tasks"], row["sources"]) == (13, 2)
    assert row["left_out"]["not-on-both-sides"] == len(subset.task_ids) - 13
    assert row["previous"]["outside"] == row["current"]["outside"] == len(subset.task_ids) - 13
    old = dict(zip([t["task_id"] for t in old_tasks], _statuses(old_tasks, 1), strict=True))
    new = dict(zip([t["task_id"] for t in new_tasks], _statuses(new_tasks, 2), strict=True))
    compared = [t for t in subset.task_ids if t in old and t in new]
    assert row["only_previous"] == sum(
        old[t] == "accepted" and new[t] != "accepted" for t in compared
    )
    assert row["only_current"] == sum(
        new[t] == "accepted" and old[t] != "accepted" for t in compared
    )
    assert row["previous"]["unresolved"] == sum(old[t] == "error" for t in compared)
    # a run is never compared with official results
    with pytest.raises(AfbenchError, match="never compared with a local run"):
        compare_results(
            [(_side(world["imports"]["x-old"]), side(after, "verdicts | verifier v 2"))],
            subset,
            0.95,
        )


def _cli(*argv: str) -> subprocess.CompletedProcess:
    """`afbench ARGV` in this process (run_afbench): these tests check what it wrote and said."""
    return run_afbench(*argv)


def test_afbench_compare_revisions_writes_the_artifact_and_refuses_a_missing_subset(
    world, tmp_path
):
    files = world["files"]
    out = tmp_path / "comparisons.json"
    done = _cli(
        "compare-revisions", "--comparable", str(files["comparable"]),
        "--previous", str(files["x-old"]), "--current", str(files["y-new"]),
        "--previous", str(files["x-old"]), "--current", str(files["x-new"]),
        "--output", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    assert lines[1].startswith(f"MODEL-X · {REV1[:12]} ") and f"MODEL-X · {REV2[:12]}" in lines[1]
    assert (
        "on 32 tasks (left out: 2 statement-changed, 1 metadata-changed, 1 added, 1 removed)"
        in (lines[0])
    )
    written = json.loads(out.read_text())
    assert written["kind"] == "afbench cross-revision comparisons"
    assert written["comparisons"][1]["only_current"] == 0
    assert "comparisons 111111111111 -> 222222222222: 2 comparisons on the 32 unchanged tasks" in (
        done.stderr
    )
    # the same bytes when run again
    again = _cli(
        "compare-revisions", "--comparable", str(files["comparable"]),
        "--previous", str(files["x-old"]), "--current", str(files["y-new"]),
        "--previous", str(files["x-old"]), "--current", str(files["x-new"]),
        "--output", str(tmp_path / "again.json"), "--quiet",
    )  # fmt: skip
    assert again.returncode == 0 and (tmp_path / "again.json").read_bytes() == out.read_bytes()
    # across revisions without the comparable subset: refused, naming both revisions
    refused = _cli(
        "compare-revisions", "--catalog", str(files["catalog-new"]),
        "--previous", str(files["x-old"]), "--current", str(files["y-new"]),
        "--output", str(tmp_path / "none.json"),
    )  # fmt: skip
    assert refused.returncode == 2
    assert "of another revision than the catalog's" in refused.stderr
    assert str(files["x-old"]) in refused.stderr  # the side's file, named
    assert REV1 in refused.stderr and REV2 in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "none.json").exists()
    # an incomplete import: one line naming the file and the field, nothing written
    broken = json.loads(files["x-old"].read_text())
    del broken["infrastructure_errors"]
    (tmp_path / "broken.json").write_bytes(json_bytes(broken))
    incomplete = _cli(
        "compare-revisions", "--comparable", str(files["comparable"]),
        "--previous", str(tmp_path / "broken.json"), "--current", str(files["y-new"]),
        "--output", str(tmp_path / "none.json"),
    )  # fmt: skip
    assert incomplete.returncode == 2 and len(incomplete.stderr.splitlines()) == 1
    # (refused by the import's declaration, before the comparison reads it)
    assert "field 'infrastructure_errors': artifact lacks a field" in incomplete.stderr
    assert str(tmp_path / "broken.json") in incomplete.stderr
    assert "infrastructure_errors" in incomplete.stderr and not (tmp_path / "none.json").exists()
    # pairs must pair
    unpaired = _cli(
        "compare-revisions", "--comparable", str(files["comparable"]),
        "--previous", str(files["x-old"]), "--previous", str(files["x-old"]),
        "--current", str(files["y-new"]),
    )  # fmt: skip
    assert unpaired.returncode == 2 and "paired in order" in unpaired.stderr


def test_the_report_shows_them_only_from_the_imports_it_shows_and_escapes_their_names(world):
    from afbench.report.page import cross_revision_section
    from afbench.upgrade.crossrev import analysis_block

    imports, new = world["imports"], world["new"]
    hostile = dict(imports["y-new"], display_name="<b>Y</b> \u202eevil")
    artifact = compare_results(
        [(_side(imports["x-old"]), _side(hostile))], comparable_subset(world["comparable"]), 0.95
    )
    block = analysis_block(artifact, new, [imports["y-new"]], [], "comparisons.json")
    html = cross_revision_section(block)
    assert (
        "<b>Y</b>" not in html
        and "<bdi>&lt;b&gt;Y&lt;/b&gt; \u202eevil · 222222222222</bdi>" in html
    )
    assert "left out: 2 statement-changed, 1 metadata-changed, 1 added, 1 removed" in html
    assert "of the 37 tasks of the two revisions" in html and cross_revision_section(None) == ""
    # another import of the model the report shows: refused
    rerun = dict(
        world["truth"]["y"],
        s1_t001="solved" if world["truth"]["y"]["s1_t001"] != "solved" else "failed",
    )
    other = _import(new, "model-y", rerun)
    with pytest.raises(AfbenchError, match="another import of model 'model-y' than the report"):
        analysis_block(artifact, new, [other], [], "comparisons.json")
    # comparisons into another revision, or on one revision: not this report's section
    with pytest.raises(AfbenchError, match="not across revisions into this report's revision"):
        analysis_block(artifact, world["old"], [], [], "comparisons.json")
    one = compare_results(
        [(_side(imports["x-new"]), _side(imports["y-new"]))], catalog_subset(new), 0.95
    )
    with pytest.raises(AfbenchError, match="not across revisions"):
        analysis_block(one, new, [], [], "comparisons.json")


@pytest.mark.parametrize(
    "upgrade, said",
    [
        (
            {
                "comparisons": [
                    {"previous": {"model": "demo-model-a"}, "current": {"model": "demo-model-a"}}
                ]
            },
            "comparisons across revisions need the previous release",
        ),
        (
            {
                "previous_revision": REV1,
                "comparisons": [
                    {"previous": {"model": "demo-model-a"}, "current": {"run": "demo-verdicts"}}
                ],
            },
            "an official import is compared only with an official import",
        ),
        (
            {
                "previous_revision": REV1,
                "comparisons": [
                    {"previous": {"model": "demo-model-a"}, "current": {"model": "nobody"}}
                ],
            },
            "the current side is a model this config does not import",
        ),
        (
            {
                "previous_revision": REV1,
                "comparisons": [{"previous": {"run": "x"}, "current": {"run": "not-a-run"}}],
            },
            "the current side is a run this config does not import",
        ),
        (
            {
                "previous_revision": REV1,
                "comparisons": [
                    {"previous": {"model": "demo-model-a"}, "current": {"model": "demo-model-a"}}
                ]
                * 2,
            },
            "a comparison is listed twice",
        ),
        (
            {
                "previous_revision": REV1,
                "comparisons": [
                    {
                        "previous": {"model": "demo-model-a", "configuration": "c"},
                        "current": {"model": "demo-model-a"},
                    }
                ],
            },
            "upgrade/comparisons/0/previous",
        ),
    ],
)
def test_config_comparisons_are_checked_before_anything_runs(tmp_path, upgrade, said):
    from afbench.core.config import load_config

    repo = Path(__file__).resolve().parents[2]
    extra = tmp_path / "extra.yaml"
    extra.write_text(json.dumps({"upgrade": upgrade}))
    with pytest.raises(AfbenchError) as refused:
        load_config([repo / "config/demo.yaml", extra])
    assert said in str(refused.value)
