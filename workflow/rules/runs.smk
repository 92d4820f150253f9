# Stage 5: local runs (Harbor job directories or verdict folders) from the `runs:` config.


rule import_run:
    input:
        selection=lambda w: selection(config["runs"][w.name]["selection"]),
        paths=lambda w: config["runs"][w.name]["paths"],
    output:
        **{f.split(".")[0]: f"{run_dir('{name}')}/{f}" for f in RUN_FILES},
    log:
        f"{LOGS}/import_run/{{name}}.log",
    wildcard_constraints:
        name="|".join(re.escape(n) for n in config["runs"]) or "^$",
    conda:
        AFBENCH_ENV
    params:
        name=lambda w: option("name", w.name),
        kind=setting("kind", "runs/{name}/kind"),
        budget_usd=setting("budget-usd", "runs/{name}/budget_usd"),
        paths=lambda w, input: options("path", input.paths),
    shell:
        "afbench job import-run --selection={input.selection:q} {params.name} {params.kind} "
        "{params.paths} {params.budget_usd} --summary={output.summary:q} "
        "--outcomes={output.outcomes:q} --attempts={output.attempts:q} 2> {log:q}"


rule runs:
    """Target: every configured local run imported."""
    input:
        stage_targets()["runs"],
