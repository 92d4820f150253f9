# The results store (afbench.exports.store): this revision's tables as Parquet in one dataset shared by
# every revision, partitioned by revision; `afbench query` runs SQL over it.


rule store_results:
    """Every table of this revision's results, written into its own partitions only: another
    revision's files are never touched. The trial receipts and the live ledger are read as
    `snakemake execute` left them, never made: the ledger is an input once it exists, so a run
    of execute since the last store makes the store again (it is local: beside the Harbor jobs
    folder, on the file system the trial nodes share)."""
    input:
        artifacts=all_artifacts(),
        manifest=ARTIFACT_MANIFEST,
        ledger=[local(LIVE_LEDGER)] if Path(LIVE_LEDGER).is_file() else [],
    output:
        STORE_FILES,
    log:
        STORE_LOG,
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        revision=setting("revision", "release/revision"),
        ledger=option("ledger", LIVE_LEDGER),
        outputs=lambda w, output: options("output", output),
    shell:
        shell_line(
            "store-results",
            "manifest",
            "revision",
            "ledger=params.ledger",
            "outputs=params.outputs",
        )


rule store:
    """Target: this revision's tables in the results store."""
    input:
        STORE_FILES,
    localrule: True
