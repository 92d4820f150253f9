"""The self-contained HTML report: one offline page, every input value escaped."""

from __future__ import annotations

import hashlib
import re
from html import escape
from html.parser import HTMLParser
from pathlib import Path

from afbench.kinds import ANALYSIS

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
.crossrev td:nth-child(-n+2){min-width:11em}
table.sources,table.runs{font-size:.8rem}.sources :is(th,td),.runs :is(th,td){padding:.3rem .35rem}
th[title]{text-decoration:underline dotted;cursor:help}
tr.reasons td{white-space:normal;text-align:left;color:#7a1d12;font-size:.8rem;padding-top:0}
details{margin:.6rem 0}summary{cursor:pointer;color:#1f5f8b;font-weight:600}
.note{color:#56606b;font-size:.85rem}.apart{border-left:5px solid #e0a800}
.sig{font-weight:700;color:#1f5f8b}.mismatch{background:#7a1d12}.mismatch ul{margin:.3rem 0 0}
.cite{background:#eef4f9;border-left:5px solid #1f5f8b;padding:.5rem .8rem}
.mono{font-family:ui-monospace,monospace;font-size:.78rem}
figure{margin:0}svg{max-width:100%;height:auto}
bdi{unicode-bidi:isolate}.fold>summary{font-weight:600}
"""


def _range(low: str, high: str, between: str = "–") -> str:
    return f"{low} {between} {high}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _usd(x: float | None) -> str:
    return "—" if x is None else f"{x:,.2f}"


class Lines(tuple):
    """A cell of several lines (each escaped), e.g. a count above its interval."""


class Html(str):
    """A cell's text already made HTML (its parts from input escaped and isolated)."""


def bdi(text: object) -> str:
    """Text from input, escaped and bidi-isolated: a right-to-left mark or override in a name
    cannot reorder the text around it (a table cell alone is already its own paragraph)."""
    return f"<bdi>{escape(str(text))}</bdi>"


def _cell(value: object, wraps: bool) -> str:
    text = (
        "<br>".join(map(escape, map(str, value)))
        if isinstance(value, Lines)
        else value
        if isinstance(value, Html)
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


def render(
    analysis: dict, provenance: dict, figures: dict[str, str], pass_at_k: list[dict] | tuple = ()
) -> str:
    """The report's HTML; `pass_at_k`: the local runs' pass@k records (afbench.runs.passk)."""
    analysis = ANALYSIS.view(analysis)
    release = analysis.release
    labels = {r["model"]: r["display_name"] for r in analysis.leaderboard}
    models = [r["model"] for r in analysis.leaderboard]
    conf = analysis.confidence
    parts = []
    if release["synthetic"]:
        parts.append(
            '<div class="banner" id="synthetic-banner">SYNTHETIC DEMO DATA — generated '
            "by afbench for testing the pipeline. These are not AutoformBench results; "
            "never cite them.</div>"
        )
    parts.append(published_banner(analysis.published))
    parts.append("<main>")
    parts.append(f"<h1>{bdi(release['name'])}: results report</h1>")
    parts.append(
        f'<p class="note">Revision <span class="mono">{escape(release["revision"])}'
        f"</span> of {bdi(release['repository'])} · condition "
        f"{escape(analysis.source_condition)} · nominal budget USD "
        f"{analysis.budget_usd:g} per task. {escape(analysis.note)}</p>"
    )

    board = analysis.leaderboard
    methods = analysis.methods
    conventions = methods["conventions"]
    parts.append('<h2 id="leaderboard">Leaderboard (reported results)</h2><div class="card">')
    parts.append(f"<figure>{figures['leaderboard']}</figure>")
    paired = analysis.paired
    parts.append(leaderboard_table(board, conf, conventions, paired["decidable"]))
    parts.append(
        f'<p class="cite"><strong>{escape(methods["which_to_cite"])}</strong> '
        f"{escape(methods['few_sources'])}</p>"
        f'<p class="note">Wilson: {escape(methods["success_rate_independent"])}. Clustered: '
        f"{escape(methods['success_rate_clustered'])}; design effect = (clustered SE / "
        f"independent SE)², the factor by which the sources' cohesion inflates the variance "
        f"({escape(methods['clustered_cr0'])}). Tiers (alpha {analysis.alpha:g}): "
        f"{escape(methods['tiers'])}; ★ marks the models the data cannot tell from the leader. "
        f"{escape(smallest_p_text(paired, analysis.alpha))} "
        f"Infrastructure errors are kept as reported (unsolved) and counted; nothing is "
        f"dropped; the bounds column counts them as successes, and its interval is the union "
        f"of the clustered intervals of the two resolutions. Standard errors (analysis.json) "
        f'per Miller (2024), "Adding Error Bars to Evals", with the CR2 correction.</p>'
    )
    parts.append(conventions_note(conventions))
    parts.append("</div>")
    parts.append(published_section(analysis.published, board))

    parts.append('<h2 id="paired">Paired comparisons on the same tasks</h2><div class="card">')
    if paired["pairs"]:
        parts.append(f"<figure>{figures['paired']}</figure>")
    parts.append(
        f'<p class="note">{escape(paired["decisions"])}. Sources as the unit: '
        f"{escape(paired['test'])}. Tasks as the unit: {escape(paired['test_tasks_as_unit'])}. "
        f"{escape(paired['correction'])}; {escape(paired['difference'])}; clustered: "
        f"{escape(paired['clustered_difference'])}. * marks a pair the source-aware test "
        f"separates after correction; † a pair whose * the infrastructure errors could change "
        f"(see below).</p>"
    )
    parts.append(pairs_table(paired["pairs"], labels, conventions))
    parts.append("</div>")
    parts.append(infrastructure_section(paired, labels))
    parts.append(cross_revision_section(analysis.cross_revision))
    parts.append(history_section(analysis.history))

    cost = analysis.cost_success
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

    audit = analysis.budget_audit
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

    sources = analysis.per_source
    parts.append('<h2 id="sources">Results per source</h2><div class="card">')
    parts.append(f"<figure>{figures['per_source']}</figure>")
    parts.append(
        f'<p class="note">Passes per source, with the {conf:.0%} Wilson interval of the '
        f"source's success rate ({escape(analysis.methods['per_source'])}).</p>"
    )
    parts.append(sources_tables(sources, models, labels))
    parts.append("</div>")
    parts.append(failures_section(analysis.anatomy, figures.get("failures")))
    parts.append(task_table_section(analysis.task_table))

    parts.append(
        '<h2 id="local-runs">Local runs (source-free, unattested; kept apart)</h2>'
        '<div class="card apart">'
    )
    parts.append(local_runs_section(analysis.local_runs))
    parts.append(local_failures_section(analysis.anatomy))
    parts.append(pass_at_k_section(pass_at_k))
    parts.append("</div>")
    if analysis.sequential:
        parts.append(
            '<h2 id="sealed-comparison">The sealed comparison: where it stopped</h2>'
            '<div class="card">'
        )
        parts.append(sequential_section(analysis.sequential))
        parts.append("</div>")
    if analysis.cost_ledger:
        parts.append(
            '<h2 id="cost-ledger">Cost ledger of the executed trials</h2><div class="card">'
        )
        parts.append(cost_ledger_section(analysis.cost_ledger))
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
    parts.append(f'<p class="note">{escape(analysis.license)}</p></div></main>')
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
        _folded_table(
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
            SOURCES_SHOWN,
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


def _clustered_head(label: str, conventions: dict) -> tuple[str, str]:
    """A clustered interval's column: its number of sources, in short and in full."""
    return (
        f"{label} ({conventions['sources']} sources)",
        f"CR2 cluster-robust interval over {conventions['sources']} sources, with the t "
        "quantile on the degrees of freedom shown under it (Bell-McCaffrey)",
    )


def _clustered_cell(interval: dict, scale: str) -> Lines:
    """A clustered interval and, under it, its degrees of freedom."""
    if scale == "pp":
        shown = _range(f"{100 * interval['low']:+.1f}", f"{100 * interval['high']:+.1f}", "…")
    else:
        shown = _range(_pct(interval["low"]), _pct(interval["high"]))
    df = interval["df"]
    return Lines((shown, "df —" if df is None else f"df {df:.1f}"))


NO_DECISION = "no decision possible at alpha"
UNCOMPUTABLE_ONE_TASK = "cannot be computed on 1 task"


def smallest_p_text(paired: dict, alpha: float) -> str:
    """The smallest Holm-adjusted p the sign-flip test can reach over these sources and pairs,
    and, when it is not below alpha, that the ★ tier and the letters decide nothing."""
    from afbench.core.stats import sign_flip_smallest_p

    smallest = paired["smallest_p_holm"]
    sources, pairs = paired["sources"], len(paired["pairs"])
    text = (
        f"Over {sources} sources the sign-flip test cannot go below p = 2/2^{sources} = "
        f"{sign_flip_smallest_p(sources):.4g}, and "
        f"Holm over the {pairs} pair(s) not below {smallest:.4g}"
    )
    if paired["decidable"]:
        return text + f" (below alpha {alpha:g}: a decision is possible)."
    return (
        text + f", at least alpha {alpha:g}: {NO_DECISION} {alpha:g}; no pair can be declared "
        "different whatever the data, so the source-aware tier and letters are not shown."
    )


def letters_text(letters: list[str]) -> str:
    """A model's letters as one cell: run together ('ab'), or with spaces when some letter has
    more than one character (past 'z': 'z aa'); the frames and the exports show them so too."""
    return ("" if all(len(x) == 1 for x in letters) else " ").join(letters)


def _tier(letters: list[str], leader: bool) -> str:
    return letters_text(letters) + (" ★" if leader else "")


def leaderboard_table(
    board: list[dict], conf: float, conventions: dict, decidable: bool = True
) -> str:
    tasks = sorted({r["tasks"] for r in board})
    return _table(
        [
            "model",
            ("tier", "letters and ★ from the sign-flip test over sources, Holm-adjusted"),
            (
                "tier, tasks as the unit",
                "letters and ★ from the exact McNemar test over tasks, Holm-adjusted",
            ),
            f"passes (of {', '.join(map(str, tasks))})",
            "success",
            f"{conf:.0%} Wilson",
            _clustered_head(f"{conf:.0%} clustered", conventions),
            "design effect",
            "infra. errors: bounds",
            "over budget",
            "authors' count",
        ],
        [
            [
                r["display_name"],
                _tier(r["letters"], r["leader_tier"]) if decidable else NO_DECISION,
                _tier(r["letters_tasks_as_unit"], r["leader_tier_tasks_as_unit"]),
                r["passes"],
                _pct(r["success_rate"]),
                _range(_pct(r["wilson_low"]), _pct(r["wilson_high"])),
                _clustered_cell(r["clustered"], "rate"),
                _design_effect(r["clustered"]["design_effect"]),
                Lines(
                    (
                        f"{r['infrastructure_errors']}: "
                        + _range(str(r["passes"]), str(r["infrastructure_bounds"]["passes_high"])),
                        _range(
                            _pct(r["infrastructure_bounds"]["clustered"]["low"]),
                            _pct(r["infrastructure_bounds"]["clustered"]["high"]),
                        ),
                    )
                ),
                r["over_budget_records"],
                _published_short(r),
            ]
            for r in board
        ],
        "leaderboard",
        wrap=(0, 1, 2, 10),
    )


def conventions_note(conventions: dict) -> str:
    """The conventions behind every interval and decision, in one paragraph."""
    df = "—" if conventions["df"] is None else f"{conventions['df']:.2f}"
    draws = conventions["randomisation"]
    return (
        f'<p class="note" id="conventions">Conventions: two-sided tests at alpha '
        f"{conventions['alpha']:g}; {escape(conventions['exact_p'])}; Holm over "
        f"{escape(conventions['holm_family'])}; {conventions['sources']} sources, "
        f"{conventions['tasks']} tasks; clustered intervals on at most {df} degrees of freedom "
        f"({escape(conventions['df_method'])}; each interval's own df, lower where its "
        f"sources cohere, is shown under it); sign-flip randomisation: "
        f"{escape(draws['draws'])} (seed: none; Monte Carlo error: "
        f"{draws['monte_carlo_error']:g}).</p>"
    )


def _published_short(row: dict) -> str:
    if row["published_passes"] is None:
        return "—"
    if row["matches_published"]:
        return "matches"
    return f"DIFFERS ({row['passes'] - row['published_passes']:+d})"


PAIRS_SHOWN = 8  # the leader's pairs of nine models; the rest are folded beneath
ROWS_SHOWN = 40  # of a list of records (over budget, marked pairs, trials) before it folds
SOURCE_MODELS = 9  # model columns per table of results per source
SOURCES_SHOWN = 8  # source rows shown before the rest of a results-per-source table folds


def pairs_table(pairs: list[dict], labels: dict[str, str], conventions: dict) -> str:
    return _folded_table(
        [
            "A",
            "B",
            "both",
            "only A",
            "only B",
            "neither",
            "A − B",
            ("interval (tasks)", "paired standard error, tasks taken as independent"),
            _clustered_head("clustered interval", conventions),
            "design effect",
            ("p (sign-flip, sources)", "sign-flip randomisation over sources, exact"),
            ("p Holm (sources)", "the decision shown: * below alpha; † it could flip"),
            ("p exact, tasks as the unit", "exact McNemar, tail-doubled"),
            ("p Holm, tasks as the unit", "differs: below alpha with tasks as the unit"),
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
                UNCOMPUTABLE_ONE_TASK
                if p["difference_low"] is None
                else _range(
                    f"{100 * p['difference_low']:+.1f}", f"{100 * p['difference_high']:+.1f}", "…"
                ),
                _clustered_cell(p["clustered"], "pp"),
                _design_effect(p["clustered"]["design_effect"]),
                f"{p['p_sign_flip']:.3g}",
                f"{p['p_sign_flip_holm']:.3g}"
                + (" *" if p["significant"] else "")
                + (" †" if p["infrastructure"]["marked"] else ""),
                f"{p['p_exact']:.3g}",
                f"{p['p_holm']:.3g}" + (" differs" if p["significant_tasks_as_unit"] else ""),
            ]
            for p in pairs
        ],
        "pairs",
        PAIRS_SHOWN,
        "pairs (all pairs are in analysis.json)",
        wrap=(0, 1),
    )


def _labels(models: list[str], labels: dict[str, str]) -> str:
    return ", ".join(bdi(labels[m]) for m in models) or "none"


def tier_changes(paired: dict, labels: dict[str, str]) -> str:
    """The resolutions of the infrastructure errors under which the ★ tier or the letters
    would differ from those shown."""
    changes = paired["tier_changes"]
    if not changes:
        return "<p>No resolution of one model's errors changes the ★ tier or the letters.</p>"
    items = []
    for change in changes:
        what = []
        if change["leader_tier_changes"]:
            what.append(f"the ★ tier would be {_labels(change['leader_tier'], labels)}")
        if change["letters_change"]:
            letters = "; ".join(
                f"{bdi(labels[m])} {escape(''.join(x))}" for m, x in change["letters"].items()
            )
            what.append(f"the letters would be {letters}")
        items.append(
            f"<li>With {bdi(labels[change['errors_solved_for']])}'s infrastructure errors "
            f"counted as solved, {' and '.join(what)}.</li>"
        )
    return (
        "<p><strong>The ★ tier or the letters could change</strong> within the infrastructure "
        f"errors:</p><ul>{''.join(items)}</ul>"
    )


def infrastructure_section(paired: dict, labels: dict[str, str]) -> str:
    """The pairs whose decision shown could flip within their models' infrastructure errors,
    and the tiers and letters that could change."""
    marked = [p for p in paired["pairs"] if p["infrastructure"]["marked"]]
    head = (
        '<h2 id="infrastructure">Infrastructure errors, bounded</h2><div class="card">'
        f'<p class="note">{escape(paired["infrastructure"])}. The reported counts stay as the '
        "authors reported them (an error counted as unsolved).</p>"
    )
    changes = tier_changes(paired, labels)
    if not marked:
        return (
            head
            + "<p>No pair's decision could change within its infrastructure errors.</p>"
            + changes
            + "</div>"
        )
    rows = [
        [
            labels[p["a"]],
            labels[p["b"]],
            f"{p['p_sign_flip_holm']:.3g}",
            f"{p['infrastructure']['favour_a']['p_sign_flip_holm']:.3g}",
            f"{p['infrastructure']['favour_b']['p_sign_flip_holm']:.3g}",
            _range(
                f"{100 * p['infrastructure']['clustered']['low']:+.1f}",
                f"{100 * p['infrastructure']['clustered']['high']:+.1f}",
                "…",
            ),
        ]
        for p in marked
    ]
    return (
        head + f"<p><strong>{len(marked)} pair(s) marked †</strong>: their Holm-adjusted sign-flip "
        "p (the decision shown) crosses alpha when the family is recomputed with one model's "
        "errors counted as solved.</p>"
        + _folded_table(
            [
                "A",
                "B",
                "p Holm reported",
                "p Holm, A's errors solved",
                "p Holm, B's errors solved",
                "clustered A − B, either way",
            ],
            rows,
            "infrastructure",
            ROWS_SHOWN,
            "marked pairs",
            wrap=(0, 1),
        )
        + changes
        + "</div>"
    )


def published_banner(check: dict) -> str:
    """A loud banner when an import differs from what the authors published."""
    if check["matches"] is not False:
        return ""
    items = "".join(f"<li>{bdi(d)}</li>" for d in check["differences"])
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
            facts.append(escape(f"Task rows: published {rows['published']:,}; {rows['note']}."))
        else:
            verdict = "matches" if rows["matches"] else "DIFFERS"
            facts.append(
                escape(
                    f"Task rows across the {len(rows['models'])} published models' files: "
                    f"imported {rows['imported']:,}, published {rows['published']:,}: {verdict}."
                )
            )
    for model, over in check["over_budget"].items():
        verdict = "matches" if over["matches"] else "DIFFERS"
        facts.append(
            f"Costs above the budget in {bdi(model)}'s file: "
            + escape(
                f"imported USD {', '.join(f'{x:g}' for x in over['imported_usd']) or 'none'}, "
                f"published USD {', '.join(f'{x:g}' for x in over['published_usd']) or 'none'}"
                f": {verdict}."
            )
        )
    parts.extend(f"<p>{fact}</p>" for fact in facts)
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
    if row.get("certification") == "not certified":
        return "not certified"
    return "not checked"


def _protocol_reasons(row: dict) -> str | None:
    """Why a configuration is not conformant, or not certified (a trial left uncompared),
    retries among the reasons: a line of its own under its row."""
    if row.get("conformant") is False:
        return "NOT CONFORMANT: " + "; ".join(row["conformance_reasons"])
    if row.get("certification") == "not certified":
        return "not certified: " + "; ".join(row["conformance_reasons"])
    return None


def _configuration(row: dict) -> str:
    # the label comes last in its cell (a paragraph of its own): nothing after it to reorder
    return ("NOT CONFORMANT ⚠ " if row.get("conformant") is False else "") + row["configuration"]


def cost_ledger_section(ledger: dict) -> str:
    """What the executed trials cost beside the ceiling, what is held for interrupted trials,
    and every overshoot; every value escaped by `_table`."""
    ceiling = ledger["ceiling_usd"]
    shown = "none (model-free agents only)" if ceiling is None else f"USD {ceiling:,.2f}"
    stopped = (
        f" <strong>Stopped at the ceiling: {ledger['refused']} trial(s) not started.</strong>"
        if ledger["stopped"]
        else ""
    )
    held = ledger.get("held_usd") or 0
    more = ""
    if held:
        more += f" USD {held:,.2f} is held for interrupted trials (what they spent is unknown)."
    if ledger.get("overshoots"):
        more += (
            f' <strong id="ledger-overshoots">{ledger["overshoots"]} overshoot(s): USD '
            f"{ledger['overshoot_usd']:,.2f} spent past their caps.</strong>"
        )
    if ledger.get("ledger_open_usd"):
        more += (
            f" The live ledger holds USD {ledger['ledger_open_usd']:,.2f} for trials started "
            "and not finished (<code>afbench ledger</code> names them)."
        )
    if ledger.get("interrupted_not_rerun"):
        more += (
            f" {ledger['interrupted_not_rerun']} interrupted trial(s) not run again "
            "(execute.rerun_interrupted)."
        )
    return (
        f'<p id="ledger-total">Spent USD {ledger["spent_usd"]:,.2f} of the ceiling '
        f"{escape(shown)} (execute.max_cost_usd).{stopped}{more}</p>"
        f'<p class="note">{escape(ledger["note"])}</p>'
        + _folded_table(
            [
                "trial",
                "task",
                "attempt",
                "agent",
                "status",
                "cost (USD)",
                "cap (USD)",
                "overshoot (USD)",
            ],
            [
                [
                    t["job_name"],
                    t["task_id"],
                    t["attempt"],
                    t["agent"] + (f" {t['model']}" if t["model"] else ""),
                    t["status"] + (f" (stopped at {t['stopped']})" if t.get("stopped") else ""),
                    _usd(t["cost_usd"]),
                    _usd(t["worst_case_usd"]),
                    _usd(t.get("overshoot_usd") or None),
                ]
                for t in ledger["trials"]
            ],
            "ledger",
            ROWS_SHOWN,
            "trials",
            wrap=(0, 1, 3, 4),
        )
    )


def sequential_section(sequential: dict) -> str:
    """The sealed comparison run by execute (afbench.execution.sequential.run_step): its decision,
    where it stopped and why, what it spent beside what the fixed-n planner would have, the validity
    statement, each look, and every comparison of the executed runs marked confirmatory or
    exploratory (conformance.plan_conformance); every value escaped."""
    run = sequential["run"]
    comparison = run["comparison"]
    if run["stopped_at_tasks"] is not None:
        where = f"stopped after {run['stopped_at_tasks']} of the horizon's {run['horizon']} tasks"
    else:
        where = (
            f"stopped after {run['tasks_counted']} counted task(s) of the horizon's "
            f"{run['horizon']}"
            if run["stopped"]
            else f"not finished: {run['tasks_counted']} task(s) counted so far"
        )
    observed = run["fixed_n_usd_at_observed_cost"]
    fixed = (
        f"The fixed-n planner would have run {run['fixed_n_tasks']} task(s): worst case USD "
        f"{run['fixed_n_worst_case_usd']:,.2f}"
        + (f", USD {observed:,.2f} at this run's cost per task" if observed is not None else "")
        + "."
    )
    why = run["stopped_by"] or "no stop yet"
    if run["stop_reason"]:
        why += f": {run['stop_reason']}"
    lines = [
        f'<p id="sequential-decision"><strong>{escape(run["decision"])}</strong> '
        f"({escape(comparison['a'])} against {escape(comparison['b'])} on "
        f"{escape(comparison['selection'])}): {escape(where)}, by {escape(why)}.</p>",
        f'<p id="sequential-spent">Spent USD {run["spent_usd"]:,.2f} on {run["tasks_run"]} '
        f"task(s) ({run['trials_started']} trial(s) started"
        + (f", {run['trials_refused']} not started" if run["trials_refused"] else "")
        + f"). {escape(fixed)}</p>",
        f'<p class="note">{escape(run["test"])}, alpha {run["alpha"]:g}, sealed plan '
        f"{escape(run['plan_sha256'][:12])}: the decision is {escape(run['validity'])}.</p>",
    ]
    if run["unresolved_tasks"]:
        held = (
            "Infrastructure errors taken as bounds"
            if run["infrastructure_errors"] == "bounds"
            else "Waiting for an errored trial's rerun"
        )
        lines.append(f'<p class="note">{held}: {escape(", ".join(run["unresolved_tasks"]))}.</p>')
    if run["retries"] or run["excluded_tasks"]:
        lines.append(
            f'<p id="sequential-errors">Trials rerun after an infrastructure error: '
            f"{run['retries']} (USD {run['retries_usd']:,.2f}). Tasks left out of the test "
            "for both configurations, one of them erring at every attempt the plan allows: "
            + (
                escape(
                    "; ".join(
                        f"{t['task_id']} (a {t['a']} after {t['attempts']['a']}, b {t['b']} "
                        f"after {t['attempts']['b']} attempt(s))"
                        for t in run["excluded_tasks"]
                    )
                )
                if run["excluded_tasks"]
                else "none"
            )
            + ".</p>"
        )
    looks = _table(
        ["tasks", "discordant pairs", "for a", "boundary", "e-value a", "e-value b", "decision"],
        [
            [
                look["tasks"],
                look["favour_b"]["pairs"],
                look["favour_b"]["for_a"],
                look["boundary_for_a"],
                f"{look['e_a']:g}",
                f"{look['e_b']:g}",
                look["decision"],
            ]
            for look in run["looks"]
        ],
        "looks",
        wrap=(6,),
    )
    roles = [
        [
            check["run"],
            f"{c['a']} against {c['b']}",
            c["role"],
            c["reason"],
        ]
        for check in sequential["plan_checks"]
        for c in check["comparisons"]
    ]
    departures = [
        f"{check['run']}: {problem}"
        for check in sequential["plan_checks"]
        for problem in check["problems"]
    ]
    return (
        "".join(lines)
        + looks
        + (
            '<p class="note">Each comparison of the executed runs: confirmatory only when it is '
            "the sealed plan's primary comparison, run as planned.</p>"
            + _table(["run", "comparison", "role", "why"], roles, "roles", wrap=(0, 1, 3))
            if roles
            else ""
        )
        + (
            '<p id="plan-departures"><strong>The run departs from its sealed plan:</strong> '
            + escape("; ".join(departures))
            + "</p>"
            if departures
            else ""
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
        "not the exporter's, trials Harbor retried) is marked NOT CONFORMANT with every reason; "
        "one where a check did not compare every trial is not certified, with the reason.</p>"
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


# --- beyond the leaderboard: why tasks failed, which tasks measure anything ----------------
def _count_cell(count: int, failures: int) -> str:
    return "—" if not count else f"{count} ({100 * count / failures:.0f}%)"


def failures_section(anatomy: dict | None, figure: str | None) -> str:
    """The official models' failed tasks by class (afbench.task_analysis.anatomy), with its
    figure."""
    if not anatomy or not anatomy.get("official"):
        return ""
    rows = anatomy["official"]
    classes = [c for c in anatomy["classes"] if any(c in r["counts"] for r in rows)]
    labels = anatomy["labels"]
    table = _table(
        ["model", "failed", *[labels[c] for c in classes]],
        [
            [
                r["display_name"],
                r["failures"],
                *[_count_cell(r["counts"][c], r["failures"]) for c in classes],
            ]
            for r in rows
        ],
        "anatomy",
    )
    return (
        '<h2 id="failures">Why the failures failed</h2><div class="card">'
        + (f"<figure>{figure}</figure>" if figure else "")
        + table
        + f'<p class="note">Each failed task in exactly one class, the first that applies: '
        f"{escape(anatomy['method'])}. The classes of a model sum to its failures; the "
        "per-task classes are in the failure anatomy artifact and afbench.frames."
        "official_failures.</p></div>"
    )


def _logit(value: float | None, sd: float | None) -> str:
    return "—" if value is None else f"{value:+.2f} ± {sd:.2f}"


def task_table_section(table: dict | None) -> str:
    """Which tasks measure anything (afbench.task_analysis.items): the fit, its controls, the table
    by solve count, the audit lists and the derived subset."""
    if not table:
        return ""
    controls = "; ".join(
        f"shuffled within {c['within']}: p = {c['p']:.3g} (best shuffled log-likelihood "
        f"{c['log_likelihood_max']:.1f} against {table['fit']['log_likelihood']:.1f})"
        for c in table["controls"]
    )
    verdict = (
        "<p><strong>Both controls rejected: difficulties reported.</strong></p>"
        if table["difficulties_reported"]
        else f"<p><strong>{escape(table['withheld'])}.</strong></p>"
    )
    ident = table["identification"]
    measured = (
        f" Median posterior SD {ident['median_difficulty_sd']:.2f} logits; EAP reliability "
        f"{ident['eap_reliability']:.2f}."
        if "eap_reliability" in ident
        else ""
    )
    rows = [
        [
            r["solved_by"],
            r["tasks"],
            _logit(r["difficulty"], r["difficulty_sd"]),
            "—" if r["mean_discrimination"] is None else f"{r['mean_discrimination']:.2f}",
            r["discriminative"],
        ]
        for r in table["by_solves"]
    ]
    audit = table["audit"]
    lists = "".join(
        f'<details class="fold"><summary>{escape(title)}: {len(ids)} task(s)</summary>'
        f'<p class="mono">{", ".join(bdi(i) for i in ids) or "none"}</p></details>'
        for title, ids in (
            ("Solved by none", audit["solved_by_none"]),
            ("Solved by all", audit["solved_by_all"]),
        )
    )
    subset = table["discriminative"]
    return (
        '<h2 id="tasks">Which tasks measure anything</h2><div class="card">'
        f'<p class="note">{escape(table["methods"]["model"])}. Controls: '
        f"{escape(table['methods']['control'])}.</p>"
        f"<p>{escape(controls)}.</p>{verdict}"
        f'<p class="note">{escape(ident["note"])} Here: {ident["models"]} models, '
        f"{ident['distinct_difficulties']} distinct difficulties over {ident['tasks']} tasks."
        f"{measured}</p>"
        + _table(
            [
                "solved by (models)",
                "tasks",
                "difficulty (logits ± posterior SD)",
                "mean discrimination",
                "in the subset",
            ],
            rows,
            "tasks",
        )
        + f'<p class="note">Discrimination: {escape(table["methods"]["discrimination"])}. '
        f"{escape(audit['note'])}.</p>"
        + lists
        + f"<p><strong>Discriminative subset: {subset['tasks']} task(s)</strong> "
        f"({escape(subset['rule'])}). {escape(subset['note'])}</p></div>"
    )


def local_failures_section(anatomy: dict | None) -> str:
    """Each local run configuration's tasks not accepted, by class, with the advisory
    infrastructure classes (never a verdict)."""
    if not anatomy or not anatomy.get("local_runs"):
        return ""
    labels = anatomy["labels"]
    classes = [c for c in anatomy["classes"] if c not in ("near_miss", "partial", "none")]
    advisory = anatomy["advisory_classes"]
    rows = [
        [
            run["run"],
            Html(bdi(c["configuration"])),
            c["failures"],
            *[c["counts"].get(k, 0) or "—" for k in classes],
            ", ".join(
                f"{k.replace('_', ' ')} {c['advisory'][k]}" for k in advisory if c["advisory"][k]
            )
            or "—",
        ]
        for run in anatomy["local_runs"]
        for c in run["configurations"]
    ]
    return (
        '<h3 id="local-failures">Why the local tasks failed</h3>'
        + _table(
            ["run", "configuration", "not accepted", *[labels[k] for k in classes], "advisory"],
            rows,
            "runs",
            wrap=(0, 1, len(classes) + 3),
        )
        + f'<p class="note">{escape(anatomy["local_method"])}. Infrastructure failures carry an '
        f"advisory class ({escape(anatomy['advisory_method'])}): it never changes a verdict.</p>"
    )


def pass_at_k_section(records: list[dict]) -> str:
    """pass@k of each local run configuration with attempts, each k with its clustered
    interval; a configuration without an estimate says why on a line of its own."""
    records = [r for r in records if any(c["attempts"] for c in r["configurations"])]
    if not records:
        return ""
    rows, notes = [], []
    for record in records:
        for c in record["configurations"]:
            replaced = f" ({c['replaced_attempts']} replaced)" if c["replaced_attempts"] else ""
            head = [record["run"], Html(bdi(c["configuration"])), c["tasks"]]
            head.append(f"{c['attempts']}{replaced}")
            for estimate in c["estimates"] or [None]:
                if estimate is None:
                    rows.append([*head, "—", "—", "—"])
                    notes.append(c["note"])
                    continue
                interval = estimate["clustered"]
                rows.append(
                    [
                        *head,
                        estimate["k"],
                        _pct(interval["mean"]),
                        _clustered_cell(interval, "rate"),
                    ]
                )
                notes.append(None)
    first = records[0]
    return (
        '<h3 id="pass-at-k">pass@k of the local runs</h3>'
        + _table(
            [
                "run",
                "configuration",
                "tasks",
                "attempts",
                "k",
                "pass@k",
                (
                    f"{first['confidence']:.0%} clustered",
                    "CR2 cluster-robust interval over the tasks' sources, with the t quantile on "
                    "the degrees of freedom shown under it (Bell-McCaffrey)",
                ),
            ],
            rows,
            "runs",
            notes,
            wrap=(0, 1),
        )
        + f'<p class="note">{escape(first["estimator"])}. {escape(first["attempt_rule"])}.</p>'
    )


def _left_out(counts: dict) -> str:
    return ", ".join(f"{n:,} {kind}" for kind, n in counts.items() if n) or "none"


def _side_cell(side: dict) -> Html:
    """A side: its label (with its revision, isolated), its rate over the compared tasks and,
    under it, the clustered interval."""
    rate = f"{_pct(side['success_rate'])} ({side['solved']}/{side['tasks']})"
    interval = _range(_pct(side["clustered"]["low"]), _pct(side["clustered"]["high"]))
    return Html(f"{bdi(side['label'])}<br>{escape(rate)}<br>{escape(interval)}")


def _unresolved_note(row: dict) -> str | None:
    counts = [row["previous"]["unresolved"], row["current"]["unresolved"]]
    if not any(counts):
        return None
    marked = row["unresolved"]["marked"]
    mark = "; † the decision shown could change were they solved" if marked else ""
    return f"unresolved, counted unsolved: {counts[0]} previous, {counts[1]} current{mark}"


def cross_revision_section(block: dict | None) -> str:
    """The previous revision's results against this one's, on the tasks both revisions share
    unchanged (afbench.upgrade.crossrev): what the diff left out, each side's rate with its
    revision, the paired counts and tests. Nothing without comparisons."""
    if not block:
        return ""
    comparable, methods, rows = block["comparable"], block["methods"], block["comparisons"]
    before, after = comparable["previous"]["revision"], comparable["current"]["revision"]
    union = comparable["tasks"] + sum(comparable["left_out"].values())
    rate = "over the compared tasks; under it the clustered interval"
    table = _table(
        [
            ("previous (revision), success", rate),
            ("current (revision), success", rate),
            ("tasks", "compared, their sources, and the unchanged tasks not on both sides"),
            "both",
            "only previous",
            "only current",
            "neither",
            "current − previous",
            ("interval (tasks)", "paired standard error, tasks taken as independent"),
            ("clustered interval", "CR2 over the compared tasks' sources; df under it"),
            ("p (sign-flip, sources)", "sign-flip randomisation over sources, exact"),
            ("p Holm (sources)", "the decision shown: * below alpha; † it could flip"),
            ("p exact, tasks as the unit", "exact McNemar, tail-doubled"),
            ("p Holm, tasks as the unit", "differs: below alpha with tasks as the unit"),
        ],
        [
            [
                _side_cell(row["previous"]),
                _side_cell(row["current"]),
                Lines(
                    (
                        f"{row['tasks']:,}",
                        f"{row['sources']} sources",
                        *(
                            [f"{row['left_out']['not-on-both-sides']:,} not on both"]
                            if row["left_out"]["not-on-both-sides"]
                            else []
                        ),
                    )
                ),
                row["both"],
                row["only_previous"],
                row["only_current"],
                row["neither"],
                f"{100 * row['difference']:+.1f} pp",
                _range(f"{100 * row['low']:+.1f}", f"{100 * row['high']:+.1f}", "…"),
                _clustered_cell(row["clustered"], "pp"),
                f"{row['p_sign_flip']:.3g}",
                f"{row['p_sign_flip_holm']:.3g}"
                + (" *" if row["significant"] else "")
                + (" †" if row["unresolved"]["marked"] else ""),
                f"{row['p_exact']:.3g}",
                f"{row['p_holm']:.3g}" + (" differs" if row["significant_tasks_as_unit"] else ""),
            ]
            for row in rows
        ],
        "pairs crossrev",
        [_unresolved_note(row) for row in rows],
        wrap=(0, 1),
    )
    unresolved = "; ".join(f"{kind}: {text}" for kind, text in methods["unresolved"].items())
    return (
        '<h2 id="previous-revision">Against the previous revision (the tasks both share '
        'unchanged)</h2><div class="card">'
        f'<p>Revision <span class="mono">{escape(before)}</span> against this revision '
        f'<span class="mono">{escape(after)}</span>: compared on the {comparable["tasks"]:,} '
        f"tasks the diff calls unchanged, of the {union:,} tasks of the two revisions; left "
        f"out: {escape(_left_out(comparable['left_out']))}. Each rate is over the tasks "
        "compared and carries its revision; the two revisions' rates are never pooled.</p>"
        + table
        + f'<p class="note">{escape(block["note"])} Sources as the unit: '
        f"{escape(methods['test'])}. Tasks as the unit: {escape(methods['test_tasks_as_unit'])}. "
        f"{escape(methods['correction'])}; clustered: {escape(methods['clustered_difference'])}. "
        f"Unresolved tasks ({escape(unresolved)}): {escape(methods['mark'])}. Comparable subset "
        f'<span class="mono">{escape(comparable["selection_sha256"][:12])}</span>, diff '
        f'<span class="mono">{escape(comparable["diff_sha256"][:12])}</span>.</p></div>'
    )


def _history_row(entry: dict) -> tuple[list[object], str | None]:
    """One configuration against one other revision: both rates on the pair's comparable
    subset, the paired difference and its intervals; or why there is none."""
    row = entry["comparison"]
    revision = Html(f'<span class="mono">{escape(entry["revision"][:12])}</span>')
    if row is None:
        why = (
            "no comparable subset between the two revisions: not compared"
            if entry["status"] == "no-diff"
            else f"{entry['tasks']} task(s) of the comparable subset on both sides: at least 2 "
            "are needed for a paired comparison"
        )
        return [revision, *["—"] * 8], why
    return [
        revision,
        _side_cell(row["previous"]),
        _side_cell(row["current"]),
        Lines((f"{row['tasks']:,}", f"{row['sources']} sources")),
        f"{100 * row['difference']:+.1f} pp",
        _range(f"{100 * row['low']:+.1f}", f"{100 * row['high']:+.1f}", "…"),
        _clustered_cell(row["clustered"], "pp"),
        f"{row['p_sign_flip']:.3g}",
        f"{row['p_sign_flip_holm']:.3g}"
        + (" *" if row["significant"] else "")
        + (" †" if row["unresolved"]["marked"] else ""),
    ], _unresolved_note(row)


def history_section(block: dict | None) -> str:
    """Each configuration of this revision against the same one in every other revision of
    the results store (afbench.upgrade.history), each pair on its comparable subset: what each pair
    compares on, then per configuration its rows. Nothing without report.history."""
    if block is None:
        return ""
    head = '<h2 id="history">History across revisions</h2><div class="card">'
    if not block["revisions"]:
        return (
            head + "<p>The results store holds no other revision than this one (or there is no "
            "store yet): no history to show. Building another revision's results (`snakemake` "
            "with its config) adds its partitions to the store.</p></div>"
        )
    revisions = []
    for other in block["revisions"]:
        mono = f'<span class="mono">{escape(other["revision"])}</span>'
        comparable = other["comparable"]
        if comparable is None:
            revisions.append(f"<li>{mono}: {escape(block['no_diff'])}.</li>")
            continue
        order = (
            "this revision is the current one"
            if comparable["current"]["revision"] == block["revision"]
            else "this revision is the previous one"
        )
        revisions.append(
            f"<li>{mono}: compared on the {comparable['tasks']:,} tasks the diff between the two "
            f"calls unchanged ({order}; left out: {escape(_left_out(comparable['left_out']))}); "
            f'comparable subset <span class="mono">{escape(comparable["selection_sha256"][:12])}'
            f'</span>, diff <span class="mono">{escape(comparable["diff_sha256"][:12])}</span>; '
            f"{other['compared']} of the {other['configurations']} configuration(s) it shares "
            "with this revision compared.</li>"
        )
    rate = "over the pair's compared tasks; under it the clustered interval"
    header = [
        ("revision", "the other revision"),
        ("previous (revision), success", rate),
        ("current (revision), success", rate),
        ("tasks", "of the comparable subset on both sides, and their sources"),
        "current − previous",
        ("interval (tasks)", "paired standard error, tasks taken as independent"),
        ("clustered interval", "CR2 over the compared tasks' sources; df under it"),
        ("p (sign-flip, sources)", "sign-flip randomisation over sources, exact"),
        ("p Holm (sources)", "over the comparisons with that revision: * below alpha"),
    ]
    tables, alone = [], []
    for configuration in block["configurations"]:
        if not configuration["revisions"]:
            alone.append(bdi(configuration["label"]))
            continue
        rows, notes = zip(*map(_history_row, configuration["revisions"]), strict=True)
        tables.append(
            f"<h3>{bdi(configuration['label'])}</h3>"
            + _table(header, list(rows), "pairs crossrev history", list(notes), wrap=(1, 2))
        )
    if alone:
        tables.append("<p>In no other revision of the store: " + ", ".join(alone) + ".</p>")
    methods = block["methods"]
    return (
        head
        + "<p>Each configuration of this revision against the same configuration in each other "
        "revision of the results store, on the tasks the two revisions' diff calls unchanged; "
        "each rate carries its revision and is never pooled across revisions.</p><ul>"
        + "".join(revisions)
        + "</ul>"
        + "".join(tables)
        + f'<p class="note">{escape(block["note"])} {escape(methods["difference"])}; clustered: '
        f"{escape(methods['clustered_difference'])}. Sources as the unit: "
        f"{escape(methods['test'])}. {escape(methods['correction'])}. Read from the store: "
        + ", ".join(
            f'<span class="mono">{escape(f["file"])}</span> ({f["rows"]:,} rows, '
            f'SHA-256 <span class="mono">{escape(f["sha256"][:12])}</span>)'
            for f in block["store"]
        )
        + ".</p></div>"
    )


# --- the report's visible text: what the README's picture (docs/report.png) shows --------------
# elements whose text a reader never sees on the page (the figures' <metadata> names the
# plotting library's version, a fact of the machine, not of the report)
UNSEEN_ELEMENTS = {"head", "style", "script", "metadata"}
VOID_ELEMENTS = {"br", "meta", "img", "input", "hr", "link", "wbr"}

# values that differ between the machines that draw the same report: the environment's
# versions, and the settings digest, which only Snakemake's view of the config gives (a test
# rebuilding the report from the workflow's job commands passes its own)
MACHINE_VALUES = [
    (re.compile(r"\b(python|snakemake) \d[\w.+-]*"), r"\1 <version>"),
    (re.compile(r"(report settings digest \([^)]*\)) [0-9a-f]{64}"), r"\1 <digest>"),
]


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag not in VOID_ELEMENTS:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs) -> None:
        pass  # <use/>, <path/>: no text

    def handle_endtag(self, tag: str) -> None:
        if tag in self.open:
            while self.open.pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        if not UNSEEN_ELEMENTS.intersection(self.open):
            self.parts.append(data)


def visible_text(html: str) -> str:
    """The page's text as a reader sees it, whitespace collapsed, machine values masked."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    text = " ".join(" ".join(parser.parts).split())
    for pattern, mask in MACHINE_VALUES:
        text = pattern.sub(mask, text)
    return text


def text_digest(report: str | Path) -> str:
    """The SHA-256 of a report file's visible text: what `make docs-image` records beside
    docs/report.png and a test compares with the report this code renders."""
    text = visible_text(Path(report).read_text(encoding="utf-8"))
    return hashlib.sha256(text.encode()).hexdigest()
