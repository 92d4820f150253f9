"""Install the project, editable, into the venv whose python runs this (`make setup`, `make
demo`): with uv when it can be installed from the package index (uv 0.13.8, from PyPI; it
resolves and installs several times faster than pip), else with plain pip. Both take the pins of
pyproject.toml and the indexes, find-links, constraints and certificate this machine's pip is
configured with (`pip config list`: its files and PIP_* variables), so uv installs exactly what
pip would, from the same places.

    python ci/install.py '.[test,parquet]'      # AFBENCH_INSTALLER=pip: plain pip only
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
from pathlib import Path

UV = "uv==0.13.8"
PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
# pip's options that choose where packages come from, as uv's flags (each may hold several
# values, whitespace-separated, as pip reads them)
AS_UV = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
}


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


def uv_command(uv: str, settings: dict[str, list[str]], requirement: str) -> list[str]:
    command = [uv, "pip", "install", "--python", sys.executable, "--compile-bytecode"]
    # pip takes the best version from every index; uv, by default, only from the first that
    # has the package: ask for pip's behaviour, so a pin resolves as it does for pip
    command += ["--index-strategy", "unsafe-best-match"]
    for option, flag in AS_UV.items():
        for value in settings.get(option, []):
            command += [flag, value]
    return [*command, "--editable", requirement]


def with_uv(requirement: str) -> bool:
    """Install with uv; False when uv itself could not be installed (then pip does it)."""
    tools = Path(tempfile.mkdtemp(prefix="afbench-uv-"))
    got = subprocess.run([*PIP, "install", "--quiet", "--target", str(tools), UV])
    uv = tools / "bin" / "uv"
    if got.returncode != 0 or not uv.is_file():
        print("afbench setup: uv could not be installed; installing with pip", file=sys.stderr)
        return False
    settings = pip_settings()
    env = dict(os.environ)
    if settings.get("cert"):
        env.setdefault("SSL_CERT_FILE", settings["cert"][0])
    if settings.get("default-timeout"):
        env.setdefault("UV_HTTP_TIMEOUT", settings["default-timeout"][0])
    try:
        subprocess.run(uv_command(str(uv), settings, requirement), check=True, env=env)
    finally:
        subprocess.run(["rm", "-rf", str(tools)], check=False)
    return True


def main() -> int:
    requirement = sys.argv[1]
    if os.environ.get("AFBENCH_INSTALLER", "uv") != "pip" and with_uv(requirement):
        return 0
    return subprocess.run([*PIP, "install", "--quiet", "--editable", requirement]).returncode


if __name__ == "__main__":
    sys.exit(main())
