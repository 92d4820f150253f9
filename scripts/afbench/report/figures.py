"""The report's figures, drawn with matplotlib as deterministic inline SVG.

Every figure is drawn under matplotlib's own defaults and afbench's few settings, whatever the
user's matplotlib configuration (matplotlibrc files, MPLCONFIGDIR, a style, text.usetex, a
font): the same analysis gives the same bytes anywhere, and the user's settings are left as
they were."""

from __future__ import annotations

import contextlib
import functools
import io

from afbench.kinds import ANALYSIS

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
    pass is skipped: the SVG is byte-for-byte the same (tests/report/test_figures.py holds it to
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
    rates = [r["success_rate"] for r in rows][::-1]
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


def relative_luminance(rgba: tuple[float, ...]) -> float:
    """WCAG 2's relative luminance of an sRGB colour (components 0..1)."""
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


# the luminance at which white and black text have the same WCAG contrast ratio:
# (1 + 0.05) / (L + 0.05) = (L + 0.05) / (0 + 0.05)
WHITE_BELOW = (1.05 * 0.05) ** 0.5 - 0.05


def label_colour(rgba: tuple[float, ...]) -> str:
    """Black or white, whichever contrasts more with a cell of this colour."""
    return "white" if relative_luminance(rgba) < WHITE_BELOW else "black"


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
    image = ax.imshow(grid, cmap="RdBu", vmin=-0.5, vmax=0.5, interpolation="none")
    names = [_literal(labels[m]) for m in models]
    ax.set_xticks(range(size), names, rotation=45, ha="right")
    ax.set_yticks(range(size), names)
    if size <= 12:  # beyond that the numbers are unreadable; the table has them all
        for (i, j), mark in marks.items():
            ax.text(
                j,
                i,
                f"{grid[i][j]:+.2f}{mark}",
                ha="center",
                va="center",
                fontsize=7,
                color=label_colour(image.cmap(image.norm(grid[i][j]))),
            )
    fig.colorbar(image, ax=ax, label="row minus column success rate")
    return _svg(fig)


@_styled
def per_source_figure(rows: list[dict], models: list[str], labels: dict[str, str]) -> str:
    grid = [
        [r["rates"][m] if r["rates"][m] is not None else float("nan") for m in models] for r in rows
    ]
    fig, ax = _subplots(0.55 * len(models) + 3, 0.28 * len(rows) + 1.5)
    image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto", interpolation="none")
    ax.set_xticks(
        range(len(models)), [_literal(labels[m]) for m in models], rotation=45, ha="right"
    )
    ax.set_yticks(range(len(rows)), [_literal(f"{r['source_id']} ({r['tasks']})") for r in rows])
    fig.colorbar(image, ax=ax, label="success rate")
    return _svg(fig)


@_styled
def cost_figure(models: list[dict], frontier: list[str], budget: float) -> str:
    return _svg(cost_plot(models, frontier, budget))


MARKER_AREA = 36  # points²: a marker is sqrt(36) = 6 points across
LABEL_PAD = 2.0  # points kept clear around every label
NEAR = 6  # points: a label this close to its point needs no line to it


def cost_plot(models: list[dict], frontier: list[str], budget: float):
    """The cost-success scatter as a figure (its labels placed apart: place_labels); drawn
    under afbench's style by cost_figure."""
    fig, ax = _subplots(7, 4.2)
    for m in models:
        ax.scatter(
            m["mean_cost_usd"],
            m["success_rate"],
            s=MARKER_AREA,
            color="#c0392b" if m["on_frontier"] else "#7f8c8d",
            zorder=3,
        )
    front = [m for m in models if m["on_frontier"]]
    (frontier_line,) = ax.plot(
        [m["mean_cost_usd"] for m in front],
        [m["success_rate"] for m in front],
        color="#c0392b",
        linestyle="--",
        label="cost-success Pareto frontier",
    )
    ax.set_xlabel(f"mean reported cost per task (USD; nominal budget USD {budget:g})")
    ax.set_ylabel("success rate")
    ax.set_ylim(0, 1)
    ax.set_xlim(*ax.get_xlim())  # fixed before the labels are placed in display space
    ax.grid(alpha=0.3)
    legend = ax.legend(loc="lower right")
    place_labels(
        fig,
        ax,
        [(_literal(m["display_name"]), (m["mean_cost_usd"], m["success_rate"])) for m in models],
        legend,
        [frontier_line],
    )
    return fig


@contextlib.contextmanager
def svg_layout(fig):
    """A renderer that measures text as the SVG backend draws it, with the figure at the SVG
    backend's 72 dpi meanwhile (one display unit is one point), as savefig lays it out."""
    from matplotlib.backends.backend_svg import RendererSVG

    dpi = fig.dpi
    fig.dpi = 72
    try:
        width, height = fig.get_size_inches()
        yield RendererSVG(width * 72, height * 72, io.StringIO())
    finally:
        fig.dpi = dpi


def text_box(text, renderer):
    """The box of a text artist alone (an annotation's connecting line left out)."""
    from matplotlib.text import Annotation, Text

    if isinstance(text, Annotation):
        text.update_positions(renderer)  # where its offset puts the text, as drawing does
    return Text.get_window_extent(text, renderer)


def _candidates():
    """Where a label may go, nearest first: eight directions at growing distances (points),
    each with the alignment that keeps the label on the far side of its point."""
    import math

    for distance in (NEAR, 14, 24, 36, 50):
        for step in range(8):
            angle = math.radians(45 * step + 30)
            dx, dy = distance * math.cos(angle), distance * math.sin(angle)
            ha = "left" if dx > 1 else "right" if dx < -1 else "center"
            va = "bottom" if dy > 1 else "top" if dy < -1 else "center"
            yield distance, (round(dx, 3), round(dy, 3)), ha, va


def _clear(box: tuple, frame: tuple, taken: list[tuple]) -> bool:
    """Whether a label box (x0, y0, x1, y1, each box ordered) lies inside the frame and touches
    none of the boxes taken: Bbox.contains and Bbox.overlaps over plain tuples, edges included
    (tens of thousands of checks at 45 models)."""
    x0, y0, x1, y1 = box
    if not (frame[0] <= x0 and x1 <= frame[2] and frame[1] <= y0 and y1 <= frame[3]):
        return False
    return not any(x0 <= b[2] and b[0] <= x1 and y0 <= b[3] and b[1] <= y1 for b in taken)


def _extents(box) -> tuple[float, float, float, float]:
    x0, y0, x1, y1 = box.extents
    return min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)


