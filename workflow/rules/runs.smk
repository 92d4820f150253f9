# Stage 5: local runs (Harbor job directories or verdict folders) from the `runs:` config.


rule import_run:
    input:
        selection=lambda w: selection_path(config["runs"][w.name]["selection"]),
        paths=lambda w: config["runs"][w.name]["paths"],
    output:
        summary=f"{REV}/runs/{{name}}/summary.json",
        outcomes=f"{REV}/runs/{{name}}/outcomes.csv",
        attempts=f"{REV}/runs/{{name}}/attempts.csv",
    wildcard_constraints:
        name="|".join(re.escape(n) for n in config["runs"]) or "^$",
    params:
        afbench=AFBENCH,
        cfg=lambda w: as_json(
            base_slice(
                files=manifest_files(),
                models={},
                selections=selection_slice(config["runs"][w.name]["selection"]),
                runs={w.name: config["runs"][w.name]},
            )
        ),
    conda:
        "../../environment.yml"
    log:
        f"{REV}/logs/runs/{{name}}.log",
    shell:
        "{params.afbench} import-run --config-json {params.cfg:q} --run {wildcards.name} 2> {log}"


rule runs:
    """Target: every configured local run imported."""
    input:
        stage_targets()["runs"],
