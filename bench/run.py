"""afbench benchmarks (`make bench`): every speed target measured side by side in one run,
with CPU time (user + system of the whole process tree) beside wall time, and results.md
written from that run. Work files go to bench/work/ (git-ignored).

Three sides are measured, each with its own package and workflow:

  new       this work tree;
  today     commit TODAY (3ffd83b: last round's start-up and cold-demo yardstick), from
            `git archive`;
  last      commit LAST (ccbdf37: last round's report, the report's yardstick), from
            `git archive`.

An older side runs from its archive with its `scripts/` first on PYTHONPATH, so this venv's
`afbench` entry point and Snakemake's `import afbench` load that commit's package (as
bench/import_speed.py runs an older package); the installed libraries are the same on every
side (Snakemake imports pandas whenever it is installed, so every side pays for that). The two
sides of a ratio alternate within each round.

bench/stats_speed.py (the report's exact McNemar tests at 45 and 200 models) runs as part of
this bench, and so do bench/coverage.py (the report's intervals, tests and planner over
2,000 simulated releases a setting, ~1 minute: its tables become the section "Statistics
against simulated releases"), bench/sequential.py (the sequential test's error and spend in
seeded simulations, its yardstick the fixed-n planner's count) and bench/harbor_speed.py
(the Harbor reader against the previous round's, on the same job folder) when it exists:
their output is printed and copied into results.md as it stands. bench/harbor_speed.py may
build its folder with harbor_jobs(trials, task_ids) from this module."""

from __future__ import annotations

import collections
import cProfile
import csv
import hashlib
import io
import json
import math
import os
import platform
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from shlex import quote

import yaml

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "bench" / "work"
BIN = Path(sys.executable).parent
SNAKEMAKE, AFBENCH = str(BIN / "snakemake"), str(BIN / "afbench")
TODAY, LAST = "3ffd83b", "ccbdf37"
# the rules call `afbench` from PATH: the venv's bin comes first, as `make` sets it
ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
}
sys.path.insert(0, str(REPO / "scripts"))

from afbench.core.fsutil import sha256_bytes  # noqa: E402
from afbench.release import demo  # noqa: E402

MEASURE = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "r = subprocess.run(sys.argv[2:], cwd=sys.argv[1], stdout=subprocess.DEVNULL, "
    "stderr=subprocess.PIPE); s = time.perf_counter() - t; "
    "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(s, u.ru_maxrss, u.ru_utime + u.ru_stime, r.returncode); "
    "sys.stderr.write(r.stderr.decode()[-2000:])"
)


# --- the sides ------------------------------------------------------------------------------
@dataclass
class Side:
    name: str  # new, today, last
    label: str
    root: Path  # workflow/, profiles/, config/, resources/, scripts/
    env: dict


def byte_compile(scripts: Path) -> None:
    """The package's bytecode, as `pip install` writes it for an installed package (and as
    Python writes it on a first run): no side pays for compiling in its first job."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(scripts)], check=True)


def archived(ref: str, name: str, label: str) -> Side:
    """The tree at `ref` (what a project needs), unpacked, its package first on PYTHONPATH."""
    root = WORK / "refs" / ref
    if not (root / "scripts/afbench").is_dir():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        parts = ["workflow", "profiles", "config", "resources", "scripts", "environment.yml"]
        archive = subprocess.run(
            ["git", "archive", ref, *parts], cwd=REPO, check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    byte_compile(root / "scripts")
    side = Side(name, label, root, {**ENV, "PYTHONPATH": str(root / "scripts")})
    where = run([sys.executable, "-c", "import afbench; print(afbench.__file__)"], env=side.env)
    if not where.stdout.strip().startswith(str(root)):
        raise RuntimeError(f"{label}: afbench loaded from {where.stdout.strip()}")
    return side


def sides() -> dict[str, Side]:
    byte_compile(REPO / "scripts")
    return {
        "new": Side("new", "this tree", REPO, ENV),
        "today": archived(TODAY, "today", f"{TODAY} (last round's start-up)"),
        "last": archived(LAST, "last", f"{LAST} (last round's report)"),
    }


# --- measuring ------------------------------------------------------------------------------
class Run:
    """One command's wall seconds, CPU seconds (user + system, children included) and peak
    resident MiB (its largest process)."""

    def __init__(self, seconds: float, cpu: float, mib: float) -> None:
        self.seconds, self.cpu, self.mib = seconds, cpu, mib

    def __add__(self, other: Run) -> Run:
        return Run(self.seconds + other.seconds, self.cpu + other.cpu, max(self.mib, other.mib))


def measure(cmd: list, cwd: Path, env: dict | None = None) -> Run:
    """One command in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(cwd), *map(str, cmd)],
        capture_output=True,
        text=True,
        check=True,
        env=env or ENV,
    )
    seconds, rss_kib, cpu, code = out.stdout.split()
    if code != "0":
        raise RuntimeError(f"{cmd} failed: {out.stderr}")
    return Run(float(seconds), float(cpu), int(rss_kib) / 1024)


def medians(runs: list[Run]) -> Run:
    return Run(
        statistics.median(r.seconds for r in runs),
        statistics.median(r.cpu for r in runs),
        max(r.mib for r in runs),
    )


def side_by_side(n: int, work: dict[str, tuple]) -> dict[str, Run]:
    """`n` rounds; in each, every entry (command, folder, before[, environment]) runs once,
    after its `before`, in turn."""
    runs: dict[str, list[Run]] = {name: [] for name in work}
    for _ in range(n):
        for name, (cmd, cwd, before, *env) in work.items():
            if before:
                before()
            runs[name].append(measure(cmd, cwd, *env))
    return {name: medians(r) for name, r in runs.items()}


def run(cmd: list, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, env=env or ENV
    )
    if result.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
    return result


ROWS: list[tuple[str, ...]] = []


def row(section: str, what: str, r: Run | float, target: str = "", result: str = "") -> None:
    seconds, cpu = (r.seconds, f"{r.cpu:.3f}") if isinstance(r, Run) else (r, "")
    ROWS.append((section, what, f"{seconds:.3f}", cpu, target, result))
    print(f"{section:13} | {what:62} | {seconds:8.3f} | {cpu:>8} | {target} | {result}", flush=True)


def _ok(flag: bool) -> str:
    return "met" if flag else "MISSED"


# --- the demo at the official size ----------------------------------------------------------
def project(side: Side, name: str) -> Path:
    root = WORK / name
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for part in ("workflow", "profiles", "config", "resources"):
        shutil.copytree(side.root / part, root / part)
    shutil.copy(side.root / "environment.yml", root)
    return root


