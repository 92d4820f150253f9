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
        name=lambda w: w.name,
        kind=lambda w: config["runs"][w.name]["kind"],
        budget_usd=lambda w: config["runs"][w.name]["budget_usd"],
        paths=lambda w, input: flags("path", input.paths),
    shell:
        "afbench import-run --selection {input.selection:q} --name {params.name:q} "
        "--kind {params.kind} {params.paths} --budget-usd {params.budget_usd} "
        "--summary {output.summary:q} --outcomes {output.outcomes:q} "
        "--attempts {output.attempts:q} 2> {log:q}"


rule runs:
    """Target: every configured local run imported."""
    input:
        stage_targets()["runs"],
