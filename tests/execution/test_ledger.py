"""The live cost ledger (afbench.execution.ledger) and the locks beside it (afbench.core.locking)
are inputs like any other: each trial reserves its cap, closes it once (finished, with any
overshoot; released, never having reached Harbor; interrupted, its cap held for good), a controller
that is gone is named and its holds closed, and a damaged ledger or a planted link is refused in one
line that names the file and line, before a paid trial starts and without touching anything outside
the jobs folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from afbench.core import locking
from afbench.core.errors import AfbenchError
from afbench.execution import ledger
from afbench.kinds import RELEASE, TRIAL_RECEIPT

from conftest import declared, job, plan_fields, refusal_lines, run_afbench

TASK = "demo_s01_t001"
AFBENCH = str(Path(sys.executable).with_name("afbench"))


def trial(name: str, agent: str = "a:B") -> dict:
    return {"job_name": name, "task_id": TASK, "attempt": 1, "agent": agent, "model": None}


def test_a_trial_starts_only_within_the_ceiling_counting_caps_held_and_spent(tmp_path):
    path = tmp_path / "jobs.ledger.jsonl"
    assert ledger.start(path, trial("t1"), 200, 500) is None
    assert ledger.start(path, trial("t2"), 200, 500) is None
    refused = ledger.start(path, trial("t3"), 200, 500)  # 0 spent + 400 open + 200 > 500
    assert refused == (
        "cost ceiling: spent USD 0 + held USD 0 + USD 400 for the trials started and not "
        "finished + this trial's cap USD 200 = USD 600 is over execute.max_cost_usd = 500; not "
        "started"
    )
    ledger.finish(path, trial("t1"), [30.5], paid=True, cap_usd=200)
    ledger.finish(path, trial("t2"), [None], paid=True, cap_usd=200)  # no cost: at its cap
    now = ledger.state(ledger.read_entries(path))
    assert (now["spent_usd"], now["open_usd"], now["overshoots"]) == (230.5, 0, [])
    assert ledger.start(path, trial("t3"), 200, 500) is None  # 230.5 + 200 <= 500
    # t3 reached Harbor and its holder died: its cap is held for good, never released
    assert ledger.interrupt(path, trial("t3"), 200, "its holder died")
    assert not ledger.interrupt(path, trial("t3"), 200, "twice")  # closed once
    assert ledger.start(path, trial("t4"), 200, 500).startswith(
        "cost ceiling: spent USD 230.5 + held USD 200 + USD 0 for the trials started"
    )
    # a reservation that never reached Harbor is released with its reason: nothing was spent
    assert ledger.start(path, trial("t5"), 50, 500) is None
    ledger.release(path, trial("t5"), "it never reached Harbor: the export step failed")
    now = ledger.state(ledger.read_entries(path))
    assert (now["spent_usd"], now["held_usd"], now["open"]) == (230.5, 200, [])
    assert now["last"]["t5"]["reason"] == "it never reached Harbor: the export step failed"
    # an overshoot: a trial past its cap, by how much, with what was seen while it ran
    assert ledger.start(path, trial("t6"), 20, 1000) is None
    entry = ledger.finish(path, trial("t6"), [55.0], paid=True, cap_usd=20, running_cost_usd=30)
    assert (entry["cost_usd"], entry["overshoot_usd"], entry["running_cost_usd"]) == (55, 35, 30)
    assert [e["job_name"] for e in ledger.state(ledger.read_entries(path))["overshoots"]] == ["t6"]
    assert ledger.start(path, trial("nop", "nop"), 0, 1) is None  # model-free: never refused
    events = [(e["event"], e["job_name"]) for e in ledger.read_entries(path)]
    assert events.count(("refused", "t3")) == 1 and events[-1] == ("start", "nop")
    assert all(e["host"] and e["pid"] == os.getpid() for e in ledger.read_entries(path))


APPEND = """
import sys
from pathlib import Path
from afbench.execution import ledger
path, me = Path(sys.argv[1]), sys.argv[2]
for i in range(25):
    t = {"job_name": f"{me}-{i}", "task_id": "t", "attempt": 1, "agent": "a:B", "model": None}
    assert ledger.start(path, t, 1, None) is None
    ledger.finish(path, t, [0.01], paid=True, cap_usd=1)
