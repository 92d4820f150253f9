"""`afbench report` at 34,100 tasks x 45 models beside the notebook a user would write instead
(bench/notebook_baseline.py) and beside the report of commit BEFORE, in one run (issue 45).

The inputs are bench/run.py's: its scaled release (100 x the demo's tasks, 5 x its models),
fetched, catalogued, imported and compared by this tree's CLI as the pipeline's rules do. Each
round runs every entry once, in turn (interleaved); CPU is user + system of the whole process
tree, peak the largest process's resident MiB; medians over the rounds. The demo-size report
and the pipeline's render-figures and render-report jobs are timed the same way, this tree
beside BEFORE, and every report's files are compared with BEFORE's byte for byte.

    python bench/report_speed.py [ROUNDS]
"""

from __future__ import annotations

import filecmp
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run as bench

BEFORE = "f3673bb"  # the tree this work started from


def this_tree() -> bench.Side:
    """This work tree's package first on PYTHONPATH, as the older side's is: the venv's
    editable install may point at another checkout."""
    scripts = bench.REPO / "scripts"
    side = bench.Side("new", "this tree", bench.REPO, {**bench.ENV, "PYTHONPATH": str(scripts)})
    where = bench.run(
        [sys.executable, "-c", "import afbench; print(afbench.__file__)"], env=side.env
    )
    if not where.stdout.strip().startswith(str(scripts)):
        raise RuntimeError(f"this tree: afbench loaded from {where.stdout.strip()}")
    return side


def build(task_scale: int, model_scale: int) -> tuple[bench.Chain, bench.Chain]:
    """This tree's chain over the scaled release, imported once, and BEFORE's chain over the
    same import files (hard links: the reader refuses symbolic links)."""
    root = bench.scaled_release(task_scale, model_scale)
    new = bench.Chain(root, this_tree())
    if not (new.out / "summary.json").exists():
        shutil.rmtree(new.release, ignore_errors=True)
        bench.run([*new.fetch(), "--all-models"], root, new.side.env)
        new.reset()
        bench.run(new.tasks(), root, new.side.env)
        for command in [*(new.import_model(slug) for slug in new.models), new.compare()]:
            bench.run(command, root, new.side.env)
    before = bench.Chain(root, bench.archived(BEFORE, "before", f"{BEFORE} (before)"))
    before.reset()
    for path in new.out.glob("*.json"):
        os.link(path, before.out / path.name)
    return new, before


def same_files(first: Path, second: Path) -> bool:
    compared = filecmp.dircmp(first, second)
    if compared.left_only or compared.right_only or compared.diff_files or compared.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(first, second, compared.common_files, shallow=False)
    return (
        not mismatch
        and not errors
        and all(same_files(first / sub, second / sub) for sub in compared.common_dirs)
    )


def line(name: str, r: bench.Run, yardstick: bench.Run | None = None) -> str:
    ratio = f"  CPU {r.cpu / yardstick.cpu:.2f} x" if yardstick else ""
    return f"{name:58s} cpu {r.cpu:6.2f} s  wall {r.seconds:6.2f} s  peak {r.mib:5.0f} MiB{ratio}"


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    bench.byte_compile(bench.REPO / "scripts")
    top_new, top_before = build(100, 5)
    demo_new, demo_before = build(1, 1)
    notebook = [
        sys.executable,
        bench.REPO / "bench/notebook_baseline.py",
        top_new.release / "results",
        top_new.root / "notebook",
    ]
    work = {
        "report (this tree)": (top_new.report(), top_new.root, None, top_new.side.env),
        "notebook": (notebook, top_new.root, None),
        f"report ({BEFORE})": (top_before.report(), top_before.root, None, top_before.side.env),
        "demo-size report (this tree)": (
            *(demo_new.report(), demo_new.root, None, demo_new.side.env),
        ),
        f"demo-size report ({BEFORE})": (
            *(demo_before.report(), demo_before.root, None, demo_before.side.env),
        ),
        "render-figures job (this tree)": (
            *(top_new.render_figures(), top_new.root, None, top_new.side.env),
        ),
        f"render-figures job ({BEFORE})": (
            *(top_before.render_figures(), top_before.root, None, top_before.side.env),
        ),
        "render-report job, figures read (this tree)": (
            *(top_new.render_report(), top_new.root, None, top_new.side.env),
        ),
        f"render-report job, figures read ({BEFORE})": (
            *(top_before.render_report(), top_before.root, None, top_before.side.env),
        ),
    }
    runs = bench.side_by_side(rounds, work)
    print(f"{rounds} rounds, interleaved; medians; 34,100 tasks x 45 models unless said")
    report, nb, old = runs["report (this tree)"], runs["notebook"], runs[f"report ({BEFORE})"]
    print(line("notebook baseline (pandas, Wilson, one bar chart)", nb))
    print(line(f"afbench report ({BEFORE})", old, nb))
    print(line("afbench report (this tree)", report, nb))
    print(
        f"  target CPU <= 3 s: {report.cpu <= 3}; <= 0.5 x notebook: {report.cpu <= 0.5 * nb.cpu}"
    )
    print(f"  this tree / {BEFORE}: CPU {report.cpu / old.cpu:.2f} x")
    for name in ("demo-size report", "render-figures job", "render-report job, figures read"):
        mine, theirs = runs[f"{name} (this tree)"], runs[f"{name} ({BEFORE})"]
        print(line(f"{name} ({BEFORE})", theirs))
        print(line(f"{name} (this tree)", mine, theirs))
    for new, before in ((top_new, top_before), (demo_new, demo_before)):
        for folder in ("html", "jobs") if new is top_new else ("html",):
            same = same_files(new.out / folder, before.out / folder)
            print(f"{new.root.name} {folder}/: the same bytes as {BEFORE}'s: {same}")


if __name__ == "__main__":
    main()
