"""Task catalog, selections and Harbor 0.22.0 plans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from afbench.catalog import select_tasks
from afbench.errors import AfbenchError
from afbench.plan import build_plan

from conftest import (
    afbench,
    catalog_of,
    config_for,
    fetch_release,
    git,
    make_git_repo,
    release_dir,
    write_tree,
)

build_catalog = catalog_of


@pytest.fixture
def catalog(fetched_config):
    return catalog_of(fetched_config)


def test_catalog_counts_links_and_input_hashes(catalog, fetched_config):
    assert catalog["counts"] == {"tasks": 341, "sources": 24, "obligations": 1155}
    task = catalog["tasks"][0]
    assert set(task) == {
        "task_id",
        "source_id",
        "source_ref",
        "target_declaration",
        "n_obligations",
        "workspace",
        "workspace_url",
    }
    assert task["workspace_url"] == (
        f"https://github.com/afbench/test-release/tree/{'a' * 40}/{task['workspace']}"
    )
    assert catalog["inputs"]["MANIFEST.csv"] == fetched_config["files"]["manifest"]["sha256"]
    assert "not a task package" in catalog["note"]
    assert "not AutoformBench data" in catalog["license"]  # the demo says it is synthetic
    fetched_config["release"]["synthetic"] = False
    fetched_config["release"]["license"] = "CC BY-NC 4.0 (research and evaluation only)"
    afbench("verify", "--release-dir", release_dir(fetched_config), cfg=fetched_config)
    assert "CC BY-NC 4.0" in build_catalog(fetched_config)["license"]


def _with_files(tmp_path, release_files, demo_yaml, **changes):
    files = {**release_files, **changes}
    mirror = write_tree(tmp_path / "m", files)
    cfg = config_for(
        files, "a" * 40, {"kind": "dir", "mirror": str(mirror)}, tmp_path / "r", demo_yaml
    )
    fetch_release(cfg)
    return cfg


def test_sources_n_tasks_mismatch_is_caught(tmp_path, release_files, demo_yaml):
    text = release_files["SOURCES.csv"].decode().splitlines()
    fields = text[1].split(",")
    fields[-1] = str(int(fields[-1]) + 1)
    text[1] = ",".join(fields)
    cfg = _with_files(
        tmp_path, release_files, demo_yaml, **{"SOURCES.csv": ("\n".join(text) + "\n").encode()}
    )
    with pytest.raises(AfbenchError, match="n_tasks of source 'demo_source_01'"):
        build_catalog(cfg)


def test_unknown_source_and_bad_task_id_are_caught(tmp_path, release_files, demo_yaml):
    lines = release_files["MANIFEST.csv"].decode().splitlines()
    lines[2] = "../escape" + lines[2][lines[2].index(",") :]
    cfg = _with_files(
        tmp_path, release_files, demo_yaml, **{"MANIFEST.csv": ("\n".join(lines) + "\n").encode()}
    )
    with pytest.raises(AfbenchError) as err:
        build_catalog(cfg)
    assert "MANIFEST.csv: row 3: field 'task_id': not a safe name" in str(err.value)
    lines = release_files["MANIFEST.csv"].decode().splitlines()
    lines[1] = lines[1].replace("demo_source_01", "nowhere", 1)
    cfg = _with_files(
        tmp_path / "2",
        release_files,
        demo_yaml,
        **{"MANIFEST.csv": ("\n".join(lines) + "\n").encode()},
    )
    with pytest.raises(AfbenchError, match="source_id not in SOURCES.*nowhere"):
        build_catalog(cfg)


def test_selection_is_deterministic_and_hashed(catalog):
    one = select_tasks(catalog, "two", sources=["demo_source_03", "demo_source_07"], limit=3)
    again = select_tasks(catalog, "two", sources=["demo_source_07", "demo_source_03"], limit=3)
    assert one["task_ids"] == again["task_ids"]
    assert one["selection_sha256"] == again["selection_sha256"]
    assert len(one["task_ids"]) == 3
    assert all(t.startswith("demo_s03") for t in one["task_ids"])
    full = select_tasks(catalog, "all")
    assert len(full["task_ids"]) == 341


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"tasks": ["demo_s01_t001", "demo_s01_t001"]}, "task listed twice"),
        ({"sources": ["demo_source_01", "demo_source_01"]}, "source listed twice"),
        ({"tasks": ["nope"]}, "unknown task"),
        ({"sources": ["nope"]}, "unknown source_id"),
        ({"tasks": ["demo_s01_t001"], "sources": ["demo_source_02"]}, "selection is empty"),
        ({"limit": 0}, "at least 1"),
        ({"limit": 1.5}, "whole number"),
        ({"limit": True}, "whole number"),
    ],
)
def test_selection_errors(catalog, kwargs, match):
    with pytest.raises(AfbenchError, match=match):
        select_tasks(catalog, "bad", **kwargs)


def test_cli_limit_must_be_an_integer(fetched_config, tmp_path, capsys):
    from afbench.cli import main

    from conftest import config_file

    common = [
        "tasks",
        "--release-dir",
        str(release_dir(fetched_config)),
        "--config",
        config_file(fetched_config),
        "--output",
        str(tmp_path / "x.json"),
    ]
    assert main([*common, "--limit", "two"]) == 2
    assert "argument --limit: expected a whole number >= 1, found 'two'" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
    assert main([*common, "--book", "demo_source_02", "--limit", "2"]) == 0
    assert len(json.loads((tmp_path / "x.json").read_text())["task_ids"]) == 2


@pytest.fixture
def upstream(tmp_path, release_files):
    return make_git_repo(tmp_path / "autoformbench", release_files)


def _plan(cfg, catalog, repo, agent="nop", model=None, jobs=Path("/srv/jobs")):
    """A plan for the catalog as if its release were pinned at cfg's revision."""
    catalog = {**catalog, "release": {**catalog["release"], "revision": cfg["release"]["revision"]}}
    selection = select_tasks(catalog, "pair", tasks=["demo_s01_t001", "demo_s02_t001"])
    return build_plan(catalog, selection, agent, model, str(repo), "tasks", str(jobs), "docker")


