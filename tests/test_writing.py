"""Hostile input, round three (issue 20): what afbench writes is as safe as what it reads, and
what it runs (git) can do nothing but read objects. One test (or more) per class, through the
command line, and through Snakemake where the class can happen there. bench/robustness.py
runs the same properties far longer."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afbench import demo, fsutil
from afbench.cli import build_parser, types
from afbench.errors import AfbenchError
from afbench.fetch import GitSource
from afbench.runs import read_harbor_job

import properties as prop
from conftest import (
    FIXTURES,
    body,
    config_file,
    config_for,
    git,
    https_source,
    make_git_repo,
    project,
    refusal_lines,
    release_dir,
    run_all,
    snakemake,
    snakemake_env,
)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
AFBENCH = str(Path(sys.executable).with_name("afbench"))


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = refusal_lines(err)
    assert len(lines) == 1, err
    return lines[0]


def cli(*argv: object) -> tuple[int, str]:
    return prop.cli(*argv)


# --- 1. an output never destroys an input or a special file ----------------------------------
@pytest.mark.parametrize(
    "command", ["verdict", "select-tasks", "compare-models", "import-run", "tasks"]
)
@pytest.mark.parametrize("how", prop.ALIASES)
def test_an_output_that_is_one_of_the_inputs_is_refused_and_the_input_kept(command, how):
    _, names, inputs = prop.write_tree().commands()[command]
    outcomes = {
        prop.check_output_is_input(command, o, i, how)
        for o in range(len(names))
        for i in range(min(len(inputs), 3))  # tasks: its config and two release files
    }
    assert outcomes <= {"refused", "skipped"}
    assert "refused" in outcomes or (how == "input via link" and command == "tasks")


def test_an_import_never_replaces_a_trials_only_result_json(tmp_path):
    """The issue's case: `--summary` naming a trial's result.json (the job is an input folder,
    and that file an input)."""
    job = shutil.copytree(FIXTURES / "demo-oracle", tmp_path / "job")
    result = next(job.glob("hello-pass__*/result.json"))
    before = result.read_bytes()
    tree = prop.write_tree()
    code, err = cli(
        "job",
        "import-run",
        f"--selection={tree.selection}",
        "--name=r",
        "--kind=harbor",
        f"--path={job}",
        "--budget-usd=200",
        f"--summary={result}",
        f"--outcomes={tmp_path / 'o.csv'}",
        f"--attempts={tmp_path / 'a.csv'}",
    )
    line = one_line(err)
    assert code == 2 and str(result) in line and str(job) in line, line
    assert "inside the input folder" in line
    assert result.read_bytes() == before and not (tmp_path / "o.csv").exists()
    # the seed's door: an output folder inside the job folder
    code, err = cli(
        "import-run",
        "--selection",
        tree.selection,
        "--name",
        "r",
        "--kind",
        "harbor",
        "--path",
        job,
        "--output-dir",
        job / "hello-pass__BXEW54v",
    )
    assert code == 2 and "inside the input folder" in one_line(err)
    assert result.read_bytes() == before


@pytest.mark.parametrize("command", ["compare-models", "import-run"])
@pytest.mark.parametrize("how", ["same path", "dotted path", "through a linked folder"])
def test_two_outputs_that_are_one_file_are_refused(command, how):
    assert prop.check_two_outputs_one_path(command, 0, 1, how) == "refused"


@pytest.mark.parametrize("kind", prop.SPECIAL_KINDS)
@pytest.mark.parametrize("command", ["verdict", "compare-models"])
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_alone(command, kind):
    if kind in ("character device", "/dev/null") and os.geteuid() != 0:
        pytest.skip("only root can make or replace a device node")
    for index in range(2):
        assert prop.check_special_output(command, index, kind) == "refused"


def test_dev_null_survives_an_output_flag_for_root():
    if os.geteuid() != 0:
        pytest.skip("only root could replace /dev/null")
    tree = prop.write_tree()
    code, err = cli("verdict", "--path", tree.verdict, "--task", tree.task, "--output", "/dev/null")
    assert code == 2 and "/dev/null: output is a character device" in one_line(err)
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_export_never_writes_into_a_results_tree(fetched_config, tmp_path):
    rev = run_all(fetched_config)
    artifacts = {p: p.read_bytes() for p in rev.rglob("*") if p.is_file()}
    for out in (rev / "tables", rev / "imports" / "source-present" / "budget-200", rev):
        code, err = cli("export", "--root", rev, "--format", "csv", "--output-dir", out)
        assert code == 2 and "inside the input folder" in one_line(err), err
    # another revision's tree (it has an artifact manifest): refused too
    other = tmp_path / "other-rev"
    shutil.copytree(rev, other)
    code, err = cli("export", "--root", rev, "--format", "csv", "--output-dir", other / "imports")
    assert code == 2 and "inside the results tree" in one_line(err), err
    assert {p: p.read_bytes() for p in rev.rglob("*") if p.is_file()} == artifacts
    code, err = cli("export", "--root", rev, "--format", "csv", "--output-dir", tmp_path / "tables")
    assert code == 0, err


def _umasked(mask: int, *argv: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [AFBENCH, *map(str, argv)],
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.umask(mask),
        check=False,
        timeout=120,
    )


def test_outputs_are_created_honouring_the_umask(tmp_path):
    tree = prop.write_tree()
    for mask in (0o077, 0o027, 0o002):
        out = tmp_path / f"verdict-{mask:o}.json"
        done = _umasked(
            mask, "verdict", "--path", tree.verdict, "--task", tree.task, "--output", out
        )
        assert done.returncode == 0, done.stderr
        assert out.stat().st_mode & 0o777 == 0o666 & ~mask
        release = tmp_path / f"release-{mask:o}"
        done = _umasked(
            mask, "fetch", "--config", tree.config, "--release-dir", release, "--all-models"
        )
        assert done.returncode == 0, done.stderr
        assert (release / "MANIFEST.csv").stat().st_mode & 0o777 == 0o444 & ~mask  # verified
        assert (release / "receipt.json").stat().st_mode & 0o777 == 0o666 & ~mask


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


# --- 2. a command's outputs are one unit -------------------------------------------------------
@pytest.mark.parametrize("command", ["compare-models", "import-run", "verdict"])
@pytest.mark.parametrize("phase", ["stage", "rename"])
@pytest.mark.parametrize("signame", prop.STOP_SIGNALS)
def test_a_signal_at_any_step_of_writing_leaves_all_old_or_all_new_outputs(command, phase, signame):
    steps = len(prop.write_tree().commands()[command][1])
    outcomes = {prop.check_interrupted_writes(command, phase, s, signame) for s in range(steps)}
    assert outcomes == ({"all new"} if phase == "rename" else {"all old"})


def test_a_failed_rename_says_exactly_what_was_replaced(tmp_path, monkeypatch):
    tree = prop.write_tree()
    summary, board = tmp_path / "s.json", tmp_path / "b.csv"
    summary.write_text("old")
    board.write_text("old")
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    code, err = cli(*tree.compare(summary, board))
    line = one_line(err)
    assert code == 2 and f"{board} already replaced, {summary} not" in line, line
    assert "nothing was replaced" not in line
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]


def test_a_refusal_after_a_first_write_says_what_was_written(tmp_path):
    """`fetch` writes each release file, then the receipt. A receipt that could not be written
    is refused before anything is fetched; a release file that is in the way is found only
    after the files before it were written, and the message says which."""
    tree = prop.write_tree()
    release = tmp_path / "release"
    (release / "receipt.json").mkdir(parents=True)  # a folder where the receipt goes
    code, err = cli("fetch", "--config", tree.config, "--release-dir", release, "--all-models")
    line = one_line(err)
    assert code == 2 and "receipt.json: output is a folder" in line, line
    assert sorted(p.name for p in release.rglob("*")) == ["receipt.json"]
    shutil.rmtree(release)
    (release / "results" / "demo-model-b.csv").mkdir(parents=True)
    code, err = cli("fetch", "--config", tree.config, "--release-dir", release, "--all-models")
    line = one_line(err)
    assert code == 2 and "demo-model-b.csv" in line and "nothing was replaced" not in line
    assert "(written before this error, each whole: " in line and "MANIFEST.csv" in line, line


def _exporting(tmp_path, step: int, signum: int, phase: str) -> tuple[int, str, dict, dict]:
    rev = prop.write_tree().root
    out = tmp_path / f"tables-{phase}-{step}-{signum}"
    code, err = cli("export", "--root", rev, "--format", "csv", "--output-dir", out)
    assert code == 0, err
    new = {p.name: p.read_bytes() for p in out.iterdir()}
    for path in out.iterdir():
        path.write_bytes(b"old")
    real_stage, real_replace, calls = fsutil._stage, os.replace, {"stage": 0, "rename": 0}

    def stage(path, data, **kw):
        if phase == "stage" and calls["stage"] == step:
            os.kill(os.getpid(), signum)
        calls["stage"] += 1
        return real_stage(path, data, **kw)

    def replace(src, dst):
        if phase == "rename" and calls["rename"] == step:
            os.kill(os.getpid(), signum)
        calls["rename"] += 1
        return real_replace(src, dst)

    fsutil._stage, os.replace = stage, replace
    try:
        code, err = cli("export", "--root", rev, "--format", "csv", "--output-dir", out)
    finally:
        fsutil._stage, os.replace = real_stage, real_replace
    return code, err, new, {p.name: p.read_bytes() for p in out.iterdir()}


@pytest.mark.parametrize("phase", ["stage", "rename"])
def test_export_writes_its_tables_as_one_unit(tmp_path, phase):
    for step in range(3):
        code, err, new, now = _exporting(tmp_path, step, signal.SIGTERM, phase)
        assert code == 143 and one_line(err).startswith("afbench: interrupted by SIGTERM")
        assert now == (new if phase == "rename" else dict.fromkeys(new, b"old")), err


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
    deadline = time.monotonic() + 30
    while not http_release["handler"].requests and time.monotonic() < deadline:
        time.sleep(0.02)  # until the download has begun
    run.send_signal(getattr(signal, signame))
    _, err = run.communicate(timeout=30)
    assert run.returncode == 128 + getattr(signal, signame), err
    assert one_line(err) == f"afbench: interrupted by {signame}; nothing was replaced"
    assert not out.exists() or not any(p.is_file() for p in out.rglob("*"))


def test_sigterm_while_a_job_writes_is_one_line_and_replaces_nothing(tmp_path):
    """Snakemake stops its jobs with SIGTERM: a job stopped while it writes says so in one
    line, exits 143 and leaves no output and no temporary file."""
    slow = tmp_path / "slow.py"
    slow.write_text(
        "import os, sys, time\n"
        "from afbench import fsutil\n"
        "from afbench.cli import main\n"
        "real = fsutil._stage\n"
        "def stage(*a, **k):\n"
        f"    open({str(tmp_path / 'staging')!r}, 'w').close()\n"
        "    time.sleep(30)\n"
        "    return real(*a, **k)\n"
        "fsutil._stage = stage\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    tree = prop.write_tree()
    out = tmp_path / "out"
    run = subprocess.Popen(
        [sys.executable, str(slow), *map(str, tree.compare(out / "s.json", out / "b.csv"))],
        stderr=subprocess.PIPE,
        text=True,
        env=snakemake_env(),
    )
    deadline = time.monotonic() + 30
    while not (tmp_path / "staging").exists() and time.monotonic() < deadline:
        time.sleep(0.02)  # until it writes
    run.terminate()
    _, err = run.communicate(timeout=30)
    assert run.returncode == 143 and one_line(err) == (
        "afbench: interrupted by SIGTERM; nothing was replaced"
    )
    assert not out.exists() or list(out.iterdir()) == []


# --- 4. git runs hardened --------------------------------------------------------------------
@pytest.fixture
def git_release(tmp_path, release_files, demo_yaml):
    """A checkout holding the demo release, and a config whose source is that checkout."""
    checkout, revision = make_git_repo(tmp_path / "upstream", release_files)
    cfg = config_for(
        release_files,
        revision,
        {"kind": "git", "checkout": str(checkout)},
        tmp_path / "results",
        demo_yaml,
    )
    return checkout, revision, cfg


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
        from afbench.plan import check_repository

        check_repository(str(checkout), revision)


def test_a_missing_commit_and_a_missing_object_each_say_so(git_release, tmp_path):
    checkout, revision, _cfg = git_release
    source = GitSource({"checkout": str(checkout), "max_bytes": 1 << 20}, "f" * 40)
    with pytest.raises(AfbenchError, match="does not contain the pinned commit"):
        source.read("MANIFEST.csv")
    source.close()
    oid = git(checkout, "rev-parse", f"{revision}:SOURCES.csv")
    (checkout / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    source = GitSource({"checkout": str(checkout), "max_bytes": 1 << 20}, revision)
    assert source.read("MANIFEST.csv")
    with pytest.raises(AfbenchError, match=f"missing object {oid} \\(SOURCES.csv\\)"):
        source.read("SOURCES.csv")
    with pytest.raises(AfbenchError, match="file not present at the pinned commit"):
        source.read("NOT-THERE.csv")
    source.close()


def test_an_earlier_demo_repository_with_settings_of_its_own_is_refused(tmp_path):
    out = tmp_path / "demo"
    demo.build_repository(prop.DEMO_RELEASE, out)
    marker = tmp_path / "fsmonitor-ran"
    git(out, "config", "core.fsmonitor", f"touch {marker}; false")
    code, err = cli("demo", "repo", "--release-files", prop.DEMO_RELEASE, "--out", out)
    assert code == 2 and "not an earlier afbench demo repository" in one_line(err)
    assert not marker.exists()


# --- 5. every CSV afbench writes is safe to open ---------------------------------------------
HOSTILE_REASONS = [
    "Err\rTimeout",
    '=HYPERLINK("x")',
    "a\nb",
    "tab\tand\x0bvt",
    "'=quoted",
    "\x85nel",
    "back\\slash",
]


def _selection_for(tmp_path: Path, task_ids: list[str]) -> Path:
    doc = json.loads(prop.write_tree().selection.read_text())
    doc["task_ids"] = task_ids
    path = tmp_path / "selection.json"
    path.write_text(json.dumps(doc))
    return path


def _import_harbor_job(tmp_path: Path, job: Path, task_ids: list[str], out: Path):
    """`afbench import-run` of one Harbor job folder on a selection of `task_ids`."""
    selection = _selection_for(tmp_path, task_ids)
    return cli(
        *["import-run", "--selection", selection, "--name", "r", "--kind", "harbor"],
        *["--path", job, "--output-dir", out],
    )


def test_no_control_character_splits_a_csv_row_and_every_cell_reads_back(tmp_path):
    import afbench.frames as af

    job = shutil.copytree(FIXTURES / "demo-oracle", tmp_path / "job")
    results = sorted(job.glob("*/result.json"))
    reasons = {}
    for result, reason in zip(results, HOSTILE_REASONS, strict=False):
        doc = json.loads(result.read_text())
        doc["exception_info"] = {"exception_type": reason, "exception_message": "x"}
        doc["verifier_result"] = None
        result.write_text(json.dumps(doc))
        reasons[doc["task_name"]] = reason
    tasks = sorted({json.loads(r.read_text())["task_name"] for r in results})
    out = tmp_path / "run"
    code, err = _import_harbor_job(tmp_path, job, tasks, out)
    assert code == 0, err
    for name, rows in (("attempts.csv", len(results)), ("outcomes.csv", len(tasks))):
        text = (out / name).read_text()
        assert len(text.splitlines()) == rows + 1, name  # str.splitlines splits at \r, \x0b, \x85
        assert not prop.UNPRINTABLE.search(text.replace("\n", ""))
        for row in csv.reader(io.StringIO(text, newline="")):
            assert not any(cell.startswith(fsutil.SPREADSHEET_TRIGGERS) for cell in row)
    attempts = af.run_attempts(out)
    for task_id, reason in zip(attempts.task_id, attempts.reason, strict=True):
        if task_id in reasons:
            assert reason == reasons[task_id]
    code, err = cli("export", "--root", out, "--format", "csv", "--output-dir", tmp_path / "tables")
    assert code == 0, err
    exported = (tmp_path / "tables" / "run_attempts.csv").read_text()
    assert len(exported.splitlines()) == len(results) + 1
    back = af.read_export(tmp_path / "tables" / "run_attempts.csv")
    assert sorted(back.reason) == sorted(attempts.reason)


@FAST
@given(cells=st.lists(prop.csv_texts, min_size=1, max_size=4))
def test_any_text_cell_is_one_line_and_reads_back(cells):
    prop.check_csv_text(cells)


# --- 6. every number a JSON reader meets is bounded ------------------------------------------
def test_an_integer_beyond_a_float_is_one_refusal(tmp_path):
    job = shutil.copytree(FIXTURES / "demo-nop", tmp_path / "job")
    result = next(job.glob("*/result.json"))
    result.write_text(result.read_text().replace('"cost_usd": null', '"cost_usd": 1' + "0" * 400))
    code, err = _import_harbor_job(tmp_path, job, ["hello-pass"], tmp_path / "run")
    line = one_line(err)
    assert code == 2 and "beyond the range of a float" in line and str(result) in line, line
    verdict = tmp_path / "v.json"
    doc = dict(prop.VERDICT)
    doc["obligations"] = [dict(doc["obligations"][0], detail="@")]
    verdict.write_text(json.dumps(doc).replace('"@"', "-" + "9" * 320))
    code, err = cli("verdict", "--path", verdict, "--task", "t1")
    assert code == 2 and "beyond the range of a float" in one_line(err)


@FAST
@given(which=st.sampled_from(prop.NUMBER_DOCS), place=st.integers(0, 500), number=prop.huge_numbers)
def test_any_number_anywhere_is_read_or_refused(which, place, number):
    prop.check_json_number(which, place, number)


# --- 7. a Harbor job's own facts must agree --------------------------------------------------
def _edit(job: Path, change) -> Path:
    result = next(job.glob("hello-pass__*/result.json"))
    doc = json.loads(result.read_text())
    change(doc, result.parent)
    result.write_text(json.dumps(doc))
    return result


def _clone_trial(job: Path, suffix: str, new_id: str) -> None:
    trial = next(job.glob("hello-pass__*"))
    twin = job / (trial.name + suffix)
    shutil.copytree(trial, twin)
    doc = json.loads((twin / "result.json").read_text())
    doc["trial_name"] = doc["config"]["trial_name"] = twin.name
    doc["id"] = new_id
    (twin / "result.json").write_text(json.dumps(doc))


EDITS = {
    "folder renamed": (
        lambda job: next(job.glob("hello-pass__*")).rename(job / "hello-pass__zzz"),
        "the trial folder's name is not its trial's name",
    ),
    "trial_name": (
        lambda job: _edit(job, lambda d, t: d.update(trial_name="hello-pass__other")),
        "the trial folder's name is not its trial's name",
    ),
    "config.trial_name": (
        lambda job: _edit(job, lambda d, t: d["config"].update(trial_name="x__1")),
        "the trial's config names another trial",
    ),
    "task_name": (
        lambda job: _edit(job, lambda d, t: d.update(task_name="solve-fails")),
        "the trial is not named after its task 'solve-fails'",
    ),
    "config.task.path": (
        lambda job: _edit(
            job, lambda d, t: d["config"]["task"].update(path="/srv/tasks/solve-fails")
        ),
        "the trial's task path names another task",
    ),
    "config.job_id": (
        lambda job: _edit(job, lambda d, t: d["config"].update(job_id="another-job")),
        "the trial belongs to another job",
    ),
    "trial id twice": (
        lambda job: _clone_trial(
            job, "b", json.loads(next(job.glob("hello-pass__*/result.json")).read_text())["id"]
        ),
        "two trial folders hold the same trial",
    ),
    "n_attempts 1, three trials": (
        lambda job: [_clone_trial(job, s, f"id-{s}") for s in ("b", "c")],
        "it says n_attempts 1, yet holds 3 trials of task 'hello-pass'",
    ),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_job_whose_facts_disagree_is_refused_naming_the_disagreement(tmp_path, edit):
    job = shutil.copytree(FIXTURES / "demo-oracle", tmp_path / "job")
    change, message = EDITS[edit]
    change(job)
    tasks = sorted(EXPECTED_TASKS)
    code, err = _import_harbor_job(tmp_path, job, tasks, tmp_path / "run")
    line = one_line(err)
    assert code == 2 and message in line, line
    assert not (tmp_path / "run").exists()


EXPECTED_TASKS = [
    "hello-pass",
    "agent-timeout",
    "solve-fails",
    "verifier-timeout",
    "no-reward",
    "empty-reward",
    "bad-reward",
    "reward-json",
    "no-solution",
]


def test_an_unreadable_trial_folder_is_an_error_never_absent(tmp_path):
    """Run as another user (root reads everything): the modules are imported first, then a
    child gives up root and imports the job."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to another user")
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="afbench-unreadable-"))
    folder.chmod(0o755)
    job = shutil.copytree(FIXTURES / "demo-oracle", folder / "job")
    trial = next(job.glob("hello-pass__*"))
    trial.chmod(0o000)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nobody
        try:
            os.setgid(65534)
            os.setuid(65534)
            try:
                read_harbor_job(job)
                message = "read"
            except AfbenchError as exc:
                message = str(exc)
            os.write(write, message.encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        message = pipe.read()
    trial.chmod(0o755)
    shutil.rmtree(folder)
    assert "cannot read trial result.json: Permission denied" in message, message
    assert str(trial) in message


def test_a_very_large_job_folder_is_refused_in_one_bounded_line(tmp_path):
    job = tmp_path / "job"
    shutil.copytree(FIXTURES / "demo-nop", job)
    trial = next(job.glob("hello-pass__*"))
    doc = json.loads((trial / "result.json").read_text())
    for i in range(1500):  # one task, n_attempts 1, and 1501 trials of it
        name = f"hello-pass__{i:07d}"
        (job / name).mkdir()
        (job / name / "result.json").write_text(
            json.dumps(
                dict(
                    doc, trial_name=name, id=f"id-{i}", config=dict(doc["config"], trial_name=name)
                )
            )
        )
    started = time.perf_counter()
    with pytest.raises(AfbenchError) as info:
        read_harbor_job(job)
    assert time.perf_counter() - started < 20
    message = str(info.value)
    assert "holds 1501 trials of task 'hello-pass'" in message and len(message) < 1500, message


# --- 8. the same artifacts whatever the environment ------------------------------------------
def _hostile_environment(tmp_path: Path) -> tuple[dict, Path]:
    rc = tmp_path / "user-mpl"
    rc.mkdir()
    (rc / "matplotlibrc").write_text(
        "text.usetex: True\nfont.family: serif\nfont.size: 31\nsvg.fonttype: path\n"
        "axes.formatter.use_locale: True\nsvg.hashsalt: mine\nlines.linewidth: 7\n"
    )
    env = {
        **snakemake_env(),
        "MATPLOTLIBRC": str(rc / "matplotlibrc"),
        "MPLCONFIGDIR": str(rc),
        "MPLBACKEND": "no-such-backend",
        "LC_ALL": "de_DE.UTF-8",
        "LANG": "de_DE.UTF-8",
        "TZ": "Pacific/Kiritimati",
        "HOME": str(tmp_path / "no-such-home"),
        "GIT_DIR": str(tmp_path / "nowhere"),
    }
    return env, rc


def test_the_report_is_the_same_bytes_in_a_hostile_environment(fetched_config, tmp_path):
    rev = run_all(fetched_config)
    imports = rev / "imports/source-present/budget-200"
    argv = [
        AFBENCH,
        "report",
        "--summary",
        str(imports / "summary.json"),
        *[f"--import={p}" for p in sorted(imports.glob("demo-model-*.json"))],
        "--catalog",
        str(rev / "tasks/catalog.json"),
        "--receipt",
        str(release_dir(fetched_config) / "receipt.json"),
    ]
    clean = subprocess.run(
        [*argv, "--output-dir", str(tmp_path / "clean")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert clean.returncode == 0, clean.stderr
    env, rc = _hostile_environment(tmp_path)
    hostile = subprocess.run(
        [*argv, "--output-dir", str(tmp_path / "hostile")],
        capture_output=True,
        text=True,
        env=env,
        cwd=rc,
        preexec_fn=lambda: os.umask(0o077),
        check=False,
    )
    assert hostile.returncode == 0 and "Traceback" not in hostile.stderr, hostile.stderr

    def tree(root: Path) -> dict:
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
        }

    assert tree(tmp_path / "hostile") == tree(tmp_path / "clean")
    assert (tmp_path / "hostile" / "index.html").stat().st_mode & 0o777 == 0o600


@FAST
@given(env=prop.hostile_environments)
def test_any_hostile_environment_changes_no_byte(env):
    prop.check_hostile_environment(env)


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


# --- 9. smaller ones found on the way --------------------------------------------------------
def test_compare_refuses_the_same_model_twice_by_slug_or_by_content(tmp_path):
    tree = prop.write_tree()
    a = tree.imports[0]
    code, err = cli(
        "job",
        "compare-models",
        f"--import={a}",
        f"--import={a}",
        "--strict-budget=false",
        "--published-source=",
        "--published-task-rows=",
        "--strict-published=false",
        f"--summary={tmp_path / 's.json'}",
        f"--leaderboard={tmp_path / 'b.csv'}",
    )
    assert code == 2 and "model 'demo-model-a' is given twice" in one_line(err)
    twin = tmp_path / "twin.json"
    doc = json.loads(a.read_text())
    doc["model"], doc["display_name"] = "demo-model-twin", "Twin"
    twin.write_text(json.dumps(doc))
    code, err = cli(
        "job",
        "compare-models",
        f"--import={a}",
        f"--import={twin}",
        "--strict-budget=false",
        "--published-source=",
        "--published-task-rows=",
        "--strict-published=false",
        f"--summary={tmp_path / 's.json'}",
        f"--leaderboard={tmp_path / 'b.csv'}",
    )
    line = one_line(err)
    assert code == 2 and "'demo-model-a' and 'demo-model-twin' are one results file" in line, line
    assert not (tmp_path / "s.json").exists()


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
