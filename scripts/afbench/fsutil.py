"""Filesystem edges: hashing, atomic writes, canonical JSON and CSV, safe path components."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from .errors import AfbenchError

SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
SPREADSHEET_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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


def atomic_write_bytes(path: Path, data: bytes, *, read_only: bool = False) -> None:
    """Write to a temporary name in the same folder, flush, then rename into place.

    A reader (or a crash) never sees a partial file at `path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink():
        raise AfbenchError("refusing to replace a symbolic link", file=str(path))
    for stale in path.parent.glob(f".{path.name}.*.part"):
        stale.unlink(missing_ok=True)  # left by a write that was killed
    tmp_name = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.part"
    fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o444 if read_only else 0o644)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
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
        return "[\n" + ",\n".join(pad + _compact(v) for v in obj) + "\n" + "  " * depth + "]"
    return _compact(obj)


def json_bytes(obj: object) -> bytes:
    """Deterministic JSON, no NaN, UTF-8: the first levels indented, one list element (e.g. one
    task record) per line, deeper values compact. Much faster than indent= on large records,
    which makes the json module fall back to its pure-Python encoder."""
    return (_layout(obj, 0) + "\n").encode()


def write_json(path: Path, obj: object) -> None:
    atomic_write_bytes(path, json_bytes(obj))


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
    atomic_write_bytes(path, csv_bytes(header, rows))


def read_json_file(path: Path, what: str) -> object:
    """Read JSON strictly: no NaN/Infinity, no duplicate keys, UTF-8 only."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise AfbenchError(f"{what} not found", file=str(path)) from None
    except OSError as exc:
        raise AfbenchError(f"cannot read {what}: {exc.strerror}", file=str(path)) from None
    return parse_json_bytes(data, str(path), what)


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


def parse_json_bytes(data: bytes, file: str, what: str) -> object:
    try:
        text = data.decode("utf-8-sig")
        return json.loads(
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
