"""afbench benchmarks (`make bench`): the pipeline's cost at the official size, side by side with
its orchestration floor and a single-process baseline, and its growth with scale. Prints a
table and writes bench/results.md. Work files go to bench/work/ (git-ignored)."""

from __future__ import annotations

import cProfile
import hashlib
import io
import json
import math
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "bench" / "work"
BIN = Path(sys.executable).parent
SNAKEMAKE, AFBENCH = str(BIN / "snakemake"), str(BIN / "afbench")
sys.path.insert(0, str(REPO / "scripts"))

from afbench import demo  # noqa: E402
from afbench.fsutil import sha256_bytes  # noqa: E402

MEASURE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "r = subprocess.run(sys.argv[2:], cwd=sys.argv[1], stdout=subprocess.DEVNULL, "
    "stderr=subprocess.PIPE); s = time.perf_counter() - t; "
    "m = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss; "
    "print(s, m, r.returncode); sys.stderr.write(r.stderr.decode()[-2000:])"
)


def measure(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of one command, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(cwd), *cmd], capture_output=True, text=True, check=True
    )
    seconds, rss_kib, code = out.stdout.split()
    if code != "0":
        raise RuntimeError(f"{cmd} failed: {out.stderr}")
    return float(seconds), int(rss_kib) / 1024


def median_of(n: int, cmd: list[str], cwd: Path, before=None) -> float:
    times = []
    for _ in range(n):
        if before:
            before()
        times.append(measure(cmd, cwd)[0])
    return statistics.median(times)


def project(name: str) -> Path:
    root = WORK / name
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for part in ("workflow", "profiles", "config", "resources"):
        shutil.copytree(REPO / part, root / part)
    shutil.copy(REPO / "environment.yml", root)
    return root


def noop_workflow(root: Path) -> None:
    """The orchestration floor: the same DAG, every job's command replaced by a no-op."""
    for smk in (root / "workflow/rules").glob("*.smk"):
        text = smk.read_text()
        text = re.sub(
            r'shell:\n(\s+)"\{params\.afbench\} demo repo[^\n]*\n',
            r'shell:\n\1"mkdir -p {output}"\n',
            text,
        )
        text = re.sub(
            r'shell:\n(\s+)"\{params\.afbench\}[^\n]*\n(\s+"[^\n]*\n)?',
            r'shell:\n\1"for f in {output}; do mkdir -p $(dirname $f); '
            r'touch $f; done"\n',
            text,
        )
        smk.write_text(text)


def clean(root: Path):
    def run():
        shutil.rmtree(root / "results", ignore_errors=True)
        shutil.rmtree(root / ".snakemake", ignore_errors=True)

    return run


