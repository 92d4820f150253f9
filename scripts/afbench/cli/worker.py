"""Local jobs without a fresh interpreter: a worker that has imported afbench once forks one
child per job, and the child runs the job's `afbench job <verb>` argv through `main`, its
standard error to the job's log, and exits with main's status. A job keeps a process of its
own (its own signals, working folder, standard error and module state, as a shell job has)
and pays for no interpreter start-up and no imports: a fork of a process that has them.

Snakemake's side (workflow/rules/common.smk) calls `run(argv, log)` from the thread its local
executor runs the job in; the first call starts the worker, which serves every later job of
the run. The worker is a child of Snakemake in its process group, so Ctrl-C reaches each job as
it reaches a shell job (the worker itself ignores SIGINT), and it ends when Snakemake does (its
standard input is a pipe from Snakemake: end of file, it exits). Jobs are children of the
worker, never of Snakemake's threads: forking a process that runs threads is not safe.

    request (one JSON line):  {"argv": [...], "log": "...", "cwd": "...", "env": {...}}
    reply (one JSON line):    {"status": N}  (N < 0: killed by signal -N)
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading

# the variables Snakemake's shell() sets to the job's threads for each command it runs
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def preload() -> None:
    """Every afbench module, imported once in the worker (with the libraries they import at the
    top: pandas, numpy, pyarrow), and each job's parser built: what a job's start-up pays for.
    A module that cannot be imported here is left to the job that needs it."""
    import importlib
    import pkgutil

    import afbench

    from . import build_parser
    from .jobs import JOBS

    for module in pkgutil.walk_packages(afbench.__path__, "afbench."):
        if module.name.endswith("__main__"):
            continue
        with contextlib.suppress(Exception):  # an optional library missing: the job imports it
            importlib.import_module(module.name)
    for verb in JOBS:
        build_parser(["job", verb])
    # what is loaded stays untouched by the collector, so a child copies none of its pages
    # for a collection (only those its own work writes)
    import gc

    gc.collect()
    gc.freeze()


def _job(request: dict) -> int:
    """In the forked child: the job, as `afbench job ... 2> log` runs it."""
    import signal

    from . import main

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
        signal.signal(number, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)
    os.chdir(request["cwd"])
    os.environ.update(request["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    os.dup2(log, 2)
    os.close(log)
    argv = request["argv"]
    try:
        return main(argv[1:])
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 1
    except BaseException:  # what a fresh interpreter would print, then status 1
        import traceback

        traceback.print_exc()
        return 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()


def serve(listener: socket.socket) -> None:
    """The worker's loop: a job per connection on `listener`, each in a child of its own, its
    status sent back when it exits; ends at the end of standard input."""
    import selectors
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the jobs, which get it too
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "job")
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "parent")
    selector.register(wake_r, selectors.EVENT_READ, "child")
    running: dict[int, socket.socket] = {}
    while True:
        for key, _ in selector.select():
            if key.data == "parent":
                if not os.read(sys.stdin.fileno(), 4096):
                    return
            elif key.data == "job":
                conn, _ = listener.accept()
                request = json.loads(conn.makefile("rb").readline())
                pid = os.fork()
                if pid == 0:
                    status = 1
                    try:
                        selector.close()
                        listener.close()
                        for other in running.values():
                            other.close()
                        conn.close()
                        status = _job(request)
                    finally:
                        os._exit(status & 0xFF if status >= 0 else 1)
                running[pid] = conn
            else:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
                _reap(running)


def _reap(running: dict[int, socket.socket]) -> None:
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is None:
            continue
        reply = {"status": os.waitstatus_to_exitcode(status)}
        with contextlib.suppress(OSError):  # the job's thread is gone (Snakemake stopped)
            conn.sendall(json.dumps(reply).encode() + b"\n")
        conn.close()


# --- Snakemake's side ------------------------------------------------------------------------
_STARTED: dict = {}
_LOCK = threading.Lock()


def _worker() -> str:
    """The worker's socket, the worker started on the first call."""
    with _LOCK:
        if "path" not in _STARTED:
            import atexit
            import shutil
            import subprocess
            import tempfile

            folder = tempfile.mkdtemp(prefix="afbench-worker-")
            path = os.path.join(folder, "socket")
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(path)
            listener.listen(64)
            env = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, "1")}
            # the package this process imported, whatever sys.path the worker would start with
            scripts = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
            start = (
                f"import sys; sys.path.insert(0, {scripts!r}); "
                "from afbench.cli.worker import start; start()"
            )
            process = subprocess.Popen(
                [sys.executable, "-c", start, str(listener.fileno())],
                stdin=subprocess.PIPE,
                pass_fds=(listener.fileno(),),
                env=env,
            )
            listener.close()

            def stop():
                process.stdin.close()
                process.wait()
                shutil.rmtree(folder, ignore_errors=True)

            atexit.register(stop)
            _STARTED.update(path=path, process=process)
        return _STARTED["path"]


def run(argv: list[str], log: str, threads: int = 1) -> int:
    """The job `argv` (`afbench job <verb> ...`) in a child of the worker, its standard error
    to `log`: its exit status (negative: killed by that signal)."""
    request = {
        "argv": argv,
        "log": log,
        "cwd": os.getcwd(),
        "env": dict.fromkeys(THREAD_VARIABLES, str(threads)),
    }
    path = _worker()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            conn.sendall(json.dumps(request).encode() + b"\n")
            reply = conn.makefile("rb").readline()
    except OSError as error:
        reply, reason = b"", error
    else:
        reason = None
    if not reply:
        ended = _STARTED["process"].poll()
        raise RuntimeError(
            f"afbench: the job worker ended before {' '.join(argv[:3])} did"
            + (f" (its exit status {ended})" if ended is not None else "")
            + (f": {reason}" if reason else "")
        )
    return json.loads(reply)["status"]


def start() -> None:
    """The worker process: its listening socket is the descriptor named by argv[1]."""
    served = socket.socket(fileno=int(sys.argv[1]))
    preload()
    serve(served)
