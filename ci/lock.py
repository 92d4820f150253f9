"""Write the locks of requirements/ from pyproject.toml (`make lock`): test.txt for
`.[test]` (`make setup`, the tests), run.txt for the pipeline alone (`make demo`). Each
holds every package, transitive ones too, at one version with its hashes, for every platform
on Python >= 3.11 (uv 0.13.8's universal resolution, from the sources this machine's pip is
configured with), and records the digest of the pyproject.toml dependencies it was written from.
run.txt is resolved within test.txt's versions, so the pipeline runs on the packages it is
tested with.

    python3 ci/lock.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from install import (
    DIGEST_LINE,
    PYTHON,
    REPO,
    dependency_digest,
    installed_uv,
    pip_settings,
    uv_sources,
)

LOCKS = REPO / "requirements"


def compile_lock(uv: Path, sources: list[str], out: Path, extras: list[str], constraint=None):
    """uv's lock of pyproject.toml with these extras, headed by its dependencies' digest."""
    command = [str(uv), "pip", "compile", "pyproject.toml", "--quiet", "--universal"]
    command += ["--python-version", PYTHON, "--generate-hashes", "--no-emit-index-url"]
    command += ["--custom-compile-command", "make lock", *sources, "--output-file", str(out)]
    for extra in extras:
        command += ["--extra", extra]
    if constraint:
        command += ["--constraint", str(constraint)]
    subprocess.run(command, check=True, cwd=REPO)
    digest = f"{DIGEST_LINE}{dependency_digest(REPO / 'pyproject.toml')}\n"
    text = out.read_text()
    if constraint:  # the pins' temporary file, named for the lock they come from
        text = text.replace(str(constraint), "requirements/test.txt")
    out.write_text(digest + text)


def pins(lock: Path) -> str:
    """The lock's requirement lines without their hashes: a constraints file."""
    lines = [line.removesuffix(" \\") for line in lock.read_text().splitlines()]
    return "".join(f"{line}\n" for line in lines if line and line[0].isalnum())


def main() -> int:
    uv = installed_uv()
    if uv is None:
        print("make lock: uv could not be installed from the package index", file=sys.stderr)
        return 1
    sources = uv_sources(pip_settings())
    LOCKS.mkdir(exist_ok=True)
    test = LOCKS / "test.txt"
    try:
        compile_lock(uv, sources, test, ["test"])
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as within:
            within.write(pins(test))
            within.flush()
            compile_lock(uv, sources, LOCKS / "run.txt", [], within.name)
    finally:
        shutil.rmtree(uv.parents[1], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
