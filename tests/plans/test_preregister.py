"""The sealed analysis plan (afbench.plans.preregister): what it seals, that a run whose config
changed is told apart field by field, that the plan itself cannot be edited unnoticed, that a seal
is never replaced, and that both doors and `snakemake preregister` write the same bytes."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess

import pytest
import yaml

from afbench.core import stats
from afbench.core.config import load_config, merge, validate_config
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import json_bytes, sha256_bytes
from afbench.execution import sequential
from afbench.kinds import TRIAL_RECEIPT
from afbench.kinds.execution import TRIAL
from afbench.plans import preregister
from afbench.release.identity import identity, license_of
from afbench.tasks.catalog import build_catalog, select_tasks

from conftest import (
    REPO,
    declared,
    planned,
    run_afbench,
    snakemake,
    stalled_afbench,
    waiting_afbench,
)

RELEASE_FILES = REPO / "resources" / "demo-release"
COMPARE = REPO / "config" / "compare-demo.yaml"


@pytest.fixture(scope="module")
def config() -> dict:
    return load_config([REPO / "config" / "demo.yaml", COMPARE])


@pytest.fixture(scope="module")
def catalog(config) -> dict:
    def part(name: str) -> tuple[bytes, dict]:
        data = (RELEASE_FILES / name).read_bytes()
        return data, {"path": name, "actual_sha256": sha256_bytes(data)}

    return build_catalog(
        part("MANIFEST.csv"),
        part("SOURCES.csv"),
        config["columns"],
        config["release"]["expected_counts"],
        identity(config["release"]),
        license_of(config["release"]),
    )


def selection_of(config: dict, catalog: dict, name: str = "demo-compare") -> dict:
    criteria = config["selections"][name]
    return select_tasks(
        catalog,
        name,
        criteria["tasks"],
        criteria["sources"],
        criteria["limit"],
        criteria["stratified"],
    )


@pytest.fixture(scope="module")
def selection(config, catalog) -> dict:
    return selection_of(config, catalog)


@pytest.fixture(scope="module")
def plan(config, selection) -> dict:
    return preregister.build_plan(preregister.plan_facts(config, selection), selection)


def changed(config: dict, change: dict) -> dict:
    return validate_config(merge(config, change))


def test_the_plan_seals_the_comparison_its_test_and_its_money(plan, selection):
    assert plan["kind"] == "afbench analysis plan"
    assert plan["selection"]["selection_sha256"] == selection["selection_sha256"]
    assert plan["selection"]["tasks"] == 170
    a, b = plan["configurations"]["a"], plan["configurations"]["b"]
    assert (a["agent"], b["agent"]) == ("oracle", "nop")
    assert a["environment_type"] == "docker" and a["attempts"] == 1
    assert a["agent_timeout_s"] == 86_400 and a["verifier_timeout_s"] == 6_000
    assert plan["primary_comparison"]["a"] == "oracle" and plan["primary_comparison"]["b"] == "nop"
    assert plan["analysis"]["alpha"] == 0.05 and plan["analysis"]["stopping"] == "sequential"
    # the design: Connor's fixed-n count beside the sequential test's
    fixed = stats.mcnemar_sample_size(0.2, alpha=0.05, power=0.8, discordance=0.3)
    assert plan["design"]["fixed_n"]["tasks"] == fixed["tasks"] == 57
    test = plan["test"]
    assert test["test"] == sequential.TEST_NAME and test["validity"] == sequential.VALIDITY
    assert test["at_difference"]["decisions"]["A better"] >= 0.8
    assert test["horizon"] <= 170 and test["horizon"] % 10 == 0
    assert float(sequential.crossing_probability(test["boundary"])) <= 0.025
    # the order: every task of the selection, the prefixes stratified, as the seed draws them
    rule = plan["stopping_rule"]
    assert sorted(rule["order"]) == sorted(selection["task_ids"])
    assert rule["order"] == preregister._order(selection, 1)["task_ids"]
    assert rule["looks"] == test["looks"] and rule["horizon"] == test["horizon"]
    # model-free agents spend nothing; no ceiling is configured
    assert plan["money"]["per_trial_cap_usd"] == {"a": 0.0, "b": 0.0}
    assert plan["money"]["ceiling_usd"] is None and plan["money"]["worst_case_usd"] == 0
    # infrastructure errors: rerun up to the configurations' attempts, then the task left out
    assert plan["infrastructure_errors"] == {
        "rule": "rerun then exclude",
        "statement": sequential.ERROR_STATEMENT,
    }
    assert "execute.attempts" in plan["infrastructure_errors"]["statement"]
    assert plan["sealed_sha256"] == preregister.seal(plan)
    assert "sealed " + plan["sealed_sha256"][:12] in preregister.line(plan)
    said = "infrastructure errors: up to 1 attempt(s) per trial, then the task left out; sealed"
    assert said in preregister.line(plan)


def test_the_plan_is_the_same_bytes_every_time(config, selection, plan):
    again = preregister.build_plan(preregister.plan_facts(config, selection), selection)
    assert json_bytes(again) == json_bytes(plan)


def test_the_run_it_was_sealed_from_has_no_problems(config, selection, plan):
    assert preregister.check_plan(plan, preregister.plan_facts(config)) == []
    assert preregister.check_plan(plan, preregister.plan_facts(config, selection)) == []


MODEL_ITEM = {"selection": "demo-compare", "agent": "claude-code", "model": "anthropic/claude-x"}
ITEMS = [
    {"selection": "demo-compare", "agent": "oracle"},
    {"selection": "demo-compare", "agent": "nop"},
    MODEL_ITEM,
]


def test_the_trial_cap_is_executes_one_cap(config, selection):
    """The plan's per-trial cap is the one execute reserves (afbench.execution.trial.trial_cap_usd):
    execute.trial_cap_usd for an agent that may call a model, else the release's nominal
    budget; nothing for nop and oracle. Changing it after sealing is named."""
    from afbench.execution.trial import trial_cap_usd

    paid = {
        "plans": {"items": ITEMS},
        "preregister": {"comparison": {"a": {key: MODEL_ITEM[key] for key in ("agent", "model")}}},
    }
    nominal = changed(config, paid)
    capped = changed(config, merge(paid, {"execute": {"trial_cap_usd": 50}}))
    for cfg, cap in ((nominal, 200.0), (capped, 50.0)):
        facts = preregister.plan_facts(cfg, selection)
        assert facts["money"]["per_trial_cap_usd"] == {"a": cap, "b": 0.0}
        assert trial_cap_usd("claude-code", 200.0, cfg["execute"]["trial_cap_usd"]) == cap
        assert trial_cap_usd("nop", 200.0, cfg["execute"]["trial_cap_usd"]) == 0.0
    sealed = preregister.build_plan(preregister.plan_facts(nominal, selection), selection)
    assert sealed["money"]["worst_case_per_task_usd"] == 200.0
    problems = preregister.check_plan(sealed, preregister.plan_facts(capped, selection))
    assert [p.field for p in problems] == ["money.per_trial_cap_usd.a"]
    assert "execute.trial_cap_usd" in problems[0].message


@pytest.mark.parametrize(
    "change,fields",
    [
        ({"preregister": {"alpha": 0.1}}, {"analysis.alpha": "preregister.alpha"}),
        ({"preregister": {"batch_tasks": 20}}, {"analysis.batch_tasks": "preregister.batch_tasks"}),
        ({"preregister": {"stopping": "fixed"}}, {"analysis.stopping": "preregister.stopping"}),
        (
            {"preregister": {"discordance": None, "baseline_rate": 0.5}},
            {
                "analysis.discordance": "preregister.discordance",
                "analysis.baseline_rate": "preregister.baseline_rate",
            },
        ),
        (
            {"execute": {"max_cost_usd": 1000}},
            {"money.ceiling_usd": "execute.max_cost_usd"},
        ),
        (
            {"execute": {"attempts": 2}},
            {
                "configurations.a.attempts": "execute.attempts",
                "configurations.b.attempts": "execute.attempts",
            },
        ),
        (
            {"plans": {"environment_type": "singularity"}},
            {
                "configurations.a.environment_type": "plans.environment_type",
                "configurations.b.environment_type": "plans.environment_type",
            },
        ),
        (
            {"selections": {"demo-compare": {"stratified": {"tasks": 170, "seed": 2}}}},
            {"selection.criteria.stratified.seed": "selections.demo-compare"},
        ),
        (
            {
                "release": {
                    "images": [
                        {
                            "role": "task-environment",
                            "reference": None,
                            "digest": "sha256:" + "a" * 64,
                        },
                        {"role": "verifier", "reference": None, "digest": None},
                    ]
                }
            },
            {"release.images": "release.images"},
        ),
        (
            {
                "plans": {"items": ITEMS},
                "preregister": {
                    "comparison": {"a": {"agent": "claude-code", "model": "anthropic/claude-x"}}
                },
            },
            {
                "configurations.a.agent": "preregister.comparison.a.agent",
                "configurations.a.model": "preregister.comparison.a.model",
                "configurations.a.label": "preregister.comparison.a",
                "money.per_trial_cap_usd.a": "the trial cap of configuration a",
            },
        ),
    ],
)
def test_a_config_changed_after_sealing_is_named_field_by_field(plan, config, change, fields):
    problems = preregister.check_plan(plan, preregister.plan_facts(changed(config, change)))
    assert {p.field: p.message for p in problems}.keys() == fields.keys(), problems
    for problem in problems:
        assert fields[problem.field] in problem.message
        assert "as sealed" in str(problem.expected)
        assert "differs from the sealed analysis plan" in str(problem)


def test_another_selection_artifact_is_named_by_its_hash_and_order(plan, config, catalog):
    other = selection_of(
        changed(
            config, {"selections": {"demo-compare": {"stratified": {"tasks": 170, "seed": 3}}}}
        ),
        catalog,
    )
    facts = preregister.plan_facts(config)
    facts["selection"] |= {
        "selection_sha256": other["selection_sha256"],
        "order": other["task_ids"],
    }
    problems = preregister.check_plan(plan, facts)
    assert {p.field for p in problems} == {"selection.selection_sha256", "selection.order"}
    order = next(p for p in problems if p.field == "selection.order")
    assert "a list of 170 items" in str(order)


def test_a_run_reads_only_the_plan_it_was_approved_against(plan, tmp_path):
    """The jobs of a sealed comparison read the plan the run was approved against: a plan
    sealed again since (another seal) is refused naming its seal, one whose seal does not hold
    is refused too; the approved one is read as written."""
    path = tmp_path / "plan.json"
    path.write_bytes(json_bytes(plan))
    assert preregister.read_approved_plan(path, plan["sealed_sha256"]) == plan
    with pytest.raises(AfbenchError) as refused:
        preregister.read_approved_plan(path, "0" * 64)
    (problem,) = refused.value.problems
    assert problem.field == "sealed_sha256" and problem.file == str(path)
    assert "not the one this run was approved against" in str(refused.value)
    edited = copy.deepcopy(plan)
    edited["analysis"]["alpha"] = 0.1  # its seal left as it was
    path.write_bytes(json_bytes(edited))
    with pytest.raises(AfbenchError) as broken:
        preregister.read_approved_plan(path, plan["sealed_sha256"])
    assert "sealed_sha256" in str(broken.value)


def test_a_plan_edited_after_sealing_is_caught(plan, config):
    facts = preregister.plan_facts(config)
    edited = copy.deepcopy(plan)
    edited["analysis"]["alpha"] = 0.1  # edited to match a changed config, seal left alone
    problems = preregister.check_plan(
        edited, preregister.plan_facts(changed(config, {"preregister": {"alpha": 0.1}}))
    )
    # the seal, and the test left at the old α (plan_holds: caught even if resealed)
    assert [p.field for p in problems] == ["sealed_sha256", "test.alpha"]
    # a looser boundary, resealed so that the seal matches: its exact error gives it away
    loose = copy.deepcopy(plan)
    loose["test"]["boundary"] = [max(1, b - 2) for b in loose["test"]["boundary"]]
    loose["sealed_sha256"] = preregister.seal(loose)
    problems = preregister.check_plan(loose, facts)
    assert [p.field for p in problems] == ["test.boundary"]
    assert "errs more often than α/2" in problems[0].message
    short = copy.deepcopy(plan)
    short["test"]["boundary"] = short["test"]["boundary"][:-1]
    short["sealed_sha256"] = preregister.seal(short)
    assert [p.field for p in preregister.check_plan(short, facts)] == ["test.boundary"]
    # not a plan at all
    problems = preregister.check_plan({"kind": "afbench power plan", "schema_version": 1}, facts)
    assert [p.field for p in problems] == ["kind"]


def test_require_plan_refuses_a_missing_or_changed_plan_and_returns_a_matching_one(
    plan, config, tmp_path
):
    path = tmp_path / "analysis-plan.json"
    with pytest.raises(AfbenchError, match="no sealed analysis plan"):
        preregister.require_plan(path, preregister.plan_facts(config))
    path.write_bytes(json_bytes(plan))
    assert preregister.require_plan(path, preregister.plan_facts(config)) == plan
    with pytest.raises(AfbenchError) as refused:
        preregister.require_plan(
            path, preregister.plan_facts(changed(config, {"execute": {"attempts": 3}}))
        )
    assert "configurations.a.attempts" in str(refused.value)
    assert "configurations.b.attempts" in str(refused.value)


def test_a_comparison_is_confirmatory_only_as_planned(plan, config):
    assert (
        preregister.comparison_role(plan, "demo-compare", "oracle", "nop")["role"] == "confirmatory"
    )
    assert (
        preregister.comparison_role(plan, "demo-compare", "nop", "oracle")["role"] == "confirmatory"
    )
    other = preregister.comparison_role(plan, "demo-compare", "oracle", "claude-code")
    assert other["role"] == "exploratory" and "not the sealed plan's primary" in other["reason"]
    assert preregister.comparison_role(plan, "all", "oracle", "nop")["role"] == "exploratory"
    problems = preregister.check_plan(
        plan, preregister.plan_facts(changed(config, {"preregister": {"alpha": 0.1}}))
    )
    marked = preregister.comparison_role(plan, "demo-compare", "oracle", "nop", problems)
    assert marked["role"] == "exploratory" and "analysis.alpha" in marked["reason"]
    none = preregister.comparison_role(None, "demo-compare", "oracle", "nop")
    assert none == {"role": "exploratory", "reason": "no sealed analysis plan", "plan_sha256": None}


@pytest.mark.parametrize(
    "change,field,text",
    [
        ({"preregister": {"comparison": None}}, "preregister.comparison", "no comparison"),
        (
            {"preregister": {"comparison": {"selection": "all"}}},
            "preregister.comparison.a",
            "not a plan item",
        ),
        (
            {"preregister": {"comparison": {"selection": "nope"}}},
            "preregister.comparison.selection",
            "not configured",
        ),
        (
            {"preregister": {"comparison": {"b": {"agent": "oracle"}}}},
            "preregister.comparison.b",
            "the same",
        ),
    ],
)
def test_a_comparison_config_cannot_seal_is_refused(config, change, field, text):
    with pytest.raises(AfbenchError) as refused:
        preregister.plan_facts(changed(config, change))
    assert refused.value.problems[0].field == field and text in str(refused.value)


def test_what_the_selection_and_design_cannot_support_is_refused(config, catalog, selection):
    both = changed(config, {"preregister": {"baseline_rate": 0.5}})
    with pytest.raises(AfbenchError, match="exactly one of discordance and baseline_rate"):
        preregister.build_plan(preregister.plan_facts(both), selection)
    big = changed(config, {"preregister": {"difference": 0.5}})  # more than the discordance
    with pytest.raises(AfbenchError, match="at most the discordance"):
        preregister.build_plan(preregister.plan_facts(big), selection)
    other = selection_of(config, catalog, "demo-stratified")
    with pytest.raises(AfbenchError) as refused:
        preregister.build_plan(preregister.plan_facts(config), other)
    fields = {p.field for p in refused.value.problems}
    assert fields == {"preregister.comparison.selection", "selections.demo-compare"}
    stale = changed(
        config, {"selections": {"demo-compare": {"stratified": {"tasks": 100, "seed": 1}}}}
    )
    with pytest.raises(AfbenchError, match="other criteria"):
        preregister.build_plan(preregister.plan_facts(stale), selection)


def test_a_fixed_plan_runs_the_whole_selection(config, selection):
    fixed = changed(config, {"preregister": {"stopping": "fixed"}})
    plan = preregister.build_plan(preregister.plan_facts(fixed), selection)
    assert plan["stopping_rule"]["kind"] == "fixed" and plan["stopping_rule"]["horizon"] == 170
    assert plan["test"]["test"] == preregister.FIXED_TEST
    assert preregister.check_plan(plan, preregister.plan_facts(fixed)) == []
    with pytest.raises(AfbenchError, match="not sequential"):
        sequential.sequential_decision([], plan)


def test_a_seal_is_never_replaced(config, selection, tmp_path):
    out = tmp_path / "plan.json"
    first = preregister.seal_into(preregister.plan_facts(config), selection, out)
    before = out.read_bytes()
    assert preregister.seal_into(preregister.plan_facts(config), selection, out) == first
    with pytest.raises(AfbenchError, match="a seal is never replaced"):
        preregister.seal_into(
            preregister.plan_facts(changed(config, {"preregister": {"alpha": 0.1}})), selection, out
        )
    assert out.read_bytes() == before


def test_the_plan_drives_sequential_decisions(plan):
    order = plan["stopping_rule"]["order"]
    rows = [{"task_id": t, "a": "accepted", "b": "rejected", "cost_usd": 0.0} for t in order[:10]]
    decided = sequential.sequential_decision(rows, plan)
    assert decided["decision"] == "A better" and decided["stopped_at_tasks"] == 10
    assert decided["plan_sha256"] == plan["sealed_sha256"]
    assert decided["fixed_n_tasks"] == 57


# --- the command line and the workflow -------------------------------------------------------
def afbench(*args: object) -> subprocess.CompletedProcess:
    """`afbench ARGS` in this process (run_afbench): what these tests check is what it wrote."""
    return run_afbench(*args)


def job_flags(config: dict) -> list[str]:
    """The flags rule seal_analysis_plan hands the job, from config."""
    pre, comparison = config["preregister"], config["preregister"]["comparison"]

    def flag(name: str, value: object) -> str:
        return f"--{name}=" + ("" if value is None else str(value))

    return [
        *[flag(f"{s}-{k}", comparison[s].get(k)) for s in "ab" for k in ("agent", "model")],
        flag("environment-type", config["plans"]["environment_type"]),
        flag("attempts", config["execute"]["attempts"]),
        *[flag(key.replace("_", "-"), pre[key]) for key in preregister.ANALYSIS_KEYS],
        flag("max-cost-usd", config["execute"]["max_cost_usd"]),
        flag("trial-cap-usd", config["execute"]["trial_cap_usd"]),
    ]


def test_both_doors_write_the_same_sealed_plan(config, catalog, selection, plan, tmp_path):
    path, tasks = tmp_path / "selection.json", tmp_path / "catalog.json"
    path.write_bytes(json_bytes(selection))
    tasks.write_bytes(json_bytes(catalog))
    seed = afbench(
        "preregister",
        "--config",
        REPO / "config/demo.yaml",
        "--config",
        COMPARE,
        "--selection",
        path,
        "--catalog",
        tasks,
        "--output",
        tmp_path / "seed.json",
    )
    assert seed.returncode == 0, seed.stderr
    assert seed.stdout.strip() == preregister.line(plan)
    job = afbench(
        "job",
        "seal-analysis-plan",
        f"--selection={path}",
        f"--catalog={tasks}",
        *job_flags(config),
        f"--output={tmp_path / 'job.json'}",
    )
    assert job.returncode == 0, job.stderr
    assert (tmp_path / "seed.json").read_bytes() == (tmp_path / "job.json").read_bytes()
    assert (tmp_path / "seed.json").read_bytes() == json_bytes(plan)
    # sealed: the same command with another alpha is refused, the plan kept
    other = tmp_path / "alpha.yaml"
    other.write_text("preregister: {alpha: 0.1}\n")
    again = afbench(
        "preregister",
        "--config",
        REPO / "config/demo.yaml",
        "--config",
        COMPARE,
        "--config",
        other,
        "--selection",
        path,
        "--catalog",
        tasks,
        "--output",
        tmp_path / "seed.json",
    )
    assert again.returncode == 2 and "a seal is never replaced" in again.stderr
    assert (tmp_path / "seed.json").read_bytes() == json_bytes(plan)


def test_two_preregisters_at_once_never_replace_a_seal(catalog, selection, plan, tmp_path):
    """Two seals of one --output at once: the first stalled just before it renames its plan
    into place while the second (another alpha) runs. Without the output's lock both found no
    plan, both exited 0, and the first replaced the second's seal; now the second waits, then
    finds the first's seal and is refused in one line, the seal kept."""
    path, tasks = tmp_path / "selection.json", tmp_path / "catalog.json"
    path.write_bytes(json_bytes(selection))
    tasks.write_bytes(json_bytes(catalog))
    other = tmp_path / "alpha.yaml"
    other.write_text("preregister: {alpha: 0.1}\n")
    argv = [
        *["preregister", "--config", REPO / "config/demo.yaml", "--config", COMPARE],
        *["--selection", path, "--catalog", tasks, "--output", tmp_path / "plan.json"],
    ]
    first, release = stalled_afbench(argv, tmp_path / "signals", after_first_rename=False)
    # it waits for the first, and says so (without the lock it runs on and is done)
    second = waiting_afbench([*argv, "--config", other], stdout=subprocess.DEVNULL)
    release.touch()
    assert first.wait(timeout=120) == 0, first.communicate()[1]
    err = second.communicate(timeout=120)[1]
    assert second.returncode == 2 and len(err.splitlines()) == 1, err
    assert "a seal is never replaced" in err
    assert (tmp_path / "plan.json").read_bytes() == json_bytes(plan)