SHELL = re.compile(r'shell:\n(?P<pad>[ \t]+)"afbench [^\n]*\n(?:(?P=pad)"[^\n]*\n)*')


def noop_workflow(root: Path) -> int:
    """The orchestration floor: the same DAG, every job's `afbench` command replaced by one that
    only creates the job's declared outputs (a directory output with mkdir) and its log."""
    replaced = 0
    for smk in (root / "workflow/rules").glob("*.smk"):
        rules = re.split(r"\n(?=(?:rule|checkpoint|use rule) )", smk.read_text())
        for i, text in enumerate(rules):
            make = "mkdir -p" if "directory(" in text else "touch"
            rules[i], n = SHELL.subn(
                lambda m, make=make: f'shell:\n{m["pad"]}"{make} {{output:q}} 2> {{log:q}}"\n',
                text,
            )
            replaced += n
        smk.write_text("\n".join(rules))
    leftover = [
        line.strip()
        for smk in (root / "workflow/rules").glob("*.smk")
        for line in smk.read_text().splitlines()
        if line.strip().startswith('"afbench ')
    ]
    if leftover:
        raise RuntimeError(f"the floor still calls afbench: {leftover}")
    return replaced


def clean(root: Path):
    def wipe():
        shutil.rmtree(root / "results", ignore_errors=True)
        shutil.rmtree(root / ".snakemake", ignore_errors=True)

    return wipe


def one_rule_workflow() -> Path:
    """Snakemake's own floor: one rule with a `params:` entry (so Snakemake imports pandas to
    hash it, as it does for every job of ours), its output up to date."""
    tiny = WORK / "one-rule"
    shutil.rmtree(tiny, ignore_errors=True)
    tiny.mkdir(parents=True)
    (tiny / "Snakefile").write_text(
        'rule all:\n    input: "x"\n\n\n'
        'rule make_x:\n    output: "x"\n    params: setting=1\n    shell: "touch {output}"\n'
    )
    run([SNAKEMAKE, "--cores", "1"], tiny)
    return tiny


IMPORTTIME = """#!/bin/sh
# one afbench call under `python -X importtime` (bench): its import lines to a file of its own
out="{folder}/$$"
main='import sys; from afbench.cli import main; sys.exit(main(sys.argv[1:]))'
"{python}" -X importtime -c "$main" "$@" 2> "$out.err"
code=$?
case "$1" in job) echo "job $2" ;; *) echo "$1" ;; esac > "$out.cmd"
grep '^import time:' "$out.err" > "$out.imports"
grep -v '^import time:' "$out.err" >&2
rm -f "$out.err"
exit $code
"""
HEAVY = ("pandas", "matplotlib", "numpy", "pyarrow")


def import_times(side: Side) -> dict[str, tuple[int, float, list[str]]]:
    """One cold demo run with every `afbench` call under -X importtime: per command, (calls,
    median milliseconds importing modules, the heavy libraries it imported)."""
    root = project(side, f"importtime-{side.name}")
    folder = WORK / f"importtime-{side.name}-logs"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shim = WORK / f"importtime-{side.name}-bin"
    shutil.rmtree(shim, ignore_errors=True)
    shim.mkdir()
    (shim / "afbench").write_text(IMPORTTIME.format(folder=folder, python=sys.executable))
    (shim / "afbench").chmod(0o755)
    env = {**side.env, "PATH": f"{shim}{os.pathsep}{side.env['PATH']}"}
    run([SNAKEMAKE], root, env)
    per: dict[str, list] = {}
    for cmd in folder.glob("*.cmd"):
        lines = cmd.with_suffix(".imports").read_text().splitlines()
        # top-level modules (no indentation in the package column): their cumulative time
        top = [line.split("|") for line in lines[1:] if not line.split("|")[2][1:].startswith(" ")]
        micros = sum(int(cells[1]) for cells in top)
        names = {line.split("|")[2].strip().split(".")[0] for line in lines[1:]}
        calls = per.setdefault(cmd.read_text().strip(), [[], set()])
        calls[0].append(micros / 1000)
        calls[1].update(name for name in HEAVY if name in names)
    return {
        command: (len(ms), statistics.median(ms), sorted(heavy))
        for command, (ms, heavy) in per.items()
    }


# every job verb, and the command of commit TODAY that did its work (the CLI had one door then):
# a verb new since has the bare `afbench --help` of TODAY as its yardstick
TODAY_COMMAND = {
    "build-demo-upstream": "demo",
    "fetch-file": "fetch",
    "write-release-identity": "fetch",
    "verify-file": "verify",
    "verify-release": "verify",
    "discover-release": "discover",
    "export-catalog": "tasks",
    "select-tasks": "tasks",
    "digest-tasks": "tasks",
    "checksum-tasks": "tasks",
    "write-plan": "plan",
    "import-model": "import-model",
    "compare-models": "compare",
    "import-run": "import-run",
    "import-executed": "import-run",
    "render-figures": "report",
    "render-report": "report",
    "write-artifact-manifest": "artifacts",
    "run-trial": "execute",
}


def job_startups(sides: dict[str, Side], notes: dict) -> None:
    """Each job verb's start-up (`afbench job <verb> --help`: the interpreter, the CLI's
    imports and the verb's parser, no work) beside TODAY's command for that work, 7 rounds
    interleaved, CPU of the process."""
    from afbench.cli.jobs import JOBS

    new, today = sides["new"], sides["today"]
    work = {f"new {verb}": ([AFBENCH, "job", verb, "--help"], REPO, None, new.env) for verb in JOBS}
    for command in {*TODAY_COMMAND.values(), None}:
        words = [command, "--help"] if command else ["--help"]
        work[f"today {command}"] = ([AFBENCH, *words], REPO, None, today.env)
    got = side_by_side(7, work)
    table = []
    for verb in JOBS:
        command = TODAY_COMMAND.get(verb)
        n, t = got[f"new {verb}"], got[f"today {command}"]
        table.append((verb, command or "(afbench --help)", n, t))
    notes["startups"] = table
    worst = max(n.cpu / t.cpu for _, _, n, t in table)
    met = sum(n.cpu <= t.cpu for _, _, n, t in table)
    median = statistics.median(n.cpu for _, _, n, _ in table)
    row(
        "start-up",
        f"afbench job <verb> --help, each of {len(table)} verbs (new; median shown)",
        Run(statistics.median(n.seconds for _, _, n, _ in table), median, 0),
        f"CPU <= {TODAY}'s command for that work, every verb (yardstick: {TODAY} in the same "
        "run; table below)",
        f"{_ok(met == len(table))}: {len(table) - met} of {len(table)} verbs over, {met} at or "
        f"under; worst {worst:.2f} x",
    )


