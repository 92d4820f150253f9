# The sealed analysis plan (opt-in, never part of `all`): what a paired comparison run through
# `snakemake execute` is meant to show and how it stops, written before it spends anything.


rule seal_analysis_plan:
    """The plan of the comparison under `preregister:`, written write-protected: a changed
    config never rewrites it (Snakemake refuses; remove the plan to seal a new one)."""
    input:
        selection=lambda w: preregistered_selection(),
        catalog=rules.export_catalog.output,
    output:
        protected(ANALYSIS_PLAN),
    log:
        f"{LOGS}/seal_analysis_plan.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        a_agent=lambda w: comparison_flag("a", "agent"),
        a_model=lambda w: comparison_flag("a", "model"),
        b_agent=lambda w: comparison_flag("b", "agent"),
        b_model=lambda w: comparison_flag("b", "model"),
        environment_type=setting("environment-type", "plans/environment_type"),
        attempts=setting("attempts", "execute/attempts"),
        alpha=setting("alpha", "preregister/alpha"),
        stopping=setting("stopping", "preregister/stopping"),
        difference=setting("difference", "preregister/difference"),
        discordance=setting("discordance", "preregister/discordance"),
        baseline_rate=setting("baseline-rate", "preregister/baseline_rate"),
        power=setting("power", "preregister/power"),
        batch_tasks=setting("batch-tasks", "preregister/batch_tasks"),
        horizon=setting("horizon", "preregister/horizon"),
        order_seed=setting("order-seed", "preregister/order_seed"),
        futility_power=setting("futility-power", "preregister/futility_power"),
        ceiling=setting("max-cost-usd", "execute/max_cost_usd"),
        cap=setting("trial-cap-usd", "execute/trial_cap_usd"),
    shell:
        shell_line(
            "seal-analysis-plan",
            "selection",
            "catalog",
            "a_agent",
            "a_model",
            "b_agent",
            "b_model",
            "environment_type",
            "attempts",
            "alpha",
            "stopping",
            "difference",
            "discordance",
            "baseline_rate",
            "power",
            "batch_tasks",
            "horizon",
            "order_seed",
            "futility_power",
            "max_cost_usd=params.ceiling",
            "trial_cap_usd=params.cap",
            "output=output",
        )


rule seal_run_plan:
    """The plan of a paid run of one configuration (an execute item whose agent may call a
    model, outside the comparison), written write-protected like the analysis plan."""
    input:
        selection=lambda w: selection(w.selection),
        catalog=rules.export_catalog.output,
    output:
        protected(run_plan_file("{selection}", "{label}")),
    log:
        f"{LOGS}/seal_run_plan/{{selection}}/{{label}}.log",
    wildcard_constraints:
        selection=r"[^/]+",
        label=r"[^/]+",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        agent=lambda w: paid_run_flag(w, "agent"),
        model=lambda w: paid_run_flag(w, "model"),
        environment_type=setting("environment-type", "plans/environment_type"),
        attempts=setting("attempts", "execute/attempts"),
        ceiling=setting("max-cost-usd", "execute/max_cost_usd"),
        cap=setting("trial-cap-usd", "execute/trial_cap_usd"),
    shell:
        shell_line(
            "seal-run-plan",
            "selection",
            "catalog",
            "agent",
            "model",
            "environment_type",
            "attempts",
            "max_cost_usd=params.ceiling",
            "trial_cap_usd=params.cap",
            "output=output",
        )


rule preregister:
    """Target (opt-in): the sealed analysis plan, and each paid run's sealed plan."""
    input:
        lambda w: preregistered(),
    localrule: True
