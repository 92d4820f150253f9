"""Only the "harbor import" section of bench/run.py: `afbench import-run` as a user runs it on
job folders of realistic shares (bench/run.py harbor_jobs), against the open-read-parse floor
(bench/run.py READ_FLOOR), the two alternating within each round; medians of wall and CPU
(user + system of the process tree). Optionally leaves each import's outputs in --keep DIR (to
compare them byte for byte across commits).

Usage: python bench/harbor_import.py [--trials N ...] [--rounds R] [--keep DIR]"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    bench.WORK.mkdir(parents=True, exist_ok=True)
    bench.byte_compile(bench.REPO / "scripts")
    side = bench.Side("new", "this tree", bench.REPO, bench.ENV)
    root, selection, task_ids = bench.selection_and_tasks(side)
    chain = bench.Chain(root, side)
    for trials in args.trials:
        job = bench.harbor_jobs(trials, task_ids)
        out = chain.out / f"run-{trials}"

        def fresh(out=out):
            shutil.rmtree(out, ignore_errors=True)

        imported = [
            *[bench.AFBENCH, "import-run", "--selection", selection, "--name", f"bench-{trials}"],
            *["--kind", "harbor", "--path", job, "--output-dir", out],
        ]
        got = bench.side_by_side(
            args.rounds,
            {
                "floor": ([sys.executable, "-c", bench.READ_FLOOR, job], root, None),
                "import": (imported, root, fresh),
            },
        )
        r, f = got["import"], got["floor"]
        print(
            f"{trials:>7} trials: floor wall {f.seconds:.3f} s cpu {f.cpu:.3f} s "
            f"({f.cpu / trials * 1e6:.1f} us/trial) | import-run wall {r.seconds:.3f} s "
            f"cpu {r.cpu:.3f} s ({r.cpu / trials * 1e6:.1f} us/trial, {r.mib:.0f} MiB) | "
            f"cpu ratio {r.cpu / f.cpu:.2f}x, wall ratio {r.seconds / f.seconds:.2f}x "
            f"(target cpu <= 2x: {'met' if r.cpu <= 2 * f.cpu else 'MISSED'})",
            flush=True,
        )
        if args.keep:
            shutil.rmtree(args.keep / str(trials), ignore_errors=True)
            shutil.copytree(out, args.keep / str(trials))


if __name__ == "__main__":
    main()
