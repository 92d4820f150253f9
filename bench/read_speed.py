"""Read speed of the artifacts, old readers against new, in one run: the readers that issue 30
put behind the declarations (afbench.kinds), on the benchmark's largest release.

Builds the release of bench/import_speed.py (45 models x 34,100 tasks) with this work tree's
package: its catalog, the 45 model imports, the comparison summary and the report's analysis,
in bench/work/read-speed/folder/ (the bytes are the same on both sides: the declarations keep
every artifact byte-identical). Then runs the same reads in fresh processes, alternating the
package at REF (default `main`, from `git archive`) and this work tree's, ROUNDS times each:

  outcomes     `official.read_outcomes` of each import with the catalog's order (the fast
               reader of the comparison and the report);
  strict       each import read whole by the strict reader (before: records.read_record;
               now: kinds.MODEL_IMPORT.read, which checks every field's type as well);
  frames       `frames.official_results`, `leaderboard` and `comparisons` over the folder;
  analysis     the report's analysis read whole (before: read_record; now: ANALYSIS.read).

Prints the median seconds per phase, wall and CPU, each side's, and the ratios new/old.

Usage: python bench/read_speed.py [REF] [--rounds N] [--reuse]"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "bench" / "work" / "read-speed"
FOLDER = WORK / "folder"
PHASES = ("outcomes", "strict", "frames", "analysis")


def build() -> None:
    """The artifacts, written by this work tree's package."""
    sys.path.insert(0, str(REPO / "bench"))
    sys.path.insert(0, str(REPO / "scripts"))
    import import_speed

    from afbench.cli.actions import render_report
    from afbench.cli.signatures import values
    from afbench.core.fsutil import json_bytes
    from afbench.imports import official
    from afbench.imports.compare import reduced, summarize
    from afbench.kinds import RECEIPT, VERIFIED_FILE
    from afbench.release.fetch import combine_receipt
    from afbench.release.identity import identity
    from afbench.tasks import catalog as catalog_module

    info = import_speed.build_release()
    release = WORK.parent / "import-speed" / "release"
    shutil.rmtree(FOLDER, ignore_errors=True)
    (FOLDER / "imports").mkdir(parents=True)
    columns = {k: {f: f for f in fields} for k, fields in info["fields"].items()}
    sha = info["sha256"]
    pinned = identity(import_speed.RELEASE)

    def entry(name: str) -> dict:
        return {"path": name, "actual_sha256": sha[name]}

    names = ("MANIFEST.csv", "SOURCES.csv")
    catalog = catalog_module.build_catalog(
        *(((release / n).read_bytes(), entry(n)) for n in names),
        columns,
        {"tasks": 341 * import_speed.TASK_SCALE, "sources": 24, "obligations": 1155 * 100},
        pinned,
        "synthetic demo data",
    )
    (FOLDER / "catalog.json").write_bytes(json_bytes(catalog))
    verified = [
        VERIFIED_FILE.record(
            release=pinned,
            source_kind="dir",
            license="synthetic demo data",
            file={
                "key": key,
                "kind": kind,
                "path": path,
                "source": "dir",
                "expected_sha256": sha[path],
                "actual_sha256": sha[path],
                "size": (release / path).stat().st_size,
                "verified": True,
            },
        )
        for key, kind, path in [
            ("manifest", "manifest", "MANIFEST.csv"),
            ("sources", "sources", "SOURCES.csv"),
            *((slug, "results", f"results/{slug}.csv") for slug in info["models"]),
        ]
    ]
    receipt = combine_receipt(verified, [])
    assert RECEIPT.check(receipt, "receipt")
    (WORK / "receipt.json").write_bytes(json_bytes(receipt))
    compared, paths = [], []
    for slug in info["models"]:
        path = f"results/{slug}.csv"
        imported = official.import_model(
            catalog,
            ((release / path).read_bytes(), entry(path)),
            official.ModelSpec(slug, slug, "source-present"),
            columns["results"],
            "source-present",
            200,
        )
        paths.append(FOLDER / "imports" / f"{slug}.json")
        paths[-1].write_bytes(json_bytes(imported))
        compared.append(reduced(imported))
        del imported
    summary = summarize(compared, False)
    (FOLDER / "summary.json").write_bytes(json_bytes(summary))
    given = {"summary": FOLDER / "summary.json", "imports": paths}
    given |= {"catalog": FOLDER / "catalog.json", "receipt": WORK / "receipt.json"}
    given |= {"html": WORK / "report" / "index.html", "analysis": FOLDER / "analysis.json"}
    render_report(values("render-report", **given, confidence=0.95, figure=None))
    (WORK / "built.json").write_text(json.dumps({"models": len(paths)}))


