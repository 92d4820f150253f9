"""The report's figures, drawn with matplotlib as deterministic inline SVG.

Every figure is drawn under matplotlib's own defaults and afbench's few settings, whatever the
user's matplotlib configuration (matplotlibrc files, MPLCONFIGDIR, a style, text.usetex, a
font): the same analysis gives the same bytes anywhere, and the user's settings are left as
they were."""

from __future__ import annotations

import contextlib
import functools
import io

STYLE = {
    "svg.hashsalt": "afbench",
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _matplotlib():
    """matplotlib, imported without reading any of the user's settings: matplotlib reads its rc
    file at import (a matplotlibrc in the working folder first, then $MATPLOTLIBRC,
    $MPLCONFIGDIR or ~/.config/matplotlib) and refuses to import at all under an unknown
    MPLBACKEND, or under axes.formatter.use_locale with a locale the system lacks. So it is
    imported from its own data folder (whose matplotlibrc is its defaults), with MATPLOTLIBRC
    naming that file too and no MPLBACKEND (the figures are SVG text, drawn without a
    backend); the working folder and the environment are put back at once."""
    import importlib.util
    import os
    import sys

    if "matplotlib" in sys.modules:
        return sys.modules["matplotlib"]
    spec = importlib.util.find_spec("matplotlib")
    data = os.path.join(os.path.dirname(spec.origin), "mpl-data") if spec and spec.origin else None
    saved = {name: os.environ.get(name) for name in ("MPLBACKEND", "MATPLOTLIBRC")}
    os.environ.pop("MPLBACKEND", None)
    try:
        folder = os.getcwd() if data else None
    except OSError:  # the working folder is gone: there is no matplotlibrc in it either
        folder = None
    try:
        if data:
            os.environ["MATPLOTLIBRC"] = os.path.join(data, "matplotlibrc")
        if folder:
            os.chdir(data)
        import matplotlib
    finally:
        if folder:
            os.chdir(folder)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return matplotlib


@contextlib.contextmanager
def _style():
    """matplotlib's built-in defaults (never the user's rc files) plus STYLE, for one figure;
    the user's settings are back as they were afterwards."""
    matplotlib = _matplotlib()
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(STYLE)
        yield


def _styled(draw):
    @functools.wraps(draw)
    def styled(*args, **kwargs):
        with _style():
            return draw(*args, **kwargs)

    return styled


def _literal(label: object) -> str:
    """A label drawn exactly as typed: matplotlib reads text between two `$` as mathtext
    (`$x^2$` would be drawn as x squared, an unbalanced `$\\frac$` raises), but never a `\\$`,
    which it draws as `$`."""
    return str(label).replace("$", r"\$")


def _subplots(width: float, height: float):
    """A figure and its axes, without pyplot's global state (and its import cost)."""
    from matplotlib.figure import Figure

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


@_styled
def leaderboard_figure(rows: list[dict], confidence: float) -> str:
    """Each model's success rate with its Wilson interval (tasks independent) and, just below,
    its clustered interval over sources."""
    fig, ax = _subplots(7, 0.42 * len(rows) + 1.3)
    names = [_literal(r["display_name"]) for r in rows][::-1]
    at = list(range(len(rows)))
    for offset, interval, label, colour in (
        (
            0.12,
            lambda r: (r["wilson_low"], r["wilson_high"]),
            "Wilson (tasks independent)",
            "#1f5f8b",
        ),
        (
            -0.12,
            lambda r: (r["clustered"]["low"], r["clustered"]["high"]),
            "clustered over sources",
            "#c0392b",
        ),
    ):
        rates = [r["success_rate"] for r in rows][::-1]
        bounds = [interval(r) for r in rows][::-1]
        ax.errorbar(
            rates,
            [y + offset for y in at],
            xerr=[
                [p - lo for p, (lo, _) in zip(rates, bounds, strict=True)],
                [hi - p for p, (_, hi) in zip(rates, bounds, strict=True)],
            ],
            fmt="o",
            markersize=4,
            color=colour,
            ecolor=colour,
            capsize=3,
            label=f"{confidence:.0%} {label}",
        )
    ax.set_yticks(at, names)
    ax.set_xlim(0, 1)
    ax.set_xlabel("success rate")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)
    return _svg(fig)


@_styled
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


@_styled
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


@_styled
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
