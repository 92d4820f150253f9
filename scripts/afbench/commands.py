"""The CLI's commands: resolve settings (flags first, then config), read the given files, call
the stage functions, write the given files. No command writes anywhere else."""

from __future__ import annotations

import json
import math
import re
from argparse import Namespace
from pathlib import Path

from .errors import AfbenchError, raise_if
from .fsutil import (
    atomic_write_bytes,
    check_name,
    json_bytes,
    path_text,
    read_regular_file,
    write_csv,
    write_json,
)
from .records import (
    CATALOG,
    MODEL_IMPORT,
    OFFICIAL_REFERENCE,
    PLAN,
    RECEIPT,
    RUN_SUMMARY,
    SELECTION,
    TRIAL_RECEIPT,
    VERDICT,
    VERIFIED_FILE,
    read_record,
    record,
)

TYPE_CHECKING = False  # (typing itself costs a job's start-up more than it needs)
if TYPE_CHECKING:
    from .config import ReleaseFile

SHA256 = re.compile(r"[0-9a-f]{64}")
DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
REVISION = re.compile(r"[0-9a-f]{40}")
PIN = re.compile(r"(?P<key>[^=]+)=(?P<path>[^@]+)@(?P<sha>[0-9a-f]{64})")
SKIP = re.compile(r"(?P<key>[^=]+)=(?P<path>[^@=]+)")

MAX_VERDICT_BYTES = 16 << 20  # a verdict is a few kilobytes; /dev/zero is refused before this


class Settings:
    """A flag's value if it was given, else the config's (loaded only when needed)."""

    def __init__(self, args: Namespace) -> None:
        self.paths = [Path(p) for p in getattr(args, "config", []) or []]
        self._config: dict | None = None

    @property
    def config(self) -> dict:
        if self._config is None:
            from .config import load_config

            self._config = load_config(self.paths)
        return self._config

    def get(self, flag: object, *keys: str) -> object:
        if flag is not None:
            return flag
        value: object = self.config
        for key in keys:
            value = value[key]  # type: ignore[index]
        return value


# --- values from flags: each checked as strictly as the config schema checks it -------------
def number(text: object, field: str, *, minimum: float = 0, exclusive: bool = False) -> float:
    if isinstance(text, bool) or (isinstance(text, str) and not DECIMAL.fullmatch(text)):
        raise AfbenchError("not a number", field=field, found=str(text))
    try:
        value = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise AfbenchError("not a number", field=field, found=str(text)) from None
    if not math.isfinite(value) or value < minimum or (exclusive and value == minimum):
        bound = f"> {minimum:g}" if exclusive else f">= {minimum:g}"
        raise AfbenchError(
            "not a finite number in range", field=field, expected=bound, found=str(text)
        )
    return value


def whole(text: object, field: str, *, minimum: int = 0) -> int:
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    elif isinstance(text, str) and re.fullmatch(r"[0-9]{1,12}", text):
        value = int(text)
    else:
        raise AfbenchError("not a whole number", field=field, found=str(text))
    if value < minimum:
        raise AfbenchError(
            "number out of range", field=field, expected=f">= {minimum}", found=str(text)
        )
    return value


def matching(pattern: re.Pattern, text: object, field: str, expected: str) -> str:
    if not isinstance(text, str) or not pattern.fullmatch(text):
        raise AfbenchError(
            f"not {expected}",
            field=field,
            expected=expected,
            found=text if isinstance(text, str) else repr(text),
        )
    return text


def pairs(items: list[str] | None, field: str) -> dict[str, str]:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise AfbenchError("expected NAME=VALUE", field=field, found=item)
        if key in out:
            raise AfbenchError("given twice", field=field, found=key)
        out[key] = value
    return out


def _kind_of(key: str) -> str:
    return key if key in ("manifest", "sources") else "results"


