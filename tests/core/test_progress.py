"""Progress bars (afbench.core.progress): throttled, bounded, escaped and cleared on a terminal,
nothing drawn off one or under --quiet."""

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

from afbench.cli import main
from afbench.core import progress
from afbench.core.config import load_config
from afbench.kinds import SELECTION
from afbench.release.identity import identity

from conftest import DEMO, FIXTURES, OWNER_REPO, declared, https_source

AFBENCH = str(Path(sys.executable).with_name("afbench"))


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
    from afbench.release.fetch import HttpsSource

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
            declared(
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
    # throttled: each redraw comes INTERVAL_S after the last, all within `elapsed`, so a loaded
    # machine only loosens this bound (an unthrottled bar draws 100,000 times in any case)
    assert len(bars) <= elapsed / progress.INTERVAL_S + 1
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
            declared(
                SELECTION, name="f", release=release, selection_sha256="0" * 64, task_ids=tasks
            )
        )
    )
    argv = ["import-run", "--selection", selection, "--name", "f", "--kind", "harbor"]
    argv += [a for j in jobs for a in ("--path", j)]
    text = _drawn_in_process([*argv, "--output-dir", tmp_path / "out"], monkeypatch)
    assert f"{progress.CLEAR}reading demo-oracle [{'#' * progress.BAR_WIDTH}] 9 of 9" in text
    last = text.rsplit(progress.CLEAR, 1)[-1]
    assert re.fullmatch(r"run f: \d configurations, \d+ trials of selection f .*\r\n", last), text
    assert _drawn_in_process([*argv, "--output-dir", tmp_path / "q", "--quiet"], monkeypatch) == ""
