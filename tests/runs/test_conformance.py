"""A run's protocol certificate (afbench.runs.conformance): each departure named with its reason,
the tasks and the verification certified per trial, exported tasks' images and checksums."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from afbench.core.config import load_config
from afbench.kinds import CATALOG, SELECTION
from afbench.kinds.tasks import TASK as TASK_ROW
from afbench.release import demo
from afbench.release.identity import identity
from afbench.runs import conformance
from afbench.runs.harbor_jobs import read_harbor_job

from conftest import (
    FIXTURES,
    HARBOR,
    REPO,
    TASK,
    attempt,
    declared,
    docker_leftovers,
    job,
    plan_for,
    trial_skip_reason,
)


# --- the protocol-conformance certificate -----------------------------------------------------
def settings(**changed) -> dict:
    from afbench.core.harbor_files import trial_settings

    base = trial_settings({"agent": {"name": "nop"}, "environment": {"type": "docker"}}, "x")
    return {**base, **changed}


def test_the_protocol_settings_each_name_their_reason():
    assert conformance.settings_reasons(settings()) == []
    assert conformance.settings_reasons(settings(timeout_multiplier=2.0)) == [
        f"changed timeout: the {phase} timeout is multiplied by 2 (timeout_multiplier); the "
        "protocol keeps the upstream per-task timeouts"
        for phase in ("agent", "verifier")
    ]
    only_verifier = settings(timeout_multiplier=2.0, agent_timeout_multiplier=1.0)
    assert [r.split(":")[1] for r in conformance.settings_reasons(only_verifier)] == [
        " the verifier timeout is multiplied by 2 (timeout_multiplier); the protocol keeps the "
        "upstream per-task timeouts"
    ]
    assert conformance.settings_reasons(settings(**{"agent.override_timeout_sec": 10.0})) == [
        "changed timeout: agent.override_timeout_sec is 10.0; the protocol sets none"
    ]
    assert conformance.settings_reasons(settings(**{"agent.kwargs": {"hint": "use simp"}})) == [
        "agent kwargs: agent.kwargs is {'hint': 'use simp'}; the protocol gives the agent none"
    ]
    assert conformance.settings_reasons(settings(extra_instructions=["try ring"])) == [
        "a hint: extra_instructions is ['try ring']; the protocol gives the agent none"
    ]
    custom = settings(**{"environment.type": None, "environment.import_path": "m:Env"})
    assert conformance.settings_reasons(custom) == [
        "environment type custom (m:Env), not the protocol's (docker or singularity)"
    ]
    assert conformance.settings_reasons(settings(**{"environment.override_cpus": 64.0})) == [
        "changed environment: environment.override_cpus is 64.0"
    ]


def test_the_tasks_and_the_verification_of_a_run_are_certified_per_trial():
    exported = {"tasks": {TASK: {"checksum": "a" * 64, "images": ["base@sha256:" + "1" * 64]}}}
    release = {"images": [{"role": "task-environment", "digest": None}]}
    ok = conformance.certify({"settings": settings()}, [attempt("a" * 64)], exported, release)
    assert (ok["conformant"], ok["compared"]) == (True, "compared 1 of 1 trials")
    changed = conformance.certify({"settings": settings()}, [attempt("b" * 64)], exported, release)
    assert changed["conformant"] is False
    assert changed["reasons"][0].startswith(f"task {TASK} differs from the exporter's output")
    none = conformance.certify({"settings": settings()}, [attempt("a" * 64)], None, release)
    assert (none["conformant"], none["status"]) == (None, "not certified")  # never conformant
    assert none["checks"]["task_checksums"]["status"] == "not certified"
    assert none["reasons"][0].startswith("task checksums not certified: no exporter output")
    # exporter output, but no trial recorded a checksum (a killed job): compared none
    killed = conformance.certify({"settings": settings()}, [attempt(None)], exported, release)
    assert (killed["conformant"], killed["compared"]) == (None, "compared 0 of 1 trials")
    assert killed["reasons"] == [
        f"task checksums not certified: compared 0 of 1 trials; 1 recorded no task checksum "
        f"(e.g. {TASK}__x, incomplete: no result.json; Harbor writes it with the trial's "
        "result.json)"
    ]
    # a departure outweighs a check that compared none: not conformant, both named
    both = conformance.certify(
        {"settings": settings(timeout_multiplier=2.0)}, [attempt(None)], exported, release
    )
    assert both["conformant"] is False and len(both["reasons"]) == 3
    assert both["reasons"][2].startswith("task checksums not certified")
    unverified = conformance.certify(
        {"settings": settings()}, [attempt("a" * 64, disable=True)], exported, release
    )
    assert unverified["reasons"] == [
        f"verification disabled (verifier.disable) for 1 of 1 trial(s), e.g. {TASK}__x"
    ]
    custom = conformance.certify(
        {"settings": settings()}, [attempt("a" * 64, import_path="v:Mine")], exported, release
    )
    assert custom["reasons"] == [
        "changed verification: verifier.import_path is 'v:Mine' for 1 trial(s)"
    ]
    for digest, named in (("1" * 64, True), ("2" * 64, False)):
        pinned = {"images": [{"role": "task-environment", "digest": f"sha256:{digest}"}]}
        got = conformance.certify({"settings": settings()}, [attempt("a" * 64)], exported, pinned)
        assert got["conformant"] is named, got["reasons"]


def test_an_exported_tasks_images_are_its_from_lines_and_docker_images(tmp_path):
    (tmp_path / "environment").mkdir()
    (tmp_path / "environment/Dockerfile").write_text(
        "FROM --platform=linux/amd64 base@sha256:abc AS build\nRUN x\nfrom other:1\n"
    )
    (tmp_path / "task.toml").write_text(
        '[environment]\ndocker_image = "env:1"\n[verifier.environment]\ndocker_image = "v:2"\n'
    )
    assert conformance.task_images(tmp_path) == ["base@sha256:abc", "env:1", "other:1", "v:2"]


# ------------------------------------------------------------------ certificates of real folders
DOCKER_JOBS = REPO / "tests" / "fixtures" / "harbor-0.26.0-docker-jobs"


def certified(job_dir: Path, exported: dict | None) -> dict:
    from afbench.runs.summary import summarize_run

    attempts = read_harbor_job(job_dir)
    release = {"name": "t", "revision": "a" * 40, "images": []}
    chosen = {
        "name": "s",
        "selection_sha256": "0" * 64,
        "task_ids": sorted({a["task_id"] for a in attempts}),
    }
    summary, _ = summarize_run("r", "harbor", chosen, attempts, 200, release)
    return conformance.certify_run(summary, attempts, "harbor", exported)


def checksums_of(job_dir: Path) -> dict:
    tasks = {}
    for result in job_dir.glob("*/result.json"):
        doc = json.loads(result.read_text())
        tasks[doc["task_name"]] = {"checksum": doc["task_checksum"], "images": []}
    return {"release": {"revision": "a" * 40}, "tasks": tasks}


def test_a_job_killed_before_any_result_is_not_certified(tmp_path):

    job_dir = tmp_path / "scripted"
    shutil.copytree(DOCKER_JOBS / "scripted", job_dir)
    exported = checksums_of(job_dir)
    for name in ("result.json", "job.log"):  # killed before it wrote either
        (job_dir / name).unlink()
    for trial in job_dir.glob("*/"):
        (trial / "result.json").unlink()
        config = json.loads((trial / "config.json").read_text())
        config["agent"]["kwargs"] = {}  # the plan's run gives the agent nothing
        (trial / "config.json").write_text(json.dumps(config))
    summary = certified(job_dir, exported)
    [configuration] = summary["configurations"]
    assert configuration["counts"]["incomplete"] == 4
    certificate = configuration["conformance"]
    assert (summary["conformant"], summary["certification"]) == (None, "not certified")
    assert (certificate["conformant"], certificate["status"]) == (None, "not certified")
    assert certificate["task_checksums"]["compared"] == 0
    assert {k: c["status"] for k, c in certificate["checks"].items()} == {
        "settings": "passed",
        "verification": "passed",
        "retries": "not certified",
        "task_checksums": "not certified",
    }
    assert certificate["reasons"] == [
        "retries not certified: Harbor may have retried 4 trial(s) (retry.max_retries 1) and "
        "its job.log, which alone names them, is absent",
        "task checksums not certified: compared 0 of 4 trials; 4 recorded no task checksum (e.g. "
        "demo_s01_t001__nYP4H63, incomplete: no result.json; Harbor writes it with the trial's "
        "result.json)",
    ]
    assert configuration["harbor_jobs"][0]["incomplete"].startswith("no job result.json")


def test_retries_are_a_departure_named_with_their_count_and_shift():
    summary = certified(DOCKER_JOBS / "scripted", checksums_of(DOCKER_JOBS / "scripted"))
    [configuration] = summary["configurations"]
    checks = configuration["conformance"]["checks"]
    assert checks["task_checksums"]["status"] == "passed"  # every trial ran the export
    assert checks["retries"] == {
        "status": "failed",
        "reasons": [
            "retried: Harbor retried 1 trial(s) 1 time(s) (retry.max_retries 1), deleting each "
            "earlier attempt; the protocol runs each trial once (the plans' -k 1, no retries). "
            "Retry shift: the retried trials ended accepted 1 of 1, the trials run once 1 of 3; "
            "first attempts only, the success rate lies in 25.0%..75.0%"
        ],
    }
    assert summary["conformant"] is False


@pytest.mark.parametrize("log", ["cut", "absent"])
def test_retries_harbor_counts_are_a_departure_whatever_job_log_says(tmp_path, log):
    """Harbor 0.22.0 retried the failstart job's trial twice (stats.n_retries 2, retry.
    max_retries 2); its job.log, cut short or gone, names none of them."""
    job_dir = tmp_path / "failstart"
    shutil.copytree(FIXTURES / "demo-failstart", job_dir)
    kept = [ln for ln in (job_dir / "job.log").read_text().splitlines() if "Retrying" not in ln]
    if log == "cut":
        (job_dir / "job.log").write_text("\n".join(kept) + "\n")
    else:
        (job_dir / "job.log").unlink()
    summary = certified(job_dir, checksums_of(job_dir))
    [configuration] = summary["configurations"]
    named = "its job.log names 0" if log == "cut" else "no job.log"
    assert configuration["conformance"]["checks"]["retries"] == {
        "status": "failed",
        "reasons": [
            "retried: Harbor's job result counts retries its job.log does not name (failstart: "
            f"stats.n_retries 2, {named}; retry.max_retries 2): which trials ran more than once "
            "is unknown; the protocol runs each trial once (the plans' -k 1, no retries)"
        ],
    }
    assert (summary["conformant"], configuration["conformance"]["status"]) == (
        False,
        "not conformant",
    )
    # the import does not call the trial run once: its retries are unknown, and no shift
    assert configuration["retries"]["trials_with_unknown_retries"] == 1
    assert configuration["retry_shift"] is None


def test_a_certificate_compares_every_trials_task_or_certifies_nothing(tmp_path):
    """One of the four trials of Harbor 0.22.0's k4 job has its result.json cut (a full disk):
    the other three's checksums match the export, and still nothing is certified of it."""
    job_dir = tmp_path / "k4"
    shutil.copytree(FIXTURES / "demo-k4", job_dir)
    for trial in job_dir.glob("*/"):  # in docker, as the plans run it (it ran on the host: a
        doc = json.loads((trial / "result.json").read_text())  # custom environment, a departure)
        doc["config"]["environment"].update(type="docker", import_path=None)
        (trial / "result.json").write_text(json.dumps(doc))
        (trial / "config.json").write_text(json.dumps(doc["config"]))
    exported = checksums_of(job_dir)
    whole = certified(job_dir, exported)
    assert whole["configurations"][0]["conformance"]["compared"] == "compared 4 of 4 trials"
    assert whole["conformant"] is True
    for cut in (b"", b'{"id": "90bb'):
        result = job_dir / "hello-pass__Xp7VZxi" / "result.json"
        result.write_bytes(cut)
        cut_one = certified(job_dir, exported)
        [configuration] = cut_one["configurations"]
        certificate = configuration["conformance"]
        assert certificate["task_checksums"]["without_checksum"] == 1
        assert certificate["compared"] == "compared 3 of 4 trials"
        assert (cut_one["conformant"], certificate["status"]) == (None, "not certified")
        assert certificate["checks"]["task_checksums"]["status"] == "not certified"
        [reason] = certificate["reasons"]
        assert reason.startswith(
            "task checksums not certified: compared 3 of 4 trials; 1 recorded no task checksum "
            "(e.g. hello-pass__Xp7VZxi, incomplete: "
        )


