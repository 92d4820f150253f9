"""Discover: a release whose paths and columns differ from config is found, explained, and the
fragment merged into config makes the pipeline run on it."""

from __future__ import annotations

import copy
import json
import os
import shutil

import pytest
import yaml

from afbench.cli import main
from afbench.core.config import merge, validate_config
from afbench.core.errors import AfbenchError
from afbench.release.discover import discover

from conftest import (
    cli,
    config_file,
    config_for,
    git,
    make_git_repo,
    revision_dir,
    run_all,
)


def renamed_release(release_files: dict[str, bytes]) -> dict[str, bytes]:
    """Paths under data/ and two result columns renamed, as an upstream might differ."""
    out = {}
    for rel, data in release_files.items():
        if rel.startswith("results/"):
            header, rest = data.split(b"\n", 1)
            header = header.replace(b"cost_usd", b"cost_in_usd").replace(
                b"stop_reason", b"stopReason"
            )
            out["data/" + rel] = header + b"\n" + rest
        elif rel.endswith(".csv"):
            out["data/" + rel] = data
        else:
            out[rel] = data
    out["data/results/extra-model.csv"] = out["data/results/demo-model-a.csv"]
    return out


@pytest.fixture
def upstream(tmp_path, release_files, demo_yaml):
    files = renamed_release(release_files)
    repo, commit = make_git_repo(tmp_path / "upstream", files)
    (repo / "data/MANIFEST.csv").write_text("work tree edit, not committed\n")
    cfg = config_for(
        release_files,
        commit,
        {"kind": "git", "checkout": str(repo)},
        tmp_path / "results",
        demo_yaml,
    )
    for spec in cfg["models"].values():
        spec["sha256"] = None  # unknown pins, as for eight official models
    cfg["models"].pop("demo-model-i")
    return repo, commit, cfg, files


def run(cfg, *args):
    return main([*args, "--config", config_file(cfg), "--output-dir", str(revision_dir(cfg))])


def test_discover_explains_and_its_fragment_makes_the_pipeline_run(upstream, tmp_path, capsys):
    repo, _, cfg, _ = upstream
    assert run(cfg, "discover", "--checkout", str(repo)) == 0
    err = capsys.readouterr().err
    assert "configured path MANIFEST.csv is data/MANIFEST.csv" in err
    assert "mapped column 'cost_usd' (cost_usd) missing; closest: ['cost_in_usd']" in err
    assert "results file data/results/demo-model-i.csv is not in config" in err
    assert "no pin in config" in err
    fragment_text = (revision_dir(cfg) / "discovered.yaml").read_text()
    assert "observed" in fragment_text and "not published by the authors" in fragment_text
    fragment = yaml.safe_load(fragment_text)
    assert fragment["columns"]["results"] == {
        "cost_usd": "cost_in_usd",
        "stop_reason": "stopReason",
    }
    merged = validate_config(merge(copy.deepcopy(cfg), fragment))
    merged["models"].pop("extra-model")  # a duplicate file the user chooses not to import
    summary = run_all(merged) / "imports/source-present/budget-200/summary.json"
    assert yaml.safe_load(summary.read_text())["leaderboard"][0]["passes"] == 266


def test_a_differing_pin_is_an_error_loudly(upstream, tmp_path, capsys):
    repo, _, cfg, _ = upstream
    cfg["files"]["manifest"]["sha256"] = "0" * 64
    assert run(cfg, "discover", "--checkout", str(repo)) == 2
    err = capsys.readouterr().err
    assert "pinned SHA-256 differs" in err and "0" * 64 in err


def test_checkout_without_the_commit(upstream):
    repo, _, cfg, _ = upstream
    cfg["release"]["revision"] = "e" * 40
    with pytest.raises(AfbenchError, match="lacks the pinned commit|cat-file failed"):
        discover(cfg, repo)
    git(repo, "status")  # the checkout is untouched and still a repository


def test_discover_reads_names_that_are_not_utf8_with_a_fixed_number_of_git_processes(
    tmp_path, release_files, demo_yaml, monkeypatch
):
    files = dict(release_files)
    for i in range(40):
        files[f"extra/table-{i:02d}.csv"] = f"a,b\n{i},x\n".encode()
    checkout, revision = make_git_repo(tmp_path / "upstream", files)
    strange = os.fsdecode(b"r\xe9sultats.csv")  # Latin-1 bytes: not UTF-8
    (checkout / strange).write_bytes(b"task_id,success\nt,true\n")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "a name that is not UTF-8")
    revision = git(checkout, "rev-parse", "HEAD")
    cfg = config_for(
        release_files,
        revision,
        {"kind": "git", "checkout": str(checkout)},
        tmp_path / "r",
        demo_yaml,
    )
    shim = tmp_path / "bin"
    shim.mkdir()
    log = tmp_path / "git-calls"
    (shim / "git").write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {shutil.which("git")} "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "found"
    code, err = cli(
        "discover", "--config", config_file(cfg), "--checkout", checkout, "--output-dir", out
    )
    assert code == 0, err
    assert len(log.read_text().splitlines()) <= 3, log.read_text()
    found = json.loads((out / "discovery.json").read_text())
    paths = {f["path"] for f in found["csv_files"]}
    assert "r\\xe9sultats.csv" in paths and "extra/table-39.csv" in paths
    (out / "discovered.yaml").read_bytes().decode("utf-8")
