"""Numbers a reviewer accepts, on the demo release built by the pipeline's chain: each clustered
standard error, interval and design effect recomputed from the per-task records by the formula;
tiers against the Holm p-values; infrastructure errors resolved each way; the authors'
published figures checked; the run planner; stratified selections."""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import math
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist

import pytest

import afbench.frames as af
from afbench import demo as demo_release
from afbench.errors import AfbenchError
from afbench.stats import infrastructure_error_bounds

from conftest import afbench, config_for, job, published_flags, run_all, write_tree

ALPHA = 0.05
Z = NormalDist().inv_cdf(0.975)
IMPORTS = "imports/source-present/budget-200"


@pytest.fixture(scope="module")
def built(tmp_path_factory, release_files, demo_yaml) -> tuple[Path, dict]:
    base = tmp_path_factory.mktemp("numbers")
    mirror = write_tree(base / "mirror", release_files)
    cfg = config_for(
        release_files,
        demo_yaml["release"]["revision"],
        {"kind": "dir", "mirror": str(mirror)},
        base / "results",
        demo_yaml,
    )
    return run_all(cfg), cfg


@pytest.fixture(scope="module")
def rev(built) -> Path:
    return built[0]


@pytest.fixture(scope="module")
def analysis(rev) -> dict:
    return json.loads((rev / "report/analysis.json").read_text())


@pytest.fixture(scope="module")
def records(rev) -> dict[str, dict[str, dict]]:
    """model -> task id -> the import's per-task record."""
    return {
        path.stem: {r["task_id"]: r for r in json.loads(path.read_text())["records"]}
        for path in sorted((rev / IMPORTS).glob("demo-model-*.json"))
    }


@pytest.fixture(scope="module")
def catalog(rev) -> dict:
    return json.loads((rev / "tasks/catalog.json").read_text())


def by_formula(values: list[int], sources: list[str]) -> dict:
    """Miller (2024): SE_cl = sqrt(sum_c (sum_{i in c} (x_i - mean))^2) / n, SE_iid the same
    with each task its own cluster, design effect (SE_cl / SE_iid)^2, interval mean ± z SE_cl."""
    n = len(values)
    mean = sum(values) / n
    per_source: dict[str, float] = defaultdict(float)
    for x, source in zip(values, sources, strict=True):
        per_source[source] += x - mean
    se_cl = math.sqrt(sum(s * s for s in per_source.values())) / n
    se_iid = math.sqrt(sum((x - mean) ** 2 for x in values)) / n
    return {
        "mean": mean,
        "se_clustered": se_cl,
        "se_iid": se_iid,
        "design_effect": (se_cl / se_iid) ** 2,
        "clusters": len(per_source),
        "low": mean - Z * se_cl,
        "high": mean + Z * se_cl,
    }


