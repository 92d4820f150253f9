"""The demo's second revision: generated exactly as committed, pinned by
config/demo-upgrade.yaml, and a real upgrade of the first (one change of each kind, the
published pass counts unchanged)."""

from __future__ import annotations

import csv
import io
import subprocess
from collections import Counter

import pytest

from afbench.core.config import load_config
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import (
    sha256_bytes,
)
from afbench.release import demo
from afbench.release import demo as demo_release

import properties as prop
from conftest import (
    RELEASE,
    REPO,
    cli,
    git,
    one_line,
)

UPGRADE_FILES = REPO / "resources/demo-release-upgrade"


def _rows(data: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(data.decode())))


def test_the_second_revision_is_generated_as_committed_and_pinned(tmp_path, release_files):
    upgrade = demo.generate_upgrade(release_files)
    committed = {
        p.relative_to(UPGRADE_FILES).as_posix(): p.read_bytes()
        for p in UPGRADE_FILES.rglob("*")
        if p.is_file()
    }
    assert committed == upgrade
    cfg = load_config([REPO / "config/demo.yaml", REPO / "config/demo-upgrade.yaml"])
    assert cfg["files"]["manifest"]["sha256"] == sha256_bytes(upgrade["MANIFEST.csv"])
    for spec in cfg["models"].values():
        assert spec["sha256"] == sha256_bytes(upgrade[spec["path"]])
    first = load_config([REPO / "config/demo.yaml"])["release"]["revision"]
    assert cfg["upgrade"]["previous_revision"] == first
    out = tmp_path / "upstream"
    second = demo.build_repository(REPO / "resources/demo-release", out, UPGRADE_FILES)
    assert second == cfg["release"]["revision"]
    assert demo.is_demo_repository(out)
    # rebuilt as the first revision alone, in place: the first commit again
    assert demo.build_repository(REPO / "resources/demo-release", out) == first


def test_the_upgrade_keeps_the_counts_and_the_published_passes(release_files):
    upgrade = demo.generate_upgrade(release_files)
    before, after = _rows(release_files["MANIFEST.csv"]), _rows(upgrade["MANIFEST.csv"])
    assert len(after) == len(before) == demo.N_TASKS
    assert sum(int(r["n_obligations"]) for r in after) == demo.N_OBLIGATIONS
    assert Counter(r["source_id"] for r in after) == Counter(r["source_id"] for r in before)
    ids = [r["task_id"] for r in after]
    assert demo.UPGRADE["removed"] not in ids and demo.UPGRADE["added"] in ids
    for slug, passes in demo.INTENDED_PASS_COUNTS.items():
        rows = _rows(upgrade[f"results/{slug}.csv"])
        assert [r["task_id"] for r in rows] == ids
        assert sum(r["success"] == "true" for r in rows) == passes
    assert demo.UPGRADE_AMENDMENTS[demo.UPGRADE["patch-bump"]] == {
        "version": "1.0.1",
        "statement": 2,
    }


def test_demo_repository_refuses_a_folder_that_is_not_an_earlier_demo(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(AfbenchError, match="not an earlier afbench demo repository"):
        demo.build_repository(RELEASE, out)
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]
    other = tmp_path / "other-repo"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    (other / "code.py").write_text("x = 1\n")
    with pytest.raises(AfbenchError, match="not an earlier afbench demo repository"):
        demo.build_repository(RELEASE, other)
    assert (other / "code.py").read_text() == "x = 1\n"
    a_file = tmp_path / "file"
    a_file.write_text("keep")
    with pytest.raises(AfbenchError, match="not a folder"):
        demo.build_repository(RELEASE, a_file)
    assert a_file.read_text() == "keep"


def test_demo_repository_rebuilds_an_earlier_demo_but_never_its_local_changes(tmp_path):
    out = tmp_path / "demo-upstream"
    out.mkdir()  # an empty folder is fine
    commit = demo.build_repository(RELEASE, out)
    assert demo.is_demo_repository(out)
    assert demo.build_repository(RELEASE, out) == commit  # rebuilt in place, same commit
    (out / "notes.txt").write_text("mine")
    with pytest.raises(AfbenchError, match="local changes or extra files"):
        demo.build_repository(RELEASE, out)
    assert (out / "notes.txt").read_text() == "mine"