def pins_from(args: Namespace, settings: Settings) -> tuple[list[ReleaseFile], list[ReleaseFile]]:
    """(pinned files, unpinned files): from --pin/--skip, else from config."""
    from .config import ReleaseFile

    if args.pin is None:
        from .config import pinned_files, release_files

        cfg = settings.config
        return pinned_files(cfg), [f for f in release_files(cfg) if not f.sha256]
    pinned = []
    for text in args.pin:
        m = PIN.fullmatch(text)
        if not m:
            raise AfbenchError("not a pin", field="--pin", expected="KEY=PATH@SHA256", found=text)
        pinned.append(
            ReleaseFile(check_name(m["key"], "--pin key"), _kind_of(m["key"]), m["path"], m["sha"])
        )
    return pinned, skips_from(args.skip)


def skips_from(texts: list[str] | None) -> list[ReleaseFile]:
    """The files config names without a pin, from --skip KEY=PATH flags."""
    from .config import ReleaseFile

    skipped = []
    for text in texts or []:
        m = SKIP.fullmatch(text)
        if not m:
            raise AfbenchError("not a file", field="--skip", expected="KEY=PATH", found=text)
        skipped.append(ReleaseFile(m["key"], "results", m["path"], None))
    return skipped


def source_from(args: Namespace, settings: Settings) -> tuple[dict, str, str]:
    """(source settings, repository, revision)."""
    get = settings.get
    kind = get(args.source_kind, "source", "kind")
    if args.source_location is not None:
        location = args.source_location
    else:
        key = {"https": "base_url", "git": "checkout", "dir": "mirror"}[kind]
        location = settings.config["source"][key]
    source = {
        "kind": kind,
        "base_url": location if kind == "https" else None,
        "checkout": location if kind == "git" else None,
        "mirror": location if kind == "dir" else None,
        "connect_timeout_s": number(
            get(args.connect_timeout_s, "source", "connect_timeout_s"),
            "connect_timeout_s",
            exclusive=True,
        ),
        "read_timeout_s": number(
            get(args.read_timeout_s, "source", "read_timeout_s"), "read_timeout_s", exclusive=True
        ),
        "total_timeout_s": number(
            get(args.total_timeout_s, "source", "total_timeout_s"),
            "total_timeout_s",
            exclusive=True,
        ),
        "retries": whole(get(args.retries, "source", "retries"), "retries"),
        "backoff_factor": number(
            get(args.backoff_factor, "source", "backoff_factor"), "backoff_factor"
        ),
        "max_bytes": whole(get(args.max_bytes, "source", "max_bytes"), "max_bytes", minimum=1),
    }
    repository = get(args.repository, "release", "repository")
    revision = matching(
        REVISION, get(args.revision, "release", "revision"), "revision", "a 40-hex commit"
    )
    return source, repository, revision


def release_from(args: Namespace, settings: Settings, repository: str, revision: str) -> dict:
    """The release identity: from its flags where the command has them, else from config."""

    def get(name: str, key: str) -> object:
        return settings.get(getattr(args, name, None), "release", key)

    images = None
    if getattr(args, "image", None) is not None:
        images = []
        for text in args.image:
            role, sep, rest = text.partition("=")
            reference, _, digest = rest.partition("@")
            if not sep or not role:
                raise AfbenchError(
                    "not an image", field="--image", expected="ROLE=REFERENCE@DIGEST", found=text
                )
            images.append({"role": role, "reference": reference or None, "digest": digest or None})
    synthetic = getattr(args, "synthetic", None)
    return {
        "name": get("release_name", "name"),
        "repository": repository,
        "revision": revision,
        "synthetic": (synthetic == "true")
        if synthetic is not None
        else settings.config["release"]["synthetic"],
        "lean": get("lean", "lean"),
        "mathlib": get("mathlib", "mathlib"),
        "harbor": get("harbor_version", "harbor"),
        "nominal_budget_usd": number(
            get("nominal_budget_usd", "nominal_budget_usd"),
            "nominal_budget_usd",
            exclusive=True,
        ),
        "images": images if images is not None else settings.config["release"]["images"],
    }


