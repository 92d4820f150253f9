"""Running git (afbench.core.gitrun): the caller's GIT_* variables ignored, no lazy fetch from a
partial clone, dubious ownership named."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from afbench.core.errors import AfbenchError

from conftest import (
    cli,
    config_file,
    git,
    make_git_repo,
    one_line,
)


def test_git_ignores_the_callers_git_variables(git_release, tmp_path, monkeypatch, release_files):
    _checkout, _revision, cfg = git_release
    other, _ = make_git_repo(tmp_path / "other", {"MANIFEST.csv": b"not the release\n"})
    for name, value in {
        "GIT_DIR": other / ".git",
        "GIT_WORK_TREE": other,
        "GIT_OBJECT_DIRECTORY": other / ".git" / "objects",
        "GIT_INDEX_FILE": tmp_path / "index",
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='touch {tmp_path / 'ran'}'",
        "GIT_TRACE": tmp_path / "trace",
    }.items():
        monkeypatch.setenv(name, str(value))
    code, err = cli(
        "fetch", "--config", config_file(cfg), "--release-dir", tmp_path / "rel", "--all-models"
    )
    assert code == 0, err
    assert (tmp_path / "rel" / "MANIFEST.csv").read_bytes() == release_files["MANIFEST.csv"]
    assert not (tmp_path / "ran").exists() and not (tmp_path / "trace").exists()


def _partial_clone(tmp_path: Path, checkout: Path, marker: Path) -> Path:
    git(checkout, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "partial"
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--no-checkout",
            "--filter=blob:none",
            f"file://{checkout}",
            str(clone),
        ],
        check=True,
        capture_output=True,
    )
    # a checkout's own config may name any program for its remote: none may ever run
    git(clone, "config", "remote.origin.uploadpack", f"touch {marker}; git-upload-pack")
    return clone


def test_a_partial_clone_is_never_fetched_from_and_runs_nothing(git_release, tmp_path):
    checkout, _revision, cfg = git_release
    marker = tmp_path / "a-program-ran"
    clone = _partial_clone(tmp_path, checkout, marker)
    cfg["source"]["checkout"] = str(clone)
    code, err = cli(
        "fetch", "--config", config_file(cfg), "--release-dir", tmp_path / "rel", "--all-models"
    )
    line = one_line(err)
    assert code == 2 and "the checkout is missing object" in line and "partial clone" in line, line
    assert not marker.exists()
    code, err = cli(
        "discover",
        "--config",
        config_file(cfg),
        "--checkout",
        clone,
        "--output-dir",
        tmp_path / "d",
    )
    assert code == 2 and "the checkout is missing object" in one_line(err)
    assert not marker.exists()


def test_dubious_ownership_is_named_as_such(git_release, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the checkout to another user")
    checkout, revision, cfg = git_release
    subprocess.run(["chown", "-R", "nobody", str(checkout)], check=True)
    code, err = cli(
        "fetch", "--config", config_file(cfg), "--release-dir", tmp_path / "rel", "--all-models"
    )
    line = one_line(err)
    assert code == 2 and "dubious ownership" in line and "safe.directory" in line, line
    with pytest.raises(AfbenchError, match="dubious ownership"):
        from afbench.plans.plan import check_repository

        check_repository(str(checkout), revision)
