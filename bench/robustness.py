"""The robustness properties of tests/properties.py (run briefly by the tests of the modules
they check: test_config, test_csvtable, test_fsutil, test_runs, ...), run far longer. Prints
how many cases each reader (or writer) was given
and how they ended: the same as the clean file, one of our own errors, a valid change; and the
four that must stay zero: crashes, hangs (a case over CASE_LIMIT_S seconds is stopped by an
alarm and counted), silent acceptances and lost inputs (an input, or a file that was not
afbench's to replace, changed; or outputs of two runs left side by side).

Usage: python bench/robustness.py [EXAMPLES_PER_PROPERTY [SUITE_NAME_PART]]   (default 5000)"""

from __future__ import annotations

import signal
import sys
import time
from collections import Counter
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import properties as prop  # noqa: E402

CASE_LIMIT_S = 5.0


class Hang(BaseException):
    """Raised by the alarm inside a case that ran past CASE_LIMIT_S (even one blocked in a
    system call, such as opening a FIFO)."""


def _alarm(signum, frame):
    raise Hang


def run(name: str, strategy, check, examples: int) -> Counter:
    tally: Counter = Counter()
    slowest = [0.0]

    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(strategy)
    def property_(args):
        started = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, CASE_LIMIT_S)
        try:
            tally[check(*args)] += 1
        except Hang:
            tally["HANG"] += 1
            raise AssertionError(f"case ran past {CASE_LIMIT_S} s") from None
        except prop.Lost:
            tally["LOST INPUT"] += 1
            raise
        except AssertionError:
            tally["SILENT ACCEPTANCE"] += 1
            raise
        except Exception:
            tally["CRASH"] += 1
            raise
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            slowest[0] = max(slowest[0], time.perf_counter() - started)

    started = time.perf_counter()
    try:
        property_()
    except Exception as exc:  # recorded in the tally; show the shrunk example
        print(f"{name}: FAILED: {type(exc).__name__}: {exc}"[:500])
    tally["seconds"] = round(time.perf_counter() - started, 1)
    tally["slowest"] = round(slowest[0], 2)
    return tally


