"""The report's figures: drawn once, byte for byte what matplotlib's own tight savefig gives."""

from __future__ import annotations

import io
import json
import re
import xml.etree.ElementTree as ET
from itertools import combinations

import pytest

from afbench.report import figures

from conftest import revision_dir


def matplotlib_tight_svg(fig) -> str:
    """The figure as matplotlib itself saves it with bbox_inches="tight" (two draws)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


@pytest.fixture(scope="module")
def analysis(demo_run) -> dict:
    report = revision_dir(demo_run) / "report"  # run_all's, only read
    return json.loads((report / "analysis.json").read_text())


def test_figures_are_byte_identical_to_matplotlibs_tight_savefig(analysis, monkeypatch):
    ours = figures.make_figures(analysis)
    monkeypatch.setattr(figures, "_svg", matplotlib_tight_svg)
    theirs = figures.make_figures(analysis)
    assert sorted(ours) == ["cost_success", "failures", "leaderboard", "paired", "per_source"]
    for name in theirs:
        assert ours[name] == theirs[name], name


def test_the_layout_only_draw_is_skipped_and_the_real_one_is_not(analysis, monkeypatch):
    seen = []
    check = figures._draws_nothing
    monkeypatch.setattr(figures, "_draws_nothing", lambda r: seen.append(check(r)) or seen[-1])
    svg = figures.leaderboard_figure(analysis["leaderboard"], analysis["confidence"])
    assert seen == [True, False]  # savefig's layout pass, then the one that writes the SVG
    assert "<path" in svg and analysis["leaderboard"][0]["display_name"] in svg


def svg_text_fills(svg: str) -> dict[str, str]:
    """Each text of the SVG, its fill colour (black when the style names none)."""
    fills = {}
    for text in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text"):
        fill = re.search(r"fill: (#[0-9a-f]{6})", text.get("style", ""))
        fills["".join(text.itertext())] = fill.group(1) if fill else "#000000"
    return fills


def test_heatmap_labels_take_the_colour_that_contrasts_with_their_cell(analysis):
    from matplotlib import colormaps

    rdbu = colormaps["RdBu"]
    # the colormap's ends are dark, its middle near white (WCAG relative luminance)
    assert figures.relative_luminance(rdbu(0.0)) < figures.WHITE_BELOW
    assert figures.relative_luminance(rdbu(1.0)) < figures.WHITE_BELOW
    assert figures.relative_luminance(rdbu(0.5)) > 0.8
    assert figures.label_colour((0, 0, 0, 1)) == "white"
    assert figures.label_colour((1, 1, 1, 1)) == "black"
    board = analysis["leaderboard"]
    models = [r["model"] for r in board]
    labels = {r["model"]: r["display_name"] for r in board}
    pairs = analysis["paired"]["pairs"]
    fills = svg_text_fills(figures.pairs_figure(models, labels, pairs))
    widest = max(pairs, key=lambda p: abs(p["difference_difference"]))
    narrowest = min(pairs, key=lambda p: abs(p["difference_difference"]))
    mark = "*" if widest["significant"] else ""
    assert abs(widest["difference_difference"]) > 0.4  # the darkest cells of the demo
    assert fills[f"{widest['difference_difference']:+.2f}{mark}"] == "#ffffff"
    assert fills[f"{-widest['difference_difference']:+.2f}{mark}"] == "#ffffff"
    mark = "*" if narrowest["significant"] else ""
    assert fills[f"{narrowest['difference_difference']:+.2f}{mark}"] == "#000000"


def crowded_costs(n: int) -> list[dict]:
    """n models with costs and success rates close together, some on top of each other."""
    return [
        {
            "display_name": f"Crowded Model {i:02d} (a long label{' ' * 3 + 'x' * (i % 7)})",
            "mean_cost_usd": 80 + (i % 9) * 0.7 + (i // 9) * 0.05,
            "success_rate": 0.45 + (i % 5) * 0.01,
            "on_frontier": i % 4 == 0,
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("case", ["demo", "crowded-9", "crowded-45"])
def test_cost_labels_never_overlap_as_the_svg_renderer_measures_them(case, analysis):
    models = (
        analysis["cost_success"]["models"]
        if case == "demo"
        else crowded_costs(int(case.split("-")[1]))
    )
    with figures._style():
        fig = figures.cost_plot(models, [], 200)
        ax = fig.axes[0]
        with figures.svg_layout(fig) as renderer:
            boxes = [figures.text_box(t, renderer) for t in ax.texts]
            legend = ax.get_legend().get_window_extent(renderer)
            ticks = [
                t.get_window_extent(renderer)
                for t in ax.get_xticklabels() + ax.get_yticklabels()
                if t.get_text()
            ]
    assert sorted(t.get_text() for t in ax.texts) == sorted(m["display_name"] for m in models)
    for (i, a), (j, b) in combinations(enumerate(boxes), 2):
        assert not a.overlaps(b), (ax.texts[i].get_text(), ax.texts[j].get_text())
    for box, text in zip(boxes, ax.texts, strict=True):
        assert not box.overlaps(legend), text.get_text()
        assert not any(box.overlaps(tick) for tick in ticks), text.get_text()
    svg = figures.cost_figure(models, [], 200)
    assert svg == figures.cost_figure(models, [], 200)  # placed the same way every time


# 5. figures: labels drawn literally --------------------------------------------------------
LABELS = ["$x^2$", r"\frac{a}{b}", r"$\frac$", "a$b", r"a\$b", "<&>", "50% $5 $"]


def svg_texts(svg: str) -> list[str]:
    return [
        "".join(t.itertext()) for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")
    ]


def test_every_figure_draws_display_names_exactly_as_typed():
    models = [f"m{i}" for i in range(len(LABELS))]
    labels = dict(zip(models, LABELS, strict=True))
    board = [
        {
            "display_name": n,
            "success_rate": 0.5,
            "wilson_low": 0.4,
            "wilson_high": 0.6,
            "clustered": {"low": 0.35, "high": 0.65},
        }
        for n in LABELS
    ]
    cost = [
        {"display_name": n, "mean_cost_usd": i, "success_rate": 0.1 * i, "on_frontier": i % 2 == 0}
        for i, n in enumerate(LABELS)
    ]
    pairs = [
        {"a": models[0], "b": m, "difference_difference": 0.1, "significant": True}
        for m in models[1:]
    ]
    sources = [{"source_id": "s$1$", "tasks": 3, "rates": dict.fromkeys(models, 0.5)}]
    drawn = {
        "leaderboard": svg_texts(figures.leaderboard_figure(board, 0.95)),
        "cost": svg_texts(figures.cost_figure(cost, [], 200)),
        "pairs": svg_texts(figures.pairs_figure(models, labels, pairs)),
        "per_source": svg_texts(figures.per_source_figure(sources, models, labels)),
    }
    for name, texts in drawn.items():
        for label in LABELS:
            assert label in texts, (name, label, texts)
    assert "s$1$ (3)" in drawn["per_source"]
