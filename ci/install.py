"""Install one lock file of requirements/ into the venv whose python runs this (`make setup`,
`make demo`), then the project itself, editable, without its dependencies: every package,
transitive ones too, comes at the lock's version and is checked against the lock's hashes.
With uv when it can be installed from the package index (uv 0.13.8, from PyPI; several times
faster than pip), else with plain pip. Both take the indexes, find-links, constraints and
certificate this machine's pip is configured with (`pip config list`: its files and PIP_*
variables), so uv installs from the same places pip would. `make lock` writes the locks.

    python ci/install.py requirements/test.txt      # AFBENCH_INSTALLER=pip: plain pip only
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UV = "uv==0.13.8"
# the lock's header line that names the pyproject.toml it was written from
DIGEST_LINE = "# pyproject-dependencies-sha256: "
# the Python the locks are resolved for: the oldest pyproject.toml allows, CI's, the conda envs'
PYTHON = "3.11"
DEPENDENCY_KEYS = ("requires-python", "dependencies", "optional-dependencies")
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
# pip's options that choose where packages come from, as uv's flags (each may hold several
# values, whitespace-separated, as pip reads them)
AS_UV = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}


def dependency_digest(pyproject: Path) -> str:
    """sha256 of pyproject.toml's dependency table, which each lock records in its header."""
    project = tomllib.loads(pyproject.read_text())["project"]
    table = {key: project.get(key) for key in DEPENDENCY_KEYS}
    return hashlib.sha256(json.dumps(table, sort_keys=True).encode()).hexdigest()


def recorded_digest(lock: Path) -> str | None:
    for line in lock.read_text().splitlines():
        if line.startswith(DIGEST_LINE):
            return line.removeprefix(DIGEST_LINE).strip()
    return None


def stale(lock: Path) -> str | None:
    """Why the lock was not written from this pyproject.toml, or None when it was."""
    expected = dependency_digest(REPO / "pyproject.toml")
    found = recorded_digest(lock)
    if found == expected:
        return None
    return (
        f"{lock}: {DIGEST_LINE.strip('# :')} expected={expected} found={found}"
        " (pyproject.toml's dependencies changed since the lock was written: make lock)"
    )


def pip_settings() -> dict[str, list[str]]:
    """pip's configured sources: {option: values}, the environment's PIP_* over its files."""
    listed = subprocess.run(
        [*PIP, "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    found: dict[str, dict[str, list[str]]] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        scope, _, option = key.rpartition(".")
        if scope not in (":env:", "global", "install"):
            continue
        found.setdefault(option, {})[scope] = ast.literal_eval(value).split()
    return {
        option: next(scopes[s] for s in (":env:", "install", "global") if s in scopes)
        for option, scopes in found.items()
    }


def uv_sources(settings: dict[str, list[str]]) -> list[str]:
    """uv's flags for pip's configured sources."""
    # pip takes the best version from every index; uv, by default, only from the first that
    # has the package: ask for pip's behaviour, so a pin resolves as it does for pip
    flags = ["--index-strategy", "unsafe-best-match"]
    for option, flag in AS_UV.items():
        for value in settings.get(option, []):
            flags += [flag, value]
    return flags


def uv_commands(uv: str, settings: dict[str, list[str]], lock: str) -> list[list[str]]:
    install = [uv, "pip", "install", "--python", sys.executable, "--compile-bytecode"]
    # a lock pins every package already, and uv's hash-checking mode would demand hashes of a
    # constraints file's lines too: pip's constraints are for resolving (make lock), not here
    install += uv_sources({k: v for k, v in settings.items() if k != "constraint"})
    return [
        [*install, "--require-hashes", "--requirement", lock],
        [*install, "--no-deps", "--editable", str(REPO)],
    ]


def pip_commands(lock: str) -> list[list[str]]:
    install = [*PIP, "install", "--quiet"]
    return [
        [*install, "--require-hashes", "--requirement", lock],
        [*install, "--no-deps", "--editable", str(REPO)],
    ]


def installed_uv() -> Path | None:
    """uv, installed with pip into a temporary folder; None when it could not be."""
    tools = Path(tempfile.mkdtemp(prefix="afbench-uv-"))
    got = subprocess.run([*PIP, "install", "--quiet", "--target", str(tools), UV])
    uv = tools / "bin" / "uv"
    if got.returncode == 0 and uv.is_file():
        return uv
    shutil.rmtree(tools, ignore_errors=True)
    return None


def uv_env(settings: dict[str, list[str]]) -> dict[str, str]:
    """The environment uv runs in: pip's certificate and timeout, unless already set."""
    env = dict(os.environ)
    if settings.get("cert"):
        env.setdefault("SSL_CERT_FILE", settings["cert"][0])
    if settings.get("default-timeout"):
        env.setdefault("UV_HTTP_TIMEOUT", settings["default-timeout"][0])
    return env


def with_uv(lock: str) -> bool:
    """Install with uv; False when uv itself could not be installed (then pip does it)."""
    uv = installed_uv()
    if uv is None:
        print("afbench setup: uv could not be installed; installing with pip", file=sys.stderr)
        return False
    settings = pip_settings()
    try:
        for command in uv_commands(str(uv), settings, lock):
            subprocess.run(command, check=True, env=uv_env(settings))
    finally:
        shutil.rmtree(uv.parents[1], ignore_errors=True)
    return True


def with_pip(lock: str) -> int:
    for command in pip_commands(lock):
        done = subprocess.run(command)
        if done.returncode != 0:
            return done.returncode
    return 0


def main() -> int:
    lock = sys.argv[1]
    why = stale(Path(lock))
    if why:
        print(f"afbench setup: {why}", file=sys.stderr)
        return 1
    if os.environ.get("AFBENCH_INSTALLER", "uv") != "pip" and with_uv(lock):
        return 0
    return with_pip(lock)


if __name__ == "__main__":
    sys.exit(main())
