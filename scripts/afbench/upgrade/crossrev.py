"""Results of two revisions compared on the tasks that did not change between them: an official
import (or a local run's configuration) of the previous release against one of the current
release, on the diff's comparable subset (afbench.upgrade.diff: the unchanged tasks, a hashed
selection), with the report's own paired machinery (afbench.report.analysis, afbench.core.stats) and
never a rate pooled across the two revisions.

A result is tied to its revision: each side must be of the revision the comparable subset
names for it, checked against the same catalog files the diff read (an import's catalog
inputs; a run's selection digest, recomputed), or the comparison is refused naming what
differs. Two results of one revision need no comparable subset: they compare on the tasks
both have, ordered and grouped by that revision's catalog.
"""

from __future__ import annotations

from contextlib import contextmanager

from afbench.core.errors import AfbenchError, Problem
from afbench.core.fsutil import canonical_digest
from afbench.core.stats import (
    CLUSTERED_DIFFERENCE_METHOD,
    CLUSTERED_RATE_METHOD,
    SIGN_FLIP_METHOD,
    clustered_difference_from_counts,
    clustered_rate_from_counts,
    holm,
    mcnemar_exact_many,
    paired_difference_from_counts,
    sign_flip_p,
    wilson_interval,
)
from afbench.imports.official import CONSTANT_FIELDS, outcomes
from afbench.kinds import CROSS_REVISION
from afbench.kinds.upgrade import DIFF_CLASSES, NOT_ON_BOTH
from afbench.report.analysis import ALPHA, EXACT_TEST, by_source, paired_counts, source_sums

LIKE_FOR_LIKE = (*CONSTANT_FIELDS, "budget_usd")
NOTE = (
    "Two results compared task by task on the tasks both revisions share unchanged (the diff's "
    "comparable subset) and both results have; every other task is left out and counted by "
    "why. Each side's rate is over the compared tasks and labelled with its revision; the two "
    "revisions' rates are never pooled. The difference is current - previous."
)
UNRESOLVED = {
    "official": "infrastructure errors, counted unsolved as the authors reported them",
    "local": "tasks without an accepted or rejected outcome (error, incomplete, unverified, "
    "missing), counted unsolved (the run's lower bound)",
}
MARK_RULE = (
    "a comparison is marked when its decision (Holm-adjusted sign-flip p below alpha, over "
    "every comparison here) changes with one side's unresolved tasks counted as solved"
)
HOLM = (
    "Holm-Bonferroni over the {m} comparison(s) of this artifact, for each test separately; "
    "family-wise alpha {alpha}"
)


def _short(revision: str) -> str:
    return revision[:12]


def side_label(name: str, revision: str) -> str:
    """What the report calls a side: its name, with its revision's first 12 digits."""
    return f"{name} · {_short(revision)}"


def official_side(imp: dict, file: str = "model import") -> dict:
    """An official model import as one side: its identity, the catalog files it was checked
    against, and per task its source, success and whether it is unresolved (one of its
    infrastructure errors, counted unsolved as reported, as the report counts them)."""
    read = outcomes(imp, file)
    return _official(imp, zip(read.task_ids, read.source_ids, read.successes, strict=True))


def compact_official_side(imp: dict, catalog: dict) -> dict:
    """The same side from the report's reduced import (analysis.compactor: its successes a
    bitset over the catalog's task order, the records dropped)."""
    bits = imp["success_bits"]
    return _official(
        imp,
        (
            (task["task_id"], task["source_id"], bool(bits >> i & 1))
            for i, task in enumerate(catalog["tasks"])
        ),
    )