def _receipt_in(release_dir: Path) -> tuple[dict, str]:
    path = Path(release_dir) / "receipt.json"
    return read_record(path, RECEIPT), str(path)


def _check_receipt_pins(
    receipt: dict, receipt_path: str, settings: Settings, keys: list[str]
) -> None:
    """A release folder used with a config: its receipt must hold that config's pins."""
    from .config import file_for

    cfg = settings.config
    if receipt["release"]["revision"] != cfg["release"]["revision"]:
        raise AfbenchError(
            "the release folder holds another revision than the config pins; "
            "pass the --config it was fetched with, or fetch again",
            file=receipt_path,
            field="release.revision",
            expected=cfg["release"]["revision"],
            found=receipt["release"]["revision"],
        )
    entries = {e["key"]: e for e in receipt["files"]}
    for key in keys:
        spec = file_for(cfg, key)
        found = entries.get(key, {}).get("actual_sha256")
        if found != spec.sha256:
            raise AfbenchError(
                f"the receipt's '{key}' is not the file config pins; fetch it again",
                file=receipt_path,
                field=f"files.{key}",
                expected=spec.sha256,
                found=found,
            )


# --- fetch and verify -----------------------------------------------------------------------
def cmd_fetch(args: Namespace) -> list[str]:
    from .config import ReleaseFile
    from .fetch import GitSource, fetch_file, fetch_release, make_source

    settings = Settings(args)
    source, repository, revision = source_from(args, settings)
    if args.file is not None:
        if args.release_dir or args.all_models or args.model:
            raise AfbenchError(
                "--file fetches one file: give it with --sha256 and --output only", field="--file"
            )
        if not args.output:
            raise AfbenchError("--file needs --output", field="--output")
        sha = matching(SHA256, args.sha256, "--sha256", "64 lowercase hex digits")
        spec = ReleaseFile("file", "file", args.file, sha)
        reader = make_source(source, repository, revision)
        try:
            fetch_file(reader, spec, Path(args.output))
        finally:
            if isinstance(reader, GitSource):
                reader.close()
        return []
    if not args.release_dir:
        raise AfbenchError(
            "give --release-dir DIR (or --file PATH --sha256 HEX --output F)", field="--release-dir"
        )
    from .config import missing_pin_error, release_files

    cfg = settings.config
    known = {f.key: f for f in release_files(cfg)}
    wanted = ["manifest", "sources"]
    warnings = []
    if args.all_models:
        wanted += [k for k, f in known.items() if f.kind == "results" and f.sha256]
        warnings = [
            f"model '{k}' has no SHA-256 pin in config: skipped (supply "
            f"models.{k}.sha256 to fetch it)"
            for k, f in known.items()
            if f.kind == "results" and not f.sha256
        ]
    for slug in args.model or []:
        if slug not in known or known[slug].kind != "results":
            raise AfbenchError(
                f"unknown model '{slug}'",
                field="--model",
                expected=f"one of {sorted(cfg['models'])}",
            )
        if not known[slug].sha256:
            raise missing_pin_error(cfg, slug)
        wanted.append(slug)
    pins = [known[k] for k in dict.fromkeys(wanted)]
    skipped = [f for f in known.values() if not f.sha256]
    release = release_from(args, settings, repository, revision)
    release_dir = Path(args.release_dir)
    receipt = fetch_release(release, source, pins, skipped, release_dir)
    write_json(release_dir / "receipt.json", receipt)
    return warnings