def _padded(box: tuple, pad: float) -> tuple[float, float, float, float]:
    return box[0] - pad, box[1] - pad, box[2] + pad, box[3] + pad


def place_labels(
    fig, ax, labels: list[tuple[str, tuple[float, float]]], legend, lines: list
) -> None:
    """Each label beside its point where its box (measured by the SVG renderer) is clear of
    every other label, every marker and the legend, inside the axes, and off the `lines` where
    such a place is near; a label that finds no clear place goes to a column right of the
    axes, stacked in the order of the points' heights, with a line to its point.
    Deterministic, and no two label boxes overlap."""
    from matplotlib.transforms import Bbox

    half = MARKER_AREA**0.5 / 2 + LABEL_PAD
    line = {"arrowstyle": "-", "color": "#7f8c8d", "lw": 0.5, "shrinkA": 0, "shrinkB": 3}
    with svg_layout(fig) as renderer:
        frame = _extents(ax.get_window_extent(renderer).padded(-LABEL_PAD))
        points = [tuple(ax.transData.transform(xy)) for _, xy in labels]
        taken = [(x - half, y - half, x + half, y + half) for x, y in points]
        taken.append(_padded(_extents(legend.get_window_extent(renderer)), LABEL_PAD))
        paths = [drawn.get_transform().transform_path(drawn.get_path()) for drawn in lines]
        probe = ax.annotate("", (0, 0), xytext=(0, 0), textcoords="offset points", fontsize=7)
        left = []
        for (label, xy), point in zip(labels, points, strict=True):
            probe.set_text(label)
            probe.xy = xy
            probe.xyann = (0, 0)
            # at 72 dpi an offset of (dx, dy) points moves the box by (dx, dy) display units:
            # the label is measured once per alignment, and each candidate is that box moved
            at_point: dict[tuple[str, str], tuple] = {}
            place = None  # the nearest clear place, the nearest off the lines too if any
            for distance, (dx, dy), ha, va in _candidates():
                if (ha, va) not in at_point:
                    probe.set_horizontalalignment(ha)
                    probe.set_verticalalignment(va)
                    at_point[ha, va] = _extents(text_box(probe, renderer))
                x0, y0, x1, y1 = at_point[ha, va]
                box = (x0 + dx, y0 + dy, x1 + dx, y1 + dy)
                if _clear(box, frame, taken):
                    drawn_box = Bbox.from_extents(*box)
                    crossed = any(path.intersects_bbox(drawn_box, filled=False) for path in paths)
                    if place is None or not crossed:
                        place = (box, distance, (dx, dy), ha, va)
                    if not crossed:
                        break
            if place is None:
                left.append((label, xy, point))
                continue
            box, distance, offset, ha, va = place
            taken.append(_padded(box, LABEL_PAD))
            ax.annotate(
                label,
                xy,
                xytext=offset,
                textcoords="offset points",
                ha=ha,
                va=va,
                fontsize=7,
                arrowprops=None if distance <= NEAR else line,
            )
        probe.remove()
        column = frame[2] + LABEL_PAD + 12
        stacked, below = [], None
        for label, xy, (x, y) in sorted(left, key=lambda item: (-item[2][1], item[0])):
            probe = ax.annotate(
                label, xy, xytext=(0, 0), textcoords="offset points", fontsize=7, va="center"
            )
            height = text_box(probe, renderer).height
            probe.remove()
            at = y if below is None else min(y, below - height / 2)
            below = at - height / 2 - LABEL_PAD
            stacked.append((label, xy, (x, y), at))
        # a column longer than the axes rises above them rather than reach the x tick labels
        rise = max(0, frame[1] - below) if below is not None else 0
        for label, xy, (x, y), at in stacked:
            ax.annotate(
                label,
                xy,
                xytext=(column - x, at + rise - y),
                textcoords="offset points",
                ha="left",
                va="center",
                fontsize=7,
                arrowprops=line,
                annotation_clip=False,
            )


