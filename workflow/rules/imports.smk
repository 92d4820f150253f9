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
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        model=lambda w: option("model", w.model),
        display_name=setting("display-name", "models/{model}/display_name"),
        pinned_condition=setting("pinned-condition", "models/{model}/source_condition"),
        source_condition=setting("source-condition", "import/source_condition"),
        columns=columns("column", "results"),
    shell:
        "afbench job import-model --catalog={input.catalog:q} --verified={input.verified:q} "
        "--results={input.results:q} {params.model} {params.display_name} "
        "{params.pinned_condition} {params.source_condition} {params.columns} "
        "--output={output:q} 2> {log:q}"


rule compare_models:
    input:
        imports=[model_import(m) for m in MODELS],
        verified=[verified(m) for m in MODELS],
    output:
        summary=f"{IMPORTS}/summary.json",
        leaderboard=f"{IMPORTS}/leaderboard.csv",
    log:
        f"{LOGS}/compare_models.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        imports=lambda w, input: options("import", input.imports),
        verified=lambda w, input: options("verified", input.verified),
        strict=setting("strict-budget", "import/strict_budget"),
        published=published_flags(),
        strict_published=setting("strict-published", "import/strict_published"),
    shell:
        "afbench job compare-models {params.imports} {params.verified} {params.strict} "
        "{params.published} {params.strict_published} --summary={output.summary:q} "
        "--leaderboard={output.leaderboard:q} 2> {log:q}"


rule imports:
    """Target: every selected model imported and the comparison summary."""
    input:
        stage_targets()["imports"],
    localrule: True