"""


def test_concurrent_trial_jobs_share_one_ledger_without_losing_an_entry(tmp_path):
    path = tmp_path / "jobs.ledger.jsonl"
    writers = [
        subprocess.Popen([sys.executable, "-c", APPEND, str(path), f"w{n}"]) for n in range(6)
    ]
    assert [w.wait(timeout=120) for w in writers] == [0] * 6
    entries = ledger.read_entries(path)
    assert len(entries) == 6 * 25 * 2
    assert ledger.state(entries)["spent_usd"] == pytest.approx(1.5)
    assert ledger.state(entries)["open"] == []


def receipt(
    name: str, refused: str | None = None, action: str = "harbor run", task_id=TASK, **more
) -> dict:
    return declared(
        TRIAL_RECEIPT,
        release=declared(RELEASE, revision="a" * 40),
        task_id=task_id,
        attempt=1,
        job_name=name,
        run_agent="a:B",
        run_model=None,
        worst_case_usd=200.0,
        refused=refused,
        action=action,
        **more,
    )


def test_the_cost_ledger_artifact_names_spent_held_overshoots_and_rounds(tmp_path):
    path = tmp_path / "jobs.ledger.jsonl"
    ledger.start(path, trial("t1"), 200, 1000)
    ledger.finish(path, trial("t1"), [250.0], paid=True, cap_usd=200)
    ledger.start(path, trial("t2"), 200, 1000)
    ledger.interrupt(path, trial("t2"), 200, "its holder died")
    reason = ledger.start(path, trial("t3"), 200, 500)
    files = []
    for name, refused, action, more in (
        ("t1", None, "harbor run", {"round": 1}),
        ("t2", "interrupted earlier", "interrupted", {"round": 1}),
        ("t3", reason, "refused", {"round": 2}),
    ):
        files.append(tmp_path / f"{name}.json")
        # three trials: each of its own task (one receipt per task, agent and attempt)
        files[-1].write_text(json.dumps(receipt(name, refused, action, task_id=name, **more)))
    built = ledger.build_ledger(path, files, 500)
    assert (built["spent_usd"], built["held_usd"], built["ceiling_usd"]) == (250, 200, 500)
    assert (built["overshoots"], built["overshoot_usd"], built["stopped"]) == (1, 50, True)
    assert built["interrupted_not_rerun"] == 1
    assert [(t["job_name"], t["status"], t["cost_usd"]) for t in built["trials"]] == [
        ("t1", "finished", 250.0),
        ("t2", "not run again", None),
        ("t3", "refused", None),
    ]
    assert built["partial"] == {
        "rounds": [
            {"round": 1, "ran": 1, "not_run": 1},
            {"round": 2, "ran": 0, "not_run": 1},
        ],
        "complete_rounds": 0,
    }

    # the cost ledger beside its receipts holds; each forgery of it is named by its field
    receipts = [json.loads(f.read_bytes()) for f in files]
    assert ledger.ledger_of_receipts(built, receipts) == []
    for change, field in (
        (lambda b, r: b.update(spent_usd=125.0), "spent_usd"),
        (lambda b, r: b["trials"][0].update(cost_usd=1.0), "spent_usd"),
        (lambda b, r: b["trials"][1].update(worst_case_usd=1.0), "trials[1].worst_case_usd"),
        (lambda b, r: b["trials"].pop(2), "trials"),
        (lambda b, r: b["trials"].append(dict(b["trials"][0])), "trials[3].job_name"),
        (lambda b, r: r[0].update(task_id="other"), "trials[0].task_id"),
    ):
        forged, forged_receipts = json.loads(json.dumps(built)), json.loads(json.dumps(receipts))
        change(forged, forged_receipts)
        problems = ledger.ledger_of_receipts(forged, forged_receipts)
        assert field in {p.field for p in problems}, (field, [str(p) for p in problems])


# --- hostile ledgers ----------------------------------------------------------------------------
GOOD = {
    "event": "finish",
    "job_name": "j1",
    "task_id": TASK,
    "attempt": 1,
    "agent": "a:B",
    "model": None,
    "host": "h",
    "pid": 7,
    "slurm_job_id": None,
    "at": "2026-12-01T00:00:00+00:00",
    "cost_usd": 250.0,
    "cost_reported": True,
    "trials": 1,
}


def line(**changed) -> bytes:
    entry = {**GOOD, **changed}
    return json.dumps({k: v for k, v in entry.items() if v is not ...}).encode()


HOSTILE = {
    # what switched the ceiling off, or gave a traceback, or hung
    "NaN cost": (line()[:-1] + b', "cost_usd": NaN}', "NaN is not valid JSON"),
    "negative cost": (line(cost_usd=-1000), "field 'cost_usd'"),
    "not UTF-8": (line()[:-1] + b', "note": "\xff\xfe"}', "is not UTF-8"),
    "no job_name": (line(job_name=...), "field 'job_name': a 'finish' entry lacks a field"),
    "cost as text": (line(cost_usd="250"), "field 'cost_usd'"),
    "cost null": (line(cost_usd=None), "field 'cost_usd'"),
    "400 digits": (line()[:-1] + b', "trials": 1' + b"0" * 400 + b"}", "beyond the range"),
    "nested 100,000 deep": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "not an object": (b"[1, 2]", "not a cost-ledger entry"),
    "unknown event": (line(event="spend"), "field 'event'"),
    "boolean pid": (line(pid=True), "field 'pid'"),
    "infinite cost": (line()[:-1] + b', "cost_usd": 1e999}', "overflows"),
    # each field as LEDGER_ENTRY declares it: its form, its closed set, its null rule
    "job name a path": (line(job_name="../j1"), "field 'job_name'"),
    "stopped otherwise": (line(stopped="never"), "field 'stopped'"),
    "trials null": (line(trials=None), "field 'trials'"),
    # a field LEDGER_ENTRY does not declare: a writer of another version, or a hand edit
    "unknown field": (
        line(spent_usd=0.0),
        "field 'spent_usd': a cost-ledger entry has a field the ledger does not declare",
    ),
}


def test_a_ledger_field_declared_nullable_may_be_null(tmp_path):
    path = tmp_path / "jobs.ledger.jsonl"
    path.write_bytes(line(running_cost_usd=None, stopped=None, slurm_job_id=None) + b"\n")
    [entry] = ledger.read_entries(path)
    assert entry["running_cost_usd"] is None and entry["stopped"] is None


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_damaged_ledger_is_refused_in_one_line_naming_file_and_line(tmp_path, case):
    data, said = HOSTILE[case]
    path = tmp_path / "jobs.ledger.jsonl"
    path.write_bytes(line(job_name="j0") + b"\n" + data + b"\n")
    with pytest.raises(AfbenchError) as refused:
        ledger.read_entries(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: row 2") and said in message, message
    assert "\n" not in message and len(message) < 2000
    # and the trial job does not start: nothing is added to a ledger it cannot read
    before = path.read_bytes()
    with pytest.raises(AfbenchError, match="row 2"):
        ledger.start(path, trial("t9"), 200, 10_000)
    assert path.read_bytes() == before
    command = run_afbench("ledger", "--ledger", path)
    assert command.returncode == 2
    [refusal] = refusal_lines(command.stderr)
    assert f"{path}: row 2" in refusal and "Traceback" not in command.stderr


def test_a_fifo_or_folder_at_the_ledger_path_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "jobs.ledger.jsonl"
    os.mkfifo(fifo)
    for attempt in (
        lambda: ledger.read_entries(fifo),
        lambda: ledger.start(fifo, trial("t1"), 200, 1000),
    ):
        with pytest.raises(AfbenchError, match="is a FIFO \\(named pipe\\), not a regular file"):
            attempt()
    folder = tmp_path / "dir.ledger.jsonl"
    folder.mkdir()
    with pytest.raises(AfbenchError, match="is a folder, not a regular file"):
        ledger.read_entries(folder)


def test_planted_links_at_the_ledger_and_the_locks_are_never_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep me\n")
    jobs = tmp_path / "run" / "jobs"
    jobs.mkdir(parents=True)
    path = tmp_path / "run" / "jobs.ledger.jsonl"
    path.symlink_to(victim)
    with pytest.raises(AfbenchError, match="the cost ledger is a symbolic link"):
        ledger.start(path, trial("t1"), 200, 1000)
    with pytest.raises(AfbenchError, match="the cost ledger is a symbolic link"):
        ledger.read_entries(path)
    path.unlink()
    lock = jobs / "t1.lock"
    lock.symlink_to(victim)
    with pytest.raises(AfbenchError, match="the lock file is a symbolic link"), locking.held(lock):
        pass
    with pytest.raises(AfbenchError, match="the lock file is a symbolic link"):
        locking.holder(lock)
    log = jobs / "t1.lock.log"
    log.symlink_to(victim)
    with pytest.raises(AfbenchError, match="the lock log is a symbolic link"):
        locking.append_event(log, {"event": "acquired"}, what="lock log")
    dangling = jobs / "t2.lock"
    dangling.symlink_to(outside / "made-by-the-lock")
    with pytest.raises(AfbenchError, match="symbolic link"), locking.held(dangling):
        pass
    assert victim.read_text() == "keep me\n" and sorted(p.name for p in outside.iterdir()) == [
        "victim.txt"
    ]
    locking.check_regular_or_absent(jobs / "absent.lock", "lock file")
    with pytest.raises(AfbenchError, match="lock file is a symbolic link, not a regular file"):
        locking.check_regular_or_absent(lock, "lock file")


# --- holds of controllers that are gone ---------------------------------------------------------
# a trial job's reservation, and then its process is gone (the lines a trial job writes)
GONE = """
import sys
from pathlib import Path
from afbench.core import locking
path = Path(sys.argv[1])
t = {"job_name": sys.argv[2], "task_id": "t", "attempt": 1, "agent": "a:B", "model": None}
with locking.held(path.with_name(path.name + ".lock")):
    locking.append_event(path, {"event": "start", **t, "worst_case_usd": 200})
