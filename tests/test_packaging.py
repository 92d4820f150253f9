"""One set of versions: the locks of requirements/ are written from pyproject.toml, hold its pins,
agree with each other, are what this environment has installed, and are what environment.yml
and the rules' conda environment install."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import tomllib

import yaml
from packaging.markers import Marker
from packaging.utils import canonicalize_name

from conftest import REPO

LOCKS = REPO / "requirements"
# one entry of a lock: `name==version ; marker \`, then its `--hash=` lines
ENTRY = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==(?P<version>[^ ;\\]+)")


def _ci_script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "ci" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lock(name: str) -> dict[tuple[str, str], tuple[str, frozenset[str]]]:
    """{(package, marker): (version, hashes)} of requirements/<name>."""
    entries: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}
    lines = (LOCKS / name).read_text().splitlines()
    for number, line in enumerate(lines):
        found = ENTRY.match(line)
        if not found:
            continue
        marker = line.removesuffix("\\").partition(";")[2].strip()
        hashes = set()
        for after in lines[number + 1 :]:
            if not after.strip().startswith("--hash="):
                break
            hashes.add(after.strip().removesuffix("\\").strip())
        key = (canonicalize_name(found["name"]), marker)
        entries[key] = (found["version"], frozenset(hashes))
    return entries


def _here(lock) -> dict[str, str]:
    """{package: version} of the lock's entries whose markers hold for this interpreter."""
    return {
        name: version
        for (name, marker), (version, _) in lock.items()
        if not marker or Marker(marker).evaluate()
    }


def _pins(requirements: list[str]) -> dict[str, str]:
    pins = dict(d.split("==") for d in requirements)
    return {canonicalize_name(name.split("[")[0]): version for name, version in pins.items()}


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_each_lock_was_written_from_this_pyprojects_dependencies():
    install = _ci_script("install")
    for name in ("run.txt", "test.txt"):
        assert install.stale(LOCKS / name) is None, name
        assert all(hashes for _, hashes in _lock(name).values()), name


def test_a_lock_written_from_other_dependencies_is_refused_by_name(tmp_path):
    install = _ci_script("install")
    lock = tmp_path / "test.txt"
    lock.write_text((LOCKS / "test.txt").read_text().replace("sha256: ", "sha256: 0", 1))
    why = install.stale(lock)
    assert str(lock) in why and "expected=" in why and "found=0" in why and "make lock" in why


def test_every_pin_of_pyproject_is_the_locks_version():
    project = _project()
    extras = project["optional-dependencies"]
    runtime = _pins(project["dependencies"])
    tested = _pins(project["dependencies"] + extras["test"])
    for name, pins in (("run.txt", runtime), ("test.txt", tested)):
        locked = _here(_lock(name))
        assert {package: locked.get(package) for package in pins} == pins, name


def test_the_pipelines_lock_is_within_the_tests_lock():
    run, test = _lock("run.txt"), _lock("test.txt")
    assert {key: test.get(key) for key in run} == run  # same versions, same hashes


def test_this_environment_has_exactly_the_locks_packages():
    """`make setup` installs requirements/test.txt and afbench without dependencies: nothing
    else is installed and nothing floats (pip itself, and afbench, are not in the lock)."""
    installed = {
        canonicalize_name(dist.metadata["Name"]): dist.version
        for dist in importlib.metadata.distributions()
    }
    for tool in ("pip", "afbench", "wheel"):
        installed.pop(tool, None)
    assert installed == _here(_lock("test.txt"))


def _conda(path: str) -> tuple[dict[str, str | None], list]:
    env = yaml.safe_load((REPO / path).read_text())["dependencies"]
    conda = {}
    for entry in env:
        if isinstance(entry, str):
            name, _, version = entry.partition("=")
            conda[name] = version or None
    pip = next((entry["pip"] for entry in env if isinstance(entry, dict)), [])
    return conda, pip


def test_environment_yml_installs_the_tests_lock():
    conda, pip = _conda("environment.yml")
    setuptools = _here(_lock("test.txt"))["setuptools"]
    assert conda == {"python": _ci_script("install").PYTHON, "pip": None, "setuptools": setuptools}
    assert pip == ["--require-hashes", "-r requirements/test.txt"]


def test_the_rules_conda_environment_installs_the_pipelines_lock():
    conda, pip = _conda("workflow/envs/afbench.yaml")
    setuptools = _here(_lock("test.txt"))["setuptools"]
    assert conda == {"python": _ci_script("install").PYTHON, "pip": None, "setuptools": setuptools}
    assert pip == []  # the post-deploy script installs the lock, from the checkout
    deploy = (REPO / "workflow/envs/afbench.post-deploy.sh").read_text().splitlines()
    assert 'checkout="$(dirname "$0")/../.."' in deploy
    assert [line for line in deploy if line.startswith("python")] == [
        'python -m pip install --require-hashes --requirement "$checkout/requirements/run.txt"',
        'python -m pip install --no-deps --no-build-isolation "$checkout"',
    ]
