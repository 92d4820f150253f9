"""A setting's type and range live in the config schema alone: the job flag that carries it
converts with afbench.core.settings.converter(dpath), so the schema and the command line can never
disagree on what a setting accepts."""

from __future__ import annotations

import argparse
import json
import random
import re

import jsonschema
import pytest

from afbench.cli.jobs import JOBS
from afbench.cli.types import InputPath, OutputDir, OutputPath
from afbench.core import settings
from afbench.core.config import TRANSPORT_SETTINGS

from conftest import REPO

WORKFLOW = REPO / "workflow"
SETTING = re.compile(r'setting\(\s*"([a-z-]+)",\s*f?"([^"]+)"\s*\)')
RULE = re.compile(r"^(?:rule|checkpoint) (\w+):\n((?:(?:    .*)?\n)*)", re.M)
FUNCTION = re.compile(r"^def (\w+)\(.*?(?=^\S)", re.M | re.S)
JOB = re.compile(r'shell_line\(\s*"([a-z-]+)"')  # the rule's `afbench job <verb>` line


def _functions() -> dict[str, str]:
    text = (WORKFLOW / "rules" / "common.smk").read_text() + "\n_end\n"
    return {m.group(1): m.group(0) for m in FUNCTION.finditer(text)}


def _with_helpers(body: str, functions: dict[str, str], seen: set[str]) -> str:
    """A rule's text with the text of every common.smk function it calls, transitively."""
    text = body
    for name, source in functions.items():
        if name not in seen and re.search(rf"\b{name}\(", body):
            seen.add(name)
            text += _with_helpers(source, functions, seen)
    return text


# Settings a rule hands its job through option() (a value it computes from config, not a
# plain lookup), each with the setting it carries
OPTION_SETTINGS = {
    **{
        job: {("agent", "plans/items/*/agent"), ("model", "plans/items/*/model")}
        for job in ("write-plan", "run-trial")
    },
    "select-tasks": {
        ("task", "selections/*/tasks/*"),
        ("source", "selections/*/sources/*"),
        ("limit", "selections/*/limit"),
        ("stratified-tasks", "selections/*/stratified/tasks"),
        ("stratified-seed", "selections/*/stratified/seed"),
        ("frozen", "selections/*/frozen"),
    },
}


def settings_by_job() -> dict[str, set[tuple[str, str]]]:
    """Each job command, and the (flag, dpath) of every setting its rules hand it."""
    functions = _functions()
    found: dict[str, set[tuple[str, str]]] = {}
    for path in [WORKFLOW / "Snakefile", *(WORKFLOW / "rules").glob("*.smk")]:
        for _, body in RULE.findall(path.read_text()):
            job = JOB.search(body)
            if job is None:
                continue
            text = _with_helpers(body, functions, set())
            pairs = {
                (flag, re.sub(r"\{\w+\}", settings.ANY_KEY, dpath))
                for flag, dpath in SETTING.findall(text)
            }
            if "TRANSPORT_SETTINGS" in text:  # setting(key..., f"source/{key}") for each
                pairs |= {(k.replace("_", "-"), f"source/{k}") for k in TRANSPORT_SETTINGS}
            found.setdefault(job.group(1), set()).update(pairs)
    for job, pairs in OPTION_SETTINGS.items():
        found[job] |= pairs
    return found


