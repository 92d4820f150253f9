"""Filesystem edges: hashing, atomic writes, canonical JSON and CSV, safe path components."""

from __future__ import annotations

import codecs
import contextlib
import csv
import errno
import glob
import hashlib
import io
import itertools
import json
import os
import re
import signal
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from afbench.core.errors import AfbenchError

# a name afbench makes a file or folder of (a Harbor job's, a run's); kinds declares fields of
# this form, so the text lives here, below kinds, and kinds imports it
SAFE_NAME_FORM = "[A-Za-z0-9_][A-Za-z0-9_.-]*"
SAFE_NAME = re.compile(SAFE_NAME_FORM)  # used with fullmatch: "t1\n" is refused
SPREADSHEET_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")  # OWASP CSV injection


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_json(value: object) -> str:
    """The one canonical JSON form afbench hashes: sorted keys, no spaces, UTF-8 text as is."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def canonical_digest(value: object) -> str:
    """SHA-256 of `value`'s canonical JSON: every digest of settings, selections and argv."""
    return sha256_bytes(canonical_json(value).encode())


def sha256_file(path: Path, what: str = "file") -> str:
    """SHA-256 of a regular file (a FIFO, device, folder or symbolic link is refused)."""
    digest = hashlib.sha256()
    with _open_regular(Path(path), what) as (handle, _):
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISREG, "a regular file"),
)


def file_kind(mode: int) -> str:
    """What a file of this st_mode is, in words (a FIFO, a directory, ...)."""
    return next((name for test, name in _KINDS if test(mode)), "of an unknown kind")


@contextlib.contextmanager
def _open_regular(path: Path, what: str):
    """Open `path` for reading only if it is a regular file, without ever blocking: lstat
    first (nothing else is opened), then open with O_NOFOLLOW | O_NONBLOCK and check that the
    same regular file was opened (a swap in between is refused, not followed)."""
    name = str(path)
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        raise AfbenchError(f"{what} not found", file=name) from None
    except OSError as exc:
        raise AfbenchError(f"cannot read {what}: {exc.strerror}", file=name) from None
    if not stat.S_ISREG(before.st_mode):
        raise AfbenchError(
            f"{what} is {file_kind(before.st_mode)}, not a regular file; refusing to read it",
            file=name,
        )
    note_read(before, name)
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        raise AfbenchError(f"cannot read {what}: {exc.strerror}", file=name) from None
    try:
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (
            before.st_dev,
            before.st_ino,
        ):
            raise AfbenchError(f"{what} changed while it was opened; refusing it", file=name)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        try:
            yield handle, after
        except OSError as exc:
            raise AfbenchError(f"cannot read {what}: {exc.strerror}", file=name) from None


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def read_regular_file(path: Path, what: str, max_bytes: int) -> bytes:
    """The bytes of `path`, refused with one message naming it if it is not a regular file
    (FIFO, device, folder, symbolic link: none is opened for reading, so nothing blocks) or if
    it holds more than `max_bytes` bytes (checked before reading, and again while reading, in
    case it grows)."""
    path = Path(path)
    with _open_regular(path, what) as (handle, info):
        if info.st_size > max_bytes:
            raise _too_large(path, what, max_bytes, info.st_size)
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _too_large(path, what, max_bytes, None)
    return data


