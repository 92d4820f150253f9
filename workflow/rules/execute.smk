# Stage 7 (opt-in, never part of `all`): `snakemake execute` runs the plans' trials, one job per
# plan item, task and attempt, imports them as local runs and renders the report with them.


rule run_trial:
    """One trial: the plan's export, check and harbor run, under the trial's lock and within
    the cost ceiling (the live ledger). The receipt is the only output; the Harbor job folder
    is left to Harbor, which resumes it on a rerun."""
    input:
        plan=f"{REV}/plans/{{selection}}/{{label}}.json",
        catalog=rules.export_catalog.output,
        selection=lambda w: selection(w.selection),
        checkout=DEMO_CHECKOUT,
        earlier=earlier_round_receipts,
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
        **plan_params(),
        **status_params(),
        task=lambda w: option("task", w.task),
        attempt=lambda w: option("attempt", w.attempt),
        env=options("env", [f"{k}={v}" for k, v in EXECUTE["env"].items()]),
        pass_env=options("pass-env", EXECUTE["pass_env"]),
        allow=setting("allow-model-agent", "execute/allow_model_agents"),
        ceiling=setting("max-cost-usd", "execute/max_cost_usd"),
        cap=setting("trial-cap-usd", "execute/trial_cap_usd"),
        rerun=setting("rerun-interrupted", "execute/rerun_interrupted"),
        meter=setting("meter-interval-s", "execute/meter_interval_s"),
        earlier=lambda w, input: options("earlier-receipt", input.earlier),
        round=lambda w: option("partial-round", partial_round(w)),
        ledger=option("ledger", LIVE_LEDGER),
    shell:
        shell_line(
            "run-trial",
            "plan",
            "catalog",
            "selection",
            "agent",
            "model",
            "repository_dir=params.repository",
            "tasks_dir",
            "jobs_dir",
            "environment_type",
            "harbor",
            "task",
            "attempt",
            "env",
            "pass_env",
            "allow_model_agent=params.allow",
            "max_cost_usd=params.ceiling",
            "trial_cap_usd=params.cap",
            "rerun_interrupted=params.rerun",
            "meter_interval_s=params.meter",
            "earlier_receipt=params.earlier",
            "partial_round=params.round",
            "ledger=params.ledger",
            "status_page,status_receipts,status_plan,status_steps=params.status",
            "output=output",
        )


checkpoint decide_step:
    """The sealed comparison after `step` steps (0: before any trial): the sequential test on
    every trial run so far, and whether the run stops (a decision, futility, the horizon, the
    ceiling) or which trials run next (the errored trials' new attempts beside the next
    batch, within the attempts the plan sealed). A checkpoint: the next step's trials are
    known only once it is written. The sealed plan is read, not declared
    (sealed_comparison)."""
    input:
        harbor_plans=comparison_plans,
        receipts=lambda w: comparison_receipts_before(int(w.step)),
    output:
        sequential_step("{step}"),
    log:
        f"{LOGS}/decide_step/step-{{step}}.log",
    wildcard_constraints:
        step=r"0|[1-9][0-9]*",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        **decide_params(),
        step=lambda w: option("step", w.step),
    shell:
        shell_line(
            "decide-step",
            "analysis_plan=params.analysis_plan",
            "plan_sha256=params.sealed",
            "harbor_plan=params.harbor_plans",
            "receipt=params.receipts",
            "step",
            "ledger=params.ledger",
            "max_cost_usd=params.ceiling",
            "trial_cap_usd=params.cap",
            "output=output",
        )


rule decide_comparison:
    """The comparison's decision record: its last step, derived again from every trial it ran
    (the same bytes)."""
    input:
        harbor_plans=comparison_plans,
        receipts=lambda w: comparison_receipts(),
        last=last_step,
    output:
        SEQUENTIAL_DECISION,
    log:
        f"{LOGS}/decide_comparison.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        **decide_params(),
        step=lambda w: option("step", comparison_run()[1]),
    shell:
        shell_line(
            "decide-comparison",
            "analysis_plan=params.analysis_plan",
            "plan_sha256=params.sealed",
            "harbor_plan=params.harbor_plans",
            "receipt=params.receipts",
            "step",
            "ledger=params.ledger",
            "max_cost_usd=params.ceiling",
            "trial_cap_usd=params.cap",
            "output=output",
        )


rule import_executed:
    """The executed trials of one selection as a local run (one result per configuration,
    each with its protocol-conformance certificate)."""
    input:
        selection=lambda w: selection(w.selection),
        receipts=lambda w: executed_receipts(w.selection),
        reused=lambda w: reused_receipts(w.selection),
        checksums=lambda w: task_checksums(w.selection),
    output:
        **{f.split(".")[0]: f"{run_dir('executed-{selection}')}/{f}" for f in RUN_FILES},
    log:
        f"{LOGS}/import_executed/{{selection}}.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        name=lambda w: option("name", f"executed-{w.selection}"),
        receipts=lambda w, input: options("receipt", input.receipts),
        reused=lambda w, input: options("reused-receipt", input.reused),
        plan=lambda w: analysis_plan_flags(w.selection),
        checksums=lambda w, input: options("task-checksums", input.checksums),
    shell:
        shell_line(
            "import-executed",
            "selection",
            "name",
            "receipt=params.receipts",
            "reused_receipt=params.reused",
            "analysis_plan,plan_sha256=params.plan",
            "task_checksums=params.checksums",
            "summary",
            "outcomes",
            "attempts",
        )


rule write_cost_ledger:
    """What the executed trials cost, beside the ceiling: from the live ledger the trial jobs
    kept, once every trial has its receipt (run, reused or refused at the ceiling)."""
    input:
        receipts=all_executed_receipts,
    output:
        COST_LEDGER,
    log:
        f"{LOGS}/write_cost_ledger.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        receipts=lambda w, input: options("receipt", input.receipts),
        ledger=option("ledger", LIVE_LEDGER),
        ceiling=setting("max-cost-usd", "execute/max_cost_usd"),
    shell:
        shell_line(
            "write-cost-ledger",
            "receipt=params.receipts",
            "ledger=params.ledger",
            "max_cost_usd=params.ceiling",
            "output=output",
        )


# the figures show the models' numbers only: the executed report embeds the report's own
use rule render_report as render_executed_report with:
    input:
        **report_inputs(
            [*config["runs"], *(f"executed-{s}" for s in EXECUTED_SELECTIONS)],
            ledger=[COST_LEDGER],
            sequential=[SEQUENTIAL_DECISION] if BATCHED else [],
        ),
        **beyond_leaderboard_inputs(
            [*config["runs"], *(f"executed-{s}" for s in EXECUTED_SELECTIONS)]
        ),
        **history_inputs([*config["runs"], *(f"executed-{s}" for s in EXECUTED_SELECTIONS)]),
        figures=rules.render_figures.output.figures,
        comparisons=cross_revision_files(),
    output:
        html=f"{REPORT}/executed/index.html",
        analysis=f"{REPORT}/executed/analysis.json",
    log:
        f"{LOGS}/render_executed_report.log",
    localrule: True  # a `use rule` does not inherit it


rule execute:
    """Target (opt-in): every configured trial run, imported, its cost ledger, and the report
    with them."""
    input:
        guard=execute_guard,
        report=rules.render_executed_report.output,
        ledger=COST_LEDGER,
    localrule: True


onsuccess:
    tell_cost_ledger()
    tell_decision()
