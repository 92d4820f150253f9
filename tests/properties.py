"""Property checks for every reader, shared by the test suite and bench/robustness.py (which
runs them far longer). Each input either gives the clean result (a harmless change) or one of
our own errors: never another exception, never a silent acceptance of a changed value."""

from __future__ import annotations

import copy
import csv
import io
import json
import math
import os
import re
import socket
import tempfile
from datetime import date
from pathlib import Path

import yaml
from hypothesis import strategies as st

from afbench.core.config import (
    MAX_CONFIG_BYTES,
    MAX_YAML_VALUES,
    default_columns,
    load_config,
    validate_config,
)
from afbench.core.errors import AfbenchError, printable
from afbench.core.fsutil import (
    check_name,
    json_bytes,
    read_json_file,
    read_regular_file,
    sha256_file,
)
from afbench.core.harbor import MODEL, check_environment_type
from afbench.core.harbor_files import classify_trial
from afbench.imports.official import parse_results
from afbench.runs.verdicts import parse_verdict
from afbench.tasks.catalog import parse_manifest, parse_sources

# the schema's column mappings (our field names, upstream's the same by default)
MANIFEST_MAP = default_columns("manifest")
SOURCES_MAP = default_columns("sources")
RESULTS_MAP = default_columns("results")

MANIFEST = (
    b"task_id,source_id,source_ref,target_declaration,n_obligations,workspace\n"
    b't1,s1,Thm 1,A.one,2,ws/t1\nt2,s1,"Thm 2, part b",A.two,1,ws/t2\n'
    b"t3,s2,Lemma 3,B.three,3,ws/t3\n"
)
SOURCES = (
    b'source_id,title,authors,license,n_tasks\ns1,Book One,Ann,CC,2\ns2,"Book ""Two""",Bob,CC,1\n'
)
RESULTS = (
    b"task_id,source_id,target_declaration,n_obligations,success,obligations_accepted,"
    b"cost_usd,stop_reason,source_condition,scaffold,tools,stopping_policy,finished_at\n"
    b"t1,s1,A.one,2,true,2,12.5,solved,source-present,sc,tl,sp,2026-08-01\n"
    b"t2,s1,A.two,1,false,0,200.0,budget_exhausted,source-present,sc,tl,sp,\n"
    b"t3,s2,B.three,3,false,1,3.25e1,infrastructure_error,source-present,sc,tl,sp,"
    b"2026-08-02T10:00:00Z\n"
)
TASKS = {t["task_id"]: t for t in parse_manifest(MANIFEST, "M", MANIFEST_MAP)[0]}


def read_all(manifest: bytes, sources: bytes, results: bytes):
    return (
        parse_manifest(manifest, "M", MANIFEST_MAP)[0],
        parse_sources(sources, "S", SOURCES_MAP)[0],
        parse_results(results, "R", RESULTS_MAP, TASKS, "source-present")[:2],
    )


CLEAN = read_all(MANIFEST, SOURCES, RESULTS)


def mutate(data: bytes, position: int, kind: str, payload: bytes) -> bytes:
    position %= len(data) + 1
    if kind == "flip":
        return data[:position] + payload[:1] + data[position + 1 :]
    if kind == "insert":
        return data[:position] + payload + data[position:]
    if kind == "delete":
        return data[:position] + data[position + len(payload) :]
    return data[:position]  # truncate


mutations = st.tuples(
    st.integers(0, 10_000),
    st.sampled_from(["flip", "insert", "delete", "truncate"]),
    st.binary(min_size=1, max_size=8)
    | st.sampled_from(
        [
            b",",
            b'"',
            b"\r\n",
            b"\n",
            b"\x00",
            b"\xef\xbb\xbf",
            b"NaN",
            b"Infinity",
            b"-0",
            b"1e309",
            b"true",
            b"x" * 200_000,
        ]
    ),
)


def check_csv_mutation(which: int, mutation) -> str:
    """'same' if the mutated file reads as the clean one, 'error' for our error."""
    files = [MANIFEST, SOURCES, RESULTS]
    files[which] = mutate(files[which], *mutation)
    try:
        result = read_all(*files)
    except AfbenchError as exc:
        assert str(exc)
        return "error"
    if result != CLEAN:
        # accepted but different: only legitimate if the change is a real, valid value
        # change that every reader re-validated (e.g. a cost 12.5 -> 12.6, a title edit)
        assert_valid(result)
        return "changed-valid"
    return "same"


def assert_valid(result) -> None:
    tasks, _, (records, constants) = result
    ids = [t["task_id"] for t in tasks]
    assert len(ids) == len(set(ids))
    for task in tasks:
        assert check_name(task["task_id"], "task_id") and task["n_obligations"] >= 1
    assert sorted(r["task_id"] for r in records) == sorted(TASKS)
    for record in records:
        assert record["cost_usd"] >= 0 and record["cost_usd"] == record["cost_usd"]
        assert record["success"] == (record["stop_reason"] == "solved")
        assert 0 <= record["obligations_accepted"] <= record["n_obligations"]
        if record["success"]:
            assert record["obligations_accepted"] == record["n_obligations"]
    assert constants["source_condition"] == "source-present"


def harmless_variant(
    data: bytes, order_seed: int, crlf: bool, bom: bool, quote_all: bool, extra: bool
) -> bytes:
    rows = list(csv.reader(io.StringIO(data.decode(), newline="")))
    header, body = rows[0], rows[1:]
    order = sorted(range(len(header)), key=lambda i: (i * 7919 + order_seed) % 101)
    out = io.StringIO()
    writer = csv.writer(
        out,
        lineterminator="\r\n" if crlf else "\n",
        quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL,
    )
    writer.writerow([header[i] for i in order] + (["extra"] if extra else []))
    for row in body:
        writer.writerow([row[i] for i in order] + (["=1+1"] if extra else []))
    return (b"\xef\xbb\xbf" if bom else b"") + out.getvalue().encode()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)

VERDICT = {
    "task_id": "t1",
    "status": "accepted",
    "obligations": [{"declaration": "A.one", "status": "accepted", "detail": ""}],
    "checks": {
        "target_equivalence": True,
        "allowed_axioms": True,
        "lean_kernel": True,
        "nanoda_replay": True,
    },
    "error": None,
    "verifier": {"name": "v", "version": "1"},
}


