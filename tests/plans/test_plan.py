"""Harbor 0.22.0 run plans (afbench.plans.plan): the exact argv, the agent and repository checks,
stratified selections, environment types."""

from __future__ import annotations

from pathlib import Path

import pytest

from afbench.core.config import validate_config
from afbench.core.errors import AfbenchError
from afbench.plans.plan import build_plan
from afbench.tasks.catalog import select_tasks

from conftest import (
    git,
    make_git_repo,
)


def test_build_plan_refuses_an_environment_type_the_schema_never_saw(tmp_path, demo_yaml):
    from afbench.release.identity import identity

    release = identity(validate_config(demo_yaml)["release"])
    catalog = {"release": release, "license": "x", "tasks": [{"task_id": "t1"}]}
    selection = {"name": "s", "task_ids": ["t1"], "selection_sha256": "0" * 64, "release": release}
    with pytest.raises(AfbenchError, match="not a Harbor 0.22.0 environment type"):
        build_plan(
            catalog,
            selection,
            "nop",
            None,
            str(tmp_path),
            "tasks",
            str(tmp_path / "jobs"),
            "--help",
        )


@pytest.fixture
def upstream(tmp_path, release_files):
    return make_git_repo(tmp_path / "autoformbench", release_files)


def _plan(cfg, fetched_catalog, repo, agent="nop", model=None, jobs=Path("/srv/jobs")):
    """A plan for the catalog as if its release were pinned at cfg's revision."""
    fetched_catalog = {
        **fetched_catalog,
        "release": {**fetched_catalog["release"], "revision": cfg["release"]["revision"]},
    }
    selection = select_tasks(fetched_catalog, "pair", tasks=["demo_s01_t001", "demo_s02_t001"])
    return build_plan(
        fetched_catalog, selection, agent, model, str(repo), "tasks", str(jobs), "docker"
    )


def test_nop_plan_argv_is_exact(fetched_config, fetched_catalog, upstream):
    repo, commit = upstream
    fetched_config["release"]["revision"] = commit
    plan = _plan(fetched_config, fetched_catalog, repo)
    task = plan["tasks"][0]
    job = task["job_name"]
    assert task["export"]["argv"] == [
        "python",
        f"{repo}/harbor/export.py",
        "--problem",
        "demo_s01_t001",
    ]
    assert task["check"]["argv"][-1] == "--check"
    assert task["run"]["argv"] == [
        "harbor",
        "run",
        "-p",
        f"{repo}/tasks/demo_s01_t001",
        "-a",
        "nop",
        "--job-name",
        job,
        "-o",
        "/srv/jobs",
        "-n",
        "1",
        "-k",
        "1",
        "-y",
        "-q",
        "-e",
        "docker",
    ]
    assert task["run"]["env"] == {"HARBOR_TELEMETRY": "0"}
    assert len({t["job_name"] for t in plan["tasks"]}) == 2
    assert plan["executed"] is False and plan["dollar_cap_enforced"] is False
    assert plan["expected_reward"] == 0
    assert plan["timeouts"]["agent_s"] == 86400 and plan["timeouts"]["verifier_s"] == 6000
    req = plan["requirements"]
    assert req["lean"] == "v4.32.2" and req["harbor"] == "0.22.0"
    assert req["mathlib"] == "905b95818eb32af7874a58b427f50c1711a5e96c"
    assert req["image_digests_required_for_formal_run"] is True
    assert req["formal_run_ready"] is False


def test_real_agent_needs_provider_model(fetched_config, fetched_catalog, upstream):
    repo, commit = upstream
    fetched_config["release"]["revision"] = commit
    plan = _plan(fetched_config, fetched_catalog, repo, "claude-code", "anthropic/claude-opus-4-1")
    argv = plan["tasks"][0]["run"]["argv"]
    assert argv[argv.index("-a") + 1] == "claude-code"
    assert argv[argv.index("-m") + 1] == "anthropic/claude-opus-4-1"
    assert plan["expected_reward"] is None
    with pytest.raises(AfbenchError, match="needs an explicit model"):
        _plan(fetched_config, fetched_catalog, repo, "claude-code")
    with pytest.raises(AfbenchError, match="provider/model"):
        _plan(fetched_config, fetched_catalog, repo, "claude-code", "opus")
    with pytest.raises(AfbenchError, match="calls no model"):
        _plan(fetched_config, fetched_catalog, repo, "nop", "anthropic/x")
    with pytest.raises(AfbenchError, match="unknown Harbor 0.22.0 agent"):
        _plan(fetched_config, fetched_catalog, repo, "--rm")


def test_repository_checks(fetched_config, fetched_catalog, upstream, tmp_path):
    repo, commit = upstream
    with pytest.raises(AfbenchError, match="not at the pinned revision"):
        _plan(fetched_config, fetched_catalog, repo)  # config pins another commit
    fetched_config["release"]["revision"] = commit
    with pytest.raises(AfbenchError, match="absolute"):
        _plan(fetched_config, fetched_catalog, Path("relative/path"))
    with pytest.raises(AfbenchError, match="does not exist"):
        _plan(fetched_config, fetched_catalog, tmp_path / "nowhere")
    (tmp_path / "plain").mkdir()
    with pytest.raises(AfbenchError, match="not the top of a git checkout"):
        _plan(fetched_config, fetched_catalog, tmp_path / "plain")
    git(repo, "rm", "-q", "harbor/export.py")
    git(repo, "commit", "-qm", "drop exporter")
    fetched_config["release"]["revision"] = git(repo, "rev-parse", "HEAD")
    with pytest.raises(AfbenchError, match="no exporter"):
        _plan(fetched_config, fetched_catalog, repo)


def test_a_stratified_selection_flows_into_a_plan(fetched_config, fetched_catalog, upstream):
    repo, commit = upstream
    fetched_catalog = {
        **fetched_catalog,
        "release": {**fetched_catalog["release"], "revision": commit},
    }
    selection = select_tasks(fetched_catalog, "pilot", stratified={"tasks": 12, "seed": 3})
    assert sum(selection["criteria"]["stratified"]["allocation"].values()) == 12
    plan = build_plan(
        fetched_catalog, selection, "nop", None, str(repo), "tasks", "/srv/jobs", "docker"
    )
    assert [t["task_id"] for t in plan["tasks"]] == selection["task_ids"]
    assert plan["selection"]["selection_sha256"] == selection["selection_sha256"]
    assert all(t["job_name"].endswith(selection["selection_sha256"][:8]) for t in plan["tasks"])
