"""The live view of a run (afbench.execution.watch): its figures are the ledger's and the receipts',
it renders as plain lines, one snapshot or one JSON record, it refuses a damaged or foreign ledger
in one line, leaves a line still being appended for the next look, follows a run to its end, and the
status page a trial job rewrites is replaced whole: headless Chromium, reloading it while it is
rewritten, renders a whole page each time, and during a real run renders the view's figures and
refreshes itself until the run has ended."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from afbench.cli import main
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import json_bytes
from afbench.core.stats import wilson_interval
from afbench.execution import ledger, watch
from afbench.kinds import RELEASE, RUN_PLAN, TRIAL_RECEIPT
from afbench.kinds.execution import SIDE, TRIAL
from afbench.plans.plan import plan_label

from chromium import CHROMIUM, Tab, needs_chromium
from conftest import declared, plan_fields, refusal_lines

AFBENCH = str(Path(sys.executable).with_name("afbench"))
PAID = "a:B"  # an agent that may call a model, as tests/execution/test_ledger.py names it
HANG_GUARD_S = 120  # never reached by a run that ends: it only keeps a broken test from hanging
DOM = "document.documentElement.outerHTML"  # the page as Chromium rendered it


def trial(name: str, agent: str = "oracle", task: str = "t1", attempt: int = 1) -> dict:
    return {"job_name": name, "task_id": task, "attempt": attempt, "agent": agent, "model": None}


def write_receipt(
    folder: Path, name: str, outcome: str, *, agent="oracle", task="t1", attempt=1, refused=None
) -> Path:
    """A trial receipt where run-trial writes it: <selection>/<label>/<task>/attempt-<n>.json."""
    receipt = declared(
        TRIAL_RECEIPT,
        release=declared(RELEASE, revision="a" * 40),
        plan={
            "selection": {"name": "s", "selection_sha256": "5" * 64, "tasks": 4},
            "agent": agent,
            "model": None,
            "sha256": "0" * 64,
        },
        task_id=task,
        attempt=attempt,
        run_agent=agent,
        run_model=None,
        job_name=name,
        refused=refused,
        trials=[] if refused else [declared(TRIAL, outcome=outcome, cost_usd=0.0)],
        outcome="not started" if refused else outcome,
    )
    path = folder / "s" / plan_label(agent, None) / task / f"attempt-{attempt}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(json_bytes(receipt))
    return path


def write_run_plan(path: Path, agent: str, tasks: int, ceiling_usd: float) -> Path:
    plan = declared(
        RUN_PLAN,
        selection={"name": "s", "selection_sha256": "5" * 64, "tasks": tasks},
        configuration=declared(SIDE, label=plan_label(agent, None), agent=agent, attempts=1),
        money={"per_trial_cap_usd": 0.0, "ceiling_usd": ceiling_usd, "worst_case_usd": 0.0},
    )
    path.write_bytes(json_bytes(plan))
    return path


@pytest.fixture
def run(tmp_path) -> dict:
    """A run in the middle: oracle (4 planned trials) has an accepted and a rejected trial and
    one running; the paid agent finished one trial with an error (USD 30), was interrupted on
    another (its USD 200 cap held) and released a third that never reached Harbor."""
    path, receipts = tmp_path / "jobs.ledger.jsonl", tmp_path / "execute"
    for name, outcome, task in (("o1", "accepted", "t1"), ("o2", "rejected", "t2")):
        assert ledger.start(path, trial(name, task=task), 0, 500) is None
        ledger.finish(path, trial(name, task=task), [0.0], paid=False, cap_usd=0)
        write_receipt(receipts, name, outcome, task=task)
    assert ledger.start(path, trial("o3", task="t3"), 0, 500) is None
    paid = {n: trial(n, PAID, task=t) for n, t in (("p1", "t1"), ("p2", "t2"), ("p3", "t3"))}
    for one in paid.values():
        assert ledger.start(path, one, 200, 1000) is None
    ledger.finish(path, paid["p1"], [30.0], paid=True, cap_usd=200)
    write_receipt(receipts, "p1", "error", agent=PAID)
    assert ledger.interrupt(path, paid["p2"], 200, "its controller died")
    ledger.release(path, paid["p3"], "the export failed")
    plan = write_run_plan(tmp_path / "oracle.json", "oracle", tasks=4, ceiling_usd=500.0)
    return {"ledger": path, "receipts": receipts, "plan": plan}


def look(run: dict) -> dict:
    return watch.snapshot(run["ledger"], run["receipts"], [run["plan"]])


def afbench(*argv: object) -> tuple[int, str, str]:
    """`afbench ARGV` in this process (standard output not a terminal): status, out, err."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def flags(run: dict) -> list[str]:
    return [f"--ledger={run['ledger']}", f"--receipts={run['receipts']}", f"--plan={run['plan']}"]


