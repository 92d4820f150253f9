# Stage 7 (opt-in, never part of `all`): `snakemake execute` runs the plans' trials, one job per
# plan item, task and attempt, imports them as local runs and renders the report with them.


rule run_trial:
    """One trial: the plan's export, check and harbor run. The receipt is the only output;
    the Harbor job folder is left to Harbor, which resumes it on a rerun."""
    input:
        plan=f"{REV}/plans/{{selection}}/{{label}}.json",
    output:
        trial_receipt("{selection}", "{label}", "{task}", "{attempt}"),
    log:
        f"{LOGS}/run_trial/{{selection}}/{{label}}/{{task}}/attempt-{{attempt}}.log",
    wildcard_constraints:
        attempt=r"[1-9][0-9]*",
    conda:
        AFBENCH_ENV
    resources:
        **provider_resources(),
        runtime=TRIAL_RUNTIME_MIN,
        mem_mb=EXECUTE["mem_mb"],
        cpus_per_task=EXECUTE["cpus"],
    params:
        task=lambda w: option("task", w.task),
        attempt=lambda w: option("attempt", w.attempt),
        env=options("env", [f"{k}={v}" for k, v in EXECUTE["env"].items()]),
        allow=setting("allow-model-agent", "execute/allow_model_agents"),
    shell:
        "afbench job run-trial --plan={input.plan:q} {params.task} {params.attempt} "
        "{params.env} {params.allow} --output={output:q} 2> {log:q}"


rule import_executed:
    """The executed trials of one selection as a local run (one result per configuration)."""
    input:
        selection=lambda w: selection(w.selection),
        receipts=lambda w: executed_receipts(w.selection),
    output:
        **{f.split(".")[0]: f"{run_dir('executed-{selection}')}/{f}" for f in RUN_FILES},
    log:
        f"{LOGS}/import_executed/{{selection}}.log",
    conda:
        AFBENCH_ENV
    params:
        name=lambda w: option("name", f"executed-{w.selection}"),
        receipts=lambda w, input: options("receipt", input.receipts),
    shell:
        "afbench job import-executed --selection={input.selection:q} {params.name} "
        "{params.receipts} --summary={output.summary:q} --outcomes={output.outcomes:q} "
        "--attempts={output.attempts:q} 2> {log:q}"


# the figures show the models' numbers only: the executed report embeds the report's own
use rule render_report as render_executed_report with:
    input:
        **report_inputs([*config["runs"], *(f"executed-{s}" for s in EXECUTED_SELECTIONS)]),
        figures=rules.render_figures.output.figures,
    output:
        html=f"{REPORT}/executed/index.html",
        analysis=f"{REPORT}/executed/analysis.json",
    log:
        f"{LOGS}/render_executed_report.log",


rule execute:
    """Target (opt-in): every configured trial run, imported, and the report with them."""
    input:
        guard=execute_guard,
        report=rules.render_executed_report.output,