def replace_at(doc: object, path: list, value: object) -> object:
    doc = copy.deepcopy(doc)
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return doc


VERDICT_PATHS = [
    ["task_id"],
    ["status"],
    ["obligations"],
    ["obligations", 0, "status"],
    ["checks"],
    ["checks", "lean_kernel"],
    ["error"],
    ["verifier"],
    ["verifier", "version"],
]


def check_verdict(path_index: int, value: object) -> str:
    doc = replace_at(VERDICT, VERDICT_PATHS[path_index % len(VERDICT_PATHS)], value)
    data = json.dumps(doc).encode()
    try:
        verdict = parse_verdict(data, "V", "t1")
    except AfbenchError:
        return "error"
    assert verdict["reward"] in (0, 1, None)
    assert (verdict["reward"] is None) == (verdict["status"] == "error")
    if verdict["reward"] == 1:
        assert all(verdict["checks"].values())
    assert verdict["verifier_provenance_attested"] is False
    return verdict["status"]


TRIAL = {
    "task_name": "t1",
    "verifier_result": {"rewards": {"reward": 1.0}},
    "exception_info": None,
    "agent_result": {"cost_usd": None},
    "config": {"agent": {"name": "nop", "model_name": None}},
}
TRIAL_PATHS = [
    ["verifier_result"],
    ["verifier_result", "rewards"],
    ["verifier_result", "rewards", "reward"],
    ["exception_info"],
    ["task_name"],
]


def check_trial(path_index: int, value: object) -> str:
    doc = replace_at(TRIAL, TRIAL_PATHS[path_index % len(TRIAL_PATHS)], value)
    try:
        outcome = classify_trial(doc, "result.json")
    except AfbenchError:
        return "error-raised"
    reward = doc.get("verifier_result", {}) if isinstance(doc.get("verifier_result"), dict) else {}
    assert outcome["outcome"] in ("accepted", "rejected", "error")
    assert (outcome["reward"] is None) == (outcome["outcome"] == "error")
    if outcome["outcome"] == "accepted":
        value = reward["rewards"]["reward"]
        assert value == 1 and not isinstance(value, bool)
    return outcome["outcome"]


def check_config(base: dict, path: list, value: object) -> str:
    try:
        doc = replace_at(base, path, value)
    except (KeyError, IndexError, TypeError):
        return "skipped"
    try:
        validate_config(doc, "C")
    except AfbenchError as exc:
        assert "C" in str(exc)
        return "error"
    return "accepted"


# Hostile input, round two (issue 14) -----------------------------------------------------------
# Names, text and numbers with control characters, trailing newlines, lone surrogates, NaN,
# infinity and negatives at every config setting; deep, aliased and duplicate-key YAML; files
# that are not regular files at every place a file is read. The oracle for an accepted config,
# `assert_config_sane`, is plain Python written apart from the schema, so a schema hole shows up
# as a silent acceptance.


REPO = Path(__file__).resolve().parents[1]
DEMO_CONFIG = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def hostile_base() -> dict:
    """The demo config with one of everything, so every setting has a place to be changed."""
    base = copy.deepcopy(DEMO_CONFIG)
    base["selections"]["s"] = {"tasks": ["demo_s01_t001"], "sources": ["demo_source_01"]}
    base["runs"] = {"r": {"kind": "verdicts", "paths": ["runs/r"], "selection": "s"}}
    base["plans"]["items"] = [{"selection": "s", "agent": "codex", "model": "openai/gpt-5"}]
    base["release"]["dates"] = {"release_page": "2026-10-13"}
    base["release"]["images"] = [{"role": "verifier", "reference": "r", "digest": None}]
    base["columns"] = {"manifest": {"task_id": "task_id"}}
    base["import"]["models"] = ["demo-model-a"]
    base["execute"] = {
        "items": [{"selection": "s", "agent": "codex", "model": "openai/gpt-5"}],
        "max_cost_usd": 1000,
        "env": {"PYTHONPATH": "x"},
    }
    return base


HOSTILE_BASE = hostile_base()
KEY = object()  # in a place: the hostile text becomes this mapping key

TEXT_PLACES = [
    ["release", "revision"],
    ["release", "mathlib"],
    ["release", "repository"],
    ["release", "name"],
    ["release", "license"],
    ["release", "dates", "release_page"],
    ["release", "images", 0, "digest"],
    ["release", "images", 0, "role"],
    ["files", "manifest", "path"],
    ["files", "manifest", "sha256"],
    ["models", "demo-model-a", "display_name"],
    ["models", "demo-model-a", "path"],
    ["models", "demo-model-a", "sha256"],
    ["models", KEY],
    ["selections", KEY],
    ["selections", "s", "tasks", 0],
    ["selections", "s", "sources", 0],
    ["runs", KEY],
    ["runs", "r", "paths", 0],
    ["runs", "r", "selection"],
    ["import", "models", 0],
    ["plans", "environment_type"],
    ["plans", "jobs_dir"],
    ["plans", "items", 0, "agent"],
    ["plans", "items", 0, "model"],
    ["plans", "items", 0, "selection"],
    ["plans", "harbor"],
    ["execute", "items", 0, "agent"],
    ["execute", "items", 0, "model"],
    ["execute", "env", "PYTHONPATH"],
    ["execute", "env", KEY],
    ["results_dir"],
    ["source", "checkout"],
    ["source", "base_url"],
    ["columns", "manifest", "task_id"],
]

NUMBER_PLACES = [
    ["release", "nominal_budget_usd"],
    ["release", "expected_counts", "tasks"],
    ["source", "connect_timeout_s"],
    ["source", "read_timeout_s"],
    ["source", "total_timeout_s"],
    ["source", "backoff_factor"],
    ["source", "retries"],
    ["source", "max_bytes"],
    ["selections", "s", "limit"],
    ["runs", "r", "budget_usd"],
    ["report", "confidence"],
    ["execute", "max_cost_usd"],
    ["execute", "attempts"],
    ["execute", "setup_margin_s"],
]

# a valid value for each kind of place, for the hostile text to be built around
_SEEDS = [
    "a" * 40,
    "a" * 64,
    "demo-model-a",
    "owner/name",
    "2026-10-13",
    "docker",
    "openai/gpt-5",
    "sha256:" + "a" * 64,
    "https://example.org",
    "results",
    "Model A",
]
BAD_CHARACTERS = ["\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\u2028", "\ud800", "\udcff"]


