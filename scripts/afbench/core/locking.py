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
import functools
import json
import os
import socket
import stat
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from afbench.core.errors import AfbenchError
from afbench.core.fsutil import file_kind, parse_json_bytes

# the lock files this process holds: path -> its descriptor and what it wrote
_HELD: dict[str, tuple[int, dict]] = {}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def open_regular(
    path: Path, flags: int, what: str, mode: int = 0o644, *, missing_ok: bool = False
) -> int | None:
    """A descriptor of the regular file at `path` (created with `mode` when `flags` say so),
    never through a symbolic link and never blocking on a FIFO: opened with O_NOFOLLOW and
    O_NONBLOCK, then refused unless fstat says it is a regular file. A planted link, FIFO,
    device or folder at a ledger or lock path is one error naming it. With `missing_ok`, None
    when the file is absent at the open itself (asked after a failed open, another process
    may have created it in between)."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as error:
        if error.errno == errno.ENOENT and missing_ok:
            return None
        if error.errno == errno.ELOOP:
            raise AfbenchError(
                f"the {what} is a symbolic link; refusing to follow it", file=str(path)
            ) from None
        raise AfbenchError(f"cannot open the {what}: {error.strerror}", file=str(path)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise AfbenchError(
                f"the {what} is {file_kind(info.st_mode)}, not a regular file; refusing it",
                file=str(path),
            )
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_regular_or_absent(path: Path, what: str) -> None:
    """Refuse a ledger or lock path that exists and is not a regular file (a planted link, a
    FIFO), before anything runs; an absent one is fine (it is created when needed)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as error:
        raise AfbenchError(f"cannot read the {what}: {error.strerror}", file=str(path)) from None
    if not stat.S_ISREG(info.st_mode):
        raise AfbenchError(
            f"the {what} is {file_kind(info.st_mode)}, not a regular file; refusing it",
            file=str(path),
        )


def append_event(
    path: Path,
    entry: dict,
    mode: int = 0o644,
    what: str = "log",
    check: Callable[[bytes], object] | None = None,
) -> dict:
    """One JSON line appended to a log that only holders of its lock write (a trial's lock
    log, a run's cost ledger), stamped with who wrote it and when, on disk before this returns
    (one write of the whole line, then fsync). Returns the line's object. The log must be a
    regular file (or absent): never a link followed, never a FIFO waited on."""
    entry = {**entry, **whoami(), "at": now()}
    entry.pop("since", None)
    line = (json.dumps(entry, sort_keys=True, allow_nan=False) + "\n").encode()
    if check is not None:
        check(line)  # what its reader would refuse is never written
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, what, mode)
    try:
        written = os.write(fd, line)
        if written != len(line):
            raise AfbenchError(
                f"the {what} took {written} of {len(line)} bytes (is the disk full?)",
                file=str(path),
            )
        os.fsync(fd)
    except OSError as error:
        raise AfbenchError(f"cannot write the {what}: {error.strerror}", file=str(path)) from None
    finally:
        os.close(fd)
    return entry


def read_bytes(path: Path, what: str, max_bytes: int = 1 << 30) -> bytes:
    """The bytes of a log (a regular file, not a link; none if absent)."""
    fd = open_regular(path, os.O_RDONLY, what, missing_ok=True)
    if fd is None:
        return b""
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise AfbenchError(
                f"the {what} is larger than the size cap",
                file=str(path),
                expected=f"at most {max_bytes} bytes",
                found=f"{size} bytes",
            )
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except OSError as error:
        raise AfbenchError(f"cannot read the {what}: {error.strerror}", file=str(path)) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


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
        holder = parse_json_bytes(data, "", "lock file")
    except AfbenchError:
        return None  # what a holder wrote is shown, never trusted: unreadable is unknown
    if not isinstance(holder, dict):
        return None
    return {key: holder.get(key) for key in ("host", "pid", "slurm_job_id", "since")}