def cmd_verify(args: Namespace) -> None:
    """Three forms: one file (--file, with its single --pin) gives its verified-file record;
    verified-file records (--entry) combine into the release's receipt; a whole release folder
    (--release-dir) is re-verified into its receipt."""
    from .fetch import build_receipt, combine_receipt, verify_file

    settings = Settings(args)
    forms = [bool(args.file), bool(args.entry), bool(args.release_dir)]
    if sum(forms) != 1:
        raise AfbenchError(
            "give exactly one of --file, --entry or --release-dir", field="--release-dir"
        )
    if args.entry:
        # files config names without a pin come only from --skip here
        records = [read_record(path, VERIFIED_FILE) for path in args.entry]
        skipped = skips_from(args.skip)
        write_json(Path(_need(args.output, "--output")), combine_receipt(records, skipped))
        return
    source, repository, revision = source_from(args, settings)
    pins, skipped = pins_from(args, settings)
    release = release_from(args, settings, repository, revision)
    if args.file:
        if len(pins) != 1:
            raise AfbenchError(
                "--file is verified against exactly one --pin", field="--pin", found=len(pins)
            )
        result = verify_file(release, source, pins[0], Path(args.file))
        write_json(Path(_need(args.output, "--output")), result)
        return
    release_dir = Path(args.release_dir)
    paths = {spec.key: release_dir / spec.path for spec in pins}
    receipt = build_receipt(release, source, pins, paths, skipped)
    write_json(Path(args.output) if args.output else release_dir / "receipt.json", receipt)


def _need(value: str | None, flag: str) -> str:
    if not value:
        raise AfbenchError(f"{flag} is required here", field=flag)
    return value


def _verified(paths: list[str]) -> tuple[dict, dict]:
    from .release import collect_verified

    return collect_verified([(p, read_record(p, RECEIPT, VERIFIED_FILE)) for p in paths])


# --- tasks and plans ------------------------------------------------------------------------
def _columns(
    flags: list[str] | None, settings: Settings, kind: str, flag: str | None = None
) -> dict[str, str]:
    """The column mapping: the config's, with FIELD=COLUMN flags over it (a flag may name only
    some fields; an unknown field is refused)."""
    if flags is None:
        return settings.config["columns"][kind]
    from .config import default_columns

    flag = flag or f"--{kind}-column"
    given = pairs(flags, flag)
    base = settings.config["columns"][kind] if settings.paths else default_columns(kind)
    unknown = sorted(set(given) - set(base))
    if unknown:
        raise AfbenchError(
            "not a field of this file",
            field=flag,
            found=unknown[0],
            expected=f"one of {sorted(base)}",
        )
    return {**base, **given}


def _expected_counts(args: Namespace, settings: Settings) -> dict[str, int]:
    if args.expected_counts is None:
        return settings.config["release"]["expected_counts"]
    parts = args.expected_counts.split(",")
    if len(parts) != 3:
        raise AfbenchError(
            "expected three counts",
            field="--expected-counts",
            expected="TASKS,SOURCES,OBLIGATIONS",
            found=args.expected_counts,
        )
    return {
        k: whole(v, "--expected-counts", minimum=1)
        for k, v in zip(("tasks", "sources", "obligations"), parts, strict=True)
    }


def _release_folder(args: Namespace, settings: Settings) -> tuple[dict, str, dict, dict]:
    """--release-dir's receipt (read once; its MANIFEST and SOURCES must be config's pins),
    its path, its verified entries by key and its release."""
    from .release import collect_verified

    receipt, receipt_path = _receipt_in(Path(args.release_dir))
    _check_receipt_pins(receipt, receipt_path, settings, ["manifest", "sources"])
    entries, release = collect_verified([(receipt_path, receipt)])
    return receipt, receipt_path, entries, release