def main() -> None:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    signal.signal(signal.SIGALRM, _alarm)
    demo = yaml.safe_load((REPO / "config/demo.yaml").read_text())
    config_paths = [
        ["release", "revision"],
        ["files", "manifest", "sha256"],
        ["source", "kind"],
        ["import", "budget_usd"],
        ["selections"],
        ["runs"],
        ["plans", "items"],
        ["models", "demo-model-a", "path"],
        ["report", "confidence"],
    ]
    write_commands = prop.write_tree().commands()
    harmless = st.tuples(
        st.integers(0, 2),
        st.integers(0, 10_000),
        st.booleans(),
        st.booleans(),
        st.booleans(),
        st.booleans(),
    )

    def harmless_check(which, seed, crlf, bom, quote_all, extra):
        files = [prop.MANIFEST, prop.SOURCES, prop.RESULTS]
        files[which] = prop.harmless_variant(files[which], seed, crlf, bom, quote_all, extra)
        assert prop.read_all(*files) == prop.CLEAN
        return "same"

    suites = {
        "CSV readers, mutated bytes": (
            st.tuples(st.integers(0, 2), prop.mutations),
            prop.check_csv_mutation,
        ),
        "CSV readers, harmless changes": (harmless, harmless_check),
        "verdict JSON": (st.tuples(st.integers(0, 20), prop.json_values), prop.check_verdict),
        "Harbor result.json": (st.tuples(st.integers(0, 20), prop.json_values), prop.check_trial),
        "config": (
            st.tuples(st.sampled_from(config_paths), prop.json_values),
            lambda path, value: prop.check_config(demo, path, value),
        ),
        "config, hostile names and text": (
            st.tuples(st.sampled_from(prop.TEXT_PLACES), prop.hostile_texts),
            prop.check_config_text,
        ),
        "config, hostile numbers": (
            st.tuples(st.sampled_from(prop.NUMBER_PLACES), prop.hostile_numbers),
            prop.check_config_number,
        ),
        "config YAML files (deep/alias/dup)": (
            st.tuples(prop.yaml_cases),
            prop.check_config_yaml,
        ),
        "non-regular files, every reader": (
            st.tuples(
                st.sampled_from(prop.FILE_KINDS),
                st.sampled_from(sorted(prop.FILE_READERS)),
                prop.file_names,
            ),
            prop.check_file_kind,
        ),
        "verdict JSON, hostile strings": (
            st.tuples(st.integers(0, 20), prop.hostile_texts),
            prop.check_verdict_writable,
        ),
        "CSV cells, hostile text": (
            st.tuples(st.lists(prop.csv_texts, min_size=1, max_size=4)),
            prop.check_csv_text,
        ),
        "JSON numbers (verdicts, Harbor files)": (
            st.tuples(st.sampled_from(prop.NUMBER_DOCS), st.integers(0, 500), prop.huge_numbers),
            prop.check_json_number,
        ),
        "outputs equal to inputs": (
            st.one_of(
                st.tuples(
                    st.just("input"),
                    st.sampled_from(sorted(write_commands)),
                    st.integers(0, 10),
                    st.integers(0, 100),
                    st.sampled_from(prop.ALIASES),
                ),
                st.tuples(
                    st.just("outputs"),
                    st.sampled_from(sorted(c for c, v in write_commands.items() if len(v[1]) > 1)),
                    st.integers(0, 10),
                    st.integers(0, 10),
                    st.sampled_from(["same path", "dotted path", "through a linked folder"]),
                ),
            ),
            lambda which, *case: (
                prop.check_output_is_input(*case)
                if which == "input"
                else prop.check_two_outputs_one_path(*case)
            ),
        ),
        "special files as outputs": (
            st.tuples(
                st.sampled_from(sorted(write_commands)),
                st.integers(0, 10),
                st.sampled_from(prop.SPECIAL_KINDS),
                prop.output_names,
            ),
            prop.check_special_output,
        ),
        "interruption between outputs": (
            st.tuples(
                st.sampled_from(sorted(write_commands)),
                st.sampled_from(["stage", "rename"]),
                st.integers(0, 10),
                st.sampled_from(prop.STOP_SIGNALS),
                prop.output_names,
                st.binary(max_size=64),
            ),
            prop.check_interrupted_writes,
        ),
        "hostile environments": (
            st.tuples(prop.hostile_environments),
            prop.check_hostile_environment,
        ),
    }
    total_crashes = total_hangs = total_silent = total_lost = total_cases = 0
    began = time.perf_counter()
    print(
        f"{'reader':36} {'cases':>7} {'crashes':>8} {'hangs':>6} {'silent':>7} {'lost':>5} "
        f"{'slowest':>8}  outcomes"
    )
    for name, (strategy, check) in suites.items():
        if only not in name:
            continue
        tally = run(name, strategy, check, examples)
        crashes, silent = tally.pop("CRASH", 0), tally.pop("SILENT ACCEPTANCE", 0)
        hangs, lost = tally.pop("HANG", 0), tally.pop("LOST INPUT", 0)
        seconds, slowest = tally.pop("seconds"), tally.pop("slowest")
        cases = sum(tally.values()) + crashes + silent + hangs + lost
        total_crashes += crashes
        total_hangs += hangs
        total_silent += silent
        total_lost += lost
        total_cases += cases
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))
        print(
            f"{name:36} {cases:7d} {crashes:8d} {hangs:6d} {silent:7d} {lost:5d} {slowest:7.2f}s"
            f"  {outcomes} ({seconds} s)",
            flush=True,
        )
    peak = int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) / 1024
    print(
        f"{total_cases} cases: total crashes {total_crashes}, hangs {total_hangs} (limit "
        f"{CASE_LIMIT_S} s a case), silent acceptances {total_silent}, lost inputs "
        f"{total_lost}; {time.perf_counter() - began:.0f} s in all, {peak:.0f} MiB peak"
    )
    sys.exit(1 if total_crashes or total_silent or total_hangs or total_lost else 0)


if __name__ == "__main__":
    main()
