"""Reading and writing files (afbench.core.fsutil): regular files only, bounded JSON numbers, CSV
cells on one line and safe in a spreadsheet, outputs that never replace an input, written as one
unit under any signal, no temporary file left or taken from another writer."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from afbench.core import fsutil, locking
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import (
    atomic_write_bytes,
    check_name,
    parse_json_bytes,
    read_json_file,
    read_regular_file,
    sha256_file,
    write_json,
)

import properties as prop
from conftest import (
    AFBENCH,
    EXAMPLES_60,
    EXAMPLES_100,
    FIXTURES,
    HANG_GUARD_S,
    _import_harbor_job,
    _selection_for,
    cli,
    holder_process,
    one_clean_message,
    one_line,
    run_all,
    snakemake_env,
    stalled_afbench,
    wait_until,
    waiting_afbench,
)


# 3. fsutil: regular files, atomic writes ---------------------------------------------------
def test_read_regular_file_refuses_everything_else_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    regular = tmp_path / "regular.json"
    regular.write_bytes(b"{}")
    link = tmp_path / "link.json"
    link.symlink_to(regular)
    sock_path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        cases = {
            fifo: "a FIFO",
            tmp_path: "a folder",
            Path("/dev/zero"): "a character device",
            link: "a symbolic link",
            sock_path: "a socket",
            tmp_path / "missing": "not found",
        }
        for path, kind in cases.items():
            with pytest.raises(AfbenchError) as err:
                read_regular_file(path, "verdict file", 1000)
            assert len(err.value.problems) == 1
            assert str(err.value).startswith(f"{path}: verdict file") and kind in str(err.value)
    finally:
        server.close()
    assert read_regular_file(regular, "verdict file", 2) == b"{}"
    with pytest.raises(AfbenchError, match="larger than the size cap"):
        read_regular_file(regular, "verdict file", 1)


def test_hashing_and_json_reading_refuse_a_fifo(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(AfbenchError, match="FIFO"):
        sha256_file(fifo)
    with pytest.raises(AfbenchError, match="FIFO"):
        read_json_file(fifo, "run summary")


WRITER = textwrap.dedent(
    """
    import sys
    from afbench.core.fsutil import atomic_write_bytes
    for i in range(int(sys.argv[2])):
        atomic_write_bytes(sys.argv[1], (sys.argv[3] * 50_000).encode(), about="test")
    """
)


def test_concurrent_writers_never_delete_each_others_temporary_files(tmp_path):
    target = tmp_path / "summary.json"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), "150", letter],
            stderr=subprocess.PIPE,
            text=True,
        )
        for letter in "ab"
    ]
    errors = [w.communicate(timeout=120)[1] for w in writers]
    assert [w.returncode for w in writers] == [0, 0], errors
    assert target.read_text() in ("a" * 50_000, "b" * 50_000)
    assert not list(tmp_path.glob(".*.part"))


def test_only_a_dead_writers_temporary_file_on_this_host_is_removed(tmp_path):
    from afbench.core.fsutil import _HOST

    target = tmp_path / "x.json"
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = tmp_path / f".x.json.{int(finished.stdout)}.{_HOST}.00000000.part"
    live = tmp_path / f".x.json.{os.getpid()}.{_HOST}.11111111.part"
    other_host = tmp_path / f".x.json.{int(finished.stdout)}.0badc0de.22222222.part"
    for part in (dead, live, other_host):
        part.write_bytes(b"partial")
    atomic_write_bytes(target, b"done", about="test")
    assert target.read_bytes() == b"done"
    assert not dead.exists() and live.exists() and other_host.exists()


FULL_DISK = textwrap.dedent(
    """
    import resource, signal, sys
    from afbench.core.errors import AfbenchError
    from afbench.core.fsutil import atomic_write_bytes
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    try:
        atomic_write_bytes(sys.argv[1], b"x" * 100_000, about="test")
    except AfbenchError as exc:
        print(f"afbench: error: {exc}", file=sys.stderr)
        sys.exit(2)
    """
)


def test_a_failed_write_names_the_file_leaves_no_temporary_file_and_keeps_the_old_one(tmp_path):
    target = tmp_path / "leaderboard.csv"
    target.write_bytes(b"earlier\n")
    result = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(target)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    one_clean_message(result.stderr)
    assert str(target) in result.stderr and "cannot write this file" in result.stderr
    assert target.read_bytes() == b"earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leaderboard.csv"]


def test_a_write_into_a_path_under_a_file_is_our_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(AfbenchError, match="cannot write this file") as err:
        atomic_write_bytes(tmp_path / "file" / "sub" / "a.json", b"{}", about="test")
    assert "file/sub/a.json" in str(err.value)


def test_json_with_a_lone_surrogate_is_refused_naming_the_field():
    with pytest.raises(AfbenchError, match="lone surrogate") as err:
        parse_json_bytes(b'{"verifier": {"name": "v\\udc80"}}', "v.json", "verdict")
    assert "verifier/name" in str(err.value)
    assert parse_json_bytes(b'{"a": "\\ud83d\\ude00"}', "v.json", "verdict") == {"a": "\U0001f600"}


def test_writing_a_lone_surrogate_is_refused_and_keeps_the_earlier_file(tmp_path):
    target = tmp_path / "summary.json"
    write_json(target, {"ok": 1})
    with pytest.raises(AfbenchError, match="not valid Unicode") as err:
        write_json(target, {"name": "x\udcff"})
    assert str(target) in str(err.value)
    assert target.read_text() == '{\n  "ok": 1\n}\n'


def test_check_name_refuses_a_trailing_newline():
    for value in ("t1\n", "t1\r", "t1\x00"):
        with pytest.raises(AfbenchError, match="not a safe name"):
            check_name(value, "task_id")


@EXAMPLES_100
@given(
    kind=st.sampled_from(prop.FILE_KINDS),
    reader=st.sampled_from(sorted(prop.FILE_READERS)),
    name=prop.file_names,
)
def test_every_reader_refuses_what_is_not_a_regular_file(kind, reader, name):
    prop.check_file_kind(kind, reader, name)


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


def test_sigterm_while_a_job_writes_is_one_line_and_replaces_nothing(tmp_path):
    """Snakemake stops its jobs with SIGTERM: a job stopped while it writes says so in one
    line, exits 143 and leaves no output and no temporary file."""
    slow = tmp_path / "slow.py"
    slow.write_text(
        "import os, sys, time\n"
        "from afbench.core import fsutil\n"
        "from afbench.cli import main\n"
        "real = fsutil._stage\n"
        "def stage(*a, **k):\n"
        f"    open({str(tmp_path / 'staging')!r}, 'w').close()\n"
        f"    time.sleep({HANG_GUARD_S})\n"  # until the test stops it
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
    wait_until((tmp_path / "staging").exists, "the command never began to write", run)
    run.terminate()
    _, err = run.communicate(timeout=30)
    assert run.returncode == 143 and one_line(err) == (
        "afbench: interrupted by SIGTERM; nothing was replaced"
    )
    assert not out.exists() or list(out.iterdir()) == []


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


@EXAMPLES_60
@given(cells=st.lists(prop.csv_texts, min_size=1, max_size=4))
def test_any_text_cell_is_one_line_and_reads_back(cells):
    prop.check_csv_text(cells)


def _cell_by_cell(header, rows) -> bytes:
    """csv_bytes as it was written before its whole-table path: every text cell guarded."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([fsutil.csv_text(h) for h in header])
    for row in rows:
        writer.writerow([fsutil.spreadsheet_safe("" if v is None else v) for v in row])
    return buffer.getvalue().encode()