def _official(imp: dict, records) -> dict:
    errors = set(imp["infrastructure_errors"]["tasks"])
    revision = imp["release"]["revision"]
    return {
        "kind": "official",
        "revision": revision,
        "model": imp["model"],
        "run": None,
        "configuration": None,
        "label": side_label(imp["display_name"], revision),
        "catalog_inputs": {k: v for k, v in imp["inputs"].items() if k != imp["file"]},
        "results": {"file": imp["file"], "sha256": imp["inputs"][imp["file"]]},
        "like_for_like": {field: imp[field] for field in LIKE_FOR_LIKE},
        "task_order": None,
        "selection_sha256": None,
        "tasks": {
            task_id: (source_id, success, task_id in errors)
            for task_id, source_id, success in records
        },
    }


def local_side(summary: dict, rows_by_configuration: dict, configuration: str | None) -> dict:
    """One configuration of a local run as one side (its rows checked to be the summary's:
    anatomy.configuration_rows): per task its success (accepted) and whether it is unresolved
    (no accepted or rejected outcome). `configuration` None: the run's only one."""
    labels = [c["configuration"] for c in summary["configurations"]]
    if configuration is None:
        if len(labels) != 1:
            raise AfbenchError(
                f"run '{summary['run']}' has {len(labels)} configurations: name the one to compare",
                field="configuration",
                expected=f"one of {labels}",
                found="none named",
            )
        configuration = labels[0]
    if configuration not in labels:
        raise AfbenchError(
            f"run '{summary['run']}' has no such configuration",
            field="configuration",
            expected=f"one of {labels}",
            found=configuration,
        )
    rows = rows_by_configuration[configuration]
    revision = summary["release"]["revision"]
    return {
        "kind": "local",
        "revision": revision,
        "model": None,
        "run": summary["run"],
        "configuration": configuration,
        "label": side_label(f"{summary['run']} [{configuration}]", revision),
        "catalog_inputs": None,
        "results": None,
        "like_for_like": None,
        "task_order": [r["task_id"] for r in rows],
        "selection_sha256": summary["selection"]["selection_sha256"],
        "tasks": {
            r["task_id"]: (None, r["outcome"] == "accepted", r["outcome"] not in ACCEPTED_OR_NOT)
            for r in rows
        },
    }


ACCEPTED_OR_NOT = ("accepted", "rejected")


class Subset:
    """The tasks results may be compared on, in one catalog's order, with their sources, the
    catalog files of each revision, and what the diff left out."""

    def __init__(
        self,
        selection: dict,
        revisions: tuple[str, str],
        inputs: tuple[dict, dict],
        left_out: dict[str, int],
        about: dict | None,
    ) -> None:
        self.task_ids = [t["task_id"] for t in selection["tasks"]]
        self.source = {t["task_id"]: t["source_id"] for t in selection["tasks"]}
        # the current revision's release and licence (a comparable subset or a catalog has them)
        self.release, self.license = selection["release"], selection["license"]
        self.revisions, self.inputs, self.left_out, self.about = revisions, inputs, left_out, about


def comparable_subset(comparable: dict, file: str = "comparable subset") -> Subset:
    """The diff's comparable subset (upgrade.diff_releases), refused if it is not as the diff
    wrote it: its selection digest is recomputed from its revision, catalog files and tasks."""
    block = comparable.get("comparable")
    if not isinstance(block, dict) or "current_inputs" not in block:
        raise AfbenchError(
            "not the diff's comparable subset (or one written by an older afbench): run the "
            "diff again (snakemake diff, afbench diff)",
            file=file,
            field="comparable",
        )
    current = block["current"]["revision"]
    digest = canonical_digest(
        {"revision": current, "inputs": block["current_inputs"], "task_ids": comparable["task_ids"]}
    )
    if (
        digest != comparable["selection_sha256"]
        or [t["task_id"] for t in comparable["tasks"]] != comparable["task_ids"]
        or comparable["release"]["revision"] != current
    ):
        raise AfbenchError(
            "the comparable subset is not as the diff wrote it (its tasks, revision or catalog "
            "files no longer give its digest): run the diff again",
            file=file,
            field="selection_sha256",
            expected=comparable["selection_sha256"],
            found=digest,
        )
    left_out = {kind: block["excluded"].get(kind, 0) for kind in DIFF_CLASSES}
    return Subset(
        comparable,
        (block["previous"]["revision"], current),
        (block["previous_inputs"], block["current_inputs"]),
        left_out,
        {
            "name": comparable["name"],
            "selection_sha256": comparable["selection_sha256"],
            "diff_sha256": block["diff_sha256"],
            "basis": block["basis"],
            "previous": block["previous"],
            "current": block["current"],
            "previous_inputs": block["previous_inputs"],
            "current_inputs": block["current_inputs"],
            "tasks": len(comparable["task_ids"]),
            "left_out": left_out,
        },
    )