def test_an_agent_timeout_multiplier_is_named_in_the_label_and_the_certificate(tmp_path):

    job_dir = tmp_path / "nop"
    shutil.copytree(REPO / "tests/fixtures/harbor-0.22.0-jobs/demo-nop", job_dir)
    [result] = job_dir.glob("*/result.json")
    doc = json.loads(result.read_text())
    doc["config"]["agent_timeout_multiplier"] = 2.0  # harbor run --agent-timeout-multiplier 2
    result.write_text(json.dumps(doc))
    [configuration] = certified(job_dir, None)["configurations"]
    assert " | timeout x1 (agent x2) | " in configuration["configuration"]
    assert configuration["conformance"]["checks"]["settings"]["reasons"][0] == (
        "changed timeout: the agent timeout is multiplied by 2 (agent_timeout_multiplier); the "
        "protocol keeps the upstream per-task timeouts"
    )


@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.skipif(trial_skip_reason() is not None, reason=str(trial_skip_reason()))
def test_a_run_as_planned_is_conformant_and_each_change_is_named(checkout, tmp_path):
    """Four real Harbor jobs of one task, run at once: the plan's argv, and the same with a
    doubled timeout, disabled verification, or an agent kwarg; each imported against the
    exporter's output for the task."""

    from conftest import afbench, declared, job

    config = load_config([REPO / "config/demo.yaml"])
    release = identity(config["release"])
    selection = tmp_path / "selection.json"
    selection.write_text(
        json.dumps(
            declared(
                SELECTION, name="infra", task_ids=[TASK], selection_sha256="0" * 64, release=release
            )
        )
    )
    checksums = tmp_path / "checksums.json"
    job(
        "checksum-tasks",
        f"--selection={selection}",
        f"--repository-dir={checkout}",
        "--tasks-dir=tasks",
        f"--output={checksums}",
    )
    changes = {
        "as-planned": [],
        "timeout": ["--timeout-multiplier", "2"],
        "unverified": ["--disable-verification"],
        "hinted": ["--ak", "hint=use decide"],
    }
    runs = {}
    for name, extra in changes.items():
        step = plan_for(checkout, "nop", tmp_path / name)
        argv = [str(HARBOR), *step["run"]["argv"][1:], *extra]
        runs[name] = (
            Path(step["job_dir"]),
            subprocess.Popen(
                argv,
                cwd=step["run"]["cwd"],
                env={**os.environ, **step["run"]["env"]},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
        )
    certificates = {}
    for name, (job_dir, process) in runs.items():
        output = process.communicate(timeout=300)[0]
        assert process.returncode == 0, output[-2000:]
        out = tmp_path / "imported" / name
        afbench(
            "import-run",
            "--selection",
            selection,
            "--name",
            name,
            "--kind",
            "harbor",
            "--path",
            job_dir,
            "--task-checksums",
            checksums,
            "--output-dir",
            out,
        )
        summary = json.loads((out / "summary.json").read_text())
        [configuration] = summary["configurations"]
        certificates[name] = (summary["conformant"], configuration["conformance"]["reasons"])
        assert configuration["conformance"]["task_checksums"]["compared"] == 1
    assert certificates["as-planned"] == (True, [])  # Harbor's task checksum is the export's
    assert certificates["timeout"] == (
        False,
        [
            f"changed timeout: the {phase} timeout is multiplied by 2 (timeout_multiplier); "
            "the protocol keeps the upstream per-task timeouts"
            for phase in ("agent", "verifier")
        ],
    )
    assert certificates["unverified"][0] is False
    [reason] = certificates["unverified"][1]
    assert reason.startswith("verification disabled (verifier.disable) for 1 of 1 trial(s)")
    assert certificates["hinted"] == (
        False,
        ["agent kwargs: agent.kwargs is {'hint': 'use decide'}; the protocol gives the agent none"],
    )
    for name in changes:
        assert docker_leftovers(tmp_path / name) == []


# --- checksum-tasks ------------------------------------------------------------------------------
def test_checksum_tasks_names_the_exporter_under_the_checkout_as_the_config_names_it(tmp_path):
    """The checkout is read where this machine keeps it (--repository-dir, absolute), and the
    record names the exporter as the config names the checkout: two folders, one record."""
    from afbench.core.config import load_config
    from afbench.kinds import SELECTION
    from afbench.release.identity import identity

    release = identity(load_config([REPO / "config/demo.yaml"])["release"])
    selection = tmp_path / "selection.json"
    selection.write_text(
        json.dumps(
            declared(
                SELECTION, name="one", task_ids=[TASK], selection_sha256="0" * 64, release=release
            )
        )
    )
    records = []
    for place in ("here", "there"):
        checkout = tmp_path / place / "demo-upstream"
        demo.build_repository(REPO / "resources/demo-release", checkout)
        output = tmp_path / place / "checksums.json"
        done = subprocess.run(
            [
                str(Path(sys.executable).with_name("afbench")),
                *["job", "checksum-tasks", f"--selection={selection}"],
                f"--repository-dir={checkout}",
                "--repository-name=results/demo-upstream",
                f"--tasks-dir={tmp_path / place / 'exported'}",
                f"--output={output}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        records.append(output.read_bytes())
    assert json.loads(records[0])["exporter"] == "results/demo-upstream/harbor/export.py"
    assert records[0] == records[1]


def test_checksum_tasks_exports_to_the_folder_it_is_given_and_quiet_is_quiet(tmp_path):
    from afbench.core.config import load_config
    from afbench.release.identity import identity
    from afbench.tasks.catalog import select_tasks

    checkout = tmp_path / "demo-upstream"  # its own: nothing exported into it yet
    demo.build_repository(REPO / "resources/demo-release", checkout)
    release = identity(load_config([REPO / "config/demo.yaml"])["release"])
    catalog = write_catalog(tmp_path, release)
    selection = tmp_path / "selection.json"  # selected from the catalog: the two agree
    selection.write_text(json.dumps(select_tasks(json.loads(catalog.read_text()), "one", [TASK])))
    elsewhere = tmp_path / "exported"
    afbench = str(Path(sys.executable).with_name("afbench"))
    argv = [
        afbench,
        "job",
        "checksum-tasks",
        f"--selection={selection}",
        f"--repository-dir={checkout}",
        f"--tasks-dir={elsewhere}",
    ]
    quiet = subprocess.run(
        [*argv, f"--output={tmp_path / 'quiet.json'}", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == "", quiet.stderr
    assert (elsewhere / TASK / "task.toml").is_file()  # exported there, and read from there
    assert not (checkout / "tasks" / TASK).exists()
    said = subprocess.run(
        [*argv, f"--output={tmp_path / 'said.json'}"], capture_output=True, text=True, timeout=120
    )
    # its one summary line; what the exporter prints is shown only when a step fails
    assert said.returncode == 0 and said.stderr.splitlines() == [
        f"task checksums of one: 1 task exported -> {tmp_path / 'said.json'}"
    ]
    assert (tmp_path / "quiet.json").read_bytes() == (tmp_path / "said.json").read_bytes()
    # the plan's own export writes where its harbor run's -p points
    job(
        "write-plan",
        f"--catalog={catalog}",
        f"--selection={selection}",
        "--agent=nop",
        f"--repository-dir={checkout}",
        f"--tasks-dir={elsewhere}",
        f"--jobs-dir={tmp_path / 'jobs'}",
        "--environment-type=docker",
        "--harbor=harbor",
        f"--output={tmp_path / 'plan.json'}",
    )
    [task] = json.loads((tmp_path / "plan.json").read_text())["tasks"]
    assert task["export"]["argv"][-2:] == ["--tasks-dir", str(elsewhere)]
    assert task["run"]["argv"][task["run"]["argv"].index("-p") + 1] == str(elsewhere / TASK)


def write_catalog(tmp_path: Path, release: dict) -> Path:

    path = tmp_path / "catalog.json"
    path.write_text(
        json.dumps(
            declared(
                CATALOG, release=release, license="x", tasks=[declared(TASK_ROW, task_id=TASK)]
            )
        )
    )
    return path