# --- the figures --------------------------------------------------------------------------------
def test_the_figures_are_the_ledger_s_and_the_receipts(run):
    snap = look(run)
    paid, oracle = snap["configurations"]  # in the labels' order
    assert (paid["label"], oracle["label"]) == (plan_label(PAID, None), "oracle")
    assert {k: oracle[k] for k in ("planned", "done", "running", "held", "left")} == {
        "planned": 4,
        "done": 2,
        "running": 1,
        "held": 0,
        "left": 1,
    }
    assert (oracle["successes"], oracle["rejections"], oracle["errors"]) == (1, 1, 0)
    assert (oracle["rate"], oracle["rate_low"], oracle["rate_high"]) == (
        0.5,
        *wilson_interval(1, 2),
    )
    # no plan for the paid configuration: what is left of it is not known
    assert {k: paid[k] for k in ("planned", "done", "running", "held", "left", "errors")} == {
        "planned": None,
        "done": 1,
        "running": 0,
        "held": 1,
        "left": None,
        "errors": 1,
    }
    assert (paid["spent_usd"], paid["held_usd"], paid["open_usd"]) == (30.0, 200.0, 0.0)
    now = ledger.state(ledger.read_entries(run["ledger"]))
    assert snap["money"] == {
        "spent_usd": now["spent_usd"],
        "held_usd": now["held_usd"],
        "open_usd": now["open_usd"],
        "ceiling_usd": 500.0,  # the sealed run plan's
        "left_usd": 500.0 - ledger.committed(now),
    }
    assert snap["as_of"] == ledger.read_entries(run["ledger"])[-1]["at"]
    assert snap["over"] is False and snap["time_left_s"] is None
    # the same files give the same snapshot: nothing in it comes from the clock
    assert look(run) == snap


def write_stamped_ledger(path: Path, events: list[tuple[dict, str, str]]) -> Path:
    """A ledger of free trials' starts and finishes, each (trial, event, stamp)."""
    lines = []
    for made, event, at in events:
        entry = {**made, "event": event, "host": "h", "pid": 1, "at": at}
        entry |= (
            {"worst_case_usd": 0.0}
            if event == "start"
            else {"cost_usd": 0.0, "cost_reported": True, "trials": 1}
        )
        lines.append(json.dumps(entry))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_time_left_comes_from_the_trials_own_durations(tmp_path):
    path = write_stamped_ledger(
        tmp_path / "jobs.ledger.jsonl",
        [
            (trial("o1"), "start", "2026-01-01T10:00:00+00:00"),
            (trial("o1"), "finish", "2026-01-01T10:01:40+00:00"),
        ],
    )
    write_receipt(tmp_path / "execute", "o1", "accepted")
    plan = write_run_plan(tmp_path / "plan.json", "oracle", tasks=4, ceiling_usd=10.0)
    [oracle] = watch.snapshot(path, tmp_path / "execute", [plan])["configurations"]
    assert (oracle["mean_trial_s"], oracle["left"], oracle["time_left_s"]) == (100.0, 3, 300.0)


