"""Local runs: real Harbor 0.22.0 job directories and verdict files. Errors are never 0; a run
is summarised per configuration and never pooled; a trial is counted once."""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import threading
import uuid
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from afbench.cli import main
from afbench.core import fsutil
from afbench.core.errors import AfbenchError
from afbench.core.harbor_files import classify_trial
from afbench.runs import harbor_jobs as harborjobs
from afbench.runs import summary as runs
from afbench.runs.harbor_jobs import read_harbor_job, read_regular_file
from afbench.runs.summary import ATTEMPT_COLUMNS, OUTCOME_COLUMNS, summarize_run
from afbench.runs.verdicts import parse_verdict, read_verdict_dir

import properties as prop
from conftest import (
    EXAMPLES_100,
    EXAMPLES_150,
    FIXTURES,
    _import_harbor_job,
    one_line,
    release_dir,
)

RELEASE = {"name": "t", "revision": "a" * 40}
EXPECTED = {
    "hello-pass": ("accepted", 1, "reward 1"),
    "agent-timeout": ("rejected", 0, "AgentTimeoutError"),
    "solve-fails": ("rejected", 0, "reward 0"),
    "verifier-timeout": ("error", None, "VerifierTimeoutError"),
    "no-reward": ("error", None, "RewardFileNotFoundError"),
    "empty-reward": ("error", None, "RewardFileEmptyError"),
    "bad-reward": ("error", None, "VerifierOutputParseError"),
    "reward-json": ("error", None, "invalid_reward (0.5)"),
    "no-solution": ("error", None, "FileNotFoundError"),
}
ORACLE_K1 = "oracle 1.0.0 | model none | env hostenv:HostEnvironment | timeout x1 | n_attempts 1"
ORACLE_K4 = "oracle 1.0.0 | model none | env hostenv:HostEnvironment | timeout x1 | n_attempts 4"
NOP_K1 = "nop 1.0.0 | model none | env hostenv:HostEnvironment | timeout x1 | n_attempts 1"


def selection(*task_ids):
    return {"name": "sel", "selection_sha256": "0" * 64, "task_ids": list(task_ids)}


def by_label(summary: dict) -> dict:
    return {c["configuration"]: c for c in summary["configurations"]}


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def save(path: Path, doc: object) -> None:
    path.write_text(json.dumps(doc, indent=4))


def trial_results(job: Path) -> list[Path]:
    return sorted(job.glob("*/result.json"))


def edit_trials(job: Path, change) -> None:
    for result in trial_results(job):
        doc = load(result)
        change(doc)
        save(result, doc)


def copy_job(
    src: Path,
    dst: Path,
    job_id: str | None = None,
    rename: str | None = None,
    new_trial_ids: bool = True,
) -> Path:
    """A copy of a fixture job; with `job_id`, a different Harbor job (its trials' job id and
    the job's result.json id changed, and, as Harbor gives every trial it runs, new trial ids
    unless `new_trial_ids` is false); with `rename`, its trials renamed as Harbor would."""
    shutil.copytree(src, dst)
    if job_id is not None:
        result = load(dst / "result.json")
        result["id"] = job_id
        save(dst / "result.json", result)

        def move(doc):
            doc["config"]["job_id"] = job_id
            if new_trial_ids:
                doc["id"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{job_id}/{doc['id']}"))

        edit_trials(dst, move)
    if rename is not None:
        for result in trial_results(dst):
            trial = result.parent
            new_name = trial.name + rename
            doc = load(result)
            doc["trial_name"] = doc["config"]["trial_name"] = new_name
            save(result, doc)
            trial.rename(trial.parent / new_name)
    return dst


# ------------------------------------------------------------------ outcomes of single trials


def test_every_oracle_trial_is_classified():
    attempts = read_harbor_job(FIXTURES / "demo-oracle")
    assert {a["task_id"]: (a["outcome"], a["reward"], a["reason"]) for a in attempts} == EXPECTED
    assert {(a["agent"], a["agent_version"], a["configuration"]) for a in attempts} == {
        ("oracle", "1.0.0", ORACLE_K1)
    }
    assert {a["job_id"] for a in attempts} == {"52cdcd1b-5604-4eea-84c7-83b09995de51"}
    assert {a["trial_name"] for a in attempts} == {
        p.name for p in (FIXTURES / "demo-oracle").iterdir() if p.is_dir()
    }


def test_trials_that_share_a_reward_are_each_classified_by_all_their_own_fields(tmp_path):
    """The reader classifies once per distinct set of the fields classify_trial reads: trials
    with the same reward but other exceptions, policies or reward_valid are never conflated.
    Every trial's outcome is classify_trial's of its own result.json."""
    job = shutil.copytree(FIXTURES / "demo-oracle", tmp_path / "job")
    for result in job.glob("*/result.json"):
        doc = json.loads(result.read_text())
        doc["verifier_result"] = {"rewards": {"reward": 1.0}}
        doc.pop("reward_valid", None)
        result.write_text(json.dumps(doc))
    attempts = read_harbor_job(job)
    for attempt in attempts:
        file = os.path.join(attempt["trial_dir"], "result.json")
        own = classify_trial(json.loads(Path(file).read_text()), file, policy_table="0.26.0")
        assert (attempt["outcome"], attempt["reward"], attempt["reason"]) == (
            own["outcome"],
            own["reward"],
            own["reason"],
        ), file
    assert len({a["outcome"] for a in attempts}) > 1  # not one classification for all


def test_errors_never_appear_as_zero():
    attempts = read_harbor_job(FIXTURES / "demo-oracle")
    summary, rows = summarize_run("oracle", "harbor", selection(*EXPECTED), attempts, 200, RELEASE)
    for row in rows:
        if row["outcome"] == "error":
            assert row["reward"] is None
    [config] = summary["configurations"]
    assert config["configuration"] == ORACLE_K1
    assert config["counts"] == {
        "accepted": 1,
        "rejected": 2,
        "unverified": 0,
        "error": 6,
        "incomplete": 0,
        "missing": 0,
    }
    assert config["success_rate"] is None
    assert config["success_rate_bounds"]["lower"] == 1 / 9
    assert config["success_rate_bounds"]["upper"] == 7 / 9
    assert summary["condition"] == "source-free"
    assert summary["verifier_provenance_attested"] is False
    assert summary["local_capability_score"] is None
    assert "counts" not in summary  # nothing pooled at the top
    assert set(rows[0]) >= set(OUTCOME_COLUMNS)


def test_environment_failure_is_an_error_of_its_own_configuration():
    failstart = read_harbor_job(FIXTURES / "demo-failstart")
    assert [(a["outcome"], a["reward"], a["reason"]) for a in failstart] == [
        ("error", None, "RuntimeError")
    ]
    # its environment kwargs (fail_start) and its retries differ from the oracle job's: another
    # configuration, whose label says how often Harbor may retry a trial
    assert failstart[0]["configuration"].startswith(ORACLE_K1 + " | max_retries 2 | settings ")
    # Harbor retried it twice (job.log names both retries, the job's stats.n_retries says 2)
    assert (failstart[0]["retries"], failstart[0]["first_attempts"]) == (
        2,
        ["RuntimeError", "RuntimeError"],
    )
    assert failstart[0]["job"]["n_retries"] == 2
    assert failstart[0]["configuration_details"]["non_default_settings"] == {
        "environment.kwargs": {"fail_start": True}
    }


def test_a_job_log_short_of_harbors_retry_count_leaves_the_retries_unknown(tmp_path):
    """The failstart job counts 2 retries (stats.n_retries); its job.log, cut before the
    "Retrying" lines, names none: the trial did not run once, as far as anyone can tell."""
    job = copy_job(FIXTURES / "demo-failstart", tmp_path / "failstart")
    log = job / "job.log"
    log.write_text("".join(ln for ln in log.read_text().splitlines(True) if "Retrying" not in ln))
    [trial] = read_harbor_job(job)
    assert (trial["retries"], trial["job"]["n_retries"], trial["job"]["retries_logged"]) == (
        None,
        2,
        0,
    )
    summary, _ = summarize_run("r", "harbor", selection("hello-pass"), [trial], 200, RELEASE)
    [configuration] = summary["configurations"]
    assert configuration["retries"]["trials_with_unknown_retries"] == 1
    assert "fewer retries named than stats.n_retries" in configuration["retries"]["note"]


# ------------------------------------------------------------------ one result per configuration


def test_two_agents_in_one_job_are_two_results(tmp_path):
    """`harbor run -a nop -a oracle` (a job config with two entries under `agents`)."""
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "two-agents")
    config = load(job / "config.json")
    config["agents"] = [{"name": "nop"}, {"name": "oracle"}]
    save(job / "config.json", config)
    oracle_trial = job / "hello-pass__OrAcLe1"
    shutil.copytree(FIXTURES / "demo-k4" / "hello-pass__6FADnuB", oracle_trial)
    job_id = load(job / "result.json")["id"]
    doc = load(oracle_trial / "result.json")
    doc["trial_name"] = doc["config"]["trial_name"] = oracle_trial.name
    doc["config"]["job_id"] = job_id
    save(oracle_trial / "result.json", doc)

    attempts = read_harbor_job(job)
    assert sorted((a["agent"], a["outcome"]) for a in attempts) == [
        ("nop", "rejected"),
        ("oracle", "accepted"),
    ]
    summary, rows = summarize_run("two", "harbor", selection("hello-pass"), attempts, 200, RELEASE)
    configs = by_label(summary)
    assert sorted(configs) == [NOP_K1, ORACLE_K1]
    assert configs[NOP_K1]["success_rate"] == 0.0 and configs[NOP_K1]["pass_at_k"] == {"1": 0.0}
    assert configs[ORACLE_K1]["success_rate"] == 1.0
    assert configs[ORACLE_K1]["pass_at_k"] == {"1": 1.0}
    assert [(r["configuration"], r["agent"], r["outcome"], r["attempts"]) for r in rows] == [
        (NOP_K1, "nop", "rejected", 1),
        (ORACLE_K1, "oracle", "accepted", 1),
    ]
    assert all(";" not in (r["agent"] or "") for r in rows)  # never 'nop;oracle'


