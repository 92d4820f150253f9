"""Results that travel: the leaderboard as a paper table (Markdown or LaTeX) and as Every Eval
Ever (EEE 0.3.0) aggregate records, from an artifact folder (found by kind, as afbench.frames
finds them).

A paper table holds one source condition and one budget: its caption names them with the
revision and says the numbers are not comparable to source-free results; a folder holding two
is refused unless one is chosen. The bytes depend only on the analysis (golden files in
tests/fixtures/exports hold it).

An EEE record needs a `score`. A local configuration whose success rate afbench withholds
(bounds only: some task has neither an accepted nor a rejected outcome) is refused with a
message, never written with an invented score; no instance-level records are written, so no
errored trial ever appears as an instance with a score. The records are validated against
EEE 0.3.0's own schema, vendored with its MIT licence in afbench/data/eee-0.3.0 (the
every-eval-ever package needs Python >= 3.12; afbench supports 3.11).
"""

from __future__ import annotations

import json
import os
import re
import time
import unicodedata
from importlib.resources import files
from pathlib import Path

from afbench import __version__
from afbench.core.errors import AfbenchError
from afbench.kinds import ANALYSIS, MODEL_IMPORT, RUN_SUMMARY

PAPER_FORMATS = {"markdown": "md", "latex": "tex"}
EEE_VERSION = "0.3.0"
EEE_SCHEMA = "eee-0.3.0/eval.schema.json"
NOT_COMPARABLE = "Not comparable to source-free results."


# --- the one accessor of the analysis' clustered interval -----------------------------------
def clustered_interval(row: dict) -> dict:
    """A leaderboard row's clustered interval as the analysis gives it (low, high, standard
    error, method): the one place exports read it, so a change of the analysis' fields changes
    only this."""
    clustered = row["clustered"]
    return {
        "low": clustered["low"],
        "high": clustered["high"],
        "standard_error": clustered["se_clustered"],
        "method": clustered["method"],
    }


# --- reading ----------------------------------------------------------------------------------
def _analyses(root, conditions: list[str], budgets: list[float]):
    """The folder's report analyses, narrowed to the conditions and budgets asked for."""
    from afbench.frames import _by_condition, _folder

    folder = _folder(root)
    found = folder.need(ANALYSIS, "report analysis", "report")
    analyses = _by_condition(folder, found, "report analyses")
    chosen = [
        (key, artifact, data)
        for key, artifact, data in analyses
        if (not conditions or key[0] in conditions) and (not budgets or key[1] in budgets)
    ]
    if not chosen:
        raise AfbenchError(
            "no report analysis of the condition and budget asked for in this folder",
            file=str(folder.root),
            expected=", ".join(f"{c} at USD {b:g}" for (c, b), _, _ in analyses),
            found=f"conditions {conditions or 'any'}, budgets {budgets or 'any'}",
        )
    return folder, chosen


def one_condition(root, conditions: list[str], budgets: list[float]) -> tuple:
    """The one analysis a paper table is made of: two source conditions (or two budgets) in
    one table are refused, naming them."""
    if len(set(conditions)) > 1:
        raise AfbenchError(
            "two source conditions in one table: their rates are not comparable; make one "
            "table per condition",
            field="--condition",
            expected="one condition",
            found=sorted(set(conditions)),
        )
    folder, chosen = _analyses(root, conditions, budgets)
    if len(chosen) > 1:
        shown = [f"{c} at USD {b:g}" for (c, b), _, _ in chosen]
        raise AfbenchError(
            "the folder holds results of more than one source condition or budget: a table "
            "holds one; choose it with --condition and --budget-usd",
            file=str(folder.root),
            expected="one condition and budget",
            found=shown,
        )
    return chosen[0]


# --- the paper table --------------------------------------------------------------------------
def _rows(analysis: dict) -> list[dict]:
    from afbench.report.page import letters_text

    analysis = ANALYSIS.view(analysis)

    cost = {m["model"]: m for m in analysis.cost_success["models"]}
    rows = []
    for rank, row in enumerate(analysis.leaderboard, start=1):
        interval = clustered_interval(row)
        bounds = row["infrastructure_bounds"]
        over = row["over_budget_records"]
        rows.append(
            {
                "rank": str(rank),
                "model": row["display_name"],
                "tier": letters_text(row["letters"]) + (" ★" if row["leader_tier"] else ""),
                "rate": _pct(row["success_rate"]),
                "interval": f"{_pct(interval['low'])}–{_pct(interval['high'])}",
                "bounds": f"{_pct(bounds['rate'])}–{_pct(bounds['rate_high'])}",
                "cost": f"{cost[row['model']]['mean_cost_usd']:,.2f}",
                "flags": f"{over} over budget" if over else "—",
            }
        )
    return rows


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


