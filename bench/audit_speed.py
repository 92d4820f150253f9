"""`afbench audit` on two artifact directories, its figures beside a floor measured in the same
run: the demo pipeline's own results/<revision> (target: <= 2 s CPU), and a directory at the
official scale times 100 (34,100 tasks x 45 models: the release, its catalog, 45 model imports,
their comparison, a selection of every task and a local run of 45 configurations x 34,100
trials (its summary and both tables, 1,534,500 rows each), and the artifact manifest; target:
<= 30 s CPU, <= 512 MiB). The floor is
reading every file of the directory once and hashing it (what the audit's re-hashing costs at
the least). Work files go to bench/work/ (git-ignored).

    python bench/audit_speed.py          # 3 rounds; --rounds N
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from run import AFBENCH, ENV, REPO, SNAKEMAKE, WORK, Chain, measure, medians, scaled_release, sides

FLOOR = (
    "import hashlib, os, sys\n"
    "for folder, _, names in os.walk(sys.argv[1]):\n"
    "    for name in names:\n"
    "        with open(os.path.join(folder, name), 'rb') as f:\n"
    "            hashlib.sha256(f.read()).hexdigest()\n"
)


def demo_directory() -> Path:
    """The demo pipeline run by Snakemake in a project folder of its own."""
    root = WORK / "audit-demo"
    if not (root / "done").exists():
        shutil.rmtree(root, ignore_errors=True)
        for part in ("workflow", "config", "profiles", "resources"):
            shutil.copytree(REPO / part, root / part, symlinks=True)
        subprocess.run(
            [SNAKEMAKE, "--profile", "profiles/default", "--quiet", "all"],
            cwd=root,
            env=ENV,
            check=True,
            capture_output=True,
        )
        (root / "done").touch()
    # the folder of the one artifact manifest the run wrote, found by its kind (the workflow is
    # the one home of the tree's names)
    (found,) = [p.parent for p in root.rglob("*.json") if _is_manifest(p)]
    return found


def _is_manifest(path: Path) -> bool:
    with open(path, "rb") as handle:
        return b'"kind": "afbench artifact manifest"' in handle.read(200)


def scale_directory() -> Path:
    """34,100 tasks x 45 models in one directory: the audit finds each artifact by the kind in
    its first bytes and the release files beside the receipt, so the folders' names are the
    bench's own."""
    root = scaled_release(100, 5)
    done = root / "audit-done"
    chain = Chain(root, sides()["new"])
    if not done.exists():
        shutil.rmtree(chain.release, ignore_errors=True)
        subprocess.run(
            [*map(str, chain.fetch()), "--all-models"],
            cwd=root,
            env=ENV,
            check=True,
            capture_output=True,
        )
        chain.reset()
        for cmd in (chain.tasks(), *[chain.import_model(s) for s in chain.models], chain.compare()):
            subprocess.run(list(map(str, cmd)), cwd=root, env=ENV, check=True, capture_output=True)
    receipt = json.loads(chain.receipt.read_text())
    revision = receipt["release"]["revision"]
    rev = root / "audited" / revision
    if not done.exists():
        shutil.rmtree(rev, ignore_errors=True)
        shutil.copytree(chain.release, rev / "release")
        imports = rev / "imports"
        imports.mkdir(parents=True)
        shutil.copy(chain.catalog, rev / "catalog.json")
        for slug in chain.models:
            shutil.copy(chain.model_import(slug), imports / f"{slug}.json")
        shutil.copy(chain.out / "summary.json", imports / "summary.json")
        shutil.copy(chain.out / "leaderboard.csv", imports / "leaderboard.csv")
        local_run(json.loads(chain.catalog.read_text()), rev)
        identity = {"kind": "afbench release identity", "schema_version": 1}
        (rev / "identity.json").write_text(
            json.dumps({**identity, "release": receipt["release"]}, indent=2) + "\n"
        )
        # as the workflow's manifest: the receipt, not the release files it verified
        release = rev / "release"
        files = [
            p
            for p in rev.rglob("*")
            if p.is_file() and (not p.is_relative_to(release) or p.name == "receipt.json")
        ]
        subprocess.run(
            [
                *[AFBENCH, "job", "write-artifact-manifest", f"--root={rev}"],
                *[f"--revision={revision}", f"--config-digest={'0' * 64}"],
                f"--output={rev / 'manifest.json'}",
                *map(str, files),
            ],
            env=ENV,
            check=True,
            capture_output=True,
        )
        done.touch()
    return rev


CONFIGURATIONS = 45