def test_two_job_directories_of_different_agents_are_never_pooled():
    """Replaces the old test that asserted nop + oracle pooled as one accepted task."""
    nop = read_harbor_job(FIXTURES / "demo-nop")
    assert [(a["outcome"], a["reward"], a["agent"]) for a in nop] == [("rejected", 0, "nop")]
    k4 = read_harbor_job(FIXTURES / "demo-k4")
    summary, rows = summarize_run("k4", "harbor", selection("hello-pass"), k4, 200, RELEASE)
    assert rows[0]["attempts"] == 4 and rows[0]["accepted_attempts"] == 4
    assert by_label(summary)[ORACLE_K4]["pass_at_k"] == {"1": 1.0, "4": 1.0}

    summary, rows = summarize_run("mix", "harbor", selection("hello-pass"), nop + k4, 200, RELEASE)
    configs = by_label(summary)
    assert sorted(configs) == [NOP_K1, ORACLE_K4]
    assert configs[NOP_K1]["counts"]["rejected"] == 1 and configs[NOP_K1]["success_rate"] == 0.0
    assert configs[NOP_K1]["pass_at_k"] == {"1": 0.0}
    assert configs[ORACLE_K4]["counts"]["accepted"] == 1
    assert configs[ORACLE_K4]["pass_at_k"] == {"1": 1.0, "4": 1.0}  # pass@k within one only
    assert sorted((r["configuration"], r["outcome"], r["attempts"]) for r in rows) == [
        (NOP_K1, "rejected", 1),
        (ORACLE_K4, "accepted", 4),
    ]


def test_model_and_timeouts_make_configurations(tmp_path):
    base = copy_job(FIXTURES / "demo-nop", tmp_path / "a")
    slow = copy_job(FIXTURES / "demo-nop", tmp_path / "b", job_id="job-b", rename="b")
    other_model = copy_job(FIXTURES / "demo-nop", tmp_path / "c", job_id="job-c", rename="c")

    def slower(doc):
        doc["config"]["timeout_multiplier"] = 2

    def model(doc):
        doc["config"]["agent"]["model_name"] = "acme/m-2"
        doc["agent_info"]["model_info"] = {"name": "m-2", "provider": "acme"}

    edit_trials(slow, slower)
    edit_trials(other_model, model)
    attempts = [a for job in (base, slow, other_model) for a in read_harbor_job(job)]
    summary, _ = summarize_run("m", "harbor", selection("hello-pass"), attempts, 200, RELEASE)
    assert sorted(by_label(summary)) == [
        "nop 1.0.0 | model acme/m-2 | env hostenv:HostEnvironment | timeout x1 | n_attempts 1",
        NOP_K1,
        "nop 1.0.0 | model none | env hostenv:HostEnvironment | timeout x2 | n_attempts 1",
    ]
    modelled = by_label(summary)[sorted(by_label(summary))[0]]
    assert modelled["model"] == "acme/m-2"
    assert modelled["model_info"] == {"name": "m-2", "provider": "acme"}


def test_agent_kwargs_are_part_of_the_configuration(tmp_path):
    plain = copy_job(FIXTURES / "demo-nop", tmp_path / "a")
    tuned = copy_job(FIXTURES / "demo-nop", tmp_path / "b", job_id="job-b", rename="b")

    def kwargs(doc):
        doc["config"]["agent"]["kwargs"] = {"temperature": 0.7}

    edit_trials(tuned, kwargs)
    labels = {a["configuration"] for job in (plain, tuned) for a in read_harbor_job(job)}
    assert len(labels) == 2 and NOP_K1 in labels
    # the label is the same whatever is imported with it
    assert {a["configuration"] for a in read_harbor_job(tuned)} == labels - {NOP_K1}


def test_attempts_across_job_directories_of_one_configuration_stay_attempts(tmp_path):
    again = copy_job(FIXTURES / "demo-k4", tmp_path / "demo-k4-again", job_id="job-2", rename="x")
    attempts = read_harbor_job(FIXTURES / "demo-k4") + read_harbor_job(again)
    summary, rows = summarize_run("k8", "harbor", selection("hello-pass"), attempts, 200, RELEASE)
    [config] = summary["configurations"]
    assert config["configuration"] == ORACLE_K4
    assert rows[0]["attempts"] == 8 and rows[0]["accepted_attempts"] == 8
    assert config["pass_at_k"] == {"1": 1.0, "8": 1.0}
    assert config["jobs"] == sorted(["job-2", load(FIXTURES / "demo-k4" / "result.json")["id"]])
    # same trial names but another job: still other trials
    same_names = copy_job(FIXTURES / "demo-k4", tmp_path / "k4-same-names", job_id="job-3")
    attempts = read_harbor_job(FIXTURES / "demo-k4") + read_harbor_job(same_names)
    assert (
        summarize_run("k", "harbor", selection("hello-pass"), attempts, 200, RELEASE)[1][0][
            "attempts"
        ]
        == 8
    )


def test_a_task_that_changed_between_attempts_is_refused(tmp_path):
    again = copy_job(FIXTURES / "demo-k4", tmp_path / "k4", job_id="job-2", rename="x")

    def changed(doc):
        doc["task_checksum"] = "f" * 64

    edit_trials(again, changed)
    attempts = read_harbor_job(FIXTURES / "demo-k4") + read_harbor_job(again)
    with pytest.raises(AfbenchError, match="task 'hello-pass' differs between trials"):
        summarize_run("k", "harbor", selection("hello-pass"), attempts, 200, RELEASE)


# ------------------------------------------------------------------ a trial is counted once


