"""Configuration: load, validate against the packaged config schema, fill defaults.

The Snakefile validates with `snakemake.utils.validate`; the CLI uses the same schema and the
same default-filling rule here (tests keep the two in agreement).
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections import namedtuple
from pathlib import Path

from afbench.core.errors import AfbenchError, Problem, printable, raise_if
from afbench.core.fsutil import canonical_digest, canonical_json, read_regular_file

# their home is settings (a job reads them at start-up, without this module); named here too
from afbench.core.settings import SCHEMA_JSON as SCHEMA_PATH
from afbench.core.settings import SOURCE_LOCATION, TRANSPORT_SETTINGS  # noqa: F401

DATA = Path(__file__).resolve().parents[1] / "data"
# The official release's pins and settings (config/config.yaml is a link to this file), used
# by the CLI when no --config is given.
OFFICIAL_CONFIG = DATA / "official.yaml"


class ReleaseFile(namedtuple("ReleaseFile", "key kind path sha256")):
    """One upstream file the release is made of, with its pin (None when unknown): key
    "manifest", "sources" or a model slug; kind "manifest" | "sources" | "results"; path; sha256
    (a collections namedtuple: typing's import costs a fetch job ~10 ms of CPU)."""

    __slots__ = ()

    @staticmethod
    def kind_of(key: str) -> str:
        return key if key in ("manifest", "sources") else "results"


# Bounds checked before a config is built, so no file can make the loader crash, hang or
# print megabytes: a config is a few kilobytes of a few levels.
MAX_CONFIG_BYTES = 1 << 20
MAX_YAML_DEPTH = 64
MAX_YAML_ALIASES = 1000
MAX_YAML_VALUES = 200_000  # scalars and collections, counted with every alias expanded


def _line(mark) -> str:
    return f"line {mark.line + 1}" if mark is not None else "an unknown line"


def _check_yaml_bounds(yaml, text: str, loader) -> None:
    """Walk the event stream (no recursion, nothing built) and refuse nesting deeper than
    MAX_YAML_DEPTH, more than MAX_YAML_ALIASES aliases, an alias to a collection still open
    (a recursive structure), or more than MAX_YAML_VALUES values once aliases are expanded
    (a "billion laughs" file)."""
    from yaml import events

    sizes: dict[str, int] = {}  # anchor -> values it stands for
    open_collections: list[tuple[str | None, int]] = []  # (anchor, values before it)
    total = aliases = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, events.AliasEvent):
            aliases += 1
            if aliases > MAX_YAML_ALIASES:
                raise ValueError(
                    f"more than {MAX_YAML_ALIASES} aliases ({_line(event.start_mark)})"
                )
            if event.anchor not in sizes:
                raise ValueError(
                    f"alias *{event.anchor[:80]} refers to an anchor that is not complete "
                    f"(a recursive or undefined alias, {_line(event.start_mark)})"
                )
            total += sizes[event.anchor]
        elif isinstance(event, events.ScalarEvent):
            total += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, events.CollectionStartEvent):
            if len(open_collections) >= MAX_YAML_DEPTH:
                raise ValueError(
                    f"nested more than {MAX_YAML_DEPTH} levels deep ({_line(event.start_mark)})"
                )
            open_collections.append((event.anchor, total))
            total += 1
        elif isinstance(event, events.CollectionEndEvent):
            anchor, before = open_collections.pop()
            if anchor is not None:
                sizes[anchor] = total - before
        if total > MAX_YAML_VALUES:
            raise ValueError(
                f"more than {MAX_YAML_VALUES} values once aliases are expanded "
                f"({_line(event.start_mark)}); a config is far smaller"
            )


