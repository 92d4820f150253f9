"""`afbench import-run` beside Harbor 0.22.0's own reader of the same job folders (issue #45).

Part 1, side by side at 20,000 and 100,000 trials (bench/run.py harbor_jobs: realistic shares,
40% accepted, 54% rejected, 6% errors), the three alternating within each round (A B C A B C):

  harbor     Harbor's own reader, in Harbor's venv (.harbor-venv, Harbor 0.22.0):
             `TrialResult.model_validate_json` of every trial's result.json (which embeds the
             trial's config), counting the rewards (HARBOR_READER);
  floor      open, read and json.loads every trial's result.json (bench/run.py READ_FLOOR);
  import-run `afbench import-run` end to end (reading, checks, summary, tables, writing).

Medians of wall and CPU (user + system of each process tree) and the peak RSS of its largest
process; the target is import-run's CPU <= 0.5 x Harbor's reader's and <= 256 MiB at 100,000.

Part 2, `afbench import-run` alone at 10,000, 100,000 and 1,000,000 trials (one round each,
the 1,000,000-trial folder takes ~12 GB and ~15 minutes to build once), with the growth
exponents of its CPU time and peak memory fitted over the three sizes (log-log least squares;
1 is linear); the targets: peak <= 1 GiB at 1,000,000 and both exponents <= 1.

Usage: python bench/harbor_scale.py [--trials N ...] [--rounds R] [--scale N ...]
       [--no-scale] [--harbor-python PATH]"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench

HARBOR_PYTHON = bench.REPO / ".harbor-venv" / "bin" / "python"
# this tree's package first on PYTHONPATH: a shared venv's `afbench` may be installed from
# another checkout
TREE = {**bench.ENV, "PYTHONPATH": str(bench.REPO / "scripts")}
# Harbor's own reading of a job's trials: each result.json validated as its TrialResult model
HARBOR_READER = (
    "import os, sys\n"
    "from harbor.models.trial.result import TrialResult\n"
    "job = sys.argv[1]\n"
    "rewards = {}\n"
    "for entry in os.scandir(job):\n"
    "    if entry.is_dir():\n"
    "        with open(os.path.join(entry.path, 'result.json'), 'rb') as f:\n"
    "            trial = TrialResult.model_validate_json(f.read())\n"
    "        got = trial.verifier_result.rewards if trial.verifier_result else None\n"
    "        reward = (got or {}).get('reward')\n"
    "        rewards[reward] = rewards.get(reward, 0) + 1\n"
    "print(sorted(rewards.items(), key=repr))\n"
)


def import_command(selection: Path, job: Path, out: Path, trials: int) -> list:
    return [
        *[bench.AFBENCH, "import-run", "--selection", selection, "--name", f"bench-{trials}"],
        *["--kind", "harbor", "--path", job, "--output-dir", out],
    ]


def exponent(sizes: list[int], values: list[float]) -> float:
    """The slope of log(value) over log(size), least squares."""
    xs, ys = [math.log(s) for s in sizes], [math.log(v) for v in values]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="*", default=[20_000, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scale", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--harbor-python", type=Path, default=HARBOR_PYTHON)
    args = parser.parse_args()
    bench.WORK.mkdir(parents=True, exist_ok=True)
    bench.byte_compile(bench.REPO / "scripts")
    where = bench.run([sys.executable, "-c", "import afbench; print(afbench.__file__)"], env=TREE)
    if not where.stdout.strip().startswith(str(bench.REPO / "scripts")):
        sys.exit(f"afbench loads from {where.stdout.strip()}, not this tree")
    side = bench.Side("new", "this tree", bench.REPO, bench.ENV)
    root, selection, task_ids = bench.selection_and_tasks(side)
    out = bench.WORK / "harbor-scale-out"

    def fresh() -> None:
        shutil.rmtree(out, ignore_errors=True)

    print(
        f"{'trials':>9} {'side':11} {'wall s':>8} {'cpu s':>8} {'us/trial':>9} {'peak MiB':>9}",
        flush=True,
    )
    for trials in args.trials:
        job = bench.harbor_jobs(trials, task_ids)
        got = bench.side_by_side(
            args.rounds,
            {
                "harbor": ([args.harbor_python, "-c", HARBOR_READER, job], root, None),
                "floor": ([sys.executable, "-c", bench.READ_FLOOR, job], root, None),
                "import-run": (import_command(selection, job, out, trials), root, fresh, TREE),
            },
        )
        for name, r in got.items():
            print(
                f"{trials:>9} {name:11} {r.seconds:8.2f} {r.cpu:8.2f} "
                f"{r.cpu / trials * 1e6:9.1f} {r.mib:9.0f}",
                flush=True,
            )
        h, f, r = got["harbor"], got["floor"], got["import-run"]
        met = r.cpu <= 0.5 * h.cpu and (trials < 100_000 or r.mib <= 256)
        print(
            f"{trials:>9} import-run / harbor: cpu {r.cpu / h.cpu:.2f}x, wall "
            f"{r.seconds / h.seconds:.2f}x; floor / harbor: cpu {f.cpu / h.cpu:.2f}x; import-run"
            f" / floor: cpu {r.cpu / f.cpu:.2f}x (target cpu <= 0.5x harbor"
            f"{', <= 256 MiB' if trials >= 100_000 else ''}: {'met' if met else 'MISSED'})",
            flush=True,
        )
    if not args.scale:
        return
    runs = []
    for trials in args.scale:
        job = bench.harbor_jobs(trials, task_ids)
        fresh()
        r = bench.measure(import_command(selection, job, out, trials), root, TREE)
        runs.append(r)
        print(
            f"{trials:>9} import-run  {r.seconds:8.2f} {r.cpu:8.2f} "
            f"{r.cpu / trials * 1e6:9.1f} {r.mib:9.0f}",
            flush=True,
        )
    fresh()
    if len(runs) > 1:
        cpu = exponent(args.scale, [r.cpu for r in runs])
        wall = exponent(args.scale, [r.seconds for r in runs])
        mib = exponent(args.scale, [r.mib for r in runs])
        top = runs[-1]
        met = top.mib <= 1024 and cpu <= 1 and mib <= 1
        print(
            f"growth exponents over {', '.join(f'{n:,}' for n in args.scale)} trials: cpu "
            f"{cpu:.2f}, wall {wall:.2f}, peak memory {mib:.2f}; {args.scale[-1]:,} trials "
            f"{top.mib:.0f} MiB (target <= 1024 MiB, exponents <= 1: "
            f"{'met' if met else 'MISSED'})",
            flush=True,
        )


if __name__ == "__main__":
    main()
