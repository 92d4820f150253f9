"""What a command says it did: one short line on standard error for each unit of outputs it
wrote (or kept as they were), naming what it is, its counts and where it went, e.g.

    catalog: 341 tasks, 24 sources, 1,155 obligations -> runs/tasks.json

Every write goes through fsutil.write_outputs, which tells the command's listener (made here,
installed by the command line for each command) what it wrote: an artifact record, described
here by its kind with the counts from its own fields, or the text of the line. `--quiet`
silences these lines (and the progress bars); warnings and errors are always shown."""

from __future__ import annotations

import os
from collections.abc import Callable

from afbench.core.errors import printable, tell

from .. import kinds

MAX_LINE = 1000  # characters of one line (a long list of paths or models is clipped)
MAX_NAMED = 6  # models or paths named in one line before "and N more"


def listener(quiet: bool) -> Callable[[object, list[str]], None]:
    """The fsutil listener of one command: prints each line at once (so a long command shows
    what it has done so far), or nothing with `quiet`."""

    def said(about: object, paths: list[str]) -> None:
        if not quiet:  # with standard error closed, the outputs are written anyway
            tell(printable(line(about, paths), MAX_LINE))

    return said


def line(about: object, paths: list[str]) -> str:
    """The line that names `paths`, written as one unit, as `about` (a record or a text)."""
    if isinstance(about, dict) and _named(about) == "ANALYSIS":
        return _report(about, paths)
    what = describe(about) if isinstance(about, dict) else str(about)
    return f"{what} -> {where(paths)}" if paths else what


def describe(record: dict) -> str:
    """An artifact record in a few words: what it is and its counts."""
    describer = DESCRIBERS.get(_named(record))  # type: ignore[arg-type]
    if describer is None:
        return str(record.get("kind")).removeprefix("afbench ")
    return describer(record)


def _named(record: dict) -> str | None:
    """The record's kind by its name in afbench.kinds ("CATALOG"), or None."""
    found = kinds.lookup(str(record.get("kind")))
    return found[0] if found else None


def where(paths: list[str]) -> str:
    """One path as given; several under one folder as "a, b, c in DIR" (each relative to it),
    or "N files in DIR" when there are more than MAX_NAMED; else each as given."""
    if len(paths) < 2:
        return _listed(paths)
    try:
        folder = os.path.commonpath([os.path.dirname(p) for p in paths])
    except ValueError:  # absolute and relative paths mixed
        return _listed(paths)
    if len(paths) > MAX_NAMED:
        return f"{len(paths):,} files in {folder or '.'}"
    return f"{_listed([os.path.relpath(p, folder or '.') for p in paths])} in {folder or '.'}"


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_NAMED])
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")


def _n(count: object, one: str, many: str | None = None) -> str:
    """'1 task', '1,155 obligations'."""
    if not isinstance(count, int):
        return f"{count} {many or one + 's'}"
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def _usd(value: object) -> str:
    return "none" if value is None else f"${value:,.2f}"


# --- one describer per artifact kind, by its name in afbench.kinds (a test holds this to the
# declared kinds) ---------------------------------------------------------------------------
def _identity(r: dict) -> str:
    release = r["release"]
    return f"release identity: {release['name']} at {release['revision'][:12]}"


def _receipt(r: dict) -> str:
    skipped = len(r["skipped"])
    also = f" ({skipped} skipped without a pin)" if skipped else ""
    return f"receipt: {_n(len(r['files']), 'file')} verified{also}"


def _verified(r: dict) -> str:
    entry = r["file"]
    return f"verified {entry['key']}: {entry['size']:,} bytes match the pin"


def _catalog(r: dict) -> str:
    counts = r["counts"]
    return (
        f"catalog: {_n(counts['tasks'], 'task')}, {_n(counts['sources'], 'source')}, "
        f"{_n(counts['obligations'], 'obligation')}"
    )


def _selection(r: dict) -> str:
    counts = r["counts"]
    return (
        f"selection {r['name']}: {_n(counts['tasks'], 'task')}, "
        f"{_n(counts['obligations'], 'obligation')}"
    )


def _plan(r: dict) -> str:
    model = f", model {r['model']}" if r.get("model") else ""
    return (
        f"plan: {_n(len(r['tasks']), 'trial')} of agent {r['agent']}{model} on selection "
        f"{r['selection']['name']} (argument vectors, not run)"
    )


def _model_import(r: dict) -> str:
    return (
        f"import {r['model']}: {r['passes']:,} of {r['tasks']:,} passed, "
        f"{_n(r['infrastructure_errors']['count'], 'infrastructure error')}, "
        f"{r['budget_audit']['over_budget_count']:,} over budget"
    )


