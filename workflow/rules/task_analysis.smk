# Beyond the leaderboard: why the failed tasks failed (afbench.task_analysis.anatomy) and which tasks measure
# anything (afbench.task_analysis.items), from the imports; the report shows both.


rule analyse_failures:
    """Every official model's failed tasks, one class each (near miss, partial, none, budget
    or time stop, infrastructure, over budget), by the stated precedence."""
    input:
        imports=[model_import(m) for m in MODELS],
    output:
        OFFICIAL_ANATOMY,
    log:
        f"{LOGS}/analyse_failures.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        imports=lambda w, input: options("import", input.imports),
        near_miss_share=setting("near-miss-share", "anatomy/near_miss_share"),
    shell:
        shell_line(
            "analyse-failures",
            "imports=params.imports",
            "near_miss_share",
            "output=output",
        )


rule analyse_run_failures:
    """A local run's tasks not accepted, one class each, with advisory infrastructure classes
    from Harbor's exception types (never a verdict)."""
    input:
        summary=f"{run_dir('{name}')}/summary.json",
        outcomes=f"{run_dir('{name}')}/outcomes.csv",
    output:
        run_anatomy("{name}"),
    log:
        f"{LOGS}/analyse_run_failures/{{name}}.log",
    wildcard_constraints:
        name="|".join(
            re.escape(n)
            for n in [*config["runs"], *(f"executed-{s}" for s in EXECUTED_SELECTIONS)]
        )
        or "^$",
    localrule: True
    conda:
        AFBENCH_ENV
    shell:
        shell_line(
            "analyse-run-failures",
            "summary",
            "outcomes",
            "output=output",
        )


rule analyse_tasks:
    """The task table: per task its solves, discrimination and a Rasch difficulty (withheld
    unless the answers beat their shuffles), the audit lists, and the derived discriminative
    subset when task_table.selection names it."""
    input:
        catalog=rules.export_catalog.output,
        imports=[model_import(m) for m in MODELS],
    output:
        table=TASK_TABLE,
        selection=[selection(DERIVED_SELECTION)] if DERIVED_SELECTION else [],
    log:
        f"{LOGS}/analyse_tasks.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        imports=lambda w, input: options("import", input.imports),
        shuffles=setting("shuffles", "task_table/shuffles"),
        seed=setting("seed", "task_table/seed"),
        alpha=setting("alpha", "task_table/alpha"),
        min_discrimination=setting("min-discrimination", "task_table/min_discrimination"),
        selection=lambda w, output: (
            f"{option('selection-name', DERIVED_SELECTION)} "
            f"{option('selection', output.selection[0])}"
            if DERIVED_SELECTION
            else ""
        ),
    shell:
        shell_line(
            "analyse-tasks",
            "catalog",
            "imports=params.imports",
            "shuffles",
            "seed",
            "alpha",
            "min_discrimination",
            "output=output.table",
            "selection_name,selection=params.selection",
        )