HEADER = {
    "rank": "Rank",
    "model": "Model",
    "tier": "Tier",
    "rate": "Success",
    "interval": "{conf} CI (clustered)",
    "bounds": "Infra. bounds",
    "cost": "Mean cost (USD)",
    "flags": "Budget",
}
RIGHT = {"rank", "rate", "interval", "bounds", "cost"}


def caption(analysis: dict) -> str:
    analysis = ANALYSIS.view(analysis)
    release = analysis.release
    first = analysis.leaderboard[0]
    method = clustered_interval(first)["method"]
    synthetic = (
        "SYNTHETIC demo data generated by afbench: never cite. " if release["synthetic"] else ""
    )
    return (
        f"{synthetic}{release['name']}: success rates as the authors reported them, condition "
        f"{analysis.source_condition}, revision {release['revision']} of "
        f"{release['repository']}, nominal budget USD {analysis.budget_usd:g} per task, "
        f"{first['tasks']} tasks. Interval: {analysis.confidence:.0%}, clustered over "
        f"sources ({method}). Tier ({analysis.methods['tiers']}, alpha "
        f"{analysis.alpha:g}): ★ marks the leader's tier. Infra. bounds: infrastructure "
        f"errors counted as failures (as reported) .. as successes. Cost: mean reported cost per "
        f"task. {NOT_COMPARABLE}"
    )


_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible_controls(text: str) -> str:
    """Control and bidi-format characters shown as U+XXXX: a table cell stays one line and a
    right-to-left override in a name cannot reorder the table around it."""
    return "".join(
        f"[U+{ord(c):04X}]"
        if unicodedata.category(c) == "Cc" or _BIDI.fullmatch(c) or c in "\u2028\u2029"
        else c
        for c in text
    )


# what can start an inline construct inside a table cell (a pipe ends the cell; $ opens math
# where the renderer has it; < opens HTML; & opens an entity, so `&#x202E;` would become the
# override itself): backslash-escaped, so names print as typed
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~$&])")


def _markdown_cell(text: str) -> str:
    return _visible_controls(_MARKDOWN_SPECIAL.sub(r"\\\1", text))


_LATEX = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "^": r"\textasciicircum{}",
    "_": r"\_",
    "%": r"\%",
    "~": r"\textasciitilde{}",
    # not special, but the default OT1 font encoding prints them as other glyphs (¡ ¿ —)
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "★": r"$\star$",
    "–": "--",
    "—": "---",
}


def _latex(text: str) -> str:
    return "".join(_LATEX.get(c, c) for c in _visible_controls(text))


def markdown_table(analysis: dict) -> str:
    analysis = ANALYSIS.view(analysis)
    conf = f"{analysis.confidence:.0%}"
    keys = list(HEADER)
    head = [HEADER[k].format(conf=conf) for k in keys]
    lines = [
        f"Table: {_markdown_cell(caption(analysis))}",
        "",
        "| " + " | ".join(_markdown_cell(h) for h in head) + " |",
        "|" + "|".join("---:" if k in RIGHT else "---" for k in keys) + "|",
    ]
    for row in _rows(analysis):
        lines.append("| " + " | ".join(_markdown_cell(row[k]) for k in keys) + " |")
    return "\n".join(lines) + "\n"


