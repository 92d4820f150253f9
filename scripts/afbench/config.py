"""Configuration: load, validate against the packaged config.schema.yaml, fill defaults.

The Snakefile validates with `snakemake.utils.validate`; the CLI uses the same schema and the
same default-filling rule here (tests keep the two in agreement).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from pathlib import Path
from typing import NamedTuple

from .errors import AfbenchError

DATA = Path(__file__).resolve().parent / "data"
SCHEMA_PATH = DATA / "config.schema.yaml"
# The official release's pins and settings (config/config.yaml is a link to this file), used
# by the CLI when no --config is given.
OFFICIAL_CONFIG = DATA / "official.yaml"


class ReleaseFile(NamedTuple):
    """One upstream file the release is made of, with its pin (None when unknown)."""

    key: str  # "manifest", "sources", or a model slug
    kind: str  # "manifest" | "sources" | "results"
    path: str
    sha256: str | None


def _yaml_load(text: str):
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _load_yaml_or_json(path: Path) -> dict:
    import yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AfbenchError("config file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AfbenchError(f"cannot read config file: {exc}", file=str(path)) from None
    try:
        data = _yaml_load(text)
    except yaml.YAMLError as exc:
        raise AfbenchError(f"not valid YAML: {exc}", file=str(path)) from None
    if not isinstance(data, dict):
        raise AfbenchError("config must be a mapping", file=str(path), found=type(data).__name__)
    return data


def merge(base: dict, update: dict) -> dict:
    """Merge like Snakemake merges --configfile dictionaries: nested dicts merge, rest replaces."""
    out = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@functools.cache
def _schema_text() -> str:
    return SCHEMA_PATH.read_text(encoding="utf-8")


def _schema() -> dict:
    return _yaml_load(_schema_text())


def validate_config(data: dict, origin: str = "config") -> dict:
    """Validate and fill defaults (the jsonschema FAQ's rule, as snakemake.utils.validate does)."""
    from jsonschema import Draft202012Validator, validators

    schema = _schema()
    properties_rule = Draft202012Validator.VALIDATORS["properties"]

    def fill_defaults(validator, properties, instance, subschema):
        if validator.is_type(instance, "object"):
            for name, prop in properties.items():
                if "default" in prop:
                    instance.setdefault(name, copy.deepcopy(prop["default"]))
        yield from properties_rule(validator, properties, instance, subschema)

    filling = validators.extend(Draft202012Validator, {"properties": fill_defaults})
    config = copy.deepcopy(data)
    errors = sorted(filling(schema).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        problems = []
        from .errors import Problem

        for error in errors:
            where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
            problems.append(Problem(error.message, file=origin, field=where))
        raise AfbenchError(problems=problems)
    return config


def load_config(paths: list[Path], overrides: dict | None = None) -> dict:
    """Config files merged in order (later over earlier) and validated; none: the official."""
    paths = list(paths) or [OFFICIAL_CONFIG]
    data: dict = {}
    for path in paths:
        data = merge(data, _load_yaml_or_json(path))
    if overrides:
        data = merge(data, overrides)
    return validate_config(data, origin=", ".join(str(p) for p in paths))


def config_digest(config: dict) -> str:
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def release_files(config: dict) -> list[ReleaseFile]:
    """Every release file the config names (a Snakemake job's config may name only some)."""
    files = [
        ReleaseFile(key, key, spec["path"], spec["sha256"])
        for key, spec in config.get("files", {}).items()
    ]
    files += [
        ReleaseFile(slug, "results", spec["path"], spec["sha256"])
        for slug, spec in config.get("models", {}).items()
    ]
    return files


def pinned_files(config: dict) -> list[ReleaseFile]:
    return [f for f in release_files(config) if f.sha256]


def unpinned_models(config: dict) -> list[str]:
    return [slug for slug, spec in config.get("models", {}).items() if not spec["sha256"]]


def missing_pin_error(config: dict, slug: str) -> AfbenchError:
    spec = config["models"][slug]
    return AfbenchError(
        f"model '{slug}' has no SHA-256 pin, so its file cannot be verified and is not read. "
        f"Supply the pin as models.{slug}.sha256 in your config (64 hex digits; "
        f"`afbench discover --checkout DIR` reads it from an upstream checkout at the pinned "
        f"revision), or leave the model out",
        file=spec["path"],
        field="sha256",
        expected="64 hex digits",
        found=None,
    )


def selected_models(config: dict) -> list[str]:
    """The models to import: the configured list, or every pinned model when it is empty."""
    wanted = config["import"]["models"]
    if not wanted:
        return [slug for slug, spec in config["models"].items() if spec["sha256"]]
    problems = []
    for slug in wanted:
        if slug not in config["models"]:
            problems.append(
                AfbenchError(
                    f"unknown model '{slug}'",
                    field="import.models",
                    expected=f"one of {sorted(config['models'])}",
                )
            )
        elif not config["models"][slug]["sha256"]:
            problems.append(missing_pin_error(config, slug))
    if problems:
        raise AfbenchError(problems=[p for err in problems for p in err.problems])
    if len(set(wanted)) != len(wanted):
        raise AfbenchError("a model is listed twice", field="import.models", found=str(wanted))
    return list(wanted)


def file_for(config: dict, key: str) -> ReleaseFile:
    for spec in release_files(config):
        if spec.key == key:
            return spec
    raise AfbenchError(
        f"no release file named '{key}'",
        expected=f"one of {[f.key for f in release_files(config)]}",
    )
