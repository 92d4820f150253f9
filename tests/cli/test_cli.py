"""The command line as a user meets it: help with examples, clean errors, no tracebacks."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from afbench.cli import build_parser, main, types
from afbench.cli.jobs import JOBS
from afbench.cli.seed import COMMANDS, DEMO

from conftest import (
    RELEASE,
    REPO,
    body,
    catalog_of,
    config_file,
    config_for,
    https_source,
    one_clean_message,
    one_line,
    release_dir,
    revision_dir,
    run_afbench,
    wait_until,
)

AFBENCH = str(Path(sys.executable).with_name("afbench"))


def cli(*args: str, cwd: Path = REPO, process: bool = False) -> subprocess.CompletedProcess:
    """`afbench ARGS` run from the repository (run_afbench): through the script's own `main` in
    this process, or with process=True the installed script (the subprocess door is checked
    below, by test_python_dash_m_afbench_is_the_command_line and the tests of signals and of
    the streams' encoding)."""
    return run_afbench(*args, cwd=cwd, process=process)


def in_process(*args: str) -> subprocess.CompletedProcess:
    return run_afbench(*args)


def test_every_user_command_has_help_with_an_example_and_every_job_has_help():
    commands = build_parser()._subparsers._group_actions[0].choices
    assert set(commands) == {*COMMANDS, "demo", "job"}
    for words in [[name] for name in COMMANDS] + [["demo", name] for name in DEMO]:
        result = in_process(*words, "--help")
        assert result.returncode == 0
        assert "examples:" in result.stdout and f"afbench {' '.join(words)}" in result.stdout
    for name in JOBS:
        result = in_process("job", name, "--help")
        assert result.returncode == 0 and "--" in result.stdout, name
    # the installed script prints them too (its width may differ: a terminal's, a pipe's)
    first = next(iter(COMMANDS))
    script = cli(first, "--help", process=True)
    assert script.returncode == 0 and "examples:" in script.stdout
    assert f"afbench {first}" in script.stdout
    script = cli("job", next(iter(JOBS)), "--help", process=True)
    assert script.returncode == 0 and "--" in script.stdout


def test_python_dash_m_afbench_is_the_command_line():
    """`python -m afbench` runs what the `afbench` script runs: the same help, the same
    refusal and exit status."""
    for args in (["--help"], ["tasks", "--release-dir", "nowhere"]):
        module = subprocess.run(
            [sys.executable, "-m", "afbench", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        script = cli(*args, process=True)
        assert (module.returncode, module.stdout, module.stderr) == (
            script.returncode,
            script.stdout,
            script.stderr,
        )
    assert module.returncode == 2 and module.stderr.startswith("afbench: error: ")


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


def test_refusals_never_remove_an_earlier_artifact(built_config, tmp_path):
    """A refused strict comparison keeps the previous summary and leaderboard; a file outside
    the artifact folder is refused by the manifest; non-finite or negative numbers are refused."""
    from conftest import published_flags

    fetched_config = built_config  # the whole chain has run on it
    rev = revision_dir(fetched_config)
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
    from conftest import column_flags, release_dir

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
    from conftest import column_flags, release_dir

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


VERDICT = (
    b'{"task_id": "t", "status": "accepted", "obligations": [{"declaration": "A", '
    b'"status": "accepted", "detail": ""}], "checks": {"target_equivalence": true, '
    b'"allowed_axioms": true, "lean_kernel": true, "nanoda_replay": true}, "error": null, '
    b'"verifier": {"name": "v", "version": "1"}}'
)


def afbench(*args: str | bytes, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [AFBENCH, *args],
        cwd=cwd,
        capture_output=True,
        timeout=60,  # a hang guard, not a speed check (bench/ measures speed)
        env={**os.environ, **env},
        check=False,
    )


def test_verdict_with_a_file_name_that_is_not_utf8_prints_and_writes(tmp_path):
    name = os.fsdecode(b"v\xff.json")
    (tmp_path / name).write_bytes(VERDICT)
    result = afbench(
        "verdict", "--path", name, "--task", "t", cwd=tmp_path, PYTHONIOENCODING="utf-8"
    )
    assert result.returncode == 0, result.stderr
    assert b"v\\\\xff.json" in result.stdout
    result = afbench("verdict", "--path", name, "--task", "t", "--output", "o.json", cwd=tmp_path)
    assert result.returncode == 0 and b"v\\\\xff.json" in (tmp_path / "o.json").read_bytes()
    missing = os.fsdecode(b"nope\xff\n.json")
    result = afbench(
        "verdict", "--path", missing, "--task", "t", cwd=tmp_path, PYTHONIOENCODING="utf-8"
    )
    assert result.returncode == 2
    one_clean_message(result.stderr.decode())
    assert b"nope\\udcff\\n.json: verdict file not found" in result.stderr


# 3. the CLI edge: verdict --path on what is not a regular file -----------------------------
@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "folder", "symlink"])
def test_verdict_path_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind):
    (tmp_path / "x.json").write_bytes(b"earlier")
    (tmp_path / "real.json").write_bytes(VERDICT)
    path = {"/dev/zero": "/dev/zero", "fifo": "fifo", "folder": "folder", "symlink": "link"}[kind]
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
    elif kind == "folder":
        (tmp_path / "folder").mkdir()
    elif kind == "symlink":
        (tmp_path / "link").symlink_to(tmp_path / "real.json")
    result = afbench("verdict", "--path", path, "--task", "t", "--output", "x.json", cwd=tmp_path)
    assert result.returncode == 2
    one_clean_message(result.stderr.decode())
    assert f"afbench: error: {path}: verdict file is ".encode() in result.stderr
    assert (tmp_path / "x.json").read_bytes() == b"earlier"


