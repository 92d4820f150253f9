"""Verifier verdicts: one verdict file checked for shape and contradictions (reward 1 / 0 /
null), and a folder of them read as a local run's attempts, one configuration per verifier name
and version (a verdict records neither the agent nor the model)."""

from __future__ import annotations

import os
from pathlib import Path

from afbench.core.errors import AfbenchError, Problem, raise_if
from afbench.core.fsutil import check_name, parse_json_bytes
from afbench.core.harbor_files import json_type
from afbench.kinds.runs import CHECK_NAMES
from afbench.runs.harbor_jobs import check_unique_trials, read_regular_file, record_as, utf8_path


def _list_dir(folder: Path, what: str) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise AfbenchError(f"cannot list {what}: {exc.strerror}", file=str(folder)) from None


CHECKS = CHECK_NAMES
VERDICT_STATUSES = {"accepted": 1, "rejected": 0, "error": None}

# ----------------------------------------------------------------------------- verdicts


def _expect(
    cond: bool,
    problems: list[Problem],
    file: str,
    field: str,
    message: str,
    expected=None,
    found=None,
) -> bool:
    if not cond:
        problems.append(Problem(message, file=file, field=field, expected=expected, found=found))
    return cond


def parse_verdict(data: bytes, file: str, task_id: str | None) -> dict:
    """A verifier verdict checked for shape and contradictions; reward 1 / 0 / null."""
    doc = parse_json_bytes(data, file, "verdict")
    problems: list[Problem] = []
    if not isinstance(doc, dict):
        raise AfbenchError(
            "verdict must be a JSON object",
            file=file,
            expected="a JSON object",
            found=json_type(doc),
        )
    status = doc.get("status")
    _expect(
        isinstance(status, str) and status in VERDICT_STATUSES,
        problems,
        file,
        "status",
        "unknown status",
        "accepted, rejected or error",
        status,
    )
    vid = doc.get("task_id")
    if _expect(isinstance(vid, str), problems, file, "task_id", "missing task_id"):
        try:
            check_name(vid, "task_id", file=file)
        except AfbenchError as exc:
            problems.extend(exc.problems)
        if task_id is not None:
            _expect(
                vid == task_id,
                problems,
                file,
                "task_id",
                "verdict is for another task",
                task_id,
                vid,
            )
    obligations = doc.get("obligations")
    ob_ok = isinstance(obligations, list) and all(
        isinstance(o, dict)
        and isinstance(o.get("declaration"), str)
        and isinstance(o.get("status"), str)
        and o["status"] in VERDICT_STATUSES
        for o in obligations
    )
    _expect(
        ob_ok,
        problems,
        file,
        "obligations",
        "malformed obligations",
        "a list of {declaration, status, detail}",
    )
    checks = doc.get("checks")
    checks_ok = (
        isinstance(checks, dict)
        and set(checks) <= set(CHECKS)
        and all(v is None or isinstance(v, bool) for v in checks.values())
    )
    _expect(
        checks_ok,
        problems,
        file,
        "checks",
        "malformed checks",
        f"an object with booleans (or null for not run) for {', '.join(CHECKS)}",
    )
    error = doc.get("error")
    error_ok = error is None or (
        isinstance(error, dict)
        and isinstance(error.get("kind"), str)
        and isinstance(error.get("message"), str)
    )
    _expect(error_ok, problems, file, "error", "malformed error", "null or {kind, message}")
    verifier = doc.get("verifier")
    _expect(
        isinstance(verifier, dict)
        and isinstance(verifier.get("name"), str)
        and isinstance(verifier.get("version"), str),
        problems,
        file,
        "verifier",
        "missing verifier name and version",
    )
    raise_if(problems)
    passed = [checks.get(c) is True for c in CHECKS]
    obligations_pass = bool(obligations) and all(o["status"] == "accepted" for o in obligations)
    if status == "accepted":
        missing = [c for c in CHECKS if checks.get(c) is None]
        _expect(
            not missing,
            problems,
            file,
            "checks",
            "accepted verdict lacks checks; they are not assumed to have passed",
            "all four checks true",
            missing,
        )
        failed = [c for c in CHECKS if checks.get(c) is False]
        _expect(
            not failed,
            problems,
            file,
            "checks",
            "contradiction: accepted with a failed check",
            found=failed,
        )
        _expect(
            obligations_pass,
            problems,
            file,
            "obligations",
            "contradiction: accepted without every obligation accepted",
        )
        _expect(error is None, problems, file, "error", "contradiction: accepted with an error")
    elif status == "rejected":
        _expect(
            not (all(passed) and obligations_pass),
            problems,
            file,
            "status",
            "contradiction: rejected although every check and obligation passed",
        )
        _expect(
            error is None,
            problems,
            file,
            "error",
            "contradiction: rejected with an error object (an error verdict has status 'error')",
        )
    else:
        _expect(
            error is not None,
            problems,
            file,
            "error",
            "contradiction: status error without an error object",
        )
    raise_if(problems)
    return {
        "task_id": vid,
        "status": status,
        "reward": VERDICT_STATUSES[status],
        "reason": error["kind"]
        if error
        else (
            "all checks passed" if status == "accepted" else _rejection_reason(checks, obligations)
        ),
        "checks": {c: checks.get(c) for c in CHECKS},
        "obligations": {
            "total": len(obligations),
            "accepted": sum(o["status"] == "accepted" for o in obligations),
        },
        "error": error,
        "verifier": {"name": verifier["name"], "version": verifier["version"]},
        "verifier_provenance_attested": False,
        "local_capability_score": None,
    }


def _rejection_reason(checks: dict, obligations: list) -> str:
    failed = [c for c in CHECKS if checks.get(c) is False]
    if failed:
        return "failed check: " + ", ".join(failed)
    return "obligation not accepted: " + ", ".join(
        o["declaration"] for o in obligations if o["status"] != "accepted"
    )


def read_verdict_dir(folder: Path, named: str | None = None) -> list[dict]:
    """Every `*.json` verdict in a folder (regular files only, read with a size cap and never
    blocking); one configuration per verifier name and version."""
    folder = Path(utf8_path(str(folder)))
    if not folder.is_dir():
        raise AfbenchError("verdict folder not found", file=str(folder))
    attempts = []
    for entry in _list_dir(folder, "verdict folder"):
        if entry.name.startswith(".") or not entry.name.endswith(".json"):
            continue
        path = Path(utf8_path(entry.path))
        data = read_regular_file(path, "verdict file")
        assert data is not None
        info = os.stat(path, follow_symlinks=False)
        verdict = parse_verdict(data, str(path), None)
        verifier = verdict["verifier"]
        label = f"verdicts | verifier {verifier['name']} {verifier['version']}"
        attempts.append(
            {
                "task_id": verdict["task_id"],
                "outcome": verdict["status"],
                "reward": verdict["reward"],
                "reason": verdict["reason"],
                "cost_usd": None,
                "trial_name": path.name,
                "job_id": None,
                "trial_dir": str(path),
                "task_checksum": None,
                "configuration": label,
                "agent": None,
                "agent_version": None,
                "model": None,
                "configuration_details": {
                    "verifier": verifier,
                    "agent": None,
                    "model": None,
                    "note": "a verdict records neither the agent nor the model",
                },
                "identity": ("verdict", info.st_dev, info.st_ino),
                "replaced_by": None,
            }
        )
    check_unique_trials(attempts)
    if named is not None:
        record_as(attempts, str(folder), named)
    return attempts
