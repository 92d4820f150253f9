"""The command line as a user meets it: help with examples, clean errors, no tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

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
        (["fetch", "--config", "nowhere.yaml"], "config file not found"),
        (["tasks"], "no config given"),
        (["verdict", "--path", "nowhere.json", "--task", "t"], "verdict file not found"),
        (["verdict", "--path", "x.json", "--task", "../etc"], "not a safe name"),
        (
            ["import-results", "--config", "config/demo.yaml", "--model", "nope"],
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
    cfg = yaml.safe_load((REPO / "config/config.yaml").read_text())
    cfg["results_dir"] = str(tmp_path)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    result = cli("fetch", "--config", str(path), "--only", "fable-5")
    assert result.returncode == 2
    assert "models.fable-5.sha256" in result.stderr and "afbench discover" in result.stderr
    assert not any(tmp_path.rglob("*.csv"))


def test_relabelled_condition_is_refused_by_the_cli(fetched_config, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(fetched_config))
    result = cli(
        "import-results", "--config", str(path), "--all-models", "--source-condition", "source-free"
    )
    assert result.returncode == 2 and "cannot be relabelled source-free" in result.stderr
    result = cli("import-results", "--config", str(path), "--all-models", "--budget-usd", "150")
    assert result.returncode == 2 and "nominal budget" in result.stderr
    result = cli("import-results", "--config", str(path), "--all-models", "--strict-budget")
    assert result.returncode == 2 and "strict budget comparison refused" in result.stderr
    result = cli("import-results", "--config", str(path), "--all-models")
    assert result.returncode == 0, result.stderr
