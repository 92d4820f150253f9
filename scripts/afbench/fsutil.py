"""Filesystem edges: hashing, atomic writes, canonical JSON and CSV, safe path components."""

from __future__ import annotations

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
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from .errors import AfbenchError

SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # used with fullmatch: "t1\n" is refused
SPREADSHEET_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


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
)


def file_kind(mode: int) -> str:
    """What a file of this st_mode is, in words (a FIFO, a directory, ...)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


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
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
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


def _write_failed(path: Path, exc: OSError) -> AfbenchError:
    reason = exc.strerror or type(exc).__name__
    if exc.errno == errno.ENOSPC:
        reason = "no space left on the device"
    return AfbenchError(f"cannot write this file: {reason}; nothing was written", file=str(path))


def _stage(path: Path, data: bytes | Iterable[bytes], *, read_only: bool) -> Path:
    """`data` (bytes, or an iterable of byte chunks) written and flushed to a temporary name
    beside `path`; its name is returned."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _write_failed(path, exc) from None
    if path.is_symlink():
        raise AfbenchError("refusing to replace a symbolic link", file=str(path))
    _remove_stale_parts(path)
    tmp_name = path.parent / f".{path.name}.{os.getpid()}.{_HOST}.{os.urandom(4).hex()}.part"
    try:
        fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise _write_failed(path, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in (data,) if isinstance(data, bytes) else data:
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o444 if read_only else 0o644)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp_name.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _write_failed(path, exc) from None
        raise
    return tmp_name


def atomic_write_bytes(
    path: Path, data: bytes | Iterable[bytes], *, read_only: bool = False
) -> None:
    """Write to a temporary name in the same folder, flush, then rename into place. `data` may
    be an iterable of chunks, for a file too large to hold in memory at once.

    A reader (or a crash) never sees a partial file at `path`; a failed write (a full disk, a
    missing permission) is one AfbenchError naming `path` and leaves no temporary file.
    """
    path = Path(path)
    tmp_name = _stage(path, data, read_only=read_only)
    try:
        os.replace(tmp_name, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp_name.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _write_failed(path, exc) from None
        raise


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
        found=bad,
    )


def write_json(path: Path, obj: object) -> None:
    try:
        data = json_bytes(obj)
    except UnicodeEncodeError as exc:
        raise _encode_error(Path(path), exc) from None
    atomic_write_bytes(path, data)


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


def write_outputs(outputs: Sequence[tuple[Path, bytes]]) -> None:
    """A command's outputs, one unit: every one is written to its temporary name first, and
    only then are they renamed into place, so a failed write leaves the earlier files."""
    staged: list[tuple[Path, Path]] = []
    try:
        for path, data in outputs:
            staged.append((_stage(Path(path), data, read_only=False), Path(path)))
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException as exc:
        for tmp, _ in staged:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _write_failed(path, exc) from None
        raise


def spreadsheet_safe(value: object) -> object:
    """Neutralise a cell a spreadsheet would run as a formula (OWASP CSV injection)."""
    if isinstance(value, str) and value.startswith(SPREADSHEET_TRIGGERS):
        return "'" + value
    return value


def csv_bytes(header: Sequence[str], rows: Iterable[Sequence[object]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if v is None else spreadsheet_safe(v) for v in row])
    return buffer.getvalue().encode()


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    try:
        data = csv_bytes(header, rows)
    except UnicodeEncodeError as exc:
        raise _encode_error(Path(path), exc) from None
    atomic_write_bytes(path, data)


MAX_JSON_BYTES = 1 << 30


def read_json_file(path: Path, what: str, max_bytes: int = MAX_JSON_BYTES) -> object:
    """Read JSON strictly: a regular file of at most `max_bytes`, no NaN/Infinity, no
    duplicate keys, UTF-8 only, no lone surrogates."""
    path = Path(path)
    return parse_json_bytes(read_regular_file(path, what, max_bytes), str(path), what)


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    seen: dict[str, object] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text} overflows")
    return value


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
    try:
        text = data.decode("utf-8-sig")
        doc = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
    except UnicodeDecodeError as exc:
        raise AfbenchError(f"{what} is not UTF-8 (byte {exc.start})", file=file) from None
    except RecursionError:
        raise AfbenchError(f"{what} is nested too deeply", file=file) from None
    except ValueError as exc:
        raise AfbenchError(f"{what} is not valid JSON: {exc}", file=file) from None
    if _SURROGATE_ESCAPE.search(text):  # after a strict decode only an escape can make one
        where = _lone_surrogate(doc)
        if where is not None:
            raise AfbenchError(
                f"{what} holds a lone surrogate (a \\u escape that is not text)",
                file=file,
                field=where,
            )
    return doc