def catalog_subset(catalog: dict) -> Subset:
    """One revision's whole catalog: two results of that revision compare on it."""
    revision = catalog["release"]["revision"]
    return Subset(catalog, (revision, revision), (catalog["inputs"], catalog["inputs"]), {}, None)


def _check_side(side: dict, role: str, subset: Subset, number: int) -> None:
    """A side belongs to the revision the subset names for it, and was made from the same
    catalog files."""
    index = 0 if role == "previous" else 1
    revision, inputs = subset.revisions[index], subset.inputs[index]
    where = f"comparison {number}, {role} side ({side['label']})"
    if side["revision"] != revision:
        if subset.about is None:
            raise AfbenchError(
                f"{where}: of another revision than the catalog's",
                file=side.get("file"),
                field="release.revision",
                expected=revision,
                found=side["revision"],
            )
        raise AfbenchError(
            f"{where}: not of the revision the comparable subset names for the {role} release",
            file=side.get("file"),
            field=f"comparable.{role}.revision",
            expected=revision,
            found=side["revision"],
        )
    what = "the diff's" if subset.about is not None else "the catalog's"
    if side["kind"] == "official":
        if side["catalog_inputs"] != inputs:
            raise AfbenchError(
                f"{where}: imported against other catalog files than {what} for revision "
                f"{_short(revision)}: import it again",
                file=side.get("file"),
                field="inputs",
                expected=_digests(inputs),
                found=_digests(side["catalog_inputs"]),
            )
    else:
        made = canonical_digest(
            {"revision": revision, "inputs": inputs, "task_ids": side["task_order"]}
        )
        if made != side["selection_sha256"]:
            raise AfbenchError(
                f"{where}: its selection was made from other catalog files than {what} for "
                f"revision {_short(revision)} (its selection digest differs): import the run "
                "again",
                file=side.get("file"),
                field="selection.selection_sha256",
                expected=made,
                found=side["selection_sha256"],
            )


def _digests(inputs: dict) -> str:
    return ", ".join(f"{path} {sha[:12]}" for path, sha in sorted(inputs.items()))


def _check_pair(previous: dict, current: dict, number: int) -> None:
    """Like for like: official with official (the same condition, scaffold, tools, stopping
    policy and budget), local with local."""
    if previous["kind"] != current["kind"]:
        raise AfbenchError(
            f"comparison {number} refused: an official import (the authors' reported, "
            "source-present results) is never compared with a local run (source-free, "
            "unattested)",
            field="kind",
            expected=f"two {previous['kind']} results",
            found=f"{previous['kind']} ({previous['label']}) and {current['kind']} "
            f"({current['label']})",
        )
    if previous["kind"] == "official":
        for field in LIKE_FOR_LIKE:
            before, after = previous["like_for_like"][field], current["like_for_like"][field]
            if before != after:
                raise AfbenchError(
                    f"comparison {number} refused: the two imports differ in {field}",
                    field=field,
                    expected=f"{before!r} ({previous['label']})",
                    found=f"{after!r} ({current['label']})",
                )