def _published(published: dict) -> str:
    if not published.get("source"):
        return ""
    differences = len(published["differences"])
    if not differences:
        return "; as published"
    return f"; {_n(differences, 'difference')} from the published figures"


def _comparison(summary: dict) -> str:
    board = summary["leaderboard"]
    best = f", best {board[0]['model']} with {board[0]['passes']:,} passed" if board else ""
    tasks = board[0]["tasks"] if board else 0
    errors = sum(row["infrastructure_errors"] for row in board)
    over = summary["budget_audit"]["over_budget_count"]
    return (
        f"{_n(len(board), 'model')} on {_n(tasks, 'task')} ({summary['source_condition']}, "
        f"budget {_usd(summary['budget_usd'])}){best}; "
        f"{_n(errors, 'infrastructure error')}, {over:,} over budget"
        f"{_published(summary['published'])}"
    )


def _summary(r: dict) -> str:
    return f"comparison: {_comparison(r)}"


def _reference(r: dict) -> str:
    return f"reference: {_comparison(r['summary'])}"


def _verdict(r: dict) -> str:
    return f"verdict for {r['task_id']}: {r['status']} (reward {r['reward']}), {r['reason']}"


def _run(r: dict) -> str:
    configurations = r["configurations"]
    trials = sum(c["attempts"]["total"] for c in configurations)
    selection = r["selection"]
    return (
        f"run {r['run']}: {_n(len(configurations), 'configuration')}, {_n(trials, 'trial')} "
        f"of selection {selection['name']} ({_n(selection['tasks'], 'task')})"
    )


def _trial(r: dict) -> str:
    how = f"refused ({r['refused']})" if r.get("refused") else r["action"]
    return f"trial {r['task_id']} attempt {r['attempt']}: {how}, outcome {r['outcome']}"


def _ledger(r: dict) -> str:
    refused = f", {r['refused']:,} refused at the ceiling" if r["refused"] else ""
    return (
        f"cost ledger: {_n(len(r['trials']), 'trial')}, {_usd(r['spent_usd'])} spent "
        f"(ceiling {_usd(r['ceiling_usd'])}){refused}"
    )


def _checksums(r: dict) -> str:
    return f"task checksums of {r['selection']['name']}: {_n(len(r['tasks']), 'task')} exported"


def _digests(r: dict) -> str:
    what = "with each exported task's parts" if r["export"]["exported"] else "catalog rows only"
    return f"task digests: {_n(len(r['tasks']), 'task')}, {what}"


def _diff(r: dict) -> str:
    counts = ", ".join(f"{n} {kind}" for kind, n in r["counts"].items() if n)
    flagged = f"; {_n(len(r['flagged']), 'declared version')} flagged" if r["flagged"] else ""
    return (
        f"release diff {r['previous']['revision'][:12]} -> {r['current']['revision'][:12]}: "
        f"{counts}{flagged}"
    )


def _upgrade(r: dict) -> str:
    actions = ", ".join(f"{n} {action}" for action, n in r["counts"].items())
    return f"upgrade plan: {actions}; {r['cost']['line']}"


def _cross_revision(r: dict) -> str:
    pairs = _n(len(r["comparisons"]), "comparison")
    if r["comparable"] is None:  # two results of one revision
        return f"comparisons at {r['current_revision'][:12]}: {pairs}"
    return (
        f"comparisons {r['previous_revision'][:12]} -> {r['current_revision'][:12]}: {pairs} "
        f"on the {_n(r['comparable']['tasks'], 'unchanged task')}"
    )


def _manifest(r: dict) -> str:
    return f"artifact manifest: {_n(len(r['artifacts']), 'artifact')} with their SHA-256"


def _audit(r: dict) -> str:
    counts = r["counts"]
    if r["held"]:
        return f"audit: all {_n(counts['checks'], 'check')} held"
    return f"audit: {counts['failed']} of {_n(counts['checks'], 'check')} failed"


def _discovery(r: dict) -> str:
    files = r["files"]
    found = sum(entry["found_path"] is not None for entry in files)
    differ = sum(entry.get("pin") == "DIFFERS" for entry in files)
    extra = len(r["unconfigured_results"])
    return (
        f"discovery at {r['revision'][:12]}: {found} of {_n(len(files), 'configured file')} "
        f"found, {differ} pin(s) differ, {extra} results file(s) not in config (review the "
        "fragment, then merge it into config)"
    )


def _power(r: dict) -> str:
    tasks = "no number of tasks" if r["tasks"] is None else _n(r["tasks"], "task")
    return f"power plan: {r['question']}, {tasks}"