@contextmanager
def held(
    path: Path,
    *,
    on_wait: Callable[[dict | None], None] | None = None,
    poll_s: float = 2.0,
    wait_s: float | None = None,
    busy: Callable[[dict | None], AfbenchError] | None = None,
    remove: bool = False,
) -> Iterator[dict]:
    """Hold the lock at `path` (created if absent), waiting while another process holds it;
    `on_wait(holder)` is called once, with what the holder wrote (or None), when it must wait.
    With `wait_s`, waiting ends after that many seconds in `busy(holder)`, raised. With
    `remove`, the lock file is removed as the lock is let go (one left by a killed holder is
    simply taken). Yields this holder's record, which is also written into the file."""
    key = os.path.abspath(path)
    if key in _HELD:
        raise AfbenchError("this process already holds the lock", file=str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = None if wait_s is None else time.monotonic() + wait_s
    waited = False
    while True:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, "lock file")
        try:
            while not _try_lock(fd):
                if not waited and on_wait is not None:
                    on_wait(_read_holder(fd))
                waited = True
                if deadline is not None and time.monotonic() >= deadline:
                    who = _read_holder(fd)
                    if busy is not None:
                        raise busy(who)
                    raise AfbenchError(
                        f"waited {wait_s:g} s for the lock; another process holds it",
                        file=str(path),
                        expected="a free lock",
                        found=describe(who),
                    )
                time.sleep(poll_s)
        except BaseException:
            os.close(fd)
            raise
        if _still_at(fd, path):
            break
        # its holder removed the file while this process waited on it: the lock is the new
        # file's now, if any
        os.close(fd)
    try:
        me = whoami()
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        os.fsync(fd)
        _HELD[key] = (fd, me)
        try:
            yield me
        finally:
            del _HELD[key]
            if remove:
                with suppress(OSError):
                    os.unlink(path)  # before the lock goes: a waiter then finds it gone
    finally:
        os.close(fd)  # drops the lock


def _still_at(fd: int, path: Path) -> bool:
    """Whether the locked file is still the one at `path` (a removed lock file is no lock)."""
    try:
        there = os.lstat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (mine.st_dev, mine.st_ino)


def describe(who: dict | None) -> str:
    """A lock's holder in words: pid, host, SLURM job and since when, as far as it said."""
    if not who or who.get("pid") is None:
        return "a process that did not say who it is"
    text = f"pid {who['pid']} on {who.get('host') or 'an unknown host'}"
    if who.get("slurm_job_id"):
        text += f", SLURM job {who['slurm_job_id']}"
    if who.get("since"):
        text += f", since {who['since']}"
    return text


def holder(path: Path) -> dict | None:
    """Who holds the lock at `path` now (what it wrote: host, pid, SLURM job, since), or None
    when nobody does. Tested by taking the lock without waiting, and letting it go at once."""
    key = os.path.abspath(path)
    if key in _HELD:
        return _HELD[key][1]
    fd = open_regular(path, os.O_RDWR, "lock file", missing_ok=True)
    if fd is None:
        return None
    try:
        if _try_lock(fd):
            return None
        return _read_holder(fd) or {"host": None, "pid": None, "slurm_job_id": None, "since": None}
    finally:
        os.close(fd)


