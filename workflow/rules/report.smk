# Stage 6: analysis and the HTML report, then the artifact manifest.


rule render_figures:
    """The figures: drawn from the models' numbers alone, so a change the figures do not
    show (a local run, a provenance setting) does not redraw them."""
    input:
        **report_inputs([]),
        anatomy=OFFICIAL_ANATOMY,
    output:
        figures=[
            report(f, caption="../report/figure.rst", category="Figures") for f in report_figures()
        ],
    log:
        f"{LOGS}/render_figures.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        imports=lambda w, input: options("import", input.imports),
        figures=lambda w, output: options("figure", output.figures),
        confidence=setting("confidence", "report/confidence"),
        anatomy=lambda w, input: option("anatomy", input.anatomy),
    shell:
        shell_line(
            "render-figures",
            "summary",
            "imports=params.imports",
            "catalog",
            "receipt",
            "confidence",
            "figure=params.figures",
            "anatomy=params.anatomy",
        )


rule render_report:
    """The analysis and the self-contained HTML report, which embeds the figures."""
    input:
        **report_inputs(config["runs"]),
        **beyond_leaderboard_inputs(config["runs"]),
        **history_inputs(config["runs"]),
        figures=rules.render_figures.output.figures,
        comparisons=cross_revision_files(),
    output:
        html=report(f"{REPORT}/index.html", caption="../report/index.rst", category="Report"),
        analysis=f"{REPORT}/analysis.json",
    log:
        f"{LOGS}/render_report.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        imports=lambda w, input: options("import", input.imports),
        runs=lambda w, input: options("run", input.runs),
        ledger=lambda w, input: options("ledger", input.ledger),
        sequential=lambda w, input: options("sequential-run", input.sequential),
        figures=lambda w, input: options("figure", input.figures),
        confidence=setting("confidence", "report/confidence"),
        settings_digest=option("settings-digest", report_settings_digest()),
        beyond=lambda w, input: " ".join(
            [
                option("anatomy", input.anatomy),
                options("run-anatomy", input.run_anatomy),
                options("task-table", input.task_table),
                options("comparisons", input.comparisons),
                options("pass-at-k", input.pass_at_k),
            ]
        ),
        history=setting("history", "report/history"),
        history_files=lambda w, input: " ".join(
            [
                options("history-partition", input.history_partitions),
                options("history-comparable", input.history_comparable),
                options("history-outcomes", input.history_outcomes),
            ]
        ),
    shell:
        shell_line(
            "render-report",
            "summary",
            "imports=params.imports",
            "catalog",
            "receipt",
            "run=params.runs",
            "confidence",
            "settings_digest",
            "figure=params.figures",
            "html",
            "analysis",
            "ledger=params.ledger",
            "sequential_run=params.sequential",
            "anatomy,run_anatomy,task_table,comparisons=params.beyond",
            "history",
            "history_partition,history_comparable,history_outcomes=params.history_files",
        )


rule write_artifact_manifest:
    """Every artifact the config asked for, with its SHA-256, the digest of every setting an
    artifact depends on (transport settings are not among them) and the tool versions."""
    input:
        all_artifacts(),
    output:
        ARTIFACT_MANIFEST,
    log:
        f"{LOGS}/write_artifact_manifest.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        root=lambda w, output: option("root", Path(output[0]).parent),
        revision=setting("revision", "release/revision"),
        config_digest=option("config-digest", config_digest(config)),
    shell:
        shell_line(
            "write-artifact-manifest",
            "root=params.root",
            "revision",
            "config_digest",
            "output=output",
            "files=input",
        )


rule report:
    """Target: the report and the artifact manifest."""
    input:
        stage_targets()["report"],
        ARTIFACT_MANIFEST,
    localrule: True
