"""What a command says (afbench.cli.say): one line on standard error per unit of outputs it wrote
(or kept), nothing on success under --quiet, warnings kept."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from afbench import kinds
from afbench.cli import say
from afbench.core.config import load_config

import properties as prop
from conftest import demo_revision


@pytest.fixture(scope="module")
def tree():
    return prop.write_tree()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The demo release's repository, at the demo's pinned revision (absolute: plan needs it)."""
    out = tmp_path_factory.mktemp("upstream") / "demo-upstream"
    code, err = prop.cli("demo", "repo", "--out", out, "--release-files", prop.DEMO_RELEASE)
    assert code == 0, err
    return out.resolve()


def said(*argv: object) -> list[str]:
    """`afbench ARGV` in this process, which must succeed: its lines on standard error."""
    code, err = prop.cli(*argv)
    assert code == 0, err
    return err.splitlines()


def two_digests(tree: prop.WriteTree, out: Path) -> tuple[Path, Path]:
    """The tree's task digests (catalog rows only) and those of an earlier revision that had
    one more task."""
    from afbench.core.fsutil import json_bytes
    from afbench.tasks.catalog import MANIFEST_FIELDS, catalog_digests, content_digests

    catalog = json.loads(Path(tree.catalog).read_text())
    current = content_digests(catalog, None, "tasks")
    earlier = json.loads(json.dumps(current))
    earlier["release"]["revision"] = "e" * 40
    withdrawn = dict(catalog["tasks"][0], task_id="demo_withdrawn")
    earlier["tasks"]["demo_withdrawn"] = {
        "row": {field: withdrawn[field] for field in MANIFEST_FIELDS},
        **catalog_digests(withdrawn),
        "export": None,
    }
    folder = out.parent / f"{out.name}-digests"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "old.json").write_bytes(json_bytes(earlier))
    (folder / "new.json").write_bytes(json_bytes(current))
    return folder / "old.json", folder / "new.json"