def test_the_same_directory_twice_is_refused():
    k4 = FIXTURES / "demo-k4"
    attempts = read_harbor_job(k4) + read_harbor_job(k4)
    with pytest.raises(AfbenchError) as info:
        summarize_run("twice", "harbor", selection("hello-pass"), attempts, 200, RELEASE)
    message = str(info.value)
    first = str(k4 / "hello-pass__6FADnuB")
    assert f"is read twice: {first} and {first}" in message
    assert "and 3 more" in message and "the same folder given twice" in message


def test_a_copied_trial_is_refused_naming_both_paths(tmp_path):
    copy = copy_job(FIXTURES / "demo-k4", tmp_path / "copy-of-k4")
    attempts = read_harbor_job(FIXTURES / "demo-k4") + read_harbor_job(copy)
    with pytest.raises(AfbenchError) as info:
        summarize_run("copy", "harbor", selection("hello-pass"), attempts, 200, RELEASE)
    assert (
        f"{FIXTURES / 'demo-k4' / 'hello-pass__6FADnuB'} and {copy / 'hello-pass__6FADnuB'}"
        in str(info.value)
    )
    # a trial folder copied inside one job directory, under another name: its folder is not
    # named after its trial
    twin = copy / "hello-pass__6FADnuBcopy"
    shutil.copytree(copy / "hello-pass__6FADnuB", twin)
    with pytest.raises(AfbenchError, match="the trial folder's name is not its trial's name"):
        read_harbor_job(copy)
    # ... and renamed throughout: still the same trial id twice
    doc = load(twin / "result.json")
    doc["trial_name"] = doc["config"]["trial_name"] = twin.name
    save(twin / "result.json", doc)
    with pytest.raises(AfbenchError, match="two trial folders hold the same trial"):
        read_harbor_job(copy)


def test_a_verdict_folder_twice_is_refused(tmp_path):
    folder = tmp_path / "verdicts"
    folder.mkdir()
    (folder / "a.json").write_bytes(verdict())
    attempts = read_verdict_dir(folder) + read_verdict_dir(folder)
    with pytest.raises(AfbenchError, match="the same verdict file is read twice"):
        summarize_run("v", "verdicts", selection("t1"), attempts, 200, RELEASE)


# ------------------------------------------------------------------ verification disabled


def disable_verification(doc):
    doc["config"]["verifier"]["disable"] = True
    doc["verifier_result"] = None
    doc["exception_info"] = None


def test_verification_disabled_is_unverified_not_an_error(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "unverified")
    edit_trials(job, disable_verification)
    [attempt] = read_harbor_job(job)
    assert (attempt["outcome"], attempt["reward"], attempt["reason"]) == (
        "unverified",
        None,
        "verification disabled",
    )
    summary, rows = summarize_run("u", "harbor", selection("hello-pass"), [attempt], 200, RELEASE)
    [config] = summary["configurations"]
    assert config["counts"]["unverified"] == 1 and config["counts"]["error"] == 0
    assert config["success_rate"] is None
    assert config["success_rate_bounds"]["lower"] == 0.0
    assert config["success_rate_bounds"]["upper"] is None  # never counted as a success
    assert config["success_rate_bounds"]["upper_withheld"] == "1 task(s) unverified"
    assert config["pass_at_k"] is None
    assert rows[0]["outcome"] == "unverified" and rows[0]["reward"] is None


def test_unverified_never_enters_the_numerator_beside_accepted(tmp_path):
    """Oracle job: three tasks verified, two with verification disabled (one timed out)."""
    job = copy_job(FIXTURES / "demo-oracle", tmp_path / "mixed")
    for name in ("solve-fails", "agent-timeout"):
        result = next(job.glob(f"{name}__*/result.json"))
        doc = load(result)
        exc = doc["exception_info"]
        disable_verification(doc)
        if name == "agent-timeout":
            doc["exception_info"] = exc
        save(result, doc)
    attempts = read_harbor_job(job)
    reasons = {a["task_id"]: (a["outcome"], a["reason"]) for a in attempts}
    assert reasons["solve-fails"] == ("unverified", "verification disabled")
    assert reasons["agent-timeout"] == ("unverified", "verification disabled; AgentTimeoutError")
    summary, _ = summarize_run("m", "harbor", selection(*EXPECTED), attempts, 200, RELEASE)
    [config] = summary["configurations"]
    assert config["counts"]["unverified"] == 2 and config["counts"]["error"] == 6
    assert config["success_rate_bounds"]["lower"] == 1 / 9
    assert config["success_rate_bounds"]["upper"] is None