def _splice(seed: str, bad: str, where: int) -> str:
    return [seed + bad, bad + seed, seed[: len(seed) // 2] + bad + seed[len(seed) // 2 :]][where]


hostile_texts = st.one_of(
    st.builds(_splice, st.sampled_from(_SEEDS), st.sampled_from(BAD_CHARACTERS), st.integers(0, 2)),
    st.text(st.characters(blacklist_categories=()), max_size=12),  # surrogates included
    st.sampled_from(
        ["", " ", "..", "../..", "summary", "Leaderboard", "--help", "-e", "a/..", "2026-13-45"]
    ),
)
hostile_numbers = st.one_of(
    st.sampled_from(
        [math.nan, math.inf, -math.inf, -0.0, -1, -1e-300, 0, 3.0, 1e308, 10**400, True, "5"]
    ),
    st.floats(),  # NaN and both infinities included
    st.integers(-(10**12), 10**12),
)


def _set(doc: dict, path: list, value: object) -> dict:
    doc = copy.deepcopy(doc)
    node = doc
    for step in path[:-2]:
        node = node[step]
    parent, last = (node[path[-2]], path[-1]) if len(path) > 1 else (node, path[-1])
    if last is KEY:
        parent[value] = copy.deepcopy(next(iter(parent.values())))
    else:
        parent[last] = value
    return doc


def _strings(node: object):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value)


def _safe_relpath(path: str) -> bool:
    parts = path.split("/")
    return all(check_name_ok(p) for p in parts)


def check_name_ok(value: object) -> bool:
    try:
        check_name(value, "name")
    except AfbenchError:
        return False
    return True


def _positive(value: object, *, integer: bool = False, upper: float = math.inf) -> bool:
    if integer:
        return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= upper
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 < value <= upper
    )


def assert_config_sane(config: dict) -> None:
    """What an accepted config must be, checked without the schema."""
    for text in _strings(config):
        assert not UNPRINTABLE.search(text), repr(text)
    release, source = config["release"], config["source"]
    assert re.fullmatch("[0-9a-f]{40}", release["revision"])
    assert re.fullmatch("[0-9a-f]{40}", release["mathlib"])
    owner, _, name = release["repository"].partition("/")
    assert owner and name and "/" not in name and {owner, name}.isdisjoint({".", ".."})
    for day in release["dates"].values():
        assert day is None or (len(day) == 10 and date.fromisoformat(day))
    for image in release["images"]:
        assert image["digest"] is None or re.fullmatch("sha256:[0-9a-f]{64}", image["digest"])
    for spec in [*config["files"].values(), *config["models"].values()]:
        assert spec["sha256"] is None or re.fullmatch("[0-9a-f]{64}", spec["sha256"])
        assert _safe_relpath(spec["path"])
    for slug in [*config["models"], *config["import"]["models"]]:
        assert check_name_ok(slug) and slug.lower() not in ("summary", "leaderboard")
    for name, selection in config["selections"].items():
        assert check_name_ok(name)
        assert all(check_name_ok(v) for v in selection["tasks"] + selection["sources"])
        assert selection["limit"] is None or _positive(selection["limit"], integer=True)
    for name, run in config["runs"].items():
        assert check_name_ok(name) and check_name_ok(run["selection"])
        assert all(run["paths"]) and _positive(run["budget_usd"])
    check_environment_type(config["plans"]["environment_type"])
    for item in config["plans"]["items"]:
        assert check_name_ok(item["agent"]) and check_name_ok(item["selection"])
        assert item["model"] is None or MODEL.fullmatch(item["model"])
    for item in config["execute"]["items"]:
        assert check_name_ok(item["agent"]) and check_name_ok(item["selection"])
        assert item["model"] is None or MODEL.fullmatch(item["model"])
    for key in config["execute"]["env"]:
        assert re.fullmatch("[A-Za-z_][A-Za-z0-9_]*", key)
    ceiling = config["execute"]["max_cost_usd"]
    assert ceiling is None or _positive(ceiling)
    assert _positive(config["execute"]["attempts"], integer=True)
    assert config["plans"]["harbor"]
    assert config["results_dir"] and config["plans"]["jobs_dir"]
    assert re.fullmatch(r"https?://[^\s/]+(/\S*)?", source["base_url"])
    for key in ("connect_timeout_s", "read_timeout_s", "total_timeout_s"):
        assert _positive(source[key])
    assert _positive(source["backoff_factor"] + 1) and source["backoff_factor"] >= 0
    assert isinstance(source["retries"], int) and 0 <= source["retries"] <= 10
    assert _positive(source["max_bytes"], integer=True)
    assert _positive(release["nominal_budget_usd"])
    assert all(_positive(v, integer=True) for v in release["expected_counts"].values())
    assert _positive(config["report"]["confidence"], upper=1) and config["report"]["confidence"] < 1


def assert_message_ok(exc: AfbenchError) -> None:
    """A refusal prints: valid UTF-8, a line per problem, nothing huge."""
    text = str(exc)
    text.encode("utf-8")
    assert len(text) < 60_000
    assert not UNPRINTABLE.search(text.replace("\n", ""))


def _validate(doc: dict) -> str:
    try:
        config = validate_config(doc, "C")
    except AfbenchError as exc:
        assert "C" in str(exc)
        assert_message_ok(exc)
        return "error"
    assert_config_sane(config)
    return "accepted"


def check_config_text(path: list, text: str) -> str:
    """A hostile name or text at a config setting: refused, or accepted and sane."""
    return _validate(_set(HOSTILE_BASE, path, text))


def check_config_number(path: list, value: object) -> str:
    """A hostile number at a number setting: refused, or accepted and sane."""
    return _validate(_set(HOSTILE_BASE, path, value))


# YAML texts ------------------------------------------------------------------------------------
def _dump(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=10**9)


BASE_YAML = _dump({k: v for k, v in HOSTILE_BASE.items() if k != "selections"})


def deep_yaml(depth: int, style: int) -> tuple[str, str]:
    if style == 2:  # compact block sequences: "- - - x"
        return BASE_YAML + "selections:\n  s:\n    tasks:\n      " + "- " * depth + "x\n", "deep"
    opener, closer = [("[", "]"), ("{a: ", "}")][style]
    return BASE_YAML + f"selections: {opener * depth}x{closer * depth}\n", "deep"


