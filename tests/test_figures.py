"""The report's figures: drawn once, byte for byte what matplotlib's own tight savefig gives."""

from __future__ import annotations

import io
import json

import pytest

from afbench import figures

from conftest import config_for, run_all, write_tree


def matplotlib_tight_svg(fig) -> str:
    """The figure as matplotlib itself saves it with bbox_inches="tight" (two draws)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    text = buffer.getvalue()
    return text[text.index("<svg") :]


@pytest.fixture(scope="module")
def analysis(tmp_path_factory, release_files, demo_yaml) -> dict:
    root = tmp_path_factory.mktemp("figures")
    mirror = write_tree(root / "mirror", release_files)
    cfg = config_for(
        release_files, "c" * 40, {"kind": "dir", "mirror": str(mirror)}, root / "out", demo_yaml
    )
    report = run_all(cfg) / "report"
    return json.loads((report / "analysis.json").read_text())


def test_figures_are_byte_identical_to_matplotlibs_tight_savefig(analysis, monkeypatch):
    ours = figures.make_figures(analysis)
    monkeypatch.setattr(figures, "_svg", matplotlib_tight_svg)
    theirs = figures.make_figures(analysis)
    assert sorted(ours) == ["cost_success", "leaderboard", "paired", "per_source"]
    for name in theirs:
        assert ours[name] == theirs[name], name


def test_the_layout_only_draw_is_skipped_and_the_real_one_is_not(analysis, monkeypatch):
    seen = []
    check = figures._draws_nothing
    monkeypatch.setattr(figures, "_draws_nothing", lambda r: seen.append(check(r)) or seen[-1])
    svg = figures.leaderboard_figure(analysis["leaderboard"], analysis["confidence"])
    assert seen == [True, False]  # savefig's layout pass, then the one that writes the SVG
    assert "<path" in svg and analysis["leaderboard"][0]["display_name"] in svg
