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
    conda:
        AFBENCH_ENV
    params:
        verified=lambda w, input: options("verified", input.verified),
        manifest_columns=columns("manifest-column", "manifest"),
        sources_columns=columns("sources-column", "sources"),
        expected_counts=option(
            "expected-counts",
            ",".join(
                str(lookup(dpath=f"release/expected_counts/{key}", within=config))
                for key in ("tasks", "sources", "obligations")
            ),
        ),
    shell:
        "afbench job export-catalog --manifest={input.manifest:q} --sources={input.sources:q} "
        "{params.verified} {params.manifest_columns} {params.sources_columns} "
        "{params.expected_counts} --output={output:q} 2> {log:q}"


rule select_tasks:
    input:
        rules.export_catalog.output,
    output:
        selection("{name}"),
    log:
        f"{LOGS}/select_tasks/{{name}}.log",
    wildcard_constraints:
        name="|".join(re.escape(n) for n in config["selections"]) or "^$",
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
    shell:
        "afbench job select-tasks --catalog={input:q} {params.name} {params.tasks} "
        "{params.sources} {params.limit} {params.stratified} --output={output:q} 2> {log:q}"


rule tasks:
    """Target: the catalog and every configured selection."""
    input:
        stage_targets()["tasks"],