def aliased_yaml(levels: int, width: int) -> tuple[str, str]:
    lines = ["selections:", "  a0: {tasks: &a0 [demo_s01_t001, demo_s01_t002]}"]
    for i in range(1, levels):
        lines.append(f"  a{i}: {{tasks: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]}}")
    expanded = sum(2 * width**i + 1 for i in range(levels))
    return BASE_YAML + "\n".join(lines) + "\n", (
        "laughs" if expanded > MAX_YAML_VALUES else "alias"
    )


def duplicate_yaml(index: int) -> tuple[str, str]:
    """The base config with one of its key lines (any level) written twice."""
    lines = (BASE_YAML + "selections:\n  s: {}\n").splitlines()
    keys = [i for i, line in enumerate(lines) if re.match(r"^\s*[A-Za-z_][\w.-]*:( |$)", line)]
    i = keys[index % len(keys)]
    return "\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]]) + "\n", "duplicate"


def scalar_yaml(path: list, text: str) -> tuple[str, str]:
    return _dump(_set(HOSTILE_BASE, path, text)), "scalar"


yaml_cases = st.one_of(
    st.builds(deep_yaml, st.integers(1, 100_000), st.integers(0, 2)),
    st.builds(aliased_yaml, st.integers(1, 12), st.integers(1, 12)),
    st.builds(duplicate_yaml, st.integers(0, 10_000)),
    st.builds(scalar_yaml, st.sampled_from(TEXT_PLACES), hostile_texts),
)


def check_config_yaml(case: tuple[str, str]) -> str:
    """A YAML config file: deep, aliased, with a duplicate key or a hostile scalar. Refused with
    one bounded message naming the file, or accepted only if it is a sane config."""
    text, kind = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.yaml"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            config = load_config([path])
        except AfbenchError as exc:
            assert str(path) in str(exc)
            assert_message_ok(exc)
            if kind == "laughs":
                assert "aliases are expanded" in str(exc) and "demo_s01" not in str(exc)
            if kind == "duplicate":
                assert "duplicate key" in str(exc)
            return "error"
    assert kind in ("alias", "scalar", "deep"), kind  # never a duplicate or a bomb
    assert_config_sane(config)
    return "accepted"


# Files that are not regular files --------------------------------------------------------------
FILE_KINDS = [
    "regular",
    "fifo",
    "folder",
    "/dev/zero",
    "/dev/null",
    "symlink",
    "symlink-to-fifo",
    "dangling-symlink",
    "socket",
    "missing",
    "too-large",
]
VERDICT_BYTES = json.dumps(VERDICT).encode()
FILE_READERS = {
    "config": (lambda p: load_config([p]), (REPO / "config" / "demo.yaml").read_bytes()),
    "verdict": (
        lambda p: parse_verdict(read_regular_file(p, "verdict file", 16 << 20), str(p), "t1"),
        VERDICT_BYTES,
    ),
    "json artifact": (lambda p: read_json_file(p, "run summary", max_bytes=1 << 20), b"{}"),
    "hashed artifact": (lambda p: sha256_file(p), b"x"),
}


def _make(folder: Path, path: Path, kind: str, content: bytes, cap: int) -> Path:
    real = folder / "real"
    real.write_bytes(content)
    if kind == "regular":
        real.rename(path)
        return path
    if kind in ("/dev/zero", "/dev/null"):
        return Path(kind)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "symlink":
        path.symlink_to(real)
    elif kind == "symlink-to-fifo":
        os.mkfifo(folder / "fifo")
        path.symlink_to(folder / "fifo")
    elif kind == "dangling-symlink":
        path.symlink_to(folder / "nowhere")
    elif kind == "too-large":
        with open(path, "wb") as handle:
            handle.truncate(cap + 1)  # sparse: refused on its size, never read
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()  # the socket file stays
    return path


# any file name a POSIX system allows, including bytes that are not UTF-8 and control characters
file_names = (
    st.binary(min_size=1, max_size=24)
    .filter(lambda b: b"/" not in b and b"\x00" not in b and b not in (b".", b".."))
    .map(os.fsdecode)
)


def check_file_kind(kind: str, reader: str, name: str = "input") -> str:
    """Every reader refuses anything but a regular file (without blocking) with one message
    naming it, and reads a regular one, whatever the file is called. A config file may be a
    symbolic link to a regular file (users link configs; config/config.yaml is one)."""
    read, content = FILE_READERS[reader]
    cap = {"config": MAX_CONFIG_BYTES, "verdict": 16 << 20, "json artifact": 1 << 20}.get(reader)
    if kind == "too-large" and cap is None:
        return "skipped"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "in").mkdir()
        path = _make(folder, folder / "in" / name, kind, content, cap or 0)
        readable = ("regular", "symlink") if reader == "config" else ("regular",)
        try:
            read(path)
        except AfbenchError as exc:
            assert kind not in readable, str(exc)
            assert printable(str(path)) in str(exc) and len(exc.problems) == 1
            assert_message_ok(exc)
            return "error"
    assert kind in readable, f"{reader} read a {kind}"
    return "read"


def check_verdict_writable(path_index: int, value: object) -> str:
    """A verdict with hostile strings: refused, or accepted with output that can be written."""
    outcome = check_verdict(path_index, value)
    if outcome != "error":
        doc = replace_at(VERDICT, VERDICT_PATHS[path_index % len(VERDICT_PATHS)], value)
        json_bytes(parse_verdict(json.dumps(doc).encode(), "V", "t1"))
    return outcome


# Hostile output, round three (issue 20) ----------------------------------------------------------
# What afbench writes: an output never replaces an input (the same path, a hard link, a symbolic
# link to it, a path through a linked folder) nor anything but a regular file it may replace; a
# command's outputs are one unit, whatever signal arrives between two of them; the environment
# (matplotlib's settings, git's variables, time zone, umask) changes no byte written. The base
# tree is built once per process through the command line and only ever read by the cases.


class Lost(Exception):
    """An input, or a file that was not afbench's to replace, was changed: never allowed."""


def cli(*argv: object) -> tuple[int, str]:
    """`afbench ARGV` in this process: its exit status and what it wrote on standard error."""
    import contextlib as _contextlib

    from afbench.cli import main

    err = io.StringIO()
    with _contextlib.redirect_stderr(err), _contextlib.redirect_stdout(io.StringIO()):
        code = main([str(a) for a in argv])
    return code, err.getvalue()


