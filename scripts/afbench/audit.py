"""The audit of an artifact directory (results/<revision>): every file the artifact manifest
lists hashed again, every artifact's release block held to the release identity, and every
relation declared in afbench.kinds.relations checked between the artifacts found there. The
directory is read, never written; artifacts are found by their `kind` and paired by what they
name (a plan names its selection, a summary its results files), never by where the workflow
puts them, and every file is named relative to the directory, so a copy audits the same."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from .errors import AfbenchError, Problem
from .fsutil import (
    MAX_JSON_BYTES,
    canonical_json,
    csv_text_value,
    parse_json_bytes,
    read_regular_file,
    sha256_bytes,
)
from .kinds import AUDIT, KINDS, TABLES, head
from .kinds import relations as r
from .kinds.lines import parse

NOTE = (
    "Every relation between the artifacts of one directory, each held or not: re-derived "
    "(the binding part made again from its source and compared) or cross-checked (fields of "
    "the two compared). Files are named relative to the directory."
)
MAX_TABLE_BYTES = 1 << 30


def problems_of(
    relation: r.Relation,
    artifact: dict,
    artifact_file: str,
    source: dict | None = None,
    source_file: str | None = None,
) -> list[Problem]:
    """Every disagreement the relation's check finds, each naming both files and the field."""
    from importlib import import_module

    module, _, function = relation.check.partition(":")
    found = getattr(import_module(module), function)(artifact, source)
    against = f" (against {source_file})" if source_file is not None else ""
    for problem in found:
        problem.file = str(artifact_file)
        problem.message = f"{problem.message}{against}"
    return found


def hold(relations: list[tuple], *, refuse: bool = True) -> list[Problem]:
    """Each (relation, artifact, artifact file, source, source file) checked: one refusal
    naming every problem of them all (or, with refuse=False, the problems)."""
    found = [p for relation, *pair in relations for p in problems_of(relation, *pair)]
    if found and refuse:
        raise AfbenchError(problems=found)
    return found


