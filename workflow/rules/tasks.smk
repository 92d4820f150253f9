# Stage 2: the source-free task catalog and the named selections.


rule export_catalog:
    input:
        manifest=release_file("manifest"),
        sources=release_file("sources"),
        receipts=[verified("manifest"), verified("sources")],
    output:
        CATALOG,
    log:
        f"{LOGS}/export_catalog.log",
    conda:
        AFBENCH_ENV
    params:
        receipts=lambda w, input: flags("receipt", input.receipts),
        columns=f"{column_flags('manifest')} {column_flags('sources')}",
        expected_counts=expected_counts(),
    shell:
        "afbench tasks --manifest {input.manifest:q} --sources {input.sources:q} "
        "{params.receipts} {params.columns} "
        "--expected-counts {params.expected_counts} --output {output:q} 2> {log:q}"


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
        name=lambda w: w.name,
        criteria=lambda w: selection_flags(w.name),
    shell:
        "afbench tasks --catalog {input:q} --name {params.name:q} {params.criteria} "
        "--output {output:q} 2> {log:q}"


rule tasks:
    """Target: the catalog and every configured selection."""
    input:
        stage_targets()["tasks"],