def _digest(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


DEMO_RELEASE = REPO / "resources" / "demo-release"
RESULT_COLUMNS = [f"--column={field}={field}" for field in RESULTS_MAP]


class WriteTree:
    """A fetched demo release, its catalog and a selection, two model imports and their
    comparison, and a folder with one verdict, in `root`: what the write-side cases read."""

    def __init__(self, root: Path) -> None:
        self.root = root = Path(root)
        config = copy.deepcopy(DEMO_CONFIG)
        config["source"] = {"kind": "dir", "mirror": str(DEMO_RELEASE)}
        config["results_dir"] = str(root / "results")
        self.config = root / "config.yaml"
        root.mkdir(parents=True, exist_ok=True)
        self.config.write_text(yaml.safe_dump(config))
        self.release = root / "release"
        self.catalog = root / "catalog.json"
        self.selection = root / "selection.json"
        self.imports = [root / "demo-model-a.json", root / "demo-model-b.json"]
        self.summary, self.board = root / "summary.json", root / "leaderboard.csv"
        self.verdicts = root / "verdicts"
        self.verdict = self.verdicts / "v.json"
        steps = [
            ["fetch", "--config", self.config, "--release-dir", self.release, "--all-models"],
            [
                "tasks",
                "--config",
                self.config,
                "--release-dir",
                self.release,
                "--output",
                self.catalog,
            ],
            [
                "job",
                "select-tasks",
                f"--catalog={self.catalog}",
                "--name=s",
                "--limit=3",
                f"--output={self.selection}",
            ],
        ]
        for path in self.imports:
            slug = path.stem
            steps.append(
                [
                    "job",
                    "import-model",
                    f"--catalog={self.catalog}",
                    f"--verified={self.release / 'receipt.json'}",
                    f"--results={self.release / 'results' / (slug + '.csv')}",
                    f"--model={slug}",
                    f"--display-name={slug}",
                    "--pinned-condition=source-present",
                    "--source-condition=source-present",
                    *RESULT_COLUMNS,
                    f"--output={path}",
                ]
            )
        steps.append(self.compare(self.summary, self.board))
        for step in steps:
            code, err = cli(*step)
            if code != 0:
                raise RuntimeError(f"building the write tree: {step[:2]}: {err}")
        self.task = json.loads(self.selection.read_text())["task_ids"][0]
        self.verdicts.mkdir(exist_ok=True)
        self.verdict.write_text(json.dumps(dict(VERDICT, task_id=self.task)))
        self.release_files = sorted(p for p in self.release.rglob("*") if p.is_file())

    def compare(self, summary: Path, board: Path) -> list:
        return [
            "job",
            "compare-models",
            *[f"--import={p}" for p in self.imports],
            "--strict-budget=false",
            "--published-source=",
            "--published-task-rows=",
            "--strict-published=false",
            f"--summary={summary}",
            f"--leaderboard={board}",
        ]

    def commands(self) -> dict[str, tuple]:
        """name -> (argv from its outputs, output names, every file it reads)."""
        release = [*self.release_files]
        return {
            "verdict": (
                lambda o: [
                    "verdict",
                    "--path",
                    self.verdict,
                    "--task",
                    self.task,
                    "--output",
                    o["output"],
                ],
                ["output"],
                [self.verdict],
            ),
            "select-tasks": (
                lambda o: [
                    "job",
                    "select-tasks",
                    f"--catalog={self.catalog}",
                    "--name=t",
                    "--limit=2",
                    f"--output={o['output']}",
                ],
                ["output"],
                [self.catalog],
            ),
            "compare-models": (
                lambda o: self.compare(o["summary"], o["leaderboard"]),
                ["summary", "leaderboard"],
                [*self.imports],
            ),
            "import-run": (
                lambda o: [
                    "job",
                    "import-run",
                    f"--selection={self.selection}",
                    "--name=r",
                    "--kind=verdicts",
                    f"--path={self.verdicts}",
                    "--budget-usd=200",
                    f"--summary={o['summary']}",
                    f"--outcomes={o['outcomes']}",
                    f"--attempts={o['attempts']}",
                ],
                ["summary", "outcomes", "attempts"],
                [self.selection, self.verdict],
            ),
            "tasks": (
                lambda o: [
                    "tasks",
                    "--config",
                    self.config,
                    "--release-dir",
                    self.release,
                    "--output",
                    o["output"],
                ],
                ["output"],
                [self.config, *release],
            ),
        }


_TREES: dict[str, WriteTree] = {}


def write_tree() -> WriteTree:
    """The base tree of this process (built on first use, in a temporary folder)."""
    if "tree" not in _TREES:
        import atexit
        import shutil as _shutil

        folder = tempfile.mkdtemp(prefix="afbench-write-")
        atexit.register(_shutil.rmtree, folder, ignore_errors=True)
        _TREES["tree"] = WriteTree(Path(folder) / "base")
    return _TREES["tree"]


ALIASES = ["same path", "hard link", "through a linked folder", "dotted path", "input via link"]


def _alias(case: Path, target: Path, how: str) -> tuple[Path, Path | None]:
    """An output path that is the file `target` (and, for "input via link", the input path
    to give instead of `target`)."""
    if how == "same path":
        return target, None
    if how == "hard link":
        link = case / "hard"
        os.link(target, link)
        return link, None
    if how == "through a linked folder":
        (case / "folder").symlink_to(target.parent)
        return case / "folder" / target.name, None
    if how == "dotted path":
        return target.parent / "." / ".." / target.parent.name / target.name, None
    return target, case / "link-to-input"  # the input given through a link (made by the caller)


def check_output_is_input(command: str, output_index: int, input_index: int, how: str) -> str:
    """An output that is one of the command's inputs (any of the files it reads) is refused,
    naming both paths, and the input is left byte for byte as it was."""
    tree = write_tree()
    build, names, inputs = tree.commands()[command]
    name = names[output_index % len(names)]
    target = inputs[input_index % len(inputs)]
    before = {p: _digest(p) for p in inputs}
    with tempfile.TemporaryDirectory(dir=tree.root.parent) as tmp:
        case = Path(tmp)
        outputs = {n: case / f"{n}.out" for n in names}
        output, via = _alias(case, target, how)
        outputs[name] = case / "OUTPUT-PLACEHOLDER"
        argv = [str(a) for a in build(outputs)]
        if via is not None:
            # the input (or the folder it is read from) given through a symbolic link
            named = next(
                (
                    p
                    for p in (target, *target.parents)
                    for a in argv
                    if a in (str(p), f"={p}") or a.endswith(f"={p}")
                ),
                None,
            )
            if named is None:
                return "skipped"
            via.symlink_to(named)
            argv = [
                str(via) if a == str(named) else a.replace(f"={named}", f"={via}") for a in argv
            ]
        argv = [a.replace(str(outputs[name]), str(output)) for a in argv]
        outputs[name] = output
        code, err = cli(*argv)
        after = {p: _digest(p) for p in inputs}
        if after != before:
            raise Lost(f"{command}: {how}: an input changed: {err}")
        assert code == 2, f"{command} wrote over its input {target} ({how}): {err}"
        assert err.startswith("afbench: error: ") and err.count("\n") == 1, err
        assert "Traceback" not in err
        assert any(
            why in err
            for why in (
                "same file as the input",
                "symbolic link",
                "inside the input folder",
                "read-only file",
            )
        ), err
        assert printable(str(outputs[name])) in err or printable(str(target)) in err, err
        assert not [p for p in target.parent.iterdir() if p.name.endswith(".part")]
    return "refused"


def check_two_outputs_one_path(command: str, first: int, second: int, how: str) -> str:
    """Two outputs that are one file are refused, naming both."""
    tree = write_tree()
    build, names, _ = tree.commands()[command]
    if len(names) < 2:
        return "skipped"
    a, b = names[first % len(names)], names[second % len(names)]
    if a == b:
        b = names[(names.index(a) + 1) % len(names)]
    with tempfile.TemporaryDirectory(dir=tree.root.parent) as tmp:
        case = Path(tmp)
        outputs = {n: case / f"{n}.out" for n in names}
        (case / "sub").mkdir()
        outputs[b] = {
            "same path": outputs[a],
            "dotted path": case / "sub" / ".." / f"{a}.out",
            "through a linked folder": case / "again" / f"{a}.out",
        }[how]
        if how == "through a linked folder":
            (case / "again").symlink_to(case)
        code, err = cli(*build(outputs))
        assert code == 2 and "two outputs are one file" in err, err
        assert not any(case.glob("*.out")), "something was written"
    return "refused"


SPECIAL_KINDS = [
    "fifo",
    "folder",
    "non-empty folder",
    "socket",
    "symlink to a file",
    "dangling symlink",
    "read-only file",
    "character device",
    "/dev/null",
]


def _special(case: Path, path: Path, kind: str) -> Path:
    if kind == "/dev/null":
        return Path("/dev/null")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "non-empty folder":
        path.mkdir()
        (path / "keep").write_text("keep")
    elif kind == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.close()
    elif kind == "symlink to a file":
        (case / "precious").write_text("precious")
        path.symlink_to(case / "precious")
    elif kind == "dangling symlink":
        path.symlink_to(case / "nowhere")
    elif kind == "read-only file":
        path.write_text("verified")
        path.chmod(0o444)
    elif kind == "character device":
        import stat as _stat

        os.mknod(path, _stat.S_IFCHR | 0o666, os.makedev(1, 3))  # another /dev/null
    return path


def _state(path: Path) -> tuple:
    info = os.lstat(path)
    content = None
    if path.is_symlink():
        content = os.readlink(path)
    elif path.is_dir():
        content = sorted(os.listdir(path))
    elif path.is_file():
        content = path.read_bytes()
    return (info.st_mode, info.st_ino, info.st_rdev, content)


def check_special_output(command: str, output_index: int, kind: str, name: str = "") -> str:
    """An output that is not a regular file afbench may replace (FIFO, folder, socket, link,
    device, read-only file) is refused, naming it, and left as it was."""
    if kind in ("character device", "/dev/null") and os.geteuid() != 0:
        return "skipped"  # only root can make (or could replace) a device node
    tree = write_tree()
    build, names, _ = tree.commands()[command]
    flag = names[output_index % len(names)]
    with tempfile.TemporaryDirectory(dir=tree.root.parent) as tmp:
        case = Path(tmp)
        outputs = {n: case / f"{n}.out" for n in names}
        outputs[flag] = _special(case, case / f"{name}{flag}.out", kind)
        name = flag
        before = _state(outputs[name])
        precious = (case / "precious").read_bytes() if kind == "symlink to a file" else None
        code, err = cli(*build(outputs))
        if _state(outputs[name]) != before or (
            precious is not None and (case / "precious").read_bytes() != precious
        ):
            raise Lost(f"{command}: {kind} at --{name} was replaced: {err}")
        assert code == 2, f"{command} accepted a {kind} as --{name}: {err}"
        assert "refusing to replace it" in err and printable(str(outputs[name])) in err, err
        others = [outputs[n] for n in names if n != name]
        assert not any(p.exists() for p in others), "an output was written beside the refusal"
    return "refused"


# interruption: a signal at any step of writing a command's outputs
STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"]


def _write_steps(command: str) -> int:
    return len(write_tree().commands()[command][1])


_REFERENCE: dict[str, dict[str, bytes]] = {}


def _reference(command: str) -> dict[str, bytes]:
    """The outputs of an uninterrupted run (computed once)."""
    if command not in _REFERENCE:
        tree = write_tree()
        build, names, _ = tree.commands()[command]
        folder = Path(tempfile.mkdtemp(dir=tree.root.parent, prefix="reference-"))
        outputs = {n: folder / f"{n}.out" for n in names}
        code, err = cli(*build(outputs))
        assert code == 0, err
        _REFERENCE[command] = {n: outputs[n].read_bytes() for n in names}
    return _REFERENCE[command]


def check_interrupted_writes(
    command: str, phase: str, step: int, signame: str, name: str = "", old_bytes: bytes = b""
) -> str:
    """A signal while a command writes its outputs (after `step` of them were staged, or
    renamed into place) leaves every earlier output or every new one, never some of each;
    the command ends with 128 + the signal's number and says truly whether anything was
    replaced; no temporary file is left."""
    import signal as _signal

    from afbench.core import fsutil

    tree = write_tree()
    build, names, _ = tree.commands()[command]
    new = _reference(command)
    signum = getattr(_signal, signame)
    step %= len(names)
    real_stage, real_replace = fsutil._stage, os.replace
    calls = {"stage": 0, "rename": 0}

    def stage(path, data, **kwargs):
        if phase == "stage" and calls["stage"] == step:
            os.kill(os.getpid(), signum)
        calls["stage"] += 1
        return real_stage(path, data, **kwargs)

    def replace(src, dst):
        if phase == "rename" and calls["rename"] == step:
            os.kill(os.getpid(), signum)
        calls["rename"] += 1
        return real_replace(src, dst)

    with tempfile.TemporaryDirectory(dir=tree.root.parent) as tmp:
        case = Path(tmp)
        outputs = {n: case / f"{name}{n}.out" for n in names}
        old = {n: f"old {n}\n".encode() + old_bytes for n in names}
        for n in names:
            outputs[n].write_bytes(old[n])
        fsutil._stage, os.replace = stage, replace
        try:
            code, err = cli(*build(outputs))
        finally:
            fsutil._stage, os.replace = real_stage, real_replace
        now = {n: outputs[n].read_bytes() for n in names}
        all_old, all_new = now == old, now == new
        if not (all_old or all_new):
            raise Lost(f"{command}: {signame} at {phase} {step}: outputs of two runs: {err}")
        if phase == "rename":  # held back until every output was in place
            assert all_new and "after writing" in err, err
        assert code == 128 + signum, (code, err)
        assert err.startswith(f"afbench: interrupted by {signame}") and err.count("\n") == 1, err
        assert ("nothing was replaced" in err) == all_old, err
        assert not [p for p in case.iterdir() if p.name.endswith(".part")]
        return "all old" if all_old else "all new"


# hostile environments: what the user's settings can change, and must not
_MPL_CHANGES = [
    ("text.usetex", True),
    ("font.family", "serif"),
    ("font.size", 31.0),
    ("svg.fonttype", "path"),
    ("svg.hashsalt", "user"),
    ("axes.formatter.use_locale", True),
    ("lines.linewidth", 9.0),
    ("figure.dpi", 17.0),
    ("savefig.bbox", "standard"),
    ("axes.prop_cycle", None),
    ("xtick.labelsize", 3.0),
    ("axes.spines.top", True),
]
_GIT_VARIABLES = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_INDEX_FILE",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_GLOBAL",
    "GIT_EXEC_PATH",
    "GIT_TRACE",
    "GIT_NAMESPACE",
    "GIT_REPLACE_REF_BASE",
    "GIT_CEILING_DIRECTORIES",
]
_ZONES = ["UTC", "Asia/Tokyo", "America/St_Johns", "Pacific/Kiritimati", "Nowhere/Such"]
hostile_environments = st.fixed_dictionaries(
    {
        "mpl": st.lists(st.sampled_from(range(len(_MPL_CHANGES))), max_size=5, unique=True),
        "git": st.lists(st.sampled_from(_GIT_VARIABLES), max_size=6, unique=True),
        "tz": st.sampled_from(_ZONES),
        "umask": st.sampled_from([0o000, 0o022, 0o077, 0o027, 0o222]),
        "home": st.sampled_from(["keep", "/nonexistent", "/"]),
        "what": st.sampled_from(["figure", "git", "compare"]),
    }
)