def _catalog_from_release(args: Namespace, settings: Settings, folder: tuple | None = None) -> dict:
    """The catalog from --release-dir (or its `folder`, already read) or from explicit files."""
    from .catalog import build_catalog
    from .release import license_of, read_entry

    if args.release_dir:
        _, _, entries, release = folder or _release_folder(args, settings)
        manifest = Path(args.release_dir) / entries["manifest"][0]["path"]
        sources = Path(args.release_dir) / entries["sources"][0]["path"]
    else:
        if not (args.manifest and args.sources and args.receipt):
            raise AfbenchError(
                "give --release-dir DIR, or --manifest, --sources and --receipt",
                field="--release-dir",
            )
        entries, release = _verified(args.receipt)
        manifest, sources = Path(args.manifest), Path(args.sources)
    columns = {
        "manifest": _columns(args.manifest_column, settings, "manifest"),
        "sources": _columns(args.sources_column, settings, "sources"),
    }
    return build_catalog(
        read_entry(entries, "manifest", manifest),
        read_entry(entries, "sources", sources),
        columns,
        _expected_counts(args, settings),
        release,
        license_of(release),
    )


def _selection_wanted(args: Namespace) -> bool:
    return bool(args.book or args.task or args.limit is not None or args.name)


def _select(args: Namespace, catalog: dict) -> dict:
    from .catalog import select_tasks

    limit = None if args.limit is None else whole(args.limit, "--limit", minimum=1)
    name = args.name if args.name is not None else Path(args.output).stem
    return select_tasks(catalog, check_name(name, "selection name"), args.task, args.book, limit)


def cmd_tasks(args: Namespace) -> None:
    settings = Settings(args)
    if args.catalog:
        if args.release_dir or args.manifest:
            raise AfbenchError(
                "--catalog selects from a catalog: give no release files too", field="--catalog"
            )
        write_json(Path(args.output), _select(args, read_record(args.catalog, CATALOG)))
        return
    catalog = _catalog_from_release(args, settings)
    write_json(Path(args.output), _select(args, catalog) if _selection_wanted(args) else catalog)


def cmd_plan(args: Namespace) -> None:
    from .plan import build_plan

    settings = Settings(args)
    if args.catalog or args.selection:
        if not (args.catalog and args.selection):
            raise AfbenchError("--catalog and --selection go together", field="--selection")
        catalog = read_record(args.catalog, CATALOG)
        selection = read_record(args.selection, SELECTION)
    else:
        args.manifest = args.sources = args.receipt = None
        catalog = _catalog_from_release(args, settings)
        if not _selection_wanted(args):
            raise AfbenchError(
                "say which tasks to plan: --task ID (or --book, --limit)", field="--task"
            )
        selection = _select(args, catalog)
    get = settings.get
    repository = get(args.repository_dir, "plans", "repository_dir")
    plan = build_plan(
        catalog,
        selection,
        args.agent,
        args.model,
        repository,
        get(args.tasks_dir, "plans", "tasks_dir"),
        get(args.jobs_dir, "plans", "jobs_dir"),
        get(args.environment_type, "plans", "environment_type"),
        get(args.harbor, "plans", "harbor"),
    )
    write_json(Path(args.output), plan)


# --- official results -----------------------------------------------------------------------
def _budget(text: object) -> float:
    return number(text, "budget_usd", exclusive=True)


def cmd_import_model(args: Namespace) -> None:
    from .official import ModelSpec, import_model
    from .release import read_entry

    settings = Settings(args)
    get = settings.get
    slug = check_name(args.model, "model")

    def model_setting(flag: object, key: str) -> object:
        if flag is not None:
            return flag
        models = settings.config["models"]
        if slug not in models:
            raise AfbenchError(
                f"unknown model '{slug}'", field="--model", expected=f"one of {sorted(models)}"
            )
        return models[slug][key]

    model = ModelSpec(
        slug,
        model_setting(args.display_name, "display_name"),
        model_setting(args.pinned_condition, "source_condition"),
    )
    entries, _ = _verified(args.receipt)
    record_ = import_model(
        read_record(args.catalog, CATALOG),
        read_entry(entries, slug, Path(args.results)),
        model,
        _columns(args.column, settings, "results", "--column"),
        get(args.source_condition, "import", "source_condition"),
        _budget(get(args.budget_usd, "import", "budget_usd")),
    )
    write_json(Path(args.output), record_)


