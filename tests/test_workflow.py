"""The floor plan: Snakemake owns the files. Jobs touch only what they declare (a storage
plugin run gives the same artifacts), the package names no artifact path, and a plain
`pip install .` runs the interface page's commands to the pipeline's artifacts."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import pytest
import yaml

from afbench.core.fsutil import sha256_bytes, sha256_file

from conftest import (
    HANG_GUARD_S,
    REPO,
    _hostile_environment,
    body,
    config_for,
    demo_revision,
    https_source,
    planned,
    project,
    run,
    slurm_skip_reason,
    snakemake,
    snakemake_env,
    wait_until,
    write_tree,
)

# the artifact tree's own names (workflow/rules/common.smk is their one home)
ARTIFACT_PATHS = re.compile(
    r"tasks/catalog\.json|tasks/selections|release/receipt\.json|release/verified|"
    r"imports/source-|budget-\d|(?<!tests)(?<!afbench)/plans/|(?<!tests)(?<!afbench)/runs/|(?<!tests)(?<!afbench)report/(index|analysis|figures)|release-identity\.json|"
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


# The rules a cluster executor submits, each on purpose; every other rule says
# `localrule: True` itself (light work that runs where Snakemake runs).
SUBMITTED = {"run_trial": "a trial: hours of an agent in a container, on a cluster node"}


def test_every_rule_is_local_or_submitted_on_purpose(monkeypatch, tmp_path):
    """As Snakemake itself loads the workflow (a `use rule` does not inherit `localrule:`, so
    the rule files' text alone cannot tell): every rule but SUBMITTED runs locally. (In a
    project copy: Snakemake writes its .snakemake/log where it runs, not into the checkout.)"""
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, ResourceSettings

    root = project(tmp_path)
    monkeypatch.chdir(root)
    with SnakemakeApi() as api:
        workflow = api.workflow(
            resource_settings=ResourceSettings(),
            config_settings=ConfigSettings(configfiles=[root / "config" / "demo.yaml"]),
            snakefile=root / "workflow" / "Snakefile",
        )._workflow
        # what Workflow.is_local consults under a cluster executor (locally, every rule is)
        rules = {rule.name: rule.name in workflow._localrules for rule in workflow.rules}
    assert len(rules) >= 40
    assert {name for name, local in rules.items() if not local} == set(SUBMITTED)
    assert "localrules:" not in (REPO / "workflow" / "Snakefile").read_text()


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


STAGED = re.compile(rb"(?:@/)?\.snakemake/storage/fs/[^\s,\"]*?/storage/|@/")


def _unstaged(data: bytes) -> bytes:
    return STAGED.sub(b"", data)


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
    # a local run's trial paths and the exporter's path name an input where the job found it:
    # under storage, Snakemake's staged copy; read from the project's folder, the same file
    differ = sorted(k for k in plain if _unstaged(plain[k]) != _unstaged(stored[k]))
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

    # the demo's own config, its checkout where the config names it (beside the project's
    # results folder): the receipt names the source as the config does, so it is the
    # pipeline's to the byte
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "demo-upstream").symlink_to(demo_project / "results" / "demo-upstream")
    (tmp_path / "config").mkdir()
    shutil.copy(REPO / "config/demo.yaml", tmp_path / "config" / "demo.yaml")

    def afbench(*args: str) -> None:
        config = [] if args[0] == "verdict" else ["--config", "config/demo.yaml"]
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
        str(tmp_path / "results" / "demo-upstream"),
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
    assert (tmp_path / release / "receipt.json").read_bytes() == (
        out / "release/receipt.json"
    ).read_bytes()
    reference = json.loads((runs / "reference.json").read_text())
    imports = out / "imports/source-present/budget-200"
    for model in reference["models"]:
        assert model == json.loads((imports / f"{model['model']}.json").read_text())
    assert reference["summary"] == json.loads((imports / "summary.json").read_text())
    plan = json.loads((runs / "nop-plan.json").read_text())
    assert plan["executed"] is False and [t["task_id"] for t in plan["tasks"]] == ["demo_s01_t001"]
    assert json.loads((runs / "verdict-import.json").read_text())["reward"] == 0


def _rules() -> dict[str, str]:
    """Every rule of the workflow with the job verb its shell line runs (empty for a target)."""
    text = "\n".join(p.read_text() for p in sorted((REPO / "workflow").rglob("*.smk")))
    found = {}
    for block in re.split(r"\n(?=(?:rule|checkpoint|use rule) )", text):
        head = re.match(r"(?:rule|checkpoint) (\w+):", block)
        if head:
            shell = re.search(r"shell:\n\s+shell_line\(\s*\"([a-z-]+)\"", block)
            found[head.group(1)] = shell.group(1) if shell else ""
    return found


def test_each_job_rule_runs_its_own_job_command_and_each_job_command_has_a_rule():
    from afbench.cli.jobs import JOBS

    rules = {name: shell for name, shell in _rules().items() if shell}
    commands = dict(rules)
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
    from afbench.core.config import _schema

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


@pytest.mark.snakemake
def test_the_pipeline_gives_the_same_artifacts_in_a_hostile_environment(tmp_path, demo_project):
    root = project(tmp_path)
    env, rc = _hostile_environment(tmp_path)
    (root / "matplotlibrc").write_text((rc / "matplotlibrc").read_text())  # the working folder's
    done = subprocess.run(
        [str(Path(sys.executable).with_name("snakemake"))],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: os.umask(0o027),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    def tree(project_root: Path) -> dict:
        """Every artifact, its project's own folder (which verified records name) written
        as <root>."""
        results = project_root / "results"
        return {
            p.relative_to(results).as_posix(): p.read_bytes().replace(
                str(project_root.resolve()).encode(), b"<root>"
            )
            for p in results.rglob("*")
            if p.is_file() and "logs" not in p.parts and "demo-upstream" not in p.parts
        }

    expected = tree(demo_project)
    got = tree(root)
    assert got.keys() == expected.keys()
    # the artifact manifest hashes the verified records, which name their project's folder
    manifest = next(name for name in expected if name.endswith("artifacts.json"))
    assert [name for name in expected if got[name] != expected[name]] in ([], [manifest])
    listed = [[a["path"] for a in json.loads(t[manifest])["artifacts"]] for t in (got, expected)]
    assert listed[0] == listed[1]


@pytest.mark.snakemake
def test_a_display_name_that_begins_with_dashes_reaches_the_report(tmp_path):
    root = project(tmp_path)
    config = root / "config" / "demo.yaml"
    doc = yaml.safe_load(config.read_text())
    doc["models"]["demo-model-a"]["display_name"] = "--> x"
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    snakemake(root)
    rev = root / "results" / doc["release"]["revision"]
    summary = json.loads((rev / "imports/source-present/budget-200/summary.json").read_text())
    assert "--> x" in {row["display_name"] for row in summary["leaderboard"]}
    board = (rev / "imports/source-present/budget-200/leaderboard.csv").read_text()
    assert "'--> x" in board  # a leading '-' is guarded in CSV
    assert "--&gt; x" in (rev / "report/index.html").read_text()


def snakemake_project(tmp_path: Path, http_release, release_files, demo_yaml) -> Path:
    import shutil

    root = tmp_path / "project"
    for part in ("workflow", "profiles", "resources"):  # resources: the demo's local runs
        shutil.copytree(REPO / part, root / part)
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"], read_timeout_s=5),
        root / "results",
        demo_yaml,
    )
    (root / "config").mkdir()
    (root / "config/demo.yaml").write_text(yaml.safe_dump(cfg))
    return root


def _kill_when(root: Path, snakemake: str, ready, check, env: dict | None = None) -> None:
    """Start the pipeline, call check() on what is visible until ready() says so, SIGKILL the
    whole process group, then clear the lock a killed run leaves behind."""
    run = subprocess.Popen(
        [snakemake, "--cores", "2"],
        cwd=root,
        env=env or snakemake_env(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def seen() -> bool:
        check()
        return ready()

    wait_until(seen, "the pipeline never got that far", run)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    subprocess.run(
        [snakemake, "--unlock"], cwd=root, check=True, capture_output=True, env=snakemake_env()
    )


def _gated(faults: dict, passes: int, gate: threading.Event) -> dict:
    """The same faults, but once `passes` requests have gone through, each waits for `gate`:
    the files past them stay unfetched until the test opens it."""
    count = itertools.count()

    def wait_then(fault):
        def fault_after_the_gate(handler):
            if next(count) >= passes:
                gate.wait(HANG_GUARD_S)
            return fault(handler)

        return fault_after_the_gate

    return {path: wait_then(fault) for path, fault in faults.items()}


def _gated_imports(folder: Path, passes: int) -> dict:
    """An environment whose `afbench` lets `passes` model imports run and holds every other
    one until the test ends it (the run is killed): a run killed once `passes` are visible is
    killed in the middle of importing, however fast or slow the machine."""
    folder.mkdir()
    real = shutil.which("afbench", path=snakemake_env()["PATH"])
    (folder / "afbench").write_text(
        f"#!{sys.executable}\n"
        "import os, sys, time\n"
        "if sys.argv[1:3] == ['job', 'import-model']:\n"
        f"    for n in range({passes}):\n"
        "        try:\n"
        f"            os.close(os.open({str(folder)!r} + f'/slot-{{n}}', os.O_CREAT | os.O_EXCL))\n"
        "            break\n"
        "        except FileExistsError:\n"
        "            pass\n"
        "    else:\n"
        f"        time.sleep({HANG_GUARD_S})\n"
        f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n"
    )
    (folder / "afbench").chmod(0o755)
    env = snakemake_env()
    return {**env, "PATH": f"{folder}{os.pathsep}{env['PATH']}"}


@pytest.mark.snakemake
def test_sigkill_mid_run_then_rerun_gives_identical_artifacts(
    tmp_path, http_release, release_files, demo_yaml
):
    """Kill the whole pipeline mid-fetch, then mid-import; no partial file is ever visible at
    a final path; `snakemake --unlock && snakemake` then gives byte-identical artifacts. Mid-way
    by construction: the files past the fourth are held at the server, the imports past the
    second in their job, until the run is killed."""
    faults = {
        http_release["prefix"] + rel: body(release_files[rel], delay=0.4)
        for rel in release_files
        if rel.endswith(".csv")
    }
    http_release["handler"].faults.update(faults)
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    reference = snakemake_project(tmp_path / "a", http_release, release_files, demo_yaml)
    subprocess.run(
        [snakemake, "--cores", "2"],
        cwd=reference,
        check=True,
        capture_output=True,
        timeout=300,
        env=snakemake_env(),
    )
    expected = _artifact_bytes(reference / "results")
    root = snakemake_project(tmp_path / "b", http_release, release_files, demo_yaml)
    out = root / "results" / http_release["revision"]
    pins = _pins(root)
    fetched = set()

    def check_release():
        for rel, sha in pins.items():
            final = out / "release" / rel
            if final.exists():  # visible at a final path: complete and verified
                assert sha256_file(final) == sha
                fetched.add(rel)

    gate = threading.Event()
    http_release["handler"].faults.update(_gated(faults, 4, gate))
    try:
        _kill_when(root, snakemake, lambda: len(fetched) >= 4, check_release)
    finally:
        gate.set()
    assert 0 < len(fetched) < len(pins)  # killed in the middle of fetching

    imports = out / "imports/source-present/budget-200"
    seen_imports = set()

    def check_imports():
        for path in imports.glob("*.json") if imports.exists() else []:
            rel = path.relative_to(root / "results").as_posix()
            assert path.read_bytes() == expected[rel]  # never partial, never different
            seen_imports.add(rel)

    env = _gated_imports(tmp_path / "gated", 2)
    _kill_when(root, snakemake, lambda: len(seen_imports) >= 2, check_imports, env)
    assert 0 < len(seen_imports) < 10  # killed in the middle of importing
    assert not (imports / "summary.json").exists()
    subprocess.run(
        [snakemake, "--cores", "2"],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=300,
        env=snakemake_env(),
    )
    actual = _artifact_bytes(root / "results")
    assert actual.keys() == expected.keys()
    # the artifact manifest carries the whole config's digest, which differs by results_dir
    assert [k for k in expected if expected[k] != actual[k] and k.endswith("artifacts.json")]
    assert [
        k for k in expected if expected[k] != actual[k] and not k.endswith("artifacts.json")
    ] == []


def _pins(root: Path) -> dict[str, str]:
    cfg = yaml.safe_load((root / "config/demo.yaml").read_text())
    pins = {cfg["files"][k]["path"]: cfg["files"][k]["sha256"] for k in cfg["files"]}
    pins.update({m["path"]: m["sha256"] for m in cfg["models"].values()})
    return pins


def _artifact_bytes(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and "logs" not in p.parts
    }


ARROW = " -> "


@pytest.mark.snakemake
def test_every_job_log_names_what_its_job_wrote(demo_project):
    """Snakemake keeps each job's standard error (`2> {log}`): its lines, one per unit of
    outputs, and nothing drawn for a terminal."""
    logs = sorted((demo_project / "results" / demo_revision() / "logs").rglob("*.log"))
    assert len(logs) >= 40, logs
    for log in logs:
        text = log.read_text()
        lines = text.splitlines()
        assert lines and all(ARROW in line for line in lines), (log, text)
        assert "\r" not in text and "\x1b" not in text, log
    plan = demo_project / "results" / demo_revision() / "logs" / "write_plan"
    assert (plan / "demo-two-sources" / "nop.log").read_text() == (
        "plan: 5 trials of agent nop on selection demo-two-sources (argument vectors, not run) "
        f"-> results/{demo_revision()}/plans/demo-two-sources/nop.json\n"
    )


SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


@pytest.mark.slurm
@pytest.mark.snakemake
@pytest.mark.skipif(slurm_skip_reason() is not None, reason=str(slurm_skip_reason()))
def test_a_snakemake_job_runs_on_slurm_through_the_profile(tmp_path):
    (tmp_path / "Snakefile").write_text(
        'rule one:\n    output:\n        "out.txt",\n    resources:\n        runtime=5,\n'
        '    shell:\n        "echo slurm_job=$SLURM_JOB_ID > {output}"\n'
    )
    (tmp_path / "config.yaml").write_text("{}\n")
    result = run(
        [
            SNAKEMAKE,
            "--profile",
            str(REPO / "profiles/slurm"),
            "--configfile",
            "config.yaml",
            # first status check soon after the job's ~10 s (the profile waits 5 s, then 15)
            "--slurm-init-seconds-before-status-checks",
            "2",
        ],
        tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    job = (tmp_path / "out.txt").read_text().strip()
    assert job.startswith("slurm_job=") and job != "slurm_job="  # ran inside a SLURM job


BUCKET = "afbench-test"


PREFIX = "demo"


CREDENTIALS = {"access_key": "testing", "secret_key": "testing"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def s3_server(tmp_path):
    """moto's S3 server on 127.0.0.1 (its own process), with one empty bucket."""
    boto3 = pytest.importorskip("boto3")
    port = free_port()
    log = open(tmp_path / "moto.log", "wb")  # noqa: SIM115 - the server writes it
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=log,
    )
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=CREDENTIALS["access_key"],
        aws_secret_access_key=CREDENTIALS["secret_key"],
        region_name="us-east-1",
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            client.create_bucket(Bucket=BUCKET)
            break
        except Exception:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                pytest.fail(f"moto's server did not start: {(tmp_path / 'moto.log').read_text()}")
            time.sleep(0.3)
    yield endpoint, client
    server.terminate()
    server.wait(timeout=30)
    log.close()