def same_dag_floor(real: Path) -> tuple[Path, int]:
    """The generated floor: a workflow of its own with one rule per job of a completed demo run
    in `real` (read from `snakemake --detailed-summary`), each with that job's inputs, outputs
    and log, and a command that only creates them (touch; mkdir -p for a folder). The same DAG
    as the demo's, without the project's Snakefile, its config, its parse and its checks."""
    summary = run([SNAKEMAKE, "--detailed-summary"], real).stdout.splitlines()
    head = summary[0].split("\t")
    jobs: dict[tuple, dict] = {}
    for line in summary[1:]:
        cells = dict(zip(head, line.split("\t"), strict=False))
        if not cells.get("rule") or cells["rule"] == "all":
            continue
        key = (cells["rule"], cells["log-file(s)"], cells["input-file(s)"])
        job = jobs.setdefault(key, {"outputs": []})
        job["outputs"].append(cells["output_file"])
    root = WORK / "floor-generated"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    made = {out for job in jobs.values() for out in job["outputs"]}
    rules = ["localrules: all", ""]
    finals = []
    for n, ((rule, logs, inputs), job) in enumerate(sorted(jobs.items())):
        needed = [i for i in inputs.split(",") if i]
        for path in needed:  # a source file no job makes: copied as it is
            if path not in made and not (root / path).exists():
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                copy = shutil.copytree if (real / path).is_dir() else shutil.copy
                copy(real / path, root / path)
        outs = job["outputs"]
        folders = [out for out in outs if (real / out).is_dir()]
        files = [out for out in outs if out not in folders]
        declared = [f"directory({out!r})" for out in folders] + [repr(out) for out in files]
        finals += outs
        steps = [f"mkdir -p {' '.join(map(quote, folders))}"] if folders else []
        steps += [f"touch {' '.join(map(quote, files))}"] if files else []
        command = " && ".join(steps)
        rules.append(f"rule job{n}_{rule}:")
        if needed:
            rules.append(f"    input: {', '.join(repr(i) for i in needed)}")
        rules.append(f"    output: {', '.join(declared)}")
        if logs:
            rules.append(f"    log: {logs.split(',')[0]!r}")
            command = f"({command}) 2> {{log:q}}"
        rules += [f"    shell: {command!r}", ""]
    text = "rule all:\n    input: " + ", ".join(repr(f) for f in finals) + "\n\n"
    text += "\n".join(rules) + "\n"
    (root / "Snakefile").write_text(text)
    return root, len(jobs)


def official_size(sides: dict[str, Side], notes: dict) -> None:
    new = sides["new"]
    real = {name: project(side, f"demo-{name}") for name, side in sides.items()}
    floor = project(new, "floor")
    notes["floor_rules"] = noop_workflow(floor)
    tiny = one_rule_workflow()
    section = "start-up"
    python = [sys.executable, "-c"]
    ref = side_by_side(
        5,
        {
            "python": ([*python, "pass"], REPO, None),
            "help": ([AFBENCH, "--help"], REPO, None),
            "pandas": ([*python, "import pandas"], REPO, None),
            "matplotlib": ([*python, "import matplotlib.figure"], REPO, None),
        },
    )
    row(section, "python -c pass (the venv's interpreter start-up)", ref["python"])
    row(
        section,
        "afbench --help",
        ref["help"],
        "wall < 0.3 s (yardstick: the clock)",
        _ok(ref["help"].seconds < 0.3),
    )
    for name, what in (("pandas", "import pandas"), ("matplotlib", "import matplotlib.figure")):
        row(section, f"python -c '{what}'", ref[name], "reference")
    notes["reference"] = ref

    notes["imports"] = {name: import_times(sides[name]) for name in ("new", "today")}
    job_startups(sides, notes)

    section = "cold demo"
    run([SNAKEMAKE], real["new"], new.env)  # a completed run: the generated floor's DAG
    generated, notes["generated_jobs"] = same_dag_floor(real["new"])
    cold = side_by_side(
        3,
        {
            "generated": ([SNAKEMAKE, "--cores", "2"], generated, clean(generated)),
            "floor": ([SNAKEMAKE], floor, clean(floor)),
            **{
                name: ([SNAKEMAKE], real[name], clean(real[name]), side.env)
                for name, side in sides.items()
            },
        },
    )
    g, f, c, t = cold["generated"], cold["floor"], cold["new"], cold["today"]
    notes["cold"] = cold
    row(
        section,
        f"floor 1: generated workflow, the demo's DAG of {notes['generated_jobs']} trivial jobs",
        g,
        "yardstick (touch/mkdir jobs, no project Snakefile)",
    )
    row(
        section,
        "floor 2: the project's Snakefile, every job's command a no-op",
        f,
        "yardstick (the project's parse and checks, trivial commands)",
    )
    row(
        section,
        "cold full run (new)",
        c,
        f"CPU <= 2.5 x floor 1's ({2.5 * g.cpu:.2f} s); beside floor 2 and {TODAY}",
        f"{_ok(c.cpu <= 2.5 * g.cpu)} CPU {c.cpu / g.cpu:.2f} x floor 1 (wall "
        f"{c.seconds / g.seconds:.2f} x); CPU {c.cpu / f.cpu:.2f} x floor 2 (wall "
        f"{c.seconds / f.seconds:.2f} x); CPU {c.cpu / t.cpu:.2f} x {TODAY}'s",
    )
    for name in ("today", "last"):
        r = cold[name]
        row(
            section,
            f"cold full run, {sides[name].label}",
            r,
            "reference",
            f"CPU {r.cpu / g.cpu:.2f} x floor 1, {r.cpu / f.cpu:.2f} x floor 2",
        )

    section = "reruns"
    noop = side_by_side(
        5,
        {
            "one_rule": ([SNAKEMAKE, "--cores", "1"], tiny, None),
            "noop": ([SNAKEMAKE], real["new"], None),
        },
    )
    o, n = noop["one_rule"], noop["noop"]
    row(section, "no-op of a one-rule workflow with a params: entry", o, "yardstick")
    row(
        section,
        "no-op rerun (new)",
        n,
        f"CPU <= one-rule no-op + 0.3 s ({o.cpu + 0.3:.2f} s)",
        f"{_ok(n.cpu <= o.cpu + 0.3)} CPU {n.cpu - o.cpu:+.2f} s "
        f"(wall {n.seconds - o.seconds:+.2f} s)",
    )
    overlay = real["new"] / "change.yaml"
    limits = iter(range(1, 100))

    def change():
        overlay.write_text(f"selections: {{demo-two-sources: {{limit: {next(limits)}}}}}\n")

    changed = [SNAKEMAKE, "--configfile", "config/demo.yaml", str(overlay)]
    change()
    run(changed, real["new"])
    change()
    dry = run([*changed, "-n"], real["new"]).stdout
    jobs = dry.split("Job stats:")[1].split("total")[0].split()[4:]
    one = side_by_side(3, {"one": (changed, real["new"], change)})["one"]
    row(
        section,
        "one selection changed (new)",
        one,
        "wall < 2 s (yardstick: the clock)",
        _ok(one.seconds < 2)
        + " reran "
        + ", ".join(f"{jobs[i]} x{jobs[i + 1]}" for i in range(0, len(jobs), 2)),
    )