@functools.cache
def _config_loader():
    """The safe loader, refusing duplicate keys and keys that are not text, and turning an
    impossible unquoted date into a YAML error with its line."""
    import yaml
    from yaml.constructor import ConstructorError

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    merge_tag = "tag:yaml.org,2002:merge"

    class ConfigLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: dict[str, object] = {}
                for key_node, _ in node.value:
                    if key_node.tag == merge_tag:
                        continue
                    key = self.construct_object(key_node, deep=True)
                    if not isinstance(key, str):
                        raise ConstructorError(
                            None,
                            None,
                            f"a key must be text, found {type(key).__name__} "
                            f"{printable(repr(key), 80)} (quote it)",
                            key_node.start_mark,
                        )
                    if key in seen:
                        raise ConstructorError(
                            None,
                            None,
                            f"duplicate key {printable(repr(key), 80)}, first at "
                            f"{_line(seen[key])} (a later value would silently win)",
                            key_node.start_mark,
                        )
                    seen[key] = key_node.start_mark
            return super().construct_mapping(node, deep=deep)

        def checked_timestamp(self, node):
            try:
                return self.construct_yaml_timestamp(node)
            except ValueError as exc:
                raise ConstructorError(
                    None, None, f"not a valid date or time ({exc})", node.start_mark
                ) from None

    ConfigLoader.add_constructor("tag:yaml.org,2002:timestamp", ConfigLoader.checked_timestamp)
    return ConfigLoader