def test_job_level_verification_disabled_and_contradictions(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job-disabled")
    config = load(job / "config.json")
    config["verifier"] = {"disable": True}
    save(job / "config.json", config)

    def no_verifier_section(doc):
        del doc["config"]["verifier"]
        doc["verifier_result"] = None

    edit_trials(job, no_verifier_section)
    assert [a["outcome"] for a in read_harbor_job(job)] == ["unverified"]
    # an infrastructure failure stays an error even when nothing was to be verified
    doc = load(trial_results(job)[0])
    doc["exception_info"] = {"exception_type": "RuntimeError", "exception_message": "x"}
    assert classify_trial(doc, "r.json", verification_disabled=True)["outcome"] == "error"
    # a reward although verification was disabled is a contradiction
    doc = load(trial_results(FIXTURES / "demo-nop")[0])
    doc["config"]["verifier"]["disable"] = True
    with pytest.raises(AfbenchError, match="r.json: field 'verifier_result.rewards.reward'"):
        classify_trial(doc, "r.json")


# ------------------------------------------------------------------ incomplete and missing


def test_incomplete_and_missing_and_outside_selection(tmp_path):
    job = copy_job(FIXTURES / "demo-oracle", tmp_path / "job")
    (job / "hello-pass__BXEW54v" / "result.json").unlink()
    attempts = read_harbor_job(job)
    hello = next(a for a in attempts if a["task_id"] == "hello-pass")
    assert hello["outcome"] == "incomplete" and hello["reward"] is None
    # the incomplete trial belongs to its job's configuration (agent version taken from it)
    assert hello["configuration"] == ORACLE_K1
    summary, rows = summarize_run(
        "r", "harbor", selection(*EXPECTED, "never-ran"), attempts, 200, RELEASE
    )
    [config] = summary["configurations"]
    assert config["counts"]["incomplete"] == 1 and config["counts"]["missing"] == 1
    assert {r["task_id"]: r["outcome"] for r in rows}["never-ran"] == "missing"
    with pytest.raises(AfbenchError, match="not in selection 'sel' .*found '.*hello-pass"):
        summarize_run("r", "harbor", selection("agent-timeout"), attempts, 200, RELEASE)
    with pytest.raises(AfbenchError, match="no trials or verdicts found"):
        summarize_run("r", "harbor", selection("hello-pass"), [], 200, RELEASE)


def test_incomplete_trial_of_a_two_agent_job_needs_its_config(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")
    config = load(job / "config.json")
    config["agents"] = [{"name": "nop"}, {"name": "oracle"}]
    save(job / "config.json", config)
    trial = next(job.glob("hello-pass__*"))
    (trial / "result.json").unlink()
    [attempt] = read_harbor_job(job)  # its own config.json names the agent
    assert attempt["outcome"] == "incomplete" and attempt["agent"] == "nop"
    assert attempt["agent_version"] is None  # no finished trial of that configuration
    (trial / "config.json").unlink()
    with pytest.raises(AfbenchError, match="job with 2 agents: its configuration can not be told"):
        read_harbor_job(job)


# ------------------------------------------------------------------ hostile shapes and files


@pytest.mark.parametrize(
    "path",
    [
        ["config"],
        ["config", "agent"],
        ["config", "environment"],
        ["config", "verifier"],
        ["config", "agent", "kwargs"],
        ["agent_info"],
        ["agent_info", "model_info"],
        ["agent_result"],
        ["verifier_result"],
        ["verifier_result", "rewards"],
        ["exception_info"],
        ["task_name"],
    ],
)
@pytest.mark.parametrize("value", [[1], "text", 3, True])
def test_wrong_json_shapes_are_one_clear_error(tmp_path, path, value):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")
    result = trial_results(job)[0]
    doc = load(result)
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    save(result, doc)
    if path == ["task_name"] and isinstance(value, str):
        # a task name of the right type, but not the task its trial and task path name
        with pytest.raises(AfbenchError, match="the trial is not named after its task 'text'"):
            read_harbor_job(job)
        return
    with pytest.raises(AfbenchError) as info:
        read_harbor_job(job)
    message = str(info.value)
    assert message.startswith(f"{result}: field '{'.'.join(path)}'")
    assert "wrong JSON type" in message or "exception_type" in message


@pytest.mark.parametrize("value", [[], "x", None, 1])
def test_a_result_that_is_not_an_object(tmp_path, value):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")
    save(trial_results(job)[0], value)
    with pytest.raises(AfbenchError, match="result.json: trial result must be a JSON object"):
        read_harbor_job(job)


def test_lone_surrogates_and_undecodable_names_are_refused(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")
    result = trial_results(job)[0]
    text = result.read_text().replace(
        '"name": "nop",\n        "version"', '"name": "n\\udc80p",\n        "version"'
    )
    assert "\\udc80" in text
    result.write_text(text)
    with pytest.raises(AfbenchError, match="field 'agent_info.name': trial result holds a lone"):
        read_harbor_job(job)
    result.write_text(text.replace("\\udc80", "\\ud83d\\ude00"))  # a valid pair is text
    assert read_harbor_job(job)[0]["agent"] == "n\U0001f600p"
    os.mkdir(os.fsencode(job) + b"/bad-\xff__trial")
    with pytest.raises(AfbenchError, match="file name is not valid UTF-8"):
        read_harbor_job(job)
    folder = tmp_path / "verdicts"
    folder.mkdir()
    (folder / "v.json").write_bytes(verdict().replace(b'"comparator"', b'"comp\\ud800"'))
    with pytest.raises(AfbenchError, match="field 'verifier.name': verdict holds a lone"):
        read_verdict_dir(folder)


def test_negative_or_non_numeric_cost_is_refused(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")

    def negative(doc):
        doc["agent_result"]["cost_usd"] = -1

    edit_trials(job, negative)
    with pytest.raises(AfbenchError, match="field 'agent_result.cost_usd': negative cost"):
        read_harbor_job(job)


def test_a_cost_above_the_usd_ceiling_is_refused(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")

    def huge(doc):  # two of these would sum to infinity
        doc["agent_result"]["cost_usd"] = 1e308

    edit_trials(job, huge)
    with pytest.raises(AfbenchError, match="field 'agent_result.cost_usd': cost out of range"):
        read_harbor_job(job)


def in_thread(fn, *args):
    """Run fn in a daemon thread; a read that blocked would leave it alive."""
    outcome = {}

    def run():
        try:
            outcome["value"] = fn(*args)
        except AfbenchError as exc:
            outcome["error"] = str(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the read blocked"
    return outcome


def test_a_fifo_or_folder_as_result_json_is_refused(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")
    result = trial_results(job)[0]
    result.unlink()
    os.mkfifo(result)
    outcome = in_thread(read_harbor_job, job)
    assert outcome["error"] == (
        f"{result}: trial result.json is a FIFO (named pipe), not a regular file; "
        "refusing to read it"
    )
    result.unlink()
    result.mkdir()
    with pytest.raises(AfbenchError, match="result.json is a folder, not a regular file; refusing"):
        read_harbor_job(job)


def test_symlinked_trial_folder_and_result_are_refused(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")
    (job / "linked__trial").symlink_to(FIXTURES / "demo-k4" / "hello-pass__6FADnuB")
    with pytest.raises(AfbenchError, match="linked__trial: symbolic link in a Harbor job"):
        read_harbor_job(job)
    (job / "linked__trial").unlink()
    result = trial_results(job)[0]
    result.unlink()
    result.symlink_to(FIXTURES / "demo-k4" / "hello-pass__6FADnuB" / "result.json")
    with pytest.raises(AfbenchError, match="result.json is a symbolic link, not a regular file"):
        read_harbor_job(job)


def test_fifo_in_a_job_directory_or_as_trial_config_is_refused(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")
    os.mkfifo(job / "job.fifo")
    outcome = in_thread(read_harbor_job, job)
    assert "job.fifo: neither a trial folder nor a job file (a FIFO" in outcome["error"]
    (job / "job.fifo").unlink()
    trial = trial_results(job)[0].parent
    (trial / "result.json").unlink()
    (trial / "config.json").unlink()
    os.mkfifo(trial / "config.json")
    outcome = in_thread(read_harbor_job, job)
    assert "config.json: trial config is a FIFO" in outcome["error"]
    os.mkfifo(tmp_path / "config.json")
    assert "Harbor job config is a FIFO" in in_thread(read_harbor_job, tmp_path)["error"]


def test_fifo_and_folders_in_a_verdict_folder_are_refused(tmp_path):
    folder = tmp_path / "verdicts"
    folder.mkdir()
    (folder / "ok.json").write_bytes(verdict())
    os.mkfifo(folder / "pipe.json")
    outcome = in_thread(read_verdict_dir, folder)
    assert outcome["error"].startswith(f"{folder / 'pipe.json'}: verdict file is a FIFO")
    (folder / "pipe.json").unlink()
    (folder / "dir.json").mkdir()
    with pytest.raises(AfbenchError, match="dir.json: verdict file is a folder"):
        read_verdict_dir(folder)
    (folder / "dir.json").rmdir()
    (folder / "zero.json").symlink_to("/dev/zero")
    with pytest.raises(AfbenchError, match="zero.json: verdict file is a symbolic link"):
        read_verdict_dir(folder)
    (folder / "zero.json").unlink()
    assert [a["outcome"] for a in read_verdict_dir(folder)] == ["accepted"]


def test_devices_and_oversized_files_are_never_read(tmp_path):
    with pytest.raises(AfbenchError, match="/dev/zero: verdict is a character device"):
        read_regular_file(Path("/dev/zero"), "verdict")
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 101)
    with pytest.raises(AfbenchError, match="big.json: x is larger than the size cap .*at most 100"):
        read_regular_file(big, "x", max_bytes=100)
    assert read_regular_file(big, "x", max_bytes=101) == b" " * 101
    assert read_regular_file(tmp_path / "absent", "x", required=False) is None
    with pytest.raises(AfbenchError, match="absent: x not found"):
        read_regular_file(tmp_path / "absent", "x")


def test_unparsable_trial_result_is_a_clear_error(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")
    trial_results(job)[0].write_text('{"verifier_result": NaN}')
    with pytest.raises(AfbenchError, match="result.json: trial result is not valid JSON"):
        read_harbor_job(job)
    with pytest.raises(AfbenchError, match="not a Harbor job directory"):
        read_harbor_job(tmp_path)


def test_bad_job_config_is_refused(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")
    for bad, match in (
        ({"n_attempts": 0}, "field 'n_attempts': n_attempts must be a whole number >= 1"),
        ({"n_attempts": "4"}, "field 'n_attempts'"),
        ({"agents": {"name": "nop"}}, "field 'agents': wrong JSON type"),
        ({"verifier": {"disable": "yes"}}, "field 'verifier.disable'"),
    ):
        save(job / "config.json", {**load(FIXTURES / "demo-nop" / "config.json"), **bad})
        with pytest.raises(AfbenchError, match=match):
            read_harbor_job(job)
    save(job / "config.json", [])
    with pytest.raises(AfbenchError, match="config.json: field '\\(top level\\)'"):
        read_harbor_job(job)


def test_cost_goes_through_the_budget_audit(tmp_path):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "job")

    def expensive(doc):
        doc["agent_result"]["cost_usd"] = 250.0

    edit_trials(job, expensive)
    summary, _ = summarize_run(
        "c", "harbor", selection("hello-pass"), read_harbor_job(job), 200, RELEASE
    )
    audit = summary["configurations"][0]["budget_audit"]
    assert audit["over_budget"][0]["excess_usd"] == 50.0
    assert audit["over_budget"][0]["source"] == f"c [{NOP_K1}]"


# ------------------------------------------------------------------ verdicts


def verdict(**changes):
    doc = {
        "task_id": "t1",
        "status": "accepted",
        "obligations": [{"declaration": "A.b", "status": "accepted", "detail": ""}],
        "checks": {
            "target_equivalence": True,
            "allowed_axioms": True,
            "lean_kernel": True,
            "nanoda_replay": True,
        },
        "error": None,
        "verifier": {"name": "comparator", "version": "1.0"},
    }
    doc.update(changes)
    return json.dumps(doc).encode()


def test_verdict_rewards():
    assert parse_verdict(verdict(), "v.json", "t1")["reward"] == 1
    rejected = parse_verdict(
        verdict(
            status="rejected",
            checks={
                "target_equivalence": True,
                "allowed_axioms": False,
                "lean_kernel": True,
                "nanoda_replay": True,
            },
        ),
        "v.json",
        "t1",
    )
    assert rejected["reward"] == 0 and "allowed_axioms" in rejected["reason"]
    error = parse_verdict(
        verdict(status="error", error={"kind": "timeout", "message": "x"}), "v.json", "t1"
    )
    assert error["reward"] is None and error["reason"] == "timeout"
    for result in (rejected, error):
        assert result["verifier_provenance_attested"] is False
        assert result["local_capability_score"] is None


def test_verdicts_of_two_verifier_versions_are_two_results(tmp_path):
    folder = tmp_path / "verdicts"
    folder.mkdir()
    (folder / "a.json").write_bytes(verdict())
    (folder / "b.json").write_bytes(verdict(verifier={"name": "comparator", "version": "2.0"}))
    summary, rows = summarize_run(
        "v", "verdicts", selection("t1"), read_verdict_dir(folder), 200, RELEASE
    )
    assert sorted(by_label(summary)) == [
        "verdicts | verifier comparator 1.0",
        "verdicts | verifier comparator 2.0",
    ]
    assert [r["attempts"] for r in rows] == [1, 1]


@pytest.mark.parametrize(
    "doc,match",
    [
        (
            verdict(
                checks={
                    "target_equivalence": True,
                    "allowed_axioms": False,
                    "lean_kernel": True,
                    "nanoda_replay": True,
                }
            ),
            "accepted with a failed check",
        ),
        (
            verdict(obligations=[{"declaration": "A.b", "status": "rejected", "detail": ""}]),
            "without every obligation accepted",
        ),
        (
            verdict(
                checks={"target_equivalence": True, "allowed_axioms": True, "lean_kernel": True}
            ),
            "lacks checks",
        ),
        (verdict(status="error"), "status error without an error object"),
        (verdict(status="rejected"), "rejected although every check and obligation passed"),
        (verdict(task_id="t2"), "verdict is for another task"),
        (verdict(status="maybe"), "unknown status"),
        (b'{"task_id": "t1", "task_id": "t1"}', "duplicate key"),
        (b"[1, 2]", "must be a JSON object"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_verdict_contradictions_are_errors(doc, match):
    with pytest.raises(AfbenchError, match=match):
        parse_verdict(doc, "v.json", "t1")


def test_cli_verdict_keeps_its_form(tmp_path, capsys):

    path = tmp_path / "v.json"
    path.write_bytes(verdict())
    out = tmp_path / "out.json"
    assert main(["verdict", "--path", str(path), "--task", "t1", "--output", str(out)]) == 0
    assert load(out)["status"] == "accepted"
    assert main(["verdict", "--path", str(path), "--task", "t2", "--output", str(out)]) == 2
    assert "verdict is for another task" in capsys.readouterr().err


def test_cli_import_run_writes_outcomes(tmp_path, fetched_config, capsys):

    from conftest import afbench

    selection = tmp_path / "demo-first-tasks.json"
    afbench(
        "tasks",
        "--release-dir",
        release_dir(fetched_config),
        "--output",
        selection,
        "--task",
        "demo_s01_t001",
        "--task",
        "demo_s01_t002",
        "--task",
        "demo_s02_t001",
        cfg=fetched_config,
    )
    verdicts = tmp_path / "verdicts"
    verdicts.mkdir()
    (verdicts / "a.json").write_bytes(verdict(task_id="demo_s01_t001"))
    (verdicts / "b.json").write_bytes(
        verdict(task_id="demo_s01_t002", status="error", error={"kind": "oom", "message": "killed"})
    )
    out = tmp_path / "runs" / "mine"
    code = main(
        [
            "import-run",
            "--name",
            "mine",
            "--kind",
            "verdicts",
            "--path",
            str(verdicts),
            "--selection",
            str(selection),
            "--output-dir",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    label = "verdicts | verifier comparator 1.0"
    rows = list(csv.DictReader((out / "outcomes.csv").open()))
    assert list(rows[0]) == OUTCOME_COLUMNS
    assert [(r["configuration"], r["task_id"], r["outcome"], r["reward"]) for r in rows] == [
        (label, "demo_s01_t001", "accepted", "1"),
        (label, "demo_s01_t002", "error", ""),
        (label, "demo_s02_t001", "missing", ""),
    ]
    attempts = list(csv.DictReader((out / "attempts.csv").open()))
    assert list(attempts[0]) == ATTEMPT_COLUMNS and len(attempts) == 2
    summary = load(out / "summary.json")
    [config] = summary["configurations"]
    assert config["configuration"] == label
    assert config["success_rate"] is None
    assert config["success_rate_bounds"]["lower"] == pytest.approx(1 / 3)


# ------------------------------------------------------------------ the report's local runs


def test_report_shows_one_line_per_run_and_configuration(tmp_path):
    from afbench.report.analysis import local_run_rows
    from afbench.report.page import local_runs_section

    evil = copy_job(FIXTURES / "demo-nop", tmp_path / "evil")

    def rename_agent(doc):
        doc["agent_info"]["name"] = "<script>alert(1)</script>"
        disable_verification(doc)

    edit_trials(evil, rename_agent)
    attempts = read_harbor_job(FIXTURES / "demo-k4") + read_harbor_job(evil)
    summary, _ = summarize_run("r1", "harbor", selection("hello-pass"), attempts, 200, RELEASE)
    rows = local_run_rows([summary])
    assert [(r["run"], r["configuration"][:8], r["counts"]["unverified"]) for r in rows] == [
        ("r1", "<script>", 1),
        ("r1", "oracle 1", 0),
    ]
    html = local_runs_section(rows)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<tr>") == 3  # the header and one line per configuration
    header = re.search(r"<thead>(.*?)</thead>", html).group(1)
    assert re.findall(r"<th[^>]*>(.*?)</th>", header)[4:10] == [
        "accepted",
        "rejected",
        "unverified",
        "error",
        "incomplete",
        "missing",
    ]
    assert "upper withheld: 1 task(s) unverified" in html
    assert "<td>100.0%</td>" in html  # the oracle configuration's own success rate


def test_a_pooled_summary_from_an_older_afbench_is_refused_by_the_report():
    from afbench.report.analysis import local_run_rows

    old = {"run": "old", "selection": {"name": "s", "tasks": 1}, "counts": {"accepted": 1}}
    with pytest.raises(AfbenchError, match="run 'old': its summary has no per-configuration"):
        local_run_rows([old])


# ------------------------------------------------------------------ Harbor's half-written files
DOCKER_JOBS = FIXTURES.parent / "harbor-0.26.0-docker-jobs"


@pytest.mark.parametrize(
    ("cut", "reason"),
    [
        (0, "result.json is empty (0 bytes): Harbor never finished writing it"),
        (4096, "result.json ends mid-document (4096 bytes): Harbor never finished writing it"),
    ],
)
def test_a_half_written_trial_result_is_incomplete_and_the_rest_imported(tmp_path, cut, reason):
    job = copy_job(DOCKER_JOBS / "scripted", tmp_path / "scripted")
    [victim] = job.glob("demo_s01_t002__*/result.json")
    victim.write_bytes(victim.read_bytes()[:cut])  # as a full disk leaves it
    attempts = {a["task_id"]: a for a in read_harbor_job(job)}
    assert (attempts["demo_s01_t002"]["outcome"], attempts["demo_s01_t002"]["reason"]) == (
        "incomplete",
        reason,
    )
    # its own config.json still names its configuration: the job's other trials share it
    assert len({a["configuration"] for a in attempts.values()}) == 1
    assert [attempts[t]["outcome"] for t in sorted(attempts)] == [
        "accepted",
        "incomplete",
        "error",
        "accepted",
    ]


def test_a_trial_result_that_is_not_json_is_still_refused_naming_the_file(tmp_path):
    job = copy_job(DOCKER_JOBS / "scripted", tmp_path / "scripted")
    [victim] = job.glob("demo_s01_t002__*/result.json")
    victim.write_bytes(b'{"id": "x", oops}')  # wrong, not cut short
    with pytest.raises(AfbenchError, match=f"{re.escape(str(victim))}: trial result is not valid"):
        read_harbor_job(job)


def test_an_unfinished_job_is_incomplete_with_its_reason_and_its_trials_read(tmp_path):
    job = copy_job(DOCKER_JOBS / "scripted", tmp_path / "scripted")
    doc = load(job / "result.json")
    doc["finished_at"] = None
    save(job / "result.json", doc)
    attempts = read_harbor_job(job)
    assert len(attempts) == 4
    facts = attempts[0]["job"]
    assert (facts["finished"], facts["incomplete"]) == (
        False,
        "the job's result.json has no finished_at: the job was stopped, or is still running",
    )
    (job / "result.json").write_bytes(b"")  # Harbor rewrites it as trials finish
    facts = read_harbor_job(job)[0]["job"]
    assert facts["incomplete"] == (
        "job result.json is empty (0 bytes): Harbor never finished writing it"
    )
    summary, _ = summarize_run(
        "u", "harbor", selection(*(a["task_id"] for a in attempts)), attempts, 200, RELEASE
    )
    assert summary["configurations"][0]["harbor_jobs"][0]["finished"] is False


def test_a_trial_copied_into_another_job_folder_is_one_trial_whatever_the_job_ids(tmp_path):
    copy = copy_job(
        FIXTURES / "demo-k4",
        tmp_path / "elsewhere",
        job_id="job-2",
        rename="x",
        new_trial_ids=False,
    )
    attempts = read_harbor_job(FIXTURES / "demo-k4") + read_harbor_job(copy)
    with pytest.raises(AfbenchError) as refused:
        summarize_run("copy", "harbor", selection("hello-pass"), attempts, 200, RELEASE)
    message = str(refused.value)
    assert "the same trial (Harbor's trial id " in message
    assert str(FIXTURES / "demo-k4" / "hello-pass__6FADnuB") in message
    assert str(copy / "hello-pass__6FADnuBx") in message


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        ({"agent_timeout_multiplier": 2.0}, "timeout x1 (agent x2)"),
        (
            {"timeout_multiplier": 2.0, "verifier_timeout_multiplier": 1.0},
            "timeout x2 (verifier x1)",
        ),
        ({"agent_setup_timeout_multiplier": 3.0}, "timeout x1 (setup x3)"),
        ({"environment_build_timeout_multiplier": 0.5}, "timeout x1 (build x0.5)"),
        ({"agent_timeout_multiplier": 1.0}, "timeout x1"),  # the same as none
    ],
)
def test_the_label_shows_every_timeout_multiplier_that_applies(tmp_path, change, shown):
    job = copy_job(FIXTURES / "demo-nop", tmp_path / "nop")
    edit_trials(job, lambda doc: doc["config"].update(change))
    [attempt] = read_harbor_job(job)
    assert attempt["configuration"] == NOP_K1.replace("timeout x1", shown)


@EXAMPLES_100
@given(index=st.integers(0, 20), text=prop.hostile_texts)
def test_a_verdict_with_hostile_strings_is_refused_or_writable(index, text):
    prop.check_verdict_writable(index, text)


# --- 7. a Harbor job's own facts must agree --------------------------------------------------
def _edit(job: Path, change) -> Path:
    result = next(job.glob("hello-pass__*/result.json"))
    doc = json.loads(result.read_text())
    change(doc, result.parent)
    result.write_text(json.dumps(doc))
    return result


def _clone_trial(job: Path, suffix: str, new_id: str) -> None:
    trial = next(job.glob("hello-pass__*"))
    twin = job / (trial.name + suffix)
    shutil.copytree(trial, twin)
    doc = json.loads((twin / "result.json").read_text())
    doc["trial_name"] = doc["config"]["trial_name"] = twin.name
    doc["id"] = new_id
    (twin / "result.json").write_text(json.dumps(doc))


EDITS = {
    "folder renamed": (
        lambda job: next(job.glob("hello-pass__*")).rename(job / "hello-pass__zzz"),
        "the trial folder's name is not its trial's name",
    ),
    "trial_name": (
        lambda job: _edit(job, lambda d, t: d.update(trial_name="hello-pass__other")),
        "the trial folder's name is not its trial's name",
    ),
    "config.trial_name": (
        lambda job: _edit(job, lambda d, t: d["config"].update(trial_name="x__1")),
        "the trial's config names another trial",
    ),
    "task_name": (
        lambda job: _edit(job, lambda d, t: d.update(task_name="solve-fails")),
        "the trial is not named after its task 'solve-fails'",
    ),
    "config.task.path": (
        lambda job: _edit(
            job, lambda d, t: d["config"]["task"].update(path="/srv/tasks/solve-fails")
        ),
        "the trial's task path names another task",
    ),
    "config.job_id": (
        lambda job: _edit(job, lambda d, t: d["config"].update(job_id="another-job")),
        "the trial belongs to another job",
    ),
    "trial id twice": (
        lambda job: _clone_trial(
            job, "b", json.loads(next(job.glob("hello-pass__*/result.json")).read_text())["id"]
        ),
        "two trial folders hold the same trial",
    ),
    "n_attempts 1, three trials": (
        lambda job: [_clone_trial(job, s, f"id-{s}") for s in ("b", "c")],
        "it says n_attempts 1, yet holds 3 trials of task 'hello-pass'",
    ),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_job_whose_facts_disagree_is_refused_naming_the_disagreement(tmp_path, edit):
    job = shutil.copytree(FIXTURES / "demo-oracle", tmp_path / "job")
    change, message = EDITS[edit]
    change(job)
    tasks = sorted(EXPECTED_TASKS)
    code, err = _import_harbor_job(tmp_path, job, tasks, tmp_path / "run")
    line = one_line(err)
    assert code == 2 and message in line, line
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("first, second", [(False, 0), (True, 1)])
def test_settings_read_once_per_configuration_still_tell_false_from_0(tmp_path, first, second):
    """Two trials alike but for one setting that equals the other's in Python (False == 0,
    True == 1): the second is not taken for the first's configuration unchecked."""
    job = shutil.copytree(FIXTURES / "demo-oracle", tmp_path / "job")
    _clone_trial(job, "b", "id-b")
    one, two = sorted(job.glob("hello-pass__*"))
    for trial, value in ((one, first), (two, second)):
        doc = json.loads((trial / "result.json").read_text())
        doc["config"]["install_only"] = value
        (trial / "result.json").write_text(json.dumps(doc))
    with pytest.raises(AfbenchError) as caught:
        read_harbor_job(job)
    assert "true or false" in str(caught.value), caught.value
    assert "install_only" in str(caught.value) and two.name in str(caught.value)


EXPECTED_TASKS = [
    "hello-pass",
    "agent-timeout",
    "solve-fails",
    "verifier-timeout",
    "no-reward",
    "empty-reward",
    "bad-reward",
    "reward-json",
    "no-solution",
]


def test_an_unreadable_trial_folder_is_an_error_never_absent(tmp_path):
    """Run as another user (root reads everything): the modules are imported first, then a
    child gives up root and imports the job."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to another user")
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="afbench-unreadable-"))
    folder.chmod(0o755)
    job = shutil.copytree(FIXTURES / "demo-oracle", folder / "job")
    trial = next(job.glob("hello-pass__*"))
    trial.chmod(0o000)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nobody
        try:
            os.setgid(65534)
            os.setuid(65534)
            try:
                read_harbor_job(job)
                message = "read"
            except AfbenchError as exc:
                message = str(exc)
            os.write(write, message.encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        message = pipe.read()
    trial.chmod(0o755)
    shutil.rmtree(folder)
    assert "cannot read trial result.json: Permission denied" in message, message
    assert str(trial) in message


def test_a_very_large_job_folder_is_refused_in_one_bounded_line(tmp_path, monkeypatch):
    """Refused in one line of bounded length, after work linear in the trials (the reader's
    promise, counted rather than timed): each result.json is read once, and the settings of
    the trials' one configuration are worked out once."""
    job = tmp_path / "job"
    shutil.copytree(FIXTURES / "demo-nop", job)
    trial = next(job.glob("hello-pass__*"))
    doc = json.loads((trial / "result.json").read_text())
    for i in range(1500):  # one task, n_attempts 1, and 1501 trials of it
        name = f"hello-pass__{i:07d}"
        (job / name).mkdir()
        (job / name / "result.json").write_text(
            json.dumps(
                dict(
                    doc, trial_name=name, id=f"id-{i}", config=dict(doc["config"], trial_name=name)
                )
            )
        )
    reads, settings = Counter(), []
    read_once, settings_of = fsutil.read_file_once, harborjobs.trial_settings

    def counted_read(path, *args, **kwargs):
        reads[path] += 1
        return read_once(path, *args, **kwargs)

    def counted_settings(*args, **kwargs):
        settings.append(args[1])
        return settings_of(*args, **kwargs)

    monkeypatch.setattr(fsutil, "read_file_once", counted_read)
    monkeypatch.setattr(harborjobs, "trial_settings", counted_settings)
    with pytest.raises(AfbenchError) as info:
        read_harbor_job(job)
    trials = {str(p / "result.json") for p in job.iterdir() if p.is_dir()}
    assert len(trials) == 1501 and trials <= set(reads), sorted(reads)[:5]
    assert set(reads.values()) == {1} and len(settings) == 1, (reads.most_common(3), settings[:3])
    message = str(info.value)
    assert "holds 1501 trials of task 'hello-pass'" in message and len(message) < 1500, message


@EXAMPLES_150
@given(index=st.integers(0, 20), value=prop.json_values)
def test_any_verdict_is_classified_or_refused(index, value):
    assert prop.check_verdict(index, value) in ("accepted", "rejected", "error")


@EXAMPLES_150
@given(index=st.integers(0, 20), value=prop.json_values | st.just(float("nan")))
def test_any_trial_result_is_classified_or_refused(index, value):
    prop.check_trial(index, value)


def test_an_import_records_each_folder_as_the_config_names_it(tmp_path):
    """A storage plugin hands the import its local copy of each folder (--path); the tables
    record the folder as the config names it (--path-name), wherever the copy was."""
    from conftest import _selection_for, job

    staged = tmp_path / ".snakemake" / "storage" / "s3" / "bucket"
    jobs = sorted(FIXTURES.iterdir())
    for folder in jobs:
        shutil.copytree(folder, staged / "runs" / folder.name)
    verdicts = staged / "verdicts"
    verdicts.mkdir()
    (verdicts / "a.json").write_bytes(verdict(task_id="demo_s01_t001"))
    tasks = sorted({t.name.split("__")[0] for j in jobs for t in j.iterdir() if t.is_dir()})
    selection = _selection_for(tmp_path, [*tasks, "demo_s01_t001"])
    for kind, folders in (("harbor", [f"runs/{j.name}" for j in jobs]), ("verdicts", ["verdicts"])):
        out = tmp_path / kind
        job(
            *["import-run", f"--selection={selection}", f"--name={kind}", f"--kind={kind}"],
            *[f"--path={staged / f}" for f in folders],
            *[f"--path-name=resources/{f}" for f in folders],
            "--budget-usd=100",
            *[f"--{t}={out / f'{t}.csv'}" for t in ("outcomes", "attempts")],
            f"--summary={out / 'summary.json'}",
        )
        written = "".join(p.read_text() for p in sorted(out.iterdir()))
        assert str(staged) not in written and ".snakemake" not in written
        for folder in folders:
            assert f"resources/{folder}/" in written
        with pytest.raises(AfbenchError, match="one per --path"):
            job(
                *["import-run", f"--selection={selection}", "--name=x", f"--kind={kind}"],
                *[f"--path={staged / f}" for f in folders],
                *[f"--path-name=resources/{f}" for f in [*folders, "one-too-many"]],
                "--budget-usd=100",
                *[f"--{t}={tmp_path / f'x-{t}.csv'}" for t in ("outcomes", "attempts")],
                f"--summary={tmp_path / 'x.json'}",
            )


# ------------------------------------------------------------------ afbench's own reruns


def executed_attempt(
    root: Path,
    task: str,
    attempt: int,
    outcome: str,
    cost: float | None,
    agent: str = "oracle",
    selection_sha256: str = "5" * 64,
) -> dict:
    """One afbench attempt of `task` as `snakemake execute` leaves it: its own Harbor job under
    `root`/jobs (demo-oracle's trial of the task alone, with a job id and trial id of its own,
    run by `agent`, its outcome made `outcome`: no reward beside an ApiRateLimitError for
    "error", a reward of 1 or 0 otherwise; its cost `cost`), and the trial receipt naming it."""
    from afbench.kinds import TRIAL_RECEIPT
    from afbench.kinds.execution import TRIAL

    from conftest import declared

    name = f"{agent}-{task}-attempt-{attempt}"
    job = copy_job(FIXTURES / "demo-oracle", root / "jobs" / name, job_id=name)
    for trial in job.iterdir():
        if trial.is_dir() and not trial.name.startswith(f"{task}__"):
            shutil.rmtree(trial)

    def made(doc):
        doc["config"]["agent"]["name"] = doc["agent_info"]["name"] = agent
        doc["agent_result"]["cost_usd"] = cost
        rate_limited = {
            "exception_type": "ApiRateLimitError",
            "exception_message": "rate limited",
            "exception_traceback": "",
            "occurred_at": doc["finished_at"],
        }
        doc["exception_info"] = rate_limited if outcome == "error" else None
        reward = {"accepted": 1.0, "rejected": 0.0}.get(outcome)
        doc["verifier_result"] = None if reward is None else {"rewards": {"reward": reward}}

    edit_trials(job, made)
    [result] = trial_results(job)
    return declared(
        TRIAL_RECEIPT,
        plan={
            "selection": {"name": "s", "selection_sha256": selection_sha256, "tasks": 6},
            "agent": agent,
            "model": None,
            "sha256": "0" * 64,
        },
        task_id=task,
        attempt=attempt,
        job_name=name,
        job_dir=str(job),
        trials=[
            declared(
                TRIAL, trial_name=result.parent.name, task_id=task, outcome=outcome, cost_usd=cost
            )
        ],
        outcome=outcome,
    )


def import_executed(
    tmp_path: Path, receipts: list[dict], tasks: list[str], *, reruns: bool, out: Path | None = None
):
    """The executed run of `receipts` (their job folders) on a selection of `tasks`, as
    `afbench job import-executed` writes it (into `out`), its attempts replacing one another
    (`reruns`, a sealed sequential comparison's) or each its own; returns (summary, outcomes,
    attempts) read back from the files."""
    from afbench.cli.actions import executed_job_folders, import_run

    from conftest import _selection_for

    out = out or tmp_path / ("reruns" if reruns else "attempts")
    outputs = {key: out / name for key, name in runs_files().items()}
    import_run(
        _selection_for(tmp_path, tasks),
        "executed",
        "harbor",
        executed_job_folders(receipts),
        None,
        outputs,
        reruns=receipts if reruns else (),
    )
    with open(outputs["outcomes"], newline="") as f:
        outcomes = {row["task_id"]: row for row in csv.DictReader(f)}
    with open(outputs["attempts"], newline="") as f:
        attempts = list(csv.DictReader(f))
    return load(outputs["summary"]), outcomes, attempts


def runs_files() -> dict[str, str]:
    from afbench.cli.actions import RUN_FILES

    return RUN_FILES


def test_an_afbench_rerun_replaces_the_errored_attempt_and_the_outcome_is_the_decisions(
    tmp_path,
):
    """A sealed comparison reran two errored trials: solve-fails erred, then was rejected;
    no-reward erred twice. Each task's outcome is that of the attempt that stands, the one the
    decision reads (solve-fails rejected, never error), counted as one attempt; the replaced
    attempts are recorded on it, in attempts.csv and the configuration's reruns, and every
    dollar paid is still in the costs. The same job folders as independent attempts (no
    reruns: Harbor's pass@k) keep the pooled rule."""
    from afbench.execution import sequential

    receipts = [
        executed_attempt(tmp_path, "solve-fails", 1, "error", 1.5),
        executed_attempt(tmp_path, "solve-fails", 2, "rejected", 2.0),
        executed_attempt(tmp_path, "hello-pass", 1, "accepted", 1.0),
        executed_attempt(tmp_path, "no-reward", 1, "error", 0.5),
        executed_attempt(tmp_path, "no-reward", 2, "error", 0.25),
    ]
    tasks = ["solve-fails", "hello-pass", "no-reward"]
    summary, outcomes, attempts = import_executed(tmp_path, receipts, tasks, reruns=True)
    for task in tasks:
        stands = sequential.standing_attempt([r for r in receipts if r["task_id"] == task])
        assert outcomes[task]["outcome"] == stands["outcome"], task
    shown = {t: (row["outcome"], row["attempts"], row["cost_usd"]) for t, row in outcomes.items()}
    assert shown == {
        "solve-fails": ("rejected", "1", "3.5"),
        "hello-pass": ("accepted", "1", "1.0"),
        "no-reward": ("error", "1", "0.75"),
    }
    assert outcomes["solve-fails"]["trial_dirs"].startswith(receipts[1]["job_dir"] + "/")
    # every trial that ran is a row of attempts.csv; a replaced one names the job that stands
    replaced = {a["trial_dir"].split("/")[-2]: a["replaced_by"] for a in attempts}
    assert replaced == {
        "oracle-solve-fails-attempt-1": "oracle-solve-fails-attempt-2",
        "oracle-solve-fails-attempt-2": "",
        "oracle-hello-pass-attempt-1": "",
        "oracle-no-reward-attempt-1": "oracle-no-reward-attempt-2",
        "oracle-no-reward-attempt-2": "",
    }
    # money unchanged: what the trials cost, in attempts.csv and in outcomes.csv
    paid = sum(t["cost_usd"] for r in receipts for t in r["trials"])
    assert sum(float(a["cost_usd"]) for a in attempts) == paid == 5.25
    assert sum(float(row["cost_usd"]) for row in outcomes.values()) == paid
    [config] = summary["configurations"]
    assert config["counts"]["rejected"] == 1 and config["counts"]["error"] == 1
    assert config["attempts"]["total"] == 3 and config["attempts"]["per_task"] == [1]
    assert config["budget_audit"]["records_checked"] == 5
    assert config["retries"]["retries"] == 0  # Harbor retried nothing: not a retry of Harbor's
    reruns = config["reruns"]
    assert reruns["replaced_attempts"] == 2 and reruns["replaced_cost_usd"] == 2.0
    assert [
        (t["task_id"], t["job_name"], t["attempt"], t["outcome"], [
            (r["job_name"], r["attempt"], r["outcome"], r["cost_usd"]) for r in t["replaced"]
        ])
        for t in reruns["rerun_trials"]
    ] == [
        ("no-reward", "oracle-no-reward-attempt-2", 2, "error", [
            ("oracle-no-reward-attempt-1", 1, "error", 0.5)
        ]),
        ("solve-fails", "oracle-solve-fails-attempt-2", 2, "rejected", [
            ("oracle-solve-fails-attempt-1", 1, "error", 1.5)
        ]),
    ]  # fmt: skip
    assert reruns["rerun_trials"][1]["replaced"][0]["reason"].startswith("ApiRateLimitError")
    assert (
        "replaced" in summary["attempt_rule"]
        and sequential.STANDING_RULE in (summary["attempt_rule"])
    )
    # the summary holds to its tables, the replaced rows counted apart
    tables = {
        "outcomes": Counter(
            (config["configuration"], r["outcome"], False) for r in outcomes.values()
        ),
        "attempts": Counter(
            (config["configuration"], a["outcome"], a["replaced_by"] != "") for a in attempts
        ),
    }
    assert runs.run_of_tables(summary, tables) == []
    forged = copy.deepcopy(summary)
    forged["configurations"][0]["reruns"]["replaced_attempts"] = 0
    [problem] = runs.run_of_tables(forged, tables)
    assert problem.field == "configurations[0].reruns.replaced_attempts"
    # the same folders as attempts each its own: Harbor's pass@k rule pools them
    pooled, pooled_outcomes, _ = import_executed(tmp_path, receipts, tasks, reruns=False)
    assert pooled_outcomes["solve-fails"]["outcome"] == "error"
    assert pooled_outcomes["solve-fails"]["attempts"] == "2"
    assert pooled["configurations"][0]["reruns"] is None


def test_pass_at_k_counts_the_attempt_that_stands_not_the_one_it_replaced(tmp_path):
    from afbench.cli.actions import import_run

    from conftest import _selection_for

    receipts = [
        executed_attempt(tmp_path, "solve-fails", 1, "error", 1.0),
        executed_attempt(tmp_path, "solve-fails", 2, "rejected", 1.0),
        executed_attempt(tmp_path, "hello-pass", 1, "accepted", 1.0),
    ]
    tasks = ["solve-fails", "hello-pass"]
    summary, _, _ = import_executed(tmp_path, receipts, tasks, reruns=True)
    assert summary["configurations"][0]["pass_at_k"] == {"1": 0.5}
    pooled, _, _ = import_executed(tmp_path, receipts, tasks, reruns=False)
    assert pooled["configurations"][0]["pass_at_k"] is None  # an attempt without a verdict
    # a rerun that ran in another configuration than the attempt it replaced is refused
    edit_trials(
        Path(receipts[1]["job_dir"]), lambda doc: doc["config"].update(timeout_multiplier=2.0)
    )
    out = tmp_path / "refused"
    with pytest.raises(AfbenchError) as refused:
        import_run(
            _selection_for(tmp_path, tasks),
            "executed",
            "harbor",
            [Path(r["job_dir"]) for r in receipts],
            None,
            {key: out / name for key, name in runs_files().items()},
            reruns=receipts,
        )
    [problem] = refused.value.problems
    assert problem.field == "configuration" and "ran in different configurations" in str(problem)
    assert problem.file.startswith(receipts[0]["job_dir"] + "/") and not out.exists()
