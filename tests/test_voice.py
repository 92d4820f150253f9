"""What a command says: one line on standard error per unit of outputs it wrote (or kept), with
its counts and where it went; nothing on success under --quiet; a progress bar for a long
import or download only on a terminal, drawn a bounded number of times and cleared."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

import pytest

from afbench import progress, records
from afbench.cli import main, say
from afbench.config import load_config
from afbench.records import SELECTION, record
from afbench.release import identity

import properties as prop
from conftest import FIXTURES, OWNER_REPO, REPO, demo_revision, https_source

AFBENCH = str(Path(sys.executable).with_name("afbench"))
DEMO = REPO / "config" / "demo.yaml"
ARROW = " -> "


@pytest.fixture(scope="module")
def tree():
    return prop.write_tree()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The demo release's repository, at the demo's pinned revision (absolute: plan needs it)."""
    out = tmp_path_factory.mktemp("upstream") / "demo-upstream"
    code, err = prop.cli("demo", "repo", "--out", out, "--release-files", prop.DEMO_RELEASE)
    assert code == 0, err
    return out.resolve()


def said(*argv: object) -> list[str]:
    """`afbench ARGV` in this process, which must succeed: its lines on standard error."""
    code, err = prop.cli(*argv)
    assert code == 0, err
    return err.splitlines()


def seed_commands(tree: prop.WriteTree, out: Path, checkout: Path) -> dict[str, tuple]:
    """Each seed command (one case each, or two), and the lines it must print."""
    config = ["--config", tree.config, "--release-dir", tree.release]
    rev = demo_revision()
    imports = [a for path in tree.imports for a in ("--import", path)]
    report_inputs = [
        *("--summary", tree.summary, *imports),
        *("--catalog", tree.catalog, "--receipt", tree.release / "receipt.json"),
    ]
    return {
        "tasks": (
            ["tasks", *config, "--output", out / "tasks.json"],
            [rf"catalog: 341 tasks, 24 sources, 1,155 obligations -> {out}/tasks\.json"],
        ),
        "tasks (a selection)": (
            [
                "tasks",
                *config,
                "--book",
                "demo_source_01",
                "--book",
                "demo_source_02",
                "--limit",
                "5",
                "--output",
                out / "two.json",
            ],
            [rf"selection two: 5 tasks, \d+ obligations -> {out}/two\.json"],
        ),
        "plan": (
            [
                "plan",
                *config,
                "--repository-dir",
                checkout,
                "--task",
                tree.task,
                "--output",
                out / "nop-plan.json",
            ],
            [
                r"plan: 1 trial of agent nop on selection nop-plan \(argument vectors, not run\) "
                rf"-> {out}/nop-plan\.json"
            ],
        ),
        "import-results": (
            ["import-results", *config, "--all-models", "--output", out / "reference.json"],
            [
                r"reference: 9 models on 341 tasks \(source-present, budget \$200\.00\), best "
                r"demo-model-a with 266 passed; 23 infrastructure errors, 1 over budget; as "
                rf"published -> {out}/reference\.json"
            ],
        ),
        "verdict": (
            ["verdict", "--path", tree.verdict, "--task", tree.task, "--output", out / "v.json"],
            [
                rf"verdict for {tree.task}: accepted \(reward 1\), all checks passed -> "
                rf"{out}/v\.json"
            ],
        ),
        "verdict (to standard output)": (
            ["verdict", "--path", tree.verdict, "--task", tree.task],
            [rf"verdict for {tree.task}: accepted \(reward 1\), .* -> standard output"],
        ),
        "verify": (
            ["verify", *config, "--output", out / "receipt.json"],
            [rf"receipt: 11 files verified -> {out}/receipt\.json"],
        ),
        "import-run": (
            [
                "import-run",
                "--selection",
                tree.selection,
                "--name",
                "my-run",
                "--kind",
                "verdicts",
                "--path",
                tree.verdicts,
                "--output-dir",
                out / "my-run",
            ],
            [
                r"run my-run: 1 configuration, 1 trial of selection s \(3 tasks\) -> "
                rf"attempts\.csv, outcomes\.csv, summary\.json in {out}/my-run"
            ],
        ),
        "report": (
            ["report", *report_inputs, "--output-dir", out / "report"],
            [
                rf"report -> {out}/report/index\.html \(2 models, 0 local runs; also "
                r"analysis\.json, 4 figures\)"
            ],
        ),
        "export": (
            [
                "export",
                "--root",
                tree.root,
                "--format",
                "csv",
                "--output-dir",
                out / "tables",
                "--table",
                "leaderboard",
                "--table",
                "tasks",
            ],
            [
                r"tables: 2 as csv \(rows: leaderboard 2, tasks 341\) -> leaderboard\.csv, "
                rf"tasks\.csv in {out}/tables"
            ],
        ),
        "power": (
            [
                "power",
                "--difference",
                "0.1",
                "--baseline-rate",
                "0.5",
                "--output",
                out / "power.json",
            ],
            [rf"power plan: tasks, 391 tasks -> {out}/power\.json"],
        ),
        "discover": (
            [
                "discover",
                "--config",
                tree.config,
                "--checkout",
                checkout,
                "--output-dir",
                out / "discovered",
            ],
            [
                rf"discovery at {rev[:12]}: 11 of 11 configured files found, 0 pin\(s\) differ, "
                r"0 results file\(s\) not in config \(review the fragment, then merge it into "
                rf"config\) -> discovery\.json, discovered\.yaml in {out}/discovered"
            ],
        ),
        "demo generate": (
            ["demo", "generate", "--out", out / "demo-release"],
            [rf"demo release -> 13 files in {out}/demo-release"],
        ),
        "demo repo": (
            ["demo", "repo", "--release-files", prop.DEMO_RELEASE, "--out", out / "upstream"],
            [rf"demo repository: commit {rev} -> {out}/upstream"],
        ),
    }