def _parse_config_text(text: str, file: str) -> object:
    import yaml

    loader = _config_loader()
    try:
        _check_yaml_bounds(yaml, text, loader)
        return yaml.load(text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" ({_line(mark)}, column {mark.column + 1})" if mark is not None else ""
        context = f"{exc.context}: " if exc.context else ""
        raise AfbenchError(f"not valid YAML{where}: {context}{exc.problem}", file=file) from None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        message = str(exc) or type(exc).__name__
        raise AfbenchError(f"not valid YAML: {printable(message, 300)}", file=file) from None


def _load_yaml_or_json(path: Path) -> dict:
    # a config file may be a symbolic link (config/config.yaml is one): what it points to must
    # be a regular file, read like any other
    path = Path(path)
    target = path.resolve() if path.is_symlink() else path
    try:
        data = read_regular_file(target, "config file", MAX_CONFIG_BYTES)
    except AfbenchError as error:
        if target == path:
            raise
        raise AfbenchError(
            f"config file links to {target}: {error.problems[0].message}", file=str(path)
        ) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AfbenchError(f"config file is not UTF-8 (byte {exc.start})", file=str(path)) from None
    doc = _parse_config_text(text, str(path))
    if not isinstance(doc, dict):
        raise AfbenchError(
            "config must be a mapping",
            file=str(path),
            expected="a mapping of settings (key: value)",
            found=type(doc).__name__,
        )
    return doc


def default_columns(kind: str) -> dict[str, str]:
    """The schema's column mapping for one file kind (our field -> upstream column)."""
    fields = _schema()["properties"]["columns"]["properties"][kind]["properties"]
    return {name: spec["default"] for name, spec in fields.items()}


def check_config_files(paths: list[Path]) -> list[tuple[Path, dict]]:
    """Re-read config files through the strict loader (bounds, duplicate keys, dates): what
    Snakemake's own loading of --configfile lets through (the last of two keys wins there).
    Returns each file with what it holds."""
    return [(Path(path), _load_yaml_or_json(Path(path))) for path in paths]


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
    return json.loads(_schema_text())


_PLAIN_SCALARS = (str, int, float, bool, type(None))


def _check_plain(data: object, origin: str) -> None:
    """A config is plain JSON-like data: text keys; text, numbers, booleans, null, lists and
    mappings; bounded in depth and size (a dict built in Python, e.g. from JSON, can be anything
    the YAML loader refuses). Dates must be quoted strings."""
    stack: list[tuple[object, list, int]] = [(data, [], 0)]
    count = 0
    while stack:
        node, path, depth = stack.pop()
        count += 1
        where = "/".join(str(p) for p in path) or "(top level)"
        if count > MAX_YAML_VALUES or depth > MAX_YAML_DEPTH:
            raise AfbenchError(
                f"config is larger or deeper than any config (more than {MAX_YAML_VALUES} "
                f"values or {MAX_YAML_DEPTH} levels)",
                file=origin,
                field=where,
            )
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(key, str):
                    raise AfbenchError(
                        "a key must be text (quote it)",
                        file=origin,
                        field=where,
                        expected="a text key",
                        found=f"{type(key).__name__} {printable(repr(key), 80)}",
                    )
                stack.append((value, [*path, key], depth + 1))
        elif isinstance(node, list):
            stack.extend((value, [*path, i], depth + 1) for i, value in enumerate(node))
        elif not isinstance(node, _PLAIN_SCALARS):
            hint = (
                ' (write a date in quotes, e.g. "2026-10-13")' if hasattr(node, "isoformat") else ""
            )
            raise AfbenchError(
                f"not a plain value{hint}",
                file=origin,
                field=where,
                expected="text, a number, true/false, null, a list or a mapping",
                found=type(node).__name__,
            )


def _short(value: object, limit: int = 120) -> str:
    text = _reprlib_repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _reprlib_repr(value: object) -> str:
    import reprlib

    shortener = reprlib.Repr()
    shortener.maxstring = shortener.maxother = 100
    shortener.maxlevel = 2
    return shortener.repr(value)


def _describe(error, origin: str) -> Problem:
    """One short problem per schema error: the field, what is expected (the schema's own
    description where it has one), and the value found, clipped (never a whole subtree)."""
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    value, keyword, rule = error.instance, error.validator, error.validator_value
    found = _short(value)
    described = error.schema.get("description") if isinstance(error.schema, dict) else None
    if isinstance(value, float) and value != value:
        return Problem("NaN is not a number", file=origin, field=where, expected="a finite number")
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return Problem(
            "infinity is not allowed", file=origin, field=where, expected="a finite number"
        )
    if keyword == "type":
        wanted = rule if isinstance(rule, str) else " or ".join(rule)
        return Problem(
            "wrong type",
            file=origin,
            field=where,
            expected=wanted,
            found=f"{type(value).__name__} {found}",
        )
    if keyword in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        words = {
            "minimum": "at least",
            "maximum": "at most",
            "exclusiveMinimum": "more than",
            "exclusiveMaximum": "less than",
        }
        return Problem(
            "out of range",
            file=origin,
            field=where,
            expected=f"{words[keyword]} {rule}",
            found=found,
        )
    if keyword == "additionalProperties":
        return Problem(
            error.message if len(error.message) < 300 else "unknown keys", file=origin, field=where
        )
    if keyword in ("pattern", "not", "anyOf", "oneOf", "enum", "maxLength", "minLength") and (
        described or keyword == "enum"
    ):
        expected = described or f"one of {_short(rule, 300)}"
        return Problem("not allowed here", file=origin, field=where, expected=expected, found=found)
    return Problem(printable(error.message, 300), file=origin, field=where)


def validate_config(data: dict, origin: str = "config") -> dict:
    """Validate and fill defaults (the jsonschema FAQ's rule, as snakemake.utils.validate does).

    Beyond the schema: keys must be text, values plain (no unquoted dates or YAML-only types),
    and an integer setting must be an integer (3.0 is refused, as the code needs an int)."""
    _check_plain(data, origin)
    # the same settings are validated again and again in one process (each command of the
    # tests, a long-lived job runner): a config once valid is handed out again as a copy
    key = (origin, json.dumps(data, ensure_ascii=False, allow_nan=True))
    if (valid := _VALID.get(key)) is not None:
        return copy.deepcopy(valid)
    config = copy.deepcopy(data)
    errors = sorted(_validator().iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise AfbenchError(problems=[_describe(error, origin) for error in errors])
    check_settings(config, origin)
    if len(_VALID) >= 64:
        _VALID.pop(next(iter(_VALID)))
    _VALID[key] = copy.deepcopy(config)
    return config


# validated settings by (origin, their JSON text: keys in order, so the filled config is the
# same); only what passed is kept, a refusal is worked out afresh each time
_VALID: dict[tuple[str, str], dict] = {}


@functools.cache
def _validator():
    """The schema's validator, which fills defaults as it goes, built once a process: building
    it (jsonschema makes a validator class with attrs, which compiles its methods) and parsing
    the schema cost a third of each validation."""
    from jsonschema import Draft202012Validator, validators

    properties_rule = Draft202012Validator.VALIDATORS["properties"]

    def fill_defaults(validator, properties, instance, subschema):
        if validator.is_type(instance, "object"):
            for name, prop in properties.items():
                if "default" in prop:
                    instance.setdefault(name, copy.deepcopy(prop["default"]))
        yield from properties_rule(validator, properties, instance, subschema)

    strict_integers = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool)
    )
    filling = validators.extend(
        Draft202012Validator, {"properties": fill_defaults}, type_checker=strict_integers
    )
    return filling(_schema())


