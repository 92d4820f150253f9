# Stage 1: fetch the pinned release, then verify every byte and write the receipt.


rule build_demo_upstream:
    """The demo release's git repository (a reproducible commit) from resources/."""
    input:
        lambda w: sorted(
            str(p) for p in Path(config["demo"]["release_files"]).rglob("*") if p.is_file()
        ),
    output:
        directory(DEMO_CHECKOUT or "demo-upstream"),
    log:
        f"{LOGS}/build_demo_upstream.log",
    conda:
        AFBENCH_ENV
    params:
        release_files=lambda w: config["demo"]["release_files"],
    shell:
        "afbench demo repo --release-files {params.release_files:q} --out {output:q} 2> {log:q}"


rule fetch_file:
    """One release file, checked against its pin; a pin change refetches only this file."""
    input:
        DEMO_CHECKOUT,
    output:
        f"{RELEASE}/{{path}}",
    log:
        f"{LOGS}/fetch_file/{{path}}.log",
    wildcard_constraints:
        path="|".join(re.escape(p) for p in BY_PATH) or "^$",
    conda:
        AFBENCH_ENV
    params:
        file=lambda w: FILES[BY_PATH[w.path]]["path"],
        sha256=lambda w: FILES[BY_PATH[w.path]]["sha256"],
        source=lambda w, input: source_flags(input[0] if DEMO else None),
    shell:
        "afbench fetch --file {params.file:q} --sha256 {params.sha256:q} {params.source} "
        "--output {output:q} 2> {log:q}"


rule verify_file:
    """One fetched file re-hashed against its pin: the verified-file record later stages
    read, so a new pin reruns only what reads that file."""
    input:
        lambda w: release_file(w.key),
    output:
        verified("{key}"),
    log:
        f"{LOGS}/verify_file/{{key}}.log",
    wildcard_constraints:
        key="|".join(re.escape(k) for k in FILES) or "^$",
    conda:
        AFBENCH_ENV
    params:
        pin=lambda w: f"{w.key}={FILES[w.key]['path']}@{FILES[w.key]['sha256']}",
        identity=identity_flags(),
        source=source_flags(),
    shell:
        "afbench verify --file {input:q} --pin {params.pin:q} {params.identity} "
        "{params.source} --output {output:q} 2> {log:q}"


rule verify_release:
    """The release's receipt: every verified file, and the files config names without a pin."""
    input:
        [verified(key) for key in FILES],
    output:
        RECEIPT,
    log:
        f"{LOGS}/verify_release.log",
    conda:
        AFBENCH_ENV
    params:
        entries=lambda w, input: flags("entry", input),
        skips=skip_flags(),
    shell:
        "afbench verify {params.entries} {params.skips} --output {output:q} 2> {log:q}"


rule fetch:
    """Target: the verified release and its receipt."""
    input:
        stage_targets()["fetch"],


rule discover_release:
    """Target (not in `all`): confirm paths, pins and columns against `discover.checkout`."""
    output:
        fragment=f"{REV}/discovered.yaml",
        discovery=f"{REV}/discovery.json",
    log:
        f"{LOGS}/discover.log",
    conda:
        AFBENCH_ENV
    params:
        checkout=lambda w: config.get("discover", {}).get("checkout") or "",
        pins=pin_flags(),
        columns=discover_column_flags(),
        names=display_name_flags(),
        revision=REVISION,
        max_bytes=config["source"]["max_bytes"],
    shell:
        "afbench discover --checkout {params.checkout:q} --revision {params.revision} "
        "--max-bytes {params.max_bytes} {params.pins} {params.columns} {params.names} "
        "--discovery {output.discovery:q} --fragment {output.fragment:q} 2> {log:q}"


rule discover:
    """Target (not in `all`): the discovery report and the config fragment to review."""
    input:
        rules.discover_release.output,