def seed_commands(tree: prop.WriteTree, out: Path, checkout: Path) -> dict[str, tuple]:
    """Each seed command (one case each, or two), and the lines it must print."""
    config = ["--config", tree.config, "--release-dir", tree.release]
    rev = demo_revision()
    imports = [a for path in tree.imports for a in ("--import", path)]
    report_inputs = [
        *("--summary", tree.summary, *imports),
        *("--catalog", tree.catalog, "--receipt", tree.release / "receipt.json"),
    ]
    return {
        "tasks": (
            ["tasks", *config, "--output", out / "tasks.json"],
            [rf"catalog: 341 tasks, 24 sources, 1,155 obligations -> {out}/tasks\.json"],
        ),
        "tasks (a selection)": (
            [
                "tasks",
                *config,
                "--book",
                "demo_source_01",
                "--book",
                "demo_source_02",
                "--limit",
                "5",
                "--output",
                out / "two.json",
            ],
            [rf"selection two: 5 tasks, \d+ obligations -> {out}/two\.json"],
        ),
        "plan": (
            [
                "plan",
                *config,
                "--repository-dir",
                checkout,
                "--task",
                tree.task,
                "--output",
                out / "nop-plan.json",
            ],
            [
                r"plan: 1 trial of agent nop on selection nop-plan \(argument vectors, not run\) "
                rf"-> {out}/nop-plan\.json"
            ],
        ),
        "import-results": (
            ["import-results", *config, "--all-models", "--output", out / "reference.json"],
            [
                r"reference: 9 models on 341 tasks \(source-present, budget \$200\.00\), best "
                r"demo-model-a with 266 passed; 23 infrastructure errors, 1 over budget; as "
                rf"published -> {out}/reference\.json"
            ],
        ),
        "verdict": (
            ["verdict", "--path", tree.verdict, "--task", tree.task, "--output", out / "v.json"],
            [
                rf"verdict for {tree.task}: accepted \(reward 1\), all checks passed -> "
                rf"{out}/v\.json"
            ],
        ),
        "verdict (to standard output)": (
            ["verdict", "--path", tree.verdict, "--task", tree.task],
            [rf"verdict for {tree.task}: accepted \(reward 1\), .* -> standard output"],
        ),
        "verify": (
            ["verify", *config, "--output", out / "receipt.json"],
            [rf"receipt: 11 files verified -> {out}/receipt\.json"],
        ),
        "import-run": (
            [
                "import-run",
                "--selection",
                tree.selection,
                "--name",
                "my-run",
                "--kind",
                "verdicts",
                "--path",
                tree.verdicts,
                "--output-dir",
                out / "my-run",
            ],
            [
                r"run my-run: 1 configuration, 1 trial of selection s \(3 tasks\) -> "
                rf"attempts\.csv, outcomes\.csv, summary\.json in {out}/my-run"
            ],
        ),
        "report": (
            ["report", *report_inputs, "--output-dir", out / "report"],
            [
                rf"report -> {out}/report/index\.html \(2 models, 0 local runs; also "
                r"analysis\.json, 4 figures\)"
            ],
        ),
        "export": (
            [
                "export",
                "--root",
                tree.root,
                "--format",
                "csv",
                "--output-dir",
                out / "tables",
                "--table",
                "leaderboard",
                "--table",
                "tasks",
            ],
            [
                r"tables: 2 as csv \(rows: leaderboard 2, tasks 341\) -> leaderboard\.csv, "
                rf"tasks\.csv in {out}/tables"
            ],
        ),
        "power": (
            [
                "power",
                "--difference",
                "0.1",
                "--baseline-rate",
                "0.5",
                "--output",
                out / "power.json",
            ],
            [rf"power plan: tasks, 408 tasks -> {out}/power\.json"],
        ),
        "preregister": (
            [
                "preregister",
                "--config",
                tree.config,
                "--config",
                comparison(out),
                "--selection",
                tree.selection,
                "--catalog",
                tree.catalog,
                "--output",
                out / "plan.json",
            ],
            [
                r"analysis plan: oracle against nop on s, sequential, horizon 3 tasks, sealed "
                rf"[0-9a-f]{{12}} -> {out}/plan\.json"
            ],
        ),
        "decide": (
            ["decide", "--plan", sealed_plan(tree, out), "--output", out / "decision.json"],
            [rf"sequential decision: continue after 0 tasks -> {out}/decision\.json"],
        ),
        "audit": (
            # its checks on standard output; the record it writes names the outcome
            ["audit", tree.root, "--output", out / "audit.json"],
            [rf"audit: all \d+ checks held -> {out}/audit\.json"],
        ),
        "ledger": (
            # it lists the live ledger on standard output, and writes nothing
            ["ledger", "--ledger", out.parent / "no-ledger-yet.jsonl"],
            [],
        ),
        "watch": (
            # it shows the run on standard output, and writes nothing
            [
                *["watch", "--ledger", out.parent / "no-ledger-yet.jsonl"],
                *["--receipts", out.parent, "--json"],
            ],
            [],
        ),
        "query": (
            # it prints the store's tables on standard output, and writes nothing
            ["query", "--tables"],
            [],
        ),
        "discover": (
            [
                "discover",
                "--config",
                tree.config,
                "--checkout",
                checkout,
                "--output-dir",
                out / "discovered",
            ],
            [
                rf"discovery at {rev[:12]}: 11 of 11 configured files found, 0 pin\(s\) differ, "
                r"0 results file\(s\) not in config \(review the fragment, then merge it into "
                rf"config\) -> discovery\.json, discovered\.yaml in {out}/discovered"
            ],
        ),
        "diff": (
            [
                *("diff", "--previous", two_digests(tree, out)[0], "--current"),
                *(two_digests(tree, out)[1], "--catalog", tree.catalog, "--output-dir", out),
            ],
            [
                rf"release diff eeeeeeeeeeee -> {rev[:12]}: 341 unchanged, 1 removed -> "
                rf"diff\.json, comparable\.json in {out}",
                r"upgrade plan: 341 reuse, 0 regrade, 0 rerun, 1 drop; no trial to rerun -> "
                rf"{out}/plan\.json",
            ],
        ),
        "compare-revisions": (
            [
                *("compare-revisions", "--catalog", tree.catalog, "--previous"),
                *(tree.imports[0], "--current", tree.imports[1], "--output", out / "cr.json"),
            ],
            [rf"comparisons at {rev[:12]}: 1 comparison -> {out}/cr\.json"],
        ),
        "demo generate": (
            ["demo", "generate", "--out", out / "demo-release"],
            [rf"demo release -> 13 files in {out}/demo-release"],
        ),
        "demo repo": (
            ["demo", "repo", "--release-files", prop.DEMO_RELEASE, "--out", out / "upstream"],
            [rf"demo repository: commit {rev} -> {out}/upstream"],
        ),
    }