class EnvironmentBase:
    """A demo repository for the git cases, a second repository a stray GIT_DIR points at,
    the figure's input, and each case's reference bytes."""

    def __init__(self) -> None:
        from afbench.release import demo

        root = write_tree().root.parent
        self.upstream = root / "upstream"
        self.revision = demo.build_repository(DEMO_RELEASE, self.upstream)
        self.other = root / "other-repo"
        demo.build_repository(DEMO_RELEASE / "results", self.other)
        self.marker = root / "git-ran-a-program"
        self.rows = [
            {
                "display_name": "A $x$",
                "success_rate": 0.5,
                "wilson_low": 0.3,
                "wilson_high": 0.7,
                "clustered": {"low": 0.25, "high": 0.75},
            },
            {
                "display_name": "=B",
                "success_rate": 0.25,
                "wilson_low": 0.1,
                "wilson_high": 0.4,
                "clustered": {"low": 0.05, "high": 0.45},
            },
        ]
        self.reference = {what: self.run(what) for what in ("figure", "git", "compare")}

    def run(self, what: str, folder: Path | None = None) -> bytes:
        if what == "figure":
            from afbench.report import figures

            return figures.leaderboard_figure(self.rows, 0.95).encode()
        if what == "git":
            from afbench.release.fetch import GitSource

            source = GitSource(
                {"checkout": str(self.upstream), "max_bytes": 1 << 24}, self.revision
            )
            try:
                return source.read("MANIFEST.csv") + source.read("results/demo-model-a.csv")
            finally:
                source.close()
        tree = write_tree()
        with tempfile.TemporaryDirectory(dir=tree.root.parent) as tmp:
            out = Path(folder or tmp)
            summary, board = out / "s.json", out / "b.csv"
            for path in (summary, board):
                path.unlink(missing_ok=True)
            code, err = cli(*tree.compare(summary, board))
            assert code == 0, err
            return summary.read_bytes() + board.read_bytes()