def _parser(job: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    JOBS[job].arguments(parser)
    return parser


def _flag_type(parser: argparse.ArgumentParser, flag: str):
    for action in parser._actions:
        if f"--{flag}" in action.option_strings:
            return action
    raise AssertionError(f"no --{flag}")


PATHS = (InputPath, OutputPath, OutputDir)


def test_every_setting_a_rule_hands_a_job_is_converted_by_its_schema():
    """For every `setting(flag, dpath)` a rule hands its job, the job's --flag converts with the
    schema's node at dpath (path settings keep their path types, which say read or write)."""
    found = settings_by_job()
    assert sum(len(pairs) for pairs in found.values()) >= 60
    wrong = []
    for job, pairs in sorted(found.items()):
        parser = _parser(job)
        for flag, dpath in sorted(pairs):
            action = _flag_type(parser, flag)
            converter = action.type
            if getattr(converter, "dpath", None) == dpath:
                continue
            if isinstance(converter, type) and issubclass(converter, PATHS):
                continue
            if converter is not None and getattr(converter, "__name__", "").endswith("_path"):
                continue
            wrong.append(f"job {job} --{flag}: {dpath}")
    assert wrong == []


def test_the_json_schema_is_the_yaml_schema():
    """data/config.schema.json (what every reader reads) is the YAML source, as written by
    `python -m afbench.core.settings`."""
    assert settings.SCHEMA_JSON.read_text() == settings.schema_as_json()


def _keywords(node: object, found: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            if key in ("properties", "$defs"):
                for child in value.values():
                    _keywords(child, found)
            elif key != "enum" and key != "default":
                _keywords(value, found)
    elif isinstance(node, list):
        for item in node:
            _keywords(item, found)


def _setting_nodes():
    """Every setting that some job flag carries: (dpath, schema node)."""
    return sorted({dpath for pairs in settings_by_job().values() for _, dpath in pairs})


@pytest.mark.parametrize("dpath", _setting_nodes())
def test_the_flag_accepts_exactly_what_the_schema_accepts(dpath):
    """Against python-jsonschema itself, for texts around every bound and pattern of the
    setting: the converter accepts a text exactly when the schema accepts its value."""
    node = settings.node(dpath)
    keywords: set[str] = set()
    _keywords(settings.resolve(node), keywords)
    assert keywords - settings.KEYWORDS <= {"items", "properties", "additionalProperties"}
    schema = {"$defs": settings.schema()["$defs"], **node}
    validator = jsonschema.Draft202012Validator(schema)
    convert = settings.converter(dpath)
    texts = ["", "0", "1", "-1", "0.5", "1.5", "2", "true", "false", "nan", "inf", "1e3"]
    texts += ["x", "a b", "demo", "x" * 300, "9007199254740991", "90071992547409910", "1\n"]
    texts += ["0" * 40, "a" * 40, "f" * 64, "sha256:" + "0" * 64, "2026-02-29", "2024-02-29"]
    rng = random.Random(dpath)
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        bound = settings.resolve(node).get(key)
        if bound is not None:
            for delta in (-1, -0.001, 0, 0.001, 1):
                moved = bound + delta
                texts.append(repr(moved) if isinstance(moved, float) else str(moved))
    texts += [str(rng.randint(-(10**13), 10**13)) for _ in range(20)]
    for text in texts:
        try:
            value = convert(text)
        except argparse.ArgumentTypeError:
            accepted = False
            value = settings.parse(text, node)
        else:
            accepted = True
        assert accepted == validator.is_valid(value), (dpath, text, value)
        if accepted:
            assert json.loads(json.dumps(value)) == value


def test_a_refusal_says_what_the_schema_expects():
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        settings.converter("preregister/futility_power")("0.7")
    assert str(refused.value) == "expected a finite decimal number >= 0 and <= 0.5, found '0.7'"
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        settings.converter("power/baseline_rate")("x")
    assert "(or empty: none)" in str(refused.value)
    assert settings.converter("power/baseline_rate")("") is None


@pytest.mark.parametrize("dpath", _setting_nodes())
def test_an_empty_text_means_one_thing_in_config_and_on_the_command_line(dpath):
    """A flag's empty value is null where the setting allows null; so an empty text must not
    be a valid value of that setting in config (it would mean something else there)."""
    node = settings.node(dpath)
    if "null" in settings.types_of(node) and "string" in settings.types_of(node):
        assert not settings.check("", node), dpath