def official_size(rows: list, notes: dict) -> None:
    real, floor = project("demo"), project("floor")
    noop_workflow(floor)
    version = median_of(5, [SNAKEMAKE, "--version"], real)
    tiny = WORK / "one-rule"
    tiny.mkdir(parents=True, exist_ok=True)
    (tiny / "Snakefile").write_text('rule all:\n    input: "x"\n')
    (tiny / "x").touch()
    one_rule = median_of(5, [SNAKEMAKE, "--cores", "1"], tiny)
    help_time = median_of(5, [AFBENCH, "--help"], real)
    cold = median_of(3, [SNAKEMAKE], real, before=clean(real))
    noop = median_of(5, [SNAKEMAKE], real)
    floor_cold = median_of(3, [SNAKEMAKE], floor, before=clean(floor))
    overlay = real / "change.yaml"
    limits = iter(range(1, 100))

    def change():
        overlay.write_text(f"selections: {{demo-two-sources: {{limit: {next(limits)}}}}}\n")

    args = [SNAKEMAKE, "--configfile", "config/demo.yaml", str(overlay)]
    change()
    subprocess.run(args, cwd=real, check=True, capture_output=True)
    change()
    dry = subprocess.run([*args, "-n"], cwd=real, check=True, capture_output=True, text=True)
    jobs = dry.stdout.split("Job stats:")[1].split("total")[0].split()[4:]
    one_change = median_of(3, args, real, before=change)
    base_dir = WORK / "baseline"
    shutil.rmtree(base_dir, ignore_errors=True)
    base_dir.mkdir(parents=True)
    shutil.copytree(REPO / "config", base_dir / "config")
    shutil.copytree(REPO / "resources", base_dir / "resources")
    subprocess.run(
        [AFBENCH, "demo", "repo", "--out", "results/demo-upstream"],
        cwd=base_dir,
        check=True,
        capture_output=True,
    )
    revision = yaml.safe_load((REPO / "config/demo.yaml").read_text())["release"]["revision"]
    baseline = median_of(
        3,
        [sys.executable, str(REPO / "bench/baseline.py"), "config/demo.yaml"],
        base_dir,
        before=lambda: shutil.rmtree(base_dir / "results" / revision, ignore_errors=True),
    )
    rows += [
        ("official size", "snakemake --version", version, "reference", ""),
        (
            "official size",
            "no-op of a one-rule workflow (Snakemake's own floor)",
            one_rule,
            "reference",
            "",
        ),
        ("official size", "afbench --help", help_time, "< 0.3 s", _ok(help_time < 0.3)),
        ("official size", "orchestration floor (cold, no-op jobs)", floor_cold, "reference", ""),
        (
            "official size",
            "cold full run",
            cold,
            f"< 1.5 x floor ({1.5 * floor_cold:.2f} s)",
            _ok(cold < 1.5 * floor_cold) + f" ratio {cold / floor_cold:.2f}",
        ),
        (
            "official size",
            "no-op rerun",
            noop,
            f"< version + 0.3 s ({version + 0.3:.2f} s)",
            _ok(noop < version + 0.3) + f" +{noop - version:.2f} s",
        ),
        (
            "official size",
            "one selection changed",
            one_change,
            "< 2 s",
            _ok(one_change < 2)
            + " reran "
            + ", ".join(f"{jobs[i]} x{jobs[i + 1]}" for i in range(0, len(jobs), 2)),
        ),
        ("official size", "single-process baseline", baseline, "< 1 s", _ok(baseline < 1)),
    ]
    notes["cold_vs_baseline"] = cold / baseline


def _ok(flag: bool) -> str:
    return "met" if flag else "MISSED"


def scaled_release(task_scale: int, model_scale: int) -> Path:
    root = WORK / f"release-{task_scale}x-{model_scale}m"
    cfg_path = root / "config.yaml"
    if cfg_path.exists():
        return root
    files = demo.generate_release(task_scale, model_scale)
    mirror = root / "mirror"
    for rel, data in files.items():
        (mirror / rel).parent.mkdir(parents=True, exist_ok=True)
        (mirror / rel).write_bytes(data)
    cfg = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    del cfg["demo"]
    cfg["release"]["revision"] = hashlib.sha1(f"{task_scale}x{model_scale}".encode()).hexdigest()
    cfg["release"]["expected_counts"] = {
        "tasks": 341 * task_scale,
        "sources": 24,
        "obligations": 1155 * task_scale,
    }
    cfg["source"] = {"kind": "dir", "mirror": str(mirror), "max_bytes": 500_000_000}
    cfg["files"]["manifest"]["sha256"] = sha256_bytes(files["MANIFEST.csv"])
    cfg["files"]["sources"]["sha256"] = sha256_bytes(files["SOURCES.csv"])
    cfg["models"] = {
        slug: {
            "display_name": slug,
            "path": f"results/{slug}.csv",
            "sha256": sha256_bytes(files[f"results/{slug}.csv"]),
        }
        for slug in demo.scaled_models(task_scale, model_scale)
    }
    cfg["selections"] = {"all": {}}
    cfg["plans"] = {"items": []}
    cfg["results_dir"] = str(root / "results")
    cfg_path.write_text(yaml.safe_dump(cfg))
    return root


def growth(rows: list, notes: dict) -> None:
    scales = [(1, 1), (10, 1), (100, 1), (1, 5), (10, 5), (100, 5)]
    points = {}
    for task_scale, model_scale in scales:
        root = scaled_release(task_scale, model_scale)
        shutil.rmtree(root / "results", ignore_errors=True)
        cfg = ["--config", str(root / "config.yaml")]
        measure([AFBENCH, "fetch", *cfg], root)
        stages = {
            "catalog": [AFBENCH, "tasks", *cfg],
            "import": [AFBENCH, "import-results", *cfg],
            "report": [AFBENCH, "report", *cfg],
        }
        size = 341 * task_scale * 9 * model_scale
        for stage, cmd in stages.items():
            seconds, mib = measure(cmd, root)
            points.setdefault(stage, []).append(
                (size if stage != "catalog" else 341 * task_scale, seconds)
            )
            rows.append(
                (
                    "growth",
                    f"{stage}: {341 * task_scale} tasks x {9 * model_scale} models",
                    seconds,
                    f"{mib:.0f} MiB peak",
                    "",
                )
            )
    for stage, pts in points.items():
        (n1, t1), (n2, t2) = min(pts), max(pts)
        exponent = math.log(t2 / t1) / math.log(n2 / n1) if n2 > n1 else float("nan")
        notes[f"growth_{stage}"] = exponent
        rows.append(
            (
                "growth",
                f"{stage}: growth exponent (time ~ n^k)",
                exponent,
                "k <= 1 (linear or better)",
                _ok(exponent <= 1.05),
            )
        )