@pytest.mark.parametrize("tasks, left, time_left_s", [(4, 2, 270.0), (2, 0, 70.0)])
def test_a_running_trial_counts_what_it_still_needs_at_the_mean(tmp_path, tasks, left, time_left_s):
    """o1 took 100 s; o2 has run 30 s by the ledger's last stamp: it needs 70 s more, then
    each trial left takes 100 s, one at a time as now; the last trial running is not done."""
    o1, o2 = trial("o1", task="o1"), trial("o2", task="o2")
    path = write_stamped_ledger(
        tmp_path / "jobs.ledger.jsonl",
        [
            (o1, "start", "2026-01-01T10:00:00+00:00"),
            (o2, "start", "2026-01-01T10:01:10+00:00"),
            (o1, "finish", "2026-01-01T10:01:40+00:00"),
        ],
    )
    write_receipt(tmp_path / "execute", "o1", "accepted", task="o1")
    plan = write_run_plan(tmp_path / "plan.json", "oracle", tasks=tasks, ceiling_usd=10.0)
    snap = watch.snapshot(path, tmp_path / "execute", [plan])
    [oracle] = snap["configurations"]
    assert (oracle["done"], oracle["running"], oracle["left"]) == (1, 1, left)
    assert oracle["time_left_s"] == snap["time_left_s"] == time_left_s


# --- the renderings -------------------------------------------------------------------------------
def test_once_prints_the_snapshot_s_lines_and_json_its_record(run):
    code, out, err = afbench("watch", *flags(run), "--once")
    assert code == 0, err
    assert out.splitlines() == watch.lines(look(run))
    assert out.splitlines()[0].startswith(f"{run['ledger']}: as of ")
    assert "oracle: done 2, running 1, held 0, left 1, successes 1" in out
    code, out, err = afbench("watch", *flags(run), "--json")
    assert code == 0, err
    [record] = out.splitlines()
    assert json.loads(record) == look(run)


