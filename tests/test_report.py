"""The report: computed from imports, escaped, self-contained, checked in a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import revision_dir, run_all


@pytest.fixture
def report_dir(dir_config):
    return run_all(dir_config) / "report"


def test_report_is_self_contained_with_every_section(report_dir):
    html = (report_dir / "index.html").read_text()
    for anchor in (
        "leaderboard",
        "published",
        "paired",
        "infrastructure",
        "cost",
        "budget",
        "sources",
        "local-runs",
        "provenance",
    ):
        assert f'id="{anchor}"' in html
    assert html.count("<svg") == 4
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # no external assets
    assert "synthetic-banner" in html  # the demo release is marked
    analysis = json.loads((report_dir / "analysis.json").read_text())
    assert len(analysis["paired"]["pairs"]) == 36
    assert analysis["paired"]["correction"].startswith("Holm")
    assert analysis["budget_audit"]["over_budget_count"] == 1
    assert len(analysis["per_source"]) == 24


def test_input_text_is_escaped(tmp_path, dir_config):
    evil = '<script>alert("x")</script>'
    dir_config["models"]["demo-model-a"]["display_name"] = evil
    dir_config["release"]["name"] = "<b>bold</b>"
    run_all(dir_config)
    html = (revision_dir(dir_config) / "report" / "index.html").read_text()
    assert "<script>" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;" in html


def test_rerun_gives_byte_identical_artifacts(tmp_path, dir_config):
    run_all(dir_config)
    root = revision_dir(dir_config)
    first = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    shutil.rmtree(root)
    run_all(dir_config)
    second = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert first.keys() == second.keys()
    assert [p for p in first if first[p] != second[p]] == []
    manifest = json.loads((root / "artifacts.json").read_text())
    assert {a["path"] for a in manifest["artifacts"]} >= {
        "report/index.html",
        "release/receipt.json",
    }


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.browser
@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium not installed (.ci/run installs it)",
)
def test_report_opens_in_headless_chromium(report_dir, tmp_path):
    assert CHROMIUM, "chromium must be installed in CI"
    flags = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    url = (report_dir / "index.html").as_uri()
    opened = subprocess.run(
        [*flags, "--enable-logging=stderr", "--v=0", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    dom = opened.stdout
    assert "Uncaught" not in opened.stderr and "CONSOLE" not in opened.stderr
    assert dom.count("<table") >= 7 and dom.count("<svg") == 4
    assert "SYNTHETIC DEMO DATA" in dom
    shot = tmp_path / "report.png"
    subprocess.run(
        [*flags, f"--screenshot={shot}", "--window-size=1280,2400", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000


def test_report_refuses_numbers_older_than_their_pin(dir_config):
    """A new pin whose file the import refuses leaves the old import behind: the comparison
    and the report refuse it, naming the model, instead of showing old numbers beside the new
    file's hash."""
    from pathlib import Path

    from afbench.errors import AfbenchError
    from afbench.fsutil import sha256_bytes

    from conftest import afbench, fetch_release, import_model, published_flags, release_dir

    rev = run_all(dir_config)
    target = Path(dir_config["source"]["mirror"]) / "results/demo-model-a.csv"
    bad = target.read_bytes().replace(b",true,", b",yes,", 1)
    target.write_bytes(bad)
    dir_config["models"]["demo-model-a"]["sha256"] = sha256_bytes(bad)
    (release_dir(dir_config) / "results/demo-model-a.csv").unlink()
    fetch_release(dir_config)  # the new bytes, verified against the new pin
    with pytest.raises(AfbenchError, match="field 'success': not a boolean"):
        import_model(dir_config, "demo-model-a")
    imports = rev / "imports/source-present/budget-200"
    each = [a for m in sorted(imports.glob("demo-model-*.json")) for a in ("--import", m)]
    receipt = release_dir(dir_config) / "receipt.json"
    with pytest.raises(AfbenchError, match="import of model 'demo-model-a' is older than its pin"):
        afbench(
            "job",
            "compare-models",
            *each,
            "--verified",
            receipt,
            "--strict-budget=false",
            *published_flags(dir_config),
            "--summary",
            rev / "s.json",
            "--leaderboard",
            rev / "l.csv",
        )
    assert not (rev / "s.json").exists()
    with pytest.raises(AfbenchError) as err:
        afbench(
            "report",
            "--summary",
            imports / "summary.json",
            *each,
            "--catalog",
            rev / "tasks/catalog.json",
            "--receipt",
            receipt,
            "--output-dir",
            rev / "r2",
        )
    assert "import of model 'demo-model-a' is older than its pin" in str(err.value)
    assert not (rev / "r2").exists()