_ENVIRONMENT: dict[str, EnvironmentBase] = {}


def check_hostile_environment(env: dict) -> str:
    """Under the user's matplotlib settings, stray GIT_* variables (each pointing somewhere
    else, or at a program), another time zone, home or umask: the same bytes, no traceback, the
    user's matplotlib settings left as they were, and no program run by git."""
    import time as _time

    import matplotlib
    from cycler import cycler

    if "base" not in _ENVIRONMENT:
        _ENVIRONMENT["base"] = EnvironmentBase()
    base = _ENVIRONMENT["base"]
    saved_env = dict(os.environ)
    saved_rc = dict(matplotlib.rcParams)
    folder = Path(tempfile.mkdtemp(dir=write_tree().root.parent))  # made before the umask
    mask = os.umask(env["umask"])
    try:
        for index in env["mpl"]:
            key, value = _MPL_CHANGES[index]
            if key == "axes.prop_cycle":
                value = cycler(color=["#ff00ff"])
            matplotlib.rcParams[key] = value
        user_rc = dict(matplotlib.rcParams)
        for name in env["git"]:
            os.environ[name] = {
                "GIT_DIR": str(base.other / ".git"),
                "GIT_WORK_TREE": str(base.other),
                "GIT_OBJECT_DIRECTORY": str(base.other / ".git" / "objects"),
                "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(base.other / ".git" / "objects"),
                "GIT_INDEX_FILE": str(base.marker),
                "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='touch {base.marker}'",
                "GIT_CONFIG_GLOBAL": "/dev/null",
                "GIT_EXEC_PATH": "/nonexistent",
                "GIT_TRACE": str(base.marker),
                "GIT_NAMESPACE": "elsewhere",
                "GIT_REPLACE_REF_BASE": "refs/elsewhere/",
                "GIT_CEILING_DIRECTORIES": "/",
            }[name]
        os.environ["TZ"] = env["tz"]
        _time.tzset()
        if env["home"] != "keep":
            os.environ["HOME"] = env["home"]
        got = base.run(env["what"], folder)
        assert got == base.reference[env["what"]], f"{env['what']} changed under {env}"
        if env["what"] == "compare":  # created honouring the umask
            assert (folder / "s.json").stat().st_mode & 0o777 == 0o666 & ~env["umask"]
        assert dict(matplotlib.rcParams) == user_rc, "the user's matplotlib settings changed"
        if base.marker.exists():
            raise Lost(f"git ran a program or wrote a file under {env['git']}")
    finally:
        os.umask(mask)
        os.environ.clear()
        os.environ.update(saved_env)
        _time.tzset()
        matplotlib.rcParams.update(saved_rc)
        base.marker.unlink(missing_ok=True)
        import shutil as _shutil

        _shutil.rmtree(folder, ignore_errors=True)
    return env["what"]