# --- interactive commands on the demo release folder ----------------------------------------
def interactive(sides: dict[str, Side]) -> None:
    """`afbench tasks` and `afbench import-results` on the release folder that `afbench fetch
    --config config/demo.yaml` makes (its source: the demo repository `afbench demo repo`
    builds, where config/demo.yaml points)."""
    config = ["--config", "config/demo.yaml"]
    work = {}
    for name in ("new", "today"):
        # each side with its own config and demo release (the demo's revision moved on)
        side, root = sides[name], WORK / f"interactive-{name}"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(side.root / "config", root / "config")
        demo = [AFBENCH, "demo", "repo", "--release-files", side.root / "resources/demo-release"]
        run([*demo, "--out", root / "results/demo-upstream"], env=side.env)
        run([AFBENCH, "fetch", *config, "--release-dir", "rel", "--all-models"], root, side.env)
        work[f"tasks-{name}"] = (
            [AFBENCH, "tasks", *config, "--release-dir", "rel", "--output", f"tasks-{name}.json"],
            root,
            None,
            side.env,
        )
        work[f"import-{name}"] = (
            [
                *[AFBENCH, "import-results", *config, "--release-dir", "rel", "--all-models"],
                *["--output", f"reference-{name}.json"],
            ],
            root,
            None,
            side.env,
        )
    root = WORK / "interactive-new"
    out = root / "baseline"
    work["baseline"] = (
        [sys.executable, REPO / "bench/baseline.py", out, "config/demo.yaml"],
        root,
        lambda: shutil.rmtree(out, ignore_errors=True),
    )
    got = side_by_side(5, work)
    row(
        "interactive",
        "single-process baseline (bench/baseline.py: the whole pipeline in one process)",
        got["baseline"],
        "wall < 1 s (yardstick: the clock)",
        _ok(got["baseline"].seconds < 1),
    )
    for command, key in (("tasks", "tasks"), ("import-results", "import")):
        r, t = got[f"{key}-new"], got[f"{key}-today"]
        row(
            "interactive",
            f"afbench {command} on the fetched demo release (new)",
            r,
            "wall <= 0.3 s (yardstick: the clock; 3ffd83b beside it)",
            f"{_ok(r.seconds <= 0.3)} ({t.seconds:.3f} s, CPU {t.cpu:.3f} s today)",
        )


# --- scale: 34,100 tasks x 45 models ---------------------------------------------------------
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
    # only what every side's schema knows: the scaled models have no published figures
    sections = [("demo", None), ("power", None), ("import", "strict_published")]
    sections += [("anatomy", None), ("task_table", None)]  # new since the older sides' schema
    for section, key in sections:
        cfg.pop(section, None) if key is None else cfg[section].pop(key, None)
    cfg["release"].pop("published", None)
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
    cfg_path.write_text(yaml.safe_dump(cfg))
    return root


class Chain:
    """The pipeline's chain through this tree's CLI (the flags the rules pass, see
    workflow/rules/*.smk), with the bench's own flat output names under one folder per side.
    The seed's commands (tasks, import-results, report) read the config, as a user runs them."""

    def __init__(self, root: Path, side: Side) -> None:
        from afbench.core.config import load_config

        self.root, self.side = root, side
        self.config = root / "config.yaml"
        self.release = root / "fetched"
        self.out = root / f"out-{side.name}"
        self.receipt = self.release / "receipt.json"
        self.catalog = self.out / "catalog.json"
        cfg = load_config([self.config])
        self.models = cfg["models"]
        self.settings = cfg["import"]
        self.columns = cfg["columns"]["results"]

    def fetch(self) -> list:
        return [AFBENCH, "fetch", "--config", self.config, "--release-dir", self.release]

    def reset(self) -> None:
        shutil.rmtree(self.out, ignore_errors=True)
        self.out.mkdir(parents=True)

    def tasks(self) -> list:
        return [
            *[AFBENCH, "tasks", "--release-dir", self.release, "--output", self.catalog],
            *["--config", self.config],
        ]

    def model_import(self, slug: str) -> Path:
        return self.out / f"import-{slug}.json"

    def import_model(self, slug: str) -> list:
        spec = self.models[slug]
        return [
            *[AFBENCH, "job", "import-model", f"--catalog={self.catalog}"],
            *[f"--verified={self.receipt}", f"--results={self.release / spec['path']}"],
            *[f"--model={slug}", f"--display-name={spec['display_name']}"],
            f"--pinned-condition={spec['source_condition']}",
            f"--source-condition={self.settings['source_condition']}",
            *[f"--column={ours}={theirs}" for ours, theirs in self.columns.items()],
            f"--output={self.model_import(slug)}",
        ]

    def compare(self) -> list:
        return [
            *[AFBENCH, "job", "compare-models"],
            *[f"--import={self.model_import(slug)}" for slug in self.models],
            *[f"--verified={self.receipt}", "--strict-budget=false"],
            *["--published-source=", "--published-task-rows=", "--strict-published=false"],
            f"--summary={self.out / 'summary.json'}",
            f"--leaderboard={self.out / 'leaderboard.csv'}",
        ]

    def each_import(self) -> list:
        return [arg for slug in self.models for arg in ("--import", self.model_import(slug))]

    def report_inputs(self) -> list:
        return [
            *["--summary", self.out / "summary.json", *self.each_import()],
            *["--catalog", self.catalog, "--receipt", self.receipt],
        ]

    def report(self) -> list:
        return [AFBENCH, "report", *self.report_inputs(), "--output-dir", self.out / "html"]

    def figure_paths(self) -> list[Path]:
        paired = ["paired"] if len(self.models) > 1 else []
        names = ["leaderboard", "cost_success", "per_source", *paired]
        return [self.out / "jobs" / f"{name}.svg" for name in names]

    def render_figures(self) -> list:
        return [
            *[AFBENCH, "job", "render-figures", *self.report_inputs(), "--confidence=0.95"],
            *[f"--figure={path}" for path in self.figure_paths()],
        ]

    def render_report(self) -> list:
        return [
            *[AFBENCH, "job", "render-report", *self.report_inputs(), "--confidence=0.95"],
            f"--settings-digest={'0' * 64}",
            *[f"--figure={path}" for path in self.figure_paths()],
            *[f"--html={self.out / 'jobs/index.html'}", f"--analysis={self.out / 'jobs/a.json'}"],
        ]

    def import_results(self) -> list:
        return [
            *[AFBENCH, "import-results", "--release-dir", self.release, "--all-models"],
            *["--output", self.out / "reference.json", "--config", self.config],
        ]


