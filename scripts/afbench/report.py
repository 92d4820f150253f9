"""The self-contained HTML report: one offline page, every input value escaped."""

from __future__ import annotations

from html import escape

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d2733;
background:#f6f7f9;line-height:1.45}
main{max-width:1240px;margin:0 auto;padding:1.5rem}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.2rem;margin-top:2rem;border-bottom:2px solid
#dfe3e8;padding-bottom:.3rem}
.banner{background:#b3261e;color:#fff;padding:.9rem 1.5rem;font-weight:700;font-size:1.05rem}
.card{background:#fff;border:1px solid #dfe3e8;border-radius:8px;padding:1rem 1.2rem;
margin:1rem 0;overflow-x:auto}
table{border-collapse:collapse;font-size:.85rem;width:100%;font-variant-numeric:tabular-nums}
th,td{padding:.3rem .5rem;border-bottom:1px solid #eef0f3;text-align:right;white-space:nowrap}
th{background:#f0f2f5;white-space:normal;overflow-wrap:break-word}
td.t{white-space:normal;overflow-wrap:break-word}
th:first-child,td:first-child,.t{text-align:left}
:is(.leaderboard,.published,.cost) td:first-child{min-width:14em}
table.sources,table.runs{font-size:.8rem}.sources :is(th,td),.runs :is(th,td){padding:.3rem .35rem}
th[title]{text-decoration:underline dotted;cursor:help}
tr.reasons td{white-space:normal;text-align:left;color:#7a1d12;font-size:.8rem;padding-top:0}
details{margin:.6rem 0}summary{cursor:pointer;color:#1f5f8b;font-weight:600}
.note{color:#56606b;font-size:.85rem}.apart{border-left:5px solid #e0a800}
.sig{font-weight:700;color:#1f5f8b}.mismatch{background:#7a1d12}.mismatch ul{margin:.3rem 0 0}
.cite{background:#eef4f9;border-left:5px solid #1f5f8b;padding:.5rem .8rem}
.mono{font-family:ui-monospace,monospace;font-size:.78rem}
figure{margin:0}svg{max-width:100%;height:auto}
"""


def _range(low: str, high: str, between: str = "–") -> str:
    return f"{low} {between} {high}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _usd(x: float | None) -> str:
    return "—" if x is None else f"{x:,.2f}"


class Lines(tuple):
    """A cell of several lines (each escaped), e.g. a count above its interval."""


def _cell(value: object, wraps: bool) -> str:
    text = (
        "<br>".join(map(escape, map(str, value)))
        if isinstance(value, Lines)
        else escape(str(value))
    )
    return f'<td class="t">{text}</td>' if wraps else f"<td>{text}</td>"


def _head(h: str | tuple[str, str], wraps: bool) -> str:
    """A header cell; (short, full) is shown short with the full text on hover."""
    cls = ' class="t"' if wraps else ""
    if isinstance(h, tuple):
        return f'<th{cls} title="{escape(h[1])}">{escape(h[0])}</th>'
    return f"<th{cls}>{escape(h)}</th>"


def _table(
    header: list[str | tuple[str, str]],
    rows: list[list[object]],
    cls: str = "",
    notes: list[str | None] | None = None,
    wrap: tuple[int, ...] = (0,),
) -> str:
    """A table, every cell escaped. Numbers stay on one line; the columns in `wrap` (labels,
    names, explanations) wrap, so the table fits its card. `notes[i]`, when given, is a line
    of its own across the table under row i (a row's long explanation)."""
    head = "".join(_head(h, k in wrap) for k, h in enumerate(header))
    body = []
    for i, row in enumerate(rows):
        body.append("<tr>" + "".join(_cell(c, k in wrap) for k, c in enumerate(row)) + "</tr>")
        if notes and notes[i]:
            body.append(
                f'<tr class="reasons"><td colspan="{len(header)}">{escape(notes[i])}</td></tr>'
            )
    return (
        f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def _folded_table(
    header: list[str | tuple[str, str]],
    rows: list[list[object]],
    cls: str,
    shown: int,
    what: str,
    wrap: tuple[int, ...] = (0,),
) -> str:
    """The first `shown` rows as a table, the rest in a second one folded away beneath it."""
    if len(rows) <= shown:
        return _table(header, rows, cls, wrap=wrap)
    rest = len(rows) - shown
    return (
        _table(header, rows[:shown], cls, wrap=wrap)
        + f"<details><summary>The other {rest:,} {escape(what)}</summary>"
        + _table(header, rows[shown:], cls, wrap=wrap)
        + "</details>"
    )


def render(analysis: dict, provenance: dict, figures: dict[str, str]) -> str:
    release = analysis["release"]
    labels = {r["model"]: r["display_name"] for r in analysis["leaderboard"]}
    models = [r["model"] for r in analysis["leaderboard"]]
    conf = analysis["confidence"]
    parts = []
    if release["synthetic"]:
        parts.append(
            '<div class="banner" id="synthetic-banner">SYNTHETIC DEMO DATA — generated '
            "by afbench for testing the pipeline. These are not AutoformBench results; "
            "never cite them.</div>"
        )
    parts.append(published_banner(analysis["published"]))
    parts.append("<main>")
    parts.append(f"<h1>{escape(release['name'])}: results report</h1>")
    parts.append(
        f'<p class="note">Revision <span class="mono">{escape(release["revision"])}'
        f"</span> of {escape(release['repository'])} · condition "
        f"{escape(analysis['source_condition'])} · nominal budget USD "
        f"{analysis['budget_usd']:g} per task. {escape(analysis['note'])}</p>"
    )

    board = analysis["leaderboard"]
    parts.append('<h2 id="leaderboard">Leaderboard (reported results)</h2><div class="card">')
    parts.append(f"<figure>{figures['leaderboard']}</figure>")
    parts.append(leaderboard_table(board, conf))
    methods = analysis["methods"]
    parts.append(
        f'<p class="cite"><strong>{escape(methods["which_to_cite"])}</strong> '
        f"{escape(methods['few_sources'])}</p>"
        f'<p class="note">Wilson: {escape(methods["success_rate_independent"])}. Clustered: '
        f"{escape(methods['success_rate_clustered'])}; design effect = (clustered SE / "
        f"independent SE)², the factor by which the sources' cohesion inflates the variance. "
        f"Tiers (alpha {analysis['alpha']:g}): {escape(methods['tiers'])}; "
        f"★ marks the models the data cannot tell from the leader. Infrastructure errors are "
        f"kept as reported (unsolved) and counted; nothing is dropped; the bounds column "
        f'counts them as successes. Standard errors (analysis.json) per Miller (2024), "Adding '
        f'Error Bars to Evals".</p></div>'
    )
    parts.append(published_section(analysis["published"], board))

    paired = analysis["paired"]
    parts.append('<h2 id="paired">Paired comparisons on the same tasks</h2><div class="card">')
    if paired["pairs"]:
        parts.append(f"<figure>{figures['paired']}</figure>")
    parts.append(
        f'<p class="note">{escape(paired["test"])}; {escape(paired["correction"])}; '
        f"{escape(paired['difference'])}; clustered: {escape(paired['clustered_difference'])}. "
        f"* marks a significant pair after correction; † a pair whose decision the "
        f"infrastructure errors could change (see below).</p>"
    )
    parts.append(pairs_table(paired["pairs"], labels))
    parts.append("</div>")
    parts.append(infrastructure_section(paired, labels))

    cost = analysis["cost_success"]
    parts.append('<h2 id="cost">Cost against success</h2><div class="card">')
    parts.append(f"<figure>{figures['cost_success']}</figure>")
    parts.append(
        _table(
            [
                "model",
                "mean cost / task (USD)",
                "cost / solved task (USD)",
                "total (USD)",
                "success",
                "Pareto frontier",
            ],
            [
                [
                    m["display_name"],
                    _usd(m["mean_cost_usd"]),
                    _usd(m["cost_per_solved_usd"]),
                    _usd(m["total_cost_usd"]),
                    _pct(m["success_rate"]),
                    "yes" if m["on_frontier"] else "",
                ]
                for m in cost["models"]
            ],
            "cost",
        )
    )
    parts.append(
        '<p class="note">Reported costs are shown as given, never recomputed with '
        "current prices, capped or removed.</p></div>"
    )

    audit = analysis["budget_audit"]
    parts.append('<h2 id="budget">Budget audit</h2><div class="card">')
    parts.append(
        f"<p>{audit['over_budget_count']} record(s) above the USD "
        f"{audit['budget_usd']:g} budget. {escape(audit['note'])}</p>"
    )
    if audit["over_budget"]:
        parts.append(
            _folded_table(
                ["model", "task", "cost (USD)", "excess (USD)"],
                [
                    [
                        labels.get(r["source"], r["source"]),
                        r["task_id"],
                        _usd(r["cost_usd"]),
                        _usd(r["excess_usd"]),
                    ]
                    for r in audit["over_budget"]
                ],
                "budget",
                ROWS_SHOWN,
                "records above the budget",
                wrap=(0, 1),
            )
        )
    parts.append("</div>")

    sources = analysis["per_source"]
    parts.append('<h2 id="sources">Results per source</h2><div class="card">')
    parts.append(f"<figure>{figures['per_source']}</figure>")
    parts.append(
        f'<p class="note">Passes per source, with the {conf:.0%} Wilson interval of the '
        f"source's success rate ({escape(analysis['methods']['per_source'])}).</p>"
    )
    parts.append(sources_tables(sources, models, labels))
    parts.append("</div>")

    parts.append(
        '<h2 id="local-runs">Local runs (source-free, unattested; kept apart)</h2>'
        '<div class="card apart">'
    )
    parts.append(local_runs_section(analysis["local_runs"]))
    parts.append("</div>")
    if analysis.get("cost_ledger"):
        parts.append(
            '<h2 id="cost-ledger">Cost ledger of the executed trials</h2><div class="card">'
        )
        parts.append(cost_ledger_section(analysis["cost_ledger"]))
        parts.append("</div>")

    parts.append('<h2 id="provenance">Provenance</h2><div class="card">')
    parts.append(
        _folded_table(
            ["input file", "pinned SHA-256", "verified"],
            [
                [
                    f["path"],
                    f["expected_sha256"],
                    "yes" if f["expected_sha256"] == f["actual_sha256"] else "NO",
                ]
                for f in provenance["files"]
            ],
            "provenance mono",
            ROWS_SHOWN,
            "input files",
        )
    )
    parts.append(
        _table(
            ["item", "value"],
            [
                ["revision", release["revision"]],
                [
                    "report settings digest (SHA-256; the artifact manifest has the whole "
                    "config's)",
                    provenance["config_digest"],
                ],
                *[[k, v] for k, v in provenance["versions"].items()],
                [
                    "Lean / Mathlib / Harbor",
                    f"{release['lean']} / {release['mathlib']} / {release['harbor']}",
                ],
            ],
            "mono",
            wrap=(0, 1),
        )
    )
    parts.append(f'<p class="note">{escape(analysis["license"])}</p></div></main>')
    title = escape(f"{release['name']} report")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title><style>{CSS}</style></head><body>"
        + "".join(parts)
        + "</body></html>\n"
    )


def sources_tables(sources: list[dict], models: list[str], labels: dict[str, str]) -> str:
    """Passes per source and model: SOURCE_MODELS model columns to a table, so each fits its
    card; the tables past the first are folded beneath it."""
    groups = [models[i : i + SOURCE_MODELS] for i in range(0, len(models), SOURCE_MODELS)]
    tables = [
        _table(
            ["source", "title", "tasks", *[labels[m] for m in group]],
            [
                [
                    s["source_id"],
                    s["title"],
                    s["tasks"],
                    *[_source_cell(s["passes"][m], s["wilson"][m]) for m in group],
                ]
                for s in sources
            ],
            "sources",
            wrap=(0, 1),
        )
        for group in groups
    ]
    if len(tables) == 1:
        return tables[0]
    rest = len(models) - len(groups[0])
    return (
        tables[0]
        + f"<details><summary>The other {rest} models, {SOURCE_MODELS} to a table</summary>"
        + "".join(tables[1:])
        + "</details>"
    )


def _source_cell(passes: int, interval: dict | None) -> str | Lines:
    """The passes, and beneath them the interval of the source's success rate."""
    if interval is None:
        return str(passes)
    return Lines((passes, f"{100 * interval['low']:.0f}–{100 * interval['high']:.0f}%"))


def _design_effect(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _published_cell(row: dict) -> str:
    if row["published_passes"] is None:
        return "not published"
    if row["matches_published"]:
        return "matches the authors' leaderboard"
    difference = row["passes"] - row["published_passes"]
    return f"DIFFERS: published {row['published_passes']} ({difference:+d})"


def leaderboard_table(board: list[dict], conf: float) -> str:
    from .analysis import letters_text

    tasks = sorted({r["tasks"] for r in board})
    return _table(
        [
            "model",
            "tier",
            f"passes (of {', '.join(map(str, tasks))})",
            "success",
            f"{conf:.0%} Wilson",
            f"{conf:.0%} clustered (sources)",
            "design effect",
            "infra. errors: bounds",
            "over budget",
            "authors' count",
        ],
        [
            [
                r["display_name"],
                letters_text(r["letters"]) + (" ★" if r["leader_tier"] else ""),
                r["passes"],
                _pct(r["success_rate"]),
                _range(_pct(r["wilson_low"]), _pct(r["wilson_high"])),
                _range(_pct(r["clustered"]["low"]), _pct(r["clustered"]["high"])),
                _design_effect(r["clustered"]["design_effect"]),
                f"{r['infrastructure_errors']}: "
                + _range(str(r["passes"]), str(r["infrastructure_bounds"]["passes_high"])),
                r["over_budget_records"],
                _published_short(r),
            ]
            for r in board
        ],
        "leaderboard",
        wrap=(0, 1, 9),
    )


def _published_short(row: dict) -> str:
    if row["published_passes"] is None:
        return "—"
    if row["matches_published"]:
        return "matches"
    return f"DIFFERS ({row['passes'] - row['published_passes']:+d})"


PAIRS_SHOWN = 36  # every pair of nine models; beyond, the rest are folded beneath
ROWS_SHOWN = 40  # of a list of records (over budget, marked pairs, trials) before it folds
SOURCE_MODELS = 9  # model columns per table of results per source


def pairs_table(pairs: list[dict], labels: dict[str, str]) -> str:
    return _folded_table(
        [
            "A",
            "B",
            "both",
            "only A",
            "only B",
            "neither",
            "A − B",
            "interval",
            "clustered interval",
            "design effect",
            "p (exact)",
            "p (Holm)",
        ],
        [
            [
                labels[p["a"]],
                labels[p["b"]],
                p["both"],
                p["only_a"],
                p["only_b"],
                p["neither"],
                f"{100 * p['difference_difference']:+.1f} pp",
                _range(
                    f"{100 * p['difference_low']:+.1f}", f"{100 * p['difference_high']:+.1f}", "…"
                ),
                _range(
                    f"{100 * p['clustered']['low']:+.1f}",
                    f"{100 * p['clustered']['high']:+.1f}",
                    "…",
                ),
                _design_effect(p["clustered"]["design_effect"]),
                f"{p['p_exact']:.3g}{' †' if p['infrastructure']['marked'] else ''}",
                f"{p['p_holm']:.3g}{' *' if p['significant'] else ''}",
            ]
            for p in pairs
        ],
        "pairs",
        PAIRS_SHOWN,
        "pairs (all pairs are in analysis.json)",
        wrap=(0, 1),
    )


def infrastructure_section(paired: dict, labels: dict[str, str]) -> str:
    """The pairs whose decision could flip within their models' infrastructure errors."""
    marked = [p for p in paired["pairs"] if p["infrastructure"]["marked"]]
    head = (
        '<h2 id="infrastructure">Infrastructure errors, bounded</h2><div class="card">'
        f'<p class="note">{escape(paired["infrastructure"])}. The reported counts stay as the '
        "authors reported them (an error counted as unsolved).</p>"
    )
    if not marked:
        return (
            head + "<p>No pair's decision could change within its infrastructure errors.</p></div>"
        )
    rows = [
        [
            labels[p["a"]],
            labels[p["b"]],
            f"{p['p_exact']:.3g}",
            f"{p['infrastructure']['favour_a']['p_exact']:.3g}",
            f"{p['infrastructure']['favour_b']['p_exact']:.3g}",
        ]
        for p in marked
    ]
    return (
        head
        + f"<p><strong>{len(marked)} pair(s) marked †</strong>: their unadjusted exact McNemar "
        "p crosses alpha when the errors are resolved one way or the other.</p>"
        + _folded_table(
            ["A", "B", "p reported", "p, errors in favour of A", "p, errors in favour of B"],
            rows,
            "infrastructure",
            ROWS_SHOWN,
            "marked pairs",
            wrap=(0, 1),
        )
        + "</div>"
    )


def published_banner(check: dict) -> str:
    """A loud banner when an import differs from what the authors published."""
    if check["matches"] is not False:
        return ""
    items = "".join(f"<li>{escape(d)}</li>" for d in check["differences"])
    return (
        '<div class="banner mismatch" id="published-mismatch">DOES NOT MATCH THE AUTHORS\' '
        f"PUBLISHED FIGURES ({escape(str(check['source']))}):<ul>{items}</ul></div>"
    )


def published_section(check: dict, board: list[dict]) -> str:
    """Each import against the authors' published figures, per model."""
    parts = ['<h2 id="published">Checked against the authors\' published figures</h2>']
    parts.append(f'<div class="card{" apart" if check["matches"] is False else ""}">')
    if check["source"] is None:
        parts.append('<p class="note">Config records no published figures for this release.</p>')
        return "".join(parts) + "</div>"
    parts.append(f'<p class="note">Source: {escape(check["source"])}. {escape(check["note"])}.</p>')
    parts.append(
        _table(
            ["model", "imported passes", "published passes", "result"],
            [
                [
                    r["display_name"],
                    r["passes"],
                    r["published_passes"] if r["published_passes"] is not None else "—",
                    _published_cell(r),
                ]
                for r in board
            ],
            "published",
            wrap=(0, 3),
        )
    )
    facts = []
    rows = check["task_rows"]
    if rows is not None:
        if rows["matches"] is None:
            facts.append(f"Task rows: published {rows['published']:,}; {rows['note']}.")
        else:
            verdict = "matches" if rows["matches"] else "DIFFERS"
            facts.append(
                f"Task rows across the {len(rows['models'])} published models' files: imported "
                f"{rows['imported']:,}, published {rows['published']:,}: {verdict}."
            )
    for model, over in check["over_budget"].items():
        verdict = "matches" if over["matches"] else "DIFFERS"
        facts.append(
            f"Costs above the budget in {model}'s file: imported USD "
            f"{', '.join(f'{x:g}' for x in over['imported_usd']) or 'none'}, published USD "
            f"{', '.join(f'{x:g}' for x in over['published_usd']) or 'none'}: {verdict}."
        )
    parts.extend(f"<p>{escape(fact)}</p>" for fact in facts)
    return "".join(parts) + "</div>"


def _bounds(bounds: dict) -> str | Lines:
    upper = bounds["upper"]
    if upper is None:
        withheld = bounds.get("upper_withheld") or "unknown"
        return Lines((_range(_pct(bounds["lower"]), "?"), f"(upper withheld: {withheld})"))
    return _range(_pct(bounds["lower"]), _pct(upper))


def _protocol(row: dict) -> str:
    if row.get("conformant") is True:
        return "conformant"
    if row.get("conformant") is False:
        return "NOT CONFORMANT"
    return "not checked"


def _protocol_reasons(row: dict) -> str | None:
    """Why a configuration is not conformant: a line of its own under its row."""
    if row.get("conformant") is not False:
        return None
    return "NOT CONFORMANT: " + "; ".join(row["conformance_reasons"])


def _configuration(row: dict) -> str:
    return ("NOT CONFORMANT ⚠ " if row.get("conformant") is False else "") + row["configuration"]


def cost_ledger_section(ledger: dict) -> str:
    """What the executed trials cost beside the ceiling; every value escaped by `_table`."""
    ceiling = ledger["ceiling_usd"]
    shown = "none (model-free agents only)" if ceiling is None else f"USD {ceiling:,.2f}"
    stopped = (
        f" <strong>Stopped at the ceiling: {ledger['refused']} trial(s) not started.</strong>"
        if ledger["stopped"]
        else ""
    )
    return (
        f'<p id="ledger-total">Spent USD {ledger["spent_usd"]:,.2f} of the ceiling '
        f"{escape(shown)} (execute.max_cost_usd).{stopped}</p>"
        f'<p class="note">{escape(ledger["note"])}</p>'
        + _folded_table(
            ["trial", "task", "attempt", "agent", "status", "cost (USD)", "worst case (USD)"],
            [
                [
                    t["job_name"],
                    t["task_id"],
                    t["attempt"],
                    t["agent"] + (f" {t['model']}" if t["model"] else ""),
                    t["status"],
                    _usd(t["cost_usd"]),
                    _usd(t["worst_case_usd"]),
                ]
                for t in ledger["trials"]
            ],
            "ledger",
            ROWS_SHOWN,
            "trials",
            wrap=(0, 1, 3, 4),
        )
    )


def local_runs_section(rows: list[dict]) -> str:
    """One line per (run, configuration); every value from input is escaped by `_table`."""
    if not rows:
        return (
            '<p class="note">No local runs configured (see <code>runs:</code> in the config).</p>'
        )
    outcomes = ("accepted", "rejected", "unverified", "error", "incomplete", "missing")
    return (
        '<p class="note">Never comparable to the source-present leaderboard above. One line per '
        "run and configuration (agent and version, model, settings): configurations are never "
        "pooled. Errors have no reward; unverified tasks (verification disabled) are counted "
        "apart from errors and never as successes; without a decided outcome for every task "
        "only bounds are given. A configuration whose trials left the release's protocol "
        "(changed timeouts, disabled verification, hints, another environment, a task that is "
        "not the exporter's) is marked NOT CONFORMANT with every reason.</p>"
        + _table(
            [
                "run",
                "configuration",
                "selection",
                "tasks",
                *outcomes,
                "success rate",
                "bounds",
                "protocol",
            ],
            [
                [
                    r["run"],
                    _configuration(r),
                    r["selection"],
                    r["tasks"],
                    *[r["counts"][k] for k in outcomes],
                    _pct(r["success_rate"]),
                    _bounds(r["success_rate_bounds"]),
                    _protocol(r),
                ]
                for r in rows
            ],
            "runs",
            [_protocol_reasons(r) for r in rows],
            wrap=(1, 2, 11, 12),
        )
    )
