"""The audit of an artifact directory (results/<revision>): every file the artifact manifest
lists hashed again, every artifact's release block held to the release identity, and every
relation declared in afbench.kinds.relations checked between the artifacts found there. The
directory is read, never written; artifacts are found by their `kind` and paired by what they
name (a plan names its selection, a summary its results files), never by where the workflow
puts them, and every file is named relative to the directory, so a copy audits the same."""

from __future__ import annotations

import csv
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from afbench.core.errors import AfbenchError, Problem
from afbench.core.fsutil import (
    MAX_JSON_BYTES,
    canonical_json,
    csv_text_value,
    parse_json_bytes,
    read_head,
    read_regular_file,
    sha256_bytes,
)
from afbench.kinds import AUDIT, KINDS, TABLES
from afbench.kinds import relations as r
from afbench.kinds.lines import parse

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


# the kinds other artifacts are paired with: kept once read; the rest (a model import of
# 34,100 records, a task table) are read when checked and let go, so memory is one of them
KEPT = frozenset(
    {
        "afbench artifact manifest",
        "afbench release identity",
        "afbench release receipt",
        "afbench task catalog",
        "afbench task selection",
        "afbench task digests",
        "afbench release diff",
        "afbench official results summary",
        "afbench local run summary",
        "afbench trial receipt",
        "afbench analysis plan",
    }
)
_KIND_FIRST = re.compile(rb'\A\s*\{\s*"kind"\s*:\s*"(afbench [ -~]{1,100}?)"')
SNIFF_BYTES = 512
MAX_SNIFFED = 1 << 20  # a JSON file whose head names no kind is parsed whole below this size


