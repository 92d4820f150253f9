# Stage 3: Harbor 0.22.0 run plans (argument vectors; never executed).


checkpoint write_plan:
    input:
        catalog=rules.export_catalog.output,
        selection=lambda w: selection(w.selection),
        checkout=DEMO_CHECKOUT,
    output:
        f"{REV}/plans/{{selection}}/{{label}}.json",
    log:
        f"{LOGS}/write_plan/{{selection}}/{{label}}.log",
    conda:
        AFBENCH_ENV
    params:
        agent=lambda w: option("agent", plan_item(w)["agent"]),
        model=lambda w: options("model", [m for m in [plan_item(w).get("model")] if m]),
        repository=lambda w, input: option(
            "repository-dir",
            absolute(input.checkout if DEMO else config["plans"]["repository_dir"]),
        ),
        tasks_dir=setting("tasks-dir", "plans/tasks_dir"),
        jobs_dir=option("jobs-dir", absolute(f"{REV}/{config['plans']['jobs_dir']}")),
        environment_type=setting("environment-type", "plans/environment_type"),
        harbor=setting("harbor", "plans/harbor"),
    shell:
        "afbench job write-plan --catalog={input.catalog:q} --selection={input.selection:q} "
        "{params.agent} {params.model} {params.repository} {params.tasks_dir} "
        "{params.jobs_dir} {params.environment_type} {params.harbor} --output={output:q} "
        "2> {log:q}"


rule plans:
    """Target: every configured plan."""
    input:
        stage_targets()["plans"],