@pytest.mark.snakemake
def test_snakemake_preregister_seals_once_and_refuses_a_changed_config(demo_project, tmp_path):
    root = tmp_path / "project"  # a copy: the session's demo project is only read
    shutil.copytree(demo_project, root, symlinks=True)
    revision = yaml.safe_load((root / "config/demo.yaml").read_text())["release"]["revision"]
    configs = ["--configfile", "config/demo.yaml", "config/compare-demo.yaml"]
    assert "seal_analysis_plan" not in planned(root, "--forceall", *configs)
    assert planned(root, "preregister", *configs) == {
        "select_tasks": 1,
        "seal_analysis_plan": 1,
        "preregister": 1,
    }
    snakemake(root, "preregister", *configs)
    out = root / "results" / revision
    sealed = out / "execute/analysis-plan.json"
    before = sealed.read_bytes()
    selection = out / "tasks/selections/demo-compare.json"
    seed = afbench(
        "preregister",
        "--config",
        root / "config/demo.yaml",
        "--config",
        root / "config/compare-demo.yaml",
        "--selection",
        selection,
        "--catalog",
        out / "tasks/catalog.json",
        "--output",
        tmp_path / "seed.json",
    )
    assert seed.returncode == 0, seed.stderr
    assert (tmp_path / "seed.json").read_bytes() == before
    assert not sealed.stat().st_mode & 0o222  # written write-protected
    assert planned(root, "preregister", *configs) == {}
    # a changed config is refused before anything runs (write protection does not stop root)
    (root / "alpha.yaml").write_text("preregister: {alpha: 0.1}\nexecute: {attempts: 2}\n")
    refused = snakemake(root, "preregister", *configs, "alpha.yaml", check=False)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "afbench: refused:" in said
    assert "field 'analysis.alpha'" in said and "preregister.alpha" in said
    assert "field 'configurations.a.attempts'" in said and "execute.attempts" in said
    assert sealed.read_bytes() == before
    # removing the plan seals the new one
    sealed.chmod(0o644)
    sealed.unlink()
    snakemake(root, "preregister", *configs, "alpha.yaml")
    assert json.loads(sealed.read_text())["analysis"]["alpha"] == 0.1