class _Compared:
    """One comparison's tasks (the subset's, in its order, that both sides have) as bitsets
    over them, grouped by source."""

    def __init__(self, previous: dict, current: dict, subset: Subset, number: int) -> None:
        for role, side in (("previous", previous), ("current", current)):
            if side["kind"] != "official":
                continue
            missing = [t for t in subset.task_ids if t not in side["tasks"]]
            wrong = [
                t
                for t in subset.task_ids
                if t in side["tasks"] and side["tasks"][t][0] != subset.source[t]
            ]
            if missing or wrong:
                task = (missing or wrong)[0]
                raise AfbenchError(
                    f"comparison {number}, {role} side ({side['label']}): the import "
                    + ("has no record of" if missing else "puts into another source")
                    + f" task {task}, which the catalog has: import it again",
                    file=side.get("file"),
                    field="records",
                    expected=f"task {task} of source {subset.source[task]}",
                    found="no record" if missing else f"source {side['tasks'][task][0]}",
                )
        ids = [t for t in subset.task_ids if t in previous["tasks"] and t in current["tasks"]]
        self.outside = {
            "previous": sum(t not in previous["tasks"] for t in subset.task_ids),
            "current": sum(t not in current["tasks"] for t in subset.task_ids),
        }
        self.not_on_both = len(subset.task_ids) - len(ids)
        if len(ids) < 2:
            raise AfbenchError(
                f"comparison {number} ({previous['label']} against {current['label']}): "
                f"{len(ids)} task(s) in common on the subset, at least 2 are needed",
                field="tasks",
                expected="two or more tasks both sides have",
                found=f"{len(ids)} of the {len(subset.task_ids)} tasks of the subset",
            )
        sources: dict[str, int] = {}
        for i, task_id in enumerate(ids):
            source = subset.source[task_id]
            sources[source] = sources.get(source, 0) | (1 << i)
        self.tasks = len(ids)
        self.masks = list(sources.values())
        self.sizes = [mask.bit_count() for mask in self.masks]
        sides = (("previous", previous), ("current", current))
        self.solved = {role: self._bits(side, ids, 1) for role, side in sides}
        self.unresolved = {role: self._bits(side, ids, 2) for role, side in sides}

    @staticmethod
    def _bits(side: dict, ids: list[str], field: int) -> int:
        out = 0
        for i, task_id in enumerate(ids):
            if side["tasks"][task_id][field]:
                out |= 1 << i
        return out


def _rate(side: dict, compared: _Compared, role: str, confidence: float) -> dict:
    solved = compared.solved[role]
    passes = solved.bit_count()
    low, high = wilson_interval(passes, compared.tasks, confidence)
    return {
        "revision": side["revision"],
        "kind": side["kind"],
        "model": side["model"],
        "run": side["run"],
        "configuration": side["configuration"],
        "label": side["label"],
        "results": side["results"],
        "selection_sha256": side["selection_sha256"],
        "tasks": compared.tasks,
        "solved": passes,
        "success_rate": passes / compared.tasks,
        "wilson_low": low,
        "wilson_high": high,
        "clustered": clustered_rate_from_counts(
            by_source(solved, compared.masks), compared.sizes, confidence
        ),
        "unresolved": compared.unresolved[role].bit_count(),
        "outside": compared.outside[role],
    }


def _paired(previous: int, current: int, compared: _Compared, confidence: float) -> dict:
    """The paired counts and statistics of current against previous (a = current, b =
    previous, so the difference is current - previous)."""
    bits = {"current": current, "previous": previous}
    pair = paired_counts(["current", "previous"], bits, compared.tasks)[0]
    only_current, only_previous = pair["only_a"], pair["only_b"]
    difference = paired_difference_from_counts(
        only_current, only_previous, compared.tasks, confidence
    )
    return {
        "both": pair["both"],
        "only_previous": only_previous,
        "only_current": only_current,
        "neither": pair["neither"],
        "difference": difference["difference"],
        "standard_error": difference["standard_error"],
        "low": difference["low"],
        "high": difference["high"],
        "clustered": clustered_difference_from_counts(
            by_source(current & ~previous, compared.masks),
            by_source(previous & ~current, compared.masks),
            compared.sizes,
            confidence,
        ),
        "p_sign_flip": sign_flip_p(source_sums(current, previous, compared.masks)),
    }