def read_file_once(path: str, what: str, max_bytes: int, *, missing_ok: bool = False):
    """The bytes of a regular file in one open (O_NOFOLLOW | O_NONBLOCK) and one fstat: the
    reader for many small files (a Harbor job's trials). A symbolic link, FIFO, device, socket
    or folder is refused (a FIFO opened non-blocking never blocks), and so is a file larger
    than `max_bytes`. With `missing_ok`, an absent file is None; any other failure (a folder
    or file that cannot be read) is an error, never "absent"."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise AfbenchError(f"{what} not found", file=path) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise AfbenchError(
                f"{what} is a symbolic link, not a regular file; refusing to read it", file=path
            ) from None
        raise AfbenchError(f"cannot read {what}: {exc.strerror}", file=path) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise AfbenchError(
                f"{what} is {file_kind(info.st_mode)}, not a regular file; refusing to read it",
                file=path,
            )
        if info.st_size > max_bytes:
            raise _too_large(Path(path), what, max_bytes, info.st_size)
        note_read(info, path)
        chunks = []
        left = max_bytes + 1
        while left > 0:
            wanted = min(left, max(info.st_size + 1, 1 << 16))
            chunk = os.read(fd, wanted)
            chunks.append(chunk)
            left -= len(chunk)
            # a regular file reads short only at its end: no second read to hear it say so
            if len(chunk) < wanted:
                break
    except OSError as exc:
        raise AfbenchError(f"cannot read {what}: {exc.strerror}", file=path) from None
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(data) > max_bytes:
        raise _too_large(Path(path), what, max_bytes, None)
    return data


def read_head(path: Path | str, what: str, size: int) -> bytes:
    """The first `size` bytes of a regular file (refused like read_regular_file otherwise)."""
    with _open_regular(Path(path), what) as (handle, _):
        return handle.read(size)


def _too_large(path: Path, what: str, max_bytes: int, size: int | None) -> AfbenchError:
    return AfbenchError(
        f"{what} is larger than the size cap",
        file=str(path),
        expected=f"at most {max_bytes} bytes",
        found=f"{size} bytes" if size is not None else f"more than {max_bytes} bytes",
    )


def path_text(path: Path | str) -> str:
    """A path as text that can always be written as UTF-8: the same as str(path) for a UTF-8
    name; bytes that are not UTF-8 (which Python keeps as lone surrogates) shown as \\xff."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def check_name(
    value: object,
    what: str,
    *,
    file: str | None = None,
    row: int | None = None,
    max_length: int = 200,
) -> str:
    """A value that will become a path component or an argv element: refuse anything else."""
    if (
        not isinstance(value, str)
        or not SAFE_NAME.fullmatch(value)
        or ".." in value
        or len(value) > max_length
    ):
        raise AfbenchError(
            "not a safe name",
            file=file,
            row=row,
            field=what,
            expected="letters, digits, '_', '-', '.'; no '..', '/', or leading '.' or '-'",
            found=value if isinstance(value, str) else repr(value),
        )
    return value


# --- a command's files: what it reads and what it writes, kept apart ---------------------------
class CommandFiles:
    """The files of one running command. Declared up front (its input and output paths, and
    the input folders whose whole content it reads), then kept as it runs: every file read
    through this module is noted, and every output is checked against them before it replaces
    anything. An output is never the same file as an input (same device and inode, through
    links too), never lies inside an input folder, is never named twice, and never replaces
    anything but a regular file."""

    def __init__(self) -> None:
        self.read: dict[tuple[int, int], str] = {}  # every file read: (st_dev, st_ino) -> path
        self.protected: dict[tuple[int, int], str] = {}  # outputs that exist: not to be read
        self.trees: list[tuple[str, str]] = []  # input folders: (real path, as given)
        self.written: list[str] = []  # outputs renamed into place so far
        # told of each unit of outputs written (or kept): what it is and where (see say())
        self.listener: Callable[[object, list[str]], None] | None = None

    def declare(
        self, inputs: Iterable, outputs: Iterable, trees: Iterable = (), folders: Iterable = ()
    ) -> None:
        for tree in trees:
            if os.path.isdir(tree):  # one that is not there is its reader's to refuse
                self.trees.append((os.path.realpath(tree), str(tree)))
        for folder in folders:
            shown = str(folder)
            info = _lstat(shown)
            if info is not None and not stat.S_ISDIR(info.st_mode):
                raise AfbenchError(
                    f"output folder is {file_kind(info.st_mode)}, not a folder; refusing it",
                    file=shown,
                    expected="a folder, or nothing there yet",
                    found=file_kind(info.st_mode),
                )
            self._check_inside(shown, os.path.realpath(shown))
        seen = _distinct_outputs(outputs)
        for shown in seen.values():
            info = _lstat(shown)
            if info is not None and stat.S_ISREG(info.st_mode):
                self.protected[(info.st_dev, info.st_ino)] = shown
        for given in inputs:
            try:
                info = os.stat(given)
            except (OSError, ValueError):
                continue  # its reader says what is wrong with it
            output = self.protected.get((info.st_dev, info.st_ino))
            if output is not None:
                raise _same_file(output, str(given))
        for real, shown in seen.items():
            self._check_output(shown, real)

    def _check_output(self, shown: str, real: str) -> None:
        info = _lstat(shown)
        if info is not None:
            source = self.read.get((info.st_dev, info.st_ino))
            if source is not None:
                raise _same_file(shown, source)
        _replaceable(shown)
        self._check_inside(shown, real)

    def _check_inside(self, shown: str, real: str) -> None:
        for tree, given in self.trees:
            if real == tree or real.startswith(tree.rstrip(os.sep) + os.sep):
                raise AfbenchError(
                    f"output is inside the input folder {given}; refusing to write there "
                    "(write outside the folders a command reads)",
                    file=shown,
                )