def comparison(out: Path) -> Path:
    """A config that seals oracle against nop on the tree's selection (s: its first 3 tasks)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "comparison.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "selections": {"s": {"limit": 3}},
                "plans": {
                    "items": [
                        {"selection": "s", "agent": "oracle"},
                        {"selection": "s", "agent": "nop"},
                    ]
                },
                "preregister": {
                    "comparison": {
                        "selection": "s",
                        "a": {"agent": "oracle"},
                        "b": {"agent": "nop"},
                    },
                    "difference": 0.3,
                    "discordance": 0.5,
                },
            }
        )
    )
    return path


def sealed_plan(tree: prop.WriteTree, out: Path) -> Path:
    """The comparison's plan, sealed from the tree's selection (nothing has run yet)."""
    from afbench.core.fsutil import json_bytes
    from afbench.plans.preregister import build_plan, plan_facts

    selection = json.loads(tree.selection.read_text())
    config = load_config([tree.config, comparison(out)])
    path = out / "sealed.json"
    path.write_bytes(json_bytes(build_plan(plan_facts(config, selection), selection)))
    return path


SEED_CASES = [
    "tasks",
    "tasks (a selection)",
    "plan",
    "import-results",
    "verdict",
    "verdict (to standard output)",
    "verify",
    "import-run",
    "report",
    "export",
    "power",
    "preregister",
    "decide",
    "ledger",
    "watch",
    "query",
    "discover",
    "audit",
    "diff",
    "compare-revisions",
    "demo generate",
    "demo repo",
]


@pytest.mark.parametrize("case", SEED_CASES)
def test_each_seed_command_names_what_it_wrote_and_quiet_silences_it(
    tree, checkout, tmp_path, case
):
    argv, expected = seed_commands(tree, tmp_path / "out", checkout)[case]
    lines = said(*argv)
    assert len(lines) == len(expected), lines
    for line, pattern in zip(lines, expected, strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)
    quiet, _ = seed_commands(tree, tmp_path / "quiet", checkout)[case]
    assert said(*quiet, "--quiet") == []


def test_every_seed_command_has_a_summary_case():
    from afbench.cli.seed import COMMANDS, DEMO

    named = {case.split(" (")[0] for case in SEED_CASES}
    assert named | {"fetch"} == set(COMMANDS) | {f"demo {name}" for name in DEMO}


def test_fetch_names_each_file_it_fetched_or_kept_then_the_receipt(tree, tmp_path):
    release = tmp_path / "release"
    argv = ["fetch", "--config", tree.config, "--release-dir", release, "--all-models"]
    first = said(*argv)
    files = [f"results/demo-model-{m}.csv" for m in "abcdefghi"]
    assert [line.split(":")[0] for line in first[:-1]] == [
        f"release file {path}" for path in ["MANIFEST.csv", "SOURCES.csv", *files]
    ]
    assert re.fullmatch(
        rf"release file MANIFEST\.csv: [\d,]+ bytes, matching its pin -> {release}/MANIFEST\.csv",
        first[0],
    )
    assert first[-1] == f"receipt: 11 files verified -> {release}/receipt.json"
    again = said(*argv)
    assert again[0] == (
        f"release file MANIFEST.csv: already in place and matching its pin, kept -> "
        f"{release}/MANIFEST.csv"
    )
    assert len(again) == 12 and again[-1] == first[-1]
    assert said(*argv, "--quiet") == []


def test_quiet_keeps_warnings(tree, tmp_path):
    """--quiet silences what was written, never what the user must know."""
    unpinned = tmp_path / "unpinned.yaml"
    unpinned.write_text("models:\n  demo-model-b:\n    sha256: null\n")
    argv = ["fetch", "--config", tree.config, "--config", unpinned, "--release-dir"]
    lines = said(*argv, tmp_path / "release", "--all-models", "--quiet")
    assert lines == [
        "afbench: warning: model 'demo-model-b' has no SHA-256 pin in config: skipped (supply "
        "models.demo-model-b.sha256 to fetch it)"
    ]
    loud = said(*argv, tmp_path / "loud", "--all-models")
    assert (
        loud[-2]
        == f"receipt: 10 files verified (1 skipped without a pin) -> {tmp_path}/loud/receipt.json"
    )
    assert loud[-1] == lines[0]


def test_job_commands_name_what_they_wrote(tree, tmp_path):
    lines = said(
        "job",
        "select-tasks",
        f"--catalog={tree.catalog}",
        "--name=t",
        "--limit=2",
        f"--output={tmp_path / 't.json'}",
    )
    assert lines == [f"selection t: 2 tasks, 7 obligations -> {tmp_path}/t.json"] or re.fullmatch(
        rf"selection t: 2 tasks, \d+ obligations -> {tmp_path}/t\.json", lines[0]
    )
    lines = said(*tree.compare(tmp_path / "summary.json", tmp_path / "board.csv"))
    assert lines == [
        "comparison: 2 models on 341 tasks (source-present, budget $200.00), best demo-model-a "
        "with 266 passed; 4 infrastructure errors, 0 over budget -> board.csv, summary.json in "
        f"{tmp_path}"
    ]
    assert said(*tree.compare(tmp_path / "s2.json", tmp_path / "b2.csv"), "--quiet") == []


def test_every_artifact_kind_is_described():
    known = {kinds.lookup(name)[0] for name in kinds.KINDS}
    assert known - set(say.DESCRIBERS) == {"ANALYSIS"}  # the report's own line
    assert set(say.DESCRIBERS) <= known


def test_a_line_is_one_escaped_clipped_line():
    line = say.line("selection \x1b[31mred\nline", ["a\rb.json"])
    assert line == "selection \x1b[31mred\nline -> a\rb.json"  # escaped when printed:
    err = io.StringIO()
    tell = say.listener(quiet=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "stderr", err)
        tell("x" * 5000 + "\n", ["out.json"])
    [printed] = err.getvalue().splitlines()
    assert "\\x1b" not in printed and len(printed) < say.MAX_LINE + 100
    assert say.where(["d/a.json", "d/b.csv"]) == "a.json, b.csv in d"
    assert say.where([f"d/{i}.svg" for i in range(20)]) == "20 files in d"
    assert say.where(["a.json", "/abs/b.json"]) == "a.json, /abs/b.json"
