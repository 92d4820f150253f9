# Stage 2: the source-free task catalog and the named selections.


rule export_catalog:
    input:
        manifest=release_file("manifest"),
        sources=release_file("sources"),
        verified=[verified("manifest"), verified("sources")],
    output:
        CATALOG,
    log:
        f"{LOGS}/export_catalog.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        verified=lambda w, input: options("verified", input.verified),
        manifest_columns=columns("manifest-column", "manifest"),
        sources_columns=columns("sources-column", "sources"),
        expected_counts=option(
            "expected-counts",
            ",".join(
                str(config_lookup(f"release/expected_counts/{key}"))
                for key in ("tasks", "sources", "obligations")
            ),
        ),
    shell:
        shell_line(
            "export-catalog",
            "manifest",
            "sources",
            "verified=params.verified",
            "manifest_columns",
            "sources_columns",
            "expected_counts",
            "output=output",
        )


rule select_tasks:
    input:
        catalog=rules.export_catalog.output,
        # a frozen selection records its members' digests, held to the previous release's
        digests=lambda w: [TASK_DIGESTS] if frozen(w.name) else [],
        earlier=lambda w: earlier_selection(w.name),
    output:
        selection("{name}"),
    log:
        f"{LOGS}/select_tasks/{{name}}.log",
    wildcard_constraints:
        name="|".join(re.escape(n) for n in config["selections"]) or "^$",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        name=lambda w: option("name", w.name),
        tasks=lambda w: options("task", config["selections"][w.name]["tasks"]),
        sources=lambda w: options("source", config["selections"][w.name]["sources"]),
        limit=lambda w: options(
            "limit", [n for n in [config["selections"][w.name]["limit"]] if n is not None]
        ),
        stratified=lambda w: stratified_flags(config["selections"][w.name]["stratified"]),
        frozen=lambda w: option("frozen", frozen(w.name)),
        digests=lambda w, input: options("digests", input.digests),
        earlier=lambda w, input: options("earlier", input.earlier),
    shell:
        shell_line(
            "select-tasks",
            "catalog",
            "name",
            "task=params.tasks",
            "source=params.sources",
            "limit",
            "stratified_tasks,stratified_seed=params.stratified",
            "frozen",
            "digests=params.digests",
            "earlier=params.earlier",
            "output=output",
        )


rule tasks:
    """Target: the catalog and every configured selection."""
    input:
        stage_targets()["tasks"],
    localrule: True
