"""One copy of each trial (afbench.locking): a second copy waits, a dead holder blocks nobody."""

from __future__ import annotations

import os
import signal
import time

from afbench import locking

from conftest import holder_process


def test_a_second_copy_waits_for_the_first_and_a_dead_holder_blocks_nobody(tmp_path):
    lock = tmp_path / "jobs" / "trial.lock"
    first = holder_process(lock, tmp_path / "release-first")
    assert first.stdout.readline().split() == ["held", str(first.pid)]
    who = locking.holder(lock)
    assert who["pid"] == first.pid and who["host"] and who["since"]
    second = holder_process(lock, tmp_path / "release-second")
    assert second.stdout.readline().split() == ["waiting", "for", str(first.pid)]
    time.sleep(0.3)
    assert second.poll() is None and locking.holder(lock)["pid"] == first.pid  # still waiting
    (tmp_path / "release-first").touch()
    assert first.stdout.readline().strip() == "released"
    assert second.stdout.readline().split() == ["held", str(second.pid)]
    assert locking.holder(lock)["pid"] == second.pid
    os.kill(second.pid, signal.SIGKILL)  # the holder dies: the kernel drops its lock
    second.wait(timeout=10)
    first.wait(timeout=10)
    assert locking.holder(lock) is None
    with locking.held(lock) as me:
        assert locking.holder(lock) == me  # never opens a lock file this process holds
    assert locking.holder(lock) is None