SEED_CASES = [
    "tasks",
    "tasks (a selection)",
    "plan",
    "import-results",
    "verdict",
    "verdict (to standard output)",
    "verify",
    "import-run",
    "report",
    "export",
    "power",
    "discover",
    "demo generate",
    "demo repo",
]


@pytest.mark.parametrize("case", SEED_CASES)
def test_each_seed_command_names_what_it_wrote_and_quiet_silences_it(
    tree, checkout, tmp_path, case
):
    argv, expected = seed_commands(tree, tmp_path / "out", checkout)[case]
    lines = said(*argv)
    assert len(lines) == len(expected), lines
    for line, pattern in zip(lines, expected, strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)
    quiet, _ = seed_commands(tree, tmp_path / "quiet", checkout)[case]
    assert said(*quiet, "--quiet") == []


def test_every_seed_command_has_a_summary_case():
    from afbench.cli.seed import COMMANDS, DEMO

    named = {case.split(" (")[0] for case in SEED_CASES}
    assert named | {"fetch"} == set(COMMANDS) | {f"demo {name}" for name in DEMO}


def test_fetch_names_each_file_it_fetched_or_kept_then_the_receipt(tree, tmp_path):
    release = tmp_path / "release"
    argv = ["fetch", "--config", tree.config, "--release-dir", release, "--all-models"]
    first = said(*argv)
    files = [f"results/demo-model-{m}.csv" for m in "abcdefghi"]
    assert [line.split(":")[0] for line in first[:-1]] == [
        f"release file {path}" for path in ["MANIFEST.csv", "SOURCES.csv", *files]
    ]
    assert re.fullmatch(
        rf"release file MANIFEST\.csv: [\d,]+ bytes, matching its pin -> {release}/MANIFEST\.csv",
        first[0],
    )
    assert first[-1] == f"receipt: 11 files verified -> {release}/receipt.json"
    again = said(*argv)
    assert again[0] == (
        f"release file MANIFEST.csv: already in place and matching its pin, kept -> "
        f"{release}/MANIFEST.csv"
    )
    assert len(again) == 12 and again[-1] == first[-1]
    assert said(*argv, "--quiet") == []