CSV_CELLS = st.one_of(
    st.none(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    prop.csv_texts,
    # a quoted cell starting with a trigger, alone and beside text that over-finds
    st.sampled_from(["=x,y", '@"q', '"=x"', "a,=b", "-1", "x\ny", "\r", "'", "@", "\u2028", ","]),
)


@EXAMPLES_60
@given(rows=st.lists(st.lists(CSV_CELLS, min_size=1, max_size=5), max_size=6))
@example(rows=[["=x,y", None], [1, '@"q']])  # quoted, a trigger first, nothing else to find
def test_a_table_written_whole_is_byte_for_byte_the_cell_by_cell_table(rows):
    """csv_bytes writes a table whole and writes it again cell by cell only when a search over
    the whole text finds a cell that may need the guard: whichever path it takes, the bytes are
    those of guarding every text cell."""
    header = ["a", "=b", "c\nd"]

    def written(write, given):
        try:
            return write(header, given)
        except UnicodeEncodeError:  # a lone surrogate: csv_output names the file
            return "not UTF-8"

    expected = written(_cell_by_cell, rows)
    assert written(fsutil.csv_bytes, rows) == expected
    assert written(fsutil.csv_bytes, iter(rows)) == expected


@EXAMPLES_60
@given(
    rows=st.lists(st.lists(CSV_CELLS, min_size=2, max_size=2), max_size=9),
    size=st.integers(1, 4),
)
@example(rows=[["a", 1], ["=x", None], ["b", 2]], size=1)  # one piece guarded, its neighbours not
def test_a_table_written_in_pieces_is_byte_for_byte_the_whole_table(rows, size):
    """csv_chunks writes a table `size` rows at a time, each piece by csv_bytes' quicker path or
    cell by cell, on its own: joined, the pieces are the whole table's bytes."""
    header = ["a", "=b"]
    try:
        expected = fsutil.csv_bytes(header, rows)
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            b"".join(fsutil.csv_chunks(header, iter(rows), size))
        return
    assert b"".join(fsutil.csv_chunks(header, iter(rows), size)) == expected


def test_a_streamed_table_with_text_that_is_not_unicode_writes_nothing(tmp_path):
    """csv_stream refuses what csv_output refuses, naming the file, and nothing is written."""
    out = tmp_path / "t.csv"
    rows = [["fine"]] * 5000 + [["bad \ud800"]]
    with pytest.raises(AfbenchError, match="not valid Unicode") as refused:
        fsutil.write_outputs([fsutil.csv_stream(out, ["a"], rows)], about="a table")
    assert str(out) in str(refused.value)
    assert list(tmp_path.iterdir()) == []


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


@EXAMPLES_60
@given(which=st.sampled_from(prop.NUMBER_DOCS), place=st.integers(0, 500), number=prop.huge_numbers)
def test_any_number_anywhere_is_read_or_refused(which, place, number):
    prop.check_json_number(which, place, number)


def test_spreadsheet_formulas_are_neutralised_in_csv_not_json(fetched_config):
    fetched_config["models"]["demo-model-a"]["display_name"] = '=HYPERLINK("http://x")'
    out = run_all(fetched_config, until="comparison") / "imports/source-present/budget-200"
    rows = list(csv.DictReader((out / "leaderboard.csv").open()))
    assert rows[0]["display_name"] == '\'=HYPERLINK("http://x")'
    summary = json.loads((out / "summary.json").read_text())
    assert summary["leaderboard"][0]["display_name"] == '=HYPERLINK("http://x")'


# --- two commands writing one output folder: one after the other, never a mix ----------------
def _import_argv(selection: Path, name: str, jobs: list[Path], out: Path) -> list[str]:
    return [
        *[AFBENCH, "import-run", "--selection", str(selection), "--name", name],
        *["--kind", "harbor", *[arg for job in jobs for arg in ("--path", str(job))]],
        *["--output-dir", str(out)],
    ]


def _folder_bytes(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _two_runs(tmp_path: Path) -> tuple[dict[str, list[str]], dict[str, dict[str, bytes]]]:
    """Two imports of the same work (the four Harbor jobs, copied twice) that differ in every
    file (the run's name, the trials' folders), and each one's bytes written alone."""
    jobs = sorted(FIXTURES.iterdir())
    tasks = sorted({t.name.split("__")[0] for j in jobs for t in j.iterdir() if t.is_dir()})
    selection = _selection_for(tmp_path, tasks)
    argvs, alone = {}, {}
    for name in ("a", "b"):
        copied = [shutil.copytree(job, tmp_path / f"jobs-{name}" / job.name) for job in jobs]
        argvs[name] = _import_argv(selection, name, copied, tmp_path / "alone" / name)
        subprocess.run(argvs[name], check=True, capture_output=True)
        alone[name] = _folder_bytes(tmp_path / "alone" / name)
    assert all(alone["a"][f] != alone["b"][f] for f in alone["a"])
    return argvs, alone


def _run(argv: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, **kwargs
    )


def _finished(process: subprocess.Popen) -> None:
    err = process.communicate(timeout=120)[1]
    assert process.returncode == 0 and "Traceback" not in err, err


def test_two_imports_into_one_folder_at_once_leave_one_whole_run(tmp_path):
    """Issue #41: two `import-run`s writing one --output-dir at once left some files of each
    (2 rounds of 6), both exiting 0. Now the second waits for the first: the folder holds one
    run's whole set, byte for byte, and no lock file is left beside it or in it. Each round
    once as afbench is, and once with the first stalled between two renames while the second
    runs (without the lock the second's files land between the first's)."""
    argvs, alone = _two_runs(tmp_path)
    out = tmp_path / "shared"
    a, b = ([*argv[1:-1], str(out)] for argv in (argvs["a"], argvs["b"]))
    signals = tmp_path / "signals"
    signals.mkdir()
    for round_ in range(3):
        both = [_run([AFBENCH, *a]), _run([AFBENCH, *b])]
        for process in both:
            _finished(process)
        assert _folder_bytes(out) in (alone["a"], alone["b"]), f"round {round_}: a mix"
        first, release = stalled_afbench(a, signals / str(round_), after_first_rename=True)
        # it waits for the first, and says so (without the lock it runs on and is done)
        second = waiting_afbench(b, stdout=subprocess.DEVNULL)
        release.touch()
        _finished(first)
        _finished(second)
        assert _folder_bytes(out) == alone["b"], f"stalled round {round_}: a mix"
        beside = sorted(p.name for p in tmp_path.iterdir())
        assert beside == ["alone", "jobs-a", "jobs-b", "selection.json", "shared", "signals"]


def test_a_command_waits_a_bounded_time_for_a_live_writer_then_refuses_naming_it(
    tmp_path, monkeypatch
):
    argvs, _ = _two_runs(tmp_path)
    out = tmp_path / "shared"
    lock = locking.output_lock_path(out)
    holder = holder_process(lock, tmp_path / "release")
    try:
        assert holder.stdout.readline().split() == ["held", str(holder.pid)]
        monkeypatch.setattr(locking, "OUTPUT_WAIT_S", 0.3)
        code, err = cli(*argvs["b"][1:-1], out)
        line = one_line(err)
        assert code == 2 and str(out) in line and f"pid {holder.pid} on " in line, line
        assert "another process is writing this output" in line and not out.exists()
    finally:
        (tmp_path / "release").touch()
        holder.wait(timeout=10)


def test_a_lock_left_by_a_killed_writer_blocks_nobody(tmp_path, monkeypatch):
    """A writer SIGKILLed while it holds the folder's lock leaves the lock file behind: the
    kernel let its lock go, so the next command takes it at once, and removes it when done.
    At once: it is given no time to wait (a held lock is then refused at the first look), and
    it never starts waiting."""
    argvs, alone = _two_runs(tmp_path)
    out = tmp_path / "shared"
    lock = locking.output_lock_path(out)
    holder = holder_process(lock, tmp_path / "never")
    assert holder.stdout.readline().split() == ["held", str(holder.pid)]
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=10)
    assert lock.exists()
    waited = []
    monkeypatch.setattr(locking, "OUTPUT_WAIT_S", 0)
    monkeypatch.setattr("afbench.cli._waiting", lambda *said: waited.append(said))
    code, err = cli(*argvs["b"][1:-1], out)
    assert code == 0 and waited == [], (err, waited)
    assert _folder_bytes(out) == alone["b"] and not lock.exists()


def test_a_refused_command_leaves_no_folder_made_for_its_lock(tmp_path):
    """The lock sits beside the output, so its parent folders are made before the command
    reads anything; a command then refused leaves none of them, one that wrote keeps them."""
    out = tmp_path / "a" / "b" / "out.json"
    with pytest.raises(RuntimeError), locking.writing([out], on_wait=None):
        assert (tmp_path / "a" / "b").is_dir()
        raise RuntimeError("refused")
    assert list(tmp_path.iterdir()) == []
    with locking.writing([out], on_wait=None):
        out.write_text("{}")
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["out.json"]