def check_settings(config: dict, origin: str = "config") -> None:
    """What the schema cannot say: the environment type is one Harbor 0.22.0 knows (its list
    lives in afbench.core.harbor alone), a stratified selection has no task list or limit, the
    planner's settings ask one question on one basis, and published facts name their source.
    The Snakefile calls this after its own validation."""
    from afbench.core.harbor import check_environment_type

    try:
        check_environment_type(config["plans"]["environment_type"], "plans/environment_type")
    except AfbenchError as error:
        raise AfbenchError(problems=[_at(p, origin) for p in error.problems]) from None
    for name, selection in config["selections"].items():
        if selection["stratified"] is not None and (selection["tasks"] or selection["limit"]):
            raise AfbenchError(
                "a stratified selection draws its own tasks: give it no task list or limit "
                "(sources narrow it)",
                file=origin,
                field=f"selections/{name}",
            )
    _check_power(config["power"], config["models"], origin)
    _check_derived_selection(config, origin)
    _check_comparisons(config, origin)
    if config["report"]["history"] and str(config["store"]["root"] or "").startswith("s3://"):
        raise AfbenchError(
            "the history across revisions reads the results store's files on this machine; an "
            "S3 store is not read by it yet (copy the store down and set store.root to it)",
            file=origin,
            field="report/history",
            expected="false with an S3 store.root",
            found=True,
        )
    facts = published_facts(config)
    if facts["source"] is None and (
        facts["task_rows"] or facts["passes"] or facts["over_budget_usd"]
    ):
        raise AfbenchError(
            "published facts need their source: say where the authors published them",
            file=origin,
            field="release/published/source",
            expected="e.g. the interface page's section that lists them",
        )


