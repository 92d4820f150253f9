"""Harbor's own truth: its error policy tables (0.25.0's and 0.26.0's, as their wheels define
them), the folders real Harbor 0.22.0 and 0.26.0 wrote in their docker environment
(tests/fixtures/harbor-docker-jobs.md) read with the same outcomes, and, live, the five provider
exceptions raised by a test agent in real Harbor, each an error that the run's bounds count."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from afbench.core import harbor
from afbench.core import harbor_files as harborfiles
from afbench.core.config import load_config
from afbench.core.errors import AfbenchError
from afbench.core.harbor_files import classify_trial
from afbench.kinds import SELECTION
from afbench.release.identity import identity
from afbench.runs.harbor_jobs import read_harbor_job
from afbench.runs.summary import summarize_run

from conftest import (
    HARBOR,
    REPO,
    TASK,
    afbench,
    declared,
    docker_leftovers,
    docker_skip_reason,
    harbor_skip_reason,
    plan_for,
    python_argv,
    run,
    trial_skip_reason,
)

sys.path.insert(0, str(REPO / "tests" / "harbor_agents"))
from provider_errors import EXCEPTIONS

FIXTURES = REPO / "tests" / "fixtures"
VERSIONS = ("0.22.0", "0.26.0")
HARBOR_026 = REPO / ".harbor-venv-0.26.0" / "bin" / "harbor"
RELEASE = {"name": "t", "revision": "a" * 40}


def jobs(version: str, job: str) -> Path:
    return FIXTURES / f"harbor-{version}-docker-jobs" / job


def selection(task_ids) -> dict:
    return {"name": "sel", "selection_sha256": "0" * 64, "task_ids": sorted(task_ids)}


def as_lists(table: str) -> dict:
    chosen = harbor.ERROR_POLICY_TABLES[table]
    fields = lambda p: [p.should_retry, p.should_grade, p.has_valid_reward]  # noqa: E731
    return {
        "unknown": fields(chosen["unknown"]),
        "table": {name: fields(p) for name, p in sorted(chosen["policies"].items())},
    }


# ------------------------------------------------------------------ the tables


@pytest.mark.parametrize("version", ["0.25.0", "0.26.0"])
def test_the_error_policy_tables_are_harbors_own(version):
    dumped = json.loads((FIXTURES / "harbor-error-policies.json").read_text())[version]
    assert as_lists(version) == dumped
    assert harbor.ERROR_POLICY_TABLES[version]["source"].startswith(f"harbor {version} ")


def test_the_two_tables_differ_where_harbor_changed_its_mind():
    differ = {
        name
        for name in set(harbor.ERROR_POLICY_0_25) | set(harbor.ERROR_POLICY_0_26)
        if harbor.error_policy(name, "0.25.0") != harbor.error_policy(name, "0.26.0")
    }
    assert differ == {
        "NonZeroAgentExitCodeError",  # 0.25: unclassified, retried, no valid reward
        "UnsupportedModelParametersError",  # named in 0.26 only
    }
    # an exception neither table names: 0.25 keeps no reward, 0.26 keeps it
    assert harbor.error_policy("RuntimeError", "0.25.0").has_valid_reward is False
    assert harbor.error_policy("RuntimeError", "0.26.0").has_valid_reward is True
    for name in EXCEPTIONS:  # the five provider exceptions: graded, no valid reward, in both
        for table in ("0.25.0", "0.26.0"):
            policy = harbor.error_policy(name, table)
            assert (policy.should_grade, policy.has_valid_reward) == (True, False), name


def test_each_harbor_version_is_read_with_its_own_table():
    assert harbor.error_policy_table("0.25.0") == harbor.error_policy_table("0.25.3") == "0.25.0"
    for version in ("0.22.0", "0.23.0", "0.24.0", "0.26.0", None):
        assert harbor.error_policy_table(version) == "0.26.0"


@pytest.mark.harbor
@pytest.mark.skipif(
    not HARBOR_026.is_file(),
    reason=f"no Harbor 0.26.0 at {HARBOR_026}: run `bash ci/harbor-setup.sh 0.26.0`",
)
def test_the_0_26_table_is_the_installed_harbors():
    dump = (
        "import json\n"
        "from harbor.models.trial.error_policy import ERROR_POLICIES, UNKNOWN_ERROR_POLICY\n"
        "f = lambda p: [p.should_retry, p.should_grade, p.has_valid_reward]\n"
        "print(json.dumps({'unknown': f(UNKNOWN_ERROR_POLICY), "
        "'table': {k: f(v) for k, v in sorted(ERROR_POLICIES.items())}}))"
    )
    python = HARBOR_026.parent / "python"
    out = subprocess.run([str(python), "-c", dump], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == as_lists("0.26.0")


# ------------------------------------------------------------------ the folders, declared once

HARBORS = {"0.22.0": HARBOR, "0.26.0": HARBOR_026}
DUMP_LAYOUT = """
import json
from pathlib import Path
from types import SimpleNamespace
from harbor.job import Job
from harbor.models.job.config import JobConfig
from harbor.models.job.result import JobResult
from harbor.models.trial.config import TrialConfig
from harbor.models.trial.paths import TrialPaths
from harbor.models.trial.result import ExceptionInfo, TrialResult
job, trial = SimpleNamespace(job_dir=Path("J")), TrialPaths(Path("T"))
models = (JobConfig, JobResult, TrialConfig, TrialResult, ExceptionInfo)
print(json.dumps({
    "job": [str(getattr(Job, k).fget(job)) for k in
            ("_job_config_path", "_job_result_path", "_job_lock_path", "_log_output_path")],
    "trial": [str(p) for p in
              (trial.config_path, trial.result_path, trial.agent_dir, trial.verifier_dir)],
    "fields": {m.__name__: sorted({*m.model_fields, *m.model_computed_fields}) for m in models},
}))
"""


@pytest.mark.harbor
@pytest.mark.parametrize("version", sorted(HARBORS))
def test_the_folders_and_the_fields_each_version_writes_are_that_harbors_own(version):
    """harborfiles' job and trial folders are the paths the installed Harbor's own Job and
    TrialPaths give, and each field HARBOR_WRITES dates is in that Harbor's model exactly
    when the version is that one or later."""
    python = HARBORS[version].parent / "python"
    if not python.is_file():
        pytest.skip(f"no Harbor {version} at {python.parent}")
    out = subprocess.run(
        [str(python), "-c", DUMP_LAYOUT], capture_output=True, text=True, check=True
    )
    found = json.loads(out.stdout)
    job, trial = harborfiles.JobFolder("J"), harborfiles.TrialFolder("T")
    assert found["job"] == [job.config, job.result, job.lock, job.log]
    assert found["trial"] == [trial.config, trial.result, trial.agent, trial.verifier]
    fields = found["fields"]
    assert set(harborfiles.CONFIG_SECTIONS) <= set(fields["TrialConfig"])
    assert set(harborfiles.JOB_SECTIONS) <= set(fields["JobConfig"])
    number = lambda v: tuple(map(int, v.split(".")))  # noqa: E731
    for (model, field), since in harborfiles.HARBOR_WRITES.items():
        assert (field in fields[model]) == (number(version) >= number(since)), (model, field)


# ------------------------------------------------------------------ a trial, classified


def trial(reward=0.0, exc=None, **more) -> dict:
    doc = {"verifier_result": {"rewards": {"reward": reward}} if reward is not None else None}
    if exc is not None:
        doc["exception_info"] = {"exception_type": exc, "exception_message": "m"}
    return {**doc, **more}


@pytest.mark.parametrize("name", EXCEPTIONS)
@pytest.mark.parametrize("reward", [0.0, 1.0])
def test_a_reward_beside_a_provider_exception_is_an_error(name, reward):
    got = classify_trial(trial(reward, name), "r.json", policy_table="0.26.0")
    assert (got["outcome"], got["reward"]) == ("error", None)
    assert got["reason"] == (
        f"{name}: reward {reward:g} not valid (Harbor's error policy, Harbor 0.26.0's table)"
    )


def test_the_policy_harbor_wrote_is_read_before_any_table():
    # 0.26 writes the policy it applied, a job's override_error_policy included
    kept = trial(0.0, "ApiRateLimitError", reward_valid=True)
    kept["exception_info"]["policy"] = {
        "should_retry": True,
        "should_grade": True,
        "has_valid_reward": True,
    }
    got = classify_trial(kept, "r.json", policy_table="0.26.0")
    assert (got["outcome"], got["reason"]) == ("rejected", "ApiRateLimitError")
    # an override written without the policy (as 0.26 keeps it) is applied to the table's
    overridden = trial(0.0, "RuntimeError")
    overridden["exception_info"]["policy_override"] = {"has_valid_reward": False}
    assert classify_trial(overridden, "r.json")["outcome"] == "error"
    # reward_valid that contradicts the written policies is refused, naming the field
    bad = trial(0.0, "ApiRateLimitError", reward_valid=True)
    with pytest.raises(Exception, match="r.json: field 'reward_valid': contradiction"):
        classify_trial(bad, "r.json")


def test_an_exception_of_a_step_invalidates_the_trials_reward():
    multi = trial(1.0)
    multi["step_results"] = [
        {"step_name": "one", "exception_info": None},
        {"step_name": "two", "exception_info": {"exception_type": "NetworkConnectionError"}},
    ]
    got = classify_trial(multi, "r.json")
    assert got["outcome"] == "error" and got["reason"].startswith("NetworkConnectionError: ")
    assert got["exceptions"] == ["NetworkConnectionError"]


def test_a_folder_of_harbor_0_25_is_read_with_0_25s_table():
    exited = trial(0.0, "NonZeroAgentExitCodeError")
    assert classify_trial(exited, "r.json", policy_table="0.26.0")["outcome"] == "rejected"
    assert classify_trial(exited, "r.json", policy_table="0.25.0")["outcome"] == "error"
    for table in ("0.25.0", "0.26.0"):  # an agent timeout is the agent's failure in both
        got = classify_trial(trial(0.0, "AgentTimeoutError"), "r.json", policy_table=table)
        assert got["outcome"] == "rejected"


def test_a_result_of_an_unknown_schema_is_refused():
    with pytest.raises(Exception, match="field 'schema_version'.*expected 1, found 2"):
        classify_trial(trial(1.0, schema_version=2), "r.json")


# ------------------------------------------------------------------ real folders, both versions


def outcomes(version: str, job: str) -> dict:
    return {
        a["task_id"]: (a["outcome"], a["reward"], a["reason"].split(":")[0], a["retries"])
        for a in read_harbor_job(jobs(version, job))
    }


def test_real_0_22_and_0_26_folders_import_with_the_same_outcomes():
    scripted = {
        "demo_s01_t001": ("accepted", 1, "reward 1", 0),
        "demo_s01_t002": ("rejected", 0, "reward 0", 0),
        "demo_s01_t003": ("error", None, "ApiRateLimitError", 0),
        "demo_s01_t004": ("accepted", 1, "reward 1", 1),  # retried once, then solved
    }
    five = {f"demo_s01_t00{i}": ("error", None, name, 0) for i, name in enumerate(EXCEPTIONS, 1)}
    for version in VERSIONS:
        assert outcomes(version, "scripted") == scripted, version
        assert outcomes(version, "five-exceptions") == five, version
        # a two-step trial: step two raised, its verifier still scored 1; the step's exception
        # makes the reward invalid (Harbor records it on the step, not on the trial)
        [multi] = read_harbor_job(jobs(version, "multi-step"))
        assert (multi["outcome"], multi["reward"]) == ("error", None), version
        assert multi["reason"].startswith("NetworkConnectionError: reward 1 not valid")
        [retried] = [a for a in read_harbor_job(jobs(version, "scripted")) if a["retries"]]
        assert retried["first_attempts"] == ["ApiInternalServerError"]
        assert retried["job"]["harbor_version"] == version
        assert retried["job"]["retry"]["max_retries"] == 1
        assert retried["job"]["n_retries"] == 1 and retried["job"]["finished"] is True
    # 0.26 wrote the policy and reward_valid; 0.22.0 wrote neither and is read by the table
    reasons = {
        v: {a["reason"] for a in read_harbor_job(jobs(v, "five-exceptions"))} for v in VERSIONS
    }
    assert all("written by Harbor" in r for r in reasons["0.26.0"])
    assert "BudgetExceededError" in reasons["0.22.0"]  # 0.22.0 did not grade it: no reward
    assert all("0.26.0's table" in r for r in reasons["0.22.0"] - {"BudgetExceededError"})


def test_the_five_exceptions_are_counted_in_the_bounds_not_as_failures():
    for version in VERSIONS:
        attempts = read_harbor_job(jobs(version, "five-exceptions"))
        summary, rows = summarize_run(
            "five", "harbor", selection(a["task_id"] for a in attempts), attempts, 200, RELEASE
        )
        [config] = summary["configurations"]
        assert config["counts"]["error"] == 5 and config["counts"]["rejected"] == 0
        assert config["success_rate"] is None
        assert config["success_rate_bounds"] == {"lower": 0.0, "upper": 1.0, "upper_withheld": None}
        assert {r["reward"] for r in rows} == {None}


def test_harbors_own_mean_counts_an_error_as_0_in_0_22_and_drops_it_in_0_26():
    means = {}
    for version in VERSIONS:
        doc = json.loads((jobs(version, "scripted") / "result.json").read_text())
        [evals] = doc["stats"]["evals"].values()
        [metric] = evals["metrics"]
        means[version] = round(metric["mean"], 3)
    assert means == {"0.22.0": 0.5, "0.26.0": 0.667}
    # afbench gives neither: three tasks decided, one an error (the retried one accepted)
    attempts = read_harbor_job(jobs("0.26.0", "scripted"))
    summary, _ = summarize_run(
        "s", "harbor", selection(a["task_id"] for a in attempts), attempts, 200, RELEASE
    )
    [config] = summary["configurations"]
    assert config["success_rate_bounds"]["lower"] == 0.5
    assert config["success_rate_bounds"]["upper"] == 0.75


def test_retries_are_in_the_open_with_the_retry_shift():
    for version in VERSIONS:
        attempts = read_harbor_job(jobs(version, "scripted"))
        summary, _ = summarize_run(
            "s", "harbor", selection(a["task_id"] for a in attempts), attempts, 200, RELEASE
        )
        [config] = summary["configurations"]
        assert config["configuration"].split(" | ")[5] == "max_retries 1"
        retries = config["retries"]
        assert (retries["max_retries"], retries["retries"], retries["jobs_n_retries"]) == (1, 1, 1)
        assert [t["task_id"] for t in retries["retried_trials"]] == ["demo_s01_t004"]
        shift = config["retry_shift"]
        assert shift["retried"]["by_outcome"]["accepted"] == 1
        assert shift["ran_once"]["trials"] == 3
        first = shift["first_attempts_only"]
        assert (first["counts"]["accepted"], first["counts"]["error"]) == (1, 2)
        assert first["success_rate_bounds"]["lower"] == 0.25


# ------------------------------------------------------------------ live: real Harbor, docker


def live_skip_reason() -> str | None:
    return harbor_skip_reason() or docker_skip_reason()


@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.skipif(live_skip_reason() is not None, reason=str(live_skip_reason()))
def test_the_five_provider_exceptions_of_a_real_harbor_run_are_errors_in_the_bounds(tmp_path):
    """One `harbor run` per Harbor (0.22.0, and 0.26.0 when installed), five tasks, the
    scripted agent raising each real exception class; run at once, then imported."""
    from make_fixtures import make

    harbors = {"0.22.0": str(REPO / ".harbor-venv/bin/harbor")}
    if HARBOR_026.is_file():
        harbors["0.26.0"] = str(HARBOR_026)
    else:
        print(f"Harbor 0.26.0 not installed ({HARBOR_026}): only 0.22.0 runs")
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(len(harbors)) as pool:
        made = {
            version: pool.submit(
                make, path, tmp_path / version / "jobs", tmp_path / version, ("five-exceptions",)
            )
            for version, path in harbors.items()
        }
        folders = {v: f.result()["five-exceptions"] for v, f in made.items()}
    task_ids = [f"demo_s01_t00{i}" for i in range(1, 6)]
    chosen = tmp_path / "selection.json"
    chosen.write_text(
        json.dumps(
            declared(
                SELECTION,
                name="five",
                release=identity(load_config([REPO / "config/demo.yaml"])["release"]),
                selection_sha256="0" * 64,
                task_ids=task_ids,
            )
        )
    )
    for version, folder in folders.items():
        out = tmp_path / "imported" / version
        afbench(
            *["import-run", "--selection", chosen, "--name", "five", "--kind", "harbor"],
            *["--path", folder, "--output-dir", out],
        )
        summary = json.loads((out / "summary.json").read_text())
        [config] = summary["configurations"]
        assert config["counts"]["error"] == 5, version
        assert config["success_rate_bounds"]["lower"] == 0.0
        assert config["success_rate_bounds"]["upper"] == 1.0
        with open(out / "attempts.csv", newline="") as handle:
            rows = {r["task_id"]: r for r in csv.DictReader(handle)}
        for task, name in zip(task_ids, EXCEPTIONS, strict=True):
            row = rows[task]
            assert (row["outcome"], row["reward"]) == ("error", ""), (version, row)
            assert row["reason"].split(":")[0] == name, (version, row)
        results = [json.loads(p.read_text()) for p in sorted(folder.glob("*/result.json"))]
        graded = [r for r in results if (r["verifier_result"] or {}).get("rewards")]
        # Harbor graded them (reward 0 beside the exception): 0.22.0 all but litellm's
        # BudgetExceededError, 0.26.0 all five
        assert len(graded) == {"0.22.0": 4, "0.26.0": 5}[version]
        assert {r["verifier_result"]["rewards"]["reward"] for r in graded} == {0.0}
        assert docker_leftovers(tmp_path / version / "jobs") == []


@pytest.mark.harbor
@pytest.mark.skipif(harbor_skip_reason() is not None, reason=str(harbor_skip_reason()))
def test_our_task_checksum_is_harbors_dirhash(tmp_path):
    tree = tmp_path / "task"
    for rel, data in {
        "task.toml": b"[agent]\n",
        "environment/Dockerfile": b"FROM x\n",
        "environment/workspace/.hidden": b"",
        "tests/test.sh": b"#!/bin/bash\n",
        "sp ace/\xc3\xa9.txt": b"\x00\x01",
    }.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    (tree / "empty/inner").mkdir(parents=True)  # left out, as dirhash leaves it out
    (tree / "link").symlink_to("environment")
    python = HARBOR.parent / "python"
    dirhash = "import sys, dirhash; print(dirhash.dirhash(sys.argv[1], 'sha256'))"
    theirs = subprocess.run(
        [str(python), "-c", dirhash, str(tree)], capture_output=True, text=True, check=True
    )
    assert harbor.task_checksum(tree) == theirs.stdout.strip()
    with pytest.raises(AfbenchError, match="holds no file"):
        harbor.task_checksum(tree / "empty")


@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.skipif(trial_skip_reason() is not None, reason=str(trial_skip_reason()))
def test_harbor_runs_nop_and_oracle_with_the_plan_argv_and_afbench_reads_them(checkout, tmp_path):
    jobs = tmp_path / "jobs"
    outcomes = {}
    for agent in ("nop", "oracle"):
        step = plan_for(checkout, agent, jobs)
        assert run(python_argv(step["export"]), checkout).returncode == 0
        argv = step["run"]["argv"]
        assert argv[0] == "harbor" and argv[-2:] == ["-e", "docker"]
        assert step["run"]["env"] == {"HARBOR_TELEMETRY": "0"}
        result = run([str(HARBOR), *argv[1:]], Path(step["run"]["cwd"]), step["run"]["env"])
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        [attempt] = read_harbor_job(Path(step["job_dir"]))
        outcomes[agent] = (attempt["task_id"], attempt["outcome"], attempt["reward"])
        assert attempt["agent"] == agent
    assert outcomes == {"nop": (TASK, "rejected", 0), "oracle": (TASK, "accepted", 1)}

    # The same argv again resumes the job: the finished trial is kept, not rerun.
    job_dir = Path(step["job_dir"])
    trials = {
        p.name: hashlib.sha256((p / "result.json").read_bytes()).hexdigest()
        for p in job_dir.iterdir()
        if p.is_dir()
    }
    again = run([str(HARBOR), *argv[1:]], Path(step["run"]["cwd"]), step["run"]["env"])
    assert again.returncode == 0, again.stderr[-2000:]
    assert {
        p.name: hashlib.sha256((p / "result.json").read_bytes()).hexdigest()
        for p in job_dir.iterdir()
        if p.is_dir()
    } == trials
    assert docker_leftovers(jobs) == []


@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.skipif(trial_skip_reason() is not None, reason=str(trial_skip_reason()))
def test_the_test_agent_reports_its_cost_through_harbor_and_afbench_reads_it(checkout, tmp_path):
    # the plan's argv with the agent swapped for afbench's model-free test agent, which reports
    # a fixed cost through Harbor's agent context (plans accept only Harbor's own agents)
    jobs = tmp_path / "jobs"
    step = plan_for(checkout, "nop", jobs)
    assert run(python_argv(step["export"]), checkout).returncode == 0
    argv = [str(HARBOR), *step["run"]["argv"][1:]]
    argv[argv.index("-a") + 1] = "cost_agent:CostAgent"
    result = run(
        argv,
        Path(step["run"]["cwd"]),
        {
            **step["run"]["env"],
            "PYTHONPATH": str(REPO / "tests" / "harbor_agents"),
            "AFBENCH_TEST_AGENT_COST_USD": "2.5",
        },
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    job_dir = Path(step["job_dir"])
    [trial] = [p for p in job_dir.iterdir() if p.is_dir()]
    recorded = json.loads((trial / "result.json").read_text())
    assert recorded["agent_result"]["cost_usd"] == 2.5
    assert recorded["verifier_result"]["rewards"] == {"reward": 0.0}  # it wrote nothing
    assert json.loads((job_dir / "result.json").read_text())["stats"]["cost_usd"] == 2.5
    [attempt] = read_harbor_job(job_dir)
    assert (attempt["agent"], attempt["outcome"], attempt["cost_usd"]) == (
        "afbench-test-cost",
        "rejected",
        2.5,
    )
    assert docker_leftovers(jobs) == []
