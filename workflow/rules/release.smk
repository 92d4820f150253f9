# Stage 1: fetch the pinned release and verify every byte.


rule demo_upstream:
    """Build the demo release's git repository (a reproducible commit) from resources/."""
    input:
        lambda w: sorted(
            str(p) for p in Path(config["demo"]["release_files"]).rglob("*") if p.is_file()
        ),
    output:
        directory(config["source"]["checkout"] if "demo" in config else "demo-upstream"),
    params:
        afbench=AFBENCH,
        release_files=lambda w: config["demo"]["release_files"],
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/demo_upstream.log",
    shell:
        "{params.afbench} demo repo --release-files {params.release_files:q} --out {output:q} 2> {log}"


rule fetch_file:
    """One release file, verified against its pin; a pin change reruns only this job."""
    input:
        demo_checkout(),
    output:
        f"{REV}/release/{{path}}",
    wildcard_constraints:
        path="|".join(re.escape(spec.path) for spec in pinned_files(config)),
    params:
        afbench=AFBENCH,
        key=lambda w: fetch_slice(w.path)[0],
        cfg=lambda w: fetch_slice(w.path)[1],
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/fetch/{{path}}.log",
    shell:
        "{params.afbench} fetch --config-json {params.cfg:q} --only {params.key:q} 2> {log}"


rule receipt:
    input:
        [release_path(spec.path) for spec in pinned_files(config)],
    output:
        f"{REV}/release/receipt.json",
    params:
        afbench=AFBENCH,
        cfg=as_json(
            base_slice(
                source=config["source"], files=config["files"], models=config["models"]
            )
        ),
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/receipt.log",
    shell:
        "{params.afbench} fetch --config-json {params.cfg:q} 2> {log}"


rule fetch:
    """Target: the verified release and its receipt."""
    input:
        stage_targets()["fetch"],


rule discover:
    """Target (not in `all`): confirm paths, pins and columns against `discover.checkout`."""
    output:
        f"{REV}/discovered.yaml",
        f"{REV}/discovery.json",
    params:
        afbench=AFBENCH,
        cfg=as_json(config),
        checkout=lambda w: config.get("discover", {}).get("checkout") or "",
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/discover.log",
    shell:
        "{params.afbench} discover --config-json {params.cfg:q} --checkout {params.checkout:q} "
        "2> {log}"