# the failure classes' colours: the environment's grey, the protocol's red, the model's own
# stops from the nearest (dark blue) to nothing (pale)
FAILURE_COLOURS = {
    "infrastructure": "#7f8c8d",
    "no_verdict": "#bdc3c7",
    "over_budget": "#c0392b",
    "budget_or_time_stop": "#e0a800",
    "near_miss": "#1f5f8b",
    "partial": "#5d9cc9",
    "none": "#c6dbef",
    "progress_unknown": "#d9d9d9",
}


@_styled
def failures_figure(anatomy: dict) -> str:
    """Each official model's failed tasks by class, stacked (afbench.task_analysis.anatomy)."""
    rows = anatomy["official"]
    fig, ax = _subplots(7, 0.36 * len(rows) + 1.5)
    names_shown = [_literal(r["display_name"]) for r in rows][::-1]
    at = list(range(len(rows)))
    left = [0] * len(rows)
    classes = [c for c in anatomy["classes"] if any(r["counts"].get(c) for r in rows)]
    for cls in classes:
        counts = [r["counts"].get(cls, 0) for r in rows][::-1]
        ax.barh(
            at,
            counts,
            left=left,
            color=FAILURE_COLOURS[cls],
            label=anatomy["labels"][cls],
            height=0.7,
        )
        left = [a + b for a, b in zip(left, counts, strict=True)]
    ax.set_yticks(at, names_shown)
    ax.set_xlabel("failed tasks")
    ax.grid(axis="x", alpha=0.3)
    if classes:  # no failed task: nothing to tell apart
        ax.legend(
            loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3, fontsize=7, frameon=False
        )
    return _svg(fig)


def names(analysis: dict) -> list[str]:
    """The report's figures for this analysis, by name (make_figures draws them)."""
    analysis = ANALYSIS.view(analysis)
    paired = ["paired"] if analysis.paired["pairs"] else []
    failures = ["failures"] if (analysis.anatomy or {}).get("official") else []
    return ["leaderboard", "cost_success", "per_source", *paired, *failures]


def make_figures(analysis: dict) -> dict[str, str]:
    """Every figure of the report, name -> SVG text."""
    analysis = ANALYSIS.view(analysis)
    board = analysis.leaderboard
    models = [r["model"] for r in board]
    labels = {r["model"]: r["display_name"] for r in board}
    cost = analysis.cost_success
    draw = {
        "leaderboard": lambda: leaderboard_figure(board, analysis.confidence),
        "cost_success": lambda: cost_figure(cost["models"], cost["frontier"], analysis.budget_usd),
        "per_source": lambda: per_source_figure(analysis.per_source, models, labels),
        "paired": lambda: pairs_figure(models, labels, analysis.paired["pairs"]),
        "failures": lambda: failures_figure(analysis.anatomy),
    }
    return {name: draw[name]() for name in names(analysis)}
