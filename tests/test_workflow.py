"""The floor plan: Snakemake owns the files. Jobs touch only what they declare (a storage
plugin run gives the same artifacts), the package names no artifact path, and a plain
`pip install .` runs the interface page's commands to the pipeline's artifacts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from conftest import REPO, demo_revision, project, snakemake

# the artifact tree's own names (workflow/rules/common.smk is their one home)
ARTIFACT_PATHS = re.compile(
    r"tasks/catalog\.json|tasks/selections|release/receipt\.json|release/verified|"
    r"imports/source-|budget-\d|/plans/|/runs/|report/(index|analysis|figures)|release-identity\.json|"
    r"artifacts\.json|(?<![/$\w])logs/"
)


def test_no_artifact_path_is_spelled_outside_the_workflow():
    offenders = []
    work = REPO / "bench" / "work"  # `make bench`'s git-ignored copies of the workflow
    for folder in ("scripts", "bench", "config"):
        for top, dirs, names in os.walk(REPO / folder):
            # pruned, not walked: after `make bench` it holds hundreds of thousands of files
            dirs[:] = [d for d in dirs if Path(top, d) != work]
            for path in (Path(top, name) for name in names):
                if path.suffix not in (".py", ".yaml", ".yml", ".smk"):
                    continue
                for number, line in enumerate(path.read_text().splitlines(), start=1):
                    if ARTIFACT_PATHS.search(line):
                        offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert offenders == []


@pytest.mark.snakemake
def test_every_job_command_names_its_files(demo_project):
    """`snakemake -n -p` shows each job's inputs, outputs and log in its command."""
    result = snakemake(demo_project, "-n", "-p", "--forceall")
    lines = (result.stdout + result.stderr).splitlines()
    commands = [
        line.removeprefix("Shell command: ")
        for line in lines
        if line.startswith("Shell command: afbench ")
    ]
    assert len(commands) >= 40
    # no config blob or config file: every setting is its own flag
    assert not [c for c in commands if re.search(r"--config([ =]|-j)", c) or "2> " not in c]
    catalog = next(c for c in commands if c.startswith("afbench job export-catalog "))
    assert "release/MANIFEST.csv" in catalog and "release/verified/manifest.json" in catalog
    assert "--output=results/" in catalog and "tasks/catalog.json" in catalog


def _tree(root: Path, project_dir: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes().replace(str(project_dir).encode(), b"@")
        for p in root.rglob("*")
        if p.is_file() and "logs" not in p.relative_to(root).parts
    }


@pytest.mark.snakemake
@pytest.mark.skipif(shutil.which("rsync") is None, reason="rsync missing (.ci/run installs it)")
def test_storage_plugin_run_gives_the_same_artifacts(demo_project, tmp_path):
    """Under --default-storage-provider fs every job gets only the files it declares, staged
    by Snakemake; a job that read or wrote anything else would fail or differ here."""
    root = project(tmp_path)
    prefix = tmp_path / "storage"
    shutil.copytree(root / "resources", prefix / "resources")
    result = snakemake(
        root, "--default-storage-provider", "fs", "--default-storage-prefix", str(prefix)
    )
    assert "Finished" in result.stdout + result.stderr
    revision = demo_revision()
    # the two projects live in different folders, which the receipts' source and the plans'
    # paths name: compare with each project's folder written as "@"
    plain = _tree(demo_project / "results" / revision, demo_project)
    stored = _tree(prefix / "results" / revision, root)
    assert plain.keys() == stored.keys()
    # plans name the checkout they were checked against: under storage, Snakemake's staged
    # copy; the artifact manifest hashes the plans (and carries the config's digest)
    differ = sorted(k for k in plain if plain[k] != stored[k])
    assert all(k.startswith("plans/") or k == "artifacts.json" for k in differ), differ
    for key in (k for k in differ if k.startswith("plans/")):
        ours, theirs = json.loads(plain[key]), json.loads(stored[key])
        repo_a, repo_b = ours["repository_dir"], theirs["repository_dir"]
        assert repo_a == "@/results/demo-upstream" and repo_b.endswith("results/demo-upstream")
        assert plain[key].replace(repo_a.encode(), b"#") == stored[key].replace(
            repo_b.encode(), b"#"
        )


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """`pip install .` (not editable) into a fresh venv outside the checkout. Its
    dependencies come from the test environment's site-packages through PYTHONPATH (which
    does not load the editable afbench, a .pth hook), so nothing is downloaded."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    build = tmp_path_factory.mktemp("build")
    for part in ("scripts", "pyproject.toml", "README.md"):
        source = REPO / part
        (shutil.copytree if source.is_dir() else shutil.copy)(source, build / part)
    subprocess.run(
        [
            str(venv / "bin/python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            str(build),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]},
    )
    shutil.rmtree(build)
    return venv


@pytest.mark.snakemake
def test_installed_package_runs_the_interface_commands(installed, demo_project, tmp_path):
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    where = subprocess.run(
        [str(installed / "bin/python"), "-c", "import afbench; print(afbench.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(installed)), where  # not the checkout's scripts/

    checkout = demo_project / "results" / "demo-upstream"
    config = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    config["source"]["checkout"] = str(checkout)
    (tmp_path / "demo.yaml").write_text(yaml.safe_dump(config))

    def afbench(*args: str) -> None:
        config = [] if args[0] == "verdict" else ["--config", "demo.yaml"]
        result = subprocess.run(
            [str(installed / "bin/afbench"), *args, *config],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr

    release = ".cache/autoformbench-demo"
    afbench("fetch", "--release-dir", release, "--all-models")
    afbench("tasks", "--release-dir", release, "--output", "runs/tasks.json")
    afbench(
        "tasks",
        "--release-dir",
        release,
        "--book",
        "demo_source_03",
        "--book",
        "demo_source_07",
        "--limit",
        "5",
        "--output",
        "runs/demo-two-sources.json",
    )
    afbench(
        "plan",
        "--release-dir",
        release,
        "--repository-dir",
        str(checkout),
        "--task",
        "demo_s01_t001",
        "--agent",
        "nop",
        "--output",
        "runs/nop-plan.json",
    )
    afbench(
        "import-results",
        "--release-dir",
        release,
        "--all-models",
        "--source-condition",
        "source-present",
        "--budget-usd",
        "200",
        "--output",
        "runs/reference.json",
    )
    verdict = {
        "task_id": "demo_s01_t001",
        "status": "rejected",
        "obligations": [],
        "checks": {"lean_kernel": False},
        "error": None,
        "verifier": {"name": "v", "version": "1"},
    }
    (tmp_path / "verdict.json").write_text(json.dumps(verdict))
    afbench(
        "verdict",
        "--path",
        str(tmp_path / "verdict.json"),
        "--task",
        "demo_s01_t001",
        "--output",
        "runs/verdict-import.json",
    )

    out = demo_project / "results" / demo_revision()
    runs = tmp_path / "runs"
    assert (runs / "tasks.json").read_bytes() == (out / "tasks/catalog.json").read_bytes()
    assert (runs / "demo-two-sources.json").read_bytes() == (
        out / "tasks/selections/demo-two-sources.json"
    ).read_bytes()
    pipeline_receipt = json.loads((out / "release/receipt.json").read_text())
    cli_receipt = json.loads((tmp_path / release / "receipt.json").read_text())
    assert cli_receipt == pipeline_receipt
    reference = json.loads((runs / "reference.json").read_text())
    imports = out / "imports/source-present/budget-200"
    for model in reference["models"]:
        assert model == json.loads((imports / f"{model['model']}.json").read_text())
    assert reference["summary"] == json.loads((imports / "summary.json").read_text())
    plan = json.loads((runs / "nop-plan.json").read_text())
    assert plan["executed"] is False and [t["task_id"] for t in plan["tasks"]] == ["demo_s01_t001"]
    assert json.loads((runs / "verdict-import.json").read_text())["reward"] == 0


def _rules() -> dict[str, str]:
    """Every rule of the workflow with its shell command's text (empty for a target)."""
    text = "\n".join(p.read_text() for p in sorted((REPO / "workflow").rglob("*.smk")))
    found = {}
    for block in re.split(r"\n(?=(?:rule|checkpoint|use rule) )", text):
        head = re.match(r"(?:rule|checkpoint) (\w+):", block)
        if head:
            shell = re.search(r"shell:\n((?:\s+\".*\"\n?)+)", block)
            found[head.group(1)] = shell.group(1) if shell else ""
    return found


