"""One set of pins: pyproject.toml, environment.yml and the rules' conda environment agree."""

from __future__ import annotations

import tomllib

import yaml

from conftest import REPO


def test_environment_yml_and_pyproject_pin_the_same_versions():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    pins = dict(d.split("==") for d in project["dependencies"] + extras["test"] + extras["parquet"])
    pins = {name.split("[")[0]: version for name, version in pins.items()}  # moto[server]
    env = yaml.safe_load((REPO / "environment.yml").read_text())["dependencies"]
    conda = dict(d.split("=") for d in env if isinstance(d, str) and "=" in d)
    assert conda.pop("python") == "3.11"
    assert {k.lower(): v for k, v in conda.items()} == {k.lower(): v for k, v in pins.items()}


def test_the_rules_conda_environment_pins_the_same_runtime_versions():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = {k.lower(): v for k, v in (d.split("==") for d in project["dependencies"])}
    env = yaml.safe_load((REPO / "workflow/envs/afbench.yaml").read_text())["dependencies"]
    conda = dict(d.split("=") for d in env if isinstance(d, str) and "=" in d)
    assert conda.pop("python") == "3.11"
    assert {k.lower(): v for k, v in conda.items()} == pins  # every runtime pin, no other
    assert "pip" in env  # the post-deploy script installs this checkout's afbench with it
    deploy = (REPO / "workflow/envs/afbench.post-deploy.sh").read_text()
    assert 'pip install --no-deps --no-build-isolation "$(dirname "$0")/../.."' in deploy