def close(found: dict, expected: dict) -> None:
    for key, value in expected.items():
        assert found[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_each_models_clustered_interval_is_the_formula_over_its_records(analysis, records, catalog):
    tasks = [t["task_id"] for t in catalog["tasks"]]
    sources = [t["source_id"] for t in catalog["tasks"]]
    assert analysis["confidence"] == 0.95
    assert "Miller 2024" in analysis["methods"]["success_rate_clustered"]
    assert "Wilson" in analysis["methods"]["success_rate_independent"]
    assert "clustered" in analysis["methods"]["which_to_cite"]
    effects = {}
    for row in analysis["leaderboard"]:
        x = [int(records[row["model"]][t]["success"]) for t in tasks]
        clustered = row["clustered"]
        close(clustered, by_formula(x, sources))
        assert clustered["clusters"] == 24 and clustered["tasks"] == 341
        assert clustered["method"].startswith("clustered standard error over sources")
        assert row["passes"] == sum(x)
        effects[row["model"]] = clustered["design_effect"]
    # the demo's cohesive sources: at least one model's tasks are far from independent
    assert max(effects.values()) >= 1.5


def test_each_pairs_clustered_difference_is_the_formula_over_its_records(
    analysis, records, catalog
):
    tasks = [t["task_id"] for t in catalog["tasks"]]
    sources = [t["source_id"] for t in catalog["tasks"]]
    assert "paired difference a - b" in analysis["paired"]["clustered_difference"]
    pairs = analysis["paired"]["pairs"]
    assert len(pairs) == 36
    for pair in pairs:
        a, b = records[pair["a"]], records[pair["b"]]
        d = [int(a[t]["success"]) - int(b[t]["success"]) for t in tasks]
        close(pair["clustered"], by_formula(d, sources))
        assert pair["clustered"]["mean"] == pytest.approx(pair["difference_difference"])
        assert (pair["only_a"], pair["only_b"]) == (d.count(1), d.count(-1))


def test_per_source_wilson_intervals_by_hand(analysis, records, catalog):
    """Wilson: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)."""
    assert "Wilson" in analysis["methods"]["per_source"]
    of_source = defaultdict(list)
    for task in catalog["tasks"]:
        of_source[task["source_id"]].append(task["task_id"])
    assert [s["source_id"] for s in analysis["per_source"]] == list(of_source)
    for row in analysis["per_source"]:
        n = len(of_source[row["source_id"]])
        for model, interval in row["wilson"].items():
            k = sum(records[model][t]["success"] for t in of_source[row["source_id"]])
            assert row["passes"][model] == k
            p = k / n
            centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
            half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
            assert interval["low"] == pytest.approx(max(0.0, centre - half), abs=1e-12)
            assert interval["high"] == pytest.approx(min(1.0, centre + half), abs=1e-12)


def test_tiers_agree_with_the_holm_p_values_for_every_pair(analysis, rev):
    board = analysis["leaderboard"]
    leader = board[0]["model"]
    letters = {r["model"]: set(r["letters"]) for r in board}
    tier = {r["model"]: r["leader_tier"] for r in board}
    holm = {(p["a"], p["b"]): p["p_holm"] for p in analysis["paired"]["pairs"]}
    assert len(holm) == 36
    for (a, b), p in holm.items():
        assert bool(letters[a] & letters[b]) == (p >= ALPHA), (a, b, p)
        if a == leader:
            assert tier[b] == (p >= ALPHA)
    assert tier[leader] is True
    # the comparison's summary, its CSV and the frame carry the same tiers
    summary = json.loads((rev / IMPORTS / "summary.json").read_text())
    assert {r["model"]: (r["leader_tier"], r["letters"]) for r in summary["leaderboard"]} == {
        r["model"]: (r["leader_tier"], r["letters"]) for r in board
    }
    with open(rev / IMPORTS / "leaderboard.csv", newline="") as f:
        written = {row["model"]: row for row in csv.DictReader(f)}
    frame = af.leaderboard(rev)
    for r in board:
        assert written[r["model"]]["letters"] == "".join(r["letters"])
        assert written[r["model"]]["leader_tier"] == str(r["leader_tier"]).lower()
        row = frame[frame.model == r["model"]].iloc[0]
        assert row.letters == "".join(r["letters"]) and bool(row.leader_tier) == r["leader_tier"]
        assert row.design_effect == pytest.approx(r["clustered"]["design_effect"])
        assert row.clustered_low == pytest.approx(r["clustered"]["low"])


def test_infrastructure_errors_are_bounded_and_resolved_each_way(analysis, records, catalog, rev):
    tasks = [t["task_id"] for t in catalog["tasks"]]

    def bits(model: str, keep) -> int:
        return sum(1 << i for i, t in enumerate(tasks) if keep(records[model][t]))

    success = {m: bits(m, lambda r: r["success"]) for m in records}
    errors = {m: bits(m, lambda r: r["stop_reason"] == "infrastructure_error") for m in records}
    for row in analysis["leaderboard"]:
        m = row["model"]
        assert row["infrastructure_bounds"]["passes"] == row["passes"]
        assert row["infrastructure_bounds"]["passes_high"] == row["passes"] + errors[m].bit_count()
    marked = []
    for pair in analysis["paired"]["pairs"]:
        a, b = pair["a"], pair["b"]
        reference = infrastructure_error_bounds(success[a], errors[a], success[b], errors[b], 341)
        assert reference["reported"]["p_exact"] == pair["p_exact"]
        for way in ("favour_a", "favour_b"):
            assert pair["infrastructure"][way] == reference[way]
        crossed = any(
            (reference[w]["p_exact"] < ALPHA) != (pair["p_exact"] < ALPHA)
            for w in ("favour_a", "favour_b")
        )
        assert pair["infrastructure"]["marked"] == crossed
        if crossed:
            marked.append((a, b))
    assert marked and analysis["paired"]["marked_pairs"] == len(marked)
    assert "unadjusted" in analysis["paired"]["infrastructure"]
    html = (rev / "report/index.html").read_text()
    assert 'id="infrastructure"' in html and f"{len(marked)} pair(s) marked" in html
    frame = af.comparisons(rev)
    assert sorted(map(tuple, frame[frame.infrastructure_marked][["a", "b"]].values)) == sorted(
        marked
    )


def test_the_report_says_which_interval_to_cite_and_shows_both(rev, analysis):
    html = (rev / "report/index.html").read_text()
    assert "Cite the clustered interval" in html and "Wilson" in html
    assert "95% clustered (sources)" in html and "design effect" in html
    assert html.count("matches the authors&#x27; leaderboard") == 9
    assert 'id="published-mismatch"' not in html
    assert analysis["published"]["matches"] is True


# --- the authors' published figures ---------------------------------------------------------
def compare(cfg: dict, rev: Path, out: Path, **overrides):
    imports = sorted((rev / IMPORTS).glob("demo-model-*.json"))
    cfg = copy.deepcopy(cfg)
    for key, value in overrides.items():
        cfg["import"][key] = value
    return job(
        "compare-models",
        *[f"--import={p}" for p in imports],
        "--strict-budget=false",
        *published_flags(cfg),
        f"--summary={out / 'summary.json'}",
        f"--leaderboard={out / 'leaderboard.csv'}",
    )


def test_a_published_count_that_differs_is_shown_and_refused_when_strict(built, tmp_path):
    rev, cfg = built
    cfg = copy.deepcopy(cfg)
    cfg["models"]["demo-model-b"]["published_passes"] = 229
    source = cfg["release"]["published"]["source"]
    warnings = compare(cfg, rev, tmp_path)
    assert warnings == [
        "does not match the authors' published figures: model 'demo-model-b': the import has "
        f"228 passes, the authors' leaderboard 229 (published: {source})"
    ]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["published"]["matches"] is False
    row = next(r for r in summary["leaderboard"] if r["model"] == "demo-model-b")
    assert (row["published_passes"], row["matches_published"]) == (229, False)
    # the report shows it loudly
    afbench(
        "report",
        "--summary",
        tmp_path / "summary.json",
        *[a for p in sorted((rev / IMPORTS).glob("demo-model-*.json")) for a in ("--import", p)],
        "--catalog",
        rev / "tasks/catalog.json",
        "--receipt",
        rev / "release/receipt.json",
        "--output-dir",
        tmp_path / "report",
    )
    html = (tmp_path / "report/index.html").read_text()
    assert 'id="published-mismatch"' in html and "DIFFERS: published 229 (-1)" in html
    # strict: refused, naming the model, both counts and the source; nothing written
    with pytest.raises(AfbenchError) as refused:
        compare(cfg, rev, tmp_path / "strict", strict_published=True)
    message = str(refused.value)
    assert "strict published check refused" in message and "'demo-model-b'" in message
    assert "228 passes" in message and "229" in message and source in message
    assert not (tmp_path / "strict").exists()


def test_strict_published_import_results_refuses_a_difference(built, tmp_path):
    rev, cfg = built
    cfg = copy.deepcopy(cfg)
    cfg["models"]["demo-model-a"]["published_passes"] = 265
    args = ["import-results", "--release-dir", rev / "release", "--model", "demo-model-a"]
    warnings = afbench(*args, "--output", tmp_path / "ref.json", cfg=cfg)
    assert warnings and "'demo-model-a'" in warnings[0] and "266 passes" in warnings[0]
    with pytest.raises(AfbenchError, match=r"strict published check refused.*266 passes.*265"):
        afbench(*args, "--strict-published", "--output", tmp_path / "s.json", cfg=cfg)
    assert not (tmp_path / "s.json").exists()


def test_published_task_rows_and_costs_are_checked_too(built, tmp_path):
    rev, cfg = built
    cfg = copy.deepcopy(cfg)
    cfg["release"]["published"]["task_rows"] = 3070
    cfg["models"]["demo-model-d"]["published_over_budget_usd"] = [412.25]
    warnings = compare(cfg, rev, tmp_path)
    assert len(warnings) == 2
    assert "USD [412.5]" in warnings[0] and "USD [412.25]" in warnings[0]
    assert "3069 task rows" in warnings[1] and "3070" in warnings[1]
    # with one published model not imported, the task rows are not checked (not a difference)
    cfg["release"]["published"]["task_rows"] = 3069
    cfg["models"]["demo-model-d"]["published_over_budget_usd"] = [412.5]
    imports = sorted((rev / IMPORTS).glob("demo-model-*.json"))[:8]
    job(
        "compare-models",
        *[f"--import={p}" for p in imports],
        "--strict-budget=false",
        *published_flags(cfg),
        "--strict-published=true",
        f"--summary={tmp_path / 's.json'}",
        f"--leaderboard={tmp_path / 'l.csv'}",
    )
    check = json.loads((tmp_path / "s.json").read_text())["published"]
    assert check["task_rows"]["matches"] is None
    assert "not imported: demo-model-i" in check["task_rows"]["note"]
    assert check["matches"] is True


def test_published_facts_need_their_source(demo_yaml):
    from afbench.config import validate_config

    cfg = copy.deepcopy(demo_yaml)
    cfg["release"]["published"]["source"] = None
    with pytest.raises(AfbenchError, match="published facts need their source"):
        validate_config(cfg)


def test_the_official_config_records_the_interface_pages_figures():
    from afbench.config import OFFICIAL_CONFIG, load_config, published_facts

    facts = published_facts(load_config([OFFICIAL_CONFIG]))
    assert facts["passes"] == {
        "gpt-6-astra": 281,
        "opus-5": 211,
        "gpt-5.6-sol": 201,
        "fable-5": 181,
        "deepseek-v4.1-flash": 180,
        "gemini-3.7-flash": 179,
        "kimi-k3": 165,
        "sonnet-5": 152,
        "opus-4.8": 150,
    }
    assert facts["task_rows"] == 3069 == 9 * 341
    assert facts["over_budget_usd"] == {"fable-5": [358.8273]}
    assert "interface page" in facts["source"]


# --- the run planner ------------------------------------------------------------------------
def connor(delta: float, psi: float, alpha: float = 0.05, power: float = 0.8) -> float:
    normal = NormalDist()
    root = normal.inv_cdf(1 - alpha / 2) * math.sqrt(psi) + normal.inv_cdf(power) * math.sqrt(
        psi - delta * delta
    )
    return root * root / (delta * delta)


def test_power_gives_the_tasks_for_a_difference_and_its_inverse(tmp_path, capsys):
    afbench(
        "power",
        *("--difference", "0.1", "--alpha", "0.05", "--power", "0.8", "--baseline-rate", "0.5"),
        *("--output", tmp_path / "n.json"),
    )
    line = capsys.readouterr().out.strip()
    plan = json.loads((tmp_path / "n.json").read_text())
    psi = 0.6 * 0.5 + 0.5 * 0.4  # p_a = 0.6, p_b = 0.5, successes independent
    assert plan["tasks"] == math.ceil(connor(0.1, psi)) == 391
    assert line == plan["line"] and "\n" not in line
    assert line.startswith("afbench power: 391 tasks detect a paired difference of 0.1")
    assert "Connor (1987)" in line and "n = (z_{1-α/2}" in line
    # the inverse: 391 tasks detect 0.1 or a hair less (at P = 1/2, ψ = 1/2 whatever δ), 390 not
    afbench("power", "--tasks", "391", "--baseline-rate", "0.5", "--output", tmp_path / "d.json")
    inverse = json.loads((tmp_path / "d.json").read_text())
    found = inverse["difference"]
    assert found <= 0.1 and inverse["discordance"] == 0.5
    assert connor(found, 0.5) <= 391 < connor(found - inverse["tolerance"], 0.5)
    afbench("power", "--tasks", "390", "--baseline-rate", "0.5", "--output", tmp_path / "e.json")
    assert json.loads((tmp_path / "e.json").read_text())["difference"] > 0.1
    capsys.readouterr()
    with pytest.raises(AfbenchError, match="even the largest"):
        afbench("power", "--tasks", "5", "--baseline-rate", "0.5")


def test_power_over_two_models_uses_their_observed_discordance(rev, records, capsys):
    afbench(
        "power",
        *("--difference", "0.1", "--models", "demo-model-c", "demo-model-d", "--root", rev),
        *("--output", rev.parent / "power-c-d.json"),
    )
    plan = json.loads((rev.parent / "power-c-d.json").read_text())
    c, d = records["demo-model-c"], records["demo-model-d"]
    discordant = sum(c[t]["success"] != d[t]["success"] for t in c)
    assert plan["models"]["only_a"] + plan["models"]["only_b"] == discordant
    assert plan["discordance"] == discordant / 341
    assert plan["tasks"] == math.ceil(connor(0.1, discordant / 341))
    assert plan["release"]["revision"] == rev.name
    assert "observed between demo-model-c and demo-model-d" in capsys.readouterr().out
    with pytest.raises(AfbenchError, match="no import of model 'demo-model-z'"):
        afbench(
            "power",
            "--difference",
            "0.1",
            "--models",
            "demo-model-c",
            "demo-model-z",
            "--root",
            rev,
        )


# --- stratified selections ------------------------------------------------------------------
def largest_remainder(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Hamilton by hand, with exact fractions: floors, then the largest remainders (ties: the
    larger source, then the earlier)."""
    everything = sum(sizes.values())
    quota = {s: Fraction(total * n, everything) for s, n in sizes.items()}
    seats = {s: math.floor(q) for s, q in quota.items()}
    order = sorted(sizes, key=lambda s: (-(quota[s] - seats[s]), -sizes[s], list(sizes).index(s)))
    for s in order[: total - sum(seats.values())]:
        seats[s] += 1
    return seats


def test_a_stratified_selection_is_byte_identical_and_proportional(rev, catalog):
    outputs = []
    for attempt in ("one", "two"):
        out = rev.parent / f"stratified-{attempt}.json"
        job(
            "select-tasks",
            f"--catalog={rev / 'tasks/catalog.json'}",
            "--name=pilot",
            "--stratified-tasks=50",
            "--stratified-seed=7",
            f"--output={out}",
        )
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    selection = json.loads(outputs[0])
    sizes = Counter(t["source_id"] for t in catalog["tasks"])
    sizes = {s["source_id"]: sizes[s["source_id"]] for s in catalog["sources"]}
    expected = largest_remainder(sizes, 50)
    chosen = Counter(t["source_id"] for t in selection["tasks"])
    assert (
        {s: chosen[s] for s in sizes}
        == expected
        == selection["criteria"]["stratified"]["allocation"]
    )
    assert selection["counts"]["tasks"] == len(selection["task_ids"]) == 50
    # within a source: the tasks with the lowest sha256(f"{seed}:{task_id}")
    for source, count in expected.items():
        ids = [t["task_id"] for t in catalog["tasks"] if t["source_id"] == source]
        lowest = sorted(ids, key=lambda t: hashlib.sha256(f"7:{t}".encode()).digest())[:count]
        assert [t for t in selection["task_ids"] if t in ids] == [t for t in ids if t in lowest]
    order = [t["task_id"] for t in catalog["tasks"]]
    assert selection["task_ids"] == sorted(selection["task_ids"], key=order.index)
    assert len(selection["selection_sha256"]) == 64
    # another seed, another draw; the same allocation
    job(
        "select-tasks",
        f"--catalog={rev / 'tasks/catalog.json'}",
        "--name=pilot",
        "--stratified-tasks=50",
        "--stratified-seed=8",
        f"--output={rev.parent / 'stratified-8.json'}",
    )
    other = json.loads((rev.parent / "stratified-8.json").read_text())
    assert other["task_ids"] != selection["task_ids"]
    assert other["criteria"]["stratified"]["allocation"] == expected


def test_stratified_and_power_settings_are_checked_when_config_is_read(demo_yaml):
    from afbench.config import validate_config

    refusals = [
        (["selections", "x"], {"stratified": {"tasks": 5, "seed": 1}, "limit": 3}, "no task list"),
        (["selections", "x"], {"stratified": {"tasks": 5}}, "seed"),
        (["power"], {"difference": 0.1, "tasks": 50, "baseline_rate": 0.5}, "not both"),
        (["power"], {"difference": 0.1}, "two models or a baseline rate"),
        (["power"], {"tasks": 50, "models": ["demo-model-a"]}, "two different models"),
        (["power"], {"tasks": 50, "models": ["demo-model-a", "nope"]}, "unknown model"),
    ]
    for path, value, message in refusals:
        cfg = copy.deepcopy(demo_yaml)
        cfg.setdefault(path[0], {})
        if len(path) == 2:
            cfg[path[0]][path[1]] = value
        else:
            cfg[path[0]] = value
        with pytest.raises(AfbenchError, match=message):
            validate_config(cfg)


def test_the_demo_release_keeps_its_own_counts_and_its_anomaly():
    """The generator's cohesive sources and extra errors left the pass counts and the
    over-budget record as they were (the demo's own, never the official ones)."""
    files = demo_release.generate_release()
    for slug, passes in demo_release.INTENDED_PASS_COUNTS.items():
        rows = list(csv.DictReader(files[f"results/{slug}.csv"].decode().splitlines()))
        assert sum(r["success"] == "true" for r in rows) == passes
        errors = sum(r["stop_reason"] == "infrastructure_error" for r in rows)
        assert errors == demo_release.INFRA_ERRORS.get(slug, demo_release.INFRA_ERRORS_DEFAULT)
    over = [
        (slug, r["cost_usd"])
        for slug in demo_release.INTENDED_PASS_COUNTS
        for r in csv.DictReader(files[f"results/{slug}.csv"].decode().splitlines())
        if float(r["cost_usd"]) > 200
    ]
    assert over == [(demo_release.OVER_BUDGET["model"], demo_release.OVER_BUDGET["cost_usd"])]
