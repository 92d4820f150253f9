# Stage 4: the official per-model results, one job per model, then the comparison summary.


rule import_model:
    input:
        lambda w: model_release_paths([w.model]),
        [release_path(spec["path"]) for spec in manifest_files().values()],
    output:
        f"{IMPORTS}/{{model}}.json",
    wildcard_constraints:
        model="|".join(re.escape(m) for m in MODELS) or "^$",
    params:
        afbench=AFBENCH,
        cfg=lambda w: import_slice(
            [w.model], **{"import": dict(config["import"], models=[w.model], strict_budget=False)}
        ),
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/import/{{model}}.log",
    shell:
        "{params.afbench} import-results --config-json {params.cfg:q} --models-only 2> {log}"


rule import_summary:
    input:
        [f"{IMPORTS}/{m}.json" for m in MODELS],
    output:
        summary=f"{IMPORTS}/summary.json",
        leaderboard=f"{IMPORTS}/leaderboard.csv",
    params:
        afbench=AFBENCH,
        cfg=import_slice(MODELS, **{"import": dict(config["import"], models=MODELS)}),
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/import/summary.log",
    shell:
        "{params.afbench} import-results --config-json {params.cfg:q} --summary-only 2> {log}"


rule imports:
    """Target: every selected model imported and the comparison summary."""
    input:
        stage_targets()["imports"],
