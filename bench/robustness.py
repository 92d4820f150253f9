"""The robustness properties of tests/test_robustness.py, run far longer. Prints how many cases
each reader was given and how they ended: the same as the clean file, one of our own errors,
a valid change; and the two that must stay zero: crashes and silent acceptances.

Usage: python bench/robustness.py [EXAMPLES_PER_PROPERTY]   (default 5000)"""

from __future__ import annotations

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


def run(name: str, strategy, check, examples: int) -> Counter:
    tally: Counter = Counter()

    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(strategy)
    def property_(args):
        try:
            tally[check(*args)] += 1
        except AssertionError:
            tally["SILENT ACCEPTANCE"] += 1
            raise
        except Exception:
            tally["CRASH"] += 1
            raise

    started = time.perf_counter()
    try:
        property_()
    except Exception as exc:  # recorded in the tally; show the shrunk example
        print(f"{name}: FAILED: {type(exc).__name__}: {exc}"[:500])
    tally["seconds"] = round(time.perf_counter() - started, 1)
    return tally


def main() -> None:
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
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
    harmless = st.tuples(
        st.integers(0, 2),
        st.integers(0, 100),
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
    }
    total_crashes = total_silent = 0
    print(f"{'reader':32} {'cases':>7} {'crashes':>8} {'silent':>7}  outcomes")
    for name, (strategy, check) in suites.items():
        tally = run(name, strategy, check, examples)
        crashes, silent = tally.pop("CRASH", 0), tally.pop("SILENT ACCEPTANCE", 0)
        seconds = tally.pop("seconds")
        cases = sum(tally.values()) + crashes + silent
        total_crashes += crashes
        total_silent += silent
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))
        print(f"{name:32} {cases:7d} {crashes:8d} {silent:7d}  {outcomes} ({seconds} s)")
    print(f"total crashes {total_crashes}, silent acceptances {total_silent}")
    sys.exit(1 if total_crashes or total_silent else 0)


if __name__ == "__main__":
    main()
