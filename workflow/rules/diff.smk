# Release upgrades (opt-in: not part of `all`, except the comparisons across revisions, which
# the report shows once config asks for them): every task's content digests, the diff against
# the previous release (upgrade.previous_revision, whose own results/<revision>/ tree holds its
# digests), the unchanged tasks as a selection, the upgrade plan, and results of the two
# revisions compared on those tasks.


rule digest_tasks:
    """Every task's digests: the catalog's, and, with a checkout at the pinned revision, those
    of the task folder its exporter writes (statement, verifier, environment parts)."""
    input:
        catalog=rules.export_catalog.output,
        checkout=DEMO_CHECKOUT,
    output:
        TASK_DIGESTS,
    log:
        f"{LOGS}/digest_tasks.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        repository=lambda w, input: option(
            "repository-dir",
            absolute(input.checkout if DEMO else config["plans"]["repository_dir"]),
        ),
    shell:
        shell_line(
            "digest-tasks",
            "catalog",
            "repository_dir=params.repository",
            "output=output",
        )


rule digests:
    """Target: every task's content digests."""
    input:
        TASK_DIGESTS,
    localrule: True


rule diff_releases:
    """The previous release against this one, task by task; the unchanged tasks as a
    selection (the comparable subset)."""
    input:
        previous=previous_digests,
        digests=TASK_DIGESTS,
        catalog=rules.export_catalog.output,
    output:
        diff=UPGRADE_DIFF,
        comparable=COMPARABLE,
    log:
        f"{LOGS}/diff_releases.log",
    localrule: True
    conda:
        AFBENCH_ENV
    shell:
        shell_line(
            "diff-releases",
            "previous",
            "digests",
            "catalog",
            "diff",
            "comparable",
        )


# a checkpoint: an execute item with `upgrade: true` runs the tasks it reruns
checkpoint plan_upgrade:
    """Reuse, regrade, rerun or drop per task, and what the reruns cost (execute.attempts
    trials each, at the cap per trial: execute.trial_cap_usd)."""
    input:
        diff=rules.diff_releases.output.diff,
        catalog=rules.export_catalog.output,
    output:
        UPGRADE_PLAN,
    log:
        f"{LOGS}/plan_upgrade.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        attempts=setting("attempts", "execute/attempts"),
        cap=setting("trial-cap-usd", "execute/trial_cap_usd"),
    shell:
        shell_line(
            "plan-upgrade",
            "diff",
            "catalog",
            "attempts",
            "trial_cap_usd=params.cap",
            "output=output",
        )


rule diff:
    """Target (opt-in): the diff against the previous release, the comparable subset and the
    upgrade plan."""
    input:
        rules.diff_releases.output,
        UPGRADE_PLAN,
    localrule: True


rule compare_revisions:
    """Results of the previous release against results of this one (upgrade.comparisons),
    on the diff's comparable subset only, with the report's paired tests."""
    input:
        unpack(compared_results("previous")),
        unpack(compared_results("current")),
        comparable=rules.diff_releases.output.comparable,
    output:
        CROSS_REVISION,
    log:
        f"{LOGS}/compare_revisions.log",
    localrule: True
    conda:
        AFBENCH_ENV
    params:
        previous=lambda w, input: options("previous", input.previous),
        current=lambda w, input: options("current", input.current),
        outcomes=lambda w, input: options(
            "outcomes", [*input.previous_outcomes, *input.current_outcomes]
        ),
        configurations=" ".join(
            [compared_configurations("previous"), compared_configurations("current")]
        ),
        confidence=setting("confidence", "report/confidence"),
    shell:
        shell_line(
            "compare-revisions",
            "comparable",
            "previous=params.previous",
            "current=params.current",
            "outcomes=params.outcomes",
            "previous_configuration,current_configuration=params.configurations",
            "confidence",
            "output=output",
        )


rule comparisons:
    """Target (opt-in; the report shows them too): the comparisons across revisions."""
    input:
        cross_revision_files(),
    localrule: True
