"""harbor/export.py of the SYNTHETIC afbench demo release (stand-in for the upstream exporter).

    python harbor/export.py --problem TASK [--tasks-dir DIR] [--check]

writes a Harbor 0.22.0 task directory for TASK, a task id of this checkout's MANIFEST.csv, to
DIR/TASK (DIR defaults to tasks/ at the top of this checkout, where an afbench plan's
`-p <checkout>/tasks/<task>` points): task.toml with the upstream per-task timeouts (agent
86,400 s, verifier 6,000 s), instruction.md, environment/ (a Dockerfile and the workspace: one
Lean file, Task.lean, with `sorry` for each proof obligation), tests/test.sh (the grader) and
solution/solve.sh (the oracle's reference solution). Exporting again writes the same bytes; an
outdated directory is replaced whole, never left half-written; concurrent exports of one task
take turns (a lock file, DIR/.TASK.lock).

--check changes nothing: it verifies that DIR/TASK holds exactly what the export writes (the
same files, bytes and executable bits, and no others) and exits 1 naming each difference.

The demo is synthetic: its theorems are invented, and its grader compares text instead of
running Lean: reward 1 only when /workspace/Task.lean is the reference file, that is every
`sorry` replaced by the task's solution; anything else, the untouched workspace included, gets
reward 0. Exit codes: 0 done, 1 check failed, 2 bad arguments or unknown task.

harbor/amendments.json (optional) amends single tasks, as a later revision of a release does:
{"TASK": {"version": "1.0.0", "statement": 2, "verifier": 2, "environment": 2}}, each key
optional. `version` is the task's declared version, written where Harbor reads it (task.toml's
[task] section, with the package name afbench-demo/TASK); `statement` N > 1 states other
obligations (the Lean file, and so the grader's reference and the oracle, change), `verifier`
2 makes the grader ignore carriage returns, `environment` 2 sets a UTF-8 locale in the image.
"""

import argparse
import csv
import fcntl
import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
AGENT_TIMEOUT_S = 86400
VERIFIER_TIMEOUT_S = 6000
TASK_ID = re.compile(r"^(?!.*\.\.)[A-Za-z0-9_][A-Za-z0-9_.-]*$")
LEAN_FILE = "Task.lean"
EXECUTABLE = ("tests/test.sh", "solution/solve.sh")
AMENDMENTS = CHECKOUT / "harbor" / "amendments.json"
AMENDMENT_KEYS = {"version": str, "statement": int, "verifier": int, "environment": int}
REVISIONS = {"statement": None, "verifier": (1, 2), "environment": (1, 2)}


def fail(message, code=2):
    print(f"harbor/export.py: {message}", file=sys.stderr)
    sys.exit(code)


def manifest_row(task_id):
    if not TASK_ID.match(task_id):
        fail(f"--problem {task_id!r} is not a task id (letters, digits, _ . -; no '..')")
    path = CHECKOUT / "MANIFEST.csv"
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            rows = [row for row in csv.DictReader(handle) if row.get("task_id") == task_id]
    except OSError as error:
        fail(f"cannot read {path}: {error}")
    if len(rows) != 1:
        fail(f"task {task_id!r} is not in {path}" if not rows else f"{task_id!r} twice in {path}")
    return rows[0]


def amendment(task_id):
    """The task's amendments (harbor/amendments.json); none when the file is absent."""
    try:
        text = AMENDMENTS.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as error:
        fail(f"cannot read {AMENDMENTS}: {error}")
    try:
        table = json.loads(text)
    except ValueError as error:
        fail(f"{AMENDMENTS} is not JSON: {error}")
    if not isinstance(table, dict):
        fail(f"{AMENDMENTS}: expected an object of task ids")
    found = table.get(task_id, {})
    if not isinstance(found, dict):
        fail(f"{AMENDMENTS}: {task_id}: expected an object")
    for key, value in found.items():
        kind = AMENDMENT_KEYS.get(key)
        if kind is None or type(value) is not kind:
            fail(f"{AMENDMENTS}: {task_id}.{key}: expected one of {sorted(AMENDMENT_KEYS)}")
        allowed = REVISIONS.get(key)
        if kind is int and (value < 1 or (allowed is not None and value not in allowed)):
            fail(f"{AMENDMENTS}: {task_id}.{key}: no revision {value}")
        if key == "version" and not value.strip():
            fail(f"{AMENDMENTS}: {task_id}.version: empty")
    return found


