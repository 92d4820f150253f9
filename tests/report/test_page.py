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
from hypothesis import given

import afbench.frames as af
from afbench.core.config import load_config
from afbench.core.errors import AfbenchError
from afbench.execution import ledger
from afbench.kinds import SELECTION
from afbench.release import demo
from afbench.release.identity import identity
from afbench.report.page import text_digest, visible_text

import properties as prop
from chromium import CHROMIUM, chromium_flags, needs_chromium
from conftest import (
    AFBENCH,
    EXAMPLES_60,
    FIXTURES,
    REPO,
    TASK,
    _hostile_environment,
    add_local_runs,
    afbench,
    config_for,
    copy_demo_run,
    declared,
    demo_revision,
    job,
    published_flags,
    release_dir,
    revision_dir,
    run_all,
    write_tree,
)


@pytest.fixture
def report_dir(built_config):
    return revision_dir(built_config) / "report"


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
        "failures",
        "tasks",
        "local-runs",
        "provenance",
    ):
        assert f'id="{anchor}"' in html
    assert html.count("<svg") == 5  # the failure classes' figure too
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


def recorded_image() -> dict[str, str]:
    """What `make docs-image` wrote beside docs/report.png: the demo revision the picture shows
    and the digest of its report's visible text (afbench.report.page.visible_text)."""
    lines = (REPO / "docs/report.revision").read_text().splitlines()
    return dict(line.split(" ", 1) for line in lines)


