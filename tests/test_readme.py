"""The README and the docs/ pages are true: every code block in them says how it is tested
(`<!-- readme-test: ... -->` on the line before it): run here as written, covered by a named
test, or not run, with the reason. The blocks marked `run` run here, line by line, in a copy of
the demo project, and the blocks covered elsewhere name a test that exists. Every relative link
between the pages resolves, to a file and, for `#anchor`, to a heading of it."""

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

from conftest import REPO, demo_revision

MARKER = re.compile(r"<!-- readme-test: (run|covered by (\S+)|not run \((.+)\))[^\n]* -->")
MARKER_LINE = re.compile(r"<!-- readme-test:[^\n]*-->")
FENCE = re.compile(r" {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FRONT_PAGE_LINES = 250  # the front page: "at most about 250 lines"; the rest is in docs/


def pages() -> list[Path]:
    """The front page, then every docs/ page."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def fenced(page: Path) -> list[tuple[int, str | None, str, str]]:
    """(line number, marker, language, text) of every fenced block of `page`, with or without a
    language; the marker is the line before the opening fence when it is one."""
    lines = page.read_text().splitlines(keepends=True)
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        fence, language = opening.groups()
        before = lines[i - 1].rstrip("\n") if i else ""
        end = i + 1
        while end < len(lines) and not re.fullmatch(
            rf" {{0,3}}{fence[0]}{{{len(fence)},}}\s*", lines[end].rstrip("\n")
        ):
            end += 1
        assert end < len(lines), f"{page.relative_to(REPO)}:{i + 1}: a fence that never closes"
        marker = before if MARKER_LINE.fullmatch(before) else None
        found.append((i + 1, marker, language, "".join(lines[i + 1 : end])))
        i = end + 1
    return found


def blocks() -> list[tuple[str | None, str, str]]:
    """(marker, language, text) of every fenced block with a language, on the README and then
    on each docs/ page."""
    return [
        (marker, language, text)
        for page in pages()
        for _, marker, language, text in fenced(page)
        if language
    ]


def outside(page: Path) -> list[tuple[int, str]]:
    """(line number, line) of `page` outside its fenced blocks."""
    inside = {
        n
        for start, _, _, text in fenced(page)
        for n in range(start, start + len(text.splitlines()) + 2)
    }
    lines = enumerate(page.read_text().splitlines(), 1)
    return [(n, line) for n, line in lines if n not in inside]


def prose(page: Path) -> list[tuple[int, str]]:
    """(line number, line) of `page` outside its fenced blocks, inline code removed."""
    return [(n, re.sub(r"`[^`]*`", "", line)) for n, line in outside(page)]


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives `page`'s headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in outside(page):
        heading = HEADING.fullmatch(line)
        if heading:
            text = re.sub(r"[^\w\- ]", "", heading.group(2).lower()).replace(" ", "-")
            found.add(f"{text}-{seen[text]}" if text in seen else text)
            seen[text] = seen.get(text, 0) + 1
    return found


def broken_links() -> tuple[int, list[str]]:
    """How many relative links the pages have, and each one that does not resolve."""
    checked, broken = 0, []
    for page in pages():
        for n, line in prose(page):
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # https:, mailto:
                path, _, anchor = target.partition("#")
                to = (page.parent / path).resolve() if path else page
                where = f"{page.relative_to(REPO)}:{n}: {target}"
                checked += 1
                if not to.is_relative_to(REPO.resolve()) or not to.exists():
                    broken.append(f"{where}: no such file")
                elif anchor and anchor not in (anchors(to) if to.suffix == ".md" else set()):
                    broken.append(f"{where}: no such heading")
    return checked, broken


def commands(text: str) -> list[str]:
    """The command lines of a shell block: continuations joined, comments left out."""
    joined = re.sub(r"\\\n\s*", " ", text)
    lines = [line.split("  #", 1)[0].strip() for line in joined.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def test_every_code_block_says_how_it_is_tested():
    found = blocks()
    assert len(found) >= 10
    assert len(pages()) > 1, "the reference pages are in docs/"
    unmarked = [
        f"{page.relative_to(REPO)}:{line}"
        for page in pages()
        for line, marker, language, _ in fenced(page)
        if marker is None or not language
    ]
    assert unmarked == [], "a block without a readme-test marker or a language"
    for marker, _, _ in found:
        match = MARKER.search(marker)
        assert match, marker
        if match.group(2):  # covered by tests/<file>::<name>
            file, _, name = match.group(2).partition("::")
            assert re.search(rf"^def {re.escape(name)}\(", (REPO / file).read_text(), re.M), (
                f"{match.group(2)} does not exist"
            )


def test_the_readme_names_the_current_demo_revision():
    text = "".join(page.read_text() for page in pages())
    named = set(re.findall(r"results/([0-9a-f]{40})", text))
    assert named == {demo_revision()}


def test_every_relative_link_resolves():
    """Every link of the README and the docs/ pages that is not a URL names a file of the
    checkout, relative to its page, and an `#anchor` names a heading of the page it points to."""
    checked, broken = broken_links()
    assert broken == []
    assert checked >= 20


def test_the_front_page_is_short_and_links_every_docs_page():
    readme = REPO / "README.md"
    lines = len(readme.read_text().splitlines())
    assert lines <= FRONT_PAGE_LINES, f"README.md has {lines} lines: move reference to docs/"
    linked = {
        (readme.parent / target.partition("#")[0]).resolve()
        for _, line in prose(readme)
        for target in LINK.findall(line)
    }
    assert [p.name for p in pages()[1:] if p.resolve() not in linked] == []
    for page in pages()[1:]:
        titles = [n for n, line in outside(page) if line.startswith("# ")]
        assert titles == [1], f"{page.name}: a page opens with its title, its only one"


def test_the_link_check_finds_a_broken_link_and_anchor(tmp_path, monkeypatch):
    """The checks above on pages of their own: a missing file, a missing heading, an unmarked
    block and a link inside code (not a link) each found or left alone as they should be."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "# Front\n\n[a](docs/a.md#the-pages-door-afbench-job) [b](docs/b.md) [c](#front)\n"
        "`[code](nowhere.md)` ![d](docs/a.md#nope) [e](https://example.org/x)\n\n"
        "```sh\n# not a heading\n[x](nowhere.md)\n```\n"
    )
    (tmp_path / "docs" / "a.md").write_text(
        "# A\n\n## The page's door: `afbench job`\n\n## Again\n\n## Again\n\n"
        "<!-- readme-test: run -->\n```sh\ntrue\n```\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert anchors(tmp_path / "docs/a.md") == {
        "a",
        "the-pages-door-afbench-job",
        "again",
        "again-1",
    }
    assert anchors(tmp_path / "README.md") == {"front"}
    assert broken_links() == (
        4,
        ["README.md:3: docs/b.md: no such file", "README.md:4: docs/a.md#nope: no such heading"],
    )
    assert [
        (page.name, line, marker) for page in pages() for line, marker, _, _ in fenced(page)
    ] == [
        ("README.md", 6, None),
        ("a.md", 10, "<!-- readme-test: run -->"),
    ]
    assert blocks() == [
        (None, "sh", "# not a heading\n[x](nowhere.md)\n"),
        ("<!-- readme-test: run -->", "sh", "true\n"),
    ]


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
    assert json.loads((root / "my-plan.json").read_text())["kind"] == "afbench analysis plan"


def test_the_execution_example_is_what_the_slurm_test_runs():
    """The docs' my-run.yaml and its two lines are run as written by the SLURM test
    (tests/execution/test_trial.py reads them from here): Harbor relative to the file, the venv
    activated by the block, the SLURM profile."""
    found = [
        (marker, language, text)
        for marker, language, text in blocks()
        if marker and "test_execute_on_slurm_killed_and_rerun_at_once" in marker
    ]
    assert [language for _, language, _ in found] == ["yaml", "sh"]
    shown = yaml.safe_load(found[0][2])
    assert shown["plans"]["harbor"] == ".harbor-venv/bin/harbor"
    assert shown["execute"]["items"] == shown["plans"]["items"]
    activate, command = commands(found[1][2])
    assert activate == ". .venv/bin/activate"
    assert shlex.split(command) == [
        "snakemake",
        "execute",
        "--profile",
        "profiles/slurm",
        "--configfile",
        "config/demo.yaml",
        "my-run.yaml",
    ]
    source = (REPO / "tests" / "execution" / "test_trial.py").read_text()
    assert 'readme_example("test_execute_on_slurm_killed_and_rerun_at_once")' in source