def _process_started(pid: int) -> float | None:
    """When process `pid` of this host started (seconds since the epoch), or None if there is
    no such process (Linux /proc; elsewhere only whether it exists)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat_line.rsplit(")", 1)[1].split()[19])
        return _booted() + ticks / os.sysconf("SC_CLK_TCK")
    except FileNotFoundError:
        return None
    except (OSError, ValueError, IndexError, StopIteration):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return 0.0


@functools.cache
def _booted() -> float:
    return next(
        float(line.split()[1])
        for line in Path("/proc/stat").read_text().splitlines()
        if line.startswith("btime ")
    )


def _slurm_job_running(job_id: str) -> bool | None:
    """Whether SLURM still has job `job_id` (pending, running, completing), or None when there
    is no SLURM here to ask."""
    try:
        answer = subprocess.run(
            ["squeue", "-h", "-j", job_id, "-o", "%T"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if answer.returncode != 0:
        # squeue refuses a job id it no longer knows ("Invalid job id specified")
        return False if "invalid job id" in answer.stderr.lower() else None
    return bool(answer.stdout.strip())


def gone(who: dict, lock: Path | None) -> str | None:
    """Why the process that wrote `who` (host, pid, SLURM job id, since) is certainly gone, or
    None when it may still run. It holds its trial's lock while it runs, so a held lock means
    alive; a free one is checked further, since locks can fail on a badly mounted shared file
    system: on this host its pid must be gone (or belong to a process started after it
    wrote), and its SLURM job must have left the queue."""
    if lock is not None and holder(lock) is not None:
        return None
    said = ["its lock is free"] if lock is not None else []
    pid, host, job = who.get("pid"), who.get("host"), who.get("slurm_job_id")
    if host == socket.gethostname() and isinstance(pid, int):
        started = _process_started(pid)
        since = _epoch(who.get("at") or who.get("since"))
        if started is not None and (since is None or started <= since + 1):
            return None
        said.append(f"pid {pid} is not running on {host}")
    if job:
        running = _slurm_job_running(str(job))
        if running is not False:
            if running or lock is None:
                return None
            said.append(f"SLURM job {job} could not be checked")
        else:
            said.append(f"SLURM job {job} has left the queue")
    if lock is None and len(said) == 0:
        return None
    return ", ".join(said)


def _epoch(text: object) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


# How long a command waits for another one writing the same output before it gives up: long
# enough for the largest import or export (seconds), short enough to name a stuck writer.
OUTPUT_WAIT_S = 300.0


def output_lock_path(target: Path | str) -> Path:
    """The lock of an output folder or file: a hidden file beside it (never inside a folder,
    which holds only the command's own files), at the real path of its parent folder."""
    absolute = os.path.abspath(target)
    real = Path(os.path.realpath(os.path.dirname(absolute))) / os.path.basename(absolute)
    if real.name == "":  # the file system's root: nothing is beside it
        return real / ".afbench.writing.lock"
    return real.parent / f".{real.name}.writing.lock"


def _missing_folders(folder: Path) -> list[Path]:
    """The folders from `folder` up that do not exist yet, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_if_empty(folders: list[Path]) -> None:
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return  # not empty (the command wrote there) or not ours to remove


@contextmanager
def writing(
    targets: Iterable[Path | str], *, on_wait: Callable[[str, dict | None], None] | None
) -> Iterator[None]:
    """Hold the lock of each output folder and file in `targets` for the whole command, so
    that two commands writing one output run one after the other and leave one run's whole
    set of files, never a mix. Waits at most OUTPUT_WAIT_S for each, then refuses; taken in
    one order (sorted paths), so two commands never wait on each other. A folder beside which
    nothing can be created (a read-only parent) is written unlocked, as before."""
    locks = {output_lock_path(target): str(target) for target in targets}
    with ExitStack() as stack:
        for lock in sorted(locks):
            missing = _missing_folders(lock.parent)
            if not os.access(missing[-1].parent if missing else lock.parent, os.W_OK):
                continue
            # folders made only to hold this lock go again, after it is let go, if the command
            # left nothing in them: a refused command leaves no trace
            stack.callback(_remove_if_empty, missing)
            target = locks[lock]

            def busy(who: dict | None, target: str = target) -> AfbenchError:
                return AfbenchError(
                    f"another process is writing this output; waited {OUTPUT_WAIT_S:g} s for "
                    "it: run the command again when it is done",
                    file=target,
                    expected="no other process writing it",
                    found=describe(who),
                )

            stack.enter_context(
                held(
                    lock,
                    on_wait=None if on_wait is None else partial(on_wait, target),
                    poll_s=0.05,
                    wait_s=OUTPUT_WAIT_S,
                    busy=busy,
                    remove=True,
                )
            )
        yield
