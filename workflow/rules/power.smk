# The run planner (opt-in, never part of `all`): the tasks a paired comparison needs to detect
# a difference, or the difference a number of tasks detects (`power:` in config).


rule plan_power:
    input:
        imports=lambda w: power_imports(),
    output:
        POWER_PLAN,
    log:
        f"{LOGS}/plan_power.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        difference=setting("difference", "power/difference"),
        tasks=setting("tasks", "power/tasks"),
        alpha=setting("alpha", "power/alpha"),
        power=setting("power", "power/power"),
        configurations=setting("configurations", "power/configurations"),
        baseline_rate=setting("baseline-rate", "power/baseline_rate"),
        imports=lambda w, input: options("import", input.imports),
        sequential=setting("sequential-tasks", "power/sequential_tasks"),
        batch_tasks=setting("batch-tasks", "power/batch_tasks"),
        usd_per_task=setting("usd-per-task", "power/usd_per_task"),
    shell:
        shell_line(
            "plan-power",
            "difference",
            "tasks",
            "alpha",
            "power",
            "configurations",
            "baseline_rate",
            "imports=params.imports",
            "sequential_tasks=params.sequential",
            "batch_tasks",
            "usd_per_task",
            "output=output",
        )


rule power:
    """Target (not in `all`): the run plan; its one line is printed and in its JSON."""
    input:
        POWER_PLAN,
    localrule: True