class TodayChain(Chain):
    """The same chain in the CLI of commit TODAY (one door: import-model, compare)."""

    def import_model(self, slug: str) -> list:
        spec = self.models[slug]
        return [
            *[AFBENCH, "import-model", "--catalog", self.catalog, "--receipt", self.receipt],
            *["--results", self.release / spec["path"], "--model", slug],
            *["--display-name", spec["display_name"]],
            *["--pinned-condition", spec["source_condition"]],
            *["--source-condition", self.settings["source_condition"]],
            *["--budget-usd", "200"],
            *[arg for pair in self.columns.items() for arg in ("--column", "=".join(pair))],
            *["--output", self.model_import(slug)],
        ]

    def compare(self) -> list:
        return [
            *[AFBENCH, "compare", *self.each_import(), "--receipt", self.receipt],
            *["--summary", self.out / "summary.json"],
            *["--leaderboard", self.out / "leaderboard.csv"],
        ]


def chain_import(chain: Chain) -> Run:
    """Every model's import job, then the comparison, one after the other (as the pipeline
    runs them on one core): their wall and CPU seconds summed, the largest process's peak."""
    env = chain.side.env
    total = Run(0.0, 0.0, 0.0)
    for slug in chain.models:
        total += measure(chain.import_model(slug), chain.root, env)
    return total + measure(chain.compare(), chain.root, env)


def top_scale(sides: dict[str, Side], notes: dict) -> None:
    root = scaled_release(100, 5)
    new = Chain(root, sides["new"])
    today = TodayChain(root, sides["today"])
    shutil.rmtree(new.release, ignore_errors=True)
    run([*new.fetch(), "--all-models"], root)
    for chain in (today, new):
        chain.reset()
        catalog = measure(chain.tasks(), root, chain.side.env)
    notes["catalog_top"] = catalog  # the new side's
    label = "34,100 tasks x 45 models"
    section = "import"
    imported = {}
    for chain in (today, new, today, new):  # two rounds, alternating
        r = chain_import(chain)
        imported.setdefault(chain.side.name, []).append(r)
    n, t = medians(imported["new"]), medians(imported["today"])
    notes["import_top"] = (n, t)
    row(
        section,
        f"45 import-model jobs + compare-models (new): {label}",
        n,
        f"CPU <= 0.5 x {TODAY}'s ({0.5 * t.cpu:.1f} s; yardstick: {TODAY} in the same run); "
        f"{n.mib:.0f} MiB peak",
        f"{_ok(n.cpu <= 0.5 * t.cpu)} CPU {n.cpu / t.cpu:.2f} x, "
        f"wall {n.seconds / t.seconds:.2f} x",
    )
    row(section, f"the same chain, {sides['today'].label}", t, f"{t.mib:.0f} MiB peak")
    seed = side_by_side(
        2,
        {
            name: (chain.import_results(), root, None, chain.side.env)
            for name, chain in (("today", today), ("new", new))
        },
    )
    s = seed["new"]
    notes["import_results_top"] = seed
    row(
        section,
        f"import-results, one process (new): {label}",
        s,
        f"wall <= 15.9 s, <= 512 MiB (yardstick: the clock, an earlier round's target; "
        f"{TODAY} beside it); {s.mib:.0f} MiB peak",
        _ok(s.seconds <= 15.9 and s.mib <= 512),
    )
    row(
        section,
        f"import-results, {sides['today'].label}",
        seed["today"],
        f"{seed['today'].mib:.0f} MiB peak",
    )

    section = "report"
    last = Chain(root, sides["last"])
    last.reset()
    run(last.tasks(), root, last.side.env)
    for command in [*(last.import_model(slug) for slug in last.models), last.compare()]:
        run(command, root, last.side.env)
    reports = side_by_side(
        3,
        {
            name: (chain.report(), root, None, chain.side.env)
            for name, chain in (("today", today), ("last", last), ("new", new))
        },
    )
    r, t, lst = reports["new"], reports["today"], reports["last"]
    notes["report_top"] = reports
    row(
        section,
        f"afbench report (new): {label}",
        r,
        f"CPU <= 0.5 x {LAST}'s ({0.5 * lst.cpu:.2f} s; yardstick: {LAST} in the same run); "
        f"{r.mib:.0f} MiB peak",
        f"{_ok(r.cpu <= 0.5 * lst.cpu)} CPU {r.cpu / lst.cpu:.2f} x {LAST}'s "
        f"({r.cpu / t.cpu:.2f} x {TODAY}'s)",
    )
    row(section, f"afbench report, {sides['last'].label}", lst, f"{lst.mib:.0f} MiB peak")
    row(section, f"afbench report, {sides['today'].label}", t, f"{t.mib:.0f} MiB peak")
    demo_size = scaled_release(1, 1)
    chains = {
        "today": TodayChain(demo_size, sides["today"]),
        "last": Chain(demo_size, sides["last"]),
        "new": Chain(demo_size, sides["new"]),
    }
    shutil.rmtree(chains["new"].release, ignore_errors=True)
    run([*chains["new"].fetch(), "--all-models"], demo_size)
    for chain in chains.values():
        chain.reset()
        run(chain.tasks(), demo_size, chain.side.env)
        for command in [*(chain.import_model(slug) for slug in chain.models), chain.compare()]:
            run(command, demo_size, chain.side.env)
    small = side_by_side(
        5,
        {name: (chain.report(), demo_size, None, chain.side.env) for name, chain in chains.items()},
    )
    notes["report_demo"] = small
    rs, ls = small["new"], small["last"]
    row(
        section,
        "afbench report (new): 341 tasks x 9 models (the demo's size)",
        rs,
        f"CPU <= {LAST}'s ({ls.cpu:.2f} s; yardstick: {LAST} in the same run)",
        f"{_ok(rs.cpu <= ls.cpu)} CPU {rs.cpu / ls.cpu:.2f} x {LAST}'s "
        f"({rs.cpu / small['today'].cpu:.2f} x {TODAY}'s)",
    )
    row(section, f"afbench report at the demo's size, {sides['last'].label}", ls, "reference")
    row(
        section,
        f"afbench report at the demo's size, {sides['today'].label}",
        small["today"],
        "reference",
    )
    figures = measure(new.render_figures(), root)
    html = measure(new.render_report(), root)
    row(section, "the pipeline's render-figures job (new)", figures, "reference")
    row(section, "the pipeline's render-report job, figures read (new)", html, "reference")
    # the jobs' HTML shows the settings digest the rule passes; the seed's says "not given"
    jobs = (new.out / "jobs/index.html").read_text().replace("0" * 64, "not given")
    notes["report_jobs_same"] = (new.out / "html/index.html").read_text() == jobs


