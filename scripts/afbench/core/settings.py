"""A setting's type and range, declared once in the config schema (data/config.schema.yaml) and
read here for the command line: `converter("power/alpha")` is the `type=` of the flag that
carries that setting, so a flag accepts exactly what the schema accepts at that place, and
refuses the rest naming what was expected.

Jobs read no YAML (its import alone costs a job's start-up more than its work): they read
data/config.schema.json, the same schema as JSON, written from the YAML by `python -m
afbench.core.settings` (a test keeps the two equal). The schema keywords a scalar setting may use
are checked here, each one (KEYWORDS); a test walks the schema and refuses a keyword this module
does not know, so a new kind of constraint can never be silently ignored by the command line.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from functools import cache

# plain paths: pathlib is not imported for a job's --help (SCHEMA_JSON is the Path of it). The
# schema as people write it (YAML), and the same as JSON, which every reader reads (it loads
# faster, and jobs read no YAML: schema_as_json keeps the two equal)
_DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
_SCHEMA_YAML = os.path.join(_DATA, "config.schema.yaml")
_SCHEMA_JSON = os.path.join(_DATA, "config.schema.json")

# the keywords a setting's schema may hold, each honoured by check() (or only a note)
KEYWORDS = frozenset(
    {
        "type",
        "$ref",
        "enum",
        "pattern",
        "not",
        "anyOf",
        "oneOf",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "description",
        "default",
        "$comment",
    }
)
INTEGER = r"-?[0-9]{1,20}"
DECIMAL = r"-?[0-9]{1,20}(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,3})?"
# source.kind -> the setting that says where that source is
SOURCE_LOCATION = {"https": "base_url", "git": "checkout", "dir": "mirror"}

# How a file is downloaded, never what it is: these settings reach only the fetch_file job and,
# by decision, rerun nothing (a timeout cannot change a verified byte).
TRANSPORT_SETTINGS = (
    "connect_timeout_s",
    "read_timeout_s",
    "total_timeout_s",
    "retries",
    "backoff_factor",
    "max_bytes",
)

ANY_KEY = "*"  # a dpath step that stands for any key of a map (models/*/display_name)


@cache
def schema() -> dict:
    import json  # only when a flag of a setting is given (not for --help)

    with open(_SCHEMA_JSON, encoding="utf-8") as schema_file:
        return json.load(schema_file)


def yaml_load(text: str):
    """Plain YAML for our own packaged files (the schema)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def schema_as_json() -> str:
    """The YAML schema, as data/config.schema.json holds it."""
    import json

    with open(_SCHEMA_YAML, encoding="utf-8") as source_file:
        source = yaml_load(source_file.read())
    return json.dumps(source, indent=1, ensure_ascii=False) + "\n"


