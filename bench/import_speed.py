"""Import speed of the official results, old readers against new, in one run.

Builds the benchmark's largest release in memory (`demo.generate_release(task_scale=100,
model_scale=5)`: 45 models x 34,100 tasks), writes it to bench/work/import-speed/, then runs
the same per-model work in two fresh processes, one with the package as it is at REF (default
`main`, taken with `git archive`) and one with this work tree's package:

  tasks    what `import_model` does for every model before the results: MANIFEST and SOURCES
           parsed and cross-checked (`catalog.load_release_tasks` without the file reading);
  results  `official.parse_results` on the model's CSV;
  summary  `official.summarize_model` on its records;
  json     `fsutil.json_bytes` of the import (the bytes `afbench import-results` writes).

Prints seconds per phase summed over the 45 models, the ratios new/old, and each process's
peak resident memory; checks that both sides produce byte-identical JSON.

Usage: python bench/import_speed.py [REF]"""

from __future__ import annotations

import hashlib
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "bench" / "work" / "import-speed"
PHASES = ("tasks", "results", "summary", "json")
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
    """One side: every model's import, timed per phase. Prints one JSON line."""
    sys.path.insert(0, scripts)
    import yaml

    started = time.perf_counter()
    from afbench import catalog, official
    from afbench.config import validate_config
    from afbench.fsutil import json_bytes

    import_s = time.perf_counter() - started
    assert Path(catalog.__file__).is_relative_to(scripts), catalog.__file__
    info = json.loads((WORK / "release.json").read_text())
    release = WORK / "release"
    config = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    config.pop("demo", None)
    config["release"]["expected_counts"] = {
        "tasks": 341 * TASK_SCALE,
        "sources": 24,
        "obligations": 1155 * TASK_SCALE,
    }
    config["models"] = {
        slug: {
            "display_name": slug,
            "path": f"results/{slug}.csv",
            "sha256": info["sha256"][f"results/{slug}.csv"],
        }
        for slug in info["models"]
    }
    config = validate_config(config)
    names = {"manifest": "MANIFEST.csv", "sources": "SOURCES.csv"}
    meta = {"inputs": {name: info["sha256"][name] for name in names.values()}}

    class Spec:
        def __init__(self, path: str) -> None:
            self.path, self.sha256 = path, info["sha256"][path]

    seconds = dict.fromkeys(PHASES, 0.0)
    digests = {}
    for slug in info["models"]:
        spec = Spec(f"results/{slug}.csv")
        manifest_bytes = (release / names["manifest"]).read_bytes()
        sources_bytes = (release / names["sources"]).read_bytes()
        data = (release / spec.path).read_bytes()
        t0 = time.perf_counter()
        tasks, task_extra = catalog.parse_manifest(
            manifest_bytes, names["manifest"], config["columns"]["manifest"]
        )
        sources, source_extra = catalog.parse_sources(
            sources_bytes, names["sources"], config["columns"]["sources"]
        )
        catalog.cross_check(tasks, sources, config["release"]["expected_counts"], names)
        meta["extra_columns"] = {names["manifest"]: task_extra, names["sources"]: source_extra}
        t1 = time.perf_counter()
        records, constants, extra = official.parse_results(
            data,
            spec.path,
            config["columns"]["results"],
            {t["task_id"]: t for t in tasks},
            config["models"][slug]["source_condition"],
        )
        t2 = time.perf_counter()
        summary = official.summarize_model(config, slug, records, constants, 200, spec, meta, extra)
        t3 = time.perf_counter()
        out = json_bytes(summary)
        t4 = time.perf_counter()
        for phase, (a, b) in zip(PHASES, [(t0, t1), (t1, t2), (t2, t3), (t3, t4)], strict=True):
            seconds[phase] += b - a
        digests[slug] = hashlib.sha256(out).hexdigest()
        del tasks, sources, records, summary, out, data
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {"seconds": seconds, "import_s": import_s, "peak_mib": peak_mib, "digests": digests}
        )
    )


def run_side(scripts: Path) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(scripts)],
        check=True,
        capture_output=True,
        text=True,
    )
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
    rows = [("phase", f"old ({ref}) s", "new s", "new/old")]
    for label, phases in [
        *[(p, (p,)) for p in PHASES],
        ("results + summary", ("results", "summary")),
        ("tasks + results + summary", ("tasks", "results", "summary")),
        ("all four (as import-results)", PHASES),
    ]:
        a = sum(old["seconds"][p] for p in phases)
        b = sum(new["seconds"][p] for p in phases)
        rows.append((label, f"{a:.2f}", f"{b:.2f}", f"{b / a:.2f}"))
    rows.append(("package import", f"{old['import_s']:.2f}", f"{new['import_s']:.2f}", ""))
    rows.append(("peak memory MiB", f"{old['peak_mib']:.0f}", f"{new['peak_mib']:.0f}", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
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