def _totals(imp: dict) -> dict:
    """A model import without its per-task records: all the comparison needs."""
    return {k: v for k, v in imp.items() if k != "records"}


def cmd_compare(args: Namespace) -> None:
    from .official import LEADERBOARD_COLUMNS, summarize

    imports = []
    for path in args.imports:
        imp = _totals(read_record(path, MODEL_IMPORT))
        imports.append((path, imp))
    if args.receipt:
        from .release import stale_imports

        entries, _ = _verified(args.receipt)
        pins = {entry["path"]: entry["actual_sha256"] for entry, _ in entries.values()}
        raise_if(stale_imports(imports, pins))
    summary = summarize([imp for _, imp in imports], args.strict_budget)
    leaderboard = [[row[c] for c in LEADERBOARD_COLUMNS] for row in summary["leaderboard"]]
    write_csv(Path(args.leaderboard), LEADERBOARD_COLUMNS, leaderboard)
    write_json(Path(args.summary), summary)


def cmd_import_results(args: Namespace) -> None:
    from .config import missing_pin_error
    from .official import ModelSpec, import_model, summarize
    from .release import read_entry

    settings = Settings(args)
    cfg = settings.config
    args.manifest = args.sources = args.receipt = args.expected_counts = None
    args.manifest_column = args.sources_column = None
    folder = _release_folder(args, settings)
    receipt, receipt_path, entries, _ = folder
    catalog = _catalog_from_release(args, settings, folder)
    if args.all_models:
        slugs = [s for s, spec in cfg["models"].items() if spec["sha256"]]
    else:
        slugs = []
        for slug in args.model:
            if slug not in cfg["models"]:
                raise AfbenchError(
                    f"unknown model '{slug}'",
                    field="--model",
                    expected=f"one of {sorted(cfg['models'])}",
                )
            if not cfg["models"][slug]["sha256"]:
                raise missing_pin_error(cfg, slug)
            if slug in slugs:
                raise AfbenchError("a model is listed twice", field="--model", found=slug)
            slugs.append(slug)
    _check_receipt_pins(receipt, receipt_path, settings, slugs)
    condition = settings.get(args.source_condition, "import", "source_condition")
    budget = _budget(settings.get(args.budget_usd, "import", "budget_usd"))
    imports = []
    for slug in slugs:
        spec = cfg["models"][slug]
        model = ModelSpec(slug, spec["display_name"], spec["source_condition"])
        path = Path(args.release_dir) / entries[slug][0]["path"]
        imports.append(
            import_model(
                catalog,
                read_entry(entries, slug, path),
                model,
                cfg["columns"]["results"],
                condition,
                budget,
            )
        )
    summary = summarize([_totals(i) for i in imports], args.strict_budget)
    write_json(Path(args.output), record(OFFICIAL_REFERENCE, summary=summary, models=imports))


# --- local runs -----------------------------------------------------------------------------
def cmd_verdict(args: Namespace) -> None:
    from .fsutil import sha256_bytes
    from .runs import parse_verdict

    check_name(args.task, "task id")
    path = Path(args.path)
    data = read_regular_file(path, "verdict file", MAX_VERDICT_BYTES)
    verdict = parse_verdict(data, str(path), args.task)
    result = {
        **record(VERDICT),
        **verdict,
        "input": {"path": path_text(path.resolve()), "sha256": sha256_bytes(data)},
    }
    if args.output:
        write_json(Path(args.output), result)
    else:
        print(json.dumps(result, indent=2, ensure_ascii=False))


def _outputs(args: Namespace, names: dict[str, str]) -> dict[str, Path]:
    """Explicit output files, or the documented names inside --output-dir."""
    given = {key: getattr(args, key) for key in names}
    if args.output_dir:
        if any(given.values()):
            raise AfbenchError(
                "give --output-dir or the output files, not both", field="--output-dir"
            )
        return {key: Path(args.output_dir) / name for key, name in names.items()}
    missing = [f"--{k}" for k, v in given.items() if not v]
    if missing:
        raise AfbenchError(f"missing {', '.join(missing)} (or give --output-dir)", field=missing[0])
    return {key: Path(value) for key, value in given.items()}


