"""afbench.kinds: every artifact kind declared once. Writers build from the declaration (every
field, none other, each of its type), readers read through it (one error naming the file and
the field), JSON Schemas are generated from it and shipped; a field added to a declaration
reaches every reader of the demo pipeline, and the demo's every JSON artifact is valid under
the shipped schemas."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from afbench import kinds
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import json_bytes
from afbench.kinds import ANY, KINDS, Field, Kind, ListOf, MapOf, Shape, placeholder, schema

from conftest import REPO, declared, demo_revision, project

SCHEMAS = REPO / "scripts/afbench/data/schemas"

# --- the declaration library ------------------------------------------------------------------
ITEM = Shape(
    "item", Field("name", str), Field("count", int, minimum=0), Field("note", str, null=True)
)
TOY = Kind(
    "afbench toy",
    Field("size", float, unit="USD"),
    Field("state", str, values=("on", "off")),
    Field("items", ListOf(ITEM)),
    Field("by_model", MapOf(int, keys="model slug")),
    Field("extra", ANY),
    Field("later", bool, optional=True),
    version=3,
)


def toy(**changed) -> dict:
    return {
        "kind": "afbench toy",
        "schema_version": 3,
        "size": 1.5,
        "state": "on",
        "items": [{"name": "a", "count": 1, "note": None}, {"name": "b", "count": 0, "note": "x"}],
        "by_model": {"m": 2},
        "extra": {"anything": [1, "two"]},
        **changed,
    }


def test_a_record_has_every_declared_field_in_the_declared_order_and_no_other():
    built = TOY.record(later=True, by_model={}, extra=None, items=[], state="off", size=2)
    head = ["kind", "schema_version", "size", "state", "items", "by_model", "extra"]
    assert list(built) == [*head, "later"]
    assert list(TOY.record(size=0, state="on", items=[], by_model={}, extra=0)) == head
    with pytest.raises(TypeError, match=r"fields not given: \['state'\]"):
        TOY.record(size=0, items=[], by_model={}, extra=0)
    with pytest.raises(TypeError, match=r"fields not declared: \['colour'\]"):
        TOY.record(size=0, state="on", items=[], by_model={}, extra=0, colour="red")
    with pytest.raises(TypeError, match=r"field 'items\[0\]\.count'"):
        TOY.record(
            size=0,
            state="on",
            items=[{"name": "a", "count": "1", "note": None}],
            by_model={},
            extra=0,
        )
    with pytest.raises(TypeError, match="fields not given"):
        ITEM.row(name="a")
    assert ITEM.rows(name=["a", "b"], count=[1, 2], note=[None, "n"]) == [
        {"name": "a", "count": 1, "note": None},
        {"name": "b", "count": 2, "note": "n"},
    ]


@pytest.mark.parametrize(
    ("changed", "field", "message"),
    [
        ({"size": "1.5"}, "size", "wrong type"),
        ({"size": True}, "size", "wrong type"),  # a bool is not a number
        ({"state": "maybe"}, "state", "a value afbench does not write"),
        ({"items": {}}, "items", "wrong type"),
        ({"items": [{"name": "a", "count": -1, "note": None}]}, "items[0].count", "least value"),
        ({"items": [{"name": "a", "count": 1}]}, "items[0].note", "lacks a field"),
        (
            {"items": [toy()["items"][0], {"name": "b", "count": 1, "note": None, "x": 1}]},
            "items[1].x",
            "does not write",
        ),
        ({"items": [toy()["items"][0], "b"]}, "items[1]", "wrong type"),
        ({"by_model": {"m": 1.5}}, "by_model.m", "wrong type"),
        ({"later": None}, "later", "wrong type"),
        ({"unknown": 1}, "unknown", "does not write"),
    ],
)
def test_a_value_not_of_its_declared_type_is_one_error_naming_file_and_field(
    changed, field, message
):
    with pytest.raises(AfbenchError) as error:
        TOY.check(toy(**changed), "toy.json")
    [problem] = error.value.problems
    assert (problem.file, problem.field) == ("toy.json", field)
    assert message in problem.message


def test_the_kind_and_its_own_version_are_checked_first(tmp_path):
    assert TOY.check(toy(), "f") == toy()
    with pytest.raises(AfbenchError, match="not the artifact expected here") as error:
        TOY.check(toy(kind="afbench other"), "f")
    assert error.value.problems[0].field == "kind"
    with pytest.raises(AfbenchError, match="incompatible afbench") as error:
        TOY.check(toy(schema_version=1), "f")
    assert (error.value.problems[0].expected, error.value.problems[0].found) == (3, 1)
    path = tmp_path / "toy.json"
    path.write_bytes(b'{"kind": "afbench toy", "kind": "afbench toy"}')
    with pytest.raises(AfbenchError, match="toy is not valid JSON: duplicate key"):
        TOY.read(path)
    path.write_bytes(json_bytes(toy()))
    assert TOY.read(path) == toy()
    assert kinds.read_any(path, kinds.RECEIPT, TOY) == toy()


def test_a_placeholder_record_of_every_kind_is_valid_read_back_and_described(tmp_path):
    """The least record of every kind: built from the declaration, written, read back by its
    kind's reader, valid under its shipped JSON Schema, and described by the command line's
    summary line (which indexes only declared keys)."""
    from afbench.cli import say

    for kind in KINDS.values():
        built = declared(kind)
        path = tmp_path / f"{kind.slug}.json"
        path.write_bytes(json_bytes(built))
        assert kind.read(path) == built
        validator = Draft202012Validator(
            json.loads((SCHEMAS / f"{kind.slug}.schema.json").read_text())
        )
        assert list(validator.iter_errors(built)) == [], kind.name
        assert isinstance(say.line(built, [str(path)]), str)


def test_placeholders_are_the_least_value_of_each_type():
    assert placeholder(Field("a", int, minimum=1)) == 1
    assert placeholder(Field("a", float)) == 0.0
    assert placeholder(Field("a", str, values=("x", "y"))) == "x"
    assert placeholder(Field("a", str, null=True)) is None
    assert placeholder(Field("a", ITEM)) == {"name": "", "count": 0, "note": None}


def test_a_view_reads_a_record_by_its_declared_field_names():
    record = declared(kinds.ANALYSIS, confidence=0.95)
    view = kinds.ANALYSIS.view(record)
    assert view.confidence == 0.95 and view.leaderboard is record["leaderboard"]
    assert "anatomy" not in record and view.anatomy is None  # optional, absent
    assert kinds.ANALYSIS.view(view).record is record
    with pytest.raises(AttributeError, match="afbench analysis declares no field 'confidenc'"):
        view.confidenc  # noqa: B018
    del record["confidence"]
    with pytest.raises(KeyError):  # a declared field the record lacks: it was never read
        view.confidence  # noqa: B018
    with pytest.raises(AttributeError, match="read-only"):
        view.confidence = 0.5


def test_a_failed_task_holds_the_fields_of_the_record_it_was_made_from():
    """A failure anatomy's failed task is its per-task result's fields (a local run's its
    outcomes row's), the same declarations: a null rule or unit changed there changes here."""
    from afbench.kinds.analysis import FAILED_TASK, LOCAL_FAILED_TASK

    for failed, source in ((FAILED_TASK, kinds.TASK_RESULT), (LOCAL_FAILED_TASK, kinds.OUTCOMES)):
        own = {"class", "advisory"}
        shared = [f for f in failed.fields if f.name not in own]
        assert shared and all(f is source.field(f.name) for f in shared), failed.name
    with pytest.raises(KeyError, match="no field 'nope'"):
        kinds.TASK_RESULT.take("task_id", "nope")
    bad = declared(kinds.FAILURE_ANATOMY)
    bad["models"] = [
        {
            **placeholder(Field("m", kinds.FAILURE_ANATOMY.field("models").type.of)),
            "failed_tasks": [{**placeholder(Field("t", FAILED_TASK)), "cost_usd": None}],
        }
    ]
    with pytest.raises(AfbenchError, match=r"models\[0\]\.failed_tasks\[0\]\.cost_usd"):
        kinds.FAILURE_ANATOMY.check(bad, "anatomy.json")


# --- the shipped JSON Schemas --------------------------------------------------------------------
def test_the_shipped_schemas_are_the_ones_the_declarations_generate():
    """`make schemas` writes them; a declaration changed without them fails here."""
    assert schema.differences(SCHEMAS) == []
    index = json.loads((SCHEMAS / "index.json").read_text())["kinds"]
    assert index == {
        k.name: {"schema": f"{k.slug}.schema.json", "schema_version": k.version}
        for k in KINDS.values()
    }
    for kind in KINDS.values():
        Draft202012Validator.check_schema(kind.json_schema())


def test_the_schemas_refuse_what_the_readers_refuse():
    validator = Draft202012Validator(kinds.MODEL_IMPORT.json_schema())
    good = declared(kinds.MODEL_IMPORT)
    good["records"] = [declared(kinds.TASK_RESULT, task_id="t", n_obligations=2)]
    assert list(validator.iter_errors(good)) == []
    for bad in (
        {**good, "schema_version": 2},
        {**good, "extra": 1},
        {**good, "records": [{**good["records"][0], "cost_usd": -1}]},
        {**good, "records": [{**good["records"][0], "success": "true"}]},
        {**good, "source_condition": "source-absent"},
    ):
        assert list(validator.iter_errors(bad)), bad
        with pytest.raises(AfbenchError):
            kinds.MODEL_IMPORT.check(bad, "f")


@pytest.mark.snakemake
def test_every_json_artifact_of_the_demo_run_is_valid_under_the_shipped_schemas(demo_project):
    """What a user does without afbench: each JSON artifact's `kind` names its schema in
    index.json; jsonschema validates it."""
    index = json.loads((SCHEMAS / "index.json").read_text())["kinds"]
    folder = demo_project / "results" / demo_revision()
    seen = {}
    for path in sorted(folder.rglob("*.json")):
        if "logs" in path.parts:
            continue
        artifact = json.loads(path.read_text())
        entry = index[artifact["kind"]]
        validator = Draft202012Validator(json.loads((SCHEMAS / entry["schema"]).read_text()))
        errors = [
            f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(artifact)
        ]
        assert errors == [], path
        seen[artifact["kind"]] = seen.get(artifact["kind"], 0) + 1
    assert len(seen) >= 14 and sum(seen.values()) >= 40, seen  # the demo's 14 kinds, 40 files


@pytest.mark.snakemake
def test_the_readme_validates_the_demo_run_without_afbench(demo_project, tmp_path):
    """The block in docs/pipeline.md (moved there from the README), run as written from a
    checkout's root in a fresh interpreter: it needs jsonschema and the shipped schema files,
    never afbench."""
    readme = (REPO / "docs" / "pipeline.md").read_text()
    marker = "tests/kinds/test_kinds.py::test_the_readme_validates_the_demo_run_without_afbench"
    block = readme.split(marker, 1)[1].split("```python\n", 1)[1].split("```\n", 1)[0]
    (tmp_path / "scripts").symlink_to(REPO / "scripts")
    (tmp_path / "results").symlink_to(demo_project / "results")
    check = "\nimport sys\nassert not [m for m in sys.modules if m.startswith('afbench')]\n"
    done = subprocess.run(
        [sys.executable, "-c", block + check], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    damaged = tmp_path / "damaged"
    shutil.copytree(demo_project / "results", damaged / "results")
    summary = next(damaged.rglob("imports/*/*/summary.json"))
    data = json.loads(summary.read_text())
    data["leaderboard"][0]["passes"] = "266"
    summary.write_text(json.dumps(data))
    (damaged / "scripts").symlink_to(REPO / "scripts")
    done = subprocess.run(
        [sys.executable, "-c", block], cwd=damaged, capture_output=True, text=True
    )
    assert done.returncode != 0 and "'266' is not of type 'integer'" in done.stderr


# --- one declaration, every reader -------------------------------------------------------------
# Three fields added where a developer adds them: each a line in a declaration and a line in the
# code that computes it. The per-task result of a model import (read by the comparison, the
# report, the failure anatomy, the task table and the frames, and by the import's fast reader,
# whose byte layout comes from the declaration), a leaderboard row of the report's analysis,
# and a column of a local run's outcomes table.
ADDED = {  # file: (the line after which it goes, the line added)
    "kinds/official.py": (
        '        doc="ISO-8601 date or datetime as reported; null: unknown (and kept unknown)",\n'
        "    ),\n",
        '    Field("tokens", int, minimum=0, unit="tokens"),\n',
    ),
    "imports/official.py": (
        "        finished_at=finished,\n",
        "        tokens=[1000 * got for got in accepted],\n",
    ),
    "kinds/analysis.py": (
        '    Field("matches_published", bool, null=True),\n',
        '    Field("median_cost_usd", float, unit="USD per task"),\n',
    ),
    "report/analysis.py": (
        '                "matches_published": facts.get("matches_published"),\n',
        '                "median_cost_usd": imp["cost_usd"]["median"],\n',
    ),
    "kinds/runs.py": (
        '    Field("trial_dirs", str, null=True, doc="its trials\' folders, \';\'-separated"),\n',
        '    Field("errors", int, minimum=0, unit="trials"),\n',
    ),
    "runs/summary.py": (
        '            trial_dirs=";".join(a["trial_dir"] for a in task_tries),\n',
        '            errors=sum(a["outcome"] == "error" for a in task_tries),\n',
    ),
}


def package_with(tmp_path: Path, files: list[str]) -> Path:
    """A copy of the package with the lines of ADDED in `files` added, each after its anchor."""
    root = tmp_path / "package"
    shutil.copytree(
        REPO / "scripts/afbench", root / "afbench", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in files:
        anchor, line = ADDED[name]
        path = root / "afbench" / name
        text = path.read_text()
        assert text.count(anchor) == 1, (name, anchor)
        path.write_text(text.replace(anchor, anchor + line))
    return root


def run_with(package: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(package)},
    )


READ_BACK = """
import json, sys
from pathlib import Path
import afbench, afbench.frames as af
from afbench import kinds; from afbench.imports import official
from afbench.kinds import schema
from jsonschema import Draft202012Validator

assert afbench.__file__.startswith(sys.argv[2]), afbench.__file__
root = Path(sys.argv[1])
folder = af.Folder(root)
out = {}
results, board = af.official_results(folder), af.leaderboard(folder)
outcomes = af.run_outcomes(folder)
out["official_results"] = [str(results["tokens"].dtype), int(results["tokens"].sum())]
median = board["median_cost_usd"]
out["leaderboard"] = [str(median.dtype), int(median.notna().sum())]
out["run_outcomes"] = [str(outcomes["errors"].dtype), int(outcomes["errors"].sum())]
imports = sorted(root.rglob("imports/*/*/demo-model-*.json"))
fast = official._outcomes_as_written(imports[0].read_bytes(), str(imports[0]))
out["fast_reader"] = fast is not None and len(fast.successes) == len(results) // len(imports)
invalid = []
for path in sorted(root.rglob("*.json")):
    if "logs" in path.parts:
        continue
    data = json.loads(path.read_text())
    kind = kinds.KINDS[data["kind"]]
    kind.read(path)
    invalid += [str(path) for _ in Draft202012Validator(kind.json_schema()).iter_errors(data)]
out["invalid"] = invalid
compared = kinds.CROSS_REVISION.read(Path(sys.argv[3]))
out["cross_revision"] = compared["comparisons"][0]["tasks"]
out["schemas_to_regenerate"] = schema.differences()
print(json.dumps(out))
"""


@pytest.mark.snakemake
def test_a_field_added_to_a_declaration_reaches_every_reader(tmp_path):
    """The demo pipeline run with three fields added, each in its declaration and in the code
    that computes it, and nothing else: every stage writes and reads them (the imports, the
    comparison, the report and its analysis, figures, failure anatomy, task table, local runs,
    exports, the comparison across revisions), the frames show each as a typed column, the
    fast reader of an import still takes its fast path, every JSON artifact is valid under the
    schemas generated from the changed declarations, and the shipped schemas are named as the
    ones to regenerate."""
    package = package_with(tmp_path, list(ADDED))
    root = project(tmp_path)
    env = {"PYTHONPATH": str(package)}
    done = subprocess.run(
        [str(Path(sys.executable).with_name("snakemake"))],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env={
            **os.environ,
            **env,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        },
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    folder = root / "results" / demo_revision()
    tables = subprocess.run(
        [
            str(Path(sys.executable).with_name("afbench")),
            "export",
            "--root",
            str(folder),
            "--format",
            "csv",
            "--output-dir",
            str(tmp_path / "tables"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert tables.returncode == 0, tables.stderr
    assert "tokens" in (tmp_path / "tables/official_results.csv").read_text().splitlines()[0]
    for fmt in ("markdown", "eee"):
        exported = subprocess.run(
            [
                str(Path(sys.executable).with_name("afbench")),
                "export",
                "--root",
                str(folder),
                "--format",
                fmt,
                "--output-dir",
                str(tmp_path / fmt),
                "--retrieved-at",
                "0",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            timeout=300,
        )
        assert exported.returncode == 0, exported.stderr
    # the comparison across revisions reads the imports too (two of one revision here: the
    # demo's upgrade runs elsewhere), with the user's command
    imports = sorted(folder.rglob("imports/*/*/demo-model-*.json"))
    compared = subprocess.run(
        [
            str(Path(sys.executable).with_name("afbench")),
            "compare-revisions",
            f"--catalog={folder / 'tasks' / 'catalog.json'}",
            f"--previous={imports[0]}",
            f"--current={imports[1]}",
            f"--output={tmp_path / 'comparisons.json'}",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert compared.returncode == 0, compared.stderr
    read = run_with(
        package, READ_BACK, str(folder), str(package), str(tmp_path / "comparisons.json")
    )
    assert read.returncode == 0, read.stderr[-3000:]
    out = json.loads(read.stdout)
    assert out["official_results"][0] == "Int64" and out["official_results"][1] > 0
    assert out["leaderboard"] == ["Float64", 9]
    assert out["run_outcomes"][0] == "Int64" and out["run_outcomes"][1] > 0
    assert out["fast_reader"] is True
    assert out["invalid"] == []
    assert out["cross_revision"] == 341  # every demo task, on both sides
    assert sorted(out["schemas_to_regenerate"]) == [
        "analysis.schema.json: differs",
        "official-reference.schema.json: differs",
        "official-results-import.schema.json: differs",
    ]


@pytest.mark.parametrize(
    ("files", "said"),
    [
        (["kinds/official.py"], "fields not given: ['tokens']"),  # declared, not computed
        (["imports/official.py"], "fields not declared: ['tokens']"),  # computed, not declared
    ],
)
def test_a_field_in_only_one_of_the_two_places_fails_its_writer(tmp_path, files, said):
    package = package_with(tmp_path, files)
    code = """
import sys
from pathlib import Path
from afbench.tasks import catalog
from afbench.imports import official
from afbench.release import demo
from afbench.core.config import default_columns
from afbench.core.fsutil import sha256_bytes
files = demo.generate_release(1, 1)
columns = {k: default_columns(k) for k in ("manifest", "sources", "results")}
entry = lambda name: (files[name], {"path": name, "actual_sha256": sha256_bytes(files[name])})
made = catalog.build_catalog(entry("MANIFEST.csv"), entry("SOURCES.csv"), columns,
    {"tasks": 341, "sources": 24, "obligations": 1155},
    {"name": "n", "repository": "o/n", "revision": "0" * 40, "synthetic": True, "lean": "l",
     "mathlib": "m", "harbor": "h", "nominal_budget_usd": 200.0, "license": "l",
     "dates": {k: None for k in ("release_page", "manuscript_cover", "software_citation",
     "first_public_release")}, "images": []}, "x")
slug = sorted(demo.scaled_models(1, 1))[0]
official.import_model(made, entry(f"results/{slug}.csv"), official.ModelSpec(slug, slug,
    "source-present"), columns["results"], "source-present", 200)
"""
    done = run_with(package, code)
    assert done.returncode != 0
    assert said in done.stderr, done.stderr[-2000:]


def test_a_field_of_a_declared_form_refuses_other_text_in_reader_and_schema(tmp_path):
    digest = Kind("afbench test digest", Field("sha256", str, pattern=kinds.SHA256))
    good = digest.record(sha256="a" * 64)
    assert placeholder(digest.field("sha256")) == "0" * 64
    validator = Draft202012Validator(digest.json_schema())
    assert validator.is_valid(good)
    for bad in ("A" * 64, "a" * 63, "a" * 64 + "\n", "../../etc/passwd"):
        path = tmp_path / "digest.json"
        path.write_bytes(json_bytes({**good, "sha256": bad}))
        with pytest.raises(AfbenchError) as refused:
            digest.read(path)
        assert str(refused.value).startswith(f"{path}: field 'sha256': artifact field is not of")
        assert "a SHA-256 digest" in str(refused.value)
        assert not validator.is_valid({**good, "sha256": bad})
    with pytest.raises(TypeError):
        Field("count", int, pattern=kinds.SHA256)


def test_every_relation_joins_declared_kinds_through_a_check_that_exists():
    from importlib import import_module

    from afbench.kinds import relations

    declared = [v for v in vars(relations).values() if isinstance(v, relations.Relation)]
    assert len({r.name for r in declared}) == len(declared) >= 15
    for relation in declared:
        assert relation.artifact in KINDS or relation.artifact == "*", relation.name
        sources = (None, relations.BYTES, *KINDS, *kinds.TABLES)
        assert relation.source in sources, relation.name
        module, _, function = relation.check.partition(":")
        assert callable(getattr(import_module(module), function)), relation.name