def test_each_job_rule_runs_its_own_job_command_and_each_job_command_has_a_rule():
    from afbench.cli.jobs import JOBS

    rules = {name: shell for name, shell in _rules().items() if shell}
    commands = {
        name: re.match(r'\s*"afbench job ([a-z-]+) ', shell).group(1)
        for name, shell in rules.items()
    }
    assert {name: command for name, command in commands.items()} == {
        name: name.replace("_", "-") for name in rules
    }
    assert set(commands.values()) == set(JOBS)


def _schema_leaves(node: dict, path: tuple = ()) -> list[tuple]:
    if node.get("type") == "object" or "properties" in node:
        leaves = []
        for key, child in node.get("properties", {}).items():
            leaves += _schema_leaves(child, (*path, key))
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            leaves += _schema_leaves(extra, (*path, "*"))
        return leaves or [path]
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        items = node["items"]
        return _schema_leaves(items, (*path, "[]")) if "properties" in items else [path]
    return [path]


def test_every_config_key_is_read_by_some_code_path():
    """A key the schema documents but no code reads is a promise nothing keeps: each leaf's
    name must be read somewhere in the package or the workflow (as a quoted key or the last
    part of a dpath), and so must each section's."""
    from afbench.config import _schema

    code = "\n".join(
        p.read_text()
        for folder in ("scripts/afbench", "workflow")
        for p in sorted((REPO / folder).rglob("*"))
        if p.suffix in (".py", ".smk") or p.name == "Snakefile"
    )
    unread = []
    for leaf in _schema_leaves(_schema()):
        for key in (k for k in leaf if k not in ("*", "[]")):
            if not re.search(rf"[\"'/]{re.escape(key)}[\"']", code):
                unread.append("/".join(leaf))
                break
    assert unread == []


@pytest.mark.snakemake
def test_the_demo_config_works_from_any_working_directory(demo_project, tmp_path):
    """Its relative checkout is relative to config/demo.yaml's folder, not to where afbench
    runs: `afbench fetch --config /abs/config/demo.yaml` from elsewhere finds the checkout."""
    config = demo_project / "config" / "demo.yaml"
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("afbench")),
            "fetch",
            "--config",
            str(config),
            "--release-dir",
            "rel",
            "--all-models",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    receipt = json.loads((tmp_path / "rel/receipt.json").read_text())
    sources = {f["source"] for f in receipt["files"]}
    checkout = demo_project / "results" / "demo-upstream"
    assert all(s.startswith(f"git:{checkout}@") for s in sources), sources