def growth(sides: dict[str, Side], notes: dict) -> None:
    """Catalog, import and report from 341 x 9 up to the top scale (measured above)."""
    scales = [(1, 1), (10, 1), (100, 1), (1, 5), (10, 5)]
    top = 341 * 100 * 45
    points: dict[str, list[tuple[int, float]]] = {
        "catalog": [(34_100, notes["catalog_top"].seconds)],
        "import": [(top, notes["import_top"][0].seconds)],
        "report": [(top, notes["report_top"]["new"].seconds)],
    }
    for task_scale, model_scale in scales:
        root = scaled_release(task_scale, model_scale)
        chain = Chain(root, sides["new"])
        shutil.rmtree(chain.release, ignore_errors=True)
        run([*chain.fetch(), "--all-models"], root)
        chain.reset()
        tasks, models = 341 * task_scale, 9 * model_scale
        label = f"{tasks} tasks x {models} models"
        catalog = measure(chain.tasks(), root)
        imported = chain_import(chain)
        report = measure(chain.report(), root)
        for stage, size, r in (
            ("catalog", tasks, catalog),
            ("import", tasks * models, imported),
            ("report", tasks * models, report),
        ):
            points.setdefault(stage, []).append((size, r.seconds))
            row("growth", f"{stage}: {label}", r, f"{r.mib:.0f} MiB peak")
    for stage, pts in points.items():
        (n1, t1), (n2, t2) = min(pts), max(pts)
        exponent = math.log(t2 / t1) / math.log(n2 / n1) if n2 > n1 else float("nan")
        notes[f"growth_{stage}"] = exponent
        row(
            "growth",
            f"{stage}: growth exponent (time ~ n^k)",
            exponent,
            "k <= 1 (linear or better)",
            _ok(exponent <= 1.05),
        )


# --- paired tests, Harbor trials --------------------------------------------------------------
def coverage(notes: dict) -> None:
    """bench/coverage.py: coverage, size and the planner's promise over simulated releases."""
    notes["coverage"] = run([sys.executable, REPO / "bench/coverage.py"], REPO).stdout


def sequential_bench(notes: dict) -> None:
    """bench/sequential.py: the sequential test's error and tasks spent, 10,000 replications a
    row (its figures are statistics, not timings: copied into results.md as printed)."""
    notes["sequential"] = run([sys.executable, REPO / "bench/sequential.py"], REPO).stdout


def stats_speed(notes: dict) -> None:
    """bench/stats_speed.py: the exact McNemar tests of every pair at 45 and 200 models."""
    out = run([sys.executable, REPO / "bench/stats_speed.py"], REPO).stdout
    notes["stats_speed"] = out
    for line in out.splitlines():
        cells = line.split()
        if len(cells) >= 5 and cells[0].isdigit() and cells[2] in ("old", "single", "batch"):
            models, pairs, side, cpu, wall = cells[:5]
            what = f"exact McNemar, {models} models ({pairs} pairs): {side}"
            target = "measured" if models == "200" else "reference"
            row("paired tests", what, Run(float(wall), float(cpu), 0), target)