class Directory:
    """The artifacts of one directory, found by kind from their first bytes, each read when it
    is checked; what could not be read, and why."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise AfbenchError(
                "not an artifact directory (no such folder)",
                file=str(root),
                expected="a results/<revision> folder",
            )
        self.found: dict[str, list[str]] = {}
        self.tables: dict[str, dict[str, str]] = {}  # folder -> table name -> file
        self.unreadable: list[tuple[str, str]] = []
        self._kept: dict[str, dict | None] = {}
        for folder, dirs, names in os.walk(self.root, onerror=self._walk_failed):
            dirs[:] = sorted(d for d in dirs if d != "logs" and not d.startswith("."))
            for name in sorted(names):
                path = Path(folder) / name
                rel = path.relative_to(self.root).as_posix()
                if name.startswith(".") or path.is_symlink() or not path.is_file():
                    continue
                if name.endswith(".json"):
                    self._sniff(path, rel)
                elif name.endswith(".csv"):
                    self._sniff_table(path, rel)

    def _walk_failed(self, error: OSError) -> None:
        self.unreadable.append((str(error.filename), error.strerror or str(error)))

    def _failed(self, rel: str, error: Exception) -> None:
        self.unreadable.append((rel, str(error)))

    def _sniff(self, path: Path, rel: str) -> None:
        try:
            head_bytes = read_head(path, "artifact", SNIFF_BYTES)
            match = _KIND_FIRST.match(head_bytes)
            if match is not None:
                name = match.group(1).decode("ascii")
            else:  # afbench writes `kind` first: parse a small file whole to tell
                if path.stat().st_size > MAX_SNIFFED:
                    return
                doc = parse_json_bytes(read_regular_file(path, "file", MAX_SNIFFED), rel, "file")
                name = doc.get("kind") if isinstance(doc, dict) else None
                if not (isinstance(name, str) and name.startswith("afbench ")):
                    return  # a JSON file that is not an artifact
            if name not in KINDS:
                raise AfbenchError(
                    "not an artifact kind afbench writes",
                    file=rel,
                    expected="a kind afbench declares",
                    found=name,
                )
            self.found.setdefault(name, []).append(rel)
        except (AfbenchError, OSError) as error:
            self._failed(rel, error)

    def _sniff_table(self, path: Path, rel: str) -> None:
        """A CSV table afbench writes (its header is a declared Table's columns)."""
        try:
            first = read_head(path, "table", 4096).split(b"\n", 1)[0].decode("utf-8")
        except (AfbenchError, OSError, UnicodeDecodeError) as error:
            self._failed(rel, error)
            return
        header = next(csv.reader([first.rstrip("\r")]), [])
        table = next((t for t in TABLES.values() if t.columns == header), None)
        if table is not None:  # not a run table: leaderboard.csv is checked through its summary
            self.tables.setdefault(str(Path(rel).parent), {})[table.name] = rel

    def load(self, rel: str, name: str) -> dict | None:
        """The artifact at `rel` read through its kind; None (and why, once) if it cannot be."""
        if rel in self._kept:
            return self._kept[rel]
        try:
            data = read_regular_file(self.root / rel, "artifact", MAX_JSON_BYTES)
            doc = parse(KINDS[name], data, rel)
        except (AfbenchError, OSError) as error:
            self._failed(rel, error)
            doc = None
        if name in KEPT or doc is None:
            self._kept[rel] = doc
        return doc

    def of(self, name: str) -> Iterator[tuple[str, dict]]:
        for rel in self.found.get(name, []):
            doc = self.load(rel, name)
            if doc is not None:
                yield rel, doc

    def one(self, name: str) -> tuple[str, dict] | None:
        found = list(self.of(name)) if name in KEPT else []
        return found[0] if len(found) == 1 else None

    def counted(self, rel: str) -> Counter | None:
        """A run table's rows counted by (configuration, outcome, replaced: whether a later
        attempt replaced the row's, attempts.csv's replaced_by), read a row at a time."""
        try:
            with open(self.root / rel, encoding="utf-8", newline="") as handle:
                rows = csv.reader(handle)
                header = next(rows)
                at = header.index("configuration"), header.index("outcome")
                gone = header.index("replaced_by") if "replaced_by" in header else None
                return Counter(
                    (
                        csv_text_value(r[at[0]]),
                        csv_text_value(r[at[1]]),
                        gone is not None and r[gone] != "",
                    )
                    for r in rows
                )
        except (OSError, UnicodeDecodeError, csv.Error, IndexError, ValueError) as error:
            self._failed(rel, error)
            return None

    def outcome_rows(self, rel: str) -> list[tuple[int, str, str, str]] | None:
        """An outcomes.csv's rows as (row, configuration, task_id, outcome), each row numbered
        as a spreadsheet shows it (the header is row 1)."""
        try:
            with open(self.root / rel, encoding="utf-8", newline="") as handle:
                rows = csv.reader(handle)
                header = next(rows)
                at = [header.index(c) for c in ("configuration", "task_id", "outcome")]
                return [
                    (number, *(csv_text_value(r[i]) for i in at))
                    for number, r in enumerate(rows, start=2)
                ]
        except (OSError, UnicodeDecodeError, csv.Error, IndexError, ValueError) as error:
            self._failed(rel, error)
            return None


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


def _receipt_of_verified(found: Directory) -> tuple[str, dict] | None:
    """Where the fetch target was not built (a tree of `snakemake diff` alone), the files'
    verification records stand in for the receipt that gathers them."""
    verified = list(found.of("afbench verified file"))
    if not verified or len({canonical_json(v[1]["release"]) for v in verified}) > 1:
        return None
    files = [v[1]["file"] for v in verified]
    return (
        f"{Path(verified[0][0]).parent}/*.json",
        {"release": verified[0][1]["release"], "files": files},
    )


class _Lines(list):
    """The audit's lines, and how each relation is paired."""

    def pair(self, relation, artifact, source, what: str) -> None:
        if source is None:
            self.append(_missing(relation, artifact[0], what))
        else:
            self.append(_check(relation, artifact, source))


def _executed_runs(found: Directory, last: list[tuple[str, dict]]) -> list[dict]:
    """Each executed run checked against a sealed comparison's last step (`last`: its records,
    the step and the decision) made under the plan the run was checked against: its
    outcomes, task by task, are the decision's."""
    lines = _Lines()
    for run in found.of("afbench local run summary"):
        checked = run[1].get("analysis_plan")
        if checked is None:
            continue
        rel = found.tables.get(str(Path(run[0]).parent), {}).get("outcomes")
        rows = found.outcome_rows(rel) if rel is not None else None
        for step in last:
            if step[1]["plan_sha256"] != checked["plan_sha256"]:
                continue
            if rows is None:
                lines.append(_missing(r.RUN_OF_DECISION, run[0], "its outcomes.csv"))
                continue
            source = (step[0], {"decision": step[1], "outcomes": rows})
            lines.append(_check(r.RUN_OF_DECISION, (rel, run[1]), source))
    return lines


def _execution(found: Directory) -> list[dict]:
    """The paid chain: a trial's receipts one per trial, the cost ledger over the receipts,
    each step of a sealed comparison held to its plan and, the last, made again from the
    receipts, and the executed run's outcomes held to that last step's."""
    from afbench.execution.ledger import trial_key

    lines = _Lines()
    receipts = list(found.of("afbench trial receipt"))
    first: dict[tuple, tuple[str, dict]] = {}
    for receipt in receipts:
        key = trial_key(receipt[1])
        if key in first:
            lines.append(_check(r.RECEIPT_OF_TRIAL, receipt, first[key]))
        else:
            first[key] = receipt
    gathered = (f"the trial receipts ({len(receipts)})", [data for _, data in receipts])
    for ledger in found.of("afbench cost ledger"):
        lines.pair(r.LEDGER_OF_RECEIPTS, ledger, gathered if receipts else None, "trial receipts")
    plan = found.one("afbench analysis plan")
    steps = list(found.of("afbench sequential run"))
    last = max((data["step"] for _, data in steps), default=None)
    for step in steps:
        lines.pair(r.DECISION_OF_PLAN, step, plan, "the sealed analysis plan")
        if plan is not None and step[1]["step"] == last:
            source = (gathered[0], {"plan": plan[1], "receipts": gathered[1]})
            lines.append(_check(r.DECISION_OF_RECEIPTS, step, source))
    lines += _executed_runs(found, [step for step in steps if step[1]["step"] == last])
    return lines


def _pairs(found: Directory) -> list[dict]:
    """Every artifact read once, its release block held to the identity, and every declared
    relation it has with the artifacts it names checked."""
    lines = _Lines()
    identity = found.one("afbench release identity")
    gathered = found.one("afbench release receipt")
    receipt = gathered or _receipt_of_verified(found)
    catalog = found.one("afbench task catalog")
    digests = found.one("afbench task digests")
    diff = found.one("afbench release diff")
    selections = list(found.of("afbench task selection"))
    by_name = {s[1]["name"]: s for s in selections}
    comparable = next((s for s in selections if "comparable" in s[1]), None)
    summaries = list(found.of("afbench official results summary"))
    runs = list(found.of("afbench local run summary"))
    lines += _execution(found)
    for name in sorted(found.found):
        for artifact in found.of(name):
            data = artifact[1]
            blocked = identity is not None and artifact is not identity
            if blocked and isinstance(data.get("release"), dict):
                lines.append(_check(r.RELEASE_BLOCK, artifact, identity))
            if name == "afbench verified file" and gathered is not None:
                lines.append(_check(r.VERIFIED_OF_RECEIPT, artifact, gathered))
            elif name == "afbench task catalog":
                lines.append(_check(r.CATALOG_OF_ITSELF, artifact, None))
                lines.pair(r.CATALOG_OF_RECEIPT, artifact, receipt, "the release receipt")
            elif name == "afbench task selection":
                lines.pair(r.SELECTION_OF_CATALOG, artifact, catalog, "the task catalog")
                if artifact is comparable:
                    lines.pair(r.COMPARABLE_OF_DIFF, artifact, diff, "the release diff")
            elif name == "afbench harbor run plan":
                named = data["selection"]["name"]
                source = by_name.get(named)
                lines.pair(r.PLAN_OF_SELECTION, artifact, source, f"the selection '{named}'")
            elif name == "afbench sealed run plan":
                named = data["selection"]["name"]
                source = by_name.get(named)
                lines.pair(r.RUN_PLAN_OF_SELECTION, artifact, source, f"the selection '{named}'")
            elif name == "afbench analysis plan":
                # its own fields are checked without the catalog too; with it, its hash
                lines.append(_check(r.ANALYSIS_PLAN_OF_CATALOG, artifact, catalog))
            elif name == "afbench official results import":
                lines.pair(r.IMPORT_OF_RECEIPT, artifact, receipt, "the release receipt")
                lines.pair(r.IMPORT_OF_CATALOG, artifact, catalog, "the task catalog")
                for summary in summaries:
                    kept = summary[1]
                    same = (data["source_condition"], data["budget_usd"]) == (
                        kept["source_condition"],
                        kept["budget_usd"],
                    )
                    if same and data["file"] in kept["inputs"]:
                        lines.append(_check(r.SUMMARY_OF_IMPORT, summary, artifact))
            elif name == "afbench local run summary":
                named = data["selection"]["name"]
                source = by_name.get(named)
                lines.pair(r.RUN_OF_SELECTION, artifact, source, f"the selection '{named}'")
                folder = str(Path(artifact[0]).parent)
                tables = {
                    table: found.counted(rel)
                    for table, rel in sorted(found.tables.get(folder, {}).items())
                }
                if tables and None not in tables.values():
                    lines.append(_check(r.RUN_OF_TABLES, artifact, (f"{folder}/*.csv", tables)))
            elif name == "afbench analysis":
                for summary in summaries:
                    lines.append(_check(r.ANALYSIS_OF_SUMMARY, artifact, summary))
                if gathered is not None:
                    lines.append(_check(r.ANALYSIS_OF_RECEIPT, artifact, gathered))
                shown = {row["run"] for row in data["local_runs"]}
                for run in runs:
                    if run[1]["run"] in shown:
                        lines.append(_check(r.ANALYSIS_OF_RUN, artifact, run))
            elif name == "afbench task digests":
                lines.append(_check(r.DIGESTS_OF_ITSELF, artifact, None))
                lines.pair(r.DIGESTS_OF_CATALOG, artifact, catalog, "the task catalog")
            elif name == "afbench release diff":
                lines.pair(r.DIFF_OF_DIGESTS, artifact, digests, "the task digests")
            elif name == "afbench upgrade plan":
                lines.pair(r.UPGRADE_PLAN_OF_DIFF, artifact, diff, "the release diff")
            elif name == "afbench cross-revision comparisons":
                source = comparable
                lines.pair(r.COMPARISONS_OF_COMPARABLE, artifact, source, "the comparable subset")
    return lines


def audit_directory(root: Path) -> dict:
    """The audit record of the artifact directory `root` (read, never written)."""
    found = Directory(root)
    lines = _manifest_checks(found)
    lines += _release_file_checks(found)
    lines += _pairs(found)
    # a file that cannot be read as what it says it is fails as itself
    lines += [_line("readable", "read", file, None, [why]) for file, why in found.unreadable]
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