_FILES: CommandFiles | None = None


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    except OSError as exc:
        raise AfbenchError(f"cannot check this output: {exc.strerror}", file=path) from None


def _real(path: Path | str) -> str:
    """An output's real path: its folder's links resolved, its own name kept."""
    absolute = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(absolute)), os.path.basename(absolute))


def _same_file(output: str, source: str) -> AfbenchError:
    return AfbenchError(
        f"output is the same file as the input {source}; refusing to read or replace it "
        "(nothing was replaced)",
        file=output,
    )


@contextlib.contextmanager
def command_files(
    inputs: Iterable = (),
    outputs: Iterable = (),
    trees: Iterable = (),
    folders: Iterable = (),
    listener: Callable[[object, list[str]], None] | None = None,
):
    """Run one command with its files declared (see CommandFiles): input files and folders,
    output files, input folders nothing may be written into, output folders; checked before
    anything is read. Nested uses each keep their own, and share the listener (told what is
    written: see say()) of the nearest that has one."""
    global _FILES
    files = CommandFiles()
    files.declare(inputs, outputs, trees, folders)
    previous, _FILES = _FILES, files
    files.listener = listener or (previous.listener if previous is not None else None)
    try:
        yield files
    finally:
        _FILES = previous
        if previous is not None:
            previous.written.extend(files.written)


_PROBING = False


@contextlib.contextmanager
def probing():
    """Reads that only look at what a file is (is this folder a results tree?) and take
    nothing from it: not the command's inputs, so a file looked at may still be one of its
    outputs (an export rewritten in place)."""
    global _PROBING
    previous, _PROBING = _PROBING, True
    try:
        yield
    finally:
        _PROBING = previous


def note_read(info: os.stat_result, path: str) -> None:
    """A file this command is about to read: refused if it is one of the command's outputs."""
    files = _FILES
    if files is None or _PROBING:
        return
    key = (info.st_dev, info.st_ino)
    output = files.protected.get(key)
    if output is not None:
        raise _same_file(output, path)
    files.read[key] = path


def written_outputs() -> list[str]:
    """The outputs the running command has renamed into place so far."""
    return list(_FILES.written) if _FILES is not None else []


def say(about: object, paths: Sequence[Path | str]) -> None:
    """Tell the running command's listener (the command line's summary lines, cli.say) that
    `paths` were written as one unit, or kept as they were: `about` says what they are (an
    artifact record, described by its kind, or a line's text). Outside a command: nothing."""
    files = _FILES
    if files is not None and files.listener is not None:
        files.listener(about, [str(p) for p in paths])


