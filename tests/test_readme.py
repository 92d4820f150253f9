"""The README is true: every code block in it says how it is tested (`<!-- readme-test: ... -->`
on the line before it): run here as written, covered by a named test, or not run, with the
reason. The blocks marked `run` run here, line by line, in a copy of the demo project, and the
blocks covered elsewhere name a test that exists."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, demo_revision, project

MARKER = re.compile(r"<!-- readme-test: (run|covered by (\S+)|not run \((.+)\))[^\n]* -->")
BLOCK = re.compile(r"^(<!-- readme-test:[^\n]*-->\n)?```(\w+)\n(.*?)^```\n", re.M | re.S)


def blocks() -> list[tuple[str | None, str, str]]:
    """(marker, language, text) of every fenced block with a language."""
    return [
        (m.group(1), m.group(2), m.group(3))
        for m in BLOCK.finditer((REPO / "README.md").read_text())
    ]


def commands(text: str) -> list[str]:
    """The command lines of a shell block: continuations joined, comments left out."""
    joined = re.sub(r"\\\n\s*", " ", text)
    lines = [line.split("  #", 1)[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_every_code_block_says_how_it_is_tested():
    found = blocks()
    assert len(found) >= 10
    unmarked = [text.splitlines()[0] for marker, _, text in found if marker is None]
    assert unmarked == []
    for marker, _, _ in found:
        match = MARKER.search(marker)
        assert match, marker
        if match.group(2):  # covered by tests/<file>::<name>
            file, _, name = match.group(2).partition("::")
            assert re.search(rf"^def {re.escape(name)}\(", (REPO / file).read_text(), re.M), (
                f"{match.group(2)} does not exist"
            )


def test_the_readme_names_the_current_demo_revision():
    text = (REPO / "README.md").read_text()
    named = set(re.findall(r"results/([0-9a-f]{40})", text))
    assert named == {demo_revision()}


@pytest.mark.snakemake
def test_the_blocks_marked_run_run_as_written_on_the_demo(demo_project, tmp_path):
    """In a copy of what `make demo` made, from the checkout's root with the venv's afbench
    first on PATH, each command exits 0."""
    root = tmp_path / "checkout"
    shutil.copytree(demo_project, root, symlinks=True)
    shutil.copytree(REPO / "tests" / "fixtures" / "verdicts", root / "tests/fixtures/verdicts")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = []
    for marker, language, text in blocks():
        if marker is None or "readme-test: run" not in marker:
            continue
        assert language == "sh"
        for command in commands(text):
            result = subprocess.run(
                ["bash", "-c", command],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert result.returncode == 0, f"{command}\n{result.stderr[-2000:]}"
            ran.append(command)
    assert len(ran) >= 9
    runs = root / "runs" / "demo"
    assert json.loads((runs / "verdict-import.json").read_text())["reward"] == 0
    assert (runs / "tasks.json").read_bytes() == (
        root / "results" / demo_revision() / "tasks" / "catalog.json"
    ).read_bytes()
    assert (root / "power.json").is_file()


def test_the_execution_example_is_what_the_slurm_test_runs(tmp_path):
    """README's my-run.yaml and its command are the config and command of the SLURM test
    (tests/test_execute.py), but for where Harbor is (there: this checkout's, by absolute
    path; in the README: relative to the file, which resolves to the same)."""
    from test_execute import overlay

    found = [
        (marker, language, text)
        for marker, language, text in blocks()
        if marker and "test_execute_on_slurm_killed" in marker
    ]
    assert [language for _, language, _ in found] == ["yaml", "sh"]
    shown = yaml.safe_load(found[0][2])
    root = project(tmp_path)
    args = overlay(root, [{"agent": "nop"}, {"agent": "oracle"}])
    tested = yaml.safe_load((root / args[-1]).read_text())
    assert shown["plans"].pop("harbor") == ".harbor-venv/bin/harbor"
    assert Path(tested["plans"].pop("harbor")) == REPO / ".harbor-venv/bin/harbor"
    assert shown == tested
    [command] = commands(found[1][2])
    words = shlex.split(command)
    assert words[:2] == ["snakemake", "execute"]
    assert words[2:] == [
        "--profile",
        "profiles/slurm",
        "--configfile",
        "config/demo.yaml",
        "my-run.yaml",
    ]
    assert args[:2] == ["--configfile", "config/demo.yaml"]
