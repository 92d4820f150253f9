"""Every refusal names where (file, row, field) and, where a value was refused, what was expected
and what was found, in one escaped line: an AST walk over the package, every converter and flag of
the command line, and one representative refusal of each seed and job command."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from afbench.cli import build_parser
from afbench.cli.jobs import JOBS
from afbench.cli.seed import COMMANDS, DEMO
from afbench.core import settings
from afbench.core.config import default_columns
from afbench.core.fsutil import sha256_bytes
from afbench.exports.store import empty_frame, table_parquet

import properties as prop
from conftest import REPO, column_flags, demo_revision, refusal_lines

PACKAGE = REPO / "scripts" / "afbench"


# (file, the message's first words): why it names neither a file nor a field
ALLOWED = {
    ("core/gitrun.py", "git is not installed"): "the environment lacks a program: there is no file "
    "or field to name, only the program",
}


def _sites():
    """Every AfbenchError(...) and Problem(...) call in the package: (file, line, keywords,
    the message's text where it is a literal)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                continue
            if node.func.id not in ("AfbenchError", "Problem"):
                continue
            keywords = {k.arg for k in node.keywords}
            message = ""
            if node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    message = first.value
                elif isinstance(first, ast.JoinedStr):
                    message = "".join(v.value for v in first.values if isinstance(v, ast.Constant))
            yield path.relative_to(PACKAGE).as_posix(), node.lineno, keywords, message


def test_every_refusal_in_the_package_says_where_and_what_was_expected():
    sites = list(_sites())
    assert len(sites) > 250  # the walk sees the package's sites (about 300)
    nowhere, unexpected, allowed_seen = [], [], set()
    for file, line, keywords, message in sites:
        if "problems" in keywords:
            continue  # a collection of Problems, each of them checked here
        if not keywords & {"file", "field", None}:  # None: **where, passed on
            key = next((k for k in ALLOWED if k[0] == file and message.startswith(k[1])), None)
            if key is None:
                nowhere.append(f"{file}:{line}: {message[:80]}")
            allowed_seen.add(key)
        if "found" in keywords and "expected" not in keywords:
            unexpected.append(f"{file}:{line}: {message[:80]}")
    assert nowhere == [], "refusals that name no file or field:\n" + "\n".join(nowhere)
    assert unexpected == [], "refusals that show found= but no expected=:\n" + "\n".join(unexpected)
    assert allowed_seen == set(ALLOWED)  # no stale exception


def test_every_converter_of_the_command_line_refuses_with_expected_and_found():
    """Each flag type of every command (argparse calls it) refuses a bad value as
    'expected X, found Y': argparse puts it after 'argument --flag:'."""
    import argparse

    converters: dict[str, object] = {}

    def walk(parser, words):
        for action in parser._actions:
            if callable(action.type):
                converters[" ".join([*words, *action.option_strings])] = action.type
            if isinstance(action.choices, dict):
                for word, sub in action.choices.items():
                    walk(sub, [*words, word])

    walk(build_parser(), ["afbench"])
    types = converters
    assert len(types) > 150
    bad = ["", "\x00", "-1", "nan", "x" * 10_001, "a=b", "../x", "2026-02-30", "maybe", "q@z"]
    never = []
    for flag, convert in types.items():
        refusals = []
        for value in bad:
            try:
                convert(value)
            except argparse.ArgumentTypeError as exc:
                refusals.append(str(exc))
        if not refusals:
            never.append(flag)
        for text in refusals:
            shown = r"'.*('|\.\.\. \(\d+ more characters\))"  # the value, or its start
            assert re.fullmatch(rf"expected .+, found {shown}", text, re.S), (flag, text)
    # a free-text flag refuses only what no value may hold (a control character, 10,000+)
    assert never == [], never


def test_every_flag_with_choices_refuses_with_expected_and_found():
    """A value out of a flag's choices (argparse's own refusal), for every such flag."""
    flags = []

    def walk(parser, words):
        for action in parser._actions:
            if isinstance(action.choices, dict):
                for word, sub in action.choices.items():
                    walk(sub, [*words, word])
            elif action.choices and action.option_strings:
                flags.append((words, action.option_strings[0], list(action.choices)))
            elif action.option_strings and hasattr(action.type, "dpath"):  # a setting's
                enum = settings.resolve(settings.node(action.type.dpath)).get("enum")
                if enum:
                    flags.append((words, action.option_strings[0], enum))

    walk(build_parser(), [])
    assert len(flags) >= 8
    for words, flag, choices in flags:
        code, err = prop.cli(*words, flag, "nope")
        [line] = refusal_lines(err)
        shown = ", ".join(repr(c) for c in choices)
        assert code == 2 and f"argument {flag}: expected one of {shown}, found 'nope'" in line, line


def test_the_converters_module_raises_only_expected_and_found():
    """Every raise in cli/types.py is `raise _refuse(expected, found)` (argparse's one line) or
    an AfbenchError the walk above checks."""
    tree = ast.parse((PACKAGE / "cli" / "types.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            call = node.exc
            assert isinstance(call, ast.Call), ast.unparse(node)
            name = call.func.id if isinstance(call.func, ast.Name) else ""
            assert name in ("_refuse", "AfbenchError"), ast.unparse(node)
            if name == "_refuse":
                assert len(call.args) == 2, ast.unparse(node)


# --- run time: one refusal of each command, through the command line ---------------------
@pytest.fixture(scope="module")
def tree():
    return prop.write_tree()


@pytest.fixture(scope="module")
def places(tree, tmp_path_factory) -> dict:
    """Files the refusals need: a demo checkout, one of another user (when this test runs as
    root), a release whose MANIFEST holds a 200 KB cell (pinned: it is read past its pin)."""
    base = tmp_path_factory.mktemp("refusals")
    checkout = base / "upstream"
    code, err = prop.cli("demo", "repo", "--out", checkout, "--release-files", prop.DEMO_RELEASE)
    assert code == 0, err
    other = None
    if os.geteuid() == 0:
        other = base / "other-user"
        shutil.copytree(checkout, other, symlinks=True)
        subprocess.run(["chown", "-R", "nobody", str(other)], check=True)
    mirror = base / "huge-cell"
    shutil.copytree(prop.DEMO_RELEASE, mirror)
    lines = (mirror / "MANIFEST.csv").read_text().splitlines(keepends=True)
    cells = lines[3].split(",")
    cells[3] = '"' + "x" * 200_000 + '"'
    lines[3] = ",".join(cells)
    (mirror / "MANIFEST.csv").write_text("".join(lines))
    huge = base / "huge.yaml"
    huge.write_text(
        yaml.safe_dump(
            {
                "source": {"kind": "dir", "mirror": str(mirror)},
                "files": {
                    "manifest": {"sha256": sha256_bytes((mirror / "MANIFEST.csv").read_bytes())}
                },
            }
        )
    )
    code, err = prop.cli(
        "fetch", "--config", tree.config, "--config", huge, "--release-dir", base / "huge-rel"
    )
    assert code == 0, err
    bad_verdict = base / "verdicts" / "bad.json"
    bad_verdict.parent.mkdir()
    bad_verdict.write_text(json.dumps(dict(prop.VERDICT, task_id=tree.task, status="maybe")))
    outside = base / "outside-verdicts"
    outside.mkdir()
    (outside / "v.json").write_text(json.dumps(dict(prop.VERDICT, task_id="demo_s24_t001")))
    tampered = base / "tampered"
    shutil.copytree(tree.release, tampered)
    (tampered / "SOURCES.csv").chmod(0o644)
    (tampered / "SOURCES.csv").write_bytes((tampered / "SOURCES.csv").read_bytes() + b"\n")
    a_file = base / "a-file"
    a_file.write_text("not a folder")
    not_a_demo = base / "not-a-demo"
    not_a_demo.mkdir()
    (not_a_demo / "mine.txt").write_text("mine")
    store, damaged = base / "store", base / "damaged-store"
    for root, data in ((store, table_parquet(empty_frame("tasks"), "tasks")), (damaged, b"PAR")):
        (root / "tasks" / "revision=r").mkdir(parents=True)
        (root / "tasks" / "revision=r" / "part-0.parquet").write_bytes(data)
    # a second revision of tasks, without its receipts
    (store / "tasks" / "revision=s").mkdir()
    shutil.copyfile(
        store / "tasks/revision=r/part-0.parquet", store / "tasks/revision=s/part-0.parquet"
    )
    (store / "receipts" / "revision=r").mkdir(parents=True)
    (store / "receipts" / "revision=r" / "part-0.parquet").write_bytes(
        table_parquet(empty_frame("receipts"), "receipts")
    )
    return {
        "base": base,
        "checkout": checkout,
        "other": other,
        "huge": huge,
        "huge-rel": base / "huge-rel",
        "bad-verdict": bad_verdict,
        "outside": outside,
        "tampered": tampered,
        "a-file": a_file,
        "not-a-demo": not_a_demo,
        "store": store,
        "damaged-store": damaged,
    }


def cases(tree: prop.WriteTree, at: dict) -> dict[str, tuple[list, dict]]:
    """command -> (argv, the parts its one line must hold: file, row, field, flag (argparse's
    'argument --flag'), expected, found, and any other text it must say)."""
    out = at["base"] / "out"
    cfg = ["--config", tree.config]
    release = ["--release-dir", tree.release]
    receipt = tree.release / "receipt.json"
    catalog = f"--catalog={tree.catalog}"
    mirror = ["--source-kind=dir", f"--source-location={prop.DEMO_RELEASE}"]
    rev = demo_revision()
    manifest_pin = sha256_bytes((prop.DEMO_RELEASE / "MANIFEST.csv").read_bytes())
    return {
        # --- the seed's commands
        "fetch": (
            ["fetch", *cfg, "--release-dir", out / "rel", "--model", "nope"],
            {"field": "--model", "expected": "one of", "found": "nope"},
        ),
        "fetch (a checkout of another user)": (
            [
                *["fetch", *cfg, "--config", at["base"] / "git.yaml"],
                *["--release-dir", out / "rel-git", "--all-models"],
            ],
            {"file": str(at["other"]), "text": "dubious ownership"},
        ),
        "tasks": (
            [
                *["tasks", *cfg, *release, "--task", tree.task, "--book", "demo_source_24"],
                *["--output", out / "e.json"],
            ],
            {"field": "task", "expected": "demo_source_24", "found": tree.task},
        ),
        "tasks (--limit -1)": (
            ["tasks", *cfg, *release, "--limit", "-1", "--output", out / "e.json"],
            {"flag": "--limit", "expected": "a whole number >= 1", "found": "'-1'"},
        ),
        "tasks (a 200 KB cell)": (
            [
                *["tasks", *cfg, "--config", at["huge"], "--release-dir", at["huge-rel"]],
                "--output",
                out / "huge.json",
            ],
            {
                "file": "MANIFEST.csv",
                "row": 4,
                "field": "target_declaration",
                "expected": "at most 100,000 characters",
                "found": "200,000 characters",
            },
        ),
        "plan": (
            [
                *["plan", *cfg, *release, "--repository-dir", "relative/dir", "--task", tree.task],
                "--output",
                out / "p.json",
            ],
            {"field": "repository_dir", "expected": "absolute", "found": "relative/dir"},
        ),
        "import-results": (
            [
                *["import-results", *cfg, *release, "--all-models", "--budget-usd", "100"],
                "--output",
                out / "r.json",
            ],
            {"field": "budget_usd", "expected": "200", "found": "100"},
        ),
        "verdict": (
            ["verdict", "--path", at["bad-verdict"], "--task", tree.task],
            {
                "file": str(at["bad-verdict"]),
                "field": "status",
                "expected": "accepted, rejected or error",
                "found": "maybe",
            },
        ),
        "verify": (
            [*["verify", *cfg, "--release-dir", at["tampered"]], "--output", out / "receipt.json"],
            {"file": "SOURCES.csv", "expected": "sha256", "found": "sha256"},
        ),
        "import-run": (
            [
                *["import-run", "--selection", tree.selection, "--name", "r", "--kind"],
                *["verdicts", "--path", at["outside"], "--output-dir", out / "run"],
            ],
            {"field": "selection", "expected": "tasks of selection", "found": "demo_s24_t001"},
        ),
        "report": (
            [
                *["report", "--summary", tree.summary, "--import", tree.catalog],
                *["--catalog", tree.catalog, "--receipt", receipt, "--output-dir", out / "rep"],
            ],
            {
                "file": str(tree.catalog),
                "field": "kind",
                "expected": "official results import",
                "found": "task catalog",
            },
        ),
        "export": (
            [
                *["export", "--root", tree.root, "--format", "csv", "--output-dir", out / "tab"],
                "--table",
                "nope",
            ],
            {"field": "--table", "expected": "one of", "found": "nope"},
        ),
        "power": (
            ["power", "--difference", "0.1", "--models", "demo-model-a", "demo-model-b"],
            {"field": "--root", "expected": "results/<revision>"},
        ),
        "decide": (
            ["decide", "--plan", tree.catalog, "--output", out / "decision.json"],
            {"file": str(tree.catalog), "field": "kind", "expected": "analysis plan"},
        ),
        "preregister": (
            [
                *["preregister", *cfg, "--selection", tree.selection, "--catalog", tree.catalog],
                *["--output", out / "plan.json"],
            ],
            {"field": "preregister.comparison", "expected": "{selection: NAME", "found": "none"},
        ),
        "ledger": (
            ["ledger", "--ledger", at["not-a-demo"]],
            {"file": str(at["not-a-demo"]), "text": "not a regular file"},
        ),
        "watch": (
            ["watch", "--ledger", at["a-file"], "--receipts", at["not-a-demo"], "--once"],
            {"file": str(at["a-file"]), "row": 1, "text": "not valid JSON"},  # no newline: foreign
        ),
        "audit": (
            ["audit", out / "no-such-revision"],
            {"file": str(out / "no-such-revision"), "expected": "a results/<revision> folder"},
        ),
        "query": (
            ["query", "--store", out / "no-store", "SELECT 1"],
            {"file": str(out / "no-store"), "expected": "a store folder"},
        ),
        "query (bad SQL)": (
            ["query", "--store", at["store"], "SELECT nope FROM tasks"],
            {"field": "SQL", "text": "nope"},
        ),
        "query (a damaged file)": (
            ["query", "--store", at["damaged-store"], "SELECT 1"],
            {"file": "part-0.parquet", "text": "not a readable Parquet file"},
        ),
        "query (a missing partition)": (
            ["query", "--store", at["store"], "SELECT * FROM receipts"],
            {
                "file": str(at["store"] / "receipts/revision=s/part-0.parquet"),
                "text": "revision s has no partition of table receipts",
                "expected": "every table's partition of every revision",
            },
        ),
        "discover": (
            [*["discover", *cfg, "--checkout", at["not-a-demo"]], "--output-dir", out / "disc"],
            {"file": str(at["not-a-demo"]), "text": "git"},
        ),
        "diff": (
            [
                *["diff", "--previous", tree.catalog, "--current", tree.catalog],
                *["--catalog", tree.catalog, "--output-dir", out / "upgrade"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "task digests"},
        ),
        "compare-revisions": (
            [
                *["compare-revisions", "--comparable", tree.catalog],
                *["--previous", tree.imports[0], "--current", tree.imports[1]],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "task selection"},
        ),
        "demo generate": (
            ["demo", "generate", "--out", at["a-file"]],
            {
                "file": str(at["a-file"]),
                "text": "output folder is a regular file, not a folder",
                "expected": "a folder",
                "found": "a regular file",
            },
        ),
        "demo repo": (
            ["demo", "repo", "--release-files", prop.DEMO_RELEASE, "--out", at["not-a-demo"]],
            {"file": str(at["not-a-demo"])},
        ),
        # --- the pipeline's jobs
        "job build-demo-upstream": (
            [
                *["job", "build-demo-upstream", f"--release-files={prop.DEMO_RELEASE}"],
                f"--output={at['not-a-demo']}",
            ],
            {"file": str(at["not-a-demo"])},
        ),
        "job fetch-file": (
            [
                *["job", "fetch-file", *mirror, "--repository=o/r", f"--revision={rev}"],
                *["--file=MANIFEST.csv", f"--sha256={'0' * 64}"],
                *["--connect-timeout-s=1", "--read-timeout-s=1", "--total-timeout-s=1"],
                *["--retries=0", "--backoff-factor=0", "--max-bytes=1000000"],
                f"--output={out / 'MANIFEST.csv'}",
            ],
            {"file": "MANIFEST.csv", "expected": f"sha256 {'0' * 64}", "found": "sha256"},
        ),
        "job write-release-identity": (
            [
                *["job", "write-release-identity", "--name=n", "--repository=o/r"],
                *[f"--revision={rev}", "--synthetic=true", "--lean=v4", f"--mathlib={rev}"],
                *["--harbor=0.22.0", "--nominal-budget-usd=200", "--license=x"],
                *["--release-page=2026-02-30", "--manuscript-cover=", "--software-citation="],
                *["--first-public-release=", f"--output={out / 'id.json'}"],
            ],
            {"flag": "--release-page", "expected": "a real calendar date", "found": "2026-02-30"},
        ),
        "job verify-file": (
            [
                *["job", "verify-file", f"--identity={tree.catalog}"],
                *[f"--file={tree.release / 'MANIFEST.csv'}"],
                *[f"--pin=manifest=MANIFEST.csv@{manifest_pin}", *mirror],
                f"--output={out / 'v.json'}",
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "release identity"},
        ),
        "job verify-release": (
            ["job", "verify-release", f"--entry={tree.catalog}", f"--output={out / 'r.json'}"],
            {"file": str(tree.catalog), "field": "kind", "expected": "verified file"},
        ),
        "job discover-release": (
            [
                *["job", "discover-release", "--checkout=", f"--revision={rev}"],
                *["--column=manifest.task_id=task_id"],
                *[f"--discovery={out / 'd.json'}", f"--fragment={out / 'd.yaml'}"],
            ],
            {"field": "discover.checkout"},
        ),
        "job export-catalog": (
            [
                *["job", "export-catalog", f"--manifest={tree.release / 'MANIFEST.csv'}"],
                *[f"--sources={tree.release / 'SOURCES.csv'}", f"--verified={receipt}"],
                *column_flags("manifest-column", default_columns("manifest")),
                *column_flags("sources-column", default_columns("sources")),
                *["--expected-counts=340,24,1155", f"--output={out / 'c.json'}"],
            ],
            {"field": "tasks", "expected": "340", "found": "341"},
        ),
        "job select-tasks": (
            [
                *["job", "select-tasks", catalog, "--name=s", "--task=nope"],
                f"--output={out / 's.json'}",
            ],
            {"field": "task", "expected": "a task_id of the catalog", "found": "nope"},
        ),
        "job write-plan": (
            [
                *["job", "write-plan", catalog, f"--selection={tree.catalog}", "--agent=nop"],
                *[f"--repository-dir={at['checkout']}", "--tasks-dir=harbor/tasks"],
                *["--jobs-dir=jobs", "--environment-type=docker", "--harbor=harbor"],
                f"--output={out / 'plan.json'}",
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "task selection"},
        ),
        "job import-model": (
            [
                *["job", "import-model", catalog, f"--verified={receipt}"],
                *[f"--results={tree.release / 'results' / 'demo-model-b.csv'}"],
                *["--model=demo-model-a", "--display-name=A", "--pinned-condition=source-present"],
                *["--source-condition=source-present", *prop.RESULT_COLUMNS],
                f"--output={out / 'a.json'}",
            ],
            {"file": "demo-model-b.csv", "expected": "sha256", "found": "sha256"},
        ),
        "job compare-models": (
            [
                *["job", "compare-models", *[f"--import={tree.imports[0]}"] * 2],
                *["--strict-budget=false", "--published-source=", "--published-task-rows="],
                *["--strict-published=false", f"--summary={out / 's.json'}"],
                f"--leaderboard={out / 'b.csv'}",
            ],
            {"field": "model", "expected": "each model once", "found": "demo-model-a"},
        ),
        "job import-run": (
            [
                *["job", "import-run", f"--selection={tree.selection}", "--name=r"],
                *["--kind=harbor", f"--path={at['not-a-demo']}", "--budget-usd=200"],
                *[f"--summary={out / 's.json'}", f"--outcomes={out / 'o.csv'}"],
                f"--attempts={out / 'a.csv'}",
            ],
            {"file": str(at["not-a-demo"]), "text": "no config.json"},
        ),
        "job import-executed": (
            [
                *["job", "import-executed", f"--selection={tree.selection}", "--name=r"],
                *[f"--receipt={tree.catalog}", f"--summary={out / 's.json'}"],
                *[f"--outcomes={out / 'o.csv'}", f"--attempts={out / 'a.csv'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "trial receipt"},
        ),
        "job analyse-failures": (
            [
                *["job", "analyse-failures", f"--import={tree.catalog}"],
                *["--near-miss-share=0.5", f"--output={out / 'f.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "official results import"},
        ),
        "job analyse-run-failures": (
            [
                *["job", "analyse-run-failures", f"--summary={tree.catalog}"],
                *[f"--outcomes={tree.catalog}", f"--output={out / 'f.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "local run summary"},
        ),
        "job pass-at-k": (
            [
                *["job", "pass-at-k", f"--summary={tree.catalog}", f"--attempts={tree.catalog}"],
                *[catalog, "--confidence=0.95", f"--output={out / 'p.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "local run summary"},
        ),
        "job analyse-tasks": (
            [
                *["job", "analyse-tasks", catalog, f"--import={tree.imports[0]}"],
                *["--shuffles=199", "--seed=1", "--alpha=0.05", "--min-discrimination=0.3"],
                f"--output={out / 't.json'}",
            ],
            {"field": "--import", "expected": "two or more model imports", "found": "1"},
        ),
        "job render-figures": (
            [
                *["job", "render-figures", f"--summary={tree.summary}"],
                *[f"--import={p}" for p in tree.imports],
                *[catalog, f"--receipt={receipt}", "--confidence=0.95"],
                f"--figure={out / 'nope.svg'}",
            ],
            {"field": "--figure", "expected": "leaderboard", "found": "nope"},
        ),
        "job render-report": (
            [
                *["job", "render-report", f"--summary={tree.catalog}"],
                *[f"--import={p}" for p in tree.imports],
                *[catalog, f"--receipt={receipt}", "--confidence=0.95"],
                *[f"--settings-digest={'0' * 64}", f"--figure={out / 'leaderboard.svg'}"],
                *[f"--html={out / 'i.html'}", f"--analysis={out / 'a.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "results summary"},
        ),
        "job render-report (the history's inputs without the history)": (
            [
                *["job", "render-report", f"--summary={tree.catalog}"],
                *[f"--import={p}" for p in tree.imports],
                *[catalog, f"--receipt={receipt}", "--confidence=0.95"],
                *[f"--settings-digest={'0' * 64}", f"--figure={out / 'leaderboard.svg'}"],
                *[f"--html={out / 'i.html'}", f"--analysis={out / 'a.json'}"],
                f"--history-comparable={tree.catalog}",
            ],
            {"field": "--history", "expected": "true", "found": "false"},
        ),
        "job write-artifact-manifest": (
            [
                *["job", "write-artifact-manifest", str(at["a-file"]), f"--root={tree.root}"],
                *[f"--revision={rev}", f"--config-digest={'0' * 64}"],
                f"--output={out / 'm.json'}",
            ],
            {"file": str(at["a-file"]), "expected": f"a file under {tree.root}"},
        ),
        "job audit-directory": (
            [
                *["job", "audit-directory", f"--manifest={tree.catalog}"],
                f"--output={tree.catalog.parent / 'audit.json'}",
            ],
            {
                "file": str(tree.catalog.parent / "audit.json"),
                "expected": f"a file outside {tree.catalog.parent}",
            },
        ),
        "job store-results": (
            [
                *["job", "store-results", f"--manifest={tree.catalog}", f"--revision={rev}"],
                f"--output={out / 'x.parquet'}",
            ],
            {"file": str(out / "x.parquet"), "field": "--output", "expected": "revision="},
        ),
        "job plan-power": (
            [
                *["job", "plan-power", "--difference=0.1", "--tasks=", "--alpha=0.05"],
                *["--power=0.8", "--configurations=2", "--baseline-rate="],
                f"--import={tree.imports[0]}",
                *["--sequential-tasks=", "--batch-tasks=10", "--usd-per-task=400"],
                f"--output={out / 'p.json'}",
            ],
            {"field": "--import", "expected": "2 imports", "found": "1 given"},
        ),
        "job seal-analysis-plan": (
            [
                *["job", "seal-analysis-plan", f"--selection={tree.catalog}", catalog],
                *["--a-agent=oracle", "--a-model=", "--b-agent=nop", "--b-model="],
                *["--environment-type=docker", "--attempts=1", "--alpha=0.05"],
                *["--stopping=sequential", "--difference=0.1", "--discordance=0.3"],
                *["--baseline-rate=", "--power=0.8", "--batch-tasks=10", "--horizon="],
                *["--order-seed=0", "--futility-power=0.1", "--max-cost-usd="],
                "--trial-cap-usd=",
                f"--output={out / 'plan.json'}",
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "task selection"},
        ),
        "job seal-run-plan": (
            [
                *["job", "seal-run-plan", f"--selection={tree.catalog}", catalog],
                "--agent=oracle",
                *["--model=", "--environment-type=docker", "--attempts=1"],
                *["--max-cost-usd=5", "--trial-cap-usd=", f"--output={out / 'run.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "task selection"},
        ),
        "job run-trial": (
            [
                *["job", "run-trial", f"--plan={tree.catalog}", catalog],
                *[f"--selection={tree.selection}", "--agent=nop"],
                *[f"--repository-dir={at['checkout']}", "--tasks-dir=harbor/tasks"],
                *["--jobs-dir=jobs", "--environment-type=docker", "--harbor=harbor"],
                *[f"--task={tree.task}", "--attempt=1", "--allow-model-agent=false"],
                *["--max-cost-usd=", f"--ledger={out / 'l.jsonl'}", f"--output={out / 't.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "harbor run plan"},
        ),
        "job checksum-tasks": (
            [
                *["job", "checksum-tasks", f"--selection={tree.selection}"],
                *["--repository-dir=relative/dir", "--tasks-dir=harbor/tasks"],
                f"--output={out / 'c.json'}",
            ],
            {"field": "repository_dir", "expected": "absolute", "found": "relative/dir"},
        ),
        "job digest-tasks": (
            [
                *["job", "digest-tasks", f"--catalog={tree.catalog}"],
                *["--repository-dir=relative/dir", "--tasks-dir=tasks"],
                f"--output={out / 'd.json'}",
            ],
            {"field": "repository_dir", "expected": "absolute", "found": "relative/dir"},
        ),
        "job diff-releases": (
            [
                *["job", "diff-releases", f"--previous={tree.catalog}"],
                *[f"--digests={tree.catalog}", f"--catalog={tree.catalog}"],
                *[f"--diff={out / 'diff.json'}", f"--comparable={out / 'c.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "task digests"},
        ),
        "job plan-upgrade": (
            [
                *["job", "plan-upgrade", f"--diff={tree.catalog}", f"--catalog={tree.catalog}"],
                *["--attempts=1", f"--output={out / 'p.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "release diff"},
        ),
        "job compare-revisions": (
            [
                *["job", "compare-revisions", f"--comparable={tree.catalog}"],
                *[f"--previous={tree.imports[0]}", f"--current={tree.imports[1]}"],
                *["--confidence=0.95", f"--output={out / 'cr.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "task selection"},
        ),
        "job decide-step": (
            [
                *["job", "decide-step", f"--analysis-plan={tree.catalog}"],
                *[f"--plan-sha256={'0' * 64}", f"--harbor-plan={tree.catalog}"],
                *["--step=0", f"--ledger={at['a-file']}"],
                *["--max-cost-usd=", "--trial-cap-usd=", f"--output={out / 's.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "analysis plan"},
        ),
        "job decide-comparison": (
            [
                *["job", "decide-comparison", f"--analysis-plan={tree.catalog}"],
                *[f"--plan-sha256={'0' * 64}", f"--harbor-plan={tree.catalog}"],
                *["--step=0", f"--ledger={at['a-file']}"],
                *["--max-cost-usd=", "--trial-cap-usd=", f"--output={out / 's.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "analysis plan"},
        ),
        "job write-cost-ledger": (
            [
                *["job", "write-cost-ledger", f"--receipt={tree.catalog}"],
                *[f"--ledger={at['a-file']}", "--max-cost-usd=", f"--output={out / 'c.json'}"],
            ],
            {"file": str(tree.catalog), "field": "kind", "expected": "trial receipt"},
        ),
    }


def _check(line: str, parts: dict) -> None:
    assert line.startswith("afbench: error: "), line
    for part, value in parts.items():
        if part == "file":
            assert value in line, (part, value, line)
        elif part == "row":
            assert f"row {value}:" in line, (part, line)
        elif part == "field":
            assert f"field '{value}'" in line, (part, line)
        elif part == "flag":
            assert f"argument {value}:" in line, (part, line)
        elif part == "text":
            assert value in line, (part, value, line)
        else:
            found = re.search(rf"\b{part} (.*)", line)
            assert found and value in found.group(1), (part, value, line)
    assert "Traceback" not in line and "\n" not in line


CASES = [
    "fetch",
    "fetch (a checkout of another user)",
    "tasks",
    "tasks (--limit -1)",
    "tasks (a 200 KB cell)",
    "plan",
    "import-results",
    "verdict",
    "verify",
    "import-run",
    "report",
    "export",
    "power",
    "preregister",
    "decide",
    "ledger",
    "watch",
    "audit",
    "query",
    "query (bad SQL)",
    "query (a damaged file)",
    "query (a missing partition)",
    "discover",
    "diff",
    "compare-revisions",
    "demo generate",
    "demo repo",
    *[f"job {name}" for name in JOBS],
    "job render-report (the history's inputs without the history)",
]


def test_the_table_has_a_case_for_every_command():
    commands = {case.split(" (")[0] for case in CASES}
    assert commands == {*COMMANDS, *[f"demo {n}" for n in DEMO], *[f"job {n}" for n in JOBS]}


@pytest.mark.parametrize("case", CASES)
def test_each_command_refuses_in_one_line_naming_where_expected_and_found(tree, places, case):
    if case == "fetch (a checkout of another user)":
        if places["other"] is None:
            pytest.skip("needs root, to give a checkout to another user")
        (places["base"] / "git.yaml").write_text(
            yaml.safe_dump({"source": {"kind": "git", "checkout": str(places["other"])}})
        )
    argv, parts = cases(tree, places)[case]
    code, err = prop.cli(*argv)
    assert code == 2, err
    lines = refusal_lines(err)
    assert len(lines) == 1, err
    _check(lines[0], parts)
