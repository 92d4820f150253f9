"""Discover the release's files, pins and columns from an upstream checkout at the pinned
revision, compare them with config, and write a fragment to review: never edit config."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path, PurePosixPath

from afbench.core.csvtable import closest
from afbench.core.errors import AfbenchError, Problem
from afbench.core.fsutil import path_text, sha256_bytes
from afbench.kinds import DISCOVERY

KIND_COLUMNS = ("manifest", "sources", "results")
# CSV blobs larger than this are not read: a release's CSVs are a few hundred kilobytes
MAX_CSV_BYTES = 64 * 1024 * 1024


def list_csvs(checkout: Path, revision: str, max_bytes: int) -> dict[str, dict]:
    """Every CSV blob at the revision: path -> sha256, size, rows, header. Two git processes
    whatever the number of files (gitrun: hardened): the tree listed once with its names as
    bytes (any name a checkout can hold, UTF-8 or not), and one `cat-file --batch` that
    reads every blob; a blob over the size cap is not read, and the batch it ends is started
    again (one more process per such blob)."""
    from afbench.core import gitrun

    batch = gitrun.Batch(checkout)
    try:
        kind, _ = batch.get(f"{revision}^{{commit}}")
        if kind != "commit":
            raise AfbenchError(
                "checkout lacks the pinned commit", file=str(checkout), expected=revision
            )
        wanted = []
        for line in gitrun.output(checkout, "ls-tree", "-r", "-z", "--full-tree", revision).split(
            b"\0"
        ):
            if not line:
                continue
            meta, _, raw_path = line.partition(b"\t")
            _, kind, oid = meta.split()
            if kind == b"blob" and raw_path.lower().endswith(b".csv"):
                wanted.append((path_text(os.fsdecode(raw_path)), oid.decode()))
        found = {}
        for path, oid in wanted:
            kind, data = batch.get(oid, cap=max_bytes)
            if kind is None:
                raise gitrun.missing_object(checkout, oid, path=path)
            if isinstance(data, int):  # larger than the cap: not a release CSV; not read
                batch = gitrun.Batch(checkout)
                continue
            try:
                records = list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))
            except (UnicodeDecodeError, csv.Error):
                records = []
            found[path] = {
                "path": path,
                "sha256": sha256_bytes(data),
                "size": len(data),
                "rows": max(len(records) - 1, 0),
                "header": [h.strip() for h in records[0]] if records else [],
            }
        return found
    finally:
        batch.close()


def _fit(header: list[str], mapping: dict[str, str]) -> float:
    return sum(col in header for col in mapping.values()) / len(mapping)


def _locate(path: str, stem: str, kind: str, csvs: dict, columns: dict) -> str | None:
    """The configured path if present, else a CSV of the same file name, else the best fit."""
    if path in csvs:
        return path
    same_name = [
        p
        for p in csvs
        if PurePosixPath(p).name.lower() == PurePosixPath(path).name.lower()
        or PurePosixPath(p).stem == stem
    ]
    if len(same_name) == 1:
        return same_name[0]
    if kind != "results":
        scored = sorted(csvs, key=lambda p: -_fit(csvs[p]["header"], columns[kind]))
        if scored and _fit(csvs[scored[0]]["header"], columns[kind]) >= 0.5:
            return scored[0]
    return None


def _column_fixes(header: list[str], mapping: dict[str, str]) -> tuple[dict, dict]:
    missing, fixes = {}, {}
    used = set(mapping.values()) & set(header)
    for ours, theirs in mapping.items():
        if theirs in header:
            continue
        candidates = [c for c in closest(theirs, header) if c not in used]
        missing[ours] = {"mapped": theirs, "closest": candidates}
        if candidates:
            fixes[ours] = candidates[0]
    return missing, fixes


def compare(config: dict, csvs: dict) -> dict:
    columns = config["columns"]
    entries, problems = [], []
    fragment: dict = {"files": {}, "models": {}, "columns": {k: {} for k in KIND_COLUMNS}}
    wanted = [(key, key, spec) for key, spec in config["files"].items()]
    wanted += [(slug, "results", spec) for slug, spec in config["models"].items()]
    claimed = set()
    for key, kind, spec in wanted:
        where = _locate(spec["path"], key, kind, csvs, columns)
        entry = {
            "key": key,
            "kind": kind,
            "configured_path": spec["path"],
            "configured_sha256": spec["sha256"],
            "found_path": where,
        }
        if where is None:
            entry["status"] = "path does not exist at the pinned revision; no candidate found"
            entries.append(entry)
            continue
        claimed.add(where)
        info = csvs[where]
        entry.update(
            observed_sha256=info["sha256"],
            size=info["size"],
            rows=info["rows"],
            header=info["header"],
        )
        if spec["sha256"] is None:
            entry["pin"] = "missing in config"
        elif spec["sha256"] == info["sha256"]:
            entry["pin"] = "matches"
        else:
            entry["pin"] = "DIFFERS"
            problems.append(
                Problem(
                    "pinned SHA-256 differs from the checkout's file",
                    file=where,
                    field=f"{key}.sha256",
                    expected=spec["sha256"],
                    found=info["sha256"],
                )
            )
        missing, fixes = _column_fixes(info["header"], columns[kind])
        entry["missing_columns"] = missing
        for ours, theirs in fixes.items():
            previous = fragment["columns"][kind].setdefault(ours, theirs)
            if previous != theirs:
                entry.setdefault("conflicts", []).append(ours)
        section = "files" if kind != "results" else "models"
        proposal = {"path": where, "sha256": info["sha256"]}
        if kind == "results":
            proposal["display_name"] = config["models"][key]["display_name"]
        fragment[section][key] = proposal
        entries.append(entry)
    extra = []
    for path, info in sorted(csvs.items()):
        if path in claimed or _fit(info["header"], columns["results"]) < 0.5:
            continue
        slug = PurePosixPath(path).stem
        extra.append(
            {"path": path, "proposed_slug": slug, "sha256": info["sha256"], "rows": info["rows"]}
        )
        fragment["models"][slug] = {"display_name": slug, "path": path, "sha256": info["sha256"]}
    fragment["columns"] = {k: v for k, v in fragment["columns"].items() if v}
    return {
        "files": entries,
        "unconfigured_results": extra,
        "fragment": fragment,
        "problems": problems,
    }


def fragment_yaml(fragment: dict, checkout: Path, revision: str) -> bytes:
    import yaml

    header = (
        f"# afbench discover: observed in {checkout} at commit {revision}.\n"
        "# Pins below were computed from the checkout's blobs at that commit: observed,\n"
        "# not published by the authors. Review, then merge into your config.\n"
    )
    return (header + yaml.safe_dump(fragment, sort_keys=False)).encode()


def discover(config: dict, checkout: Path) -> tuple[dict, bytes, list[str], list]:
    """Compare `config` (its release revision, files, models and columns)
    with the CSVs of `checkout` at the pinned revision: (discovery record, fragment YAML,
    warnings). Problems (a pin that differs) are raised after the caller has the record."""
    revision = config["release"]["revision"]
    checkout = checkout.resolve()
    if not checkout.is_dir():
        raise AfbenchError("checkout not found", file=str(checkout))
    csvs = list_csvs(checkout, revision, MAX_CSV_BYTES)
    result = compare(config, csvs)
    report = DISCOVERY.record(
        checkout=str(checkout),
        revision=revision,
        observed_not_published=True,
        csv_files=list(csvs.values()),
        **{k: v for k, v in result.items() if k not in ("problems", "kind")},
    )
    warnings = []
    for entry in result["files"]:
        if entry["found_path"] is None:
            warnings.append(
                f"{entry['key']}: {entry['configured_path']} not found at {revision[:12]}"
            )
            continue
        if entry["found_path"] != entry["configured_path"]:
            warnings.append(
                f"{entry['key']}: configured path {entry['configured_path']} is "
                f"{entry['found_path']} in the checkout"
            )
        if entry["pin"] == "missing in config":
            warnings.append(
                f"{entry['key']}: no pin in config; observed {entry['observed_sha256']}"
            )
        for ours, info in entry["missing_columns"].items():
            warnings.append(
                f"{entry['key']}: mapped column '{info['mapped']}' ({ours}) "
                f"missing; closest: {info['closest'] or 'none'}"
            )
    for extra in result["unconfigured_results"]:
        warnings.append(f"results file {extra['path']} is not in config")
    return (
        report,
        fragment_yaml(result["fragment"], checkout, revision),
        warnings,
        result["problems"],
    )
