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
        shell_line(
            "write-plan",
            "catalog",
            "selection",
            "agent",
            "model",
            "repository_dir=params.repository",
            "tasks_dir",
            "jobs_dir",
            "environment_type",
            "harbor",
            "output=output",
        )


rule plans:
    """Target: every configured plan."""
    input:
        stage_targets()["plans"],
    localrule: True