def local_run(catalog: dict, rev: Path) -> None:
    """A selection of every task and a run of 45 configurations over it, made by the import's
    own steps (summarize_run, certify_run, the two tables) from verdicts: the demo's one
    verdict as each configuration's trial of each task, its outcome varied by task, so the
    summary and tables are what `afbench import-run` writes for 1,534,500 verdicts without
    1,534,500 files on disk."""
    import copy

    from afbench import kinds
    from afbench.core.fsutil import csv_output, json_bytes, json_output, write_outputs
    from afbench.runs.conformance import certify_run
    from afbench.runs.summary import ATTEMPT_COLUMNS, OUTCOME_COLUMNS, summarize_run
    from afbench.runs.verdicts import read_verdict_dir
    from afbench.tasks.catalog import select_tasks

    selection = select_tasks(catalog, "every-task")
    (rev / "selections").mkdir(parents=True)
    (rev / "selections" / "every-task.json").write_bytes(json_bytes(selection))
    [verdict] = read_verdict_dir(REPO / "resources/demo-runs/verdicts", "verdicts")[:1]
    outcomes = [("accepted", 1, "all checks passed"), ("rejected", 0, "reward 0")]
    attempts = []
    for c in range(CONFIGURATIONS):
        details = copy.deepcopy(verdict["configuration_details"])
        details["verifier"]["name"] = f"verifier-{c:02d}"
        label = f"verdicts | verifier verifier-{c:02d} 1"
        for i, task in enumerate(selection["task_ids"]):
            outcome, reward, reason = outcomes[1 if (i + c) % 3 == 0 else 0]
            attempts.append(
                {
                    **verdict,
                    "configuration": label,
                    "configuration_details": details,
                    "identity": ("verdict", c, i),
                    "task_id": task,
                    "trial_name": f"{task}.json",
                    "trial_dir": f"verdicts/{c:02d}/{task}.json",
                    "outcome": outcome,
                    "reward": reward,
                    "reason": reason,
                }
            )
    summary, rows = summarize_run(
        "scaled", "verdicts", selection, attempts, 200.0, selection["release"]
    )
    summary = kinds.RUN_SUMMARY.record(**certify_run(summary, attempts, "verdicts", None))
    run = rev / "local-run"
    write_outputs(
        [
            csv_output(
                run / "attempts.csv",
                ATTEMPT_COLUMNS,
                ([a[k] for k in ATTEMPT_COLUMNS] for a in attempts),
            ),
            csv_output(
                run / "outcomes.csv",
                OUTCOME_COLUMNS,
                ([r[k] for k in OUTCOME_COLUMNS] for r in rows),
            ),
            json_output(run / "summary.json", summary),
        ],
        about=summary,
    )


def figures(name: str, directory: Path, rounds: int, cpu_target: float, mib_target: float):
    audit = [AFBENCH, "audit", str(directory), "--quiet"]
    floor = [sys.executable, "-c", FLOOR, str(directory)]
    first = subprocess.run(audit, capture_output=True, text=True, env=ENV)
    if first.returncode != 0:
        raise SystemExit(f"the audit of {directory} did not hold:\n{first.stdout[-3000:]}")
    checks = len(first.stdout.splitlines())
    size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()) / 2**20
    runs = {"audit": [], "floor": []}
    for _ in range(rounds):
        runs["audit"].append(measure(audit, REPO))
        runs["floor"].append(measure(floor, REPO))
    a, f = medians(runs["audit"]), medians(runs["floor"])
    met = a.cpu <= cpu_target and a.mib <= mib_target
    print(
        f"| {name} ({checks} checks, {size:.0f} MiB) | {a.seconds:.2f} | {a.cpu:.2f} | "
        f"{a.mib:.0f} | {f.seconds:.2f} | {f.cpu:.2f} | <= {cpu_target:g} s CPU, "
        f"<= {mib_target:g} MiB | {'met' if met else 'NOT met'} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    print(f"`afbench audit`, medians of {rounds} rounds, {platform.processor() or 'cpu'}:")
    print()
    print(
        "| directory | audit wall s | audit CPU s | audit peak MiB | floor wall s | "
        "floor CPU s | target | result |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---|")
    figures("the demo's results/<revision>", demo_directory(), rounds, 2, 512)
    figures(
        "34,100 tasks x 45 models, a run of 45 configurations x 34,100 trials",
        scale_directory(),
        rounds,
        30,
        512,
    )
    print()
    print(
        "floor: every file of the directory read once and hashed (SHA-256) in one Python "
        "process; CPU is user + system of the process tree."
    )


if __name__ == "__main__":
    main()
