# The results store (afbench.store): this revision's tables as Parquet in one dataset shared by
# every revision, partitioned by revision; `afbench query` runs SQL over it.


rule store_results:
    """Every table of this revision's results, written into its own partitions only: another
    revision's files are never touched."""
    input:
        artifacts=all_artifacts(),
        manifest=ARTIFACT_MANIFEST,
    output:
        STORE_FILES,
    log:
        STORE_LOG,
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        revision=setting("revision", "release/revision"),
        outputs=lambda w, output: options("output", output),
    shell:
        "afbench job store-results --manifest={input.manifest:q} {params.revision} "
        "{params.outputs} 2> {log:q}"


rule store:
    """Target: this revision's tables in the results store."""
    input:
        STORE_FILES,
    localrule: True
