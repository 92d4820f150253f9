"""Exclusive locks that hold across the nodes of a cluster: POSIX record locks (`fcntl.lockf`)
on a file of the shared file system, held by an open file for as long as the work runs.

Why POSIX locks: on NFS they reach the server (NLM for NFSv3, the protocol itself for NFSv4),
so a lock taken on one node is seen on every other; Linux emulates `flock` on NFS with them too,
but a BSD `flock` on other file systems stays local to the node. Neither holds across nodes on
an NFS mount with `nolock` or `local_lock=all`, nor on Lustre without its `flock` mount option.
The kernel drops the lock when its process ends, however it ends (on NFSv4 a crashed client's
lock goes when its lease ends, 90 s by default), so a dead holder never blocks for good.

A POSIX lock belongs to the process, and closing any descriptor of the file drops it: so this
module keeps the one descriptor of each lock it holds and never opens a held lock file again.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from .errors import AfbenchError

# the lock files this process holds: path -> its descriptor and what it wrote
_HELD: dict[str, tuple[int, dict]] = {}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def append_event(path: Path, entry: dict, mode: int = 0o644) -> dict:
    """One JSON line appended to a log that only holders of its lock write (a trial's lock
    log, a run's cost ledger), stamped with who wrote it and when, on disk before this returns
    (one write of the whole line, then fsync). Returns the line's object."""
    entry = {**entry, **whoami(), "at": now()}
    entry.pop("since", None)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, mode)
    try:
        os.write(fd, (json.dumps(entry, sort_keys=True) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return entry


def whoami() -> dict:
    """This process, as a lock's holder: host, pid, SLURM job id (or None), start time."""
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID") or None,
        "since": now(),
    }


def _try_lock(fd: int) -> bool:
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EACCES, errno.EAGAIN):
            return False
        raise
    return True


def _read_holder(fd: int) -> dict | None:
    os.lseek(fd, 0, os.SEEK_SET)
    data = os.read(fd, 64 * 1024)
    try:
        holder = json.loads(data)
    except ValueError:
        return None
    return holder if isinstance(holder, dict) else None


def _open(path: Path, create: bool) -> int:
    flags = os.O_RDWR | (os.O_CREAT if create else 0)
    try:
        return os.open(path, flags | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise AfbenchError(f"cannot open the lock file: {error.strerror}", file=str(path)) from None


@contextmanager
def held(
    path: Path,
    *,
    on_wait: Callable[[dict | None], None] | None = None,
    poll_s: float = 2.0,
) -> Iterator[dict]:
    """Hold the lock at `path` (created if absent), waiting while another process holds it;
    `on_wait(holder)` is called once, with what the holder wrote (or None), when it must wait.
    Yields this holder's record, which is also written into the file."""
    key = os.path.abspath(path)
    if key in _HELD:
        raise AfbenchError("this process already holds the lock", file=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open(path, create=True)
    try:
        waited = False
        while not _try_lock(fd):
            if not waited and on_wait is not None:
                on_wait(_read_holder(fd))
            waited = True
            time.sleep(poll_s)
        me = whoami()
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        os.fsync(fd)
        _HELD[key] = (fd, me)
        try:
            yield me
        finally:
            del _HELD[key]
    finally:
        os.close(fd)  # drops the lock


def holder(path: Path) -> dict | None:
    """Who holds the lock at `path` now (what it wrote: host, pid, SLURM job, since), or None
    when nobody does. Tested by taking the lock without waiting, and letting it go at once."""
    key = os.path.abspath(path)
    if key in _HELD:
        return _HELD[key][1]
    if not os.path.exists(path):
        return None
    fd = _open(path, create=False)
    try:
        if _try_lock(fd):
            return None
        return _read_holder(fd) or {"host": None, "pid": None, "slurm_job_id": None, "since": None}
    finally:
        os.close(fd)
