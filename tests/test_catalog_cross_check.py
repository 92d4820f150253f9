"""MANIFEST against SOURCES: every refused row is named by file, row and task."""

from __future__ import annotations

import re

import pytest

from afbench.catalog import cross_check, parse_manifest, parse_sources
from afbench.errors import AfbenchError

FILES = {"manifest": "MANIFEST.csv", "sources": "SOURCES.csv"}


def parsed(release_files, columns, manifest: bytes | None = None):
    tasks, _ = parse_manifest(
        manifest if manifest is not None else release_files["MANIFEST.csv"],
        "MANIFEST.csv",
        columns["manifest"],
    )
    sources, _ = parse_sources(release_files["SOURCES.csv"], "SOURCES.csv", columns["sources"])
    return tasks, sources


def test_the_demo_release_cross_checks(release_files, dir_config):
    tasks, sources = parsed(release_files, dir_config["columns"])
    cross_check(tasks, sources, dir_config["release"]["expected_counts"], FILES)


def test_fourteen_misspelt_source_ids_give_fourteen_distinct_lines(release_files, dir_config):
    lines = release_files["MANIFEST.csv"].decode().splitlines(keepends=True)
    misspelt = {}  # spreadsheet row -> task id
    for row in range(2, 2 + 14 * 20, 20):  # 14 rows spread over several sources
        fields = lines[row - 1].split(",")
        fields[1] = fields[1].replace("demo_source_", "demo_sorce_")
        lines[row - 1] = ",".join(fields)
        misspelt[row] = fields[0]
    tasks, sources = parsed(release_files, dir_config["columns"], "".join(lines).encode())
    with pytest.raises(AfbenchError) as info:
        cross_check(tasks, sources, dir_config["release"]["expected_counts"], FILES)
    found = [
        line.strip() for line in str(info.value).splitlines() if "source_id not in SOURCES" in line
    ]
    assert len(found) == 14 and len(set(found)) == 14
    for line, (row, task_id) in zip(found, sorted(misspelt.items()), strict=True):
        assert line.startswith(
            f"- MANIFEST.csv: row {row}: field 'source_id': task '{task_id}': source_id not in "
            "SOURCES (expected one of the 24 sources in SOURCES.csv"
        )
        assert re.search(r"found 'demo_sorce_\d\d'", line)
        assert "closest: demo_source_" in line
    # the per-source counts then disagree too, and say so against SOURCES
    assert "SOURCES.csv: field 'n_tasks'" in str(info.value)
