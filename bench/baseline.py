"""The single-process baseline: all of the pipeline's work in one Python process through the
package, no Snakemake. Usage: python bench/baseline.py CONFIG [CONFIG ...]"""

from __future__ import annotations

import sys
import time
from argparse import Namespace
from pathlib import Path


def main(paths: list[str]) -> None:
    start = time.perf_counter()
    from afbench import commands

    common = {"config": paths, "config_json": None}
    commands.cmd_fetch(Namespace(**common, only=None))
    commands.cmd_tasks(
        Namespace(
            **common,
            catalog_only=False,
            selection=None,
            name=None,
            task=None,
            book=None,
            limit=None,
        )
    )
    if commands.load_config([Path(p) for p in paths])["plans"]["items"]:
        commands.cmd_plan(
            Namespace(**common, selection=None, agent=None, model=None, repository_dir=None)
        )
    commands.cmd_import_results(
        Namespace(
            **common,
            model=None,
            all_models=False,
            source_condition=None,
            budget_usd=None,
            strict_budget=None,
            models_only=False,
            summary_only=False,
        )
    )
    commands.cmd_report(Namespace(**common))
    commands.cmd_audit(Namespace(**common, file=None))
    print(f"{time.perf_counter() - start:.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
