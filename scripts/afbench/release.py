"""The release's identity and its verified bytes: what every stage after fetch relies on.

The receipt written by the verify step is the one place later stages learn which file is which
and what its bytes must hash to; every read of a release file is checked against it.
"""

from __future__ import annotations

import os
from pathlib import Path

from . import license_note
from .errors import AfbenchError, Problem
from .fsutil import read_regular_file, sha256_bytes

MAX_RELEASE_FILE_BYTES = 10_000_000_000  # the schema's largest source.max_bytes
IDENTITY_KEYS = (
    "name",
    "repository",
    "revision",
    "synthetic",
    "lean",
    "mathlib",
    "harbor",
    "nominal_budget_usd",
    "images",
)


def identity(release: dict) -> dict:
    """The release block every artifact carries (from config's `release:`), in one key order
    whatever order the config's YAML had."""
    block = {key: release[key] for key in IDENTITY_KEYS}
    block["images"] = [
        {"role": i["role"], "reference": i.get("reference"), "digest": i.get("digest")}
        for i in release["images"]
    ]
    return block


def license_of(release: dict) -> str:
    return license_note(release)


def read_verified(path: Path | str, sha256: str, what: str = "release file") -> bytes:
    """The bytes of a fetched file, re-hashed at read time against the pin it was fetched by."""
    path = Path(path)
    if not os.path.lexists(path):
        raise AfbenchError(f"{what} not fetched yet (run `afbench fetch`)", file=str(path))
    # a symbolic link, FIFO, device or folder is refused without being read
    data = read_regular_file(path, what, MAX_RELEASE_FILE_BYTES)
    actual = sha256_bytes(data)
    if actual != sha256:
        raise AfbenchError(
            f"{what} changed since it was verified; refusing to read it",
            file=str(path),
            expected=f"sha256 {sha256}",
            found=f"sha256 {actual}",
        )
    return data


def collect_verified(records: list[tuple[str, dict]]) -> tuple[dict[str, tuple[dict, str]], dict]:
    """Verified file entries by key, from receipts and verified-file records (with the file
    each came from), and the one release they all belong to."""
    entries: dict[str, tuple[dict, str]] = {}
    release = None
    for origin, rec in records:
        if release is None:
            release = rec["release"]
        elif rec["release"] != release:
            raise AfbenchError(
                "verified files of different releases given together",
                file=origin,
                field="release.revision",
                expected=release["revision"],
                found=rec["release"]["revision"],
            )
        for entry in rec["files"] if "files" in rec else [rec["file"]]:
            entries.setdefault(entry["key"], (entry, origin))
    if release is None:
        raise AfbenchError("no receipt given", field="--receipt")
    return entries, release


def read_entry(
    entries: dict[str, tuple[dict, str]], key: str, path: Path | str
) -> tuple[bytes, dict]:
    """A release file's bytes, checked against its verified entry; and that entry."""
    if key not in entries:
        raise AfbenchError(
            f"no verified file '{key}' among the receipts given",
            field="--receipt",
            expected=f"one of {sorted(entries)}",
        )
    entry, _ = entries[key]
    return read_verified(path, entry["actual_sha256"]), entry


def stale_imports(imports: list[tuple[str, dict]], pins: dict[str, str]) -> list[Problem]:
    """Model imports (each with its file's path) whose results file is not the one pinned now
    (`pins`: release path -> SHA-256): their numbers are older than their pin."""
    return [
        Problem(
            f"import of model '{imp['model']}' is older than its pin: import it again",
            file=path,
            field=f"inputs.{imp['file']}",
            expected=pins.get(imp["file"]),
            found=imp["inputs"].get(imp["file"]),
        )
        for path, imp in imports
        if imp["inputs"].get(imp["file"]) != pins.get(imp["file"])
    ]
