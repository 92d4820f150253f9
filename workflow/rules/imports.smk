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
        shell_line(
            "import-model",
            "catalog",
            "verified",
            "results",
            "model",
            "display_name",
            "pinned_condition",
            "source_condition",
            "results_columns=params.columns",
            "output=output",
        )


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
        shell_line(
            "compare-models",
            "imports=params.imports",
            "verified=params.verified",
            "strict_budget=params.strict",
            "published_source,published_task_rows,published_passes,published_over_budget=params.published",
            "strict_published",
            "summary",
            "leaderboard",
        )


rule imports:
    """Target: every selected model imported and the comparison summary."""
    input:
        stage_targets()["imports"],
    localrule: True
