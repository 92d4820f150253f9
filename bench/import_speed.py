"""Import speed of the official results, old readers against new, in one run.

Builds the benchmark's largest release in memory (`demo.generate_release(task_scale=100,
model_scale=5)`: 45 models x 34,100 tasks), writes it to bench/work/import-speed/, then runs
the same per-model work in two fresh processes, one with the package as it is at REF (default
`main`, taken with `git archive`) and one with this work tree's package:

  catalog  `catalog.build_catalog` (MANIFEST and SOURCES parsed and cross-checked), once;
  results  `official.parse_results` on each model's CSV;
  summary  `official.summarize_model` on its records;
  json     `fsutil.json_bytes` of the import (the bytes `afbench import-model` writes).

Prints seconds per phase summed over the 45 models, the ratios new/old, and each process's
peak resident memory; checks that both sides produce byte-identical JSON.

Usage: python bench/import_speed.py [REF] [--reuse]   (--reuse: the release already written)"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "bench" / "work" / "import-speed"
PHASES = ("catalog", "results", "summary", "json")
# the release block every artifact carries (release.identity's keys, in its order)
RELEASE = {
    "name": "bench",
    "repository": "bench/bench",
    "revision": "0" * 40,
    "synthetic": True,
    "lean": "v4.32.2",
    "mathlib": "0" * 40,
    "harbor": "0.22.0",
    "nominal_budget_usd": 200.0,
    "license": "synthetic",
    "dates": dict.fromkeys(
        ("release_page", "manuscript_cover", "software_citation", "first_public_release")
    ),
    "images": [],
}
TASK_SCALE, MODEL_SCALE = 100, 5


def build_release() -> dict:
    """The release, written to WORK; returns what a child needs to know about it."""
    sys.path.insert(0, str(REPO / "scripts"))
    from afbench.imports.official import RESULT_FIELDS
    from afbench.release import demo
    from afbench.tasks.catalog import MANIFEST_FIELDS, SOURCES_FIELDS

    started = time.perf_counter()
    files = demo.generate_release(TASK_SCALE, MODEL_SCALE)
    seconds = time.perf_counter() - started
    shutil.rmtree(WORK, ignore_errors=True)
    for rel, data in files.items():
        (WORK / "release" / rel).parent.mkdir(parents=True, exist_ok=True)
        (WORK / "release" / rel).write_bytes(data)
    models = sorted(demo.scaled_models(TASK_SCALE, MODEL_SCALE))
    info = {
        "models": models,
        "sha256": {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()},
        "bytes": sum(len(data) for data in files.values()),
        "generate_s": seconds,
        # the headers this tree's demo writes: each side's config maps every column to itself
        "fields": {
            "manifest": list(MANIFEST_FIELDS),
            "sources": list(SOURCES_FIELDS),
            "results": list(RESULT_FIELDS),
        },
    }
    (WORK / "release.json").write_text(json.dumps(info))
    return info


def old_package(ref: str) -> Path:
    """The package at `ref`, unpacked where a child can put it first on sys.path."""
    root = Path(tempfile.mkdtemp(prefix="old-", dir=WORK))
    archive = subprocess.run(
        ["git", "archive", ref, "scripts/afbench"], cwd=REPO, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    return root / "scripts"


class Clock:
    """Wall and CPU seconds per phase."""

    def __init__(self) -> None:
        self.wall = dict.fromkeys(PHASES, 0.0)
        self.cpu = dict.fromkeys(PHASES, 0.0)

    def run(self, phase: str, fn, *args):
        c, t = time.process_time(), time.perf_counter()
        result = fn(*args)
        self.wall[phase] += time.perf_counter() - t
        self.cpu[phase] += time.process_time() - c
        return result


def child(scripts: str) -> None:
    """One side: every model's import, timed per phase. Prints one JSON line.

    With today's API (`official.ModelSpec`) the catalog is built once, as `afbench tasks`
    does; with the API before the issue-12 renovation, `import_model` re-parsed MANIFEST and
    SOURCES for every model, so that is done (and timed as `catalog`) for every model."""
    sys.path.insert(0, scripts)
    started = time.perf_counter()
    from afbench.core.fsutil import json_bytes
    from afbench.imports import official
    from afbench.tasks import catalog as catalog_module

    if "import pandas" in Path(catalog_module.__file__).with_name("csvtable.py").read_text():
        import pandas  # noqa: F401  (imported on first use; counted here, not in a phase)
    import_s = time.perf_counter() - started
    assert Path(catalog_module.__file__).is_relative_to(scripts), catalog_module.__file__
    info = json.loads((WORK / "release.json").read_text())
    release = WORK / "release"
    columns = {kind: {field: field for field in fields} for kind, fields in info["fields"].items()}
    names = {"manifest": "MANIFEST.csv", "sources": "SOURCES.csv"}
    sha = info["sha256"]
    counts = {"tasks": 341 * TASK_SCALE, "sources": 24, "obligations": 1155 * TASK_SCALE}
    manifest_bytes = (release / names["manifest"]).read_bytes()
    sources_bytes = (release / names["sources"]).read_bytes()
    clock = Clock()
    legacy = not hasattr(official, "ModelSpec")

    def release_tasks():
        tasks, task_extra = catalog_module.parse_manifest(
            manifest_bytes, names["manifest"], columns["manifest"]
        )
        rows, source_extra = catalog_module.parse_sources(
            sources_bytes, names["sources"], columns["sources"]
        )
        catalog_module.cross_check(tasks, rows, counts, names)
        meta = {
            "inputs": {name: sha[name] for name in names.values()},
            "extra_columns": {names["manifest"]: task_extra, names["sources"]: source_extra},
        }
        return tasks, meta

    if not legacy:
        catalog = clock.run(
            "catalog",
            catalog_module.build_catalog,
            (manifest_bytes, {"path": names["manifest"], "actual_sha256": sha[names["manifest"]]}),
            (sources_bytes, {"path": names["sources"], "actual_sha256": sha[names["sources"]]}),
            columns,
            counts,
            RELEASE,
            "synthetic demo data",
        )
        manifest = {t["task_id"]: t for t in catalog["tasks"]}
    else:
        config = {"release": {**RELEASE, "synthetic": True}, "models": {}}
        for key in ("lean", "mathlib", "harbor"):
            config["release"][key] = None
    digests = {}
    for slug in info["models"]:
        path = f"results/{slug}.csv"
        data = (release / path).read_bytes()
        if legacy:
            tasks, meta = clock.run("catalog", release_tasks)
            manifest = {t["task_id"]: t for t in tasks}
        records, constants, extra = clock.run(
            "results",
            official.parse_results,
            data,
            path,
            columns["results"],
            manifest,
            "source-present",
        )
        if legacy:
            config["models"][slug] = {"display_name": slug}

            class Spec:
                pass

            spec = Spec()
            spec.path, spec.sha256 = path, sha[path]
            args = (config, slug, records, constants, 200, spec, meta, extra)
        else:
            model = official.ModelSpec(slug, slug, "source-present")
            entry = {"path": path, "actual_sha256": sha[path]}
            args = (catalog, model, records, constants, 200, entry, extra)
        summary = clock.run("summary", official.summarize_model, *args)
        out = clock.run("json", json_bytes, summary)
        digests[slug] = hashlib.sha256(out).hexdigest()
        del records, summary, out, data
    # VmHWM: this process's own peak (ru_maxrss would carry the parent's over exec)
    status = Path("/proc/self/status").read_text()
    peak_mib = int(status.split("VmHWM:")[1].split()[0]) / 1024
    print(
        json.dumps(
            {
                "seconds": clock.wall,
                "cpu": clock.cpu,
                "import_s": import_s,
                "peak_mib": peak_mib,
                "digests": digests,
                "legacy": legacy,
            }
        )
    )


def run_side(scripts: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(scripts)], capture_output=True, text=True
    )
    if out.returncode != 0:
        sys.exit(f"{scripts}: {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
        return
    args = [a for a in sys.argv[1:] if a != "--reuse"]
    ref = args[0] if args else "main"
    reused = WORK / "release.json"
    info = json.loads(reused.read_text()) if "--reuse" in sys.argv and reused.exists() else {}
    if "fields" in info:  # a release.json of an older bench lacks them: built again
        for stale in WORK.glob("old-*"):
            shutil.rmtree(stale)
    else:
        info = build_release()
    print(
        f"release: {len(info['models'])} models x {341 * TASK_SCALE} tasks, "
        f"{info['bytes'] / 2**20:.0f} MiB of CSV, generated in memory in "
        f"{info['generate_s']:.1f} s"
    )
    old = run_side(old_package(ref))
    new = run_side(REPO / "scripts")
    same = old["digests"] == new["digests"]
    if old["legacy"]:
        print(f"{ref} has the API from before issue 12: MANIFEST re-parsed for every model")
    rows = [("phase", f"old ({ref}) s", "new s", "new/old", "old cpu s", "new cpu s", "new/old")]
    for label, phases in [
        *[(p, (p,)) for p in PHASES],
        ("results + summary (per model)", ("results", "summary")),
        ("results + summary + json", ("results", "summary", "json")),
        ("all phases", PHASES),
    ]:
        a = sum(old["seconds"][p] for p in phases)
        b = sum(new["seconds"][p] for p in phases)
        ca = sum(old["cpu"][p] for p in phases)
        cb = sum(new["cpu"][p] for p in phases)
        rows.append(
            (
                label,
                f"{a:.2f}",
                f"{b:.2f}",
                f"{b / a:.2f}",
                f"{ca:.2f}",
                f"{cb:.2f}",
                f"{cb / ca:.2f}",
            )
        )
    blank = ("", "", "")
    rows.append(
        (
            "package import (+ pandas)",
            f"{old['import_s']:.2f}",
            f"{new['import_s']:.2f}",
            "",
            *blank,
        )
    )
    rows.append(("peak memory MiB", f"{old['peak_mib']:.0f}", f"{new['peak_mib']:.0f}", "", *blank))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    if old["legacy"] != new["legacy"]:
        print("per-model JSON: not compared (the artifact format changed in between)")
        return
    print(f"per-model JSON identical on both sides: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