def toml_string(value):
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string


def obligations(row, revision=1):
    """(declaration name, statement, proof) per obligation: invented arithmetic facts that Lean
    4 core proves with `rfl`, drawn from the task id (and a later statement revision) so every
    export is the same."""
    namespace, _, name = row["target_declaration"].rpartition(".")
    seed = row["task_id"] if revision == 1 else f"{row['task_id']}:statement-{revision}"
    digest = hashlib.sha256(seed.encode()).digest()
    result = []
    for k in range(int(row["n_obligations"])):
        a = int.from_bytes(digest[(2 * k) % 30 : (2 * k) % 30 + 2], "big") % 900 + 100
        b = int.from_bytes(digest[(2 * k + 1) % 30 : (2 * k + 1) % 30 + 2], "big") % 900 + 100
        decl = name if k == 0 else f"{name}_obligation_{k + 1}"
        result.append((decl, f"({a} : Nat) + {b} = {a + b}", "rfl"))
    return namespace, result


def lean_file(row, solved, revision=1):
    namespace, items = obligations(row, revision)
    lines = [
        f"-- SYNTHETIC afbench demo task {row['task_id']} ({row['source_ref']}): invented, not",
        "-- AutoformBench data. Replace each `sorry` with a proof; change nothing else.",
        "",
        f"namespace {namespace}",
        "",
    ]
    for decl, statement, proof in items:
        lines += [f"theorem {decl} : {statement} := by", f"  {proof if solved else 'sorry'}", ""]
    lines.append(f"end {namespace}")
    return "\n".join(lines) + "\n"


def task_files(row):
    """The task directory's files: relative path -> text. task.toml has no [task] section, so
    Harbor names the task, and every trial's task_name, after the directory: the task id."""
    task_id, n = row["task_id"], int(row["n_obligations"])
    amended = amendment(task_id)
    statement = amended.get("statement", 1)
    unsolved, solved = lean_file(row, False, statement), lean_file(row, True, statement)
    assert "AFBENCH_EOF" not in solved
    expected = hashlib.sha256(solved.encode()).hexdigest()
    original = hashlib.sha256(unsolved.encode()).hexdigest()
    declared = ""
    if "version" in amended:
        declared = (
            f"\n[task]\nname = {toml_string('afbench-demo/' + task_id)}\n"
            f"version = {toml_string(amended['version'])}\n"
        )
    # environment revision 2 sets a locale; verifier revision 2 ignores carriage returns
    locale = "ENV LC_ALL=C.UTF-8\n" if amended.get("environment", 1) == 2 else ""
    hashed = 'sha256sum "$file"'
    if amended.get("verifier", 1) == 2:
        hashed = "tr -d '\\r' < \"$file\" | sha256sum"
    task_toml = f"""# Harbor 0.22.0 task, from harbor/export.py of the SYNTHETIC afbench demo.
schema_version = "1.4"
{declared}
[metadata]
description = {toml_string(f"SYNTHETIC afbench demo task: prove {row['target_declaration']}")}
synthetic = true
task_id = {toml_string(task_id)}
source_id = {toml_string(row["source_id"])}
source_ref = {toml_string(row["source_ref"])}
target_declaration = {toml_string(row["target_declaration"])}
n_obligations = {n}
workspace = {toml_string(row["workspace"])}
grader = "text: reward 1 only when /workspace/{LEAN_FILE} is the reference solution; no Lean run"

[agent]
timeout_sec = {AGENT_TIMEOUT_S}.0

[verifier]
timeout_sec = {VERIFIER_TIMEOUT_S}.0

[environment]
build_timeout_sec = 600.0
"""
    instruction = f"""# {task_id} (SYNTHETIC afbench demo task)

Prove `{row["target_declaration"]}` ({row["source_ref"]}, an invented statement of the
synthetic afbench demo release; not AutoformBench data).

The workspace `/workspace/{LEAN_FILE}` states it, with {n} proof obligation(s), each proved by
`sorry`. Replace every `sorry` with a proof and change nothing else in the file: the statements,
names, comments and layout must stay as they are.
"""
    dockerfile = f"""# SYNTHETIC afbench demo task {task_id}: the workspace is one Lean file.
# The demo grader compares text and needs only bash and coreutils (an upstream task would
# build on the release's Lean v4.32.2 + Mathlib image).
FROM debian:bookworm-slim
{locale}WORKDIR /workspace
COPY workspace/ /workspace/
"""
    grader = f"""#!/bin/bash
# Grader of the SYNTHETIC afbench demo task {task_id}. Reward 1 only when the workspace's
# {LEAN_FILE} is the reference solution (every `sorry` replaced by the task's solution), else 0.
# It compares text (SHA-256 of the file); it runs no Lean. WORKSPACE and VERIFIER_LOGS default
# to the container paths Harbor 0.22.0 uses.
set -u
workspace="${{WORKSPACE:-/workspace}}"
logs="${{VERIFIER_LOGS:-/logs/verifier}}"
file="$workspace/{LEAN_FILE}"
expected={expected}
original={original}
mkdir -p "$logs"
reward=0
if [ ! -f "$file" ]; then
    echo "rejected: $file is missing"
else
    found="$({hashed} | cut -d ' ' -f 1)"
    if [ "$found" = "$expected" ]; then
        echo "accepted: $file is the reference solution"
        reward=1
    elif [ "$found" = "$original" ]; then
        echo "rejected: $file is unchanged (every proof is still sorry)"
    else
        echo "rejected: $file differs from the reference solution (sha256 $found)"
    fi
fi
echo "$reward" > "$logs/reward.txt"
"""
    solve = f"""#!/bin/bash
# Oracle of the SYNTHETIC afbench demo task {task_id}: writes the reference solution, the
# workspace file with every `sorry` replaced by the task's solution.
set -eu
cat > "${{WORKSPACE:-/workspace}}/{LEAN_FILE}" <<'AFBENCH_EOF'
{solved}AFBENCH_EOF
"""
    return {
        "task.toml": task_toml,
        "instruction.md": instruction,
        "environment/Dockerfile": dockerfile,
        f"environment/workspace/{LEAN_FILE}": unsolved,
        "tests/test.sh": grader,
        "solution/solve.sh": solve,
    }


