"""The embedded demo release and the configuration schema."""

from __future__ import annotations

import copy
import csv
import io
import tomllib
from pathlib import Path

import pytest
import yaml

from afbench import demo
from afbench.config import load_config, validate_config
from afbench.errors import AfbenchError
from afbench.fsutil import sha256_bytes

from conftest import REPO


def test_committed_demo_release_is_what_the_generator_writes(release_files):
    committed = {
        p.relative_to(REPO / "resources/demo-release").as_posix(): p.read_bytes()
        for p in (REPO / "resources/demo-release").rglob("*")
        if p.is_file()
    }
    assert committed == release_files
    assert demo.generate_release() == release_files  # deterministic


def test_demo_release_has_the_official_scale_and_is_marked_synthetic(release_files):
    manifest = list(csv.DictReader(io.StringIO(release_files["MANIFEST.csv"].decode())))
    sources = list(csv.DictReader(io.StringIO(release_files["SOURCES.csv"].decode())))
    assert len(manifest) == 341 and len(sources) == 24
    assert sum(int(r["n_obligations"]) for r in manifest) == 1155
    assert all(r["task_id"].startswith("demo_") for r in manifest)
    assert all(s["source_id"].startswith("demo_") for s in sources)
    models = [k for k in release_files if k.startswith("results/")]
    assert len(models) == 9 and all("demo-model" in m for m in models)
    official = {281, 211, 201, 181, 180, 179, 165, 152, 150}
    assert not set(demo.INTENDED_PASS_COUNTS.values()) & official
    assert b"SYNTHETIC" in release_files["README.md"]


def test_demo_config_pins_the_generated_files_and_the_reproducible_commit(tmp_path, release_files):
    cfg = load_config([REPO / "config/demo.yaml"])
    assert cfg["release"]["synthetic"] is True
    assert cfg["files"]["manifest"]["sha256"] == sha256_bytes(release_files["MANIFEST.csv"])
    for spec in cfg["models"].values():
        assert spec["sha256"] == sha256_bytes(release_files[spec["path"]])
    commit = demo.build_repository(REPO / "resources/demo-release", tmp_path / "a")
    again = demo.build_repository(REPO / "resources/demo-release", tmp_path / "b")
    assert commit == again == cfg["release"]["revision"]


def test_official_config_has_the_known_pins_and_null_pins_for_the_rest():
    cfg = load_config([REPO / "config/config.yaml"])
    assert cfg["release"]["revision"] == "af1aa38fd44e019e566bce0b5a168609a886d8e6"
    assert cfg["release"]["repository"] == "facebookresearch/autoformbench"
    assert cfg["files"]["manifest"]["sha256"].startswith("8fcde338")
    assert cfg["files"]["sources"]["sha256"].startswith("854135c5")
    assert cfg["models"]["gpt-6-astra"]["sha256"].startswith("64a2174e")
    assert sorted(s for s, m in cfg["models"].items() if m["sha256"] is None) == sorted(
        [
            "opus-5",
            "gpt-5.6-sol",
            "fable-5",
            "deepseek-v4.1-flash",
            "gemini-3.7-flash",
            "kimi-k3",
            "sonnet-5",
            "opus-4.8",
        ]
    )
    assert cfg["release"]["dates"]["first_public_release"] is None
    assert cfg["release"]["nominal_budget_usd"] == 200


@pytest.mark.parametrize(
    "mutate,field",
    [
        (lambda c: c["release"].update(revision="main"), "release/revision"),
        (lambda c: c["files"]["manifest"].update(sha256="abc"), "files/manifest/sha256"),
        (lambda c: c.update(unknown_key=1), "(top level)"),
        (lambda c: c["release"].update(nominal_budget_usd=-1), "release/nominal_budget_usd"),
        (lambda c: c["selections"].update({"../x": {}}), "selections"),
        (lambda c: c.update(release=5), "release"),
        (
            lambda c: c["models"]["demo-model-a"].update(path="../etc/passwd"),
            "models/demo-model-a/path",
        ),
    ],
)
def test_schema_rejects_bad_config_naming_the_field(demo_yaml, mutate, field):
    cfg = copy.deepcopy(demo_yaml)
    mutate(cfg)
    with pytest.raises(AfbenchError) as err:
        validate_config(cfg, "my.yaml")
    assert "my.yaml" in str(err.value) and field in str(err.value)


def test_defaults_are_filled_the_same_way_as_snakemake_validate(demo_yaml):
    from snakemake.utils import validate

    ours = validate_config(demo_yaml)
    theirs = copy.deepcopy(demo_yaml)
    validate(theirs, str(REPO / "scripts/afbench/data/config.schema.yaml"))
    assert ours == theirs
    assert ours["columns"]["results"]["cost_usd"] == "cost_usd"
    assert ours["import"]["strict_budget"] is False


def test_environment_yml_and_pyproject_pin_the_same_versions():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    pins = dict(d.split("==") for d in project["dependencies"] + extras["test"] + extras["parquet"])
    env = yaml.safe_load((REPO / "environment.yml").read_text())["dependencies"]
    conda = dict(d.split("=") for d in env if isinstance(d, str) and "=" in d)
    assert conda.pop("python") == "3.11"
    assert {k.lower(): v for k, v in conda.items()} == {k.lower(): v for k, v in pins.items()}


def test_unknown_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(AfbenchError, match="config file not found"):
        load_config([tmp_path / "missing.yaml"])
    bad = Path(tmp_path / "bad.yaml")
    bad.write_text("release: [unclosed\n")
    with pytest.raises(AfbenchError, match="not valid YAML"):
        load_config([bad])


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


def test_the_readers_fields_are_the_schemas_columns():
    """The CSV readers' field lists (what a job's --column flags must map) are the schema's
    column mappings, in the schema's order."""
    from afbench.catalog import MANIFEST_FIELDS, SOURCES_FIELDS
    from afbench.config import default_columns
    from afbench.official import RESULT_FIELDS

    for kind, fields in (
        ("manifest", MANIFEST_FIELDS),
        ("sources", SOURCES_FIELDS),
        ("results", RESULT_FIELDS),
    ):
        assert tuple(default_columns(kind)) == fields