# CSV cells: whatever the text, one physical line per row, and read back exactly
csv_texts = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.builds(
        _splice, st.sampled_from(_SEEDS), st.sampled_from(BAD_CHARACTERS[:9]), st.integers(0, 2)
    ),
    st.sampled_from(
        ["=1+1", "+x", "-1", "@SUM(A1)", "\tx", "\rx", "'=x", "''", "\\", "\\n", "a\r"]
    ),
)


def check_csv_text(cells: list[str]) -> str:
    """A row of hostile text cells: afbench's CSV holds it on one line (no control character, a
    lone CR included, can split it, by csv's rules or by str.splitlines), no cell starts with a
    formula character, and afbench's own readers give back exactly what was written."""
    import pandas as pd

    from afbench.core.fsutil import SPREADSHEET_TRIGGERS, csv_output, csv_text_value
    from afbench.frames import _unescape

    try:
        _, data = csv_output(Path("t.csv"), [f"c{i}" for i in range(len(cells))], [cells, cells])
    except AfbenchError as exc:  # a lone surrogate is no text: refused, never written
        assert any(re.search("[\ud800-\udfff]", c) for c in cells), str(exc)
        assert "not valid Unicode" in str(exc)
        return "refused"
    text = data.decode()
    assert len(text.splitlines()) == 3, repr(text)
    assert not UNPRINTABLE.search(text.replace("\n", "")), repr(text)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert len(rows) == 3
    for written, cell in zip(rows[1], cells, strict=True):
        assert not written.startswith(SPREADSHEET_TRIGGERS), repr(written)
        assert csv_text_value(written) == cell, (written, cell)
    # a one-column row of blanks is a row (pandas would skip it as a blank line)
    frame = pd.read_csv(
        io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False, skip_blank_lines=False
    )
    for i, cell in enumerate(cells):
        if cell != "":
            assert _unescape(frame[f"c{i}"].astype(object)).iloc[0] == cell
    return "guarded" if any(w != c for w, c in zip(rows[1], cells, strict=True)) else "as is"


# JSON numbers: an integer beyond a float, or any other number, anywhere in a trial's
# result.json, a job's config.json or a verdict
HUGE = [10**309, -(10**400), 10**4000, 2**1030, 10**308, 1e308, -1e-320, 0, 2**53 + 1]
huge_numbers = st.one_of(st.sampled_from(HUGE), st.integers(), st.floats(allow_nan=False))
NUMBER_DOCS = ["verdict", "result.json", "config.json"]


def _places(doc: object, path: tuple = ()) -> list[tuple]:
    """Every place in a document a value can go."""
    found = [path] if path else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _places(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += _places(value, (*path, i))
    return found


def check_json_number(which: str, place: int, number: object) -> str:
    """A number at any place of a verdict or a Harbor file: refused with one message (an
    integer beyond a float among them), or read; never a traceback."""
    from afbench.core.errors import AfbenchError as _Error
    from afbench.core.fsutil import parse_json_bytes
    from afbench.runs.harbor_jobs import read_harbor_job

    text_number = str(number) if isinstance(number, int) else json.dumps(number)
    if which == "verdict":
        doc = copy.deepcopy(VERDICT)
        spots = _places(doc)
        doc = replace_at(doc, list(spots[place % len(spots)]), "@@N@@")
        data = json.dumps(doc).replace('"@@N@@"', text_number).encode()
        try:
            parse_verdict(data, "V", "t1")
        except _Error as exc:
            assert_message_ok(exc)
            huge = isinstance(number, int) and abs(number) > 1.8e308
            return "refused (huge)" if huge else "refused"
        assert not (isinstance(number, int) and abs(number) > 1.8e308), "a huge integer read"
        return "read"
    fixture = REPO / "tests" / "fixtures" / "harbor-0.22.0-jobs" / "demo-nop"
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job"
        import shutil as _shutil

        _shutil.copytree(fixture, job)
        file = job / "config.json" if which == "config.json" else next(job.glob("*/result.json"))
        doc = json.loads(file.read_text())
        spots = _places(doc)
        doc = replace_at(doc, list(spots[place % len(spots)]), "@@N@@")
        file.write_text(json.dumps(doc).replace('"@@N@@"', text_number))
        try:
            parse_json_bytes(file.read_bytes(), str(file), "x")
            read_harbor_job(job)
        except _Error as exc:
            assert_message_ok(exc)
            return "refused"
        assert not (isinstance(number, int) and abs(number) > 1.8e308), "a huge integer read"
        return "read"


# an output's name: any a POSIX folder can hold (bytes that are not UTF-8, control characters)
output_names = file_names.filter(lambda n: len(n) < 100)