# --- from trial receipts to the decision ----------------------------------------------------
def receipt(plan: dict, task: str, agent: str, attempt: int, outcome: str, cost, refused=None):
    return declared(
        TRIAL_RECEIPT,
        release=plan["release"],
        plan={
            "selection": {
                "name": plan["selection"]["name"],
                "selection_sha256": plan["selection"]["selection_sha256"],
                "tasks": plan["selection"]["tasks"],
            },
            "agent": agent,
            "model": None,
            "sha256": "0" * 64,
        },
        task_id=task,
        attempt=attempt,
        refused=refused,
        trials=[] if refused else [declared(TRIAL, outcome=outcome, cost_usd=cost)],
        outcome="not started" if refused else outcome,
    )


def test_receipts_become_one_row_per_task_with_retried_errors_resolved(plan):
    order = plan["stopping_rule"]["order"]
    receipts = [receipt(plan, t, "nop", 1, "rejected", 0.0) for t in order[:3]]
    receipts += [
        receipt(plan, order[0], "oracle", 1, "error", 1.5),
        receipt(plan, order[0], "oracle", 2, "accepted", 2.0),
        receipt(plan, order[1], "oracle", 1, "accepted", None),
        receipt(plan, order[2], "oracle", 1, "accepted", 0.0, refused="at the ceiling"),
    ]
    rows = sequential.outcomes_from_receipts(plan, receipts)
    assert rows == [
        {
            "task_id": order[0],
            "a": "accepted",
            "b": "rejected",
            "cost_usd": 3.5,
            "attempts": {"a": 2, "b": 1},
        },
        {
            "task_id": order[1],
            "a": "accepted",
            "b": "rejected",
            "cost_usd": None,
            "attempts": {"a": 1, "b": 1},
        },
    ]
    other = copy.deepcopy(receipts[0])
    other["plan"]["selection"]["selection_sha256"] = "f" * 64
    with pytest.raises(AfbenchError, match="another selection") as refused:
        sequential.outcomes_from_receipts(plan, [other])
    assert refused.value.problems[0].field == "receipts[0].plan.selection.selection_sha256"
    third = receipt(plan, order[0], "claude-code", 1, "accepted", 1.0)
    with pytest.raises(AfbenchError, match="neither configuration"):
        sequential.outcomes_from_receipts(plan, [third])