def test_an_earlier_demo_repository_with_settings_of_its_own_is_refused(tmp_path):
    out = tmp_path / "demo"
    demo.build_repository(prop.DEMO_RELEASE, out)
    marker = tmp_path / "fsmonitor-ran"
    git(out, "config", "core.fsmonitor", f"touch {marker}; false")
    code, err = cli("demo", "repo", "--release-files", prop.DEMO_RELEASE, "--out", out)
    assert code == 2 and "not an earlier afbench demo repository" in one_line(err)
    assert not marker.exists()


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


def test_committed_demo_release_is_what_the_generator_writes(release_files):
    committed = {
        p.relative_to(REPO / "resources/demo-release").as_posix(): p.read_bytes()
        for p in (REPO / "resources/demo-release").rglob("*")
        if p.is_file()
    }
    # all but the exporter, which the build commits from afbench/release/demo_exporter.py
    assert committed == {p: b for p, b in release_files.items() if p != "harbor/export.py"}
    assert demo.generate_release() == release_files  # deterministic


def test_the_release_s_exporter_is_the_package_s_module_committed_by_the_build(tmp_path):
    """harbor/export.py has one copy, afbench/release/demo_exporter.py: the release folder holds
    only what the generator makes, the build commits the module's bytes with it, and a folder that
    holds another exporter is refused (one line naming it) before anything is built."""
    assert not (RELEASE / "harbor/export.py").exists()
    module = REPO / "scripts/afbench/release/demo_exporter.py"
    assert demo.generate_release()["harbor/export.py"] == module.read_bytes()
    out = tmp_path / "demo"
    demo.build_repository(RELEASE, out)
    committed = subprocess.run(
        ["git", "-C", str(out), "show", "HEAD:harbor/export.py"], capture_output=True, check=True
    )
    assert committed.stdout == module.read_bytes()
    assert (out / "harbor/export.py").read_bytes() == module.read_bytes()
    mine = tmp_path / "mine"
    (mine / "harbor").mkdir(parents=True)
    (mine / "MANIFEST.csv").write_bytes((RELEASE / "MANIFEST.csv").read_bytes())
    (mine / "harbor/export.py").write_text("print('another exporter')\n")
    code, err = cli("demo", "repo", "--release-files", mine, "--out", tmp_path / "built")
    line = one_line(err)
    assert code == 2 and f"{mine}/harbor/export.py" in line and "holds another" in line
    assert f"sha256 {sha256_bytes(module.read_bytes())}" in line
    assert not (tmp_path / "built").exists()


def test_demo_release_has_the_official_scale_and_is_marked_synthetic(release_files):
    manifest = list(csv.DictReader(io.StringIO(release_files["MANIFEST.csv"].decode())))
    sources = list(csv.DictReader(io.StringIO(release_files["SOURCES.csv"].decode())))
    assert len(manifest) == 341 and len(sources) == 24
    assert sum(int(r["n_obligations"]) for r in manifest) == 1155
    assert all(r["task_id"].startswith("demo_") for r in manifest)
    assert all(s["source_id"].startswith("demo_") for s in sources)
    models = [k for k in release_files if k.startswith("results/")]
    assert len(models) == 9 and all("demo-model" in m for m in models)
    official = {281, 211, 201, 181, 180, 179, 165, 152, 150}
    assert not set(demo.INTENDED_PASS_COUNTS.values()) & official
    assert b"SYNTHETIC" in release_files["README.md"]


def test_demo_config_pins_the_generated_files_and_the_reproducible_commit(tmp_path, release_files):
    cfg = load_config([REPO / "config/demo.yaml"])
    assert cfg["release"]["synthetic"] is True
    assert cfg["files"]["manifest"]["sha256"] == sha256_bytes(release_files["MANIFEST.csv"])
    for spec in cfg["models"].values():
        assert spec["sha256"] == sha256_bytes(release_files[spec["path"]])
    commit = demo.build_repository(REPO / "resources/demo-release", tmp_path / "a")
    again = demo.build_repository(REPO / "resources/demo-release", tmp_path / "b")
    assert commit == again == cfg["release"]["revision"]
