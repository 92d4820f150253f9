"""Hostile input, network faults and interruptions: clear errors, nothing lost or half-written.
bench/robustness.py runs the same properties far longer."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afbench.catalog import parse_manifest
from afbench.cli import main
from afbench.errors import AfbenchError
from afbench.fsutil import sha256_file

import properties as prop
from conftest import (
    REPO,
    body,
    config_file,
    config_for,
    fetch_release,
    https_source,
    redirect,
    release_dir,
    revision_dir,
    run_all,
    snakemake_env,
)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(which=st.integers(0, 2), mutation=prop.mutations)
def test_mutated_csv_is_the_same_or_our_error(which, mutation):
    assert prop.check_csv_mutation(which, mutation) in ("same", "error", "changed-valid")


@FAST
@given(
    which=st.integers(0, 2),
    seed=st.integers(0, 100),
    crlf=st.booleans(),
    bom=st.booleans(),
    quote_all=st.booleans(),
    extra=st.booleans(),
)
def test_harmless_changes_give_the_clean_result(which, seed, crlf, bom, quote_all, extra):
    files = [prop.MANIFEST, prop.SOURCES, prop.RESULTS]
    files[which] = prop.harmless_variant(files[which], seed, crlf, bom, quote_all, extra)
    assert prop.read_all(*files) == prop.CLEAN


@pytest.mark.parametrize(
    "cost",
    [
        "NaN",
        "nan",
        "Infinity",
        "-inf",
        "-0",
        "-0.0",
        "1e309",
        "0x10",
        "1_000",
        " 5",
        "5 ",
        "",
        '"1,5"',
    ],
)
def test_non_finite_and_odd_costs_are_refused(cost):
    data = prop.RESULTS.replace(b",12.5,", f",{cost},".encode())
    with pytest.raises(AfbenchError, match="row 2: field 'cost_usd'"):
        prop.read_all(prop.MANIFEST, prop.SOURCES, data)


@FAST
@given(index=st.integers(0, 20), value=prop.json_values)
def test_any_verdict_is_classified_or_refused(index, value):
    assert prop.check_verdict(index, value) in ("accepted", "rejected", "error")


@FAST
@given(index=st.integers(0, 20), value=prop.json_values | st.just(float("nan")))
def test_any_trial_result_is_classified_or_refused(index, value):
    prop.check_trial(index, value)


@FAST
@given(
    path=st.sampled_from(
        [
            ["release", "revision"],
            ["files", "manifest", "sha256"],
            ["source", "kind"],
            ["import", "budget_usd"],
            ["selections"],
            ["models", "demo-model-a", "path"],
            ["runs"],
            ["plans", "items"],
            ["report", "confidence"],
            ["results_dir"],
        ]
    ),
    value=prop.json_values,
)
def test_any_config_value_is_validated_or_refused(demo_yaml, path, value):
    prop.check_config(demo_yaml, path, value)


@pytest.mark.parametrize(
    "task_id", ["..", "../x", "a/b", "/abs", "-rf", ".hidden", "a\x00b", "a b", "x" * 201, "é"]
)
def test_unsafe_ids_never_become_paths(task_id):
    data = prop.MANIFEST.replace(b"t1,s1", f"{task_id},s1".encode(), 1)
    with pytest.raises(AfbenchError, match="M: row 2: "):
        parse_manifest(data, "M", prop.MANIFEST_MAP)


@pytest.mark.parametrize("name", ["../up", "a/b", "-x", ".x"])
def test_unsafe_selection_and_run_names_are_refused(fetched_config, tmp_path, capsys, name):
    tasks = [
        "tasks",
        "--release-dir",
        str(release_dir(fetched_config)),
        "--config",
        config_file(fetched_config),
        "--output",
        str(tmp_path / "sel.json"),
    ]
    assert main([*tasks, f"--name={name}", "--task", "demo_s01_t001"]) == 2
    assert not (tmp_path / "sel.json").exists()
    assert main([*tasks, "--name=ok", "--task", "demo_s01_t001"]) == 0
    run = [
        "import-run",
        f"--name={name}",
        "--kind",
        "verdicts",
        "--path",
        str(tmp_path),
        "--selection",
        str(tmp_path / "sel.json"),
        "--output-dir",
        str(tmp_path / "run"),
    ]
    assert main(run) == 2
    assert "expected a safe name" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_spreadsheet_formulas_are_neutralised_in_csv_not_json(fetched_config):
    fetched_config["models"]["demo-model-a"]["display_name"] = '=HYPERLINK("http://x")'
    out = run_all(fetched_config) / "imports/source-present/budget-200"
    rows = list(csv.DictReader((out / "leaderboard.csv").open()))
    assert rows[0]["display_name"] == '\'=HYPERLINK("http://x")'
    summary = json.loads((out / "summary.json").read_text())
    assert summary["leaderboard"][0]["display_name"] == '=HYPERLINK("http://x")'


def slow_headers(delay: float):
    def fault(handler):
        time.sleep(delay)
        handler.send_error(500)
        return True

    return fault


@pytest.mark.parametrize(
    "fault,overrides,match",
    [
        (slow_headers(2.5), {"retries": 0}, "ReadTimeout"),
        (body(b"x" * 1000, delay=2.5), {"retries": 0}, "download failed"),
        (
            body(b"x" * 1000, delay=0.5),
            {"total_timeout_s": 0.2, "read_timeout_s": 2},
            "total time limit",
        ),
    ],
)
def test_slow_servers_time_out(
    tmp_path, http_release, release_files, demo_yaml, fault, overrides, match
):
    http_release["handler"].faults[http_release["prefix"] + "MANIFEST.csv"] = fault
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"], **overrides),
        tmp_path / "r",
        demo_yaml,
    )
    with pytest.raises(AfbenchError, match=match):
        fetch_release(cfg, only=["manifest"])
    assert not (revision_dir(cfg) / "release/MANIFEST.csv").exists()


def test_redirect_loop_is_refused(tmp_path, http_release, release_files, demo_yaml):
    prefix = http_release["prefix"]
    http_release["handler"].faults[prefix + "MANIFEST.csv"] = redirect(prefix + "b.csv")
    http_release["handler"].faults[prefix + "b.csv"] = redirect(prefix + "MANIFEST.csv")
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"]),
        tmp_path / "r",
        demo_yaml,
    )
    with pytest.raises(AfbenchError, match="redirect loop"):
        fetch_release(cfg, only=["manifest"])


def snakemake_project(tmp_path: Path, http_release, release_files, demo_yaml) -> Path:
    import shutil

    root = tmp_path / "project"
    for part in ("workflow", "profiles"):
        shutil.copytree(REPO / part, root / part)
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"], read_timeout_s=5),
        root / "results",
        demo_yaml,
    )
    (root / "config").mkdir()
    (root / "config/demo.yaml").write_text(yaml.safe_dump(cfg))
    return root


def _kill_when(root: Path, snakemake: str, ready, check) -> None:
    """Start the pipeline, call check() on what is visible until ready() says so, SIGKILL the
    whole process group, then clear the lock a killed run leaves behind."""
    run = subprocess.Popen(
        [snakemake, "--cores", "2"],
        cwd=root,
        env=snakemake_env(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not ready():
        check()
        time.sleep(0.005)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    subprocess.run(
        [snakemake, "--unlock"], cwd=root, check=True, capture_output=True, env=snakemake_env()
    )


@pytest.mark.snakemake
def test_sigkill_mid_run_then_rerun_gives_identical_artifacts(
    tmp_path, http_release, release_files, demo_yaml
):
    """Kill the whole pipeline mid-fetch, then mid-import; no partial file is ever visible at
    a final path; `snakemake --unlock && snakemake` then gives byte-identical artifacts."""
    for rel in release_files:
        if rel.endswith(".csv"):
            http_release["handler"].faults[http_release["prefix"] + rel] = body(
                release_files[rel], delay=0.4
            )
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    reference = snakemake_project(tmp_path / "a", http_release, release_files, demo_yaml)
    subprocess.run(
        [snakemake, "--cores", "2"],
        cwd=reference,
        check=True,
        capture_output=True,
        timeout=300,
        env=snakemake_env(),
    )
    expected = _tree(reference / "results")
    root = snakemake_project(tmp_path / "b", http_release, release_files, demo_yaml)
    out = root / "results" / http_release["revision"]
    pins = _pins(root)
    fetched = set()

    def check_release():
        for rel, sha in pins.items():
            final = out / "release" / rel
            if final.exists():  # visible at a final path: complete and verified
                assert sha256_file(final) == sha
                fetched.add(rel)

    _kill_when(root, snakemake, lambda: len(fetched) >= 4, check_release)
    assert 0 < len(fetched) < len(pins)  # killed in the middle of fetching

    imports = out / "imports/source-present/budget-200"
    seen_imports = set()

    def check_imports():
        for path in imports.glob("*.json") if imports.exists() else []:
            rel = path.relative_to(root / "results").as_posix()
            assert path.read_bytes() == expected[rel]  # never partial, never different
            seen_imports.add(rel)

    _kill_when(root, snakemake, lambda: len(seen_imports) >= 2, check_imports)
    assert 0 < len(seen_imports) < 10  # killed in the middle of importing
    assert not (imports / "summary.json").exists()
    subprocess.run(
        [snakemake, "--cores", "2"],
        cwd=root,
        check=True,
        capture_output=True,
        timeout=300,
        env=snakemake_env(),
    )
    actual = _tree(root / "results")
    assert actual.keys() == expected.keys()
    # the artifact manifest carries the whole config's digest, which differs by results_dir
    assert [k for k in expected if expected[k] != actual[k] and k.endswith("artifacts.json")]
    assert [
        k for k in expected if expected[k] != actual[k] and not k.endswith("artifacts.json")
    ] == []


def _pins(root: Path) -> dict[str, str]:
    cfg = yaml.safe_load((root / "config/demo.yaml").read_text())
    pins = {cfg["files"][k]["path"]: cfg["files"][k]["sha256"] for k in cfg["files"]}
    pins.update({m["path"]: m["sha256"] for m in cfg["models"].values()})
    return pins


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and "logs" not in p.parts
    }