def harbor_jobs(trials: int, task_ids: list[str]) -> Path:
    """A Harbor 0.22.0 job directory with `trials` trials of the selection's tasks, in a run's
    realistic shares (bench/harbor_speed.MIX: 40% accepted, 54% rejected, 6% errors), made
    from the real fixture trials of every outcome and consistent the way the reader checks:
    each trial named after its task and folder, its config naming it and its job, and as many
    attempts per task as the job says."""
    sys.path.insert(0, str(REPO / "bench"))
    from harbor_speed import MIX

    root = WORK / f"harbor-{trials}-realistic"
    if (root / "job" / ".complete").exists():
        return root / "job"
    fixture = REPO / "tests/fixtures/harbor-0.22.0-jobs/demo-oracle"
    templates = []
    for trial in sorted(p for p in fixture.iterdir() if p.is_dir()):
        template = (
            json.loads((trial / "result.json").read_text()),
            json.loads((trial / "config.json").read_text()),
        )
        templates += [template] * MIX[trial.name.split("__")[0]]
    job = root / "job"
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir(parents=True)
    attempts = -(-trials // len(task_ids))  # every task up to this many times
    config = json.loads((fixture / "config.json").read_text())
    (job / "config.json").write_text(json.dumps({**config, "n_attempts": attempts}))
    job_id = json.loads((fixture / "result.json").read_text())["id"]
    for i in range(trials):
        result, own = templates[(i * 37) % len(templates)]  # the outcomes spread over tasks
        task = task_ids[i // attempts]
        name = f"{task}__{i:07d}"
        path = f"/srv/tasks/{task}"
        doc = dict(result, id=f"00000000-0000-4000-8000-{i:012d}", task_name=task)
        doc.update(trial_name=name, trial_uri=f"file:///srv/jobs/bench/{name}")
        doc["task_id"] = {"path": path}
        # one task, one checksum, whichever fixture trial an attempt is copied from
        doc["task_checksum"] = hashlib.sha256(task.encode()).hexdigest()
        doc["config"] = dict(result["config"], trial_name=name, job_id=job_id)
        doc["config"]["task"] = dict(result["config"]["task"], path=path)
        trial = job / name
        trial.mkdir()
        (trial / "result.json").write_text(json.dumps(doc, indent=4))
        own = dict(own, trial_name=name, job_id=job_id, task=dict(own["task"], path=path))
        (trial / "config.json").write_text(json.dumps(own, indent=4))
    shutil.copy(fixture / "result.json", job / "result.json")
    (job / ".complete").touch()
    return job


# the floor of reading a job folder: list it, open, read and parse each trial's result.json
READ_FLOOR = (
    "import json, os, sys\n"
    "job = sys.argv[1]\n"
    "for entry in os.scandir(job):\n"
    "    if entry.is_dir():\n"
    "        with open(os.path.join(entry.path, 'result.json'), 'rb') as f:\n"
    "            json.loads(f.read())\n"
)


HARBOR_SPEED = REPO / "bench" / "harbor_speed.py"


def selection_and_tasks(side: Side, rebuild: bool = False) -> tuple[Path, Path, list[str]]:
    """The scaled release (100 x its tasks, one model set) fetched by `side`, its selection of
    every task (34,100) and their ids: made once and kept, or made again with `rebuild`."""
    root = scaled_release(100, 1)
    chain = Chain(root, side)
    selection = chain.out / "selection-all.json"
    if rebuild or not selection.exists():
        shutil.rmtree(chain.release, ignore_errors=True)
        run([*chain.fetch(), "--all-models"], root)
        chain.reset()
        run(chain.tasks(), root)
        select = [AFBENCH, "job", "select-tasks", f"--catalog={chain.catalog}", "--name=all"]
        run([*select, f"--output={selection}"], root)
    task_ids = [t["task_id"] for t in json.loads(chain.catalog.read_text())["tasks"]]
    return root, selection, task_ids


def harbor(sides: dict[str, Side], notes: dict) -> None:
    root, selection, task_ids = selection_and_tasks(sides["new"], rebuild=True)
    chain = Chain(root, sides["new"])
    for trials in (1_000, 10_000, 100_000):
        job = harbor_jobs(trials, task_ids)
        out = chain.out / f"run-{trials}"

        def fresh(out=out):
            shutil.rmtree(out, ignore_errors=True)

        imported = [
            *[AFBENCH, "import-run", "--selection", selection, "--name", f"bench-{trials}"],
            *["--kind", "harbor", "--path", job, "--output-dir", out],
        ]
        got = side_by_side(
            3 if trials == 100_000 else 1,
            {
                "floor": ([sys.executable, "-c", READ_FLOOR, job], root, None),
                "import": (imported, root, fresh),
            },
        )
        r, f = got["import"], got["floor"]
        with (out / "attempts.csv").open(newline="") as table:
            shares = collections.Counter(line["outcome"] for line in csv.DictReader(table))
        notes.setdefault("harbor_outcomes", {})[trials] = dict(sorted(shares.items()))
        row(
            "harbor import",
            f"{trials} trials, open-read-parse floor (a process reading every result.json)",
            f,
            "yardstick",
        )
        top = trials == 100_000
        row(
            "harbor import",
            f"afbench import-run, {trials} trials (new; 40% accepted, 54% rejected, 6% errors)",
            r,
            f"CPU <= 2 x the floor's ({2 * f.cpu:.2f} s); {r.mib:.0f} MiB peak"
            + ("; < 60 s, < 1024 MiB" if top else ""),
            f"{_ok(r.cpu <= 2 * f.cpu)} CPU {r.cpu / f.cpu:.2f} x floor, "
            f"{r.cpu / trials * 1e6:.0f} us/trial (floor {f.cpu / trials * 1e6:.0f})"
            + (f"; {_ok(r.seconds < 60 and r.mib < 1024)}" if top else ""),
        )
    if HARBOR_SPEED.exists():  # the reader against the previous round's, on the same folder
        out = run([sys.executable, HARBOR_SPEED], REPO)
        notes["harbor_speed"] = out.stdout
        print(out.stdout, flush=True)
    else:
        notes["harbor_speed"] = None


# --- where the report's time goes ----------------------------------------------------------
def profile_report() -> str:
    """cProfile of `afbench report` at the official size (its figures included), in-process."""
    from afbench.cli import main as afbench_main

    chain = Chain(scaled_release(1, 1), Side("new", "this tree", REPO, ENV))
    argv = [str(a) for a in chain.report()[1:]]
    profiler = cProfile.Profile()
    code = profiler.runcall(afbench_main, argv)
    if code != 0:
        raise RuntimeError(f"afbench report exited {code}")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(18)
    return "\n".join(line for line in out.getvalue().splitlines() if line.strip())[:5000]


# --- results.md ----------------------------------------------------------------------------
def environment() -> str:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown CPU",
    )
    packages = ", ".join(
        f"{name} {version(name)}"
        for name in ("snakemake", "pandas", "pyarrow", "matplotlib", "pyyaml")
    )
    return (
        f"Python {platform.python_version()}, {packages}; {os.cpu_count()} cores ({cpu}); "
        f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())} at the end "
        "(other work shared the machine)."
    )