def compare_results(
    pairs: list[tuple[dict, dict]], subset: Subset, confidence: float, alpha: float = ALPHA
) -> dict:
    """Each (previous, current) pair of sides (official_side, local_side) compared on the
    subset: each side's rate over the compared tasks, the paired counts, the difference
    current - previous with its paired standard error (tasks as the unit) and its CR2 interval
    over sources, the exact sign-flip test over sources and the exact McNemar test, each
    Holm-adjusted over the pairs given; and what each side's unresolved tasks could do to the
    decision shown."""
    if not pairs:
        raise AfbenchError(
            "nothing to compare", field="--previous", expected="at least one pair of results"
        )
    for number, (previous, current) in enumerate(pairs, start=1):
        _check_pair(previous, current, number)
        _check_side(previous, "previous", subset, number)
        _check_side(current, "current", subset, number)
    rows = compared_rows(pairs, subset, confidence, alpha)
    return CROSS_REVISION.record(
        note=NOTE,
        # the current revision's release first, as in every artifact of its results tree
        release=subset.release,
        license=subset.license,
        previous_revision=subset.revisions[0],
        current_revision=subset.revisions[1],
        same_revision=subset.about is None,
        comparable=subset.about,
        confidence=confidence,
        alpha=alpha,
        methods=methods(confidence, HOLM.format(m=len(rows), alpha=alpha)),
        comparisons=rows,
    )


def methods(confidence: float, correction: str) -> dict:
    """How the comparisons were made, in words (the report prints them); `correction`: over
    which family the p-values are adjusted."""
    return {
        "rates": "each side's success rate over the compared tasks, labelled with its "
        "revision (never pooled); Wilson interval (tasks as the unit) and " + CLUSTERED_RATE_METHOD,
        "difference": f"current - previous per task, mean with a {confidence:.0%} normal "
        "interval on the paired standard error (tasks as the unit)",
        "clustered_difference": CLUSTERED_DIFFERENCE_METHOD,
        "test": SIGN_FLIP_METHOD,
        "test_tasks_as_unit": EXACT_TEST,
        "correction": correction,
        "unresolved": dict(UNRESOLVED),
        "mark": MARK_RULE,
        "left_out": "per comparison, the tasks of either revision not compared: each "
        "class the diff does not call unchanged, and the unchanged tasks that one side or "
        "both have no outcome for (not-on-both-sides)",
    }


def compared_rows(
    pairs: list[tuple[dict, dict]], subset: Subset, confidence: float, alpha: float = ALPHA
) -> list[dict]:
    """The comparisons of sides already held to the subset's revisions: per pair each side's
    rate, the paired counts, the difference and its intervals, the tests Holm-adjusted over
    the pairs given, and what the unresolved tasks could do to the decision."""
    rows, computed = [], []
    for number, (previous, current) in enumerate(pairs, start=1):
        compared = _Compared(previous, current, subset, number)
        paired = _paired(
            compared.solved["previous"], compared.solved["current"], compared, confidence
        )
        left_out = {**subset.left_out, NOT_ON_BOTH: compared.not_on_both}
        rows.append(
            {
                "previous": _rate(previous, compared, "previous", confidence),
                "current": _rate(current, compared, "current", confidence),
                "tasks": compared.tasks,
                "sources": len(compared.masks),
                "left_out": left_out,
                "left_out_total": sum(left_out.values()),
                **paired,
            }
        )
        computed.append(compared)
    p_exact = mcnemar_exact_many([(r["only_current"], r["only_previous"]) for r in rows])
    p_flip = [r["p_sign_flip"] for r in rows]
    for row, p, p_adj, q_adj in zip(rows, p_exact, holm(p_exact), holm(p_flip), strict=True):
        row.update(
            {
                "p_sign_flip_holm": q_adj,
                "significant": q_adj < alpha,
                "p_exact": p,
                "p_holm": p_adj,
                "significant_tasks_as_unit": p_adj < alpha,
            }
        )
    for index, (row, compared) in enumerate(zip(rows, computed, strict=True)):
        row["unresolved"] = _unresolved(index, row, compared, p_flip, confidence, alpha)
    return rows


