"""Property checks for every reader, shared by the test suite and bench/robustness.py (which
runs them far longer). Each input either gives the clean result (a harmless change) or one of
our own errors: never another exception, never a silent acceptance of a changed value."""

from __future__ import annotations

import copy
import csv
import io
import json

from hypothesis import strategies as st

from afbench.catalog import parse_manifest, parse_sources
from afbench.config import validate_config
from afbench.errors import AfbenchError
from afbench.fsutil import check_name
from afbench.official import parse_results
from afbench.runs import classify_trial, parse_verdict

MANIFEST_MAP = {
    k: k
    for k in (
        "task_id",
        "source_id",
        "source_ref",
        "target_declaration",
        "n_obligations",
        "workspace",
    )
}
SOURCES_MAP = {k: k for k in ("source_id", "title", "authors", "license", "n_tasks")}
RESULTS_MAP = {
    k: k
    for k in (
        "task_id",
        "source_id",
        "target_declaration",
        "n_obligations",
        "success",
        "obligations_accepted",
        "cost_usd",
        "stop_reason",
        "source_condition",
        "scaffold",
        "tools",
        "stopping_policy",
        "finished_at",
    )
}

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