def _check_comparisons(config: dict, origin: str) -> None:
    """Comparisons across revisions (afbench.upgrade.crossrev) need the previous release, pair like
    with like, each once, and name a current result this config makes: a model it imports, a
    run it imports. The previous results come from the previous release's own tree."""
    upgrade = config["upgrade"]
    comparisons = upgrade["comparisons"]
    if not comparisons:
        return
    problems = []
    if upgrade["previous_revision"] is None:
        problems.append(
            Problem(
                "comparisons across revisions need the previous release",
                file=origin,
                field="upgrade/previous_revision",
                expected="the revision the comparisons' previous results belong to",
                found="null",
            )
        )
    imported = config["import"]["models"] or [
        slug for slug, spec in config["models"].items() if spec["sha256"]
    ]
    seen = set()
    for i, pair in enumerate(comparisons):
        where = f"upgrade/comparisons/{i}"
        previous, current = pair["previous"], pair["current"]
        if ("model" in previous) != ("model" in current):
            problems.append(
                Problem(
                    "an official import is compared only with an official import, a local run "
                    "only with a local run",
                    file=origin,
                    field=where,
                    expected="two models or two runs",
                    found=f"{previous} against {current}",
                )
            )
        if "model" in current and current["model"] not in imported:
            problems.append(
                Problem(
                    "the current side is a model this config does not import",
                    file=origin,
                    field=f"{where}/current/model",
                    expected=f"one of {sorted(imported)}",
                    found=current["model"],
                )
            )
        if "run" in current and current["run"] not in config["runs"]:
            problems.append(
                Problem(
                    "the current side is a run this config does not import",
                    file=origin,
                    field=f"{where}/current/run",
                    expected=f"one of {sorted(config['runs'])}",
                    found=current["run"],
                )
            )
        key = canonical_json(pair)
        if key in seen:
            problems.append(
                Problem(
                    "a comparison is listed twice (the Holm family would count it twice)",
                    file=origin,
                    field=where,
                    expected="each comparison once",
                    found=str(pair),
                )
            )
        seen.add(key)
    raise_if(problems)


def _check_derived_selection(config: dict, origin: str) -> None:
    """The task table's derived selection has a name of its own: a configured selection of
    that name would be two files at one path."""
    name = config["task_table"]["selection"]
    if name is not None and name in config["selections"]:
        raise AfbenchError(
            "the derived selection's name is also a configured selection: rename one",
            file=origin,
            field="task_table/selection",
            expected=f"a name other than {sorted(config['selections'])}",
            found=name,
        )


def _check_power(power: dict, models: dict, origin: str) -> None:
    """The planner's settings, once any is given: a difference or a number of tasks, and two
    known models or a baseline rate."""
    given = [power["difference"], power["tasks"], power["baseline_rate"], *power["models"]]
    if all(value is None for value in given):
        return
    problems = []
    if (power["difference"] is None) == (power["tasks"] is None):
        problems.append(
            Problem(
                "give the planner a difference to detect or a number of tasks, not both",
                file=origin,
                field="power",
                expected="exactly one of power.difference and power.tasks",
            )
        )
    if bool(power["models"]) == (power["baseline_rate"] is not None):
        problems.append(
            Problem(
                "give the planner two models or a baseline rate, not both",
                file=origin,
                field="power",
                expected="exactly one of power.models and power.baseline_rate",
            )
        )
    if power["models"] and (len(power["models"]) != 2 or len(set(power["models"])) != 2):
        problems.append(
            Problem(
                "power.models names two different models",
                file=origin,
                field="power/models",
                expected="two different model slugs",
                found=str(power["models"]),
            )
        )
    problems += [
        Problem(
            "unknown model",
            file=origin,
            field="power/models",
            expected=f"one of {sorted(models)}",
            found=m,
        )
        for m in power["models"]
        if m not in models
    ]
    if problems:
        raise AfbenchError(problems=problems)


def _at(problem: Problem, origin: str) -> Problem:
    problem.file = problem.file or origin
    return problem


def artifact_settings(config: dict) -> dict:
    """The config without its transport settings: what the artifacts depend on."""
    return {
        **config,
        "source": {k: v for k, v in config["source"].items() if k not in TRANSPORT_SETTINGS},
    }


def load_config(paths: list[Path], overrides: dict | None = None) -> dict:
    """Config files merged in order (later over earlier) and validated; none: the official.
    Relative input paths are resolved against the folder of the file that sets them."""
    paths = list(paths) or [OFFICIAL_CONFIG]
    data: dict = {}
    docs = check_config_files(paths)
    for _, doc in docs:
        data = merge(data, doc)
    if overrides:
        data = merge(data, overrides)
    config = validate_config(data, origin=", ".join(str(p) for p in paths))
    return resolve_input_paths(config, docs)