# Temporary files are named .<name>.<pid>.<host>.<random>.part. A write removes only the
# ones a dead writer on this host left behind, never another live writer's.
_HOST = hashlib.sha256(os.uname().nodename.encode(errors="replace")).hexdigest()[:8]


def _writer_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # e.g. EPERM: it exists, owned by someone else
    return True


def _remove_stale_parts(path: Path) -> None:
    prefix = f".{path.name}."
    for stale in path.parent.glob(glob.escape(prefix) + "*.part"):
        fields = stale.name[len(prefix) : -len(".part")].split(".")
        if len(fields) != 3 or fields[1] != _HOST or not re.fullmatch("[0-9]{1,9}", fields[0]):
            continue  # another host's, or not ours: leave it
        pid = int(fields[0])
        if pid > 0 and not _writer_alive(pid):
            with contextlib.suppress(OSError):
                stale.unlink()  # left by a write that was killed


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    return exc.strerror or type(exc).__name__


def _write_failed(path: Path, exc: OSError) -> AfbenchError:
    return AfbenchError(
        f"cannot write this file: {_reason(exc)}; nothing was replaced", file=str(path)
    )


def _check_output_at(shown: str, real: str) -> None:
    """Refuse an output that would replace something other than a regular file (a symbolic
    link, FIFO, device, socket or folder), a read-only file or, within a command, one of its
    inputs or a file inside one of its input folders."""
    if _FILES is not None:
        _FILES._check_output(shown, real)
    else:
        _replaceable(shown)


def _distinct_outputs(paths: Iterable[Path | str]) -> dict[str, str]:
    """Each output's real path -> the path as given; two outputs that are one file are
    refused."""
    seen: dict[str, str] = {}
    for path in paths:
        shown = str(path)
        real = _real(shown)
        if real in seen:
            raise AfbenchError(
                f"two outputs are one file: {seen[real]} and {shown}; give each its own path",
                file=shown,
            )
        seen[real] = shown
    return seen


def _replaceable(path: str) -> os.stat_result | None:
    """What is at an output's path now (None: nothing), if it may be replaced: a regular file
    that is not read-only (afbench leaves verified release files read-only; a user may too)."""
    info = _lstat(path)
    if info is None:
        return None
    if not stat.S_ISREG(info.st_mode):
        raise AfbenchError(
            f"output is {file_kind(info.st_mode)}, not a regular file; refusing to replace it",
            file=path,
        )
    if not info.st_mode & 0o222:
        raise AfbenchError(
            "output is a read-only file (as afbench leaves each verified release file); "
            "refusing to replace it (remove it first if it is to be replaced)",
            file=path,
        )
    return info