def test_afbench_decide_reads_the_sealed_plan_and_the_receipts(plan, tmp_path):
    order = plan["stopping_rule"]["order"]
    plan_file = tmp_path / "analysis-plan.json"
    plan_file.write_bytes(json_bytes(plan))
    paths = []
    for i, task in enumerate(order[:10]):
        for agent, outcome in (("oracle", "accepted"), ("nop", "rejected")):
            path = tmp_path / f"r{i}-{agent}.json"
            path.write_bytes(json_bytes(receipt(plan, task, agent, 1, outcome, 0.0)))
            paths.append(path)
    argv = ["decide", "--plan", plan_file, *[x for p in paths for x in ("--receipt", p)]]
    first = afbench(*argv, "--output", tmp_path / "decision.json")
    assert first.returncode == 0, first.stderr
    assert "sequential decision: A better after 10 tasks" in first.stderr
    assert first.stdout.startswith("afbench decide: A better after 10 tasks (the evidence for a")
    decided = json.loads((tmp_path / "decision.json").read_text())
    assert decided["kind"] == "afbench sequential decision"
    assert decided["stopped_at_tasks"] == 10 and decided["fixed_n_tasks"] == 57
    assert decided["fixed_n_worst_case_usd"] == 0.0  # model-free agents spend nothing
    again = afbench(*argv, "--output", tmp_path / "again.json")
    assert again.returncode == 0
    assert (tmp_path / "again.json").read_bytes() == (tmp_path / "decision.json").read_bytes()
    # the same receipts again (a copy of each) count once: the same decision
    copies = []
    for path in paths:
        copies.append(path.with_name("copy-" + path.name))
        shutil.copyfile(path, copies[-1])
    twice = afbench(
        *argv, *[x for p in copies for x in ("--receipt", p)], "--output", tmp_path / "twice.json"
    )
    assert twice.returncode == 0, twice.stderr
    assert (tmp_path / "twice.json").read_bytes() == (tmp_path / "decision.json").read_bytes()
    # a forged "rejected" copy of each oracle trial: refused in either order, the same line
    forged = []
    for i, task in enumerate(order[:10]):
        forged.append(tmp_path / f"forged-r{i}-oracle.json")
        forged[-1].write_bytes(json_bytes(receipt(plan, task, "oracle", 1, "rejected", 0.0)))
    said = set()
    for given in ([*forged, *paths], [*paths, *forged]):
        both = ["decide", "--plan", plan_file, *[x for p in given for x in ("--receipt", p)]]
        refused = afbench(*both)
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout
        said.add(refused.stderr)
    [line] = said  # one refusal whatever the order of the files
    assert f"{tmp_path / 'r0-oracle.json'}: field 'outcome': two different receipts of one " in line
    assert f"agent oracle, attempt 1): this one and {forged[0]}; a trial has one receipt" in line
    assert "(expected the other receipt's outcome, 'rejected', found 'accepted')" in line
    # a plan edited after sealing is refused
    edited = copy.deepcopy(plan)
    edited["analysis"]["alpha"] = 0.2
    plan_file.write_bytes(json_bytes(edited))
    refused = afbench(*argv, "--output", tmp_path / "edited.json")
    assert refused.returncode == 2 and "field 'sealed_sha256'" in refused.stderr