def test_nop_plan_argv_is_exact(fetched_config, catalog, upstream):
    repo, commit = upstream
    fetched_config["release"]["revision"] = commit
    plan = _plan(fetched_config, catalog, repo)
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


def test_real_agent_needs_provider_model(fetched_config, catalog, upstream):
    repo, commit = upstream
    fetched_config["release"]["revision"] = commit
    plan = _plan(fetched_config, catalog, repo, "claude-code", "anthropic/claude-opus-4-1")
    argv = plan["tasks"][0]["run"]["argv"]
    assert argv[argv.index("-a") + 1] == "claude-code"
    assert argv[argv.index("-m") + 1] == "anthropic/claude-opus-4-1"
    assert plan["expected_reward"] is None
    with pytest.raises(AfbenchError, match="needs an explicit model"):
        _plan(fetched_config, catalog, repo, "claude-code")
    with pytest.raises(AfbenchError, match="provider/model"):
        _plan(fetched_config, catalog, repo, "claude-code", "opus")
    with pytest.raises(AfbenchError, match="calls no model"):
        _plan(fetched_config, catalog, repo, "nop", "anthropic/x")
    with pytest.raises(AfbenchError, match="unknown Harbor 0.22.0 agent"):
        _plan(fetched_config, catalog, repo, "--rm")


def test_repository_checks(fetched_config, catalog, upstream, tmp_path):
    repo, commit = upstream
    with pytest.raises(AfbenchError, match="not at the pinned revision"):
        _plan(fetched_config, catalog, repo)  # config pins another commit
    fetched_config["release"]["revision"] = commit
    with pytest.raises(AfbenchError, match="absolute"):
        _plan(fetched_config, catalog, Path("relative/path"))
    with pytest.raises(AfbenchError, match="does not exist"):
        _plan(fetched_config, catalog, tmp_path / "nowhere")
    (tmp_path / "plain").mkdir()
    with pytest.raises(AfbenchError, match="not the top of a git checkout"):
        _plan(fetched_config, catalog, tmp_path / "plain")
    git(repo, "rm", "-q", "harbor/export.py")
    git(repo, "commit", "-qm", "drop exporter")
    fetched_config["release"]["revision"] = git(repo, "rev-parse", "HEAD")
    with pytest.raises(AfbenchError, match="no exporter"):
        _plan(fetched_config, catalog, repo)


def test_a_stratified_selection_flows_into_a_plan(fetched_config, catalog, upstream):
    repo, commit = upstream
    catalog = {**catalog, "release": {**catalog["release"], "revision": commit}}
    selection = select_tasks(catalog, "pilot", stratified={"tasks": 12, "seed": 3})
    assert sum(selection["criteria"]["stratified"]["allocation"].values()) == 12
    plan = build_plan(catalog, selection, "nop", None, str(repo), "tasks", "/srv/jobs", "docker")
    assert [t["task_id"] for t in plan["tasks"]] == selection["task_ids"]
    assert plan["selection"]["selection_sha256"] == selection["selection_sha256"]
    assert all(t["job_name"].endswith(selection["selection_sha256"][:8]) for t in plan["tasks"])
