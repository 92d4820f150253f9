# Stage 2: the source-free task catalog and named selections.


rule catalog:
    input:
        [release_path(spec["path"]) for spec in manifest_files().values()],
    output:
        str(P.catalog(config)),
    params:
        afbench=AFBENCH,
        cfg=as_json(
            base_slice(files=manifest_files(), models={}, columns=config["columns"])
        ),
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/catalog.log",
    shell:
        "{params.afbench} tasks --config-json {params.cfg:q} --catalog-only 2> {log}"


rule selection:
    input:
        str(P.catalog(config)),
    output:
        f"{REV}/tasks/selections/{{name}}.json",
    wildcard_constraints:
        name="|".join(re.escape(n) for n in config["selections"]) or "^$",
    params:
        afbench=AFBENCH,
        cfg=lambda w: as_json(
            base_slice(
                files=manifest_files(),
                models={},
                selections={w.name: config["selections"][w.name]},
            )
        ),
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/selection/{{name}}.log",
    shell:
        "{params.afbench} tasks --config-json {params.cfg:q} --selection {wildcards.name} 2> {log}"


rule tasks:
    """Target: the catalog and every configured selection."""
    input:
        stage_targets()["tasks"],