def latex_table(analysis: dict) -> str:
    analysis = ANALYSIS.view(analysis)
    conf = f"{analysis.confidence:.0%}"
    keys = list(HEADER)
    label = re.sub(
        r"[^A-Za-z0-9-]", "-", f"{analysis.source_condition}-budget-{analysis.budget_usd:g}"
    )
    lines = [
        "% afbench paper table (needs \\usepackage{booktabs}); written by afbench export",
        "\\begin{table}[t]",
        "\\centering",
        f"\\caption{{{_latex(caption(analysis))}}}",
        f"\\label{{tab:autoformbench-{label}}}",
        "\\begin{tabular}{" + "".join("r" if k in RIGHT else "l" for k in keys) + "}",
        "\\toprule",
        " & ".join(_latex(HEADER[k].format(conf=conf)) for k in keys) + " \\\\",
        "\\midrule",
    ]
    for row in _rows(analysis):
        lines.append(" & ".join(_latex(row[k]) for k in keys) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
    return "\n".join(lines) + "\n"


def paper_table(root, fmt: str, conditions: list[str], budgets: list[float]) -> tuple[str, str]:
    """(file name, text) of the paper table of the one condition and budget chosen."""
    (condition, budget), _, analysis = one_condition(root, conditions, budgets)
    text = markdown_table(analysis) if fmt == "markdown" else latex_table(analysis)
    name = f"leaderboard-{condition}-budget-{budget:g}.{PAPER_FORMATS[fmt]}"
    return name, text


# --- Every Eval Ever ----------------------------------------------------------------------------
def eee_schema() -> dict:
    return json.loads((files("afbench") / "data" / EEE_SCHEMA).read_text(encoding="utf-8"))


def validate_eee(record: dict, where: str) -> None:
    """Refuse a record that EEE 0.3.0's schema does not accept (naming the first error)."""
    from jsonschema import Draft7Validator

    errors = sorted(
        Draft7Validator(eee_schema()).iter_errors(record), key=lambda e: list(map(str, e.path))
    )
    if errors:
        error = errors[0]
        raise AfbenchError(
            f"the EEE record is not valid under EEE {EEE_VERSION}'s schema: {error.message}",
            file=where,
            field="/".join(map(str, error.absolute_path)) or None,
        )


def retrieved_at(given: int | None) -> int:
    """When the records are made, in Unix seconds: --retrieved-at, else SOURCE_DATE_EPOCH (the
    reproducible-builds convention), else now."""
    if given is not None:
        return given
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None:
        if not epoch.isdigit():
            raise AfbenchError(
                "SOURCE_DATE_EPOCH is not a whole number of seconds",
                field="SOURCE_DATE_EPOCH",
                expected="a whole number of seconds since 1970",
                found=epoch,
            )
        return int(epoch)
    return int(time.time())


def _strings(values: dict) -> dict[str, str]:
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in values.items()}


def _metric(condition: str, budget: float, tasks: int, description: str) -> dict:
    return {
        "evaluation_description": description,
        "metric_id": "autoformbench.success_rate",
        "metric_name": "success rate",
        "metric_kind": "pass_rate",
        "metric_unit": "proportion",
        "lower_is_better": False,
        "score_type": "continuous",
        "min_score": 0,
        "max_score": 1,
        "additional_details": _strings(
            {
                "source_condition": condition,
                "budget_usd": budget,
                "tasks": tasks,
                "comparable": NOT_COMPARABLE
                if condition == "source-present"
                else "Not comparable to source-present results.",
            }
        ),
    }


def _source_data(release: dict, tasks: int) -> dict:
    return {
        "dataset_name": "AutoformBench",
        "source_type": "other",
        "additional_details": _strings(
            {
                "release": release["name"],
                "repository": release["repository"],
                "revision": release["revision"],
                "tasks": tasks,
                "synthetic": release["synthetic"],
            }
        ),
    }


def _model_info(name: str, model_id: str, details: dict) -> dict:
    return {
        "name": name,
        "id": model_id,
        "additional_details": {
            "deployment_type": "unknown",
            "model_availability": "unknown",
            **_strings(details),
        },
    }


def official_record(analysis: dict, protocol: dict, row: dict, stamp: int) -> dict:
    """One official model's aggregate record: documentation (the authors' reported numbers)."""
    from afbench.report.page import letters_text

    analysis = ANALYSIS.view(analysis)

    release = analysis.release
    condition, budget = analysis.source_condition, analysis.budget_usd
    interval = clustered_interval(row)
    cost = {m["model"]: m for m in analysis.cost_success["models"]}[row["model"]]
    return {
        "schema_version": EEE_VERSION,
        "evaluation_id": f"autoformbench/{row['model']}/{stamp}",
        "retrieved_timestamp": str(stamp),
        "source_metadata": {
            "source_name": f"{release['name']}: official per-model results",
            "source_type": "documentation",
            "source_organization_name": release["repository"].split("/")[0],
            "evaluator_relationship": "other",
            "additional_details": _strings(
                {
                    "note": analysis.note,
                    "license": analysis.license,
                    "converted_by": f"afbench {__version__}",
                }
            ),
        },
        "eval_library": {
            "name": protocol.get("scaffold", "unknown"),
            "version": "unknown",
            "additional_details": _strings(
                {k: protocol[k] for k in ("tools", "stopping_policy") if k in protocol}
            ),
        },
        "model_info": _model_info(
            row["display_name"], row["model"], {"afbench_slug": row["model"]}
        ),
        "evaluation_results": [
            {
                "evaluation_result_id": "success_rate",
                "evaluation_name": f"AutoformBench ({condition}, budget USD {budget:g})",
                "source_data": _source_data(release, row["tasks"]),
                "metric_config": _metric(
                    condition,
                    budget,
                    row["tasks"],
                    "share of the tasks solved (every proof obligation accepted), as the "
                    "authors reported it",
                ),
                "score_details": {
                    "score": row["success_rate"],
                    "details": _strings(
                        {
                            "passes": row["passes"],
                            "tasks": row["tasks"],
                            "letters": letters_text(row["letters"]),
                            "leader_tier": row["leader_tier"],
                            "infrastructure_errors": row["infrastructure_errors"],
                            "success_rate_errors_as_successes": row["infrastructure_bounds"][
                                "rate_high"
                            ],
                            "over_budget_records": row["over_budget_records"],
                            "mean_cost_usd": cost["mean_cost_usd"],
                        }
                    ),
                    "uncertainty": {
                        "standard_error": {
                            "value": interval["standard_error"],
                            "method": interval["method"],
                        },
                        "confidence_interval": {
                            "lower": interval["low"],
                            "upper": interval["high"],
                            "confidence_level": analysis.confidence,
                            "method": interval["method"],
                        },
                        "num_samples": row["tasks"],
                    },
                },
            }
        ],
    }


