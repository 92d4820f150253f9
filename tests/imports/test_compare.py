"""The comparison of imported models (afbench.imports.compare, `afbench job compare-models`): the
same model twice refused, the authors' published figures checked."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from afbench.core.errors import AfbenchError

import properties as prop
from conftest import (
    IMPORTS,
    afbench,
    cli,
    job,
    one_line,
    published_flags,
)


# --- 9. smaller ones found on the way --------------------------------------------------------
def test_compare_refuses_the_same_model_twice_by_slug_or_by_content(tmp_path):
    tree = prop.write_tree()
    a = tree.imports[0]
    code, err = cli(
        "job",
        "compare-models",
        f"--import={a}",
        f"--import={a}",
        "--strict-budget=false",
        "--published-source=",
        "--published-task-rows=",
        "--strict-published=false",
        f"--summary={tmp_path / 's.json'}",
        f"--leaderboard={tmp_path / 'b.csv'}",
    )
    assert code == 2 and "model 'demo-model-a' is given twice" in one_line(err)
    twin = tmp_path / "twin.json"
    doc = json.loads(a.read_text())
    doc["model"], doc["display_name"] = "demo-model-twin", "Twin"
    twin.write_text(json.dumps(doc))
    code, err = cli(
        "job",
        "compare-models",
        f"--import={a}",
        f"--import={twin}",
        "--strict-budget=false",
        "--published-source=",
        "--published-task-rows=",
        "--strict-published=false",
        f"--summary={tmp_path / 's.json'}",
        f"--leaderboard={tmp_path / 'b.csv'}",
    )
    line = one_line(err)
    assert code == 2 and "'demo-model-a' and 'demo-model-twin' are one results file" in line, line
    assert not (tmp_path / "s.json").exists()


# --- the authors' published figures ---------------------------------------------------------
def compare(cfg: dict, demo_chain_rev: Path, out: Path, **overrides):
    imports = sorted((demo_chain_rev / IMPORTS).glob("demo-model-*.json"))
    cfg = copy.deepcopy(cfg)
    for key, value in overrides.items():
        cfg["import"][key] = value
    return job(
        "compare-models",
        *[f"--import={p}" for p in imports],
        "--strict-budget=false",
        *published_flags(cfg),
        f"--summary={out / 'summary.json'}",
        f"--leaderboard={out / 'leaderboard.csv'}",
    )


def test_a_published_count_that_differs_is_shown_and_refused_when_strict(demo_chain, tmp_path):
    demo_chain_rev, cfg = demo_chain
    cfg = copy.deepcopy(cfg)
    cfg["models"]["demo-model-b"]["published_passes"] = 229
    source = cfg["release"]["published"]["source"]
    warnings = compare(cfg, demo_chain_rev, tmp_path)
    assert warnings == [
        "does not match the authors' published figures: model 'demo-model-b': the import has "
        f"228 passes, the authors' leaderboard 229 (published: {source})"
    ]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["published"]["matches"] is False
    row = next(r for r in summary["leaderboard"] if r["model"] == "demo-model-b")
    assert (row["published_passes"], row["matches_published"]) == (229, False)
    # the report shows it loudly
    afbench(
        "report",
        "--summary",
        tmp_path / "summary.json",
        *[
            a
            for p in sorted((demo_chain_rev / IMPORTS).glob("demo-model-*.json"))
            for a in ("--import", p)
        ],
        "--catalog",
        demo_chain_rev / "tasks/catalog.json",
        "--receipt",
        demo_chain_rev / "release/receipt.json",
        "--output-dir",
        tmp_path / "report",
    )
    html = (tmp_path / "report/index.html").read_text()
    assert 'id="published-mismatch"' in html and "DIFFERS: published 229 (-1)" in html
    # strict: refused, naming the model, both counts and the source; nothing written
    with pytest.raises(AfbenchError) as refused:
        compare(cfg, demo_chain_rev, tmp_path / "strict", strict_published=True)
    message = str(refused.value)
    assert "strict published check refused" in message and "'demo-model-b'" in message
    assert "228 passes" in message and "229" in message and source in message
    assert not (tmp_path / "strict").exists()


def test_published_task_rows_and_costs_are_checked_too(demo_chain, tmp_path):
    demo_chain_rev, cfg = demo_chain
    cfg = copy.deepcopy(cfg)
    cfg["release"]["published"]["task_rows"] = 3070
    cfg["models"]["demo-model-d"]["published_over_budget_usd"] = [412.25]
    warnings = compare(cfg, demo_chain_rev, tmp_path)
    assert len(warnings) == 2
    assert "USD [412.5]" in warnings[0] and "USD [412.25]" in warnings[0]
    assert "3069 task rows" in warnings[1] and "3070" in warnings[1]
    # with one published model not imported, the task rows are not checked (not a difference)
    cfg["release"]["published"]["task_rows"] = 3069
    cfg["models"]["demo-model-d"]["published_over_budget_usd"] = [412.5]
    imports = sorted((demo_chain_rev / IMPORTS).glob("demo-model-*.json"))[:8]
    job(
        "compare-models",
        *[f"--import={p}" for p in imports],
        "--strict-budget=false",
        *published_flags(cfg),
        "--strict-published=true",
        f"--summary={tmp_path / 's.json'}",
        f"--leaderboard={tmp_path / 'l.csv'}",
    )
    check = json.loads((tmp_path / "s.json").read_text())["published"]
    assert check["task_rows"]["matches"] is None
    assert "not imported: demo-model-i" in check["task_rows"]["note"]
    assert check["matches"] is True