def _stage(path: Path, data: bytes | Iterable[bytes], *, read_only: bool) -> Path:
    """`data` (bytes, or an iterable of byte chunks) written and flushed to a temporary name
    beside `path`; its name is returned. Created with the umask honoured: 0o666 & ~umask, or
    0o444 & ~umask when `read_only`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _write_failed(path, exc) from None
    _remove_stale_parts(path)
    tmp_name = path.parent / f".{path.name}.{os.getpid()}.{_HOST}.{os.urandom(4).hex()}.part"
    try:
        fd = os.open(
            tmp_name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
            0o444 if read_only else 0o666,
        )
    except OSError as exc:
        raise _write_failed(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in (data,) if isinstance(data, bytes) else data:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp_name.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _write_failed(path, exc) from None
        raise
    return tmp_name


# Signals that end a command: held back while its outputs are renamed into place, so an
# interruption lands before the first rename or after the last, never between two. They are
# deferred, not masked: a process-wide signal reaches whichever thread does not mask it (numpy's
# and pandas' worker threads do not), but a Python handler always runs in the main thread.
HELD_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@contextlib.contextmanager
def _signals_held():
    held: list[int] = []
    previous = {}
    try:
        for signum in HELD_SIGNALS:
            handler = signal.getsignal(signum)
            if handler in (signal.SIG_IGN, None):
                continue  # ignored, or not Python's to defer
            previous[signum] = signal.signal(signum, lambda number, frame: held.append(number))
    except ValueError:  # not the main thread: the main thread handles the signals
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        previous = {}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if held:
            signal.raise_signal(held[0])  # delivered now, to the command's own handler


def write_outputs(
    outputs: Sequence[tuple[Path, bytes | Iterable[bytes]]],
    *,
    about: object,
    read_only: bool = False,
) -> None:
    """A command's outputs, one unit, and what they are (`about`: the artifact record they
    hold, or the text of the line that names them; see say()). Every output is checked (see
    _check_output_at), then each is written to its temporary name, and only then are they renamed
    into place, with SIGINT, SIGTERM and SIGHUP held back until the last rename: an
    interruption or a failed write leaves either every earlier file or every new one, never
    some of each. (A SIGKILL or a power cut between two renames can not be held back:
    Snakemake reruns such a job, and a command run by hand is run again.)"""
    items = [(Path(path), data) for path, data in outputs]
    for real, shown in _distinct_outputs(path for path, _ in items).items():
        _check_output_at(shown, real)
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in items:
            staged.append((_stage(path, data, read_only=read_only), path))
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        raise
    done: list[Path] = []
    with _signals_held():
        for tmp, path in staged:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                for left, _ in staged[len(done) :]:
                    with contextlib.suppress(OSError):
                        left.unlink(missing_ok=True)
                rest = [p for _, p in staged[len(done) + 1 :]]
                raise _rename_failed(path, exc, done, rest) from None
            done.append(path)
            if _FILES is not None:
                _FILES.written.append(str(path))
    say(about, done)


def _rename_failed(path: Path, exc: OSError, done: list[Path], rest: list[Path]) -> AfbenchError:
    if not done:
        return _write_failed(path, exc)
    replaced = ", ".join(str(p) for p in done)
    kept = ", ".join(str(p) for p in [path, *rest])
    return AfbenchError(
        f"cannot write this file: {_reason(exc)}; {replaced} already replaced, {kept} not: "
        "these outputs are now of two runs; run the command again",
        file=str(path),
    )


def atomic_write_bytes(
    path: Path, data: bytes | Iterable[bytes], *, about: object, read_only: bool = False
) -> None:
    """Write to a temporary name in the same folder, flush, then rename into place. `data` may
    be an iterable of chunks, for a file too large to hold in memory at once.

    A reader (or a crash) never sees a partial file at `path`; a failed write (a full disk, a
    missing permission) is one AfbenchError naming `path` and leaves no temporary file.
    """
    write_outputs([(Path(path), data)], about=about, read_only=read_only)


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(", ", ": "))
try:  # the C encoder, made once: json.dumps makes a new one per call (a third of its time)
    from json.encoder import c_make_encoder, encode_basestring

    _C_ENCODE = c_make_encoder(
        None, _ENCODER.default, encode_basestring, None, ": ", ", ", False, False, False
    )
except (ImportError, TypeError):  # pragma: no cover - an interpreter without the C module
    _C_ENCODE = None


def _compact(obj: object) -> str:
    """json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))."""
    if _C_ENCODE is None:  # pragma: no cover
        return _ENCODER.encode(obj)
    return "".join(_C_ENCODE(obj, 0))


def _layout(obj: object, depth: int) -> str:
    pad = "  " * (depth + 1)
    if depth < 2 and isinstance(obj, dict) and obj:
        items = [f"{pad}{_compact(key)}: {_layout(value, depth + 1)}" for key, value in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * depth + "}"
    if depth < 2 and isinstance(obj, list) and obj and all(isinstance(v, dict | list) for v in obj):
        if _C_ENCODE is None:  # pragma: no cover
            lines = map(_compact, obj)
        else:  # the C encoder called from C for each element (34,100 task records)
            lines = map("".join, map(_C_ENCODE, obj, itertools.repeat(0)))
        return "[\n" + pad + (",\n" + pad).join(lines) + "\n" + "  " * depth + "]"
    return _compact(obj)


def json_bytes(obj: object) -> bytes:
    """Deterministic JSON, no NaN, UTF-8: the first levels indented, one list element (e.g. one
    task record) per line, deeper values compact. Much faster than indent= on large records,
    which makes the json module fall back to its pure-Python encoder."""
    return (_layout(obj, 0) + "\n").encode()


def json_around(obj: dict, key: str) -> tuple[bytes, bytes]:
    """json_bytes(obj) in two parts, for a long list of dicts at its last key `key` (depth 1)
    written one element at a time: the bytes before the first element and after the last.
    Between them, each element's json_element(), joined by JSON_ELEMENT_SEPARATOR."""
    if list(obj)[-1] != key:
        raise ValueError(f"{key!r} is not the last key")
    text = json_bytes({**obj, key: [{}]})
    placeholder = b"{}\n  ]\n}\n"
    if not text.endswith(b"    " + placeholder):  # pragma: no cover - a change of _layout
        raise ValueError("json_bytes no longer lays a list of dicts out one per line")
    return text[: -len(placeholder)], placeholder[2:]