# Settings that name something afbench reads (a checkout, a mirror, the demo's files, job
# folders): a relative one is relative to the folder of the config file that sets it, so a
# config works from any working directory. What afbench writes (results_dir, plans.jobs_dir)
# stays relative to the working directory, as Snakemake's outputs are. plans.harbor counts as a
# path only when it names one (a bare `harbor` is looked up on PATH), and is made absolute: a
# plan runs it from the checkout, not from the working directory.
INPUT_PATHS = (
    ("source", "checkout"),
    ("source", "mirror"),
    ("demo", "release_files"),
    ("demo", "upgrade_files"),
    ("discover", "checkout"),
    ("plans", "repository_dir"),
    ("plans", "harbor"),
    ("runs", "*", "paths"),
)


def _set_in(doc: object, keys: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The concrete key paths of `keys` (with * for any name) that `doc` sets."""
    if not keys:
        return [()]
    if not isinstance(doc, dict):
        return []
    names = list(doc) if keys[0] == "*" else [keys[0]] if keys[0] in doc else []
    return [(name, *rest) for name in names for rest in _set_in(doc[name], keys[1:])]


def _resolved(value: str, folder: Path, cwd: Path, absolute: bool = False) -> str:
    if os.path.isabs(value):
        return value
    full = os.path.normpath(os.path.join(folder, value))
    inside = os.path.relpath(full, cwd)
    return inside if not absolute and inside != ".." and not inside.startswith("../") else full


def resolve_input_paths(
    config: dict, docs: list[tuple[Path, dict]], cwd: Path | None = None
) -> dict:
    """`config` with each relative input path (INPUT_PATHS) resolved against the folder of the
    last config file in `docs` that sets it; a path inside the working directory `cwd` is
    written relative to it (what Snakemake's rules expect), any other absolute."""
    cwd = Path(cwd or os.getcwd()).absolute()
    origin: dict[tuple[str, ...], Path] = {}
    for path, doc in docs:
        for keys in INPUT_PATHS:
            for found in _set_in(doc, keys):
                origin[found] = Path(path).absolute().parent
    if not origin:
        return config
    config = copy.deepcopy(config)
    for keys, folder in origin.items():
        *parents, last = keys
        holder = config
        for key in parents:
            holder = holder[key]
        value = holder.get(last)
        if keys == ("plans", "harbor") and isinstance(value, str) and "/" not in value:
            continue  # a command name, looked up on PATH
        if isinstance(value, str):
            holder[last] = _resolved(value, folder, cwd, absolute=keys == ("plans", "harbor"))
        elif isinstance(value, list):
            holder[last] = [_resolved(v, folder, cwd) for v in value]
    return config


def config_digest(config: dict) -> str:
    """The digest the artifact manifest records: every setting an artifact depends on."""
    return canonical_digest(artifact_settings(config))


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
        raise AfbenchError(
            "a model is listed twice",
            field="import.models",
            expected="each model once",
            found=str(wanted),
        )
    return list(wanted)


def published_facts(config: dict) -> dict:
    """What the authors published about the release's results, as the comparison checks it
    (afbench.imports.compare.check_published): the source, the task rows, and per model slug the
    pass count and the costs above the budget, where config records them."""
    models = config["models"]
    return {
        "source": config["release"]["published"]["source"],
        "task_rows": config["release"]["published"]["task_rows"],
        "passes": {
            slug: spec["published_passes"]
            for slug, spec in models.items()
            if spec["published_passes"] is not None
        },
        "over_budget_usd": {
            slug: spec["published_over_budget_usd"]
            for slug, spec in models.items()
            if spec["published_over_budget_usd"] is not None
        },
    }


def file_for(config: dict, key: str) -> ReleaseFile:
    for spec in release_files(config):
        if spec.key == key:
            return spec
    raise AfbenchError(
        "no release file of this name in config (files, models)",
        field="key",
        expected=f"one of {[f.key for f in release_files(config)]}",
        found=key,
    )
