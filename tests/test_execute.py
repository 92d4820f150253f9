"""`snakemake execute`: the plans' trials run through Snakemake (on a real one-node SLURM
cluster when one is up, in Harbor's own docker environment on its node), imported per
configuration and shown in the report; money is never spent by accident; a killed controller
resumes without rerunning a finished trial, and no container is left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from conftest import (
    HARBOR,
    SNAKEMAKE,
    demo_revision,
    docker_leftovers,
    docker_skip_reason,
    harbor_skip_reason,
    project,
    slurm_skip_reason,
    snakemake,
    snakemake_env,
)

pytestmark = pytest.mark.snakemake
TASKS = ["demo_s01_t001", "demo_s01_t002"]


def overlay(root: Path, items: list[dict], **execute) -> list[str]:
    """Config over config/demo.yaml: a two-task selection, plans for `items`, their trials."""
    cfg = {
        "selections": {"exec-two": {"tasks": TASKS}},
        "plans": {
            "environment_type": "docker",  # Harbor's own, on the node (make docker)
            "harbor": str(HARBOR),
            "items": [{"selection": "exec-two", **item} for item in items],
        },
        "execute": {
            "items": [{"selection": "exec-two", **item} for item in items],
            **execute,
        },
    }
    (root / "exec.yaml").write_text(yaml.safe_dump(cfg))
    return ["--configfile", "config/demo.yaml", "exec.yaml"]


def receipts(root: Path) -> dict[str, dict]:
    found = (root / "results" / demo_revision() / "execute").glob("*/*/*/*.json")
    return {str(p.relative_to(root)): json.loads(p.read_text()) for p in found}


@pytest.fixture
def planned_project(tmp_path):
    root = project(tmp_path)
    return root


def test_model_agents_need_the_opt_in_and_a_ceiling(planned_project):
    root = planned_project
    paid = [{"agent": "nop"}, {"agent": "claude-code", "model": "anthropic/claude-opus-4-1"}]
    args = overlay(root, paid)
    snakemake(root, "plans", *args)  # plans are cheap and safe; trials are not
    refused = snakemake(root, "execute", *args, check=False)
    assert refused.returncode != 0
    assert "calls a paid model; refused without execute.allow_model_agents" in (
        refused.stdout + refused.stderr
    )
    args = overlay(root, paid, allow_model_agents=True, max_cost_usd=300)
    dry = snakemake(root, "execute", "-n", *args, check=False)
    assert "afbench execute: 4 trial(s), 2 with a model agent; worst-case cost USD 400" in (
        dry.stdout + dry.stderr
    )
    assert dry.returncode != 0
    assert "over the ceiling execute.max_cost_usd = 300" in dry.stdout + dry.stderr
    assert not (root / "results" / demo_revision() / "execute").exists()
    assert not (root / "results" / demo_revision() / "jobs").exists()  # no Harbor job began


def test_a_formal_run_needs_pinned_image_digests(planned_project):
    root = planned_project
    args = overlay(root, [{"agent": "nop"}])
    extra = root / "formal.yaml"
    extra.write_text("release: {synthetic: false}\n")
    snakemake(root, "plans", *args, str(extra))
    refused = snakemake(root, "execute", "-n", *args, str(extra), check=False)
    assert refused.returncode != 0
    assert "refused while the image digests are unpinned" in refused.stdout + refused.stderr


@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.slurm
def test_execute_on_slurm_scores_nop_0_and_oracle_1_and_resumes_after_a_kill(tmp_path):
    reason = harbor_skip_reason() or docker_skip_reason() or slurm_skip_reason()
    if reason:
        pytest.skip(reason)
    root = project(tmp_path)
    args = [*overlay(root, [{"agent": "nop"}, {"agent": "oracle"}]), "--profile", "profiles/slurm"]
    # everything but the trials is light work that runs where Snakemake runs (localrules)
    snakemake(root, "plans", *args)
    run = subprocess.Popen(
        [SNAKEMAKE, "execute", *args],
        cwd=root,
        env=snakemake_env(),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not receipts(root) and run.poll() is None:
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)  # the controller dies; its SLURM jobs go on
    first = run.communicate()[0]
    assert "submitted" in first.lower() and "slurm" in first.lower(), first[-3000:]
    while subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip():
        assert time.monotonic() < deadline + 120, "SLURM jobs did not finish"
        time.sleep(1)
    jobs = root / "results" / demo_revision() / "jobs"
    finished = {  # every trial that has its result: it must never run again
        p.parent.name: p.read_bytes() for p in jobs.glob("*/*/result.json") if p.parent.is_dir()
    }
    assert finished
    snakemake(root, "--unlock", *args)
    done = snakemake(root, "execute", *args)
    assert "afbench execute: 4 trial(s), 0 with a model agent" in done.stdout + done.stderr
    trials = receipts(root)
    assert len(trials) == 4
    by_agent = {}
    for receipt in trials.values():
        [trial] = receipt["trials"]
        by_agent.setdefault(receipt["plan"]["agent"], []).append(trial["reward"])
        result = Path(receipt["job_dir"]) / trial["trial_name"] / "result.json"
        assert json.loads(result.read_text())["config"]["environment"]["type"] == "docker"
        if trial["trial_name"] in finished:  # kept by Harbor's resume, not rerun
            assert result.read_bytes() == finished[trial["trial_name"]]
    assert by_agent == {"nop": [0, 0], "oracle": [1, 1]}
    still_there = {p.parent.name for p in jobs.glob("*/*/result.json")}
    assert set(finished) <= still_there
    out = root / "results" / demo_revision()
    summary = json.loads((out / "runs/executed-exec-two/summary.json").read_text())
    counts = {c["configuration"].split()[0]: c["counts"] for c in summary["configurations"]}
    assert counts["nop"]["rejected"] == 2 and counts["oracle"]["accepted"] == 2
    html = (out / "report/executed/index.html").read_text()
    assert "executed-exec-two" in html and "oracle 1.0.0" in html
    assert docker_leftovers(jobs) == []