def _analysis_plan(r: dict) -> str:
    primary = r["primary_comparison"]
    return (
        f"analysis plan: {primary['a']} against {primary['b']} on {primary['selection']}, "
        f"{r['stopping_rule']['kind']}, horizon {_n(r['stopping_rule']['horizon'], 'task')}, "
        f"sealed {r['sealed_sha256'][:12]}"
    )


def _run_plan(r: dict) -> str:
    return (
        f"run plan: {r['configuration']['label']} on {r['selection']['name']} "
        f"({_n(r['selection']['tasks'], 'task')}), ceiling {_usd(r['money']['ceiling_usd'])}, "
        f"sealed {r['sealed_sha256'][:12]}"
    )


def _left_out(r: dict) -> str:
    excluded = len(r["excluded_tasks"])
    return f" ({_n(excluded, 'task')} left out)" if excluded else ""


def _sequential_decision(r: dict) -> str:
    return (
        f"sequential decision: {r['decision']} after {_n(r['tasks_counted'], 'task')}"
        + _left_out(r)
    )


def _sequential_run(r: dict) -> str:
    where = f"{r['decision']} after {_n(r['tasks_counted'], 'task')}{_left_out(r)}"
    if r["stopped"]:
        return f"sequential run, step {r['step']}: {where}, stopped ({r['stopped_by']})"
    return f"sequential run, step {r['step']}: {where}, next {_n(len(r['next_trials']), 'trial')}"


def _anatomy(r: dict) -> str:
    if r["scope"] == "official":
        failures = sum(m["failures"] for m in r["models"])
        return f"failure anatomy: {_n(failures, 'failed task')} of {_n(len(r['models']), 'model')}"
    failures = sum(c["failures"] for c in r["configurations"])
    return f"failure anatomy of run {r['run']}: {_n(failures, 'task')} not accepted"


def _pass_at_k(r: dict) -> str:
    estimated = sum(bool(c["estimates"]) for c in r["configurations"])
    return (
        f"pass@k of run {r['run']}: {estimated} of "
        f"{_n(len(r['configurations']), 'configuration')} estimated"
    )


def _task_table(r: dict) -> str:
    shown = "difficulties reported" if r["difficulties_reported"] else "difficulties withheld"
    return (
        f"task table: {_n(len(r['tasks']), 'task')} over {_n(len(r['models']), 'model')}, "
        f"{shown}, {r['discriminative']['tasks']:,} discriminative"
    )


def _report(analysis: dict, paths: list[str]) -> str:
    analysis = kinds.ANALYSIS.view(analysis)
    html = next((p for p in paths if p.endswith(".html")), None)
    rest = [os.path.basename(p) for p in paths if p != html and p.endswith(".json")]
    figures = sum(p.endswith(".svg") for p in paths)
    also = rest + ([_n(figures, "figure")] if figures else [])
    runs = len(analysis.local_runs or [])
    counts = f"{_n(len(analysis.leaderboard), 'model')}, {_n(runs, 'local run')}"
    return f"report -> {html or where(paths)} ({counts}; also {', '.join(also) or 'nothing'})"


DESCRIBERS: dict[str, Callable[[dict], str]] = {
    "RELEASE_IDENTITY": _identity,
    "RECEIPT": _receipt,
    "VERIFIED_FILE": _verified,
    "CATALOG": _catalog,
    "SELECTION": _selection,
    "PLAN": _plan,
    "MODEL_IMPORT": _model_import,
    "SUMMARY": _summary,
    "OFFICIAL_REFERENCE": _reference,
    "VERDICT": _verdict,
    "RUN_SUMMARY": _run,
    "TRIAL_RECEIPT": _trial,
    "COST_LEDGER": _ledger,
    "TASK_CHECKSUMS": _checksums,
    "ARTIFACT_MANIFEST": _manifest,
    "AUDIT": _audit,
    "DISCOVERY": _discovery,
    "POWER_PLAN": _power,
    "TASK_DIGESTS": _digests,
    "UPGRADE_DIFF": _diff,
    "UPGRADE_PLAN": _upgrade,
    "CROSS_REVISION": _cross_revision,
    "ANALYSIS_PLAN": _analysis_plan,
    "RUN_PLAN": _run_plan,
    "SEQUENTIAL_DECISION": _sequential_decision,
    "SEQUENTIAL_RUN": _sequential_run,
    "FAILURE_ANATOMY": _anatomy,
    "RUN_FAILURE_ANATOMY": _anatomy,
    "TASK_TABLE": _task_table,
    "PASS_AT_K": _pass_at_k,
}