WILSON_LOCAL = (
    "Wilson score interval, tasks taken as independent draws (afbench computes no clustered "
    "interval for a local run)"
)


def local_record(row: dict, summary: dict, analysis: dict, stamp: int) -> dict:
    """One local configuration's aggregate record: evaluation_run (your own run). Refused
    when afbench withholds its success rate."""
    analysis = ANALYSIS.view(analysis)
    from afbench.core.stats import wilson_interval

    rate = row["success_rate"]
    if rate is None:
        bounds = row["success_rate_bounds"]
        upper = "withheld" if bounds["upper"] is None else f"{100 * bounds['upper']:.1f}%"
        raise AfbenchError(
            f"run '{row['run']}', configuration '{row['configuration']}': afbench withholds its "
            f"success rate (bounds only, {100 * bounds['lower']:.1f}% .. {upper}: some task has "
            "neither an accepted nor a rejected outcome), and an EEE record needs a score; "
            "refusing to invent one (leave the run out, or decide its tasks)",
            field="--run",
            expected="a run whose every task was accepted or rejected",
            found=row["run"],
        )
    config = next(
        c for c in summary["configurations"] if c["configuration"] == row["configuration"]
    )
    release = summary["release"]
    tasks = row["tasks"]
    passes = row["counts"]["accepted"]
    low, high = wilson_interval(passes, tasks, analysis.confidence)
    budget = config["budget_audit"]["budget_usd"]
    model = config.get("model") or None
    agent = config.get("agent") or None
    verifier = config.get("verifier") or {}
    name = model or (f"agent {agent}" if agent else f"verifier {verifier.get('name', 'unknown')}")
    harbor = summary["input_kind"] == "harbor"
    return {
        "schema_version": EEE_VERSION,
        "evaluation_id": f"autoformbench/{summary['run']}/{_slug(row['configuration'])}/{stamp}",
        "retrieved_timestamp": str(stamp),
        "source_metadata": {
            "source_name": f"local run {summary['run']} ({summary['input_kind']})",
            "source_type": "evaluation_run",
            "source_organization_name": "unknown",
            "evaluator_relationship": "other",
            "additional_details": _strings(
                {
                    "note": summary["note"],
                    "configuration": row["configuration"],
                    "conformant": row["conformant"],
                    "selection": summary["selection"]["name"],
                    "selection_sha256": summary["selection"]["selection_sha256"],
                    "converted_by": f"afbench {__version__}",
                }
            ),
        },
        "eval_library": {
            "name": "harbor" if harbor else str(verifier.get("name", "unknown")),
            "version": str(release["harbor"])
            if harbor
            else str(verifier.get("version", "unknown")),
        },
        "model_info": _model_info(
            name,
            model or f"unknown/{_slug(name)}",
            {"agent": agent or "none recorded", "agent_version": config.get("agent_version") or ""},
        ),
        "evaluation_results": [
            {
                "evaluation_result_id": "success_rate",
                "evaluation_name": f"AutoformBench (source-free local run, budget USD {budget:g})",
                "source_data": _source_data(release, tasks),
                "metric_config": _metric(
                    "source-free",
                    budget,
                    tasks,
                    f"share of the {tasks} selected tasks accepted (a task is accepted if any "
                    "attempt was); errors are never scored",
                ),
                "score_details": {
                    "score": rate,
                    "details": _strings({**row["counts"], "pass_at_k": row["pass_at_k"]}),
                    "uncertainty": {
                        "confidence_interval": {
                            "lower": low,
                            "upper": high,
                            "confidence_level": analysis.confidence,
                            "method": WILSON_LOCAL,
                        },
                        "num_samples": tasks,
                    },
                },
            }
        ],
    }


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:80] or "x"


