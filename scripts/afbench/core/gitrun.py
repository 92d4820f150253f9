"""Running git: the one way afbench does it (fetch's git source, plan's checkout check, discover,
the demo repository).

A checkout is input like any other: its own configuration (.git/config, and whatever it
includes) can do nothing but let git read objects. Every git afbench runs gets
- an environment without any GIT_* variable of the caller's (GIT_DIR, GIT_WORK_TREE,
  GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES, GIT_INDEX_FILE, GIT_CONFIG*,
  GIT_EXEC_PATH, GIT_TRACE*, ... would each point git at other objects, programs or files), and
  git's discovery stopped at the folder given (GIT_CEILING_DIRECTORIES), so the repository is
  that folder's and no other;
- no lazy fetch from a promisor remote (GIT_NO_LAZY_FETCH, and protocol.allow=never for the
  gits that predate it: no transport at all), no credential helper, no prompt, no pager, no
  hooks, no fsmonitor, no automatic maintenance, no replace refs (which could swap the pinned
  commit's objects for others), and no optional locks (a read writes no index);
- its standard error captured and its exit status checked, so that "dubious ownership", a
  folder that is no checkout, a missing commit and a missing object each get a message of their
  own.
The user's own (global and system) git configuration is kept: it is not the checkout's, and it
holds their safe.directory exceptions; every setting above is given on the command line, which
overrides it."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
from pathlib import Path

from afbench.core.errors import AfbenchError

SETTINGS = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "core.pager=cat",
    "core.askPass=",
    "core.sshCommand=false",
    "core.alternateRefsCommand=",
    "credential.helper=",
    "protocol.allow=never",
    "gc.auto=0",
    "maintenance.auto=false",
    "fetch.recurseSubmodules=false",
    "submodule.recurse=false",
    "core.autocrlf=false",
)
ENVIRONMENT = {
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "LC_ALL": "C",
    "LANGUAGE": "",
}


def environment(folder: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment git runs in for `folder` (see the module's docstring)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(ENVIRONMENT)
    parent = os.path.dirname(os.path.abspath(folder))
    env["GIT_CEILING_DIRECTORIES"] = parent
    env.update(extra or {})
    return env


def argv(folder: Path, *args: str) -> list[str]:
    command = ["git", "--no-pager", "--no-replace-objects", "-C", str(folder)]
    for setting in SETTINGS:
        command += ["-c", setting]
    return [*command, *args]


def _clip(text: str, limit: int = 600) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


_PROMISOR = re.compile(r"could not fetch ([0-9a-f]{7,64}) from promisor remote")


def failure(folder: Path, args: tuple[str, ...], stderr: bytes, code: int) -> AfbenchError:
    """What a failed git says, as one true message."""
    text = stderr.decode("utf-8", "replace")
    where = str(folder)
    if "dubious ownership" in text:
        return AfbenchError(
            "git refuses this checkout: it belongs to another user (git's 'dubious ownership' "
            "check); if you trust it, run `git config --global --add safe.directory "
            f"{where}`, or use a checkout of your own",
            file=where,
        )
    if "not a git repository" in text:
        return AfbenchError(
            "not the top of a git checkout (no git repository at this folder)", file=where
        )
    if "cannot change to" in text:
        return AfbenchError("git checkout not found", file=where)
    promised = _PROMISOR.search(text)
    if promised or re.search(r"transport '[^']*' not allowed", text):
        oid = promised.group(1) if promised else None
        return missing_object(folder, oid, partial=True)
    return AfbenchError(
        f"git {args[0] if args else ''} failed (exit status {code}): {_clip(text) or 'no message'}",
        file=where,
    )


def missing_object(
    folder: Path, oid: str | None, *, partial: bool = False, path: str = ""
) -> AfbenchError:
    what = f"object {oid}" if oid else "an object"
    if path:
        what += f" ({path})"
    how = (
        "this is a partial clone, and afbench never fetches what it left on its promisor remote"
        if partial
        else "the repository lacks it (a partial or shallow clone, or a damaged one)"
    )
    return AfbenchError(
        f"the checkout is missing {what}: {how}; fetch it first (e.g. `git -C {folder} fetch "
        "--refetch origin`, or clone without --filter)",
        file=str(folder),
    )


def run(
    folder: Path,
    *args: str,
    data: bytes | None = None,
    env: dict[str, str] | None = None,
    config: tuple[str, ...] = (),
    check: bool = True,
) -> subprocess.CompletedProcess:
    """git ARGS in `folder`, hardened, with `config` settings of the caller's own (-c); its
    output as bytes. With `check` (the default), a failure is an AfbenchError saying what
    went wrong."""
    options = [part for setting in config for part in ("-c", setting)]
    try:
        result = subprocess.run(
            argv(folder, *options, *args),
            input=data,
            stdin=None if data is not None else subprocess.DEVNULL,
            capture_output=True,
            env=environment(folder, env),
            check=False,
        )
    except FileNotFoundError:
        raise AfbenchError("git is not installed; afbench needs it here") from None
    if check and result.returncode != 0:
        raise failure(folder, args, result.stderr, result.returncode)
    return result


def output(folder: Path, *args: str, **kwargs) -> bytes:
    return run(folder, *args, **kwargs).stdout


class Batch:
    """One `git cat-file --batch` for many objects: each read costs no process of its own.
    Its standard error goes to a temporary file (read when git fails), so it can never fill a
    pipe and stall."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
        try:
            self._process = subprocess.Popen(
                argv(folder, "cat-file", "--batch"),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                env=environment(folder),
            )
        except FileNotFoundError:
            self._errors.close()
            raise AfbenchError("git is not installed; afbench needs it here") from None

    def _failed(self) -> AfbenchError:
        code = self._process.wait()
        self._errors.seek(0)
        stderr = self._errors.read(1 << 16)
        return failure(self.folder, ("cat-file",), stderr, code)

    def get(self, spec: str, cap: int | None = None) -> tuple[str | None, bytes | int | None]:
        """(type, bytes) of the object `spec` names; (None, None) if git says it is missing;
        (type, size) without reading it when it is larger than `cap`."""
        process = self._process
        try:
            process.stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._failed() from None
        header = process.stdout.readline()
        if not header:
            raise self._failed()
        fields = header.split()
        if len(fields) == 2 and fields[1] == b"missing":
            return None, None
        if len(fields) != 3 or not fields[2].isdigit():
            raise AfbenchError(
                "git cat-file answered something unexpected",
                file=str(self.folder),
                expected="'<oid> <type> <size>' or '<spec> missing'",
                found=header[:200].decode("utf-8", "replace"),
            )
        kind, size = fields[1].decode(), int(fields[2])
        if cap is not None and size > cap:
            self.close()
            return kind, size
        data = process.stdout.read(size)
        process.stdout.read(1)  # the newline after each object
        if len(data) != size:
            raise self._failed()
        return kind, data

    def close(self) -> None:
        process = self._process
        if process is None:
            return
        self._process = None
        with contextlib.suppress(OSError):
            process.stdin.close()
        process.kill()
        process.wait()
        process.stdout.close()
        self._errors.close()

    @property
    def open(self) -> bool:
        return self._process is not None
