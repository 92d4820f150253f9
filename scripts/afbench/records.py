"""Artifacts as typed records: every JSON artifact carries `kind` and `schema_version`, and is
read back only as the kind its reader expects."""

from __future__ import annotations

from pathlib import Path

from . import __version__
from .errors import AfbenchError
from .fsutil import read_json_file

SCHEMA_VERSION = 1

RELEASE_IDENTITY = "afbench release identity"
RECEIPT = "afbench release receipt"
VERIFIED_FILE = "afbench verified file"
CATALOG = "afbench task catalog"
SELECTION = "afbench task selection"
PLAN = "afbench harbor run plan"
MODEL_IMPORT = "afbench official results import"
SUMMARY = "afbench official results summary"
OFFICIAL_REFERENCE = "afbench official reference"
VERDICT = "afbench verdict import"
RUN_SUMMARY = "afbench local run summary"
TRIAL_RECEIPT = "afbench trial receipt"
COST_LEDGER = "afbench cost ledger"
TASK_CHECKSUMS = "afbench task checksums"
ANALYSIS = "afbench analysis"
ARTIFACT_MANIFEST = "afbench artifact manifest"
DISCOVERY = "afbench discovery"
POWER_PLAN = "afbench power plan"


def record(kind: str, **body: object) -> dict:
    return {"kind": kind, "schema_version": SCHEMA_VERSION, **body}


def read_record(path: Path | str, kind: str, *also: str) -> dict:
    """An artifact of this kind (or one of `also`) and this schema version, or one clear
    error naming the file."""
    return checked(read_json_file(Path(path), what(kind)), path, kind, *also)


def what(kind: str) -> str:
    """A kind as a file is named in messages ('task catalog is not valid JSON')."""
    return kind.removeprefix("afbench ")


def checked(data: object, path: Path | str, kind: str, *also: str) -> dict:
    """`data` read from `path`, if it is an artifact of this kind and schema version."""
    if not isinstance(data, dict) or data.get("kind") not in (kind, *also):
        found = data.get("kind") if isinstance(data, dict) else type(data).__name__
        raise AfbenchError(
            "not the artifact expected here",
            file=str(path),
            field="kind",
            expected=kind,
            found=found,
        )
    if data.get("schema_version") != SCHEMA_VERSION:
        raise AfbenchError(
            "artifact written by an incompatible afbench; rebuild it",
            file=str(path),
            field="schema_version",
            expected=SCHEMA_VERSION,
            found=data.get("schema_version"),
        )
    return data


def tool_versions() -> dict[str, str]:
    # imported here: importlib.metadata costs a job start-up more than any stage needs
    import platform
    from importlib import metadata

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "python": platform.python_version(),
        "snakemake": version("snakemake"),
        "afbench": __version__,
    }