JSON_ELEMENT_SEPARATOR = b",\n    "


def json_element(obj: dict, path: Path) -> bytes:
    """One element of the list json_around() leaves out, as json_bytes lays it out there."""
    try:
        return _compact(obj).encode()
    except UnicodeEncodeError as exc:
        raise _encode_error(Path(path), exc) from None


def _encode_error(path: Path, exc: UnicodeEncodeError) -> AfbenchError:
    bad = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else ""
    return AfbenchError(
        "refusing to write text that is not valid Unicode (a lone surrogate, e.g. from a file "
        "name that is not UTF-8); nothing was written",
        file=str(path),
        expected="valid Unicode text",
        found=bad,
    )


def write_json(path: Path, obj: object, about: object = None) -> None:
    """`obj` as JSON at `path`; `about`: what it is (default: `obj` itself, an artifact
    record that says so by its kind)."""
    atomic_write_bytes(*json_output(path, obj), about=obj if about is None else about)


def json_output(path: Path, obj: object) -> tuple[Path, bytes]:
    """An output file's path and its JSON bytes, for write_outputs."""
    try:
        return Path(path), json_bytes(obj)
    except UnicodeEncodeError as exc:
        raise _encode_error(Path(path), exc) from None


def csv_output(
    path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]
) -> tuple[Path, bytes]:
    try:
        return Path(path), csv_bytes(header, rows)
    except UnicodeEncodeError as exc:
        raise _encode_error(Path(path), exc) from None


def csv_stream(
    path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]
) -> tuple[Path, Iterator[bytes]]:
    """csv_output's file written as write_outputs stages it, a piece at a time (csv_chunks):
    a large table (100,000 attempts: 28 MB) is never held whole, as rows, text or bytes. `rows`
    is read then. Text that is not valid Unicode is refused as csv_output refuses it, and
    nothing is written (write_outputs removes what it staged)."""
    path = Path(path)

    def pieces() -> Iterator[bytes]:
        try:
            yield from csv_chunks(header, rows)
        except UnicodeEncodeError as exc:
            raise _encode_error(path, exc) from None

    return path, pieces()


CSV_CHUNK_ROWS = 4096


def csv_chunks(
    header: Sequence[str], rows: Iterable[Sequence[object]], rows_per_chunk: int = CSV_CHUNK_ROWS
) -> Iterator[bytes]:
    """csv_bytes(header, rows) in pieces of `rows_per_chunk` rows (the header with the first):
    the same bytes once joined. Each row's line is the same whichever rows share its piece: a
    row that needs no guard is written alike by both of csv_bytes' ways."""
    rows = iter(rows)
    head = len(csv_bytes(header, []))
    yield csv_bytes(header, list(itertools.islice(rows, rows_per_chunk)))
    while batch := list(itertools.islice(rows, rows_per_chunk)):
        yield csv_bytes(header, batch)[head:]