def eee_records(root, runs: list[str], stamp: int) -> list[tuple[str, dict]]:
    """(file name, record) for every official model of every analysis in the folder and every
    configuration of the local runs named, each validated against EEE 0.3.0's schema."""
    folder, analyses = _analyses(root, [], [])
    out = []
    for (condition, budget), artifact, analysis in analyses:
        protocol = _protocol(folder, condition, budget)
        for row in ANALYSIS.view(analysis).leaderboard:
            name = f"eee-{condition}-budget-{budget:g}-{row['model']}.json"
            out.append((name, official_record(analysis, protocol, row, stamp), str(artifact.path)))
    if runs:
        local = _local(folder, analyses, runs)
        for index, (row, summary, analysis, where) in enumerate(local, start=1):
            name = f"eee-run-{summary['run']}-{index:02d}.json"
            out.append((name, local_record(row, summary, analysis, stamp), where))
    for _, rec, where in out:
        validate_eee(rec, where)
    return [(name, rec) for name, rec, _ in out]


def _protocol(folder, condition: str, budget: float) -> dict:
    """The scaffold, tools and stopping policy the authors ran under (the comparison requires
    them equal across models), from one model import of this condition and budget."""
    for artifact in folder.of_kind(MODEL_IMPORT):
        data = folder.read(artifact, keep=False)
        if (data.get("source_condition"), data.get("budget_usd")) == (condition, budget):
            return {k: str(data[k]) for k in ("scaffold", "tools", "stopping_policy") if k in data}
    return {}


def _local(folder, analyses, runs: list[str]) -> list[tuple]:
    if len(set(runs)) != len(runs):
        raise AfbenchError("a run is named twice", field="--run", expected="each once", found=runs)
    summaries = {}
    for artifact in folder.of_kind(RUN_SUMMARY):
        data = folder.read(artifact)
        summaries[data["run"]] = data
    missing = [r for r in runs if r not in summaries]
    if missing:
        raise AfbenchError(
            "no local run of this name in the folder",
            file=str(folder.root),
            field="--run",
            expected=sorted(summaries),
            found=missing[0],
        )
    out = []
    for run in runs:
        shown = [
            (row, analysis, str(artifact.path))
            for _, artifact, analysis in analyses
            for row in ANALYSIS.view(analysis).local_runs
            if row["run"] == run
        ]
        if not shown:
            raise AfbenchError(
                f"run '{run}' is not in the folder's report analysis: build the report with it",
                file=str(folder.root),
                field="--run",
            )
        out += [(row, summaries[run], analysis, where) for row, analysis, where in shown]
    return out


def write_exports(
    root,
    output_dir,
    fmt: str,
    conditions: list[str],
    budgets: list[float],
    runs: list[str],
    stamp: int | None,
) -> list[Path]:
    """`afbench export --format markdown|latex|eee`: the files written as one unit, outside
    every results tree."""
    from afbench.core.fsutil import json_bytes, write_outputs
    from afbench.frames import _check_export_folder, _folder

    folder = _folder(root)
    _check_export_folder(folder.root, Path(output_dir))
    if fmt in PAPER_FORMATS:
        if runs:
            raise AfbenchError(
                "a paper table holds the official leaderboard only: local runs are kept apart",
                field="--run",
            )
        name, text = paper_table(folder, fmt, conditions, budgets)
        outputs = [(Path(output_dir) / name, text.encode())]
        about = f"paper table ({fmt}): {name}"
    else:
        if conditions or budgets:
            raise AfbenchError(
                "EEE records cover every condition and budget of the folder (one record each)",
                field="--condition" if conditions else "--budget-usd",
            )
        records = eee_records(folder, runs, retrieved_at(stamp))
        outputs = [(Path(output_dir) / name, json_bytes(rec)) for name, rec in records]
        about = f"EEE {EEE_VERSION} records: {len(records)} validated"
    write_outputs(outputs, about=about)
    return [path for path, _ in outputs]
