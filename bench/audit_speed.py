"""`afbench audit` on two artifact directories, its figures beside a floor measured in the same
run: the demo pipeline's own results/<revision> (target: <= 2 s CPU), and a directory at the
official scale times 100 (34,100 tasks x 45 models: the release, its catalog, 45 model imports,
their comparison and the artifact manifest; target: <= 30 s CPU, <= 512 MiB). The floor is
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
        subprocess.run([*map(str, chain.fetch()), "--all-models"], cwd=root, env=ENV, check=True)
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
    figures("34,100 tasks x 45 models", scale_directory(), rounds, 30, 512)
    print()
    print(
        "floor: every file of the directory read once and hashed (SHA-256) in one Python "
        "process; CPU is user + system of the process tree."
    )


if __name__ == "__main__":
    main()