def cmd_import_run(args: Namespace) -> None:
    from .runs import (
        ATTEMPT_COLUMNS,
        OUTCOME_COLUMNS,
        read_harbor_job,
        read_verdict_dir,
        summarize_run,
    )

    out = _outputs(
        args, {"summary": "summary.json", "outcomes": "outcomes.csv", "attempts": "attempts.csv"}
    )
    name = check_name(args.name, "run name")
    selection = read_record(args.selection, SELECTION)
    budget = _budget(
        args.budget_usd
        if args.budget_usd is not None
        else selection["release"]["nominal_budget_usd"]
    )
    reader = read_harbor_job if args.kind == "harbor" else read_verdict_dir
    folders = [*args.path]
    for receipt in args.executed:
        if args.kind != "harbor":
            raise AfbenchError("--executed names Harbor jobs: use --kind harbor", field="--kind")
        folders.append(read_record(receipt, TRIAL_RECEIPT)["job_dir"])
    if not folders:
        raise AfbenchError("nothing to import: give --path or --executed", field="--path")
    attempts = [a for folder in folders for a in reader(Path(folder))]
    summary, rows = summarize_run(
        name, args.kind, selection, attempts, budget, selection["release"]
    )
    write_csv(out["attempts"], ATTEMPT_COLUMNS, ([a[c] for c in ATTEMPT_COLUMNS] for a in attempts))
    write_csv(out["outcomes"], OUTCOME_COLUMNS, ([r[c] for c in OUTCOME_COLUMNS] for r in rows))
    atomic_write_bytes(out["summary"], json_bytes({**record(RUN_SUMMARY), **summary}))


def cmd_execute(args: Namespace) -> None:
    from .execute import check_allowed, run_steps, trial_receipt, trial_steps
    from .fsutil import sha256_file
    from .runs import read_harbor_job

    plan = read_record(args.plan, PLAN)
    check_allowed(plan, args.allow_model_agent)
    attempt = whole(args.attempt, "--attempt", minimum=1)
    steps = trial_steps(plan, check_name(args.task, "task id"), attempt)
    run_steps(steps, pairs(args.env, "--env"))
    attempts = read_harbor_job(Path(steps["job_dir"]))
    receipt = trial_receipt(plan, sha256_file(Path(args.plan)), args.task, attempt, steps, attempts)
    write_json(Path(args.output), receipt)


# --- report and the artifact manifest -------------------------------------------------------
def cmd_report(args: Namespace) -> None:
    from .analysis import analyse, check_current, compactor
    from .figures import make_figures
    from .records import SUMMARY, tool_versions
    from .report import render

    confidence = number(args.confidence, "confidence", exclusive=True)
    if confidence >= 1:
        raise AfbenchError("confidence must be below 1", field="confidence", found=args.confidence)
    summary = read_record(args.summary, SUMMARY)
    catalog = read_record(args.catalog, CATALOG)
    receipt = read_record(args.receipt, RECEIPT)
    compact = compactor(catalog)
    imports = []
    for path in args.imports:
        imports.append((path, compact(read_record(path, MODEL_IMPORT))))
    check_current((args.summary, summary), imports, catalog, receipt)
    runs = [read_record(path, RUN_SUMMARY) for path in args.run]
    analysis = analyse(summary, [imp for _, imp in imports], catalog, runs, confidence)
    used = {imp["file"] for _, imp in imports} | set(catalog["inputs"])
    provenance = {
        "files": [f for f in receipt["files"] if f["path"] in used],
        "config_digest": args.settings_digest or "not given",
        "versions": tool_versions(),
    }
    figures = make_figures(analysis)
    if args.output_dir:
        if args.html or args.analysis or args.figure:
            raise AfbenchError(
                "give --output-dir or the output files, not both", field="--output-dir"
            )
        root = Path(args.output_dir)
        html, analysis_path = root / "index.html", root / "analysis.json"
        figure_paths = {name: root / "figures" / f"{name}.svg" for name in figures}
    else:
        if not (args.html and args.analysis):
            raise AfbenchError("give --html and --analysis (or --output-dir)", field="--html")
        html, analysis_path = Path(args.html), Path(args.analysis)
        figure_paths = {Path(f).stem: Path(f) for f in args.figure or []}
        if set(figure_paths) != set(figures):
            raise AfbenchError(
                "the figures asked for are not the figures this report has",
                field="--figure",
                expected=sorted(figures),
                found=sorted(figure_paths),
            )
    for name, svg in figures.items():
        atomic_write_bytes(figure_paths[name], svg.encode())
    write_json(analysis_path, {**analysis, "provenance": provenance})
    atomic_write_bytes(html, render(analysis, provenance, figures).encode())


