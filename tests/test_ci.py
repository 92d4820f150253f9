"""What `.ci/run` leaves when a test fails (ci/run-tests.sh, ci/junit_summary.py): the JUnit
XML report's failures with their output, the slowest tests, the report's path, and pytest's
closing line last."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUMMARY = REPO / "ci" / "junit_summary.py"

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="0" tests="3" time="9.1">
<testcase classname="tests.test_a" name="test_passes" time="0.010">
<system-out>never shown: it passed</system-out></testcase>
<testcase classname="tests.test_a" name="test_fails[1]" time="7.500">
<failure message="assert 1 == 2">def test_fails():
&gt;       assert 1 == 2
E       assert 1 == 2</failure>
<system-out>------ Captured Log ------

------ Captured Out ------
said on stdout
</system-out><system-err>said on stderr</system-err></testcase>
<testcase classname="tests.test_b" name="test_breaks" time="1.250">
<error message="failed on setup with &quot;OSError&quot;">fixture broke</error></testcase>
</testsuite></testsuites>
"""


def summary(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, SUMMARY, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )


def test_the_summary_prints_each_failure_with_its_output_the_slowest_and_the_closing_line(
    tmp_path,
):
    report, log = tmp_path / "junit.xml", tmp_path / "pytest.log"
    report.write_text(REPORT)
    log.write_text(
        "tests/test_a.py .F\n"
        "\x1b[31m===== 1 failed, 1 passed, 1 error in 9.10s =====\x1b[0m\n"
        "make: *** [Makefile:79: test] Error 1\n"
    )
    said = summary(report, log)
    assert said.returncode == 0 and said.stderr == ""
    assert said.stdout.splitlines() == [
        "---- failure: tests.test_a::test_fails[1] ----",
        "def test_fails():",
        ">       assert 1 == 2",
        "E       assert 1 == 2",
        "---- system-out of tests.test_a::test_fails[1] ----",
        "------ Captured Out ------",
        "said on stdout",
        "---- system-err of tests.test_a::test_fails[1] ----",
        "said on stderr",
        "---- error: tests.test_b::test_breaks ----",
        "fixture broke",
        "ci: the 3 slowest tests (set-up, call and teardown, in seconds):",
        "     7.50 tests.test_a::test_fails[1]",
        "     1.25 tests.test_b::test_breaks",
        "     0.01 tests.test_a::test_passes",
        f"ci: 2 of 3 tests failed; JUnit XML report: {report}",
        "\x1b[31m===== 1 failed, 1 passed, 1 error in 9.10s =====\x1b[0m",
    ]


def test_the_summary_keeps_the_25_slowest_and_says_when_there_is_no_report(tmp_path):
    report = tmp_path / "junit.xml"
    cases = "".join(f'<testcase classname="t" name="test_{i}" time="{i}"/>' for i in range(40))
    report.write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>")
    lines = summary(report).stdout.splitlines()
    assert lines[0] == "ci: the 25 slowest tests (set-up, call and teardown, in seconds):"
    assert lines[1:26] == [f"{i:9.2f} t::test_{i}" for i in range(39, 14, -1)]
    assert lines[26:] == [f"ci: 0 of 40 tests failed; JUnit XML report: {report}"]
    missing = summary(tmp_path / "absent.xml", tmp_path / "absent.log")
    assert missing.returncode == 0 and missing.stdout.splitlines() == [
        f"ci: no JUnit XML report at {tmp_path / 'absent.xml'}: the tests did not run to their end"
    ]


def test_a_forced_failure_leaves_its_report_and_output_at_the_end_of_the_log(tmp_path):
    """pytest itself, with this project's settings (pyproject.toml), on one passing and one
    failing test, through the script .ci/run runs `make test` with: the run fails, its last
    lines are the failure's traceback and captured output, the report's path, and pytest's
    closing line."""
    (tmp_path / "test_forced.py").write_text(
        "import sys\n"
        "def test_passes():\n"
        "    print('quiet')\n"
        "def test_fails():\n"
        "    print('the evidence, on stdout')\n"
        "    print('and on stderr', file=sys.stderr)\n"
        "    assert 1 + 1 == 3\n"
    )
    pytest = [sys.executable, "-m", "pytest", "-c", REPO / "pyproject.toml", "--rootdir", "."]
    pytest += ["-p", "no:cacheprovider", "--junitxml=test-results/junit.xml", "--durations=25"]
    run = subprocess.run(
        ["bash", REPO / "ci/run-tests.sh", *pytest, "test_forced.py"],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},  # ours only
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    tail = lines[lines.index("---- failure: test_forced::test_fails ----") :]
    assert ">       assert 1 + 1 == 3" in tail and "E       assert (1 + 1) == 3" in tail, tail
    out = tail.index("---- system-out of test_forced::test_fails ----")
    err = tail.index("---- system-err of test_forced::test_fails ----")
    assert [x for x in tail[out + 1 : err] if x.strip()] == [
        "-" * 33 + " Captured Out " + "-" * 33,  # its empty "Captured Log" left out
        "the evidence, on stdout",
    ]
    assert "and on stderr" in tail[err:] and "quiet" not in tail
    report = tmp_path / "test-results" / "junit.xml"
    assert tail[-2] == f"ci: 1 of 2 tests failed; JUnit XML report: {report}"
    assert tail[-1].startswith("=") and " 1 failed, 1 passed in " in tail[-1], tail[-1]
    assert report.is_file() and (tmp_path / "test-results" / "pytest.log").is_file()
