"""What binds an artifact to what it was made from, declared once per pair of kinds.

An artifact is derived from others: digests from the catalog, a selection from the catalog, a
plan from its selection, a model import from a pinned file. Each such relation is declared
here: the two kinds, what binds them (a hash, a task set, a field), the function that checks it
(named `module:function`, imported when first checked, so a kind's module stays free of stage
code: the declaration is data, resolved by afbench.audit.directory), and how it is checked:
**re-derived** (the binding part of the artifact made again from its source and compared) or
**cross-checked** (fields of the two compared). Every reader that takes both files checks the
relation through its declaration (`audit.hold(RELATION, ...)`), and `afbench audit` checks
every relation across a results directory.

A check function takes the artifact and its source (None for a relation of an artifact's own
fields) and returns the problems it finds (errors.Problem), each naming the artifact's field;
`audit.problems_of` names both files in each.
"""

from __future__ import annotations

from . import _Declaration

METHODS = ("re-derived", "cross-checked")
# a relation's source that is no artifact: the bytes of the files an artifact lists
BYTES = "(the files' bytes)"


class Relation(_Declaration):
    """`artifact` (a kind's name) is derived from `source` (a kind's name; None: its own
    fields), bound by `binds`, checked by `check` ("afbench.module:function")."""

    __slots__ = ("artifact", "binds", "check", "method", "name", "source")

    def __init__(
        self, name: str, artifact: str, source: str | None, binds: str, check: str, method: str
    ) -> None:
        if method not in METHODS:
            raise TypeError(f"relation {name!r}: method is one of {METHODS}")
        self._set(
            name=name, artifact=artifact, source=source, binds=binds, check=check, method=method
        )


def _relation(name: str, artifact: str, source: str | None, binds: str, check: str, method: str):
    return Relation(name, artifact, source, binds, f"afbench.{check}", method)


