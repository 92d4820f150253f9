"""The evidence a test run leaves, printed at the end of its log: each failing test's output
from the JUnit XML report, the 25 slowest tests, where the report is, then pytest's closing
line again (from the run's log), so the last screen of a CI log holds what failed and why and
still ends with the line CI reads ("N failed, N passed in Ns").

    python3 ci/junit_summary.py REPORT [PYTEST_LOG]

Only the standard library: it runs with whatever python3 CI has, even when set-up failed."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SLOWEST = 25
# pytest's closing line: "==== 1 failed, 2 passed, 3 skipped in 4.56s (0:00:04) ===="
CLOSING = re.compile(r"^=+ .+ in [0-9.]+s\b.* =+$")
COLOUR = re.compile(r"\x1b\[[0-9;]*m")
# a part of a test's captured output, "------ Captured Out ------" (pytest writes it empty too)
SECTION = re.compile(r"^-+ Captured \w+ -+$")


def test_name(case: ET.Element) -> str:
    return f"{case.get('classname')}::{case.get('name')}"


def failures(case: ET.Element) -> list[str]:
    """A failing or erroring test's failure (its traceback) and its captured output."""
    name, lines = test_name(case), []
    for problem in case:
        if problem.tag not in ("failure", "error"):
            continue
        lines.append(f"---- {problem.tag}: {name} ----")
        lines += (problem.text or problem.get("message") or "").splitlines()
    for stream in ("system-out", "system-err"):
        for part in case.iter(stream):
            said = said_parts(part.text or "")
            if lines and said:
                lines += [f"---- {stream} of {name} ----", *said]
    return lines


def said_parts(text: str) -> list[str]:
    """The lines of captured output, without the parts that hold nothing."""
    parts: list[list[str]] = [[]]
    for line in text.splitlines():
        if SECTION.match(line):
            parts.append([])
        parts[-1].append(line)
    said = [p for p in parts if any(x.strip() for x in p if not SECTION.match(x))]
    return [line for part in said for line in part]


def slowest(cases: list[ET.Element]) -> list[str]:
    ranked = sorted(cases, key=lambda case: -float(case.get("time") or 0))[:SLOWEST]
    lines = [f"ci: the {len(ranked)} slowest tests (set-up, call and teardown, in seconds):"]
    return lines + [f"{float(case.get('time') or 0):9.2f} {test_name(case)}" for case in ranked]


def evidence(report: Path) -> list[str]:
    try:
        root = ET.parse(report).getroot()
    except FileNotFoundError:
        return [f"ci: no JUnit XML report at {report}: the tests did not run to their end"]
    except ET.ParseError as error:
        return [f"ci: the JUnit XML report {report} cannot be read: {error}"]
    cases = list(root.iter("testcase"))
    failed = [lines for case in cases if (lines := failures(case))]
    said = [line for lines in failed for line in lines]
    return [
        *said,
        *slowest(cases),
        f"ci: {len(failed)} of {len(cases)} tests failed; JUnit XML report: {report.resolve()}",
    ]


def closing_line(log: Path) -> list[str]:
    """pytest's own closing line, the last of the log that reads as one (make's error follows
    it in the log when the tests fail)."""
    try:
        text = log.read_text(errors="replace")
    except FileNotFoundError:
        return []
    found = [line for line in text.splitlines() if CLOSING.match(COLOUR.sub("", line))]
    return found[-1:]


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    lines = evidence(Path(argv[0]))
    if len(argv) == 2:
        lines += closing_line(Path(argv[1]))
    print("\n".join(lines), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