def test_the_readme_image_is_of_the_current_demo_revision():
    """`make docs-image` shoots docs/report.png from the demo report and writes the revision it
    shows beside it: a new demo revision needs a new image."""
    assert recorded_image()["revision"] == demo_revision(), "run make docs-image"
    png = (REPO / "docs/report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20]) == 1280
    readme = (REPO / "README.md").read_text()
    assert "![the demo report](docs/report.png)" in readme and "make docs-image" in readme


FIGURES = ["leaderboard", "cost_success", "per_source", "paired", "failures"]


@pytest.fixture(scope="session")
def demo_upstream(tmp_path_factory) -> Path:
    """The demo release's git repository, as the workflow's build_demo_upstream makes it."""
    out = tmp_path_factory.mktemp("upstream") / "demo-upstream"
    job(
        "build-demo-upstream",
        f"--release-files={REPO / 'resources/demo-release'}",
        f"--output={out}",
    )
    return out


def local_run(cfg: dict, demo_yaml: dict, upstream: Path, name: str) -> Path:
    """One of the demo config's local runs, imported and analysed as the workflow's
    select_tasks, checksum_tasks, import_run, analyse_run_failures and pass_at_k do; its
    folder."""
    rev, run = revision_dir(cfg), demo_yaml["runs"][name]
    chosen = run["selection"]
    selection = rev / f"tasks/selections/{chosen}.json"
    checksums = rev / f"tasks/checksums/{chosen}.json"
    if not checksums.is_file():
        job(
            *["select-tasks", f"--catalog={rev / 'tasks/catalog.json'}", f"--name={chosen}"],
            *[f"--task={t}" for t in demo_yaml["selections"][chosen]["tasks"]],
            *["--frozen=false", f"--output={selection}"],
        )
        job(
            *["checksum-tasks", f"--selection={selection}", f"--repository-dir={upstream}"],
            *["--repository-name=results/demo-upstream", f"--output={checksums}"],
        )
    # named as Snakemake names them: relative to the config file, then to the project
    paths = [os.path.normpath(f"config/{path}") for path in run["paths"]]
    out = rev / "runs" / name
    job(
        *["import-run", f"--selection={selection}", f"--name={name}", f"--kind={run['kind']}"],
        *[f"--path={REPO / path}" for path in paths],
        *[f"--path-name={path}" for path in paths],
        f"--budget-usd={run.get('budget_usd', 200)}",  # the schema's default
        *[f"--task-checksums={checksums}", f"--summary={out / 'summary.json'}"],
        *[f"--outcomes={out / 'outcomes.csv'}", f"--attempts={out / 'attempts.csv'}"],
    )
    job(
        *["analyse-run-failures", f"--summary={out / 'summary.json'}"],
        *[f"--outcomes={out / 'outcomes.csv'}", f"--output={out / 'failure-anatomy.json'}"],
    )
    job(
        *["pass-at-k", f"--summary={out / 'summary.json'}", f"--attempts={out / 'attempts.csv'}"],
        *[f"--catalog={rev / 'tasks/catalog.json'}", "--confidence=0.95"],
        f"--output={out / 'pass-at-k.json'}",
    )
    return out


def demo_report_as_the_pipeline_renders_it(
    demo_run: dict, demo_yaml: dict, upstream: Path, dest: Path
) -> Path:
    """The demo report `make demo` writes (its index.html): the chain of the session's demo run
    (run_all) under the demo's own repository name, and the job commands the workflow adds to
    it, as it passes them: the config's local runs, the figures, and the report of them all."""
    cfg = copy.deepcopy(demo_run)
    cfg["results_dir"] = str(dest / "results")
    cfg["release"]["repository"] = demo_yaml["release"]["repository"]  # the header names it
    rev = run_all(cfg, until="analyses")  # the figures and the page: the jobs below
    imports = rev / "imports/source-present/budget-200"
    inputs = [f"--summary={imports / 'summary.json'}"]
    inputs += [f"--import={imports / f'{m}.json'}" for m, s in cfg["models"].items() if s["sha256"]]
    inputs += [f"--catalog={rev / 'tasks/catalog.json'}"]
    inputs += [f"--receipt={release_dir(cfg) / 'receipt.json'}", "--confidence=0.95"]
    runs = [local_run(cfg, demo_yaml, upstream, name) for name in demo_yaml["runs"]]
    figures = [f"--figure={rev / 'report/figures' / name}.svg" for name in FIGURES]
    anatomy = f"--anatomy={imports / 'failure-anatomy.json'}"
    job("render-figures", *inputs, *figures, anatomy)
    html = rev / "report/index.html"
    job(
        *["render-report", *inputs, *[f"--run={run / 'summary.json'}" for run in runs]],
        f"--settings-digest={'0' * 64}",  # masked in the text compared (visible_text)
        *[*figures, f"--html={html}", f"--analysis={rev / 'report/analysis.json'}", anatomy],
        *[f"--run-anatomy={run / 'failure-anatomy.json'}" for run in runs],
        f"--task-table={imports / 'task-table.json'}",
        *[f"--pass-at-k={run / 'pass-at-k.json'}" for run in runs],
    )
    return html


def test_the_readme_image_shows_the_report_as_it_is_now(
    demo_run, demo_yaml, demo_upstream, tmp_path
):
    """The picture is the report of today's code: the digest of the demo report's visible text
    (methods, notes, numbers) that `make docs-image` recorded beside it is the one this code's
    report has."""
    html = demo_report_as_the_pipeline_renders_it(demo_run, demo_yaml, demo_upstream, tmp_path)
    found = text_digest(html)
    expected = recorded_image()["text-sha256"]
    assert found == expected, (
        f"docs/report.png shows an older report (docs/report.revision: expected={expected} "
        f"found={found}): run make docs-image"
    )


def _pass_at_k_section(html: Path) -> str:
    """The report's pass@k section (report.page.pass_at_k_section), or "" when it has none."""
    text = html.read_text()
    start = text.find('<h3 id="pass-at-k">')
    if start < 0:
        return ""
    return text[start : text.index("</p>", text.index('<p class="note">', start)) + 4]


def test_the_user_report_shows_the_runs_pass_at_k_as_the_pipeline_report_does(
    demo_run, demo_yaml, demo_upstream, tmp_path
):
    """`afbench report --run DIR/summary.json` shows the pass@k section the pipeline's report
    shows, made from the attempts.csv its import wrote beside the summary; a summary whose
    folder has no attempts.csv shows none (nothing to estimate from), and one whose attempts
    the pass-at-k job would refuse shows none and says why."""
    html = demo_report_as_the_pipeline_renders_it(demo_run, demo_yaml, demo_upstream, tmp_path)
    rev = html.parent.parent
    imports = rev / "imports/source-present/budget-200"
    runs = [rev / "runs" / name / "summary.json" for name in demo_yaml["runs"]]
    inputs = ["--summary", imports / "summary.json", "--catalog", rev / "tasks/catalog.json"]
    inputs += ["--receipt", rev / "release/receipt.json"]
    for model in sorted(imports.glob("demo-model-*.json")):
        inputs += ["--import", model]
    shown = _pass_at_k_section(html)
    assert "pass@k of the local runs" in shown
    run_flags = [f"--run={run}" for run in runs]
    assert afbench("report", *inputs, *run_flags, "--output-dir", tmp_path / "u") == []
    assert _pass_at_k_section(tmp_path / "u/index.html") == shown
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(runs[0], alone / "summary.json")
    afbench("report", *inputs, f"--run={alone / 'summary.json'}", "--output-dir", tmp_path / "v")
    assert (tmp_path / "v/index.html").is_file()
    assert _pass_at_k_section(tmp_path / "v/index.html") == ""
    attempts = (runs[0].parent / "attempts.csv").read_text()
    (alone / "attempts.csv").write_text(attempts.replace("demo_s01_t001", "not_in_the_catalog"))
    run = f"--run={alone / 'summary.json'}"
    [warning] = afbench("report", *inputs, run, "--output-dir", tmp_path / "w")
    assert warning.startswith(f"run '{json.loads(runs[0].read_text())['run']}' is shown without")
    assert "field 'task_id': a task that is not in the catalog" in warning
    assert _pass_at_k_section(tmp_path / "w/index.html") == ""
    (alone / "attempts.csv").write_text(attempts.replace(",accepted,", ",acepted,", 1))
    with pytest.raises(AfbenchError, match="not an attempt's outcome"):
        afbench("report", *inputs, run, "--output-dir", tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_the_compared_text_is_what_a_reader_sees_and_no_machine_fact():
    page = (
        "<html><head><title>t</title><style>p {}</style></head><body><p>CR2 &amp;<br>Wilson</p>"
        "<svg><metadata>Matplotlib v3.11.2</metadata><text>0.5</text></svg><table><tr>"
        "<td>python</td><td>3.11.7</td><td>snakemake</td><td>9.27.1</td></tr></table></body></html>"
    )
    assert visible_text(page) == "CR2 & Wilson 0.5 python <version> snakemake <version>"
    assert visible_text(page.replace("3.11.7", "3.12.1")) == visible_text(page)


def test_input_text_is_escaped(tmp_path, dir_config):
    evil = '<script>alert("x")</script>'
    dir_config["models"]["demo-model-a"]["display_name"] = evil
    dir_config["release"]["name"] = "<b>bold</b>"
    run_all(dir_config)
    html = (revision_dir(dir_config) / "report" / "index.html").read_text()
    assert "<script>" not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;" in html


def test_rerun_gives_byte_identical_artifacts(tmp_path, demo_run):
    """The chain run again, into another folder, writes the session's demo run byte for byte
    (its first run: demo_run, from the same mirror and config)."""
    first_root = revision_dir(demo_run)
    first = {
        p.relative_to(first_root): p.read_bytes() for p in first_root.rglob("*") if p.is_file()
    }
    again = copy.deepcopy(demo_run)
    again["results_dir"] = str(tmp_path / "results")
    root = run_all(again)
    second = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert first.keys() == second.keys()
    assert [p for p in first if first[p] != second[p]] == []
    manifest = json.loads((root / "artifacts.json").read_text())
    assert {a["path"] for a in manifest["artifacts"]} >= {
        "report/index.html",
        "release/receipt.json",
    }


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
    assert dom.count("<table") >= 7 and dom.count("<svg") == 5
    assert "SYNTHETIC DEMO DATA" in dom
    shot = tmp_path / "report.png"
    subprocess.run(
        [*flags, f"--screenshot={shot}", "--window-size=1280,2400", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000


def test_report_refuses_numbers_older_than_their_pin(demo_run, tmp_path):
    """A new pin whose file the import refuses leaves the old import behind: the comparison
    and the report refuse it, naming the model, instead of showing old numbers beside the new
    file's hash."""
    from pathlib import Path

    from afbench.core.fsutil import sha256_bytes

    from conftest import fetch_release, import_model, release_dir

    dir_config = copy_demo_run(demo_run, tmp_path)  # run_all's tree, copied
    mirror = shutil.copytree(dir_config["source"]["mirror"], tmp_path / "mirror")
    dir_config["source"]["mirror"] = str(mirror)  # this test's own, to change
    rev = revision_dir(dir_config)
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
    from afbench.cli.actions import render_report
    from afbench.cli.signatures import values
    from afbench.kinds import TRIAL_RECEIPT

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
    # the executed run: one trial receipt per fixture job, as run-trial writes them (attempts
    # 1, 2, ... of one task: a trial has one receipt), and the live ledger those trials kept
    live, receipts = base / "jobs.ledger.jsonl", []
    for n, folder in enumerate(jobs):
        trial = {
            "job_name": folder.name,
            "task_id": tasks[0],
            "attempt": n + 1,
            "agent": "terminus-2",
            "model": "anthropic/claude-opus-4-6",
        }
        assert ledger.start(live, trial, 200, 1000) is None
        ledger.finish(live, trial, [12.5 * (n + 1)], paid=True, cap_usd=200)
        receipts.append(base / f"receipt-{folder.name}.json")
        receipts[-1].write_text(
            json.dumps(
                declared(
                    TRIAL_RECEIPT,
                    release=release,
                    task_id=tasks[0],
                    attempt=n + 1,
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
    runs = ("harbor-fixtures", "verdicts-three")
    given = values(
        "render-report",
        summary=imports / "summary.json",
        imports=[imports / f"{slug}.json" for slug in slugs],
        catalog=catalog,
        receipt=rev / "release/receipt.json",
        run=[rev / f"runs/{name}/summary.json" for name in runs] + [executed / "summary.json"],
        confidence=0.95,
        settings_digest="0" * 64,
        html=out / "index.html",
        analysis=out / "analysis.json",
        figure=None,
        ledger=cost_ledger,
    )
    render_report(given)
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


# --- the demo report: a local run, long tables folded, names bidi-isolated -------------------
FOLDS = """<script>
// a closed <details> hides its content with content-visibility (Chromium), which the
// element's own boxes do not show: checkVisibility does
const shown = (el) => el.checkVisibility() && el.getClientRects().length > 0;
const out = {width: document.documentElement.clientWidth};
const runs = document.getElementById("local-runs").nextElementSibling;
out.runRows = [...runs.querySelectorAll("table.runs tbody tr")].filter(shown)
  .map((tr) => tr.cells[0].textContent);
out.folds = [...document.querySelectorAll("details")].map((d) => ({
  open: d.open,
  summary: d.querySelector("summary").textContent,
  hiddenRows: [...d.querySelectorAll("tr")].filter((tr) => !shown(tr)).length,
  rows: d.querySelectorAll("tr").length,
}));
for (const id of ["paired", "sources"]) {
  const card = document.getElementById(id).nextElementSibling;
  out[id] = [...card.querySelectorAll("tbody tr")].filter(shown).length;
}
const pre = document.createElement("pre");
pre.id = "measured";
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def dumped(html: Path, script: str, width: int, tmp: Path) -> dict:
    page = tmp / f"page-{width}.html"
    page.write_text(html.read_text().replace("</body>", script + "</body>"))
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


@pytest.mark.browser
@pytest.mark.snakemake
@needs_chromium
def test_the_demo_report_shows_a_local_run_and_folds_its_long_tables(demo_project, tmp_path):
    assert CHROMIUM, "chromium must be installed in CI"
    html = demo_project / "results" / demo_revision() / "report/index.html"
    seen = dumped(html, FOLDS, 1280, tmp_path)
    assert seen["width"] <= 1280
    # the local runs: the demo's Harbor jobs (three configurations) and its verdict folder
    assert seen["runRows"].count("demo-harbor") >= 3 and "demo-verdicts" in seen["runRows"]
    # the long tables fold, closed, with no script: the pairs beyond the leader's (36 - 8)
    # and the sources beyond the first eight (24 - 8); every row inside is hidden
    assert seen["paired"] == 8 and seen["sources"] == 8
    folds = {f["summary"]: f for f in seen["folds"]}
    assert folds["The other 28 pairs (all pairs are in analysis.json)"]["hiddenRows"] == 29
    assert folds["The other 16 sources"]["hiddenRows"] == 17
    assert all(not f["open"] and f["hiddenRows"] == f["rows"] for f in seen["folds"])
    assert "<script" not in html.read_text()
    # the new sections' tables fit their cards at this width, like every other
    layout = measured_layout(html, 1280, tmp_path)
    assert [t for t in layout["tables"] if t[1] > t[2] + 0.5] == []


ISOLATION = """<script>
const name = document.getElementById("hostile").textContent;
const bad = [];
let found = 0;
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (walker.nextNode()) {
  const node = walker.currentNode;
  if (!node.textContent.includes(name) || node.parentElement.id === "hostile") continue;
  found += 1;
  let el = node.parentElement, isolated = false;
  while (el && el !== document.body) {
    const style = getComputedStyle(el);
    // an inline isolate (a <bdi>) around the name; a block (a cell, a paragraph) is isolated
    // from outside, but the name is isolated from the text beside it only if it is alone
    const isolating = /^(isolate|isolate-override|plaintext)$/.test(style.unicodeBidi);
    if (style.display === "inline" && isolating) {
      isolated = true; break;
    }
    if (style.display !== "inline") {
      isolated = el.textContent.trim() === name.trim(); break;
    }
    el = el.parentElement;
  }
  if (!isolated) bad.push(el ? el.tagName + ": " + el.textContent.slice(0, 80) : "?");
}
const pre = document.createElement("pre");
pre.id = "measured";
pre.textContent = JSON.stringify({bad, found});
document.body.appendChild(pre);
</script>"""


@pytest.mark.browser
@needs_chromium
def test_a_right_to_left_mark_in_a_name_cannot_reorder_the_text_around_it(tmp_path, built_config):
    """Every place a name from input appears is bidi-isolated: a <bdi>, or a block (a table
    cell: a paragraph of its own) holding that name alone."""
    assert CHROMIUM, "chromium must be installed in CI"
    from afbench.report.page import render

    rev = revision_dir(built_config)
    analysis = json.loads((rev / "report/analysis.json").read_text())
    hostile = "\u200fRTL \u202eevil: 266"
    slug = analysis["leaderboard"][0]["model"]
    for row in analysis["leaderboard"] + analysis["cost_success"]["models"]:
        if row["model"] == slug:
            row["display_name"] = hostile
    analysis["release"]["name"] = hostile
    analysis["release"]["repository"] = hostile
    over = {"matches": True, "imported_usd": [1.0], "published_usd": [1.0]}
    analysis["published"]["over_budget"] = {hostile: over}
    figures = {p.stem: p.read_text() for p in (rev / "report/figures").glob("*.svg")}
    page = tmp_path / "hostile.html"
    page.write_text(
        render(analysis, analysis["provenance"], figures).replace(
            "<body>", f'<body><p id="hostile">{hostile}</p>', 1
        )
    )
    seen = dumped(page, ISOLATION, 1280, tmp_path)
    # the name, in the h1, the note, the published facts, and several table cells
    assert seen["found"] >= 6 and seen["bad"] == []


def test_the_report_is_the_same_bytes_in_a_hostile_environment(built_config, tmp_path):
    fetched_config = built_config  # the whole chain has run on it
    rev = revision_dir(fetched_config)
    imports = rev / "imports/source-present/budget-200"
    argv = [
        AFBENCH,
        "report",
        "--summary",
        str(imports / "summary.json"),
        *[f"--import={p}" for p in sorted(imports.glob("demo-model-*.json"))],
        "--catalog",
        str(rev / "tasks/catalog.json"),
        "--receipt",
        str(release_dir(fetched_config) / "receipt.json"),
    ]
    clean = subprocess.run(
        [*argv, "--output-dir", str(tmp_path / "clean")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert clean.returncode == 0, clean.stderr
    env, rc = _hostile_environment(tmp_path)
    hostile = subprocess.run(
        [*argv, "--output-dir", str(tmp_path / "hostile")],
        capture_output=True,
        text=True,
        env=env,
        cwd=rc,
        preexec_fn=lambda: os.umask(0o077),
        check=False,
    )
    assert hostile.returncode == 0 and "Traceback" not in hostile.stderr, hostile.stderr

    def tree(root: Path) -> dict:
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
        }

    assert tree(tmp_path / "hostile") == tree(tmp_path / "clean")
    assert (tmp_path / "hostile" / "index.html").stat().st_mode & 0o777 == 0o600


@EXAMPLES_60
@given(env=prop.hostile_environments)
def test_any_hostile_environment_changes_no_byte(env):
    prop.check_hostile_environment(env)


def test_the_report_says_which_interval_to_cite_and_shows_both(demo_chain_rev, demo_chain_analysis):
    html = (demo_chain_rev / "report/index.html").read_text()
    assert "Cite the clustered interval" in html and "Wilson" in html
    assert "95% clustered (24 sources)" in html and "design effect" in html
    df = demo_chain_analysis["leaderboard"][0]["clustered"]["df"]
    assert f"df {df:.1f}" in html
    assert 'id="conventions"' in html and "tail-doubled (not mid-p)" in html
    assert "all 2^24 = 16,777,216 sign patterns" in html
    assert "tier, tasks as the unit" in html and "p Holm, tasks as the unit" in html
    assert html.count("matches the authors&#x27; leaderboard") == 9
    assert 'id="published-mismatch"' not in html
    assert demo_chain_analysis["published"]["matches"] is True


def test_the_report_and_the_frames_carry_the_certificate(tmp_path):
    from afbench.report.analysis import local_run_rows
    from afbench.report.page import cost_ledger_section, local_runs_section

    from conftest import afbench

    release = identity(load_config([REPO / "config/demo.yaml"])["release"])
    selection = tmp_path / "selection.json"
    selection.write_text(
        json.dumps(
            declared(
                SELECTION,
                name="fixtures",
                release=release,
                selection_sha256="0" * 64,
                task_ids=["hello-pass"],
            )
        )
    )
    out = tmp_path / "runs/fixture"
    afbench(
        "import-run",
        "--selection",
        selection,
        "--name",
        "fixture",
        "--kind",
        "harbor",
        "--path",
        FIXTURES / "demo-nop",
        "--output-dir",
        out,
    )
    summary = json.loads((out / "summary.json").read_text())
    [configuration] = summary["configurations"]
    assert summary["conformant"] is False and configuration["conformant"] is False
    reasons = configuration["conformance"]["reasons"]
    assert reasons[0] == (
        "environment type custom (hostenv:HostEnvironment), not the protocol's (docker or "
        "singularity)"
    )
    assert reasons[1].startswith("task checksums not certified: no exporter output")
    html = local_runs_section(local_run_rows([summary]))
    assert "NOT CONFORMANT ⚠ nop 1.0.0" in html
    assert "NOT CONFORMANT: environment type custom (hostenv:HostEnvironment)" in html
    outcomes = af.run_outcomes(tmp_path / "runs")
    assert str(outcomes.conformant.dtype) == "boolean" and not outcomes.conformant.any()
    assert af.run_attempts(tmp_path / "runs").conformant.tolist() == [False]
    ledger_html = cost_ledger_section(
        {
            "ceiling_usd": 10.0,
            "spent_usd": 12.5,
            "stopped": True,
            "refused": 1,
            "note": "<b>",
            "trials": [
                {
                    "job_name": "<j>",
                    "task_id": TASK,
                    "attempt": 1,
                    "agent": "a:B",
                    "model": None,
                    "status": "refused",
                    "cost_usd": None,
                    "worst_case_usd": 200.0,
                }
            ],
        }
    )
    assert "Spent USD 12.50 of the ceiling USD 10.00" in ledger_html
    assert "Stopped at the ceiling: 1 trial(s) not started." in ledger_html
    assert "<j>" not in ledger_html and "&lt;j&gt;" in ledger_html and "<b>" not in ledger_html


def _rows(data: bytes) -> tuple[list[str], list[list[str]]]:
    import csv
    import io

    rows = list(csv.reader(io.StringIO(data.decode())))
    return rows[0], rows[1:]


def small_release(sources: int, per_source: int) -> tuple[dict[str, bytes], dict]:
    """The demo release cut down to its first `sources` sources and their first `per_source`
    tasks (every model's rows with them), and the counts it declares."""
    from afbench.core.fsutil import csv_bytes

    files = demo.generate_release()
    head, manifest = _rows(files["MANIFEST.csv"])
    source, task, obligations = (head.index(c) for c in ("source_id", "task_id", "n_obligations"))
    kept_sources = sorted({r[source] for r in manifest})[:sources]
    kept = [
        r
        for r in manifest
        if r[source] in kept_sources and int(r[task].rsplit("_t", 1)[1]) <= per_source
    ]
    ids = {r[task] for r in kept}
    small = {**files, "MANIFEST.csv": csv_bytes(head, kept)}
    source_head, source_rows = _rows(files["SOURCES.csv"])
    n = source_head.index("n_tasks")
    small["SOURCES.csv"] = csv_bytes(
        source_head,
        [
            [*r[:n], str(sum(k[source] == r[0] for k in kept)), *r[n + 1 :]]
            for r in source_rows
            if r[0] in kept_sources
        ],
    )
    for path, data in files.items():
        if path.startswith("results/"):
            result_head, results = _rows(data)
            small[path] = csv_bytes(result_head, [r for r in results if r[0] in ids])
    counts = {
        "tasks": len(kept),
        "sources": len(kept_sources),
        "obligations": sum(int(r[obligations]) for r in kept),
    }
    return small, counts


def _small_run(tmp_path, demo_yaml, sources: int, per_source: int) -> Path:
    files, counts = small_release(sources, per_source)
    base = copy.deepcopy(demo_yaml)
    base["release"]["expected_counts"] = counts
    mirror = write_tree(tmp_path / "mirror", files)
    cfg = config_for(
        files, "a" * 40, {"kind": "dir", "mirror": str(mirror)}, tmp_path / "results", base
    )
    return run_all(cfg)


def test_a_release_of_one_task_reports_what_cannot_be_computed(tmp_path, demo_yaml, capsys):
    rev = _small_run(tmp_path, demo_yaml, 1, 1)
    assert "Traceback" not in capsys.readouterr().err
    analysis = json.loads((rev / "report/analysis.json").read_text())
    assert all(r["standard_error"] is None for r in analysis["leaderboard"])
    pairs = analysis["paired"]["pairs"]
    assert pairs and all(p["difference_low"] is None for p in pairs)
    html = unescape((rev / "report/index.html").read_text())
    assert "cannot be computed on 1 task" in html
    assert "no decision possible at alpha 0.05" in html
    # the workflow's render-figures job draws them too, with no traceback
    imports = sorted((rev / "imports/source-present/budget-200").glob("demo-model-*.json"))
    code, err = prop.cli(
        "job",
        "render-figures",
        f"--summary={rev / 'imports/source-present/budget-200/summary.json'}",
        *(f"--import={path}" for path in imports),
        f"--catalog={rev / 'tasks/catalog.json'}",
        f"--receipt={rev / 'release/receipt.json'}",
        "--confidence=0.95",
        *(
            f"--figure={tmp_path / f'figures/{name}.svg'}"
            for name in ("cost_success", "leaderboard", "paired", "per_source")
        ),
    )
    assert code == 0 and "Traceback" not in err, err


def test_few_sources_say_no_decision_is_possible_beside_the_tiers(
    tmp_path, demo_yaml, demo_chain_analysis
):
    rev = _small_run(tmp_path, demo_yaml, 3, 5)
    paired = json.loads((rev / "report/analysis.json").read_text())["paired"]
    assert paired["sources"] == 3 and len(paired["pairs"]) == 36
    assert paired["smallest_p_holm"] == 1.0 and paired["decidable"] is False
    html = unescape((rev / "report/index.html").read_text())
    assert "cannot go below p = 2/2^3 = 0.25" in html
    assert "no decision possible at alpha 0.05" in html
    # every model's source-aware tier cell says so, in place of the ★ and letters
    assert html.count('<td class="t">no decision possible at alpha</td>') == 9
    # 24 sources: Holm's first step over 36 pairs is far below alpha, and the tiers stand
    shown = demo_chain_analysis["paired"]
    assert shown["smallest_p_holm"] == 36 / 2**23 and shown["decidable"] is True
