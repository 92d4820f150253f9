# Stage 3: Harbor 0.22.0 run plans (argument vectors; never executed).


rule plan:
    input:
        selection=lambda w: selection_path(w.selection),
        checkout=demo_checkout(),
    output:
        f"{REV}/plans/{{selection}}/{{label}}.json",
    params:
        afbench=AFBENCH,
        cfg=plan_slice,
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/plan/{{selection}}/{{label}}.log",
    shell:
        "{params.afbench} plan --config-json {params.cfg:q} 2> {log}"


rule plans:
    """Target: every configured plan."""
    input:
        stage_targets()["plans"],