def write_tree(target, files):
    target.mkdir(parents=True)
    for rel, text in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
        path.chmod(0o755 if rel in EXECUTABLE else 0o644)


def differences(target, files):
    if not target.is_dir():
        return [f"{target} is not a directory"]
    problems = []
    found = {p.relative_to(target).as_posix() for p in target.rglob("*") if not p.is_dir()}
    for rel in sorted(found - set(files)):
        problems.append(f"{rel}: not written by the export")
    for rel, text in sorted(files.items()):
        path = target / rel
        if rel not in found:
            problems.append(f"{rel}: missing")
        elif path.is_symlink() or not path.is_file():
            problems.append(f"{rel}: not a regular file")
        elif path.read_bytes() != text.encode():
            problems.append(f"{rel}: content differs from the export")
        elif rel in EXECUTABLE and not os.access(path, os.X_OK):
            problems.append(f"{rel}: not executable")
    return problems


def export(target, files):
    # Jobs that run the same task (one per agent or attempt) may export it at the same time:
    # one at a time per task, and a directory that is already right is left alone.
    with open(target.parent / f".{target.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return export_locked(target, files)


def export_locked(target, files):
    if target.is_dir() and not differences(target, files):
        return "up to date"
    staging = target.parent / f".{target.name}.export-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    write_tree(staging, files)
    if target.exists() or target.is_symlink():
        old = target.parent / f".{target.name}.old-{os.getpid()}"
        os.rename(target, old)
        os.rename(staging, target)
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)
        else:
            old.unlink()
        return "replaced"
    os.rename(staging, target)
    return "written"


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--problem", required=True, help="task id from MANIFEST.csv")
    parser.add_argument("--check", action="store_true", help="verify only; change nothing")
    parser.add_argument(
        "--tasks-dir",
        type=Path,
        default=CHECKOUT / "tasks",
        help="folder of exported tasks (default: tasks/ at the top of the checkout)",
    )
    args = parser.parse_args(argv)
    row = manifest_row(args.problem)
    files = task_files(row)
    target = args.tasks_dir.resolve() / args.problem
    if args.check:
        problems = differences(target, files)
        for problem in problems:
            print(f"harbor/export.py --check: {target}: {problem}", file=sys.stderr)
        if problems:
            sys.exit(1)
        print(f"ok: {target} is the Harbor task for {args.problem}")
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    print(f"{export(target, files)}: {target}")


if __name__ == "__main__":
    main()
