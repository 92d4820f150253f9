"""Time to first report on a fresh clone (issue 35 item 4): set-up with uv against plain pip,
one run each, side by side, every cache empty (a newcomer's machine: pip's and uv's download
caches are fresh folders). Wall time and CPU time of the whole process tree
(RUSAGE_CHILDREN).

  pip (today)   `python3 -m venv .venv && pip install -e '.[test,parquet]'` (the set-up before
                this change, which `make demo` and `make test` both ran)
  make setup    ci/install.py with uv: everything `make test` needs
  make demo     ci/install.py with uv, the pipeline's packages only, then the demo itself

Run alone (several minutes): python bench/setup_speed.py; it writes bench/work/setup-speed.txt,
which bench/run.py copies into results.md."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "bench" / "work" / "setup-speed"


def clone(name: str) -> Path:
    root = WORK / name
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(root)], check=True)
    return root


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu


def fresh_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = ":".join(
        p for p in env.get("PATH", "").split(":") if not p.endswith("/.venv/bin")
    )
    env["PIP_NO_CACHE_DIR"] = "1"
    env["UV_CACHE_DIR"] = tempfile.mkdtemp(prefix="afbench-uv-cache-")
    return env


def main() -> None:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    lines = [
        f"# fresh clones of {head}; "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at the start; empty caches",
        f"{'step':58} {'wall s':>8} {'CPU s':>8}",
    ]
    rows = {}
    env = fresh_env()
    root = clone("pip")
    subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=root, check=True)
    rows["pip"] = timed(
        [
            ".venv/bin/python",
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-e",
            ".[test,parquet]",
        ],
        root,
        env,
    )
    step = "pip install -e '.[test,parquet]' (today's set-up)"
    lines.append(f"{step:58} {rows['pip'][0]:8.1f} {rows['pip'][1]:8.1f}")
    print(lines[-1], flush=True)
    env = fresh_env()
    root = clone("uv-setup")
    rows["setup"] = timed(["make", "setup"], root, env)
    lines.append(
        f"{'make setup (uv: test tools included)':58} "
        f"{rows['setup'][0]:8.1f} {rows['setup'][1]:8.1f}"
    )
    print(lines[-1], flush=True)
    env = fresh_env()
    root = clone("uv-demo")
    rows["demo-setup"] = timed(["make", ".venv/.afbench-run-installed"], root, env)
    lines.append(
        f"{'make demo: its set-up (uv: the pipeline only)':58} "
        f"{rows['demo-setup'][0]:8.1f} {rows['demo-setup'][1]:8.1f}"
    )
    print(lines[-1], flush=True)
    rows["demo-run"] = timed(["make", "demo"], root, env)
    lines.append(
        f"{'make demo: the pipeline, to the report':58} "
        f"{rows['demo-run'][0]:8.1f} {rows['demo-run'][1]:8.1f}"
    )
    print(lines[-1], flush=True)
    total = rows["demo-setup"][0] + rows["demo-run"][0]
    lines.append(f"{'make demo on a fresh clone, set-up included':58} {total:8.1f}")
    ratio = rows["demo-setup"][0] / rows["pip"][0]
    lines.append(
        f"make demo's set-up / today's pip install: {ratio:.2f} x wall "
        f"(target <= 0.5: {'met' if ratio <= 0.5 else 'MISSED'}); make setup / pip: "
        f"{rows['setup'][0] / rows['pip'][0]:.2f} x wall"
    )
    text = "\n".join(lines) + "\n"
    print(text)
    (REPO / "bench" / "work").mkdir(parents=True, exist_ok=True)
    (REPO / "bench" / "work" / "setup-speed.txt").write_text(text)


if __name__ == "__main__":
    main()