def test_demo_repo_cli_refusal_is_one_message(tmp_path):
    (tmp_path / "keep.txt").write_text("keep")
    result = run_afbench(
        "demo", "repo", "--out", str(tmp_path), "--release-files", str(RELEASE), cwd=tmp_path
    )
    assert result.returncode == 2
    one_clean_message(result.stderr)
    assert (tmp_path / "keep.txt").read_text() == "keep"


def test_every_path_flag_says_whether_the_command_reads_or_writes_it():
    """Structural: a command declares its files through its flags' types (cli.types), so a new
    command can not forget the check; a plain `type=Path` would escape it."""
    offenders, seen = [], []

    def walk(parser, words):
        for action in parser._actions:
            if action.type is Path:
                offenders.append(" ".join([*words, *action.option_strings]))
            if getattr(action, "type", None) in (types.output_path, types.input_path):
                seen.append(action.type)
            if isinstance(action.choices, dict):
                for name, sub in action.choices.items():
                    walk(sub, [*words, name])

    walk(build_parser(), ["afbench"])
    assert offenders == [] and types.output_path in seen and types.input_path in seen


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_sigterm_and_sighup_end_a_command_as_sigint_does(
    tmp_path, http_release, release_files, demo_yaml, signame
):
    http_release["handler"].faults[http_release["prefix"] + "MANIFEST.csv"] = body(
        release_files["MANIFEST.csv"], delay=30
    )
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"], read_timeout_s=60, total_timeout_s=60),
        tmp_path / "r",
        demo_yaml,
    )
    out = tmp_path / "release"
    run = subprocess.Popen(
        [AFBENCH, "fetch", "--config", config_file(cfg), "--release-dir", str(out), "--all-models"],
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_until(lambda: http_release["handler"].requests, "the download never began", run)
    run.send_signal(getattr(signal, signame))
    _, err = run.communicate(timeout=30)
    assert run.returncode == 128 + getattr(signal, signame), err
    assert one_line(err) == f"afbench: interrupted by {signame}; nothing was replaced"
    assert not out.exists() or not any(p.is_file() for p in out.rglob("*"))


@pytest.mark.parametrize("name", ["../up", "a/b", "-x", ".x"])
def test_unsafe_selection_and_run_names_are_refused(fetched_config, tmp_path, capsys, name):
    tasks = [
        "tasks",
        "--release-dir",
        str(release_dir(fetched_config)),
        "--config",
        config_file(fetched_config),
        "--output",
        str(tmp_path / "sel.json"),
    ]
    assert main([*tasks, f"--name={name}", "--task", "demo_s01_t001"]) == 2
    assert not (tmp_path / "sel.json").exists()
    assert main([*tasks, "--name=ok", "--task", "demo_s01_t001"]) == 0
    run = [
        "import-run",
        f"--name={name}",
        "--kind",
        "verdicts",
        "--path",
        str(tmp_path),
        "--selection",
        str(tmp_path / "sel.json"),
        "--output-dir",
        str(tmp_path / "run"),
    ]
    assert main(run) == 2
    assert "expected a safe name" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


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
    expected = "a whole number >= 1 and <= 100000000 (or empty: none)"
    assert f"argument --limit: expected {expected}, found 'two'" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
    assert main([*common, "--book", "demo_source_02", "--limit", "2"]) == 0
    assert len(json.loads((tmp_path / "x.json").read_text())["task_ids"]) == 2


def test_one_parser_serves_every_command_line_of_its_words_in_a_process():
    """The parser of a command's words is built once a process; parsing leaves it as it was:
    a repeated flag collects only this command line's values, never an earlier one's."""
    line = ["job", "discover-release", "--checkout=", "--revision=" + "a" * 40]
    line += ["--column=task_id=id", "--discovery=out.json", "--fragment=f.yaml"]
    from afbench.cli import words

    parser = build_parser(words(line))
    first = parser.parse_args([*line, "--skip=checker=a.py", "--skip=checker=b.py"])
    again = build_parser(words(line)).parse_args([*line, "--skip=checker=c.py"])
    assert build_parser(words(line)) is parser
    assert [f.path for f in first.skip] == ["a.py", "b.py"]
    assert [f.path for f in again.skip] == ["c.py"]
    assert parser.parse_args(line).skip == []