def test_quiet_keeps_warnings(tree, tmp_path):
    """--quiet silences what was written, never what the user must know."""
    unpinned = tmp_path / "unpinned.yaml"
    unpinned.write_text("models:\n  demo-model-b:\n    sha256: null\n")
    argv = ["fetch", "--config", tree.config, "--config", unpinned, "--release-dir"]
    lines = said(*argv, tmp_path / "release", "--all-models", "--quiet")
    assert lines == [
        "afbench: warning: model 'demo-model-b' has no SHA-256 pin in config: skipped (supply "
        "models.demo-model-b.sha256 to fetch it)"
    ]
    loud = said(*argv, tmp_path / "loud", "--all-models")
    assert (
        loud[-2]
        == f"receipt: 10 files verified (1 skipped without a pin) -> {tmp_path}/loud/receipt.json"
    )
    assert loud[-1] == lines[0]


def test_job_commands_name_what_they_wrote(tree, tmp_path):
    lines = said(
        "job",
        "select-tasks",
        f"--catalog={tree.catalog}",
        "--name=t",
        "--limit=2",
        f"--output={tmp_path / 't.json'}",
    )
    assert lines == [f"selection t: 2 tasks, 7 obligations -> {tmp_path}/t.json"] or re.fullmatch(
        rf"selection t: 2 tasks, \d+ obligations -> {tmp_path}/t\.json", lines[0]
    )
    lines = said(*tree.compare(tmp_path / "summary.json", tmp_path / "board.csv"))
    assert lines == [
        "comparison: 2 models on 341 tasks (source-present, budget $200.00), best demo-model-a "
        "with 266 passed; 4 infrastructure errors, 0 over budget -> board.csv, summary.json in "
        f"{tmp_path}"
    ]
    assert said(*tree.compare(tmp_path / "s2.json", tmp_path / "b2.csv"), "--quiet") == []


def test_every_artifact_kind_is_described():
    kinds = [v for k, v in vars(records).items() if k.isupper() and isinstance(v, str)]
    kinds = [k for k in kinds if k.startswith("afbench ")]
    assert set(kinds) - set(say.DESCRIBERS) == {records.ANALYSIS}  # the report's own line


def test_a_line_is_one_escaped_clipped_line():
    line = say.line("selection \x1b[31mred\nline", ["a\rb.json"])
    assert line == "selection \x1b[31mred\nline -> a\rb.json"  # escaped when printed:
    err = io.StringIO()
    tell = say.listener(quiet=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "stderr", err)
        tell("x" * 5000 + "\n", ["out.json"])
    [printed] = err.getvalue().splitlines()
    assert "\\x1b" not in printed and len(printed) < say.MAX_LINE + 100
    assert say.where(["d/a.json", "d/b.csv"]) == "a.json, b.csv in d"
    assert say.where([f"d/{i}.svg" for i in range(20)]) == "20 files in d"
    assert say.where(["a.json", "/abs/b.json"]) == "a.json, /abs/b.json"


