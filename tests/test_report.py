"""The report: computed from imports, escaped, self-contained, checked in a real browser."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import pytest

from conftest import (
    REPO,
    add_local_runs,
    afbench,
    config_for,
    demo_revision,
    job,
    revision_dir,
    run_all,
    write_tree,
)


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


FILE_NAME = re.compile(r"[\w./-]+\.(?:json|jsonl|csv|svg|html|yaml|png)\b")


def mentioned_files(html: str) -> set[str]:
    """The file names the report's text mentions (tags and styles left out)."""
    text = unescape(re.sub(r"<style>.*?</style>|<svg.*?</svg>|<[^>]+>", " ", html, flags=re.S))
    return {Path(name).name for name in FILE_NAME.findall(text)}


def test_every_file_the_report_names_is_one_the_pipeline_writes(report_dir):
    rev = report_dir.parent
    written = {p.name for p in rev.rglob("*") if p.is_file()}
    html = (report_dir / "index.html").read_text()
    named = mentioned_files(html)
    assert "analysis.json" in named and named <= written, named - written
    # the whole config's digest is in the artifact manifest (there is no audit file)
    manifest = json.loads((rev / "artifacts.json").read_text())
    assert manifest["kind"] == "afbench artifact manifest" and "config_digest" in manifest
    assert "the artifact manifest has the whole config&#x27;s" in html


def test_the_readme_image_is_of_the_current_demo_revision():
    """`make docs-image` shoots docs/report.png from the demo report and writes the revision it
    shows beside it: a new demo revision needs a new image."""
    assert (REPO / "docs/report.revision").read_text() == demo_revision() + "\n"
    png = (REPO / "docs/report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20]) == 1280
    readme = (REPO / "README.md").read_text()
    assert "![the demo report](docs/report.png)" in readme and "make docs-image" in readme


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
# skipped where chromium is missing, but in CI, where its absence fails the test
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium not installed (.ci/run installs it)",
)


@pytest.mark.browser
@needs_chromium
def test_report_opens_in_headless_chromium(report_dir, tmp_path):
    assert CHROMIUM, "chromium must be installed in CI"
    flags = chromium_flags(tmp_path / "profile")
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

    from conftest import fetch_release, import_model, published_flags, release_dir

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


