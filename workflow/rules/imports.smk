# Stage 4: the official per-model results, one job per model, then the comparison.


rule import_model:
    input:
        catalog=rules.export_catalog.output,
        verified=lambda w: verified(w.model),
        results=lambda w: release_file(w.model),
    output:
        model_import("{model}"),
    log:
        f"{LOGS}/import_model/{{model}}.log",
    wildcard_constraints:
        model="|".join(re.escape(m) for m in MODELS) or "^$",
    conda:
        AFBENCH_ENV
    params:
        model=lambda w: w.model,
        display_name=lambda w: config["models"][w.model]["display_name"],
        pinned_condition=lambda w: config["models"][w.model]["source_condition"],
        source_condition=IMPORT["source_condition"],
        budget_usd=IMPORT["budget_usd"],
        columns=column_flags("results", "column"),
    shell:
        "afbench import-model --catalog {input.catalog:q} --receipt {input.verified:q} "
        "--results {input.results:q} --model {params.model:q} "
        "--display-name {params.display_name:q} --pinned-condition {params.pinned_condition} "
        "--source-condition {params.source_condition} --budget-usd {params.budget_usd} "
        "{params.columns} --output {output:q} 2> {log:q}"


rule compare_models:
    input:
        imports=[model_import(m) for m in MODELS],
        verified=[verified(m) for m in MODELS],
    output:
        summary=f"{IMPORTS}/summary.json",
        leaderboard=f"{IMPORTS}/leaderboard.csv",
    log:
        f"{LOGS}/compare_models.log",
    conda:
        AFBENCH_ENV
    params:
        imports=lambda w, input: flags("import", input.imports),
        receipts=lambda w, input: flags("receipt", input.verified),
        strict="--strict-budget" if IMPORT["strict_budget"] else "",
    shell:
        "afbench compare {params.imports} {params.receipts} {params.strict} "
        "--summary {output.summary:q} --leaderboard {output.leaderboard:q} 2> {log:q}"


rule imports:
    """Target: every selected model imported and the comparison summary."""
    input:
        stage_targets()["imports"],
