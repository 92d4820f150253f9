# Stage 1: fetch the pinned release, then verify every byte and write the receipt.


rule build_demo_upstream:
    """The demo release's git repository (a reproducible commit) from resources/."""
    input:
        lambda w: sorted(
            str(p)
            for folder in [config["demo"]["release_files"], config["demo"]["upgrade_files"]]
            if folder
            for p in Path(folder).rglob("*")
            if p.is_file()
        ),
    output:
        directory(DEMO_CHECKOUT or "demo-upstream"),
    log:
        f"{LOGS}/build_demo_upstream.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        release_files=setting("release-files", "demo/release_files") if DEMO else "",
        upgrade_files=options(
            "upgrade-files", [f for f in [DEMO and config["demo"]["upgrade_files"]] if f]
        ),
    shell:
        shell_line(
            "build-demo-upstream",
            "release_files=params.release_files",
            "upgrade_files=params.upgrade_files",
            "output=output",
        )


rule fetch_file:
    """One release file, checked against its pin; a pin change refetches only this file. How
    it is downloaded (timeouts, retries, size cap) is handed over untracked: it reruns nothing."""
    input:
        DEMO_CHECKOUT,
    output:
        f"{RELEASE}/{{path}}",
    log:
        f"{LOGS}/fetch_file/{{path}}.log",
    wildcard_constraints:
        path="|".join(re.escape(p) for p in BY_PATH) or "^$",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        file=lambda w: option("file", w.path),
        sha256=lambda w: option("sha256", FILES[BY_PATH[w.path]]["sha256"]),
        kind=setting("source-kind", "source/kind"),
        # the demo checkout a job declares as input is read where Snakemake staged it
        location=lambda w, input: option("source-location", input[0] if DEMO else source_location()),
        repository=setting("repository", "release/repository"),
        revision=setting("revision", "release/revision"),
        transport=lambda w: transport_flags(),
    shell:
        shell_line(
            "fetch-file",
            "file",
            "sha256",
            "source_kind=params.kind",
            "source_location=params.location",
            "repository",
            "revision",
            f"{','.join(TRANSPORT_SETTINGS)}=params.transport",
            "output=output",
        )


rule write_release_identity:
    """The release identity (name, revision, toolchain, budget, licence, dates, images) that
    every artifact carries: one small artifact, so only what stamps it reruns when it changes."""
    output:
        RELEASE_IDENTITY,
    log:
        f"{LOGS}/write_release_identity.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        name=setting("name", "release/name"),
        repository=setting("repository", "release/repository"),
        revision=setting("revision", "release/revision"),
        synthetic=setting("synthetic", "release/synthetic"),
        lean=setting("lean", "release/lean"),
        mathlib=setting("mathlib", "release/mathlib"),
        harbor=setting("harbor", "release/harbor"),
        budget=setting("nominal-budget-usd", "release/nominal_budget_usd"),
        license=setting("license", "release/license"),
        release_page=setting("release-page", "release/dates/release_page"),
        manuscript_cover=setting("manuscript-cover", "release/dates/manuscript_cover"),
        software_citation=setting("software-citation", "release/dates/software_citation"),
        first_public=setting("first-public-release", "release/dates/first_public_release"),
        images=options(
            "image",
            [
                f"{i['role']}={i['reference'] or ''}@{i['digest'] or ''}"
                for i in config_lookup("release/images")
            ],
        ),
    shell:
        shell_line(
            "write-release-identity",
            "name",
            "repository",
            "revision",
            "synthetic",
            "lean",
            "mathlib",
            "harbor",
            "nominal_budget_usd=params.budget",
            "license",
            "release_page",
            "manuscript_cover",
            "software_citation",
            "first_public_release=params.first_public",
            "image=params.images",
            "output=output",
        )


rule verify_file:
    """One fetched file re-hashed against its pin: the verified-file record later stages
    read, so a new pin reruns only what reads that file."""
    input:
        identity=RELEASE_IDENTITY,
        file=lambda w: release_file(w.key),
    output:
        verified("{key}"),
    log:
        f"{LOGS}/verify_file/{{key}}.log",
    wildcard_constraints:
        key="|".join(re.escape(k) for k in FILES) or "^$",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        pin=lambda w: option("pin", pin_of(w.key)),
        kind=setting("source-kind", "source/kind"),
        location=option("source-location", source_location()),
    shell:
        shell_line(
            "verify-file",
            "identity",
            "file",
            "pin",
            "source_kind=params.kind",
            "source_location=params.location",
            "output=output",
        )


rule verify_release:
    """The release's receipt: every verified file, and the files config names without a pin."""
    input:
        [verified(key) for key in FILES],
    output:
        RECEIPT,
    log:
        f"{LOGS}/verify_release.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        entries=lambda w, input: options("entry", input),
        skips=SKIPS,
    shell:
        shell_line(
            "verify-release",
            "entry=params.entries",
            "skip=params.skips",
            "output=output",
        )


rule fetch:
    """Target: the verified release and its receipt."""
    input:
        stage_targets()["fetch"],
    localrule: True


rule discover_release:
    """Target (not in `all`): confirm paths, pins and columns against `discover.checkout`."""
    output:
        fragment=f"{REV}/discovered.yaml",
        discovery=f"{REV}/discovery.json",
    log:
        f"{LOGS}/discover.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        checkout=setting("checkout", "discover/checkout"),
        revision=setting("revision", "release/revision"),
        pins=options("pin", [pin_of(key) for key in FILES]),
        skips=SKIPS,
        columns=options(
            "column",
            [
                f"{kind}.{ours}={theirs}"
                for kind, mapping in config["columns"].items()
                for ours, theirs in mapping.items()
            ],
        ),
        names=options(
            "display-name", [f"{s}={m['display_name']}" for s, m in config["models"].items()]
        ),
    shell:
        shell_line(
            "discover-release",
            "checkout=params.checkout",
            "revision",
            "pin=params.pins",
            "skip=params.skips",
            "column=params.columns",
            "display_name=params.names",
            "discovery",
            "fragment",
        )


rule discover:
    """Target (not in `all`): the discovery report and the config fragment to review."""
    input:
        rules.discover_release.output,
    localrule: True
