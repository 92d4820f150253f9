"""The configuration: its loader (YAML refused before it is built: deep nesting, aliases, duplicate
keys, a file that is not regular), the JSON Schema and the checks beyond it, each refusal naming
file and field, and the committed configs' pins."""

from __future__ import annotations

import copy
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from afbench.core.config import MAX_CONFIG_BYTES, SCHEMA_PATH, _schema, load_config, validate_config
from afbench.core.errors import AfbenchError
from afbench.core.harbor import ENVIRONMENT_TYPES, check_environment_type

import properties as prop
from conftest import (
    EXAMPLES_100,
    EXAMPLES_150,
    REPO,
    one_clean_message,
)

DEMO = REPO / "config" / "demo.yaml"


def refused(data: object, *needles: str) -> str:
    with pytest.raises(AfbenchError) as err:
        validate_config(data, "my.yaml")
    message = str(err.value)
    assert "my.yaml" in message
    for needle in needles:
        assert needle in message, message
    return message


def write_config(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load_refused(path: Path, *needles: str) -> str:
    with pytest.raises(AfbenchError) as err:
        load_config([path])
    message = str(err.value)
    assert str(path) in message and len(message) < 1000, message
    for needle in needles:
        assert needle in message, message
    return message


def at(doc: dict, path: list, value: object) -> dict:
    doc = copy.deepcopy(doc)
    node = doc
    for step in path[:-1]:
        node = node.setdefault(step, {}) if isinstance(node, dict) else node[step]
    node[path[-1]] = value
    return doc


# 1. config: bounded YAML -------------------------------------------------------------------
def _load_in_child(path: Path) -> subprocess.CompletedProcess:
    """load_config in a child, so that a regression (a segfault) fails this test, not pytest."""
    code = textwrap.dedent(
        f"""
        import sys
        from afbench.core.config import load_config
        from afbench.core.errors import AfbenchError
        try:
            load_config([{str(path)!r}])
        except AfbenchError as exc:
            print(f"afbench: error: {{exc}}", file=sys.stderr)
            sys.exit(2)
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize("depth", [20_000, 50_000])
def test_deeply_nested_yaml_is_refused_before_it_is_built(tmp_path, depth):
    path = write_config(tmp_path, "release: " + "[" * depth + "]" * depth + "\n")
    result = _load_in_child(path)
    assert result.returncode == 2
    one_clean_message(result.stderr)
    assert "nested more than 64 levels deep (line 1)" in result.stderr


def laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join([*lines, f"release: *a{levels - 1}", ""])


@pytest.mark.parametrize("levels", [5, 6, 10])
def test_billion_laughs_is_refused_without_expanding_it(tmp_path, levels):
    path = write_config(tmp_path, laughs(levels))
    if levels == 5:  # 9^5 values: within the bound, so the schema sees it: still no flood
        message = load_refused(path, "field 'release'")
    else:
        result = _load_in_child(path)
        assert result.returncode == 2
        one_clean_message(result.stderr)
        message = result.stderr
        assert "more than 200000 values once aliases are expanded" in message
    assert message.count("lol") <= 10  # never the expanded value


def test_recursive_alias_is_refused(tmp_path):
    load_refused(write_config(tmp_path, "release: &a [1, *a]\n"), "recursive or undefined alias")


def test_too_many_aliases_are_refused(tmp_path):
    text = "a: &x 1\nb: [" + ", ".join(["*x"] * 1001) + "]\n"
    load_refused(write_config(tmp_path, text), "more than 1000 aliases")


def test_a_config_larger_than_the_cap_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"# " + b"x" * MAX_CONFIG_BYTES + b"\n")
    load_refused(path, "larger than the size cap")


@pytest.mark.parametrize(
    "text,key,lines",
    [
        ("release: {}\nrelease: {}\n", "'release'", ("line 2", "line 1")),
        (
            "release:\n  revision: " + "a" * 40 + "\n  revision: " + "b" * 40 + "\n",
            "'revision'",
            ("line 3", "line 2"),
        ),
        (
            "models:\n  m:\n    display_name: M\n    sha256: null\n    sha256: " + "c" * 64 + "\n",
            "'sha256'",
            ("line 5", "line 4"),
        ),
        ('{"a": 1, "a": 2}\n', "'a'", ("line 1",)),  # JSON is read by the same loader
    ],
)
def test_duplicate_keys_are_refused_naming_key_and_lines(tmp_path, text, key, lines):
    message = load_refused(write_config(tmp_path, text), f"duplicate key {key}", *lines)
    assert message.index(lines[0]) < message.index(key)  # where, then what


@pytest.mark.parametrize("key", ["123", "on", "null", "[a, b]"])
def test_keys_that_are_not_text_are_refused(tmp_path, key):
    load_refused(write_config(tmp_path, f"selections:\n  {key}: {{}}\n"), "a key must be text")


def test_a_config_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    load_refused(fifo, "FIFO")
    load_refused(Path("/dev/zero"), "character device")
    load_refused(tmp_path, "a folder")
    link = tmp_path / "link.yaml"  # a link to a regular file is read (config/config.yaml is one)
    link.symlink_to(DEMO)
    assert load_config([link])["release"]["synthetic"] is True
    to_fifo = tmp_path / "to-fifo.yaml"
    to_fifo.symlink_to(fifo)
    load_refused(to_fifo, "FIFO")


# 1. config: the schema ---------------------------------------------------------------------
def _all_patterns(node: object):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern":
                yield value
            else:
                yield from _all_patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _all_patterns(value)


def test_every_anchored_schema_pattern_ends_with_a_full_match_anchor():
    patterns = list(_all_patterns(_schema()))
    assert len(patterns) > 10
    for pattern in patterns:
        assert not pattern.endswith("$"), pattern  # `$` matches before a final newline
        if pattern.startswith("^"):
            assert pattern.endswith(r"\Z"), pattern


TRAILING_NEWLINE = [
    (["release", "revision"], "a" * 40 + "\n"),
    (["release", "mathlib"], "a" * 40 + "\n"),
    (["release", "repository"], "owner/name\n"),
    (["files", "manifest", "sha256"], "a" * 64 + "\n"),
    (["files", "manifest", "path"], "MANIFEST.csv\n"),
    (["models", "demo-model-a", "sha256"], "a" * 64 + "\n"),
    (["models", "demo-model-a", "display_name"], "Model A\n"),
    (["release", "images"], [{"role": "verifier", "digest": "sha256:" + "a" * 64 + "\n"}]),
    (["selections", "x\n"], {}),
    (["selections", "x"], {"tasks": ["demo_s01_t001\n"]}),
    (["import", "models"], ["demo-model-a\n"]),
    (["plans", "environment_type"], "docker\n"),
    (["plans", "items"], [{"selection": "x", "agent": "nop\n"}]),
    (["plans", "items"], [{"selection": "x", "agent": "codex", "model": "openai/gpt\n"}]),
    (["results_dir"], "results\n"),
    (["source", "base_url"], "https://example.org/\n"),
    (["release", "dates", "release_page"], "2026-10-13\n"),
    (["columns", "manifest", "task_id"], "task_id\n"),
]


@pytest.mark.parametrize("path,value", TRAILING_NEWLINE)
def test_a_trailing_newline_is_refused_by_us_and_by_snakemake(demo_yaml, path, value):
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    doc = at(demo_yaml, path, value)
    message = refused(doc)
    assert "\n" not in message  # escaped, so the message stays on one line
    with pytest.raises(WorkflowError):
        validate(copy.deepcopy(doc), str(SCHEMA_PATH))


@pytest.mark.parametrize(
    "value", ["2026-13-45", "2026-02-30", "2025-02-29", "1900-02-29", "0000-01-01", "2026-1-1"]
)
def test_impossible_dates_are_refused(demo_yaml, value):
    refused(
        at(demo_yaml, ["release", "dates", "release_page"], value), "release/dates/release_page"
    )


@pytest.mark.parametrize("value", ["2024-02-29", "2000-02-29", "2026-12-31", None])
def test_real_dates_are_accepted(demo_yaml, value):
    config = validate_config(at(demo_yaml, ["release", "dates", "release_page"], value))
    assert config["release"]["dates"]["release_page"] == value


def test_unquoted_dates_impossible_or_not_are_refused_with_their_line(tmp_path):
    text = DEMO.read_text().replace(
        "  nominal_budget_usd: 200\n",
        "  nominal_budget_usd: 200\n  dates: {release_page: 2026-13-45}\n",
        1,
    )
    assert "2026-13-45" in text
    load_refused(write_config(tmp_path, text), "not a valid date", "line ")
    text = text.replace("2026-13-45", "2026-10-13")
    load_refused(
        write_config(tmp_path, text), "write a date in quotes", "release/dates/release_page"
    )


@pytest.mark.parametrize("value", ["../..", "a/..", "./b", "a/.", "..", "a/b/c", "a", "a/b\n"])
def test_repository_must_be_owner_slash_name(demo_yaml, value):
    refused(at(demo_yaml, ["release", "repository"], value), "release/repository")


def test_repository_may_start_with_a_dot(demo_yaml):
    assert validate_config(at(demo_yaml, ["release", "repository"], "org/.github"))


NUMBER_SETTINGS = [
    ["release", "nominal_budget_usd"],
    ["source", "connect_timeout_s"],
    ["source", "read_timeout_s"],
    ["source", "total_timeout_s"],
    ["source", "backoff_factor"],
    ["report", "confidence"],
    ["runs", "r", "budget_usd"],
    ["source", "retries"],
    ["source", "max_bytes"],
    ["release", "expected_counts", "tasks"],
    ["selections", "s", "limit"],
]


def _with_number(demo_yaml: dict, path: list, value: object) -> dict:
    doc = copy.deepcopy(demo_yaml)
    doc.setdefault("runs", {})["r"] = {"kind": "verdicts", "paths": ["x"], "selection": "s"}
    doc.setdefault("selections", {})["s"] = {}
    for key in ("expected_counts",):
        doc["release"].setdefault(key, {})
    return at(doc, path, value)


@pytest.mark.parametrize("path", NUMBER_SETTINGS, ids=lambda p: "/".join(p))
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1.0, -200])
def test_non_finite_and_negative_numbers_are_refused_in_every_number_setting(
    demo_yaml, path, value
):
    message = refused(_with_number(demo_yaml, path, value), "/".join(path))
    assert len(message) < 500


@pytest.mark.parametrize("text,word", [(".nan", "NaN"), (".inf", "infinity"), ("-.inf", "")])
def test_yaml_nan_and_inf_are_refused_from_a_file(tmp_path, text, word):
    source = DEMO.read_text().replace("nominal_budget_usd: 200", f"nominal_budget_usd: {text}")
    load_refused(write_config(tmp_path, source), "release/nominal_budget_usd", word)


def test_a_whole_number_written_as_a_float_is_refused_where_an_integer_is_needed(demo_yaml):
    refused(_with_number(demo_yaml, ["source", "retries"], 3.0), "source/retries")


@pytest.mark.parametrize("slug", ["summary", "leaderboard", "Summary", "LEADERBOARD"])
def test_model_slugs_that_collide_with_summary_files_are_refused(demo_yaml, slug):
    doc = copy.deepcopy(demo_yaml)
    doc["models"][slug] = doc["models"]["demo-model-a"]
    refused(doc, "not 'summary' or 'leaderboard'")
    refused(at(demo_yaml, ["import", "models"], [slug]), "import/models/0")


@pytest.mark.parametrize(
    "value",
    ["--help", "-e", "docker ", "Docker", "docker;rm", "mod:", ":Cls", "a..b:C", "a.b:C.D", "1a:B"],
)
def test_environment_type_is_a_harbor_name_or_an_import_path(demo_yaml, value):
    refused(at(demo_yaml, ["plans", "environment_type"], value), "plans/environment_type")
    with pytest.raises(AfbenchError, match="environment type"):
        check_environment_type(value)


def test_every_harbor_0_22_environment_type_and_import_paths_are_accepted(demo_yaml):
    # the list lives in afbench.core.harbor alone: the schema holds only the shape of a name
    assert "enum" not in str(_schema()["properties"]["plans"]["properties"]["environment_type"])
    assert len(ENVIRONMENT_TYPES) == 26
    for value in [*ENVIRONMENT_TYPES, "my_envs.cloud:CloudEnv", "pkg:E"]:
        config = validate_config(at(demo_yaml, ["plans", "environment_type"], value))
        assert check_environment_type(config["plans"]["environment_type"]) == value


def test_schema_messages_are_short_even_for_a_huge_value(demo_yaml):
    message = refused(at(demo_yaml, ["release", "revision"], "x" * 500_000), "release/revision")
    assert len(message) < 1000
    message = refused(at(demo_yaml, ["release", "name"], list(range(100_000))), "release/name")
    assert len(message) < 1000


def test_a_python_built_config_with_odd_values_is_refused(demo_yaml):
    import datetime

    refused(at(demo_yaml, ["results_dir"], b"results"), "results_dir", "not a plain value")
    refused(at(demo_yaml, ["selections"], {1: {}}), "a key must be text")
    refused(at(demo_yaml, ["release", "name"], datetime.date(2026, 1, 1)), "in quotes")
    refused(at(demo_yaml, ["models", "demo-model-a", "display_name"], "A\udc80"), "display_name")
    refused(at(demo_yaml, ["source", "base_url"], "https://example.org\ud800"), "base_url")


@EXAMPLES_100
@given(path=st.sampled_from(prop.TEXT_PLACES), text=prop.hostile_texts)
def test_hostile_text_at_any_config_setting_is_refused_or_sane(path, text):
    prop.check_config_text(path, text)


@EXAMPLES_100
@given(path=st.sampled_from(prop.NUMBER_PLACES), value=prop.hostile_numbers)
def test_hostile_numbers_at_any_number_setting_are_refused_or_sane(path, value):
    prop.check_config_number(path, value)


@EXAMPLES_100
@given(case=prop.yaml_cases)
def test_deep_aliased_duplicate_or_hostile_yaml_is_refused_or_sane(case):
    prop.check_config_yaml(case)


def test_the_oracle_catches_a_schema_hole(demo_yaml):
    """assert_config_sane is independent of the schema: it refuses what a weaker schema let by."""
    config = validate_config(prop.HOSTILE_BASE)
    prop.assert_config_sane(config)
    for path, value in [
        (["release", "revision"], "a" * 40 + "\n"),
        (["source", "total_timeout_s"], math.nan),
        (["plans", "environment_type"], "--help"),
        (["models"], {"summary": config["models"]["demo-model-a"]}),
    ]:
        with pytest.raises((AssertionError, AfbenchError)):
            prop.assert_config_sane(at(config, path, value))


@EXAMPLES_150
@given(
    path=st.sampled_from(
        [
            ["release", "revision"],
            ["files", "manifest", "sha256"],
            ["source", "kind"],
            ["import", "budget_usd"],
            ["selections"],
            ["models", "demo-model-a", "path"],
            ["runs"],
            ["plans", "items"],
            ["report", "confidence"],
            ["results_dir"],
        ]
    ),
    value=prop.json_values,
)
def test_any_config_value_is_validated_or_refused(demo_yaml, path, value):
    prop.check_config(demo_yaml, path, value)


def test_published_facts_need_their_source(demo_yaml):
    from afbench.core.config import validate_config

    cfg = copy.deepcopy(demo_yaml)
    cfg["release"]["published"]["source"] = None
    with pytest.raises(AfbenchError, match="published facts need their source"):
        validate_config(cfg)


def test_the_official_config_records_the_interface_pages_figures():
    from afbench.core.config import OFFICIAL_CONFIG, load_config, published_facts

    facts = published_facts(load_config([OFFICIAL_CONFIG]))
    assert facts["passes"] == {
        "gpt-6-astra": 281,
        "opus-5": 211,
        "gpt-5.6-sol": 201,
        "fable-5": 181,
        "deepseek-v4.1-flash": 180,
        "gemini-3.7-flash": 179,
        "kimi-k3": 165,
        "sonnet-5": 152,
        "opus-4.8": 150,
    }
    assert facts["task_rows"] == 3069 == 9 * 341
    assert facts["over_budget_usd"] == {"fable-5": [358.8273]}
    assert "interface page" in facts["source"]


def test_stratified_and_power_settings_are_checked_when_config_is_read(demo_yaml):
    from afbench.core.config import validate_config

    refusals = [
        (["selections", "x"], {"stratified": {"tasks": 5, "seed": 1}, "limit": 3}, "no task list"),
        (["selections", "x"], {"stratified": {"tasks": 5}}, "seed"),
        (["power"], {"difference": 0.1, "tasks": 50, "baseline_rate": 0.5}, "not both"),
        (["power"], {"difference": 0.1}, "two models or a baseline rate"),
        (["power"], {"tasks": 50, "models": ["demo-model-a"]}, "two different models"),
        (["power"], {"tasks": 50, "models": ["demo-model-a", "nope"]}, "unknown model"),
    ]
    for path, value, message in refusals:
        cfg = copy.deepcopy(demo_yaml)
        cfg.setdefault(path[0], {})
        if len(path) == 2:
            cfg[path[0]][path[1]] = value
        else:
            cfg[path[0]] = value
        with pytest.raises(AfbenchError, match=message):
            validate_config(cfg)


def test_official_config_has_the_known_pins_and_null_pins_for_the_rest():
    cfg = load_config([REPO / "config/config.yaml"])
    assert cfg["release"]["revision"] == "af1aa38fd44e019e566bce0b5a168609a886d8e6"
    assert cfg["release"]["repository"] == "facebookresearch/autoformbench"
    assert cfg["files"]["manifest"]["sha256"].startswith("8fcde338")
    assert cfg["files"]["sources"]["sha256"].startswith("854135c5")
    assert cfg["models"]["gpt-6-astra"]["sha256"].startswith("64a2174e")
    assert sorted(s for s, m in cfg["models"].items() if m["sha256"] is None) == sorted(
        [
            "opus-5",
            "gpt-5.6-sol",
            "fable-5",
            "deepseek-v4.1-flash",
            "gemini-3.7-flash",
            "kimi-k3",
            "sonnet-5",
            "opus-4.8",
        ]
    )
    assert cfg["release"]["dates"]["first_public_release"] is None
    assert cfg["release"]["nominal_budget_usd"] == 200


@pytest.mark.parametrize(
    "mutate,field",
    [
        (lambda c: c["release"].update(revision="main"), "release/revision"),
        (lambda c: c["files"]["manifest"].update(sha256="abc"), "files/manifest/sha256"),
        (lambda c: c.update(unknown_key=1), "(top level)"),
        (lambda c: c["release"].update(nominal_budget_usd=-1), "release/nominal_budget_usd"),
        (lambda c: c["selections"].update({"../x": {}}), "selections"),
        (lambda c: c.update(release=5), "release"),
        (
            lambda c: c["models"]["demo-model-a"].update(path="../etc/passwd"),
            "models/demo-model-a/path",
        ),
    ],
)
def test_schema_rejects_bad_config_naming_the_field(demo_yaml, mutate, field):
    cfg = copy.deepcopy(demo_yaml)
    mutate(cfg)
    with pytest.raises(AfbenchError) as err:
        validate_config(cfg, "my.yaml")
    assert "my.yaml" in str(err.value) and field in str(err.value)


def test_defaults_are_filled_the_same_way_as_snakemake_validate(demo_yaml):
    from snakemake.utils import validate

    ours = validate_config(demo_yaml)
    theirs = copy.deepcopy(demo_yaml)
    validate(theirs, str(REPO / "scripts/afbench/data/config.schema.yaml"))
    assert ours == theirs
    assert ours["columns"]["results"]["cost_usd"] == "cost_usd"
    assert ours["import"]["strict_budget"] is False


def test_unknown_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(AfbenchError, match="config file not found"):
        load_config([tmp_path / "missing.yaml"])
    bad = Path(tmp_path / "bad.yaml")
    bad.write_text("release: [unclosed\n")
    with pytest.raises(AfbenchError, match="not valid YAML"):
        load_config([bad])


def test_the_readers_fields_are_the_schemas_columns():
    """The CSV readers' field lists (what a job's --column flags must map) are the schema's
    column mappings, in the schema's order."""
    from afbench.core.config import default_columns
    from afbench.imports.official import RESULT_FIELDS
    from afbench.tasks.catalog import MANIFEST_FIELDS, SOURCES_FIELDS

    for kind, fields in (
        ("manifest", MANIFEST_FIELDS),
        ("sources", SOURCES_FIELDS),
        ("results", RESULT_FIELDS),
    ):
        assert tuple(default_columns(kind)) == fields


def test_a_config_validated_again_is_a_fresh_copy_of_the_same_settings():
    """A config is validated once a process: each caller still gets its own filled copy, and
    a change to the settings (one value) is validated afresh."""
    import yaml

    data = yaml.safe_load((REPO / "config" / "demo.yaml").read_text())
    first = validate_config(data)
    first["release"]["revision"] = "changed by its caller"
    second = validate_config(data)
    assert second == validate_config(copy.deepcopy(data)) != first
    assert second["release"]["revision"] == data["release"]["revision"]
    broken = copy.deepcopy(data)
    broken["release"]["revision"] = 7
    with pytest.raises(AfbenchError):
        validate_config(broken)
    assert validate_config(data) == second


def test_the_history_refuses_a_store_it_cannot_read(demo_yaml):
    """The history across revisions reads the store's partitions on this machine: with an S3
    store.root it is refused by name, not left to find no other revision."""
    doc = at(at(demo_yaml, ["store", "root"], "s3://bucket/store"), ["report", "history"], True)
    with pytest.raises(AfbenchError) as err:
        validate_config(doc)
    assert [p.field for p in err.value.problems] == ["report/history"]
    assert validate_config(at(doc, ["report", "history"], False))["store"]["root"] == (
        "s3://bucket/store"
    )
