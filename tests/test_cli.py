"""The command line as a user meets it: help with examples, clean errors, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from afbench.cli import EXAMPLES, build_parser

from conftest import REPO

AFBENCH = str(Path(sys.executable).with_name("afbench"))


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([AFBENCH, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_every_command_has_help_with_an_example():
    commands = build_parser()._subparsers._group_actions[0].choices
    assert set(commands) == set(EXAMPLES)
    for name in commands:
        result = cli(name, "--help")
        assert result.returncode == 0
        assert "examples:" in result.stdout and f"afbench {name}" in result.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (["fetch", "--config", "nowhere.yaml", "--release-dir", "x"], "config file not found"),
        (["tasks", "--output", "x.json"], "give --release-dir DIR"),
        (["fetch", "--file", "M.csv", "--sha256", "ab", "--output", "x"], "64 lowercase hex"),
        (
            ["import-results", "--release-dir", "nowhere", "--all-models", "--output", "x"],
            "receipt not found",
        ),
        (["verdict", "--path", "nowhere.json", "--task", "t"], "verdict file not found"),
        (["verdict", "--path", "x.json", "--task", "../etc"], "not a safe name"),
        (
            [
                "import-model",
                "--catalog",
                "c",
                "--receipt",
                "r",
                "--results",
                "x",
                "--model",
                "nope",
                "--output",
                "o.json",
                "--config",
                "config/demo.yaml",
            ],
            "unknown model 'nope'",
        ),
    ],
)
def test_bad_input_is_one_clear_error_without_traceback(args, message):
    result = cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("afbench: error:")


def test_unpinned_official_model_explains_how_to_supply_the_pin(tmp_path):
    result = cli("fetch", "--release-dir", str(tmp_path / "rel"), "--model", "fable-5")
    assert result.returncode == 2
    assert "models.fable-5.sha256" in result.stderr and "afbench discover" in result.stderr
    assert not (tmp_path / "rel").exists()


def test_relabelled_condition_is_refused_by_the_cli(fetched_config, tmp_path):
    from conftest import config_file, release_dir

    common = [
        "import-results",
        "--release-dir",
        str(release_dir(fetched_config)),
        "--config",
        config_file(fetched_config),
        "--all-models",
        "--output",
        str(tmp_path / "o.json"),
    ]
    result = cli(*common, "--source-condition", "source-free")
    assert result.returncode == 2 and "cannot be relabelled source-free" in result.stderr
    result = cli(*common, "--budget-usd", "150")
    assert result.returncode == 2 and "nominal budget" in result.stderr
    result = cli(*common, "--strict-budget")
    assert result.returncode == 2 and "strict budget comparison refused" in result.stderr
    assert not (tmp_path / "o.json").exists()
    result = cli(*common)
    assert result.returncode == 0, result.stderr
    reference = json.loads((tmp_path / "o.json").read_text())
    assert reference["kind"] == "afbench official reference"
    assert (
        len(reference["models"]) == 9
        and reference["summary"]["budget_audit"]["over_budget_count"] == 1
    )


def test_refusals_never_remove_an_earlier_artifact(fetched_config, tmp_path):
    """A refused strict comparison keeps the previous summary and leaderboard; a file outside
    the artifact folder is refused by the manifest; non-finite or negative numbers are refused."""
    from conftest import run_all

    rev = run_all(fetched_config)
    imports = rev / "imports/source-present/budget-200"
    before = {p: p.read_bytes() for p in (imports / "summary.json", imports / "leaderboard.csv")}
    each = [a for m in sorted(imports.glob("demo-model-*.json")) for a in ("--import", str(m))]
    result = cli(
        "compare",
        *each,
        "--strict-budget",
        "--summary",
        str(imports / "summary.json"),
        "--leaderboard",
        str(imports / "leaderboard.csv"),
    )
    assert result.returncode == 2 and "strict budget comparison refused" in result.stderr
    assert {p: p.read_bytes() for p in before} == before
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    result = cli(
        "artifacts",
        "--root",
        str(rev),
        "--revision",
        "a" * 40,
        "--config-digest",
        "0" * 64,
        "--output",
        str(tmp_path / "m.json"),
        str(outside),
    )
    assert result.returncode == 2 and "outside the artifact directory" in result.stderr
    assert not (tmp_path / "m.json").exists()
    from conftest import config_file, release_dir

    common = [
        "import-results",
        "--release-dir",
        str(release_dir(fetched_config)),
        "--config",
        config_file(fetched_config),
        "--all-models",
        "--output",
        str(tmp_path / "o.json"),
    ]
    for budget in ("nan", "inf", "-200", "200\n"):
        result = cli(*common, "--budget-usd", budget)
        assert result.returncode == 2 and "budget_usd" in result.stderr, budget
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "o.json").exists()


def test_a_partial_column_mapping_keeps_the_other_columns(fetched_config, tmp_path):
    from conftest import catalog_of, release_dir, revision_dir

    catalog_of(fetched_config)
    common = [
        "import-model",
        "--catalog",
        str(revision_dir(fetched_config) / "tasks/catalog.json"),
        "--receipt",
        str(release_dir(fetched_config) / "receipt.json"),
        "--results",
        str(release_dir(fetched_config) / "results/demo-model-a.csv"),
        "--model",
        "demo-model-a",
        "--display-name",
        "A",
        "--pinned-condition",
        "source-present",
        "--source-condition",
        "source-present",
        "--budget-usd",
        "200",
    ]
    result = cli(*common, "--column", "task_id=task_id", "--output", str(tmp_path / "a.json"))
    assert result.returncode == 0, result.stderr
    result = cli(*common, "--column", "nope=x", "--output", str(tmp_path / "b.json"))
    assert result.returncode == 2 and "not a field of this file" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "b.json").exists()