def _unresolved(
    index: int, row: dict, compared: _Compared, p_flip: list[float], confidence: float, alpha: float
) -> dict:
    """Each side's unresolved tasks counted as solved in turn, the comparison's sign-flip p
    recomputed and Holm-adjusted again with the family's other p-values as they are: the
    comparison is marked when the decision shown could change."""
    ways = {}
    for way, role in (("favour_previous", "previous"), ("favour_current", "current")):
        solved = dict(compared.solved)
        solved[role] |= compared.unresolved[role]
        resolved = _paired(solved["previous"], solved["current"], compared, confidence)
        family = list(p_flip)
        family[index] = resolved["p_sign_flip"]
        adjusted = holm(family)[index]
        ways[way] = {
            "only_previous": resolved["only_previous"],
            "only_current": resolved["only_current"],
            "difference": resolved["difference"],
            "clustered": resolved["clustered"],
            "p_sign_flip": resolved["p_sign_flip"],
            "p_sign_flip_holm": adjusted,
            "significant": adjusted < alpha,
        }
    return {
        "previous": row["previous"]["unresolved"],
        "current": row["current"]["unresolved"],
        **ways,
        "marked": any(w["significant"] != row["significant"] for w in ways.values()),
    }


@contextmanager
def complete(path, kind: str):
    """An artifact read here that lacks a field the comparison needs (or holds another type
    there) is one clear error naming the file, never a traceback."""
    try:
        yield
    except (KeyError, TypeError, AttributeError) as missing:
        field = missing.args[0] if isinstance(missing, KeyError) else None
        raise AfbenchError(
            f"not a complete {kind.removeprefix('afbench ')}: a field is missing or of "
            "another type (written by another afbench, or edited): build it again",
            file=str(path),
            field=None if field is None else str(field),
        ) from None


def read_side(path, outcomes: dict, configuration: str | None) -> dict:
    """A side from its file: a model import, or a local run's summary.json with its
    outcomes.csv (`outcomes`: the outcome files given, by folder) and, for a run, the
    configuration to compare (None: its only one)."""
    from afbench.kinds import MODEL_IMPORT, RUN_SUMMARY, read_any

    data = read_any(path, MODEL_IMPORT, RUN_SUMMARY)
    with complete(path, data["kind"]):
        # the file, for the refusals that name a side (never written into the artifact)
        return {**_side_of(path, data, outcomes, configuration), "file": str(path)}


def _side_of(path, data: dict, outcomes: dict, configuration: str | None) -> dict:
    from pathlib import Path

    from afbench.kinds import MODEL_IMPORT
    from afbench.task_analysis.anatomy import configuration_rows, read_outcome_rows

    if data["kind"] == MODEL_IMPORT.name:
        if configuration:
            raise AfbenchError(
                "a model import has no configurations to choose from",
                file=str(path),
                field="configuration",
                expected="none (an empty value)",
                found=configuration,
            )
        return official_side(data, str(path))
    beside = outcomes.get(Path(path).parent)
    if beside is None:
        raise AfbenchError(
            f"run '{data['run']}': its outcomes are needed, and none given is in its folder",
            file=str(path),
            field="--outcomes",
            expected=str(Path(path).parent / "outcomes.csv"),
            found=", ".join(map(str, outcomes.values())) or "none",
        )
    rows = configuration_rows(data, read_outcome_rows(beside), str(beside))
    return local_side(data, rows, configuration or None)


