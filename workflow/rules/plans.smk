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
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        **plan_params(),
    shell:
        "afbench job write-plan --catalog={input.catalog:q} --selection={input.selection:q} "
        "{params.agent} {params.model} {params.repository} {params.tasks_dir} "
        "{params.jobs_dir} {params.environment_type} {params.harbor} --output={output:q} "
        "2> {log:q}"


rule plans:
    """Target: every configured plan."""
    input:
        stage_targets()["plans"],
    localrule: True
