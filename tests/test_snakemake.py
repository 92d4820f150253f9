"""Real Snakemake runs in tmp dirs: the demo end to end, no-op reruns, and reruns of exactly
what a config change touches."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from afbench.fsutil import sha256_bytes

from conftest import REPO, SNAKEMAKE, planned, project, snakemake, snakemake_env, write_tree

pytestmark = pytest.mark.snakemake


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
        "render_figures": 1,
        "render_report": 1,
        "write_artifact_manifest": 1,
        "all": 1,
    }
    snakemake(root, *args)

    # the model list: the summary and what depends on it, no per-model import
    cfg["import"]["models"] = ["demo-model-a", "demo-model-b"]
    write_config(root, cfg)
    assert planned(root, *args) == {
        "compare_models": 1,
        "render_figures": 1,
        "render_report": 1,
        "write_artifact_manifest": 1,
        "all": 1,
    }
    snakemake(root, *args)

    # a local run added: its import, the report and the audit; the figures do not show local
    # runs, so they are not redrawn
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
        "render_report": 1,
        "write_artifact_manifest": 1,
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
    assert planned(root, *args) == {"select_tasks": 1, "write_artifact_manifest": 1, "all": 1}
    snakemake(root, *args)
    assert planned(root, *args) == {}

    # a strict comparison of all models is refused, naming the over-budget record
    cfg["import"].update(models=[], strict_budget=True)
    write_config(root, cfg)
    failed = snakemake(root, *args, check=False)
    assert failed.returncode != 0
    assert "strict budget comparison refused" in failed.stdout + failed.stderr
    assert "demo-model-d task demo_s01_t006 cost USD 412.5" in failed.stdout + failed.stderr


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


HEAVY = ("pandas", "matplotlib", "numpy", "pyarrow")
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


def test_a_job_imports_pandas_or_matplotlib_only_if_it_draws(tmp_path):
    """Every job kind of the demo pipeline (and a local run's import), then the seed's own
    commands on the release folder `afbench fetch` makes, run through a probe in front of
    `afbench`: only the figures' job imports matplotlib, and none imports pandas (a job that
    needs neither would pay ~0.7 s of CPU for it)."""
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
        "job render-figures": ["matplotlib", "numpy"]
    }