def comparison_line(row: dict) -> str:
    """One comparison in one line: each side's rate, what was left out, the difference with
    its clustered interval, and the two tests."""
    previous, current = row["previous"], row["current"]
    left = ", ".join(f"{n} {kind}" for kind, n in row["left_out"].items() if n) or "none"
    clustered = row["clustered"]
    df = "—" if clustered["df"] is None else f"{clustered['df']:.1f}"
    return (
        f"{previous['label']} {100 * previous['success_rate']:.1f}% against {current['label']} "
        f"{100 * current['success_rate']:.1f}% on {row['tasks']} tasks (left out: {left}): "
        f"{100 * row['difference']:+.1f} pp, clustered {100 * clustered['low']:+.1f} … "
        f"{100 * clustered['high']:+.1f} (df {df}, {row['sources']} sources); sign-flip p "
        f"{row['p_sign_flip']:.3g} (Holm {row['p_sign_flip_holm']:.3g}), exact McNemar p "
        f"{row['p_exact']:.3g} (Holm {row['p_holm']:.3g})"
        + (" †" if row["unresolved"]["marked"] else "")
    )


def analysis_block(
    artifact: dict, catalog: dict, imports: list[dict], runs: list[dict], file: str
) -> dict:
    """What the report of the current revision carries of its comparisons across revisions,
    refused unless they were made on its catalog and, for each model and run the report also
    shows, from the same import (results file) or run (selection)."""
    if artifact["same_revision"] or artifact["current_revision"] != catalog["release"]["revision"]:
        raise AfbenchError(
            "the comparisons are not across revisions into this report's revision",
            file=file,
            field="current_revision",
            expected=f"comparisons from an earlier revision into {catalog['release']['revision']}",
            found=f"{artifact['previous_revision']} -> {artifact['current_revision']}",
        )
    if artifact["comparable"]["current_inputs"] != catalog["inputs"]:
        raise AfbenchError(
            "the comparisons' comparable subset was made from other catalog files than this "
            "report's: run the diff and the comparisons again",
            file=file,
            field="comparable.current_inputs",
            expected=_digests(catalog["inputs"]),
            found=_digests(artifact["comparable"]["current_inputs"]),
        )
    made_from = {("official", imp["model"]): imp["inputs"][imp["file"]] for imp in imports}
    made_from |= {("local", run["run"]): run["selection"]["selection_sha256"] for run in runs}
    for number, row in enumerate(artifact["comparisons"], start=1):
        current = row["current"]
        official = current["kind"] == "official"
        name = current["model"] if official else current["run"]
        digest = current["results"]["sha256"] if official else current["selection_sha256"]
        shown = made_from.get((current["kind"], name))
        if shown is not None and digest != shown:
            raise AfbenchError(
                f"comparison {number} was made from another import of "
                f"{'model' if official else 'run'} '{name}' than the report shows: compare "
                "again",
                file=file,
                field="current",
                expected=shown,
                found=digest,
            )
    return {k: v for k, v in artifact.items() if k not in ("kind", "schema_version")}


def comparisons_of_comparable(artifact: dict, comparable: dict) -> list[Problem]:
    """COMPARISONS_OF_COMPARABLE (afbench.kinds.relations): the comparisons were made on this
    comparable subset (its name, hash, diff and size)."""
    made = comparable.get("comparable") or {}
    named = {
        "name": comparable["name"],
        "selection_sha256": comparable["selection_sha256"],
        "diff_sha256": made.get("diff_sha256"),
        "tasks": comparable["counts"]["tasks"],
    }
    return [
        Problem(
            "the comparisons were made on another comparable subset",
            field=f"comparable.{field}",
            expected=value,
            found=artifact["comparable"][field],
        )
        for field, value in named.items()
        if artifact["comparable"][field] != value
    ]
