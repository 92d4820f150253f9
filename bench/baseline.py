"""The single-process baseline: all of the pipeline's work in one Python process, calling the
afbench library's stage functions directly (no Snakemake, no CLI). Artifacts go to OUT.
Usage: python bench/baseline.py OUT CONFIG [CONFIG ...]"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main(out: str, config_paths: list[str]) -> None:
    start = time.perf_counter()
    from afbench.core import config
    from afbench.core.fsutil import write_json
    from afbench.imports import compare, official
    from afbench.plans import plan
    from afbench.release import fetch
    from afbench.release import identity as release
    from afbench.report import analysis, figures
    from afbench.report import page as report
    from afbench.tasks import catalog

    cfg = config.load_config([Path(p) for p in config_paths])
    root = Path(out)
    pins = config.pinned_files(cfg)
    unpinned = [f for f in config.release_files(cfg) if not f.sha256]
    receipt = fetch.fetch_release(cfg["release"], cfg["source"], pins, unpinned, root / "release")
    write_json(root / "receipt.json", receipt)
    entries, identity = release.collect_verified([("receipt", receipt)])

    def verified(key: str):
        return release.read_entry(entries, key, root / "release" / entries[key][0]["path"])

    tasks = catalog.build_catalog(
        verified("manifest"),
        verified("sources"),
        cfg["columns"],
        cfg["release"]["expected_counts"],
        identity,
        release.license_of(identity),
    )
    write_json(root / "catalog.json", tasks)
    selections = {}
    for name, criteria in cfg["selections"].items():
        selections[name] = catalog.select_tasks(
            tasks,
            name,
            criteria["tasks"],
            criteria["sources"],
            criteria["limit"],
            criteria["stratified"],
        )
        write_json(root / f"selection-{name}.json", selections[name])
    settings = cfg["plans"]
    repository = settings["repository_dir"] and str(Path(settings["repository_dir"]).resolve())
    for item in settings["items"]:
        written = plan.build_plan(
            tasks,
            selections[item["selection"]],
            item["agent"],
            item["model"],
            repository,
            settings["tasks_dir"],
            str(root / settings["jobs_dir"]),
            settings["environment_type"],
            settings["harbor"],
        )
        label = plan.plan_label(item["agent"], item["model"])
        write_json(root / f"plan-{item['selection']}-{label}.json", written)
    compact, imports, totals = analysis.compactor(tasks), [], []
    for slug in config.selected_models(cfg):
        spec = cfg["models"][slug]
        model = official.ModelSpec(slug, spec["display_name"], spec["source_condition"])
        imp = official.import_model(
            tasks,
            verified(slug),
            model,
            cfg["columns"]["results"],
            cfg["import"]["source_condition"],
            cfg["release"]["nominal_budget_usd"],
        )
        write_json(root / f"import-{slug}.json", imp)
        imports.append(compact(official.outcomes(imp)))
        totals.append(compare.reduced(imp))
    summary = compare.summarize(
        totals,
        cfg["import"]["strict_budget"],
        config.published_facts(cfg),
        cfg["import"]["strict_published"],
    )
    write_json(root / "summary.json", summary)
    result = analysis.analyse(summary, imports, tasks, [], cfg["report"]["confidence"])
    drawn = figures.make_figures(result)
    provenance = {
        "files": receipt["files"],
        "config_digest": config.config_digest(cfg),
        "versions": {},
    }
    (root / "report.html").write_text(report.render(result, provenance, drawn))
    print(f"{time.perf_counter() - start:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