def resolve(node: dict) -> dict:
    """`node` with its $ref followed (its own keywords beside the $ref win)."""
    while "$ref" in node:
        name = node["$ref"].removeprefix("#/$defs/")
        node = {**schema()["$defs"][name], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def node(dpath: str) -> dict:
    """The schema of the setting at `dpath` ('power/alpha'; '*' for any value of a map or item
    of a list: 'models/*/display_name', 'plans/items/*/agent')."""
    here = schema()
    for step in dpath.split("/"):
        here = resolve(here)
        if step != ANY_KEY:
            here = here["properties"][step]
        elif "items" in here:  # an item of a list
            here = here["items"]
        else:  # a value of a map
            here = here["additionalProperties"]
    return here


def default(dpath: str) -> object:
    """The setting's default, as the schema gives it (a flag left out takes it)."""
    return resolve(node(dpath))["default"]


def types_of(node: dict) -> set[str]:
    node = resolve(node)
    found = node.get("type")
    if found is not None:
        return {found} if isinstance(found, str) else set(found)
    return set().union(*(types_of(n) for n in node.get("anyOf", node.get("oneOf", [])))) or {
        "string",
        "number",
    }


def check(value: object, node: dict) -> bool:
    """Whether `value` (a scalar: None, bool, int, float, str) meets `node`, as JSON Schema
    (draft 2020-12, the keywords in KEYWORDS) says."""
    node = resolve(node)
    if "type" in node and not _is_type(value, node["type"]):
        return False
    if "enum" in node and not any(_same(value, v) for v in node["enum"]):
        return False
    if isinstance(value, str):
        if "pattern" in node and not re.search(node["pattern"], value):
            return False
        if len(value) < node.get("minLength", 0) or len(value) > node.get("maxLength", math.inf):
            return False
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and not _in_range(value, node):
        return False
    if "not" in node and check(value, node["not"]):
        return False
    if "anyOf" in node and not any(check(value, n) for n in node["anyOf"]):
        return False
    return "oneOf" not in node or sum(check(value, n) for n in node["oneOf"]) == 1


def _same(a: object, b: object) -> bool:
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def _is_type(value: object, expected: str | list) -> bool:
    names = [expected] if isinstance(expected, str) else expected
    for name in names:
        if name == "null" and value is None:
            return True
        if name == "boolean" and isinstance(value, bool):
            return True
        if name == "string" and isinstance(value, str):
            return True
        if name == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if name == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if name == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
    return False


def _in_range(value: float, node: dict) -> bool:
    if math.isnan(value):
        return False
    return not (
        ("minimum" in node and value < node["minimum"])
        or ("maximum" in node and value > node["maximum"])
        or ("exclusiveMinimum" in node and value <= node["exclusiveMinimum"])
        or ("exclusiveMaximum" in node and value >= node["exclusiveMaximum"])
    )


def parse(text: str, node: dict) -> object:
    """A flag's text as the value the schema's types read it as: the empty text is null where
    null is allowed, true/false a boolean, a whole number an integer, a decimal a number,
    anything else text. The value is then checked by check()."""
    allowed = types_of(node)
    if text == "" and "null" in allowed:
        return None
    if "boolean" in allowed and text in ("true", "false"):
        return text == "true"
    if "integer" in allowed and re.fullmatch(INTEGER, text):
        return int(text)
    if "number" in allowed and re.fullmatch(DECIMAL, text):
        return float(text)
    return text


def expected(node: dict) -> str:
    """What a setting accepts, in words, for a refusal."""
    resolved = resolve(node)
    allowed = types_of(node)
    if "enum" in resolved:  # as argparse words its choices
        words = "one of " + ", ".join(repr(v) for v in resolved["enum"] if v is not None)
    elif allowed & {"integer", "number"}:
        words = "a whole number" if "integer" in allowed else "a finite decimal number"
        bounds = [
            f"{sign} {_number(resolved[key])}"
            for key, sign in (
                ("minimum", ">="),
                ("exclusiveMinimum", ">"),
                ("maximum", "<="),
                ("exclusiveMaximum", "<"),
            )
            if key in resolved
        ]
        if bounds:
            words += " " + " and ".join(bounds)
    elif allowed == {"boolean"}:
        words = "true or false"
    else:  # a description written for the config file: its null is the flag's empty value
        words = (resolved.get("description") or "text").removesuffix(", or null")
    if "null" in allowed:
        words += " (or empty: none)"
    return words


def _number(value: float) -> str:
    """A bound as a person types it: 100000000, not 1e+08."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e16 else f"{value:g}"


def converter(dpath: str) -> Callable[[str], object]:
    """The `type=` of the flag that carries the setting at `dpath`: its text parsed and
    checked as the schema says, or argparse's one-line refusal."""

    def convert(text: str) -> object:
        import argparse

        from afbench.core.errors import printable

        setting = node(dpath)
        value = parse(text, setting)
        if not check(value, setting):
            raise argparse.ArgumentTypeError(
                f"expected {expected(setting)}, found {printable(repr(text), 200)}"
            )
        return value

    convert.__name__ = dpath  # argparse names a type by its function's name
    convert.dpath = dpath  # type: ignore[attr-defined]
    return convert


def __getattr__(name: str):
    if name == "SCHEMA_JSON":
        from pathlib import Path

        return Path(_SCHEMA_JSON)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":  # python -m afbench.core.settings: write the JSON copy of the schema
    with open(_SCHEMA_JSON, "w", encoding="utf-8") as out:
        out.write(schema_as_json())