def artifacts(files: dict[str, bytes]) -> dict[str, bytes]:
    """The artifacts under results/: the job logs (diagnostics that name where each job wrote)
    and the demo checkout's git internals left out."""
    return {
        path: data
        for path, data in files.items()
        if "/logs/" not in path and "/.git/" not in path and "/.snakemake" not in path
    }


@pytest.mark.snakemake
def test_the_demo_pipeline_on_s3_gives_the_same_artifacts_as_on_disk(tmp_path, s3_server):
    endpoint, client = s3_server
    root = project(tmp_path)
    # on the local file system first
    local_run = subprocess.run(
        [SNAKEMAKE, "--profile", "profiles/default"],
        cwd=root,
        env=snakemake_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert local_run.returncode == 0, local_run.stderr[-3000:]
    local = {
        str(p.relative_to(root)): p.read_bytes()
        for p in (root / "results").rglob("*")
        if p.is_file()
    }
    shutil.rmtree(root / "results")
    shutil.rmtree(root / ".snakemake")
    # the inputs it reads from files sit in the bucket too, under the same prefix
    for path in (root / "resources").rglob("*"):  # the release, and the demo's local runs
        if path.is_file():
            client.upload_file(str(path), BUCKET, f"{PREFIX}/{path.relative_to(root)}")
    env = {
        **snakemake_env(),
        "SNAKEMAKE_STORAGE_S3_ACCESS_KEY": CREDENTIALS["access_key"],
        "SNAKEMAKE_STORAGE_S3_SECRET_KEY": CREDENTIALS["secret_key"],
    }
    # profiles/slurm-s3 as the README shows it; its executor is SLURM, which this target never
    # uses (every stage but the trials is a localrule), so without SLURM here it runs locally
    executor = ["--executor", "local"] if slurm_skip_reason() else []
    on_s3 = subprocess.run(
        [
            SNAKEMAKE,
            "--profile",
            "profiles/slurm-s3",
            *executor,
            "--default-storage-prefix",
            f"s3://{BUCKET}/{PREFIX}",
            "--storage-s3-endpoint-url",
            endpoint,
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert on_s3.returncode == 0, on_s3.stderr[-3000:]
    assert not (root / "results").exists()  # every artifact went to the bucket
    keys = [
        item["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=f"{PREFIX}/results/"
        )
        for item in page.get("Contents", [])
    ]
    stored = {
        key.removeprefix(f"{PREFIX}/"): client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        for key in keys
    }
    ours, theirs = artifacts(local), artifacts(stored)
    assert sorted(ours) == sorted(theirs)
    rev = f"results/{demo_revision()}"
    assert f"{rev}/report/index.html" in ours and len(ours) > 60
    # a plan's argv names the checkout where a trial reads it, Snakemake's local copy: the same
    # bytes once that copy's prefix is taken away. Every other artifact names its inputs as the
    # config names them (a local run's job folders, the exporter a checksum came from)
    staged = f".snakemake/storage/s3/{BUCKET}/{PREFIX}/".encode()  # relative to the project
    manifest = f"{rev}/artifacts.json"
    differ = sorted(path for path in ours if ours[path] != theirs[path])
    plans = [path for path in ours if "/plans/" in path]
    assert plans and differ == sorted([*plans, manifest])
    for path in differ:
        if path != manifest:
            assert theirs[path].replace(staged, b"") == ours[path], path
    # and the artifact manifest records those files' digests; every other byte is the same
    mine, other = json.loads(ours[manifest]), json.loads(theirs[manifest])
    for doc in (mine, other):
        doc["artifacts"] = [a for a in doc["artifacts"] if f"{rev}/{a['path']}" not in differ]
    assert mine == other
    assert os.path.isdir(root / "resources")  # the workflow's own files stay where they are


@pytest.mark.snakemake
def test_demo_pipeline_end_to_end(demo_project):
    root = demo_project  # built once per session by `snakemake` (the profile runs the demo)
    revision = yaml.safe_load((root / "config/demo.yaml").read_text())["release"]["revision"]
    out = root / "results" / revision
    receipt = json.loads((out / "release/receipt.json").read_text())
    assert len(receipt["files"]) == 11 and all(f["verified"] for f in receipt["files"])
    summary = json.loads((out / "imports/source-present/budget-200/summary.json").read_text())
    assert summary["leaderboard"][0]["passes"] == 266
    assert summary["budget_audit"]["over_budget_count"] == 1
    assert (out / "report/index.html").exists() and (out / "artifacts.json").exists()
    assert (out / "plans/demo-two-sources/nop.json").exists()
    assert planned(root) == {}
    limit = root / "limit.yaml"
    limit.write_text("selections: {demo-two-sources: {limit: 2}}\n")
    assert planned(root, "--configfile", "config/demo.yaml", str(limit)) == {
        "select_tasks": 1,
        "write_plan": 1,
        "write_artifact_manifest": 1,
        "store_results": 1,
        "all": 1,
    }
    report = snakemake(root, "--report", "snakemake-report.zip")
    assert (root / "snakemake-report.zip").stat().st_size > 10_000, report.stderr
    again = snakemake(root)
    assert "Nothing to be done" in again.stdout + again.stderr
    # strict budget: only the comparison and what depends on it would rerun
    strict = root / "strict.yaml"
    strict.write_text("import: {strict_budget: true}\n")
    assert planned(root, "--configfile", "config/demo.yaml", str(strict)) == {
        "compare_models": 1,
        "render_figures": 1,
        "render_report": 1,
        "write_artifact_manifest": 1,
        "store_results": 1,
        "all": 1,
    }


@pytest.fixture
def mirror_project(tmp_path, release_files):
    """A project whose config fetches from a mirror folder we can change."""
    root = project(tmp_path)
    mirror = write_tree(tmp_path / "mirror", release_files)
    cfg = yaml.safe_load((root / "config/demo.yaml").read_text())
    del cfg["demo"]
    cfg["release"]["revision"] = "d" * 40
    # shell metacharacters in a path setting: every value reaches the shell quoted
    cfg["results_dir"] = "out dir/$(touch PWNED) 'q"
    cfg["source"] = {"kind": "dir", "mirror": str(mirror)}
    cfg["plans"] = {"items": []}
    (root / "config/test.yaml").write_text(yaml.safe_dump(cfg))
    return root, mirror, cfg


def write_config(root: Path, cfg: dict) -> None:
    (root / "config/test.yaml").write_text(yaml.safe_dump(cfg))


@pytest.mark.snakemake
def test_config_changes_rerun_exactly_the_affected_jobs(mirror_project):
    root, mirror, cfg = mirror_project
    args = ("--configfile", "config/test.yaml")
    snakemake(root, *args)
    assert planned(root, *args) == {}
    assert not list(root.rglob("PWNED"))

    # how a file is downloaded cannot change a verified byte: changing every transport
    # setting schedules nothing, not even the artifact manifest (its digest leaves them out)
    transport = {
        "connect_timeout_s": 3,
        "read_timeout_s": 7,
        "total_timeout_s": 61,
        "retries": 1,
        "backoff_factor": 0.25,
        "max_bytes": 12_345_678,
    }
    write_config(root, {**cfg, "source": {**cfg["source"], **transport}})
    assert planned(root, *args) == {}
    write_config(root, cfg)

    # a new pin (and new bytes) for one model: that file, its import, and what depends on them
    target = mirror / "results/demo-model-c.csv"
    data = target.read_bytes().replace(b"42.", b"43.", 1)
    target.write_bytes(data)
    cfg["models"]["demo-model-c"]["sha256"] = sha256_bytes(data)
    write_config(root, cfg)
    assert planned(root, *args) == {
        "fetch_file": 1,
        "verify_file": 1,
        "verify_release": 1,
        "import_model": 1,
        "compare_models": 1,
        "analyse_failures": 1,
        "analyse_tasks": 1,
        "render_figures": 1,
        "render_report": 1,
        "write_artifact_manifest": 1,
        "store_results": 1,
        "all": 1,
    }
    snakemake(root, *args)

    # the model list: the summary and what depends on it, no per-model import
    cfg["import"]["models"] = ["demo-model-a", "demo-model-b"]
    write_config(root, cfg)
    assert planned(root, *args) == {
        "compare_models": 1,
        "analyse_failures": 1,
        "analyse_tasks": 1,
        "render_figures": 1,
        "render_report": 1,
        "write_artifact_manifest": 1,
        "store_results": 1,
        "all": 1,
    }
    snakemake(root, *args)

    # a local run added: its import, its failure anatomy and pass@k, the report and the audit;
    # the figures do not show local runs, so they are not redrawn
    verdicts = mirror.parent / "verdicts"
    verdicts.mkdir()
    (verdicts / "v.json").write_text(
        json.dumps(
            {
                "task_id": "demo_s01_t001",
                "status": "error",
                "obligations": [],
                "checks": {},
                "error": {"kind": "oom", "message": "killed"},
                "verifier": {"name": "v", "version": "1"},
            }
        )
    )
    cfg["runs"] = {
        "mine": {"kind": "verdicts", "paths": [str(verdicts)], "selection": "demo-first-tasks"}
    }
    write_config(root, cfg)
    assert planned(root, *args) == {
        "import_run": 1,
        "analyse_run_failures": 1,
        "pass_at_k": 1,
        "render_report": 1,
        "write_artifact_manifest": 1,
        "store_results": 1,
        "all": 1,
    }
    snakemake(root, *args)
    html = next((root / cfg["results_dir"]).glob("*/report/index.html")).read_text()
    assert "<td>mine</td>" in html

    # a published count changed: the comparison (which checks it) and what reads its summary
    cfg["models"]["demo-model-a"]["published_passes"] = 267
    write_config(root, cfg)
    assert planned(root, *args) == {
        "compare_models": 1,
        "render_figures": 1,
        "render_report": 1,
        "write_artifact_manifest": 1,
        "store_results": 1,
        "all": 1,
    }
    snakemake(root, *args)
    html = next((root / cfg["results_dir"]).glob("*/report/index.html")).read_text()
    assert 'id="published-mismatch"' in html and "DIFFERS: published 267 (-1)" in html
    cfg["import"]["strict_published"] = True
    write_config(root, cfg)
    failed = snakemake(root, *args, check=False)
    assert failed.returncode != 0
    assert "strict published check refused: model 'demo-model-a'" in failed.stdout + failed.stderr
    cfg["models"]["demo-model-a"]["published_passes"] = 266
    cfg["import"]["strict_published"] = False
    write_config(root, cfg)
    snakemake(root, *args)

    # one selection changed: that selection and the audit only
    cfg["selections"]["demo-two-sources"]["limit"] = 2
    write_config(root, cfg)
    assert planned(root, *args) == {
        "select_tasks": 1,
        "write_artifact_manifest": 1,
        "store_results": 1,
        "all": 1,
    }
    snakemake(root, *args)
    assert planned(root, *args) == {}

    # a strict comparison of all models is refused, naming the over-budget record
    cfg["import"].update(models=[], strict_budget=True)
    write_config(root, cfg)
    failed = snakemake(root, *args, check=False)
    assert failed.returncode != 0
    assert "strict budget comparison refused" in failed.stdout + failed.stderr
    assert "demo-model-d task demo_s01_t006 cost USD 412.5" in failed.stdout + failed.stderr


@pytest.mark.snakemake
def test_the_anatomy_and_the_task_table_rerun_on_their_settings_and_plans_use_the_subset(
    demo_project, tmp_path
):
    """A near-miss share reruns the anatomy and what shows it; a task-table setting reruns the
    table (and its derived selection); a plan names the derived selection like any other."""
    root = tmp_path / "project"  # a copy: the session's demo project is only read
    shutil.copytree(demo_project, root, symlinks=True)
    share = root / "share.yaml"
    share.write_text("anatomy: {near_miss_share: 0.75}\n")
    jobs = planned(root, "--configfile", "config/demo.yaml", str(share))
    jobs.pop("write_plan")  # the copy moved the checkout, which a plan names by absolute path
    assert jobs == {
        "analyse_failures": 1,
        "render_figures": 1,
        "render_report": 1,
        "write_artifact_manifest": 1,
        "store_results": 1,
        "all": 1,
    }
    plan = root / "plan.yaml"
    plan.write_text(
        "task_table: {min_discrimination: 0.5}\n"
        "plans: {items: [{selection: demo-discriminative, agent: nop}]}\n"
    )
    args = ("--configfile", "config/demo.yaml", str(plan))
    assert planned(root, *args) == {
        "analyse_tasks": 1,
        "write_plan": 1,
        "render_report": 1,
        "write_artifact_manifest": 1,
        "store_results": 1,
        "all": 1,
    }
    snakemake(root, *args)
    rev = root / "results" / demo_revision()
    selection = json.loads((rev / "tasks/selections/demo-discriminative.json").read_text())
    table = json.loads((rev / "imports/source-present/budget-200/task-table.json").read_text())
    assert selection["derived"]["rule"].endswith(
        "discrimination at least 0.5, and the models' answers fit better than their shuffles "
        "within tasks"
    )
    written = json.loads((rev / "plans/demo-discriminative/nop.json").read_text())
    assert (
        [t["task_id"] for t in written["tasks"]]
        == selection["task_ids"]
        == [t["task_id"] for t in table["tasks"] if t["discriminative"]]
    )
    assert written["selection"]["selection_sha256"] == selection["selection_sha256"]
    # the demo report shows the local runs and the new sections
    html = (rev / "report/index.html").read_text()
    for part in ('id="failures"', 'id="tasks"', 'id="local-failures"', "demo-harbor"):
        assert part in html


@pytest.mark.snakemake
def test_the_power_target_plans_from_the_imports_and_is_not_in_all(demo_project, tmp_path):
    root = tmp_path / "project"  # a copy: the session's demo project is only read
    shutil.copytree(demo_project, root, symlinks=True)
    revision = yaml.safe_load((root / "config/demo.yaml").read_text())["release"]["revision"]
    assert "plan_power" not in planned(root, "--forceall")
    assert planned(root, "power") == {"plan_power": 1, "power": 1}
    result = snakemake(root, "power")
    plan = json.loads((root / "results" / revision / "power.json").read_text())
    assert plan["kind"] == "afbench power plan" and plan["question"] == "tasks"
    assert plan["models"]["a"] == "demo-model-c" and plan["difference"] == 0.1
    assert plan["line"] in result.stdout + result.stderr
    # a power setting changed reruns the plan only
    other = root / "power-other.yaml"
    other.write_text("power: {difference: null, tasks: 100}\n")
    assert planned(root, "power", "--configfile", "config/demo.yaml", str(other)) == {
        "plan_power": 1,
        "power": 1,
    }
    refused = root / "power-bad.yaml"
    refused.write_text("power: {models: [demo-model-c], baseline_rate: 0.5}\n")
    result = snakemake(root, "power", "--configfile", "config/demo.yaml", str(refused), check=False)
    assert (
        result.returncode != 0 and "two models or a baseline rate" in result.stdout + result.stderr
    )


@pytest.mark.snakemake
def test_bad_config_is_refused_before_anything_runs(mirror_project):
    root, _, cfg = mirror_project
    cfg["release"]["revision"] = "main"
    write_config(root, cfg)
    result = snakemake(root, "--configfile", "config/test.yaml", check=False)
    assert result.returncode != 0
    assert "'main' does not match" in result.stdout + result.stderr
    # a key written twice: Snakemake's own loader keeps the last; ours refuses it
    twice = root / "twice.yaml"
    twice.write_text(f"release:\n  revision: {'d' * 40}\n  revision: {'e' * 40}\n")
    result = snakemake(root, "--configfile", "config/test.yaml", str(twice), check=False)
    assert result.returncode != 0
    assert "duplicate key 'revision', first at line 2" in result.stdout + result.stderr
    assert not (root / "out dir").exists()
    # asking for a model without a pin: refused with how to supply it, nothing fetched
    cfg["release"]["revision"] = "d" * 40
    cfg["models"]["demo-model-b"]["sha256"] = None
    cfg["import"]["models"] = ["demo-model-a", "demo-model-b"]
    write_config(root, cfg)
    result = snakemake(root, "--configfile", "config/test.yaml", check=False)
    assert result.returncode != 0
    assert "Supply the pin as models.demo-model-b.sha256" in result.stdout + result.stderr
    assert not (root / "out dir").exists()


@pytest.mark.snakemake
def test_lint_is_clean():
    result = subprocess.run(
        [SNAKEMAKE, "--lint"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=snakemake_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations" in result.stdout + result.stderr


HEAVY = ("pandas", "matplotlib", "numpy", "pyarrow", "scipy")


PROBE = """#!{python}
# afbench, and after it which heavy libraries the command imported (a test's probe)
import json
import sys

from afbench.cli import main, words

code = main(sys.argv[1:])
heavy = sorted(name for name in {heavy!r} if name in sys.modules)
with open({log!r}, "a") as log:
    log.write(json.dumps([" ".join(words(sys.argv[1:])), heavy]) + "\\n")
sys.exit(code)
"""


@pytest.mark.snakemake
def test_a_job_imports_pandas_or_matplotlib_only_if_it_draws(tmp_path):
    """Every job kind of the demo pipeline (and a local run's import), then the seed's own
    commands on the release folder `afbench fetch` makes, run through a probe in front of
    `afbench`: only the figures' job imports matplotlib (and numpy with it), only the task
    table's Rasch fit numpy, none scipy (the clustered intervals' t quantile and degrees of
    freedom are computed in afbench.core.stats) or pandas (a job that needs none of them would pay
    ~0.7 s of CPU for pandas, ~0.4 s for scipy.special, ~0.2 s for numpy)."""
    root = project(tmp_path)
    probe_dir, log = tmp_path / "probe", tmp_path / "imported.jsonl"
    probe_dir.mkdir()
    probe = probe_dir / "afbench"
    probe.write_text(
        PROBE.format(python=SNAKEMAKE.replace("snakemake", "python"), heavy=HEAVY, log=str(log))
    )
    probe.chmod(0o755)
    env = {**snakemake_env(), "PATH": f"{probe_dir}:{snakemake_env()['PATH']}"}
    verdicts = tmp_path / "verdicts"
    verdicts.mkdir()
    (verdicts / "v.json").write_text(
        json.dumps(
            {
                "task_id": "demo_s01_t001",
                "status": "rejected",
                "obligations": [],
                "checks": {"lean_kernel": False},
                "error": None,
                "verifier": {"name": "v", "version": "1"},
            }
        )
    )
    run = {"mine": {"kind": "verdicts", "paths": [str(verdicts)], "selection": "demo-first-tasks"}}
    (root / "runs.yaml").write_text(yaml.safe_dump({"runs": run}))

    def afbench(*args: str) -> None:
        result = subprocess.run(
            [*args], cwd=root, env=env, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    afbench(SNAKEMAKE, "--configfile", "config/demo.yaml", "runs.yaml")
    seed = ["--config", "config/demo.yaml", "--release-dir", "rel"]
    afbench(str(probe), "fetch", *seed, "--all-models")
    afbench(str(probe), "tasks", *seed, "--output", "tasks.json")
    afbench(str(probe), "import-results", *seed, "--all-models", "--output", "reference.json")
    imported: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        command, heavy = json.loads(line)
        imported.setdefault(command, set()).update(heavy)
    kinds = [
        "fetch-file",
        "write-release-identity",
        "verify-file",
        "verify-release",
        "export-catalog",
        "select-tasks",
        "write-plan",
        "import-model",
        "compare-models",
        "import-run",
        "render-report",
        "write-artifact-manifest",
    ]
    assert {f"job {kind}" for kind in kinds} | {"fetch", "tasks", "import-results"} <= set(imported)
    assert {command: sorted(heavy) for command, heavy in imported.items() if heavy} == {
        "job render-figures": ["matplotlib", "numpy"],
        "job analyse-tasks": ["numpy"],  # the Rasch fit; no pandas, no matplotlib
        # the store's tables are the frames' (pandas), written as Parquet (pyarrow)
        "job store-results": ["numpy", "pandas", "pyarrow"],
    }


@pytest.mark.snakemake
def test_the_demo_built_in_two_folders_gives_the_same_artifacts(demo_project, tmp_path):
    """Artifacts name their inputs as the config names them (relative to the working folder),
    never by where this machine keeps them: built elsewhere, every artifact has the same bytes.
    Plans are left out (their argv names real paths), and so are the logs and the manifest's
    entries for plans."""
    elsewhere = project(tmp_path / "elsewhere")
    snakemake(elsewhere)

    def artifacts(root: Path) -> dict[str, bytes]:
        tree = root / "results" / demo_revision()
        found = {
            str(p.relative_to(tree)): p.read_bytes()
            for p in sorted(tree.rglob("*"))
            if p.is_file() and p.relative_to(tree).parts[0] not in ("plans", "logs")
        }
        manifest = json.loads(found.pop("artifacts.json"))
        manifest["artifacts"] = [
            a for a in manifest["artifacts"] if not a["path"].startswith("plans/")
        ]
        found["artifacts.json"] = json.dumps(manifest, sort_keys=True).encode()
        return found

    here, there = artifacts(demo_project), artifacts(elsewhere)
    assert len(here) > 40 and sorted(here) == sorted(there)
    differing = [name for name in here if here[name] != there[name]]
    assert differing == [], differing
