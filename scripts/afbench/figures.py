"""The report's figures, drawn with matplotlib as deterministic inline SVG."""

from __future__ import annotations

import io


def _literal(label: object) -> str:
    """A label drawn exactly as typed: matplotlib reads text between two `$` as mathtext
    (`$x^2$` would be drawn as x squared, an unbalanced `$\\frac$` raises), but never a `\\$`,
    which it draws as `$`."""
    return str(label).replace("$", r"\$")


def _subplots(width: float, height: float):
    """A figure and its axes, without pyplot's global state (and its import cost)."""
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.rcParams.update(
        {
            "svg.hashsalt": "afbench",
            "svg.fonttype": "none",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    fig = Figure(figsize=(width, height))
    return fig, fig.add_subplot()


def _draws_nothing(renderer) -> bool:
    """Whether drawing is switched off on this renderer: matplotlib's `_draw_disabled` puts a
    no-op wrapping RendererBase's method in place of each draw_* method."""
    from matplotlib.backend_bases import RendererBase

    return getattr(renderer.draw_path, "__wrapped__", None) is RendererBase.draw_path


def _svg(fig) -> str:
    """The figure as SVG text, cropped to its tight bounding box.

    `bbox_inches="tight"` first runs a whole draw with drawing switched off, only to lay the
    figure out; the tight bounding box then lays every artist out again by itself. That first
    pass is skipped: the SVG is byte-for-byte the same (tests/test_figures.py holds it to
    matplotlib's own output) and the report job draws in about two thirds of the time."""
    draw = fig.draw

    def draw_unless_disabled(renderer) -> None:
        if not _draws_nothing(renderer):
            draw(renderer)

    fig.draw = draw_unless_disabled
    buffer = io.StringIO()
    try:
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    finally:
        del fig.draw
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def leaderboard_figure(rows: list[dict], confidence: float) -> str:
    fig, ax = _subplots(7, 0.35 * len(rows) + 1.2)
    names = [_literal(r["display_name"]) for r in rows][::-1]
    rates = [r["success_rate"] for r in rows][::-1]
    lows = [r["success_rate"] - r["wilson_low"] for r in rows][::-1]
    highs = [r["wilson_high"] - r["success_rate"] for r in rows][::-1]
    ax.errorbar(
        rates,
        range(len(rows)),
        xerr=[lows, highs],
        fmt="o",
        color="#1f5f8b",
        ecolor="#7aa6c2",
        capsize=3,
    )
    ax.set_yticks(range(len(rows)), names)
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"success rate with {confidence:.0%} Wilson interval")
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def pairs_figure(models: list[str], labels: dict[str, str], pairs: list[dict]) -> str:
    index = {m: i for i, m in enumerate(models)}
    size = len(models)
    grid = [[float("nan")] * size for _ in range(size)]
    marks = {}
    for p in pairs:
        i, j = index[p["a"]], index[p["b"]]
        grid[i][j], grid[j][i] = p["difference_difference"], -p["difference_difference"]
        marks[(i, j)] = marks[(j, i)] = "*" if p["significant"] else ""
    fig, ax = _subplots(0.6 * size + 2.5, 0.6 * size + 1.5)
    image = ax.imshow(grid, cmap="RdBu", vmin=-0.5, vmax=0.5)
    names = [_literal(labels[m]) for m in models]
    ax.set_xticks(range(size), names, rotation=45, ha="right")
    ax.set_yticks(range(size), names)
    if size <= 12:  # beyond that the numbers are unreadable; the table has them all
        for (i, j), mark in marks.items():
            ax.text(j, i, f"{grid[i][j]:+.2f}{mark}", ha="center", va="center", fontsize=7)
    fig.colorbar(image, ax=ax, label="row minus column success rate")
    return _svg(fig)


def per_source_figure(rows: list[dict], models: list[str], labels: dict[str, str]) -> str:
    grid = [
        [r["rates"][m] if r["rates"][m] is not None else float("nan") for m in models] for r in rows
    ]
    fig, ax = _subplots(0.55 * len(models) + 3, 0.28 * len(rows) + 1.5)
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(
        range(len(models)), [_literal(labels[m]) for m in models], rotation=45, ha="right"
    )
    ax.set_yticks(range(len(rows)), [_literal(f"{r['source_id']} ({r['tasks']})") for r in rows])
    fig.colorbar(image, ax=ax, label="success rate")
    return _svg(fig)


def cost_figure(models: list[dict], frontier: list[str], budget: float) -> str:
    fig, ax = _subplots(7, 4.2)
    for m in models:
        ax.scatter(
            m["mean_cost_usd"],
            m["success_rate"],
            s=36,
            color="#c0392b" if m["on_frontier"] else "#7f8c8d",
            zorder=3,
        )
        ax.annotate(
            _literal(m["display_name"]),
            (m["mean_cost_usd"], m["success_rate"]),
            textcoords="offset points",
            xytext=(5, 4),
            fontsize=7,
        )
    front = [m for m in models if m["on_frontier"]]
    ax.plot(
        [m["mean_cost_usd"] for m in front],
        [m["success_rate"] for m in front],
        color="#c0392b",
        linestyle="--",
        label="cost-success Pareto frontier",
    )
    ax.set_xlabel(f"mean reported cost per task (USD; nominal budget USD {budget:g})")
    ax.set_ylabel("success rate")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    return _svg(fig)


def names(analysis: dict) -> list[str]:
    """The report's figures for this analysis, by name (make_figures draws them)."""
    paired = ["paired"] if analysis["paired"]["pairs"] else []
    return ["leaderboard", "cost_success", "per_source", *paired]


def make_figures(analysis: dict) -> dict[str, str]:
    """Every figure of the report, name -> SVG text."""
    board = analysis["leaderboard"]
    models = [r["model"] for r in board]
    labels = {r["model"]: r["display_name"] for r in board}
    cost = analysis["cost_success"]
    figures = {
        "leaderboard": leaderboard_figure(board, analysis["confidence"]),
        "cost_success": cost_figure(cost["models"], cost["frontier"], analysis["budget_usd"]),
        "per_source": per_source_figure(analysis["per_source"], models, labels),
    }
    if analysis["paired"]["pairs"]:
        figures["paired"] = pairs_figure(models, labels, analysis["paired"]["pairs"])
    return figures