def old_package(ref: str) -> Path:
    root = WORK / f"old-{ref}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", ref, "scripts/afbench"], cwd=REPO, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root / "scripts"


def child(scripts: str) -> None:
    sys.path.insert(0, scripts)
    import pandas  # noqa: F401  (imported before the clock: both sides import it)

    from afbench import frames
    from afbench.imports import official

    assert Path(official.__file__).is_relative_to(scripts), official.__file__
    try:
        from afbench import kinds

        strict = kinds.MODEL_IMPORT.read
        whole = kinds.ANALYSIS.read
    except ImportError:  # the package before the declarations
        from afbench.records import ANALYSIS, MODEL_IMPORT, read_record

        def strict(path):
            return read_record(path, MODEL_IMPORT)

        def whole(path):
            return read_record(path, ANALYSIS)

    catalog = json.loads((FOLDER / "catalog.json").read_text())
    order = official.task_order(catalog)
    imports = sorted((FOLDER / "imports").glob("*.json"))
    wall, cpu = {}, {}

    def timed(phase: str, work) -> None:
        c, t = time.process_time(), time.perf_counter()
        work()
        wall[phase], cpu[phase] = time.perf_counter() - t, time.process_time() - c

    def outcomes():
        for path in imports:
            official.read_outcomes(path, order)

    def read_whole():
        for path in imports:
            strict(path)

    def tables():
        folder = frames.Folder(FOLDER)
        assert len(frames.official_results(folder)) == len(imports) * len(order.task_ids)
        frames.leaderboard(folder)
        frames.comparisons(folder)

    timed("outcomes", outcomes)
    timed("strict", read_whole)
    timed("frames", tables)
    timed("analysis", lambda: whole(FOLDER / "analysis.json"))
    print(json.dumps({"wall": wall, "cpu": cpu}))


def side(scripts: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(scripts)], capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"{scripts}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
        return
    args = sys.argv[1:]
    rounds = 3
    if "--rounds" in args:
        at = args.index("--rounds")
        rounds = int(args[at + 1])
        del args[at : at + 2]
    reuse = "--reuse" in args
    args = [a for a in args if a != "--reuse"]
    ref = args[0] if args else "main"
    if not (reuse and (WORK / "built.json").is_file()):
        started = time.perf_counter()
        build()
        print(f"artifacts built in {time.perf_counter() - started:.0f} s")
    models = json.loads((WORK / "built.json").read_text())["models"]
    print(f"{models} model imports of 34,100 tasks, their summary and analysis; {rounds} rounds")
    sides = {"old": old_package(ref), "new": REPO / "scripts"}
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for _ in range(rounds):  # alternating, so that a busy moment falls on both sides
        for name in ("old", "new"):
            runs[name].append(side(sides[name]))
    header = ("phase", f"old ({ref}) s", "new s", "new/old", "old cpu s", "new cpu s", "new/old")
    rows = [header]
    for phase in PHASES:
        a, b, ca, cb = (
            statistics.median(r[kind][phase] for r in runs[name])
            for name, kind in (("old", "wall"), ("new", "wall"), ("old", "cpu"), ("new", "cpu"))
        )
        rows.append(
            (
                phase,
                f"{a:.3f}",
                f"{b:.3f}",
                f"{b / a:.2f}",
                f"{ca:.3f}",
                f"{cb:.3f}",
                f"{cb / ca:.2f}",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for row in rows:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )


if __name__ == "__main__":
    main()
