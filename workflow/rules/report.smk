# Stage 6: analysis, the HTML report, and the audit of every artifact.


rule report_html:
    input:
        summary=f"{IMPORTS}/summary.json",
        imports=[f"{IMPORTS}/{m}.json" for m in MODELS],
        catalog=str(P.catalog(config)),
        receipt=str(P.receipt(config)),
        runs=[run_outputs(name)[0] for name in config["runs"]],
    output:
        html=report(
            str(P.report_dir(config) / "index.html"),
            caption="../report/index.rst",
            category="Report",
        ),
        analysis=str(P.report_dir(config) / "analysis.json"),
        figures=[
            report(f, caption="../report/figure.rst", category="Figures")
            for f in report_figures()
        ],
    params:
        afbench=AFBENCH,
        cfg=as_json(report_slice(config)),
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/report.log",
    shell:
        "{params.afbench} report --config-json {params.cfg:q} 2> {log}"


rule audit:
    """Every artifact the config asked for, with its SHA-256, the config digest and versions."""
    input:
        all_artifacts(),
    output:
        str(P.audit(config)),
    params:
        afbench=AFBENCH,
        cfg=as_json(config),
        files=lambda w, input: " ".join(f"--file {shlex_quote(f)}" for f in input),
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/audit.log",
    shell:
        "{params.afbench} audit --config-json {params.cfg:q} {params.files} 2> {log}"


rule report:
    """Target: the report and the audit."""
    input:
        stage_targets()["report"],
        str(P.audit(config)),