CATALOG_OF_ITSELF = _relation(
    "catalog-itself",
    "afbench task catalog",
    None,
    "its counts, each source's n_tasks, and each task's catalog digests from its row",
    "tasks.catalog:catalog_holds",
    "re-derived",
)
CATALOG_OF_RECEIPT = _relation(
    "catalog-receipt",
    "afbench task catalog",
    "afbench release receipt",
    "the release block, and each input's SHA-256 as the receipt verified it",
    "release.identity:inputs_of_receipt",
    "cross-checked",
)
DIGESTS_OF_ITSELF = _relation(
    "digests-itself",
    "afbench task digests",
    None,
    "each key is its row's task id; catalog digests from the row, part digests from the "
    "files, Harbor's checksum from the files and task.toml",
    "tasks.catalog:digests_hold",
    "re-derived",
)
DIGESTS_OF_CATALOG = _relation(
    "digests-catalog",
    "afbench task digests",
    "afbench task catalog",
    "the revision and inputs, the task set, each task's MANIFEST row and catalog digests",
    "tasks.catalog:digests_agree_with_catalog",
    "cross-checked",
)
PREVIOUS_DIGESTS = _relation(
    "digests-previous",
    "afbench task digests",
    "afbench task digests",
    "the previous release is of the same repository, at another well-formed revision",
    "upgrade.diff:previous_release_holds",
    "cross-checked",
)
SELECTION_OF_CATALOG = _relation(
    "selection-catalog",
    "afbench task selection",
    "afbench task catalog",
    "selection_sha256 of the catalog's revision, inputs and the task ids; each task's row; "
    "a selection by criteria made again from them",
    "tasks.catalog:selection_of_catalog",
    "re-derived",
)
PLAN_OF_SELECTION = _relation(
    "plan-selection",
    "afbench harbor run plan",
    "afbench task selection",
    "the release, the selection's name, hash and size, and its tasks in order",
    "plans.plan:plan_of_selection",
    "cross-checked",
)
ANALYSIS_PLAN_OF_CATALOG = _relation(
    "analysis-plan-catalog",
    "afbench analysis plan",
    "afbench task catalog",
    "α is the test's and its boundary keeps it; the horizon and looks made again from the "
    "plan's design, selection size and batches; its tasks hash to selection_sha256",
    "plans.preregister:plan_holds",
    "re-derived",
)
RUN_PLAN_OF_SELECTION = _relation(
    "run-plan-selection",
    "afbench sealed run plan",
    "afbench task selection",
    "the whole plan made again from its selection, its configuration and its money (release, "
    "selection hash and size, the estimate, the worst case), and its seal",
    "plans.preregister:run_plan_of_selection",
    "re-derived",
)
VERIFIED_OF_RECEIPT = _relation(
    "verified-receipt",
    "afbench verified file",
    "afbench release receipt",
    "the release block and the file's entry",
    "release.identity:verified_of_receipt",
    "cross-checked",
)
IMPORT_OF_RECEIPT = _relation(
    "import-receipt",
    "afbench official results import",
    "afbench release receipt",
    "the release block, and each input's SHA-256 as the receipt verified it",
    "release.identity:inputs_of_receipt",
    "cross-checked",
)
IMPORT_OF_CATALOG = _relation(
    "import-catalog",
    "afbench official results import",
    "afbench task catalog",
    "the task set (task_set_sha256), each record's source and obligations",
    "imports.official:import_of_catalog",
    "cross-checked",
)
SUMMARY_OF_IMPORT = _relation(
    "summary-import",
    "afbench official results summary",
    "afbench official results import",
    "the model's leaderboard row (passes, tasks, rate, errors) and its input",
    "imports.compare:summary_of_import",
    "cross-checked",
)
DIFF_OF_DIGESTS = _relation(
    "diff-digests",
    "afbench release diff",
    "afbench task digests",
    "the current revision and task set; diff_sha256 and the counts from its tasks",
    "upgrade.diff:diff_of_digests",
    "re-derived",
)
COMPARABLE_OF_DIFF = _relation(
    "comparable-diff",
    "afbench task selection",
    "afbench release diff",
    "diff_sha256, the selection's hash and size, and its tasks: the diff's unchanged ones",
    "upgrade.diff:comparable_of_diff",
    "cross-checked",
)
UPGRADE_PLAN_OF_DIFF = _relation(
    "upgrade-plan-diff",
    "afbench upgrade plan",
    "afbench release diff",
    "diff_sha256, each task's class and action (Harbor's vocabulary), the counts",
    "upgrade.diff:plan_of_diff",
    "re-derived",
)
COMPARISONS_OF_COMPARABLE = _relation(
    "comparisons-comparable",
    "afbench cross-revision comparisons",
    "afbench task selection",
    "the comparable subset's name, hash, diff and size",
    "upgrade.crossrev:comparisons_of_comparable",
    "cross-checked",
)
MANIFEST_OF_FILES = _relation(
    "manifest-files",
    "afbench artifact manifest",
    BYTES,
    "each listed artifact's SHA-256 and size, hashed again",
    "audit.manifest:manifest_of_files",
    "re-derived",
)
RECEIPT_OF_FILES = _relation(
    "receipt-files",
    "afbench release receipt",
    BYTES,
    "each verified release file's SHA-256 and size, hashed again, and its pin",
    "release.identity:receipt_of_files",
    "re-derived",
)
RELEASE_BLOCK = _relation(
    "release-block",
    "*",
    "afbench release identity",
    "every artifact's release block is the release identity's",
    "release.identity:release_block_of_identity",
    "cross-checked",
)
RUN_OF_SELECTION = _relation(
    "run-selection",
    "afbench local run summary",
    "afbench task selection",
    "the release, and the selection's name, hash and size",
    "runs.summary:run_of_selection",
    "cross-checked",
)
RUN_OF_TABLES = _relation(
    "run-tables",
    "afbench local run summary",
    "outcomes",
    "each configuration's outcome, attempt and replaced-attempt counts, counted again from its "
    "tables",
    "runs.summary:run_of_tables",
    "re-derived",
)
ANALYSIS_OF_SUMMARY = _relation(
    "analysis-summary",
    "afbench analysis",
    "afbench official results summary",
    "the models shown and their passes, tasks, rate and errors",
    "report.analysis:analysis_of_summary",
    "cross-checked",
)
ANALYSIS_OF_RECEIPT = _relation(
    "analysis-receipt",
    "afbench analysis",
    "afbench release receipt",
    "the provenance shown: the receipt's files",
    "report.analysis:analysis_of_receipt",
    "cross-checked",
)
ANALYSIS_OF_RUN = _relation(
    "analysis-run",
    "afbench analysis",
    "afbench local run summary",
    "each configuration shown: its counts, rate and conformance",
    "report.analysis:analysis_of_run",
    "cross-checked",
)
RECEIPT_OF_TRIAL = _relation(
    "receipt-trial",
    "afbench trial receipt",
    "afbench trial receipt",
    "one receipt per trial (release, selection, task, configuration, attempt): another receipt "
    "of the same trial holds the same content",
    "execution.ledger:receipt_of_trial",
    "cross-checked",
)
LEDGER_OF_RECEIPTS = _relation(
    "ledger-receipts",
    "afbench cost ledger",
    "afbench trial receipt",
    "its trials are the receipts' (job, task, attempt, agent, model, cap, refusal, action), "
    "and its spent, held, overshoot and refused totals add up over its trials",
    "execution.ledger:ledger_of_receipts",
    "cross-checked",
)
DECISION_OF_PLAN = _relation(
    "decision-plan",
    "afbench sequential run",
    "afbench analysis plan",
    "the seal it was made under (plan_sha256), the comparison, α, horizon and error rule",
    "execution.sequential:decision_of_plan",
    "cross-checked",
)
DECISION_OF_RECEIPTS = _relation(
    "decision-receipts",
    "afbench sequential run",
    "afbench trial receipt",
    "the decision, its looks, trials, counts, spend, retries and tasks left out, made again "
    "from the comparison's receipts under the sealed plan",
    "execution.sequential:decision_of_receipts",
    "re-derived",
)
RUN_OF_DECISION = _relation(
    "run-decision",
    "afbench local run summary",
    "afbench sequential run",
    "the executed run's outcome of each task and configuration the decision read is the "
    "outcome of the attempt that stands, the one the decision counted",
    "runs.summary:run_of_decision",
    "cross-checked",
)

# every relation, in the order above (afbench audit checks them; docs/guarantees.md lists them)
RELATIONS = tuple(v for v in list(globals().values()) if isinstance(v, Relation))
