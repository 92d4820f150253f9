"""The command line as a user meets it: help with examples, clean errors, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from afbench.cli import build_parser
from afbench.cli.jobs import JOBS
from afbench.cli.seed import COMMANDS, DEMO

from conftest import REPO

AFBENCH = str(Path(sys.executable).with_name("afbench"))


def cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([AFBENCH, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_every_user_command_has_help_with_an_example_and_every_job_has_help():
    commands = build_parser()._subparsers._group_actions[0].choices
    assert set(commands) == {*COMMANDS, "demo", "job"}
    for words in [[name] for name in COMMANDS] + [["demo", name] for name in DEMO]:
        result = cli(*words, "--help")
        assert result.returncode == 0
        assert "examples:" in result.stdout and f"afbench {' '.join(words)}" in result.stdout
    for name in JOBS:
        result = cli("job", name, "--help")
        assert result.returncode == 0 and "--" in result.stdout, name


@pytest.mark.parametrize(
    "args,message",
    [
        (["fetch", "--config", "nowhere.yaml", "--release-dir", "x"], "config file not found"),
        (["tasks", "--output", "x.json"], "the following arguments are required: --release-dir"),
        (["tasks", "--release-dir", "x", "--output", "x.json", "--limit", "-1"], "whole number"),
        (["job", "fetch-file", "--sha256", "ab"], "expected 64 lowercase hex digits, found 'ab'"),
        (
            ["import-results", "--release-dir", "nowhere", "--all-models", "--output", "x"],
            "receipt not found",
        ),
        (["verdict", "--path", "nowhere.json", "--task", "t"], "verdict file not found"),
        (["verdict", "--path", "x.json", "--task", "../etc"], "expected a safe name"),
        (
            [
                "import-results",
                "--release-dir",
                "resources/demo-release",
                "--model",
                "nope",
                "--output",
                "o.json",
                "--config",
                "config/demo.yaml",
            ],
            "receipt not found",
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
    from conftest import published_flags, run_all

    rev = run_all(fetched_config)
    imports = rev / "imports/source-present/budget-200"
    before = {p: p.read_bytes() for p in (imports / "summary.json", imports / "leaderboard.csv")}
    each = [f"--import={m}" for m in sorted(imports.glob("demo-model-*.json"))]
    result = cli(
        "job",
        "compare-models",
        *each,
        "--strict-budget=true",
        *published_flags(fetched_config),
        f"--summary={imports / 'summary.json'}",
        f"--leaderboard={imports / 'leaderboard.csv'}",
    )
    assert result.returncode == 2 and "strict budget comparison refused" in result.stderr
    assert {p: p.read_bytes() for p in before} == before
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    result = cli(
        "job",
        "write-artifact-manifest",
        f"--root={rev}",
        f"--revision={'a' * 40}",
        f"--config-digest={'0' * 64}",
        f"--output={tmp_path / 'm.json'}",
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
        assert result.returncode == 2 and "--budget-usd" in result.stderr, budget
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "o.json").exists()


def test_a_job_needs_every_column_mapped_once(fetched_config, tmp_path):
    from conftest import catalog_of, column_flags, release_dir, revision_dir

    catalog_of(fetched_config)
    common = [
        "job",
        "import-model",
        f"--catalog={revision_dir(fetched_config) / 'tasks/catalog.json'}",
        f"--verified={release_dir(fetched_config) / 'receipt.json'}",
        f"--results={release_dir(fetched_config) / 'results/demo-model-a.csv'}",
        "--model=demo-model-a",
        "--display-name=A",
        "--pinned-condition=source-present",
        "--source-condition=source-present",
    ]
    columns = column_flags("column", fetched_config["columns"]["results"])
    result = cli(*common, *columns, "--output", str(tmp_path / "a.json"))
    assert result.returncode == 0, result.stderr
    for wrong, message in (
        (columns[:1], "fields without a column"),
        ([*columns, "--column=nope=x"], "not a field of this file"),
        ([*columns, columns[0]], "field mapped twice"),
    ):
        result = cli(*common, *wrong, "--output", str(tmp_path / "b.json"))
        assert result.returncode == 2 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and not (tmp_path / "b.json").exists()


def test_a_value_that_begins_with_a_dash_reaches_the_job_intact(fetched_config, tmp_path):
    """Rules pass every value as --flag=value, so a display name such as `--> x` is a value."""
    from conftest import catalog_of, column_flags, release_dir, revision_dir

    catalog_of(fetched_config)
    out = tmp_path / "a.json"
    result = cli(
        "job",
        "import-model",
        f"--catalog={revision_dir(fetched_config) / 'tasks/catalog.json'}",
        f"--verified={release_dir(fetched_config) / 'receipt.json'}",
        f"--results={release_dir(fetched_config) / 'results/demo-model-a.csv'}",
        "--model=demo-model-a",
        "--display-name=--> x",
        "--pinned-condition=source-present",
        "--source-condition=source-present",
        *column_flags("column", fetched_config["columns"]["results"]),
        f"--output={out}",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(out.read_text())["display_name"] == "--> x"
