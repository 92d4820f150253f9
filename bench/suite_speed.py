"""The test suite's time on a clean clone (issue 42): `make test-fast` (target <= 60 s wall) and
the full `make test` with Harbor, Docker, SLURM and Chromium set up (target <= 10 min wall), each
run once in a fresh clone of HEAD after its set-up, wall time beside the CPU time of the whole
process tree (RUSAGE_CHILDREN) and the load when it started. The set-up (`make setup`, Harbor
0.22.0 and 0.26.0 in their own venvs) is timed too, but is not part of either target. SLURM and
the Docker engine must be up (ci/slurm-up.sh, ci/docker-up.sh), as CI starts them.

    python bench/suite_speed.py            # writes bench/work/suite-speed.txt and prints it
                                           # (each step's output: bench/work/suite-speed/)
    python bench/suite_speed.py --fast     # make test-fast only
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "bench" / "work" / "suite-speed"


def timed(cmd: list[str], cwd: Path, env: dict, log: Path) -> tuple[float, float, int, str]:
    """Run cmd, its output kept in log (make test's 25 slowest tests are there)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    log.write_text(done.stdout + done.stderr)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    closing = next(
        (line for line in reversed(done.stdout.splitlines()) if " in " in line and "=" in line),
        "",
    )
    return wall, cpu, done.returncode, closing.strip("= ")


def machine() -> str:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "cpu",
    )
    memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 30
    return f"{model}, {os.cpu_count()} cores, {memory} GiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", action="store_true", help="make test-fast only")
    fast_only = parser.parse_args().fast
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    root = WORK / head
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(root)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = ":".join(p for p in env["PATH"].split(":") if not p.endswith("/.venv/bin"))
    steps = [("set-up: make setup", ["make", "setup"])]
    if not fast_only:
        steps += [
            ("set-up: Harbor 0.22.0", ["bash", "ci/harbor-setup.sh"]),
            ("set-up: Harbor 0.26.0", ["bash", "ci/harbor-setup.sh", "0.26.0"]),
        ]
    steps.append(("make test-fast (target <= 60 s wall)", ["make", "test-fast"]))
    if not fast_only:
        steps.append(("make test (target <= 600 s wall)", ["make", "test"]))
    lines = [
        f"# a fresh clone of {head}; {machine()}",
        f"{'step':<42} {'wall s':>8} {'CPU s':>8} {'load':>5}  result",
    ]
    for number, (name, cmd) in enumerate(steps):
        load = os.getloadavg()[0]
        log = WORK / f"{head}-step-{number}.log"
        wall, cpu, code, closing = timed(cmd, root, env, log)
        result = closing if code == 0 else f"FAILED (exit {code}) {closing}"
        lines.append(f"{name:<42} {wall:>8.1f} {cpu:>8.1f} {load:>5.2f}  {result}")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    (REPO / "bench" / "work").mkdir(exist_ok=True)
    (REPO / "bench" / "work" / "suite-speed.txt").write_text(text)
    print()
    print(text, end="")


if __name__ == "__main__":
    main()