def harbor_jobs(trials: int) -> Path:
    """A Harbor 0.22.0 job directory with `trials` trials, made from a real fixture trial."""
    root = WORK / f"harbor-{trials}"
    if (root / "job" / "config.json").exists():
        return root
    fixture = REPO / "tests/fixtures/harbor-0.22.0-jobs/demo-nop"
    template = json.loads(next(fixture.glob("hello-pass__*/result.json")).read_text())
    job = root / "job"
    job.mkdir(parents=True)
    shutil.copy(fixture / "config.json", job / "config.json")
    manifest = scaled_release(100, 1) / "mirror/MANIFEST.csv"
    task_ids = [line.split(",")[0] for line in manifest.read_text().splitlines()[1:]]
    for i in range(trials):
        task = task_ids[i % len(task_ids)]
        doc = dict(
            template,
            task_name=task,
            trial_name=f"{task}__{i:07d}",
            verifier_result={"rewards": {"reward": float(i % 3 == 0)}},
        )
        trial = job / doc["trial_name"]
        trial.mkdir()
        (trial / "result.json").write_text(json.dumps(doc))
    return root


def harbor(rows: list) -> None:
    release = scaled_release(100, 1)
    cfg = ["--config", str(release / "config.yaml")]
    subprocess.run([AFBENCH, "fetch", *cfg], check=True, capture_output=True)
    subprocess.run([AFBENCH, "tasks", *cfg], check=True, capture_output=True)
    for trials in (1_000, 10_000, 100_000):
        job = harbor_jobs(trials) / "job"
        seconds, mib = measure(
            [
                AFBENCH,
                "import-run",
                *cfg,
                "--name",
                f"bench-{trials}",
                "--kind",
                "harbor",
                "--path",
                str(job),
                "--selection",
                "all",
            ],
            release,
        )
        target = "< 60 s, < 1024 MiB" if trials == 100_000 else ""
        verdict = _ok(seconds < 60 and mib < 1024) if trials == 100_000 else ""
        rows.append(
            ("harbor import", f"{trials} trials", seconds, f"{mib:.0f} MiB peak " + target, verdict)
        )


def profile_slowest() -> str:
    """cProfile of the report stage (the slowest job at the official size)."""
    root = WORK / "baseline"
    from argparse import Namespace

    from afbench import commands

    profiler = cProfile.Profile()
    cwd = Path.cwd()
    try:
        import os

        os.chdir(root)
        profiler.runcall(
            commands.cmd_report, Namespace(config=["config/demo.yaml"], config_json=None)
        )
    finally:
        os.chdir(cwd)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(12)
    return "\n".join(line for line in out.getvalue().splitlines() if line.strip())[:4000]


def main() -> None:
    rows: list = []
    notes: dict = {}
    started = time.perf_counter()
    official_size(rows, notes)
    growth(rows, notes)
    harbor(rows)
    profile = profile_slowest()
    table = [
        "| section | measurement | seconds | target / memory | result |",
        "|---|---|---:|---|---|",
    ]
    table += [f"| {a} | {b} | {c:.3f} | {d} | {e} |" for a, b, c, d, e in rows]
    text = "\n".join(table)
    print(text)
    machine = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    (REPO / "bench/results.md").write_text(
        "# afbench benchmark results\n\n"
        f"One run of `make bench` on this machine ({machine} cores), "
        f"{time.strftime('%Y-%m-%d')}, in {time.perf_counter() - started:.0f} s. Times are "
        "wall-clock medians (3 runs for cold runs, 5 for no-op ones); every figure was "
        "measured in the same run.\n\n"
        + text
        + "\n\n## Where the time goes: the report stage (cProfile, cumulative)\n\n```\n"
        + profile
        + "\n```\n"
    )


if __name__ == "__main__":
    main()