def cmd_artifacts(args: Namespace) -> None:
    from .artifacts import build_manifest

    revision = matching(REVISION, args.revision, "--revision", "a 40-hex commit")
    digest = matching(SHA256, args.config_digest, "--config-digest", "64 lowercase hex digits")
    manifest = build_manifest(Path(args.root), [Path(f) for f in args.files], digest, revision)
    write_json(Path(args.output), manifest)


def cmd_export(args: Namespace) -> None:
    """Every table the artifact directory has (or those named), each one file in OUT."""
    from .frames import export

    export(Path(args.root), Path(args.output_dir), args.format, args.table)


# --- tools ----------------------------------------------------------------------------------
def cmd_demo(args: Namespace) -> None:
    from .demo import build_repository, write_release

    if args.action == "generate":
        write_release(Path(args.out))
    else:
        print(build_repository(Path(args.release_files), Path(args.out)))


def cmd_discover(args: Namespace) -> list[str]:
    from .discover import discover

    settings = Settings(args)
    if args.pin is None:
        config = settings.config
    else:
        pinned, skipped = pins_from(args, settings)
        names = pairs(args.display_name, "--display-name")
        columns: dict[str, dict] = {"manifest": {}, "sources": {}, "results": {}}
        for key, value in pairs(args.column, "--column").items():
            kind, _, field = key.partition(".")
            if kind not in columns or not field:
                raise AfbenchError("not KIND.FIELD", field="--column", found=key)
            columns[kind][field] = value
        files = {f.key: {"path": f.path, "sha256": f.sha256} for f in pinned if f.kind != "results"}
        models = {
            f.key: {"path": f.path, "sha256": f.sha256, "display_name": names.get(f.key, f.key)}
            for f in [*pinned, *skipped]
            if f.kind == "results"
        }
        config = {
            "release": {"revision": args.revision},
            "files": files,
            "models": models,
            "columns": columns,
            "source": {"max_bytes": whole(args.max_bytes, "max_bytes")},
        }
    if args.revision is not None:
        config["release"]["revision"] = matching(
            REVISION, args.revision, "--revision", "a 40-hex commit"
        )
    if args.max_bytes is not None:
        config["source"]["max_bytes"] = whole(args.max_bytes, "--max-bytes", minimum=1)
    report, fragment, warnings, problems = discover(config, Path(args.checkout))
    out = Path(args.output_dir or ".")
    discovery = Path(args.discovery) if args.discovery else out / "discovery.json"
    fragment_path = Path(args.fragment) if args.fragment else out / "discovered.yaml"
    write_json(discovery, report)
    atomic_write_bytes(fragment_path, fragment)
    if problems:
        raise AfbenchError(problems=problems)
    return [*warnings, f"wrote {fragment_path} (review it, then merge it into config)"]