# CSV cells: a text cell that a spreadsheet would run as a formula (OWASP: it starts with = + -
# @, a tab or a carriage return), that starts with the guard itself, or that holds a character
# that could end a line somewhere (every C0 and C1 control character, DEL, U+2028, U+2029: a
# lone CR splits a row in many readers, and Python's str.splitlines splits at \x0b, \x1c and
# \x85 too) is written guarded: a leading "'", then the text with each such character and each
# backslash written as an escape (\n, \r, \t, \\, \xHH, \uHHHH). Every other cell is written
# as it is. csv_text_value undoes it exactly, so afbench's own readers read back what was
# written, and no row of an afbench CSV ever spans two lines.
SPREADSHEET_GUARD = "'"
_NEEDS_GUARD = re.compile(
    f"^[{re.escape(''.join(SPREADSHEET_TRIGGERS) + SPREADSHEET_GUARD)}]"
    "|[\x00-\x1f\x7f-\x9f\u2028\u2029]"
)
_ESCAPED = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_UNESCAPE = re.compile(r"\\(\\|n|r|t|x[0-9a-f]{2}|u[0-9a-f]{4})")
_LONG = {"\\": "\\", "n": "\n", "r": "\r", "t": "\t"}


def _escape(match: re.Match) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def csv_text(value: str) -> str:
    """A text cell as afbench writes it into CSV (see above): most text unchanged."""
    if _NEEDS_GUARD.search(value) is None:
        return value
    return SPREADSHEET_GUARD + _ESCAPED.sub(_escape, value)


def _unescape(match: re.Match) -> str:
    code = match.group(1)
    if code in _LONG:
        return _LONG[code]
    return chr(int(code[1:], 16))


def csv_text_value(cell: str) -> str:
    """What csv_text was given: the exact inverse for every cell afbench writes."""
    if not cell.startswith(SPREADSHEET_GUARD):
        return cell
    return _UNESCAPE.sub(_unescape, cell[1:])


def spreadsheet_safe(value: object) -> object:
    """A CSV cell: text as csv_text writes it; anything else as it is."""
    if isinstance(value, str):
        return csv_text(value)
    return value