def explain(sides: dict[str, Side], notes: dict) -> str:
    cold, ref = notes["cold"], notes["reference"]
    lines = [
        "## Where the time goes",
        "",
        "### What each job imports (`python -X importtime`, one cold demo run per side)",
        "",
        "Milliseconds importing modules (the cumulative time of every top-level import, the "
        "median over the command's jobs), and which of pandas, matplotlib, numpy and pyarrow "
        "the command imported.",
        "",
        "| command | jobs | new: ms importing | new: heavy imports | today: ms | today: heavy |",
        "|---|---:|---:|---|---:|---|",
    ]
    new, today = notes["imports"]["new"], notes["imports"]["today"]
    renamed = {
        "job import-model": "import-model",
        "job compare-models": "compare",
        "job export-catalog": "tasks",
        "job select-tasks": "tasks",
        "job verify-file": "verify",
        "job fetch-file": "fetch",
        "job write-plan": "plan",
        "job render-report": "report",
        "job render-figures": "report",
        "job write-artifact-manifest": "artifacts",
        "job build-demo-upstream": "demo",
        "job verify-release": "verify",
        "job write-release-identity": "fetch",
    }
    for command, (calls, ms, heavy) in sorted(new.items(), key=lambda item: -item[1][1]):
        old = today.get(renamed.get(command, command))
        old_cells = f"{old[1]:.0f} | {', '.join(old[2]) or '-'}" if old else "- | -"
        lines.append(
            f"| {command} (today: {renamed.get(command, command)}) | {calls} | {ms:.0f} | "
            f"{', '.join(heavy) or '-'} | {old_cells} |"
        )
    lines += [
        "",
        f"### Each job verb's start-up beside {TODAY}'s (`afbench job <verb> --help`, CPU ms)",
        "",
        f"The interpreter, the CLI's imports and the verb's parser, no work; {TODAY} had one "
        "door, so each verb stands beside the command that did its work then (a verb new "
        f"since: {TODAY}'s bare `afbench --help`). Medians of 7 rounds, interleaved.",
        "",
        f"| job verb | new CPU ms | {TODAY} command | {TODAY} CPU ms | ratio |",
        "|---|---:|---|---:|---:|",
    ]
    for verb, command, n, t in notes["startups"]:
        lines.append(
            f"| {verb} | {n.cpu * 1000:.0f} | {command} | {t.cpu * 1000:.0f} | "
            f"{n.cpu / t.cpu:.2f} |"
        )
    g, f, c, t = cold["generated"], cold["floor"], cold["new"], cold["today"]
    lines += [
        "",
        f"### Cold demo run: CPU {c.cpu:.2f} s against floor 1's {g.cpu:.2f} s",
        "",
        f"Wall {c.seconds:.2f} s (floor 1 {g.seconds:.2f} s, floor 2 {f.seconds:.2f} s); CPU "
        f"of the whole process tree {c.cpu:.2f} s ({TODAY} {t.cpu:.2f} s, {LAST} "
        f"{cold['last'].cpu:.2f} s, floor 2 {f.cpu:.2f} s) on 2 cores. Floor 1 is a generated "
        f"workflow with the demo's DAG ({notes['generated_jobs']} jobs, each creating its "
        "outputs and log); floor 2 is the project's own Snakefile with every command a no-op, "
        "so floor 2 minus floor 1 is what the project's Snakefile costs Snakemake (its parse, "
        "config checks and DAG-time functions). The interpreter starts in "
        f"{ref['python'].cpu * 1000:.0f} ms of CPU, `afbench --help` takes "
        f"{ref['help'].cpu * 1000:.0f} ms; `import pandas` would cost a job "
        f"{ref['pandas'].cpu:.2f} s of CPU and `import matplotlib.figure` "
        f"{ref['matplotlib'].cpu:.2f} s.",
    ]
    n, t = notes["import_top"]
    seed = notes["import_results_top"]
    report = notes["report_top"]
    lines += [
        "",
        "### 34,100 tasks x 45 models",
        "",
        f"The 45 import jobs and the comparison: {n.seconds:.1f} s wall, {n.cpu:.1f} s CPU "
        f"(today {t.seconds:.1f} s, {t.cpu:.1f} s); the seed's one-process `import-results` "
        f"{seed['new'].seconds:.1f} s and {seed['new'].mib:.0f} MiB (today "
        f"{seed['today'].seconds:.1f} s and {seed['today'].mib:.0f} MiB). `afbench report` "
        f"{report['new'].cpu:.2f} s CPU (today {report['today'].cpu:.2f} s). The pipeline's "
        "two report jobs give the same HTML as `afbench report` (but for the settings digest "
        "the rule passes): "
        f"{'yes' if notes['report_jobs_same'] else 'NO'}.",
        "",
        "### Paired tests (bench/stats_speed.py)",
        "",
        "```",
        notes["stats_speed"].rstrip(),
        "```",
        "",
        "### Sequential comparison (bench/sequential.py)",
        "",
        "The yardstick: under no difference, an error rate at most alpha (0.05) over 10,000 "
        "replications, with its Monte Carlo error; under a 10-point difference, the mean tasks "
        "spent beside the fixed-n planner's count (Connor 1987) at the same power.",
        "",
        "```",
        notes["sequential"].rstrip(),
        "```",
        "",
        "### Harbor reader (bench/harbor_speed.py)",
        "",
    ]
    if notes["harbor_speed"] is None:
        lines.append("bench/harbor_speed.py is not in this tree: not measured here.")
    else:
        lines += ["```", notes["harbor_speed"].rstrip(), "```"]
    lines += [
        "",
        "### import-run as a user runs it",
        "",
        "`afbench import-run` end to end (the CLI, its reading, checks and writing) on job "
        "folders built from the real Harbor 0.22.0 fixture trials in a run's shares; the outcomes "
        f"it recorded: {notes.get('harbor_outcomes')}. Its yardstick is a process that lists the "
        "folder and opens, reads and parses every trial's result.json (bench/run.py READ_FLOOR).",
    ]
    return "\n".join(lines) + "\n"


SETUP_SPEED = WORK / "setup-speed.txt"


def setup_section() -> list[str]:
    """bench/setup_speed.py's figures (fresh clones, several minutes: run on its own)."""
    if not SETUP_SPEED.exists():
        # the same heading either way: the README links to it
        heading = "## Time to first report (bench/setup_speed.py)"
        return ["", heading, "", "bench/setup_speed.py has not been run here."]
    day = time.strftime("%Y-%m-%d", time.gmtime(SETUP_SPEED.stat().st_mtime))
    return [
        "",
        "## Time to first report (bench/setup_speed.py)",
        "",
        "A fresh clone, every download cache empty, one run each, side by side: today's set-up "
        "(`pip install -e '.[test,parquet]'`, which `make demo` and `make test` both ran) "
        "against `make setup` (uv 0.13.8 from PyPI, the same pins, indexes and constraints) and "
        "`make demo` (uv, the pipeline's packages only), then the demo itself. Written by "
        f"`python bench/setup_speed.py`, {day}, on this machine; make bench copies it.",
        "",
        "```",
        SETUP_SPEED.read_text().rstrip(),
        "```",
    ]


COVERAGE_HEAD = """
## Statistics against simulated releases (bench/coverage.py)

The yardstick of issue 29: releases drawn from a known model (24 sources, per-source random
effects on the logit scale giving the design effect named), so the true rate, difference and
null are known. Today's method is the one before this round's change (Miller's eq. 4 with a
normal quantile; the exact McNemar test over tasks for the decisions); the new one is what the
report computes now (afbench.core.stats called on every simulated release). The planner's promise
is checked against the power of the report's own test, simulated with independent numpy draws
from the model the planner states.

"""


def main() -> None:
    notes: dict = {}
    started = time.perf_counter()
    WORK.mkdir(parents=True, exist_ok=True)
    every = sides()
    official_size(every, notes)
    interactive(every)
    top_scale(every, notes)
    stats_speed(notes)
    coverage(notes)
    sequential_bench(notes)
    growth(every, notes)
    harbor(every, notes)
    profile = profile_report()
    table = [
        "| section | measurement | wall s | CPU s | target / memory | result |",
        "|---|---|---:|---:|---|---|",
    ]
    table += [f"| {' | '.join(r)} |" for r in ROWS]
    text = "\n".join(table)
    print(text)
    (REPO / "bench/results.md").write_text(
        "# afbench benchmark results\n\n"
        f"One run of `make bench`, {time.strftime('%Y-%m-%d')}, in "
        f"{time.perf_counter() - started:.0f} s. {environment()} Wall times are medians (5 "
        "rounds for start-up and no-op figures and the interactive commands, 3 for cold runs "
        "and reports, 2 for the imports at scale); CPU is user + system of the whole process "
        "tree, median of the same rounds. Sides: new (this tree), today "
        f"({TODAY}), last ({LAST}), each with its own package and "
        "workflow; the sides of a ratio alternate within each round.\n\n"
        + text
        + "\n\n"
        + explain(every, notes)
        + "\n".join(setup_section())
        + "\n"
        + COVERAGE_HEAD
        + notes["coverage"].rstrip()
        + "\n"
        + "\n## The report stage at the official size (cProfile, cumulative)\n\n```\n"
        + profile
        + "\n```\n"
    )


if __name__ == "__main__":
    main()
