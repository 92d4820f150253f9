# The audit (opt-in, never part of `all`): every relation between the artifacts of
# results/<revision>, checked; the record lands beside the directory, never in it.


rule audit_directory:
    """Every file the manifest lists hashed again and every declared relation checked; the
    job fails (exit 1) unless all hold. Its inputs are every artifact, so a changed one
    audits again (`--forcerun audit_directory` audits regardless)."""
    input:
        artifacts=all_artifacts(),
        manifest=ARTIFACT_MANIFEST,
    output:
        AUDIT_RECORD,
    log:
        AUDIT_RECORD.removesuffix(".json") + ".log",
    localrule: True
    conda:
        AFBENCH_ENV
    shell:
        shell_line(
            "audit-directory",
            "manifest",
            "output=output",
            log="> {log:q} 2>&1",
        )


rule audit:
    """Target (not in `all`): the audit of this revision's results directory."""
    input:
        AUDIT_RECORD,
    localrule: True
