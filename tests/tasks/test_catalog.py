"""The catalog's per-task digests and how an exported task folder splits into parts."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from fractions import Fraction

import pytest

from afbench.core.errors import AfbenchError
from afbench.core.fsutil import check_name
from afbench.tasks.catalog import (
    MANIFEST_FIELDS,
    catalog_digests,
    cross_check,
    export_digests,
    parse_manifest,
    parse_sources,
    part_of,
    select_tasks,
)

import properties as prop
from conftest import (
    afbench,
    catalog_of,
    config_for,
    fetch_release,
    job,
    release_dir,
    write_tree,
)

ROW = {
    "task_id": "t1",
    "source_id": "s1",
    "source_ref": "Theorem 1",
    "target_declaration": "A.b",
    "n_obligations": 2,
    "workspace": "workspaces/t1",
}


def test_each_catalog_digest_follows_its_own_fields_only():
    base = catalog_digests(ROW)
    assert set(base) == {"manifest_row", "source_reference", "obligations"}
    moved = catalog_digests({**ROW, "workspace": "elsewhere"})
    assert moved["manifest_row"] != base["manifest_row"]
    assert moved["source_reference"] == base["source_reference"]
    assert moved["obligations"] == base["obligations"]
    assert catalog_digests({**ROW, "n_obligations": 3})["obligations"] != base["obligations"]
    assert catalog_digests(dict(reversed(list(ROW.items())))) == base  # canonical: key order
    assert set(ROW) == set(MANIFEST_FIELDS)


@pytest.mark.parametrize(
    ("path", "part"),
    [
        ("instruction.md", "statement"),
        ("environment/workspace/Task.lean", "statement"),
        ("environment/Dockerfile", "environment"),
        ("tests/test.sh", "verifier"),
        ("solution/solve.sh", "solution"),
        ("README.md", "environment"),  # anything unknown: conservatively, a rerun
    ],
)
def test_exported_files_fall_into_parts(path, part):
    assert part_of(path) == part


def test_a_version_bump_alone_changes_no_part_and_a_link_is_refused(tmp_path):
    task = tmp_path / "t1"
    (task / "tests").mkdir(parents=True)
    (task / "tests/test.sh").write_text("#!/bin/bash\n")
    (task / "tests/test.sh").chmod(0o755)
    toml = '[task]\nname = "org/t1"\nversion = "{v}"\n\n[verifier]\ntimeout_sec = 60.0\n'
    (task / "task.toml").write_text(toml.format(v="1.0.0"))
    one = export_digests(task)
    (task / "task.toml").write_text(toml.format(v="2.0.0"))
    two = export_digests(task)
    assert one["parts"] == two["parts"] and one["checksum"] != two["checksum"]
    assert two["declared"] == {"name": "org/t1", "version": "2.0.0"}
    assert one["files"]["task.toml#verifier"]["part"] == "verifier"
    (task / "tests/test.sh").chmod(0o644)  # a verifier that lost its executable bit changed
    assert export_digests(task)["parts"]["verifier"] != two["parts"]["verifier"]
    assert "shared mode" in two["regrade"]
    (task / "task.toml").write_text('[verifier]\nenvironment_mode = "separate"\n')
    assert export_digests(task)["regrade"] is None
    (task / "link").symlink_to(task / "task.toml")
    with pytest.raises(AfbenchError, match="symbolic link"):
        export_digests(task)


@pytest.mark.parametrize(
    "task_id", ["..", "../x", "a/b", "/abs", "-rf", ".hidden", "a\x00b", "a b", "x" * 201, "é"]
)
def test_unsafe_ids_never_become_paths(task_id):
    data = prop.MANIFEST.replace(b"t1,s1", f"{task_id},s1".encode(), 1)
    with pytest.raises(AfbenchError, match="M: row 2: "):
        parse_manifest(data, "M", prop.MANIFEST_MAP)


# --- stratified selections ------------------------------------------------------------------
def largest_remainder(sizes: dict[str, int], total: int) -> dict[str, int]:
    """Hamilton by hand, with exact fractions: floors, then the largest remainders (ties: the
    larger source, then the earlier)."""
    everything = sum(sizes.values())
    quota = {s: Fraction(total * n, everything) for s, n in sizes.items()}
    seats = {s: math.floor(q) for s, q in quota.items()}
    order = sorted(sizes, key=lambda s: (-(quota[s] - seats[s]), -sizes[s], list(sizes).index(s)))
    for s in order[: total - sum(seats.values())]:
        seats[s] += 1
    return seats


def test_a_stratified_selection_is_byte_identical_and_proportional(
    demo_chain_rev, demo_chain_catalog
):
    outputs = []
    for attempt in ("one", "two"):
        out = demo_chain_rev.parent / f"stratified-{attempt}.json"
        job(
            "select-tasks",
            f"--catalog={demo_chain_rev / 'tasks/catalog.json'}",
            "--name=pilot",
            "--stratified-tasks=50",
            "--stratified-seed=7",
            f"--output={out}",
        )
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    selection = json.loads(outputs[0])
    sizes = Counter(t["source_id"] for t in demo_chain_catalog["tasks"])
    sizes = {s["source_id"]: sizes[s["source_id"]] for s in demo_chain_catalog["sources"]}
    expected = largest_remainder(sizes, 50)
    chosen = Counter(t["source_id"] for t in selection["tasks"])
    assert (
        {s: chosen[s] for s in sizes}
        == expected
        == selection["criteria"]["stratified"]["allocation"]
    )
    assert selection["counts"]["tasks"] == len(selection["task_ids"]) == 50
    # within a source: the tasks with the lowest sha256(f"{seed}:{task_id}")
    for source, count in expected.items():
        ids = [t["task_id"] for t in demo_chain_catalog["tasks"] if t["source_id"] == source]
        lowest = sorted(ids, key=lambda t: hashlib.sha256(f"7:{t}".encode()).digest())[:count]
        assert [t for t in selection["task_ids"] if t in ids] == [t for t in ids if t in lowest]
    order = [t["task_id"] for t in demo_chain_catalog["tasks"]]
    assert selection["task_ids"] == sorted(selection["task_ids"], key=order.index)
    assert len(selection["selection_sha256"]) == 64
    # another seed, another draw; the same allocation
    job(
        "select-tasks",
        f"--catalog={demo_chain_rev / 'tasks/catalog.json'}",
        "--name=pilot",
        "--stratified-tasks=50",
        "--stratified-seed=8",
        f"--output={demo_chain_rev.parent / 'stratified-8.json'}",
    )
    other = json.loads((demo_chain_rev.parent / "stratified-8.json").read_text())
    assert other["task_ids"] != selection["task_ids"]
    assert other["criteria"]["stratified"]["allocation"] == expected


build_catalog = catalog_of


def test_catalog_counts_links_and_input_hashes(fetched_catalog, fetched_config):
    assert fetched_catalog["counts"] == {"tasks": 341, "sources": 24, "obligations": 1155}
    task = fetched_catalog["tasks"][0]
    assert set(task) == {
        "task_id",
        "source_id",
        "source_ref",
        "target_declaration",
        "n_obligations",
        "workspace",
        "workspace_url",
    }
    assert task["workspace_url"] == (
        f"https://github.com/afbench/test-release/tree/{'a' * 40}/{task['workspace']}"
    )
    assert (
        fetched_catalog["inputs"]["MANIFEST.csv"] == fetched_config["files"]["manifest"]["sha256"]
    )
    assert "not a task package" in fetched_catalog["note"]
    assert "not AutoformBench data" in fetched_catalog["license"]  # the demo says it is synthetic
    fetched_config["release"]["synthetic"] = False
    fetched_config["release"]["license"] = "CC BY-NC 4.0 (research and evaluation only)"
    afbench("verify", "--release-dir", release_dir(fetched_config), cfg=fetched_config)
    assert "CC BY-NC 4.0" in build_catalog(fetched_config)["license"]


def _with_files(tmp_path, release_files, demo_yaml, **changes):
    files = {**release_files, **changes}
    mirror = write_tree(tmp_path / "m", files)
    cfg = config_for(
        files, "a" * 40, {"kind": "dir", "mirror": str(mirror)}, tmp_path / "r", demo_yaml
    )
    fetch_release(cfg)
    return cfg


def test_sources_n_tasks_mismatch_is_caught(tmp_path, release_files, demo_yaml):
    text = release_files["SOURCES.csv"].decode().splitlines()
    fields = text[1].split(",")
    fields[-1] = str(int(fields[-1]) + 1)
    text[1] = ",".join(fields)
    cfg = _with_files(
        tmp_path, release_files, demo_yaml, **{"SOURCES.csv": ("\n".join(text) + "\n").encode()}
    )
    with pytest.raises(AfbenchError, match="n_tasks of source 'demo_source_01'"):
        build_catalog(cfg)


def test_unknown_source_and_bad_task_id_are_caught(tmp_path, release_files, demo_yaml):
    lines = release_files["MANIFEST.csv"].decode().splitlines()
    lines[2] = "../escape" + lines[2][lines[2].index(",") :]
    cfg = _with_files(
        tmp_path, release_files, demo_yaml, **{"MANIFEST.csv": ("\n".join(lines) + "\n").encode()}
    )
    with pytest.raises(AfbenchError) as err:
        build_catalog(cfg)
    assert "MANIFEST.csv: row 3: field 'task_id': not a safe name" in str(err.value)
    lines = release_files["MANIFEST.csv"].decode().splitlines()
    lines[1] = lines[1].replace("demo_source_01", "nowhere", 1)
    cfg = _with_files(
        tmp_path / "2",
        release_files,
        demo_yaml,
        **{"MANIFEST.csv": ("\n".join(lines) + "\n").encode()},
    )
    with pytest.raises(AfbenchError, match="source_id not in SOURCES.*nowhere"):
        build_catalog(cfg)


def test_selection_is_deterministic_and_hashed(fetched_catalog):
    one = select_tasks(
        fetched_catalog, "two", sources=["demo_source_03", "demo_source_07"], limit=3
    )
    again = select_tasks(
        fetched_catalog, "two", sources=["demo_source_07", "demo_source_03"], limit=3
    )
    assert one["task_ids"] == again["task_ids"]
    assert one["selection_sha256"] == again["selection_sha256"]
    assert len(one["task_ids"]) == 3
    assert all(t.startswith("demo_s03") for t in one["task_ids"])
    full = select_tasks(fetched_catalog, "all")
    assert len(full["task_ids"]) == 341


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"tasks": ["demo_s01_t001", "demo_s01_t001"]}, "task listed twice"),
        ({"sources": ["demo_source_01", "demo_source_01"]}, "source listed twice"),
        ({"tasks": ["nope"]}, "unknown task"),
        ({"sources": ["nope"]}, "unknown source_id"),
        ({"tasks": ["demo_s01_t001"], "sources": ["demo_source_02"]}, "selection is empty"),
        ({"limit": 0}, "at least 1"),
        ({"limit": 1.5}, "whole number"),
        ({"limit": True}, "whole number"),
    ],
)
def test_selection_errors(fetched_catalog, kwargs, match):
    with pytest.raises(AfbenchError, match=match):
        select_tasks(fetched_catalog, "bad", **kwargs)


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


@pytest.mark.parametrize("cost", ["12.5\n", "1\r\n"])
def test_a_number_ending_in_a_newline_is_refused(cost):
    data = prop.RESULTS.replace(b",12.5,", f',"{cost}",'.encode())
    with pytest.raises(AfbenchError, match="R: row 2: field 'cost_usd': not a finite"):
        prop.read_all(prop.MANIFEST, prop.SOURCES, data)
    accepted = prop.RESULTS.replace(b"true,2,12.5", b'true,"2\n",12.5')
    with pytest.raises(AfbenchError, match="row 2: field 'obligations_accepted': not a whole"):
        prop.read_all(prop.MANIFEST, prop.SOURCES, accepted)
    count = prop.MANIFEST.replace(b"A.one,2,", b'A.one,"2\n",')
    with pytest.raises(AfbenchError, match="M: row 2: field 'n_obligations': not a whole"):
        parse_manifest(count, "M", prop.MANIFEST_MAP)
    books = prop.SOURCES.replace(b"CC,2\n", b'CC,"2\n"\n')
    with pytest.raises(AfbenchError, match="S: row 2: field 'n_tasks': not a whole"):
        parse_sources(books, "S", prop.SOURCES_MAP)


@pytest.mark.parametrize("field", ["task_id", "source_id"])
def test_an_id_ending_in_a_newline_is_refused(field):
    value = {"task_id": b"t1", "source_id": b"s1"}[field]
    data = prop.MANIFEST.replace(b"t1,s1", b"t1,s1".replace(value, b'"' + value + b'\n"'), 1)
    with pytest.raises(AfbenchError, match=f"M: row 2: field '{field}': not a safe name"):
        parse_manifest(data, "M", prop.MANIFEST_MAP)
    with pytest.raises(AfbenchError, match="not a safe name"):
        check_name("t1\n", "task_id")
    results = prop.RESULTS.replace(b"t1,s1", b'"t1\n",s1', 1)
    with pytest.raises(AfbenchError, match="row 2: field 'task_id': unknown task_id"):
        prop.read_all(prop.MANIFEST, prop.SOURCES, results)


def test_a_million_empty_columns_are_refused_without_comparing_them_pairwise():
    data = b"," * 1_000_000 + b"\n"
    with pytest.raises(AfbenchError) as err:
        parse_manifest(data, "M", prop.MANIFEST_MAP)
    assert str(err.value) == (
        "M: row 1: too many columns in header (expected at most 1000, found 1000001)"
    )
    named = b"task_id" + b",x" * 1_000_000 + b"\nt1" + b"," * 1_000_000 + b"\n"
    with pytest.raises(AfbenchError, match="too many columns in header"):
        parse_manifest(named, "M", prop.MANIFEST_MAP)


def test_duplicate_columns_are_named_and_a_huge_header_is_quoted_short():
    data = b",".join([b"task_id", b"a" * 5000, b"a" * 5000] + [b"c%d" % i for i in range(990)])
    with pytest.raises(AfbenchError) as err:
        parse_manifest(data + b"\n", "M", prop.MANIFEST_MAP)
    message = str(err.value)
    assert message.startswith("M: row 1: field 'aaaa") and "duplicate column in header" in message
    assert len(message) < 2_100  # the header and the field name both quoted short


def test_every_wrong_row_is_reported_with_its_spreadsheet_row():
    data = prop.MANIFEST + b"t4,s2\n\nt5,s2,x,y,1,w,extra\n"
    with pytest.raises(AfbenchError) as err:
        parse_manifest(data, "M", prop.MANIFEST_MAP)
    assert [str(p) for p in err.value.problems] == [
        "M: row 5: wrong number of fields (expected 6, found 2)",
        "M: row 6: wrong number of fields (expected 6, found 0)",
        "M: row 7: wrong number of fields (expected 6, found 7)",
    ]


def test_a_huge_count_is_out_of_range_not_a_traceback():
    data = prop.MANIFEST.replace(b"A.one,2,", b"A.one," + b"9" * 5000 + b",")
    with pytest.raises(AfbenchError, match="row 2: field 'n_obligations': number out of range"):
        parse_manifest(data, "M", prop.MANIFEST_MAP)