class Directory:
    """The artifacts of one directory by kind, each read once; what could not be read, why."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise AfbenchError(
                "not an artifact directory (no such folder)",
                file=str(root),
                expected="a results/<revision> folder",
            )
        self.by_kind: dict[str, list[tuple[str, dict]]] = {}
        self.tables: dict[str, dict[str, list[dict]]] = {}
        self.unreadable: list[tuple[str, str]] = []
        self.files: list[str] = []
        for folder, dirs, names in os.walk(self.root, onerror=self._walk_failed):
            dirs[:] = sorted(d for d in dirs if d != "logs" and not d.startswith("."))
            for name in sorted(names):
                path = Path(folder) / name
                rel = path.relative_to(self.root).as_posix()
                if name.startswith(".") or path.is_symlink() or not path.is_file():
                    continue
                self.files.append(rel)
                if name.endswith(".json"):
                    self._read_json(path, rel)
                elif name.endswith(".csv"):
                    self._read_table(path, rel)

    def _walk_failed(self, error: OSError) -> None:
        self.unreadable.append((str(error.filename), error.strerror or str(error)))

    def _read_json(self, path: Path, rel: str) -> None:
        try:
            data = read_regular_file(path, "artifact", MAX_JSON_BYTES)
            doc = parse_json_bytes(data, rel, "artifact")
            name = doc.get("kind") if isinstance(doc, dict) else None
            if not (isinstance(name, str) and name.startswith("afbench ")):
                return  # a JSON file that is not an artifact (a release file, a job's own)
            kind = KINDS.get(name)
            if kind is None:
                raise AfbenchError("not an artifact kind afbench writes", file=rel, found=name)
            head(doc, rel, kind)
            self.by_kind.setdefault(name, []).append((rel, parse(kind, data, rel)))
        except AfbenchError as error:
            self.unreadable.append((rel, str(error)))

    def _read_table(self, path: Path, rel: str) -> None:
        """A CSV table afbench writes (its header is a declared Table's columns)."""
        try:
            text = read_regular_file(path, "table", MAX_TABLE_BYTES).decode("utf-8")
        except (AfbenchError, UnicodeDecodeError) as error:
            self.unreadable.append((rel, str(error)))
            return
        rows = csv.reader(io.StringIO(text, newline=""))
        header = next(rows, [])
        table = next((t for t in TABLES.values() if t.columns == header), None)
        if table is None:
            return  # not a run table (leaderboard.csv is checked through its summary)
        self.tables.setdefault(str(Path(rel).parent), {})[table.name] = [
            dict(zip(header, map(csv_text_value, row), strict=False)) for row in rows
        ]

    def of(self, kind: str) -> list[tuple[str, dict]]:
        return self.by_kind.get(kind, [])

    def one(self, kind: str) -> tuple[str, dict] | None:
        found = self.of(kind)
        return found[0] if len(found) == 1 else None


def _check(
    relation: r.Relation, artifact: tuple[str, dict], source: tuple[str, dict] | None
) -> dict:
    file, data = artifact
    source_file, source_data = source if source is not None else (None, None)
    try:
        problems = problems_of(relation, data, file, source_data, source_file)
    except (KeyError, TypeError, ValueError, AfbenchError) as error:
        # a record that passed its kind but trips the check: shown, never a traceback
        problems = [Problem(f"cannot be checked: {error!r}", file=file)]
    return _line(relation.name, relation.method, file, source_file, [str(p) for p in problems])


def _line(name: str, method: str, artifact: str, source: str | None, problems: list[str]) -> dict:
    return {
        "relation": name,
        "method": method,
        "artifact": artifact,
        "derived_from": source,
        "held": not problems,
        "problems": problems,
    }


def _missing(relation: r.Relation, artifact: str, what: str) -> dict:
    return _line(
        relation.name,
        relation.method,
        artifact,
        None,
        [f"{artifact}: {what}, which it is derived from, is not in the directory"],
    )


def _manifest_checks(found: Directory) -> list[dict]:
    manifest = found.one("afbench artifact manifest")
    if manifest is None:
        return []
    on_disk = {}
    for entry in manifest[1]["artifacts"]:
        path = found.root / entry["path"]
        inside = not Path(entry["path"]).is_absolute() and ".." not in Path(entry["path"]).parts
        if inside and path.is_file() and not path.is_symlink():
            content = read_regular_file(path, "artifact", MAX_TABLE_BYTES)
            on_disk[entry["path"]] = {"sha256": sha256_bytes(content), "size": len(content)}
    return [_check(r.MANIFEST_OF_FILES, manifest, ("(the files' bytes)", on_disk))]


def _release_file_checks(found: Directory) -> list[dict]:
    receipt = found.one("afbench release receipt")
    if receipt is None:
        return []
    file, data = receipt
    folder = Path(file).parent
    on_disk = {}
    for entry in data["files"]:
        path = found.root / folder / entry["path"]
        if path.is_file() and not path.is_symlink():
            content = read_regular_file(path, "release file", MAX_TABLE_BYTES)
            on_disk[entry["path"]] = {"sha256": sha256_bytes(content), "size": len(content)}
    return [_check(r.RECEIPT_OF_FILES, receipt, ("(the release files' bytes)", on_disk))]


def _release_blocks(found: Directory) -> list[dict]:
    identity = found.one("afbench release identity")
    if identity is None:
        return []
    lines = []
    for name, artifacts in sorted(found.by_kind.items()):
        if name == "afbench release identity":
            continue
        for artifact in artifacts:
            if isinstance(artifact[1].get("release"), dict):
                lines.append(_check(r.RELEASE_BLOCK, artifact, identity))
    return lines


def _receipt_of_verified(found: Directory) -> tuple[str, dict] | None:
    """Where the fetch target was not built (a tree of `snakemake diff` alone), the files'
    verification records stand in for the receipt that gathers them."""
    verified = found.of("afbench verified file")
    if not verified or len({canonical_json(v[1]["release"]) for v in verified}) > 1:
        return None
    files = [v[1]["file"] for v in verified]
    return (
        f"{Path(verified[0][0]).parent}/*.json",
        {"release": verified[0][1]["release"], "files": files},
    )


def _pairs(found: Directory) -> list[dict]:
    """Every declared relation between artifacts, paired by what each names."""
    lines: list[dict] = []
    receipt = found.one("afbench release receipt") or _receipt_of_verified(found)
    catalog = found.one("afbench task catalog")
    digests = found.one("afbench task digests")
    diff = found.one("afbench release diff")
    selections = found.of("afbench task selection")
    by_name = {s[1]["name"]: s for s in selections}
    comparable = next((s for s in selections if "comparable" in s[1]), None)

    def pair(relation, artifacts, source, what):
        for artifact in artifacts:
            if source is None:
                lines.append(_missing(relation, artifact[0], what))
            else:
                lines.append(_check(relation, artifact, source))

    gathered = found.one("afbench release receipt")
    for verified in found.of("afbench verified file") if gathered else []:
        pair(r.VERIFIED_OF_RECEIPT, [verified], gathered, "the release receipt")
    for own in found.of("afbench task catalog"):
        lines.append(_check(r.CATALOG_OF_ITSELF, own, None))
    pair(r.CATALOG_OF_RECEIPT, found.of("afbench task catalog"), receipt, "the release receipt")
    pair(r.SELECTION_OF_CATALOG, selections, catalog, "the task catalog")
    for plan in found.of("afbench harbor run plan"):
        named = plan[1]["selection"]["name"]
        pair(r.PLAN_OF_SELECTION, [plan], by_name.get(named), f"the selection '{named}'")
    imports = found.of("afbench official results import")
    pair(r.IMPORT_OF_RECEIPT, imports, receipt, "the release receipt")
    pair(r.IMPORT_OF_CATALOG, imports, catalog, "the task catalog")
    for summary in found.of("afbench official results summary"):
        kept = summary[1]
        for imported in imports:
            same = (imported[1]["source_condition"], imported[1]["budget_usd"]) == (
                kept["source_condition"],
                kept["budget_usd"],
            )
            if same and imported[1]["file"] in kept["inputs"]:
                lines.append(_check(r.SUMMARY_OF_IMPORT, summary, imported))
    for run in found.of("afbench local run summary"):
        named = run[1]["selection"]["name"]
        pair(r.RUN_OF_SELECTION, [run], by_name.get(named), f"the selection '{named}'")
        tables = found.tables.get(str(Path(run[0]).parent))
        if tables is not None:
            lines.append(_check(r.RUN_OF_TABLES, run, (f"{Path(run[0]).parent}/*.csv", tables)))
    for analysis in found.of("afbench analysis"):
        for summary in found.of("afbench official results summary"):
            lines.append(_check(r.ANALYSIS_OF_SUMMARY, analysis, summary))
        if found.one("afbench release receipt"):
            lines.append(_check(r.ANALYSIS_OF_RECEIPT, analysis, receipt))
        shown = {shown["run"] for shown in analysis[1]["local_runs"]}
        for run in found.of("afbench local run summary"):
            if run[1]["run"] in shown:
                lines.append(_check(r.ANALYSIS_OF_RUN, analysis, run))
    for own in found.of("afbench task digests"):
        lines.append(_check(r.DIGESTS_OF_ITSELF, own, None))
    pair(r.DIGESTS_OF_CATALOG, found.of("afbench task digests"), catalog, "the task catalog")
    pair(r.DIFF_OF_DIGESTS, found.of("afbench release diff"), digests, "the task digests")
    if comparable is not None:
        pair(r.COMPARABLE_OF_DIFF, [comparable], diff, "the release diff")
    pair(r.UPGRADE_PLAN_OF_DIFF, found.of("afbench upgrade plan"), diff, "the release diff")
    pair(
        r.COMPARISONS_OF_COMPARABLE,
        found.of("afbench cross-revision comparisons"),
        comparable,
        "the comparable subset",
    )
    return lines


def audit_directory(root: Path) -> dict:
    """The audit record of the artifact directory `root` (read, never written)."""
    found = Directory(root)
    # a file that cannot be read as what it says it is fails as itself
    lines = [_line("readable", "read", file, None, [why]) for file, why in found.unreadable]
    lines += _manifest_checks(found)
    lines += _release_file_checks(found)
    lines += _release_blocks(found)
    lines += _pairs(found)
    identity = found.one("afbench release identity")
    revision = identity[1]["release"]["revision"] if identity is not None else None
    failed = sum(not line["held"] for line in lines)
    return AUDIT.record(
        note=NOTE,
        revision=revision,
        held=not failed and bool(lines),
        counts={"checks": len(lines), "held": len(lines) - failed, "failed": failed},
        checks=lines,
    )