# Where a written table may hold a cell that needed the guard: a trigger at a cell's start
# (after a line end or a comma, inside quotes or not), or a character that ends a line. They
# also find harmless text (a negative number, a comma inside a quoted cell): then the rows are
# written again cell by cell, so they may over-find, never miss. Two searches, not one
# alternation: a third of the time on a large table.
_AFTER_CELL_START = re.compile(
    f'[,\\n]"?[{re.escape("".join(SPREADSHEET_TRIGGERS) + SPREADSHEET_GUARD)}]'
)
_LINE_BREAKING = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def csv_bytes(header: Sequence[str], rows: Iterable[Sequence[object]]) -> bytes:
    """UTF-8 CSV, "\\n" line ends; empty for None; every text cell through csv_text."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([csv_text(h) for h in header])
    start = buffer.tell()
    rows = rows if isinstance(rows, list) else list(rows)
    # most tables need no guard at all: written whole by the C writer (None is written empty),
    # then checked whole; a cell with a line break inside makes one more line than rows
    writer.writerows(rows)
    text = buffer.getvalue()
    if (
        _AFTER_CELL_START.search(text, start - 1) is None  # from the header's line end
        and _LINE_BREAKING.search(text, start) is None
        and text.count("\n", start) == len(rows)
    ):
        return text.encode()
    buffer.seek(start)
    buffer.truncate()
    guard = _NEEDS_GUARD.search
    for row in rows:
        writer.writerow(
            [
                ""
                if v is None
                else (csv_text(v) if isinstance(v, str) and guard(v) is not None else v)
                for v in row
            ]
        )
    return buffer.getvalue().encode()


MAX_JSON_BYTES = 1 << 30


def read_json_file(path: Path, what: str, max_bytes: int = MAX_JSON_BYTES) -> object:
    """Read JSON strictly: a regular file of at most `max_bytes`, no NaN/Infinity, no
    duplicate keys, UTF-8 only, no lone surrogates."""
    path = Path(path)
    return parse_json_bytes(read_regular_file(path, what, max_bytes), str(path), what)


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    seen = dict(pairs)
    if len(seen) != len(pairs):
        counted: set[str] = set()
        for key, _ in pairs:
            if key in counted:
                raise ValueError(f"duplicate key {key!r}")
            counted.add(key)
    return seen


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text} overflows")
    return value


# An integer beyond the largest float (1.8e308, 309 digits) is refused, so that no reader ever
# meets a number it can not convert (math.isfinite(10**400) raises OverflowError). A small
# document is parsed with every integer checked; a large one (an import of 34,100 records) only
# when it holds a run of 309 digits, found by mapping every digit to 0 and searching for 309
# zeros (a literal search: about a millisecond a megabyte).
_FLOAT_MAX = sys.float_info.max
_LONG_INTEGER = b"0" * 309
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_SMALL_JSON = 1 << 16


def _may_hold_long_integer(data: bytes) -> bool:
    return len(data) < _SMALL_JSON or _LONG_INTEGER in data.translate(_DIGITS_AS_ZERO)


def _float_range_int(text: str) -> int:
    value = int(text)
    if abs(value) > _FLOAT_MAX:
        shown = text if len(text) <= 24 else f"{text[:12]}...{text[-6:]} ({len(text)} digits)"
        raise ValueError(f"integer {shown} is beyond the range of a float")
    return value


_DECODER = json.JSONDecoder(
    object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite_float
)
_CHECKED_DECODER = json.JSONDecoder(
    object_pairs_hook=_no_duplicates,
    parse_constant=_no_constant,
    parse_float=_finite_float,
    parse_int=_float_range_int,
)


_BOM = codecs.BOM_UTF8
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(doc: object) -> str | None:
    """Where in `doc` a string (or key) holds a lone surrogate: JSON's \\ud800 escapes pass
    the parser but are not text, and could never be written back as UTF-8."""
    stack: list[tuple[object, str]] = [(doc, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            if _LONE_SURROGATE.search(node):
                return where or "(top level)"
        elif isinstance(node, dict):
            for key, value in node.items():
                if _LONE_SURROGATE.search(key):
                    return f"{where}/{key!r}" if where else repr(key)
                stack.append((value, f"{where}/{key}" if where else key))
        elif isinstance(node, list):
            stack.extend((value, f"{where}/{i}") for i, value in enumerate(node))
    return None


def parse_json_bytes(data: bytes, file: str, what: str) -> object:
    """Strict JSON: UTF-8 (a BOM allowed), no duplicate key, no NaN or Infinity, every number
    within the range of a float, no lone surrogate; anything else one AfbenchError."""
    try:
        # utf-8-sig's own decode, without its Python-level codec wrapper: one BOM dropped, and
        # a bad byte's position counted after it
        text = (data[3:] if data[:3] == _BOM else data).decode()
        decoder = _CHECKED_DECODER if _may_hold_long_integer(data) else _DECODER
        doc = decoder.decode(text)
    except UnicodeDecodeError as exc:
        raise AfbenchError(f"{what} is not UTF-8 (byte {exc.start})", file=file) from None
    except RecursionError:
        raise AfbenchError(f"{what} is nested too deeply", file=file) from None
    except ValueError as exc:
        raise AfbenchError(f"{what} is not valid JSON: {exc}", file=file) from None
    # after a strict decode only an escape can make one, and an escape starts with a
    # backslash: one character looked for first (most JSON holds none), a fifth of the search
    if "\\" in text and _SURROGATE_ESCAPE.search(text):
        where = _lone_surrogate(doc)
        if where is not None:
            raise AfbenchError(
                f"{what} holds a lone surrogate (a \\u escape that is not text)",
                file=file,
                field=where,
            )
    return doc