"""


def test_the_holds_of_a_controller_that_is_gone_are_named_and_closed(tmp_path):
    path = tmp_path / "jobs.ledger.jsonl"
    jobs = tmp_path / "jobs"
    # two trials whose controller died after reserving: one before Harbor began its job
    # folder, one after (its trial folder is there)
    for name in ("never-began", "began"):
        subprocess.run([sys.executable, "-c", GONE, str(path), name], check=True, timeout=60)
    (jobs / "began" / "task__abc").mkdir(parents=True)
    # a hold of this process, which runs (written as a trial job writes it, without the
    # check of the others that ledger.start makes first)
    with locking.held(path.with_name(path.name + ".lock")):
        locking.append_event(path, {"event": "start", **trial("mine"), "worst_case_usd": 200})
    now = ledger.state(ledger.read_entries(path))
    dead = ledger.dead_holds(path, now)
    assert sorted((h["entry"]["job_name"], h["event"]) for h in dead) == [
        ("began", "interrupted"),
        ("never-began", "released"),
    ]
    listing = subprocess.run(
        [AFBENCH, "ledger", "--ledger", str(path)], capture_output=True, text=True, timeout=60
    )
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert lines[0].endswith(
        "spent USD 0 on 0 finished trial(s); held USD 0 for 0 interrupted trial(s); open USD "
        "600 for 3 trial(s) started and not finished; 0 overshoot(s); 0 refusal(s)"
    )
    gone = [x for x in lines if "belongs to a controller that is gone" in x]
    assert len(gone) == 2 and all("its lock is free, pid " in x for x in gone)
    assert all(x.endswith("(close it with --release-dead)") for x in gone)
    assert any(x.startswith("hold: trial mine, USD 200, by host ") for x in lines)
    # a new trial closes the dead holds first, by name, and fits where they blocked it
    said = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from afbench.execution import ledger; "
            "t = {'job_name': 'next', 'task_id': 't', 'attempt': 1, 'agent': 'a:B', "
            "'model': None}; print(ledger.start(Path(sys.argv[1]), t, 200, 600))",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert said.stdout.strip() == "None", said.stderr
    assert said.stderr.count("belongs to a controller that is gone") == 2
    now = ledger.state(ledger.read_entries(path))
    assert sorted(now["open"]) == ["mine", "next"]
    assert now["held_usd"] == 200  # the one that reached Harbor: what it spent is unknown
    assert now["last"]["never-began"]["event"] == "released"
    assert "its controller is gone (host " in now["last"]["never-began"]["reason"]


def test_afbench_ledger_release_dead_closes_them(tmp_path):
    path = tmp_path / "jobs.ledger.jsonl"
    subprocess.run([sys.executable, "-c", GONE, str(path), "gone"], check=True, timeout=60)
    listing = run_afbench("ledger", "--ledger", path, "--release-dead")
    assert listing.returncode == 0, listing.stderr
    assert "(closed now)" in listing.stdout
    again = run_afbench("ledger", "--ledger", path)
    assert "open USD 0 for 0 trial(s)" in again.stdout
    assert "released: trial gone: its controller is gone (host " in again.stdout


# --- a trial that fails before Harbor -----------------------------------------------------------
def error_line(stderr: str) -> str:
    """The one error line of a trial job (its other lines are its log: each step and its
    output), and no traceback."""
    [line] = [x for x in stderr.splitlines() if x.startswith("afbench: error: ")]
    assert "Traceback" not in stderr
    return line


def run_trial(tmp_path: Path, fields: list[str], **more: str) -> subprocess.CompletedProcess:
    plan = tmp_path / "plan.json"
    if not plan.exists():
        job("write-plan", *fields, f"--output={plan}")
    flags = {
        "task": TASK,
        "attempt": "1",
        "allow-model-agent": "true",
        "max-cost-usd": "300",
        "ledger": str(tmp_path / "jobs.ledger.jsonl"),
        "output": str(tmp_path / "receipt.json"),
        **more,
    }
    return subprocess.run(
        [AFBENCH, "job", "run-trial", f"--plan={plan}", *fields]
        + [f"--{k}={v}" for k, v in flags.items()],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_trial_that_fails_before_harbor_releases_its_hold_with_the_reason(tmp_path, checkout):
    fields = plan_fields(tmp_path, checkout, "cost_agent:CostAgent", str(tmp_path / "no-harbor"))
    failed = run_trial(tmp_path, fields)
    assert failed.returncode == 2, failed.stderr
    refusal = error_line(failed.stderr)
    assert "cannot start the run step: program not found" in refusal or (
        "does not answer" in refusal  # no Docker engine here: refused before Harbor too
    )
    assert "never reached Harbor; its hold of USD 200 is released" in refusal
    now = ledger.state(ledger.read_entries(tmp_path / "jobs.ledger.jsonl"))
    assert now["open"] == [] and now["spent_usd"] == 0 and now["held_usd"] == 0
    [released] = now["released"]
    assert released["reason"].startswith("it never reached Harbor: ")
    assert not (tmp_path / "receipt.json").exists()
    # the money is free again: another trial of USD 200 fits under the USD 300 ceiling
    assert ledger.start(tmp_path / "jobs.ledger.jsonl", trial("other"), 200, 300) is None


@pytest.mark.parametrize("case", ["NaN cost", "negative cost", "400 digits"])
def test_run_trial_starts_no_paid_trial_on_a_damaged_ledger(tmp_path, checkout, case):
    fields = plan_fields(tmp_path, checkout, "cost_agent:CostAgent", str(tmp_path / "no-harbor"))
    path = tmp_path / "jobs.ledger.jsonl"
    path.write_bytes(line(job_name="j0") + b"\n" + HOSTILE[case][0] + b"\n")
    before = path.read_bytes()
    failed = run_trial(tmp_path, fields)
    assert failed.returncode == 2
    refusal = error_line(failed.stderr)
    assert f"{path}: row 2" in refusal and "no trial starts" in refusal
    assert path.read_bytes() == before and not (tmp_path / "receipt.json").exists()
    assert "afbench: export:" not in failed.stderr  # nothing ran, not even the export
    jobs = tmp_path / "jobs"
    assert sorted(p.name for p in jobs.iterdir()) == [
        "afbench-one-cost_agent__CostAgent-demo_s01_t001-06c878bd-attempt-1.lock",
        "afbench-one-cost_agent__CostAgent-demo_s01_t001-06c878bd-attempt-1.lock.log",
    ]


def test_run_trial_refuses_a_planted_lock_link_touching_nothing_outside(tmp_path, checkout):
    fields = plan_fields(tmp_path, checkout, "cost_agent:CostAgent", str(tmp_path / "no-harbor"))
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    name = "afbench-one-cost_agent__CostAgent-demo_s01_t001-06c878bd-attempt-1"
    for planted in (f"{name}.lock", f"{name}.lock.log"):
        (jobs / planted).symlink_to(victim)
        failed = run_trial(tmp_path, fields)
        assert failed.returncode == 2
        refusal = error_line(failed.stderr)
        assert f"{jobs / planted}: " in refusal and "symbolic link" in refusal
        assert victim.read_text() == "keep me\n"
        assert "afbench: export:" not in failed.stderr
        (jobs / planted).unlink()
    assert not (tmp_path / "jobs.ledger.jsonl").exists()


def test_a_trial_may_spend_its_cap_or_what_the_ceiling_leaves_it(tmp_path):
    path = tmp_path / "jobs.ledger.jsonl"
    mine = {"job_name": "mine", "task_id": "t", "attempt": 1, "agent": "a:B", "model": None}
    other = {**mine, "job_name": "other"}
    assert ledger.start(path, mine, 100, 300) is None
    assert ledger.start(path, other, 100, 300) is None
    assert ledger.allowance(path, "mine", 100, 300) == 100  # its cap: 300 - 100 other's cap
    assert ledger.allowance(path, "mine", 100, None) == 100
    # the other trial spent USD 250 unseen (an overshoot): 300 - 250 leaves 50 to this one
    ledger.finish(path, other, [250.0], paid=True, cap_usd=100)
    assert ledger.allowance(path, "mine", 100, 300) == 50
