# Stage 5: local runs (Harbor job directories or verdict folders) from the `runs:` config.


rule checksum_tasks:
    """The exporter's output for a selection's tasks, as Harbor's task checksums: what an
    imported Harbor run's tasks are certified against."""
    input:
        selection=lambda w: selection(w.selection),
        checkout=DEMO_CHECKOUT,
    output:
        f"{REV}/tasks/checksums/{{selection}}.json",
    log:
        f"{LOGS}/checksum_tasks/{{selection}}.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        repository=lambda w, input: option(
            "repository-dir", absolute(input.checkout if DEMO else CHECKOUT)
        ),
        repository_name=option("repository-name", CHECKOUT),
    shell:
        shell_line(
            "checksum-tasks",
            "selection",
            "repository_dir=params.repository",
            "repository_name",
            "output=output",
        )


rule import_run:
    input:
        selection=lambda w: selection(config["runs"][w.name]["selection"]),
        paths=lambda w: config["runs"][w.name]["paths"],
        checksums=lambda w: task_checksums(config["runs"][w.name]["selection"]),
    output:
        **{f.split(".")[0]: f"{run_dir('{name}')}/{f}" for f in RUN_FILES},
    log:
        f"{LOGS}/import_run/{{name}}.log",
    wildcard_constraints:
        name="|".join(re.escape(n) for n in config["runs"]) or "^$",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        name=lambda w: option("name", w.name),
        kind=setting("kind", "runs/{name}/kind"),
        budget_usd=setting("budget-usd", "runs/{name}/budget_usd"),
        paths=lambda w, input: options("path", input.paths),
        # what the tables record: the folders as the config names them, not a storage
        # plugin's local copy that {input} names
        path_names=lambda w: options("path-name", config["runs"][w.name]["paths"]),
        checksums=lambda w, input: options("task-checksums", input.checksums),
    shell:
        shell_line(
            "import-run",
            "selection",
            "name",
            "kind",
            "path=params.paths",
            "path_name=params.path_names",
            "budget_usd",
            "task_checksums=params.checksums",
            "summary",
            "outcomes",
            "attempts",
        )


rule pass_at_k:
    """pass@k of each configuration of a run (configured or executed), from its attempts:
    the unbiased estimator per task, its interval clustered over the tasks' sources."""
    input:
        summary=f"{run_dir('{name}')}/summary.json",
        attempts=f"{run_dir('{name}')}/attempts.csv",
        catalog=CATALOG,
    output:
        pass_at_k_file("{name}"),
    log:
        f"{LOGS}/pass_at_k/{{name}}.log",
    wildcard_constraints:
        name="|".join(
            re.escape(n)
            for n in [*config["runs"], *(f"executed-{s}" for s in EXECUTED_SELECTIONS)]
        )
        or "^$",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        confidence=setting("confidence", "report/confidence"),
    shell:
        shell_line("pass-at-k", "summary", "attempts", "catalog", "confidence", "output=output")


rule runs:
    """Target: every configured local run imported."""
    input:
        stage_targets()["runs"],
    localrule: True
