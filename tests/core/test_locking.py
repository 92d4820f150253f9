"""One copy of each trial (afbench.core.locking): a second copy waits, a dead holder blocks
nobody."""

from __future__ import annotations

import os
import signal

from afbench.core import locking

from conftest import holder_process


def test_a_second_copy_waits_for_the_first_and_a_dead_holder_blocks_nobody(tmp_path):
    lock = tmp_path / "jobs" / "trial.lock"
    first = holder_process(lock, tmp_path / "release-first")
    assert first.stdout.readline().split() == ["held", str(first.pid)]
    who = locking.holder(lock)
    assert who["pid"] == first.pid and who["host"] and who["since"]
    second = holder_process(lock, tmp_path / "release-second", say_tries=True)
    assert second.stdout.readline() == "busy\n"
    assert second.stdout.readline().split() == ["waiting", "for", str(first.pid)]
    # it looks again and again, and each time finds the lock held: still waiting
    assert [second.stdout.readline() for _ in range(3)] == ["busy\n"] * 3
    assert second.poll() is None and locking.holder(lock)["pid"] == first.pid
    (tmp_path / "release-first").touch()
    assert first.stdout.readline().strip() == "released"
    said = second.stdout.readline()
    while said == "busy\n":  # the looks it took before the first let go
        said = second.stdout.readline()
    assert said.split() == ["held", str(second.pid)]
    assert locking.holder(lock)["pid"] == second.pid
    os.kill(second.pid, signal.SIGKILL)  # the holder dies: the kernel drops its lock
    second.wait(timeout=10)
    first.wait(timeout=10)
    assert locking.holder(lock) is None
    with locking.held(lock) as me:
        assert locking.holder(lock) == me  # never opens a lock file this process holds
    assert locking.holder(lock) is None


def test_a_log_created_between_a_failed_open_and_a_second_look_reads_as_empty(
    tmp_path, monkeypatch
):
    """Two trials start at once: one finds no cost ledger and the other creates it at that
    instant. The reader saw it absent, which is an empty ledger, never an error (asking again
    after the failed open found it and refused: a trial of `make test` failed so, once)."""
    ledger = tmp_path / "jobs.ledger.jsonl"
    lock = tmp_path / "trial.lock"
    real_open = os.open

    def created_by_another_process_just_after(path, flags, *rest):
        if flags & os.O_CREAT or os.path.lexists(path):
            return real_open(path, flags, *rest)
        fd = real_open(path, os.O_CREAT | os.O_WRONLY)  # the other process creates it
        os.close(fd)
        raise FileNotFoundError(2, "No such file or directory", str(path))

    monkeypatch.setattr(locking.os, "open", created_by_another_process_just_after)
    assert locking.read_bytes(ledger, "cost ledger") == b"" and ledger.exists()
    assert locking.holder(lock) is None and lock.exists()
    monkeypatch.undo()
    assert locking.read_bytes(tmp_path / "absent.jsonl", "cost ledger") == b""
    assert locking.holder(tmp_path / "absent.lock") is None