def test_a_plan_sealed_before_the_error_rule_keeps_errors_as_bounds(plan, config, tmp_path):
    """A sequential plan sealed before afbench sealed a rule for infrastructure errors (no
    `infrastructure_errors`: exactly what afbench wrote then) is still read, its seal holds, the
    config still matches it, and its decisions keep the rule it was sealed under: an error is
    counted both ways (a look is never held for it, nothing is left out); the same receipts
    under a plan of today leave the task out."""
    old = copy.deepcopy(plan)
    del old["infrastructure_errors"]
    old["sealed_sha256"] = preregister.seal(old)
    preregister.check_sealed(old)
    assert preregister.check_plan(old, preregister.plan_facts(config)) == []
    assert "infrastructure errors as bounds" in preregister.line(old)
    order = plan["stopping_rule"]["order"]
    receipts = [receipt(plan, t, "oracle", 1, "accepted", 0.0) for t in order[:10]]
    receipts += [receipt(plan, t, "nop", 1, "rejected", 0.0) for t in order[:10]]
    receipts[0] = receipt(plan, order[0], "oracle", 1, "error", 0.0)
    rows = sequential.outcomes_from_receipts(plan, receipts)
    as_bounds = sequential.sequential_decision(rows, old)
    assert as_bounds["infrastructure_errors"] == "bounds"
    assert as_bounds["looks"][0]["unresolved"] == {"a": 1, "b": 0}
    assert as_bounds["excluded_tasks"] == [] and as_bounds["next_reruns"] == []
    excluded = sequential.sequential_decision(rows, plan)  # one attempt sealed: left out
    assert excluded["infrastructure_errors"] == "rerun then exclude"
    assert [t["task_id"] for t in excluded["excluded_tasks"]] == [order[0]]
    assert excluded["looks"][0]["excluded"] == 1
    assert excluded["looks"][0]["unresolved"] == {"a": 0, "b": 0}
    # `afbench decide` reads either, and says what it left out
    paths = []
    for i, r in enumerate(receipts):
        paths.append(tmp_path / f"r{i}.json")
        paths[-1].write_bytes(json_bytes(r))
    for sealed, said in ((old, None), (plan, "1 task(s) left out for both configurations")):
        plan_file = tmp_path / "plan.json"
        plan_file.write_bytes(json_bytes(sealed))
        decided = afbench(
            "decide", "--plan", plan_file, *[x for p in paths for x in ("--receipt", p)]
        )
        assert decided.returncode == 0, decided.stderr
        if said is None:
            assert "left out" not in decided.stdout
        else:
            assert f"{said}, one of them erring at every attempt: {order[0]}" in decided.stdout