def test_in_a_pipe_it_prints_plain_lines_and_ends_with_the_run(run):
    ledger.finish(run["ledger"], trial("o3", task="t3"), [0.0], paid=False, cap_usd=0)
    write_receipt(run["receipts"], "o3", "accepted", task="t3")
    ledger.refuse(run["ledger"], trial("o4", task="t4"), "cost ceiling")
    write_receipt(run["receipts"], "o4", "", task="t4", refused="cost ceiling")
    assert look(run)["over"] is True
    done = subprocess.run(
        [AFBENCH, "watch", *flags(run)], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == watch.lines(look(run))
    assert "the run has ended" in done.stdout and "\x1b[" not in done.stdout  # no terminal codes
    # `afbench ledger --follow` is the same view
    same = subprocess.run(
        [AFBENCH, "ledger", "--follow", *flags(run)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert same.returncode == 0 and same.stdout == done.stdout, same.stderr


def test_the_terminal_view_is_a_rich_table_of_the_same_figures(run):
    from rich.console import Console

    console = Console(file=io.StringIO(), width=250, color_system=None)
    console.print(watch.renderable(look(run)))
    drawn = console.file.getvalue()
    for name, _ in watch.COLUMNS:
        assert name in drawn
    assert "0.500 [" in drawn and "oracle" in drawn


def test_start_up_does_not_import_rich():
    code = "import sys, afbench.cli.seed, afbench.execution.watch; print('rich' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert shown.stdout.strip() == "False", shown.stderr


# --- a damaged, foreign or half-written ledger --------------------------------------------------
def _good_line(name: str = "o1") -> bytes:
    entry = {**trial(name), "event": "start", "host": "h", "pid": 1, "at": "2026-01-01T10:00:00"}
    return json.dumps({**entry, "worst_case_usd": 0.0}).encode()


DAMAGED = {
    "bad JSON": (b'{"event": "start", "job_name": \n', 2, None),
    "wrong field type": (_good_line().replace(b'"pid": 1', b'"pid": "1"'), 2, "pid"),
    "unknown event": (_good_line().replace(b'"start"', b'"spend"'), 2, "event"),
}


@pytest.mark.parametrize("case", sorted(DAMAGED))
def test_a_damaged_ledger_is_one_error_line_naming_file_line_and_field(tmp_path, case):
    data, row, field = DAMAGED[case]
    path = tmp_path / "jobs.ledger.jsonl"
    path.write_bytes(_good_line() + b"\n" + data.rstrip(b"\n") + b"\n")
    for command in (["watch", "--receipts", tmp_path], ["ledger", "--follow"]):
        done = subprocess.run(
            [AFBENCH, *map(str, command), "--ledger", str(path), "--once"],
            capture_output=True,
            text=True,
            timeout=HANG_GUARD_S,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        [refusal] = refusal_lines(done.stderr)
        assert refusal.startswith(f"afbench: error: {path}: row {row}"), refusal
        if field is not None:
            assert f"field '{field}'" in refusal and "expected" in refusal, refusal


def test_a_foreign_file_is_one_error_line(tmp_path, run):
    foreign = write_receipt(tmp_path / "elsewhere", "o1", "accepted")  # a receipt, not a ledger
    code, out, err = afbench("watch", f"--ledger={foreign}", f"--receipts={tmp_path}", "--once")
    assert code == 2 and out == "" and "Traceback" not in err
    [refusal] = refusal_lines(err)
    assert refusal.startswith(f"afbench: error: {foreign}: row 1"), refusal


def test_a_last_line_still_being_appended_is_left_for_the_next_look(run):
    before = look(run)
    whole = _good_line("o9") + b"\n"
    with run["ledger"].open("ab") as log:
        log.write(whole[:25])  # a trial job on another node, in the middle of its line
    assert look(run) == before
    with run["ledger"].open("ab") as log:
        log.write(whole[25:])
    after = look(run)
    assert after["configurations"][1]["running"] == before["configurations"][1]["running"] + 1
    # a tail that can never become a line (afbench begins each with `{"`) is refused at once
    foreign = run["ledger"].with_name("foreign.jsonl")
    foreign.write_bytes(b"not a ledger")
    with pytest.raises(AfbenchError, match=f"{foreign}: row 1"):
        watch.snapshot(foreign)
    # the trial jobs themselves still refuse a line without its newline that is not JSON
    run["ledger"].write_bytes(run["ledger"].read_bytes() + whole[:25])
    with pytest.raises(AfbenchError, match="row"):
        ledger.read_entries(run["ledger"])


# --- following a run ------------------------------------------------------------------------------
def test_follow_ends_when_the_run_ends_and_not_before(tmp_path):
    path, receipts = tmp_path / "jobs.ledger.jsonl", tmp_path / "execute"
    plan = write_run_plan(tmp_path / "plan.json", "oracle", tasks=2, ceiling_usd=10.0)
    steps = [
        lambda: ledger.start(path, trial("o1"), 0, 10),
        lambda: ledger.finish(path, trial("o1"), [0.0], paid=False, cap_usd=0),
        lambda: write_receipt(receipts, "o1", "accepted"),
        lambda: ledger.start(path, trial("o2", task="t2"), 0, 10),
        lambda: ledger.finish(path, trial("o2", task="t2"), [0.0], paid=False, cap_usd=0),
        lambda: write_receipt(receipts, "o2", "rejected", task="t2"),
    ]
    looked, go = threading.Event(), threading.Event()

    def wait(_interval: float) -> None:  # the view's pause: it has looked; the next line comes
        looked.set()
        assert go.wait(HANG_GUARD_S)
        go.clear()

    shown: list[dict] = []
    ended: list[dict] = []
    viewer = threading.Thread(
        target=lambda: ended.append(
            watch.follow(
                lambda: watch.snapshot(path, receipts, [plan]),
                shown.append,
                interval_s=0,
                wait=wait,
            )
        )
    )
    viewer.start()
    for step in steps:
        assert looked.wait(HANG_GUARD_S)
        assert viewer.is_alive() and ended == []  # the run has not ended: the view goes on
        looked.clear()
        step()
        go.set()
    viewer.join(HANG_GUARD_S)
    assert not viewer.is_alive()
    [last] = ended
    assert last["over"] and last == watch.snapshot(path, receipts, [plan])
    [oracle] = last["configurations"]
    assert (oracle["done"], oracle["left"], oracle["successes"], oracle["rejections"]) == (
        2,
        0,
        1,
        1,
    )
    assert [s["over"] for s in shown] == [False] * (len(shown) - 1) + [True]


def watching(ledger_path: Path, receipts: Path, plan: Path, *, interval_s: float):
    """`afbench watch` following a run's ledger and receipts, its output piped."""
    return subprocess.Popen(
        [
            *[AFBENCH, "watch", f"--ledger={ledger_path}", f"--receipts={receipts}"],
            *[f"--plan={plan}", f"--interval-s={interval_s}"],
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_command_follows_a_ledger_another_process_appends_to(tmp_path):
    path, receipts = tmp_path / "jobs.ledger.jsonl", tmp_path / "execute"
    plan = write_run_plan(tmp_path / "plan.json", "oracle", tasks=1, ceiling_usd=10.0)
    viewer = watching(path, receipts, plan, interval_s=0.05)
    try:
        ledger.start(path, trial("o1"), 0, 10)
        ledger.finish(path, trial("o1"), [0.0], paid=False, cap_usd=0)
        assert viewer.poll() is None  # its receipt is not written yet: the run goes on
        write_receipt(receipts, "o1", "accepted")
        out, err = viewer.communicate(timeout=HANG_GUARD_S)
    finally:
        viewer.kill()
    assert viewer.returncode == 0, err
    assert out.splitlines()[-2:] == watch.lines(watch.snapshot(path, receipts, [plan]))


# --- the status page ------------------------------------------------------------------------------
def test_the_status_page_shows_the_snapshot_and_refreshes_until_the_run_ends(run, tmp_path):
    page = tmp_path / "status.html"
    watch.write_status_page(page, look(run))
    text = page.read_text()
    assert '<meta http-equiv="refresh"' in text
    for line in watch.lines(look(run)):
        for part in line.split(", ")[1:]:
            assert part.replace("[", "").split(" ")[0] in text
    assert watch.status_html(look(run)) == text  # the same inputs, the same bytes
    ended = {**look(run), "over": True}
    assert '<meta http-equiv="refresh"' not in watch.status_html(ended)


def test_a_trial_job_rewrites_the_status_page_whole_once_its_receipt_is_written(tmp_path, checkout):
    from conftest import job

    fields = plan_fields(tmp_path, checkout, PAID, str(tmp_path / "no-harbor"))
    plan = tmp_path / "plan.json"
    job("write-plan", *fields, f"--output={plan}")
    executed = tmp_path / "execute"
    receipt = executed / "one" / plan_label(PAID, None) / "demo_s01_t001" / "attempt-1.json"
    receipt.parent.mkdir(parents=True)
    page = executed / "status.html"
    page.write_text("the page before this trial\n")
    before = page.stat().st_ino
    done = subprocess.run(
        [
            *[AFBENCH, "job", "run-trial", f"--plan={plan}", *fields, "--task=demo_s01_t001"],
            *["--attempt=1", "--allow-model-agent=true", "--max-cost-usd=100"],
            *[f"--ledger={tmp_path / 'jobs.ledger.jsonl'}", f"--output={receipt}"],
            *[f"--status-page={page}", f"--status-receipts={executed}", "--status-steps="],
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr
    assert TRIAL_RECEIPT.read(receipt)["refused"]  # refused at the ceiling: the trial ended
    snap = watch.snapshot(tmp_path / "jobs.ledger.jsonl", executed, [], None, 100.0)
    assert page.read_text() == watch.status_html(snap)
    assert page.stat().st_ino != before  # renamed into place, never written over in place
    assert sorted(p.name for p in executed.iterdir()) == ["one", "status.html"]
    [paid] = snap["configurations"]
    assert paid["refused"] == 1 and snap["over"] is True


def test_a_page_drawn_from_a_look_older_than_the_files_is_drawn_again(run, tmp_path):
    """Two trial jobs that end together: the first looks at the files; the second's trial ends
    and its job draws the page; the first renames its older page over it. Its look after the
    rename finds the files changed, and it draws the page again: the newer page stands."""
    page = tmp_path / "status.html"
    looks: list[dict] = []

    def first_job_looks() -> dict:
        snap = look(run)
        if not looks:  # meanwhile o3 ends, and its job draws the page
            ledger.finish(run["ledger"], trial("o3", task="t3"), [0.0], paid=False, cap_usd=0)
            write_receipt(run["receipts"], "o3", "accepted", task="t3")
            watch.rewrite_status_page(page, lambda: look(run))
        looks.append(snap)
        return snap

    assert watch.rewrite_status_page(page, first_job_looks) == look(run)
    assert page.read_text() == watch.status_html(look(run))
    older, newer, again = looks
    assert older != newer == again


# what Chromium rendered of a status page: its refresh, its head line and its table's cells
RENDERED = """({
  refresh: document.querySelector('meta[http-equiv="refresh"]')?.content ?? null,
  head: document.querySelector('body > p').textContent,
  rows: [...document.querySelectorAll('tr')].map(row => [...row.cells].map(c => c.textContent)),
})"""


def drawn(snap: dict) -> dict:
    """What the status page of `snap` must render as (RENDERED's shape)."""
    return {
        "refresh": None if snap["over"] else str(watch.REFRESH_S),
        "head": watch.head_line(snap),
        "rows": [
            [name for name, _ in watch.COLUMNS],
            *([show(made) for _, show in watch.COLUMNS] for made in snap["configurations"]),
        ],
    }


def as_lines(rendered: dict) -> list[str]:
    """A rendered page as the terminal's lines (watch.lines): its head, then each row's
    configuration and every column's name and value."""
    [names, *rows] = rendered["rows"]
    return [rendered["head"]] + [
        f"{row[0]}: "
        + ", ".join(f"{name} {value}" for name, value in zip(names[1:], row[1:], strict=True))
        for row in rows
    ]


@pytest.mark.browser
@needs_chromium
def test_the_status_page_renders_whole_in_chromium_while_it_is_rewritten(tmp_path):
    """Chromium reloading the page while a writer rewrites it over and over renders one whole
    page each time, never half of one (it is renamed into place: written in place instead, most
    reloads render a cut page), and text with markup in it (the ledger's folder) as text."""
    assert CHROMIUM, "chromium must be installed in CI"
    folder = tmp_path / 'run <b>&amp; "one"'
    folder.mkdir()
    path, page = folder / "jobs.ledger.jsonl", folder / "status.html"
    ledger.start(path, trial("o1"), 0, 500)
    running = watch.snapshot(path)
    ledger.finish(path, trial("o1"), [0.0], paid=False, cap_usd=0)
    ended = watch.snapshot(path)
    assert not running["over"] and ended["over"]
    with Tab(tmp_path / "profile", HANG_GUARD_S) as tab:
        watch.write_status_page(page, running)
        tab.open(page.as_uri())
        assert tab.evaluate(RENDERED) == drawn(running)
        assert str(folder) in tab.evaluate(RENDERED)["head"]
        whole = {tab.evaluate(DOM): "running"}
        watch.write_status_page(page, ended)
        tab.reload()
        assert tab.evaluate(RENDERED) == drawn(ended)
        whole[tab.evaluate(DOM)] = "ended"

        stop = threading.Event()

        def rewrite() -> None:
            while not stop.is_set():
                watch.write_status_page(page, running)
                watch.write_status_page(page, ended)

        writer = threading.Thread(target=rewrite)
        writer.start()
        try:
            shown = []
            for _ in range(20):
                tab.reload()
                dom = tab.evaluate(DOM)
                shown.append(whole.get(dom, dom))
        finally:
            stop.set()
            writer.join(HANG_GUARD_S)
    assert set(shown) <= {"running", "ended"}, shown
    assert set(shown) == {"running", "ended"}  # the reloads did meet the rewrites


# --- a sealed sequential comparison -----------------------------------------------------------
def write_step(folder: Path, step: int, *, next_trials: list[dict], looks=(), stopped=False):
    from afbench.kinds import SEQUENTIAL_RUN
    from afbench.kinds.execution import COMPARISON

    record = declared(
        SEQUENTIAL_RUN,
        comparison=declared(COMPARISON, selection="s", a="oracle", b="nop"),
        step=step,
        decision="A better" if stopped else "continue",
        stopped=stopped,
        stopped_by="decision" if stopped else None,
        tasks_counted=len(looks) and looks[-1]["tasks"],
        horizon=4,
        looks=list(looks),
        next_trials=next_trials,
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"step-{step}.json").write_bytes(json_bytes(record))


def test_a_sealed_comparison_shows_its_evidence_and_next_look_and_ends_when_it_stops(tmp_path):
    from afbench.kinds.execution import LOOK

    path, receipts, steps = tmp_path / "jobs.ledger.jsonl", tmp_path / "execute", tmp_path / "seq"
    pair = [
        {"task_id": "t1", "configuration": side, "label": label, "attempt": 1}
        for side, label in (("a", "oracle"), ("b", "nop"))
    ]
    write_step(steps, 0, next_trials=pair)
    for name, agent in (("o1", "oracle"), ("n1", "nop")):
        ledger.start(path, trial(name, agent), 0, None)
    snap = watch.snapshot(path, receipts, [], steps)
    assert [(c["label"], c["running"], c["left"]) for c in snap["configurations"]] == [
        ("nop", 1, 0),
        ("oracle", 1, 0),
    ]
    assert snap["sequential"]["next_look_tasks"] == 1 and not snap["over"]
    assert "no look yet; next look at 1 task(s)" in watch.lines(snap)[-1]
    for name, agent, outcome in (("o1", "oracle", "accepted"), ("n1", "nop", "rejected")):
        ledger.finish(path, trial(name, agent), [0.0], paid=False, cap_usd=0)
        write_receipt(receipts, name, outcome, agent=agent)
    assert not watch.snapshot(path, receipts, [], steps)["over"]  # the next step is decided
    look_ = declared(
        LOOK,
        tasks=1,
        favour_a={"pairs": 1, "for_a": 1},
        favour_b={"pairs": 1, "for_a": 1},
        boundary_for_a=1,
        boundary_for_b=2,
        e_a=3.0,
        e_b=0.0,
        decision="A better",
    )
    write_step(steps, 1, next_trials=[], looks=[look_], stopped=True)
    snap = watch.snapshot(path, receipts, [], steps)
    seq = snap["sequential"]
    assert (seq["step"], seq["e_a"], seq["for_a"], seq["boundary_for_a"]) == (1, 3.0, 1, 1)
    assert (seq["for_b"], seq["boundary_for_b"], seq["next_look_tasks"]) == (0, 2, None)
    assert snap["over"] and "stopped (decision)" in watch.lines(snap)[-1]


def test_the_view_s_flags_on_ledger_need_follow(run):
    code, out, err = afbench("ledger", f"--ledger={run['ledger']}", "--once")
    assert code == 2 and out == ""
    [refusal] = refusal_lines(err)
    assert "field '--once'" in refusal and "expected --follow with it" in refusal, refusal
    code, _, err = afbench("ledger", f"--ledger={run['ledger']}", "--follow", "--release-dead")
    assert code == 2 and "field '--release-dead'" in err, err


# --- a real run -----------------------------------------------------------------------------------
SPEND_RUN = """\
selections:
  exec-one: {tasks: [demo_s01_t001]}
plans:
  harbor: .harbor-venv/bin/harbor
  environment_type: docker
  items: [{selection: exec-one, agent: "spend_agent:SpendAgent"}]
execute:
  items: [{selection: exec-one, agent: "spend_agent:SpendAgent"}]
  attempts: 2
  allow_model_agents: true
  max_cost_usd: 400
  trial_cap_usd: 100
  pass_env: [PYTHONPATH, AFBENCH_TEST_SPEND_STEP_USD, AFBENCH_TEST_SPEND_STEP_S,
    AFBENCH_TEST_SPEND_STEPS, AFBENCH_TEST_SPEND_TICKETS]
"""


def settled_events(ledger_path: Path) -> list[str]:
    if not ledger_path.exists():
        return []
    return [entry["event"] for entry in ledger.read_entries(ledger_path, settled_only=True)]


@pytest.mark.snakemake
@pytest.mark.harbor
@pytest.mark.docker
@pytest.mark.browser
@needs_chromium
def test_watch_and_the_status_page_follow_a_real_execute_to_its_end(demo_project, tmp_path):
    """`snakemake execute` of two trials side by side of the model-free spend agent (USD 5
    each), each held until the test hands it a ticket. `afbench watch`, started before the run,
    ends with it, its last lines the run's figures. With one trial ended and the other held, the
    status page open in headless Chromium renders what `afbench watch --once` and `--json` show
    and what the ledger and the receipts hold, and asks to be refreshed; once the last trial
    ends, Chromium's own refresh of it renders the run's final figures, which ask for none."""
    import shutil

    from test_trial import as_checkout, shell

    from conftest import demo_revision, docker_skip_reason, harbor_skip_reason, wait_until

    reason = harbor_skip_reason() or docker_skip_reason()
    if reason:
        pytest.skip(reason)
    assert CHROMIUM, "chromium must be installed in CI"
    root = tmp_path / "project"
    shutil.copytree(demo_project, root, symlinks=True)
    env = as_checkout(root)
    (root / "my-spend-run.yaml").write_text(SPEND_RUN)
    configs = "--configfile config/demo.yaml my-spend-run.yaml"
    sealed = shell(root, f". .venv/bin/activate\nsnakemake preregister {configs}\n", env)
    assert sealed.returncode == 0, (sealed.stdout + sealed.stderr)[-3000:]
    out = root / "results" / demo_revision()
    live, executed = out / "jobs.ledger.jsonl", out / "execute"
    plan = executed / "run-plans" / "exec-one" / "spend_agent__SpendAgent.json"
    page = executed / "status.html"
    tickets = tmp_path / "tickets"  # one file in it lets one held agent end
    tickets.mkdir()

    def watch_now(view: str) -> str:
        named = [f"--ledger={live}", f"--receipts={executed}", f"--plan={plan}"]
        done = subprocess.run(
            [AFBENCH, "watch", *named, view],
            capture_output=True,
            text=True,
            timeout=HANG_GUARD_S,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    viewer = watching(live, executed, plan, interval_s=0.2)
    said = tmp_path / "execute.log"
    with said.open("w") as log:
        run = subprocess.Popen(
            [
                *["bash", "-e", "-c"],
                ". .venv/bin/activate\n"
                "PYTHONPATH=$PWD/tests/harbor_agents${PYTHONPATH:+:$PYTHONPATH} "
                "AFBENCH_TEST_SPEND_STEP_USD=5 AFBENCH_TEST_SPEND_STEP_S=0 "
                f"AFBENCH_TEST_SPEND_STEPS=1 AFBENCH_TEST_SPEND_TICKETS={tickets} "
                f"snakemake execute --cores 2 {configs}\n",
            ],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        # both trials hold their caps in the ledger, then one ends and its job draws the page
        wait_until(lambda: settled_events(live) == ["start", "start"], "two trials started", run)
        (tickets / "first").touch()
        wait_until(page.exists, "the first trial's job drew the status page", run)
        with Tab(tmp_path / "profile", HANG_GUARD_S) as tab:
            tab.open(page.as_uri())
            mid = tab.evaluate(RENDERED)
            snap = json.loads(watch_now("--json"))
            assert mid == drawn(snap) and mid["refresh"] == str(watch.REFRESH_S)
            assert as_lines(mid) == watch_now("--once").splitlines()
            [made] = snap["configurations"]
            assert (made["planned"], made["done"], made["running"], made["left"]) == (2, 1, 1, 0)
            assert (made["spent_usd"], made["open_usd"], snap["over"]) == (5.0, 100.0, False)
            assert len(list(executed.glob(watch.RECEIPT_GLOB))) == 1
            assert settled_events(live) == ["start", "start", "finish"]

            # the last trial ends: the page Chromium refreshes by itself comes to show it
            (tickets / "second").touch()
            for _ in range(HANG_GUARD_S // watch.REFRESH_S):
                asked = tab.next_load()
                reasons = [
                    event["params"]["reason"]
                    for event in asked
                    if event.get("method") == "Page.frameRequestedNavigation"
                ]
                assert reasons == ["metaTagRefresh"], asked  # the page's own refresh, nothing else
                end = tab.evaluate(RENDERED)
                if end["refresh"] is None:
                    break
                assert end == mid  # drawn again from the same files, whole
            else:
                pytest.fail("Chromium never rendered the run's end")
        assert run.wait(timeout=900) == 0, said.read_text()[-3000:]
        seen, err = viewer.communicate(timeout=HANG_GUARD_S)
    finally:
        for spare in ("spare-1", "spare-2"):  # a failed test leaves no agent held
            (tickets / spare).touch()
        viewer.kill()
        if run.poll() is None:
            run.wait(timeout=HANG_GUARD_S)
    assert viewer.returncode == 0, err
    snap = watch.snapshot(live, executed, [plan])
    assert seen.splitlines()[-2:] == watch.lines(snap)
    [made] = snap["configurations"]
    assert (made["planned"], made["done"], made["running"], made["left"]) == (2, 2, 0, 0)
    assert (made["spent_usd"], snap["money"]["ceiling_usd"], snap["over"]) == (10.0, 400.0, True)
    final = json.loads(watch_now("--json"))
    assert end == drawn(final) and as_lines(end) == watch_now("--once").splitlines()
    assert final["configurations"] == snap["configurations"]
