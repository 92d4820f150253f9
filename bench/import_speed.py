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

Usage: python bench/import_speed.py [REF]"""

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
MANIFEST_FIELDS = (
    "task_id",
    "source_id",
    "source_ref",
    "target_declaration",
    "n_obligations",
    "workspace",
)
RESULT_FIELDS = (
    "task_id",
    "source_id",
    "target_declaration",
    "n_obligations",
    "success",
    "obligations_accepted",
    "cost_usd",
    "stop_reason",
    "source_condition",
    "scaffold",
    "tools",
    "stopping_policy",
    "finished_at",
)
RELEASE = {
    "name": "bench",
    "repository": "bench/bench",
    "revision": "0" * 40,
    "nominal_budget_usd": 200,
}
TASK_SCALE, MODEL_SCALE = 100, 5


def build_release() -> dict:
    """The release, written to WORK; returns what a child needs to know about it."""
    sys.path.insert(0, str(REPO / "scripts"))
    from afbench import demo

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


def child(scripts: str) -> None:
    """One side: the catalog once, then every model's import, timed per phase. Prints one JSON
    line."""
    sys.path.insert(0, scripts)
    started = time.perf_counter()
    from afbench import catalog as catalog_module
    from afbench import official
    from afbench.fsutil import json_bytes

    import_s = time.perf_counter() - started
    assert Path(catalog_module.__file__).is_relative_to(scripts), catalog_module.__file__
    info = json.loads((WORK / "release.json").read_text())
    release = WORK / "release"
    columns = {
        kind: {field: field for field in fields}
        for kind, fields in {
            "manifest": MANIFEST_FIELDS,
            "sources": ("source_id", "title", "authors", "license", "n_tasks"),
            "results": RESULT_FIELDS,
        }.items()
    }
    entry = {
        name: {"path": name, "actual_sha256": info["sha256"][name]}
        for name in ("MANIFEST.csv", "SOURCES.csv")
    }
    seconds = dict.fromkeys(PHASES, 0.0)
    cpu = dict.fromkeys(PHASES, 0.0)
    c0 = time.process_time()
    t0 = time.perf_counter()
    catalog = catalog_module.build_catalog(
        ((release / "MANIFEST.csv").read_bytes(), entry["MANIFEST.csv"]),
        ((release / "SOURCES.csv").read_bytes(), entry["SOURCES.csv"]),
        columns,
        {"tasks": 341 * TASK_SCALE, "sources": 24, "obligations": 1155 * TASK_SCALE},
        RELEASE,
        "synthetic demo data",
    )
    seconds["catalog"] = time.perf_counter() - t0
    cpu["catalog"] = time.process_time() - c0
    manifest = {t["task_id"]: t for t in catalog["tasks"]}
    digests = {}
    for slug in info["models"]:
        path = f"results/{slug}.csv"
        data = (release / path).read_bytes()
        model = official.ModelSpec(slug, slug, "source-present")
        c0, t0 = time.process_time(), time.perf_counter()
        records, constants, extra = official.parse_results(
            data, path, columns["results"], manifest, model.pinned_condition
        )
        c1, t1 = time.process_time(), time.perf_counter()
        summary = official.summarize_model(
            catalog,
            model,
            records,
            constants,
            200,
            {"path": path, "actual_sha256": info["sha256"][path]},
            extra,
        )
        c2, t2 = time.process_time(), time.perf_counter()
        out = json_bytes(summary)
        c3, t3 = time.process_time(), time.perf_counter()
        for phase, a, b, ca, cb in (
            ("results", t0, t1, c0, c1),
            ("summary", t1, t2, c1, c2),
            ("json", t2, t3, c2, c3),
        ):
            seconds[phase] += b - a
            cpu[phase] += cb - ca
        digests[slug] = hashlib.sha256(out).hexdigest()
        del records, summary, out, data
    # VmHWM: this process's own peak (ru_maxrss would carry the parent's over exec)
    status = Path("/proc/self/status").read_text()
    peak_mib = int(status.split("VmHWM:")[1].split()[0]) / 1024
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu": cpu,
                "import_s": import_s,
                "peak_mib": peak_mib,
                "digests": digests,
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
    ref = sys.argv[1] if len(sys.argv) > 1 else "main"
    info = build_release()
    print(
        f"release: {len(info['models'])} models x {341 * TASK_SCALE} tasks, "
        f"{info['bytes'] / 2**20:.0f} MiB of CSV, generated in memory in "
        f"{info['generate_s']:.1f} s"
    )
    old = run_side(old_package(ref))
    new = run_side(REPO / "scripts")
    same = old["digests"] == new["digests"]
    rows = [("phase", f"old ({ref}) s", "new s", "new/old", "old cpu s", "new cpu s", "new/old")]
    for label, phases in [
        *[(p, (p,)) for p in PHASES],
        ("results + summary (per model)", ("results", "summary")),
        ("results + summary + json", ("results", "summary", "json")),
        ("all (catalog once + 45 imports)", PHASES),
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
    rows.append(("package import", f"{old['import_s']:.2f}", f"{new['import_s']:.2f}", "", *blank))
    rows.append(("peak memory MiB", f"{old['peak_mib']:.0f}", f"{new['peak_mib']:.0f}", "", *blank))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    print(f"per-model JSON identical on both sides: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