# --- progress bars ----------------------------------------------------------------------------
class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bar_is_throttled_bounded_escaped_and_cleared(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    screen = Terminal()
    with progress.Progress(100_000, "reading \x1b]0;job\x07" + "x" * 100, stream=screen) as bar:
        for _ in range(100_000):
            clock.now += 0.0001  # 10 s in all
            bar.advance()
    text = screen.getvalue()
    draws = text.split(progress.CLEAR)
    assert text.endswith(progress.CLEAR)  # erased at the end
    assert 50 <= len(draws) - 2 <= 10 / progress.INTERVAL_S + 1  # every 0.1 s after 0.3 s
    assert all(len(d) < 80 for d in draws) and "\x1b]" not in text and "\x07" not in text
    assert all(d.startswith("reading \\x1b]0;job\\x07x") for d in draws[1:-1])
    assert all(re.search(r"\.\.\. \[[#.]{24}\] [\d,]+ of 100,000$", d) for d in draws[1:-1])
    assert int(draws[-2].rsplit(" of ")[0].rsplit(" ", 1)[1].replace(",", "")) > 95_000


def test_a_short_step_draws_nothing_and_nothing_is_drawn_off_a_terminal(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    screen, log = Terminal(), io.StringIO()
    for stream in (screen, log):
        with progress.Progress(10, "quick", stream=stream) as bar:
            for _ in range(10):
                clock.now += 0.01  # 0.1 s in all: under the delay
                bar.advance()
    with progress.Progress(10, "slow", stream=log) as bar:
        clock.now += 10
        bar.advance()
    assert screen.getvalue() == log.getvalue() == ""
    was = progress.show(False)
    try:
        with progress.Progress(10, "quiet", stream=screen) as bar:
            clock.now += 10
            bar.advance()
    finally:
        progress.show(was)
    assert screen.getvalue() == ""


def test_a_bar_is_cleared_when_its_step_fails(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    screen = Terminal()
    with pytest.raises(RuntimeError), progress.Progress(None, "failing", "bytes", screen) as bar:
        clock.now += 1
        bar.advance(2_500_000)
        raise RuntimeError
    assert screen.getvalue() == f"{progress.CLEAR}failing 2.5 MB{progress.CLEAR}"


def test_a_download_shows_its_bytes_on_a_terminal(http_release, monkeypatch):
    from afbench.fetch import HttpsSource

    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setattr(progress, "DELAY_S", 0)
    source = HttpsSource(
        https_source(http_release["base"], max_bytes=1 << 20), OWNER_REPO, http_release["revision"]
    )
    try:
        data = source.read("MANIFEST.csv")
    finally:
        source.close()
    text = screen.getvalue()
    assert f"downloading MANIFEST.csv [{'#' * progress.BAR_WIDTH}]" in text
    assert f"{len(data) / 1000:,.1f} kB of {len(data) / 1000:,.1f} kB" in text
    assert text.endswith(progress.CLEAR)


# --- a Harbor job folder of 100,000 trials, on a terminal and in a log ------------------------
def big_job(root: Path, trials: int) -> tuple[Path, Path]:
    """A job folder of `trials` trials of one task that Harbor had not finished (trial folders
    without result.json: the cheapest trials to make), and a selection of that task."""
    job = root / "job"
    job.mkdir(parents=True)
    (job / "config.json").write_text(
        json.dumps(
            {
                "job_name": "big",
                "n_attempts": trials,
                "environment": {"import_path": "hostenv:HostEnvironment"},
                "agents": [{"name": "nop"}],
            }
        )
    )
    prefix = os.fspath(job) + "/t1__"
    for i in range(trials):
        os.mkdir(f"{prefix}{i:07d}")
    release = identity(load_config([DEMO])["release"])
    selection = root / "selection.json"
    selection.write_text(
        json.dumps(
            record(
                SELECTION, name="big", release=release, selection_sha256="0" * 64, task_ids=["t1"]
            )
        )
    )
    return job, selection


def _on_terminal(argv: list[str], columns: int = 80) -> tuple[int, bytes]:
    """`argv` with its standard error on a pseudo-terminal `columns` wide: what it drew."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    child = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave
    )
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read)
    reader.start()
    code = child.wait(timeout=300)
    reader.join(timeout=30)
    os.close(master)
    return code, b"".join(chunks)


@pytest.fixture
def scratch(tmp_path):
    """A folder for 100,000 trial folders: in memory where the machine has a tmpfs at /dev/shm
    (making them on a disk costs seconds to tens of seconds of system time), else tmp_path."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="afbench-voice-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.large
def test_a_100000_trial_import_shows_progress_on_a_terminal_and_none_in_a_log(scratch):
    job, selection = big_job(scratch, 100_000)
    base = [AFBENCH, "import-run", "--selection", str(selection), "--name", "big", "--kind"]
    base += ["harbor", "--path", str(job), "--output-dir"]
    summary = (
        "run big: 1 configuration, 100,000 trials of selection big (1 task) -> attempts.csv, "
        "outcomes.csv, summary.json in {}"
    )
    started = time.monotonic()
    with open(scratch / "import.log", "wb") as log:  # a Snakemake job's `2> {log}`
        logged = subprocess.Popen([*base, str(scratch / "logged")], stderr=log)
        code, drawn = _on_terminal([*base, str(scratch / "shown")], columns=60)
        assert logged.wait(timeout=300) == 0 and code == 0, drawn[-2000:]
    elapsed = time.monotonic() - started
    text = drawn.decode()
    draws = [d for d in text.split(progress.CLEAR) if d]
    bars = draws[:-1]
    assert bars, text[-500:]
    assert all(re.fullmatch(r"reading job \[[#.]{24}\] [\d,]+ of 100,000", b) for b in bars), bars
    assert all(len(b) < 60 for b in bars)  # never wider than the terminal
    assert len(bars) <= elapsed / progress.INTERVAL_S + 1  # throttled
    assert text.count(progress.CLEAR) == len(bars) + 1  # the last one erases the bar
    assert draws[-1] == summary.format(scratch / "shown") + "\r\n"  # the terminal's line end
    assert (scratch / "import.log").read_text() == summary.format(scratch / "logged") + "\n"


def _drawn_in_process(argv: list[object], monkeypatch) -> str:
    """`afbench ARGV` run in this process with its standard error on a pseudo-terminal."""
    master, slave = pty.openpty()
    terminal = open(slave, "w", encoding="utf-8", closefd=True)  # noqa: SIM115
    monkeypatch.setattr(sys, "stderr", terminal)
    try:
        assert main([str(a) for a in argv]) == 0
        terminal.flush()
        os.set_blocking(master, False)
        chunks = []
        while True:
            try:
                chunks.append(os.read(master, 1 << 16))
            except BlockingIOError:
                return b"".join(chunks).decode()
    finally:
        terminal.close()
        os.close(master)


def test_an_import_on_a_terminal_draws_and_clears_its_bar_and_quiet_draws_none(
    tmp_path, monkeypatch
):
    """The same, fast: the fixture jobs read in this process, no delay (their few trials
    draw), standard error on a pseudo-terminal."""
    monkeypatch.setattr(progress, "DELAY_S", 0)
    monkeypatch.setattr(progress, "INTERVAL_S", 0)
    release = identity(load_config([DEMO])["release"])
    jobs = sorted(FIXTURES.iterdir())
    tasks = sorted({t.name.split("__")[0] for j in jobs for t in j.iterdir() if t.is_dir()})
    selection = tmp_path / "selection.json"
    selection.write_text(
        json.dumps(
            record(SELECTION, name="f", release=release, selection_sha256="0" * 64, task_ids=tasks)
        )
    )
    argv = ["import-run", "--selection", selection, "--name", "f", "--kind", "harbor"]
    argv += [a for j in jobs for a in ("--path", j)]
    text = _drawn_in_process([*argv, "--output-dir", tmp_path / "out"], monkeypatch)
    assert f"{progress.CLEAR}reading demo-oracle [{'#' * progress.BAR_WIDTH}] 9 of 9" in text
    last = text.rsplit(progress.CLEAR, 1)[-1]
    assert re.fullmatch(r"run f: \d configurations, \d+ trials of selection f .*\r\n", last), text
    assert _drawn_in_process([*argv, "--output-dir", tmp_path / "q", "--quiet"], monkeypatch) == ""


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