def test_a_rule_that_leaves_tasks_out_needs_one_attempt_count_for_both(plan, catalog):
    """Leaving out a task whose trials still err is symmetric only when both configurations
    may take the same number of attempts: a plan resealed with two counts is refused."""
    forged = copy.deepcopy(plan)
    forged["configurations"]["b"]["attempts"] = 3
    forged["sealed_sha256"] = preregister.seal(forged)
    [problem] = preregister.plan_holds(forged, catalog)
    assert problem.field == "configurations.b.attempts"
    assert problem.expected == "1 (configurations.a.attempts)" and problem.found == 3
    with pytest.raises(AfbenchError, match="favours the configuration with more"):
        preregister.check_sealed(forged, "plan.json")
    as_bounds = copy.deepcopy(forged)
    del as_bounds["infrastructure_errors"]
    as_bounds["sealed_sha256"] = preregister.seal(as_bounds)
    assert preregister.plan_holds(as_bounds, catalog) == []  # bounds hold for any counts


def resealed(plan: dict, edit) -> dict:
    forged = copy.deepcopy(plan)
    edit(forged)
    forged["sealed_sha256"] = preregister.seal(forged)
    return forged


def test_a_resealed_plan_whose_fields_disagree_is_refused_by_every_reader(
    plan, config, catalog, tmp_path
):
    """A seal proves only that nobody edited the plan without sealing it again: a forger who
    reseals is still caught by the plan's fields against each other (α, the design's horizon
    and looks, the selection's hash), in check_plan, check_sealed, read_approved_plan and
    `afbench decide`, and by the audit's relation."""
    from afbench.audit.directory import problems_of
    from afbench.kinds.relations import ANALYSIS_PLAN_OF_CATALOG

    assert preregister.plan_holds(plan, catalog) == []

    def alpha(p):
        p["analysis"]["alpha"] = 0.001

    def horizon(p):
        p["test"]["horizon"] = p["stopping_rule"]["horizon"] = 10
        p["test"]["looks"] = p["stopping_rule"]["looks"] = [10]
        p["test"]["boundary"] = p["test"]["boundary"][:11]

    def tasks(p):
        p["selection"]["selection_sha256"] = "0" * 64

    forgeries = {
        "test.alpha": resealed(plan, alpha),
        "test.horizon": resealed(plan, horizon),
        "selection.selection_sha256": resealed(plan, tasks),
    }
    for field, forged in forgeries.items():
        found = preregister.plan_holds(forged, catalog)
        assert field in [p.field for p in found], field
        assert all(p.expected is not None for p in found if p.found is not None)
        held = problems_of(ANALYSIS_PLAN_OF_CATALOG, forged, "plan.json", catalog, "cat.json")
        assert field in [p.field for p in held]
    facts = preregister.plan_facts(changed(config, {"preregister": {"alpha": 0.001}}))
    assert "test.alpha" in [p.field for p in preregister.check_plan(forgeries["test.alpha"], facts)]
    assert (
        preregister.comparison_role(
            forgeries["test.alpha"],
            plan["primary_comparison"]["selection"],
            plan["primary_comparison"]["a"],
            plan["primary_comparison"]["b"],
            preregister.check_plan(forgeries["test.alpha"], facts),
        )["role"]
        == "exploratory"
    )
    for field in ("test.alpha", "test.horizon"):
        forged = forgeries[field]
        path = tmp_path / f"{field}.json"
        path.write_bytes(json_bytes(forged))
        with pytest.raises(AfbenchError) as refused:
            preregister.check_sealed(forged, str(path))
        assert field in [p.field for p in refused.value.problems]
        with pytest.raises(AfbenchError) as refused:
            preregister.read_approved_plan(path, forged["sealed_sha256"])
        assert all(p.file == str(path) for p in refused.value.problems)
        decided = afbench("decide", "--plan", path)
        assert decided.returncode == 2 and field in decided.stderr
        assert "Traceback" not in decided.stderr
