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
        agent=lambda w: plan_item(w)["agent"],
        model=lambda w: flags("model", [m for m in [plan_item(w).get("model")] if m]),
        repository=lambda w, input: absolute(
            input.checkout if DEMO else config["plans"]["repository_dir"]
        ),
        tasks_dir=config["plans"]["tasks_dir"],
        jobs_dir=absolute(f"{REV}/{config['plans']['jobs_dir']}"),
        environment_type=config["plans"]["environment_type"],
        harbor=config["plans"]["harbor"],
    shell:
        "afbench plan --catalog {input.catalog:q} --selection {input.selection:q} "
        "--agent {params.agent:q} {params.model} --repository-dir {params.repository:q} "
        "--tasks-dir {params.tasks_dir:q} --jobs-dir {params.jobs_dir:q} "
        "--environment-type {params.environment_type:q} --harbor {params.harbor:q} "
        "--output {output:q} 2> {log:q}"


rule plans:
    """Target: every configured plan."""
    input:
        stage_targets()["plans"],