# --- the layout at 1280-1920 px, on a report with 45 models, local runs and executed runs ------
WIDTHS = (1280, 1400, 1920)
# opens every folded list, then measures every card, every table in it and every number cell;
# the report itself has no script: this runs in a copy of it
MEASURE = """<script>
document.querySelectorAll('details').forEach(d => d.open = true);
const out = {page: [document.documentElement.scrollWidth, document.documentElement.clientWidth],
             cards: [], tables: [], broken: []};
document.querySelectorAll('.card').forEach(card => {
  const style = getComputedStyle(card);
  const inner = card.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const name = card.previousElementSibling ? card.previousElementSibling.id : '';
  out.cards.push([name, card.scrollWidth, card.clientWidth]);
  card.querySelectorAll('table').forEach(t =>
    out.tables.push([name + ' ' + t.className, t.getBoundingClientRect().width, inner]));
});
document.querySelectorAll('td:not(.t)').forEach(td => {
  if (td.closest('tr.reasons')) return;
  const range = document.createRange();
  range.selectNodeContents(td);
  const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
  if (lines > td.querySelectorAll('br').length + 1) out.broken.push(td.textContent);
});
const pre = document.createElement('pre');
pre.id = 'measured';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def chromium_flags(profile: Path) -> list[str]:
    return [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]


def measured_layout(html: Path, width: int, tmp: Path) -> dict:
    page = tmp / f"measured-{width}.html"
    page.write_text(html.read_text().replace("</body>", MEASURE + "</body>"))
    dom = subprocess.run(
        [
            *chromium_flags(tmp / "profile"),
            f"--window-size={width},2000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return json.loads(unescape(re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)[1]))


def wide_display_names(slugs: list[str], base: dict) -> dict[str, str]:
    """The demo's names for the nine models; their copies' names, every fifth a long one."""
    names = {}
    for slug in slugs:
        first, _, copy_number = slug.partition("-model-")[2].partition("-")
        stem = base[f"demo-model-{first}"]["display_name"].replace(" (synthetic)", "")
        if not copy_number:
            names[slug] = f"{stem} (synthetic)"
        elif copy_number == "5":
            names[slug] = f"{stem} copy 5 (synthetic, reasoning effort high, 64k thinking)"
        else:
            names[slug] = f"{stem} copy {copy_number} (synthetic)"
    return names


@pytest.fixture(scope="module")
def wide_report(tmp_path_factory, demo_yaml) -> Path:
    """The report of 45 models (the demo generator's scaled release), with a local run of the
    Harbor fixture jobs, a verdict run, and those jobs again as an executed run (trial receipts
    naming them) with its cost ledger."""
    from afbench import demo, ledger
    from afbench.cli.actions import render_report
    from afbench.records import TRIAL_RECEIPT, record

    base = tmp_path_factory.mktemp("wide")
    files = demo.generate_release(1, 5)
    slugs = list(demo.scaled_models(1, 5))
    names = wide_display_names(slugs, demo_yaml["models"])
    cfg = copy.deepcopy(demo_yaml)
    cfg["models"] = {
        slug: {"display_name": names[slug], "path": f"results/{slug}.csv", "sha256": None}
        for slug in slugs
    }
    cfg["release"]["published"] = {"source": None}
    mirror = write_tree(base / "mirror", files)
    cfg = config_for(files, "d" * 40, {"kind": "dir", "mirror": str(mirror)}, base / "out", cfg)
    rev = run_all(cfg)
    catalog = rev / "tasks/catalog.json"
    release = json.loads(catalog.read_text())["release"]
    jobs, tasks, selection = add_local_runs(base, rev)
    # the executed run: one trial receipt per fixture job, as run-trial writes them, and the
    # live ledger those trials kept
    live, receipts = base / "jobs.ledger.jsonl", []
    for n, folder in enumerate(jobs):
        trial = {
            "job_name": folder.name,
            "task_id": tasks[0],
            "attempt": 1,
            "agent": "terminus-2",
            "model": "anthropic/claude-opus-4-6",
        }
        assert ledger.start(live, trial, 200, 1000) is None
        ledger.finish(live, trial, [12.5 * (n + 1)], paid=True, nominal=200)
        receipts.append(base / f"receipt-{folder.name}.json")
        receipts[-1].write_text(
            json.dumps(
                record(
                    TRIAL_RECEIPT,
                    release=release,
                    task_id=tasks[0],
                    attempt=1,
                    job_name=folder.name,
                    job_dir=str(folder),
                    run_agent=trial["agent"],
                    run_model=trial["model"],
                    worst_case_usd=200.0,
                    refused=None,
                )
            )
        )
    executed = rev / "runs/executed-harbor-fixtures"
    job(
        "import-executed",
        f"--selection={selection}",
        "--name=executed-harbor-fixtures",
        *[f"--receipt={p}" for p in receipts],
        f"--summary={executed / 'summary.json'}",
        f"--outcomes={executed / 'outcomes.csv'}",
        f"--attempts={executed / 'attempts.csv'}",
    )
    cost_ledger = rev / "execute/cost-ledger.json"
    job(
        "write-cost-ledger",
        *[f"--receipt={p}" for p in receipts],
        f"--ledger={live}",
        "--max-cost-usd=1000",
        f"--output={cost_ledger}",
    )
    imports = rev / "imports/source-present/budget-200"
    out = rev / "report/executed"
    render_report(
        imports / "summary.json",
        [imports / f"{slug}.json" for slug in slugs],
        catalog,
        rev / "release/receipt.json",
        [rev / f"runs/{name}/summary.json" for name in ("harbor-fixtures", "verdicts-three")]
        + [executed / "summary.json"],
        0.95,
        "0" * 64,
        out / "index.html",
        out / "analysis.json",
        None,
        cost_ledger,
    )
    return out / "index.html"


@pytest.mark.browser  # builds the browser test's report: only where that test runs
def test_the_wide_report_has_what_the_layout_test_needs(wide_report):
    html = wide_report.read_text()
    analysis = json.loads((wide_report.parent / "analysis.json").read_text())
    assert len(analysis["leaderboard"]) == 45 and len(analysis["paired"]["pairs"]) == 990
    runs = {r["run"] for r in analysis["local_runs"]}
    assert runs == {"harbor-fixtures", "verdicts-three", "executed-harbor-fixtures"}
    assert 'id="cost-ledger"' in html and "NOT CONFORMANT: " in html
    assert html.count("<details>") >= 3  # the pairs, the per-source tables, the input files
    written = {p.name for p in wide_report.parents[2].rglob("*") if p.is_file()}
    assert mentioned_files(html) <= written


@pytest.mark.browser
@needs_chromium
@pytest.mark.parametrize("width", WIDTHS)
def test_every_table_fits_its_card_with_no_sideways_scroll(wide_report, width, tmp_path):
    assert CHROMIUM, "chromium must be installed in CI"
    layout = measured_layout(wide_report, width, tmp_path)
    page_scroll, page_width = layout["page"]
    assert page_scroll <= page_width, "the page scrolls sideways"
    assert [c for c in layout["cards"] if c[1] > c[2]] == [], "a card scrolls sideways"
    # every table measured, the folded ones opened
    assert len(layout["tables"]) == wide_report.read_text().count("<table") >= 15
    assert all(width > 0 for _, width, _ in layout["tables"])
    assert [t for t in layout["tables"] if t[1] > t[2] + 0.5] == [], (
        "a table is wider than its card"
    )
    assert layout["broken"] == [], "a number broke across lines"
