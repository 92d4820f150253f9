"""Tidy, typed DataFrames over an artifact directory (a `results/<revision>` folder as the
pipeline writes it, or any folder holding afbench artifacts).

    import afbench.frames as af
    board = af.leaderboard("results/<revision>")

Artifacts are found by their `kind`, never by their path: every regular `*.json` file under the
folder (hidden names and symbolic links skipped) whose first key is an afbench `kind`; a local
run's `outcomes.csv` and `attempts.csv` are read beside its `summary.json`. Each artifact read
must carry this afbench's `schema_version`. A folder that mixes two release revisions is
refused, and so is a table asked of a folder without its artifact: one AfbenchError naming the
folder (or the file) in each case.

Columns are typed with pandas' nullable dtypes (`string`, `Int64`, `Float64`, `boolean`),
categoricals for short closed or repeating sets (categories sorted, or in the documented order
for `source_condition` and `outcome`) and `datetime64[us, UTC]` for times; unknown values are
`<NA>`/`NaT`, never 0 or "". `COLUMNS` documents every table's columns and dtypes; each frame's
`attrs` holds the folder's `revision` and the `artifacts` it was read from (paths relative to
the folder; parquet keeps them). Every function takes
a folder path, or a `Folder` (one scan, shared by several tables).
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd

from .errors import AfbenchError, Problem, raise_if
from .fsutil import (
    SPREADSHEET_GUARD,
    csv_text_value,
    parse_json_bytes,
    read_head,
    spreadsheet_safe,
)
from .records import (
    ANALYSIS,
    ARTIFACT_MANIFEST,
    CATALOG,
    MODEL_IMPORT,
    RUN_SUMMARY,
    SCHEMA_VERSION,
    SUMMARY,
)
from .runs import ATTEMPT_COLUMNS, OUTCOME_COLUMNS, OUTCOMES, read_regular_file

__all__ = [
    "COLUMNS",
    "TABLES",
    "Folder",
    "available_tables",
    "comparisons",
    "export",
    "leaderboard",
    "official_results",
    "read_export",
    "run_attempts",
    "run_outcomes",
    "table_bytes",
    "tasks",
]

CONDITIONS = ("source-present", "source-free")
UTC_TIME = "datetime64[us, UTC]"
# the largest artifact read (a model import of the bench's 34,100 tasks is about 8 MiB)
MAX_ARTIFACT_BYTES = 1 << 30
HEAD_BYTES = 64 * 1024
_KIND_FIRST = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"kind"\s*:\s*("afbench [^"\\]*")')
_REVISION = re.compile(rb'"revision"\s*:\s*"([^"\\]*)"')

# --- the documented schema: table -> column -> dtype ----------------------------------------
# "category" is an open set (categories: the values present, sorted); a tuple is a closed set
# in that order.
_TASKS = {
    "task_id": "string",
    "source_id": "category",
    "source_title": "string",
    "source_ref": "string",
    "target_declaration": "string",
    "n_obligations": "Int64",
    "workspace": "string",
    "workspace_url": "string",
}
_OFFICIAL = {
    "model": "category",
    "display_name": "string",
    "source_condition": CONDITIONS,
    "budget_usd": "Float64",
    "task_id": "string",
    "source_id": "category",
    "success": "boolean",
    "obligations_accepted": "Int64",
    "n_obligations": "Int64",
    "cost_usd": "Float64",
    "stop_reason": "category",
    "finished_at": UTC_TIME,
    "over_budget": "boolean",
}
_LEADERBOARD = {
    "source_condition": CONDITIONS,
    "budget_usd": "Float64",
    "rank": "Int64",
    "model": "category",
    "display_name": "string",
    "passes": "Int64",
    "tasks": "Int64",
    "success_rate": "Float64",
    "mean_cost_usd": "Float64",
    "cost_per_solved_usd": "Float64",
    "infrastructure_errors": "Int64",
    "over_budget_records": "Int64",
    "leader_tier": "boolean",
    "letters": "string",
    "passes_errors_as_successes": "Int64",
    "success_rate_errors_as_successes": "Float64",
    "published_passes": "Int64",
    "matches_published": "boolean",
    "confidence": "Float64",
    "wilson_low": "Float64",
    "wilson_high": "Float64",
    "standard_error": "Float64",
    "clustered_standard_error": "Float64",
    "clustered_low": "Float64",
    "clustered_high": "Float64",
    "design_effect": "Float64",
}
_COMPARISONS = {
    "source_condition": CONDITIONS,
    "budget_usd": "Float64",
    "confidence": "Float64",
    "a": "string",
    "b": "string",
    "tasks": "Int64",
    "both": "Int64",
    "only_a": "Int64",
    "only_b": "Int64",
    "neither": "Int64",
    "difference": "Float64",
    "difference_standard_error": "Float64",
    "difference_low": "Float64",
    "difference_high": "Float64",
    "p_exact": "Float64",
    "p_holm": "Float64",
    "significant": "boolean",
    "clustered_standard_error": "Float64",
    "clustered_low": "Float64",
    "clustered_high": "Float64",
    "design_effect": "Float64",
    "p_exact_errors_favour_a": "Float64",
    "p_exact_errors_favour_b": "Float64",
    "infrastructure_marked": "boolean",
}
_RUN_COMMON = {
    "run": "category",
    "configuration": "category",
    "task_id": "string",
    "outcome": OUTCOMES,
    "reward": "Int64",
    "reason": "string",
}
# from the run's summary, not its csv: the configuration's protocol-conformance certificate
# (<NA> for verdicts and for runs imported before certificates existed)
_FROM_SUMMARY = {"conformant": "boolean"}
_ATTEMPTS = {
    **_RUN_COMMON,
    "cost_usd": "Float64",
    "agent": "string",
    "agent_version": "string",
    "model": "string",
    "trial_name": "string",
    "job_id": "string",
    "trial_dir": "string",
    **_FROM_SUMMARY,
}
_OUTCOMES = {
    **_RUN_COMMON,
    "attempts": "Int64",
    "accepted_attempts": "Int64",
    "cost_usd": "Float64",
    "agent": "string",
    "agent_version": "string",
    "model": "string",
    "trial_dirs": "string",
    **_FROM_SUMMARY,
}
COLUMNS: dict[str, dict[str, object]] = {
    "tasks": _TASKS,
    "official_results": _OFFICIAL,
    "leaderboard": _LEADERBOARD,
    "comparisons": _COMPARISONS,
    "run_attempts": _ATTEMPTS,
    "run_outcomes": _OUTCOMES,
}
assert [c for c in _ATTEMPTS if c != "run" and c not in _FROM_SUMMARY] == ATTEMPT_COLUMNS
assert [c for c in _OUTCOMES if c != "run" and c not in _FROM_SUMMARY] == OUTCOME_COLUMNS


# --- finding artifacts ----------------------------------------------------------------------
class Artifact:
    __slots__ = ("kind", "path", "revision")

    def __init__(self, path: Path, kind: str, revision: str | None) -> None:
        self.path, self.kind, self.revision = path, kind, revision


def _head(path: Path) -> bytes:
    return read_head(path, "artifact", HEAD_BYTES)


def _sniff(path: Path) -> Artifact | None:
    """The artifact's kind and release revision from the file's first bytes (afbench writes
    `kind` first and the release before any long list); the whole file is parsed only when
    the head does not tell. None for a JSON file that is not an afbench artifact."""
    head = _head(path)
    match = _KIND_FIRST.match(head)
    if match:
        kind = json.loads(match.group(1))
        found = _REVISION.search(head)
        if found:
            return Artifact(path, kind, found.group(1).decode("utf-8", "replace"))
    elif b'"kind"' not in head or b'"afbench ' not in head:
        return None
    try:
        data = _parse(path)
    except AfbenchError:
        if match:
            raise
        return None  # not JSON at all, and nothing says it is an afbench artifact
    if not isinstance(data, dict) or not str(data.get("kind", "")).startswith("afbench "):
        return None
    return Artifact(path, data["kind"], _revision_of(data))


def _revision_of(data: dict) -> str | None:
    release = data.get("release")
    if isinstance(release, dict) and isinstance(release.get("revision"), str):
        return release["revision"]
    revision = data.get("revision")
    return revision if isinstance(revision, str) else None


def _parse(path: Path) -> object:
    data = read_regular_file(path, "artifact", max_bytes=MAX_ARTIFACT_BYTES)
    assert data is not None
    return parse_json_bytes(data, str(path), "artifact")


class Folder:
    """The afbench artifacts under one folder, found by kind; each read once, on demand."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise AfbenchError(
                "not an artifact directory (no such folder)",
                file=str(self.root),
                expected="a results/<revision> folder",
            )
        self.artifacts: list[Artifact] = []
        for folder, dirs, files in os.walk(self.root, onerror=self._unreadable):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                path = Path(folder) / name
                if name.startswith(".") or not name.endswith(".json") or not _regular(path):
                    continue
                found = _sniff(path)
                if found is not None:
                    self.artifacts.append(found)
        revisions: dict[str, Path] = {}
        for artifact in self.artifacts:
            if artifact.revision is not None:
                revisions.setdefault(artifact.revision, artifact.path)
        if len(revisions) > 1:
            listed = sorted(revisions.items())
            shown = "; ".join(f"{rev} (e.g. {path})" for rev, path in listed[:5])
            shown += f"; and {len(listed) - 5} more" if len(listed) > 5 else ""
            raise AfbenchError(
                "the folder mixes artifacts of several release revisions: give the folder of "
                "one revision (results/<revision>)",
                file=str(self.root),
                expected="one revision",
                found=shown,
            )
        self.revision = next(iter(revisions), None)
        self._data: dict[Path, dict] = {}

    def _unreadable(self, exc: OSError) -> None:
        raise AfbenchError(f"cannot list folder: {exc.strerror}", file=exc.filename)

    def of_kind(self, kind: str) -> list[Artifact]:
        return [a for a in self.artifacts if a.kind == kind]

    def read(self, artifact: Artifact, keep: bool = True) -> dict:
        """The whole artifact, its kind and schema version checked; kept for the next call
        unless `keep` is false (a model import: read once, its records made a frame)."""
        if artifact.path in self._data:
            return self._data[artifact.path]
        data = _parse(artifact.path)
        file = str(artifact.path)
        if not isinstance(data, dict) or data.get("kind") != artifact.kind:
            raise AfbenchError(
                "artifact changed while being read", file=file, expected=artifact.kind
            )
        if data.get("schema_version") != SCHEMA_VERSION:
            raise AfbenchError(
                "artifact written by an incompatible afbench; rebuild it",
                file=file,
                field="schema_version",
                expected=SCHEMA_VERSION,
                found=data.get("schema_version"),
            )
        if _revision_of(data) != artifact.revision:
            raise AfbenchError(
                "artifact's release revision is not the one its first bytes give",
                file=file,
                field="release.revision",
                expected=artifact.revision,
                found=_revision_of(data),
            )
        if keep:
            self._data[artifact.path] = data
        return data

    def need(self, kind: str, what: str, command: str) -> list[Artifact]:
        found = self.of_kind(kind)
        if not found:
            raise AfbenchError(
                f"no {what} in this folder",
                file=str(self.root),
                expected=f"an artifact of kind '{kind}', as `afbench {command}` writes",
            )
        return found

    def one(self, kind: str, what: str, command: str) -> Artifact:
        found = self.need(kind, what, command)
        if len(found) > 1:
            raise AfbenchError(
                f"{len(found)} {what}s in this folder; give the folder of one",
                file=str(self.root),
                expected=f"one artifact of kind '{kind}'",
                found=", ".join(str(a.path) for a in found),
            )
        return found[0]

    def frame(self, rows: list[dict] | pd.DataFrame, table: str, used: Iterable[Artifact]):
        df = typed(rows, table)
        paths = [a.path.relative_to(self.root).as_posix() for a in used]
        df.attrs = {"revision": self.revision, "artifacts": paths}
        return df


def _regular(path: Path) -> bool:
    try:
        return os.lstat(path).st_mode & 0o170000 == 0o100000
    except OSError:
        return False


def _folder(root: str | os.PathLike | Folder) -> Folder:
    return root if isinstance(root, Folder) else Folder(root)


class _Reader:
    """Fields of one artifact, each missing or mistyped one a clear error naming the file."""

    def __init__(self, artifact: Artifact) -> None:
        self.file = str(artifact.path)

    def get(self, obj: object, key: str, types: type | tuple, where: str = "") -> object:
        field = f"{where}{key}"
        if not isinstance(obj, dict) or key not in obj:
            raise AfbenchError("artifact lacks a field", file=self.file, field=field)
        value = obj[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in _tuple(types)):
            raise AfbenchError(
                "artifact field has the wrong type",
                file=self.file,
                field=field,
                expected=" or ".join(t.__name__ for t in _tuple(types)),
                found=type(value).__name__,
            )
        return value

    def row(self, obj: object, spec: dict[str, type | tuple], where: str) -> dict:
        return {key: self.get(obj, key, types, where) for key, types in spec.items()}

    def table(self, items: object, spec: dict[str, type | tuple], where: str) -> pd.DataFrame:
        """A list of objects as columns, each value's JSON type checked (one pass a column)."""
        if not isinstance(items, list):
            raise AfbenchError(
                "artifact field has the wrong type", file=self.file, field=where, expected="list"
            )
        for i, item in enumerate(items):
            if type(item) is not dict:
                raise AfbenchError(
                    "artifact field has the wrong type",
                    file=self.file,
                    field=f"{where}[{i}]",
                    expected="object",
                    found=type(item).__name__,
                )
        columns = {}
        for key, types in spec.items():
            values = [item.get(key, _MISSING) for item in items]
            allowed = set(_tuple(types))
            if not set(map(type, values)) <= allowed:
                i = next(i for i, v in enumerate(values) if type(v) not in allowed)
                self.get(items[i], key, types, f"{where}[{i}].")  # raises, naming the field
            columns[key] = values
        return pd.DataFrame(columns, columns=list(spec), index=pd.RangeIndex(len(items)))


_MISSING = object()


def _tuple(types: type | tuple) -> tuple:
    return types if isinstance(types, tuple) else (types,)


NUMBER = (int, float)
OPT_NUMBER = (int, float, type(None))
OPT_STR = (str, type(None))


# --- typing ---------------------------------------------------------------------------------
def _dtype(spec: object, values: pd.Series) -> object:
    if isinstance(spec, tuple):
        return pd.CategoricalDtype(list(spec))
    if spec == "category":
        present = values.dropna().astype(str).unique()
        return pd.CategoricalDtype(sorted(present))
    return spec


def typed(rows: list[dict] | pd.DataFrame, table: str) -> pd.DataFrame:
    """Rows (dicts, or a frame of plain values) as the table's documented columns and dtypes."""
    schema = COLUMNS[table]
    raw = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows, columns=list(schema))
    out = {}
    for column, spec in schema.items():
        values = raw[column] if column in raw else pd.Series([None] * len(raw), dtype=object)
        if spec == UTC_TIME:
            out[column] = pd.to_datetime(values, utc=True, format="ISO8601").astype(UTC_TIME)
        else:
            out[column] = values.astype(_dtype(spec, values))
    return pd.DataFrame(out, index=pd.RangeIndex(len(raw)))


# --- the tables -----------------------------------------------------------------------------
def tasks(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """One row per task of the catalog (MANIFEST order)."""
    folder = _folder(root)
    artifact = folder.one(CATALOG, "task catalog", "tasks")
    data, r = folder.read(artifact), _Reader(artifact)
    titles = {}
    for i, source in enumerate(r.get(data, "sources", list)):
        sid = r.get(source, "source_id", str, f"sources[{i}].")
        titles[sid] = r.get(source, "title", str, f"sources[{i}].")
    spec = {
        "task_id": str,
        "source_id": str,
        "source_ref": str,
        "target_declaration": str,
        "n_obligations": int,
        "workspace": str,
        "workspace_url": str,
    }
    rows = r.table(r.get(data, "tasks", list), spec, "tasks")
    rows["source_title"] = rows["source_id"].map(titles)
    unknown = rows.index[rows["source_title"].isna()]
    if len(unknown):
        raise AfbenchError(
            "task's source is not among the catalog's sources",
            file=r.file,
            field=f"tasks[{unknown[0]}].source_id",
            expected="a source_id of the catalog's sources",
            found=rows["source_id"].iloc[unknown[0]],
        )
    return folder.frame(rows, "tasks", [artifact])


_RECORD = {
    "task_id": str,
    "source_id": str,
    "success": bool,
    "n_obligations": int,
    "obligations_accepted": int,
    "cost_usd": OPT_NUMBER,
    "stop_reason": str,
    "finished_at": OPT_STR,
}


def _unique(items: Iterable[tuple[tuple, Artifact, object]], what: str) -> list[tuple]:
    """(key, artifact, value) ordered by key; two artifacts with one key are refused, naming
    both (a stale copy, or the same import twice)."""
    first: dict[tuple, tuple] = {}
    problems = []
    for item in items:
        key, artifact = item[0], item[1]
        if key in first:
            problems.append(
                Problem(
                    f"two {what} for {' / '.join(str(v) for v in key)}: also in "
                    f"{first[key][1].path}; keep one",
                    file=str(artifact.path),
                )
            )
        else:
            first[key] = item
    raise_if(problems)
    return [first[k] for k in sorted(first, key=lambda k: tuple(map(str, k)))]


def _by_condition(folder: Folder, found: list[Artifact], what: str) -> list[tuple]:
    """(source condition, budget), artifact, data: one artifact per condition and budget."""

    def keyed(artifact: Artifact) -> tuple:
        data, r = folder.read(artifact), _Reader(artifact)
        key = (r.get(data, "source_condition", str), float(r.get(data, "budget_usd", NUMBER)))
        return key, artifact, data

    return _unique(map(keyed, found), what)


def official_results(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """One row per model x task of the official imports (one import per model, source
    condition and budget), as the authors reported them: nothing dropped or capped."""
    folder = _folder(root)
    found = folder.need(MODEL_IMPORT, "official results import", "import-model")
    parts = _unique(map(lambda a: _import_part(folder, a), found), "official results imports")
    rows = pd.concat([part for _, _, part in parts], ignore_index=True)
    return folder.frame(rows, "official_results", [a for _, a, _ in parts])


def _import_part(folder: Folder, artifact: Artifact) -> tuple[tuple, Artifact, pd.DataFrame]:
    """One model import's records as plain columns, keyed by (condition, budget, model)."""
    data, r = folder.read(artifact, keep=False), _Reader(artifact)
    condition = r.get(data, "source_condition", str)
    budget = float(r.get(data, "budget_usd", NUMBER))
    model = r.get(data, "model", str)
    audit = r.get(data, "budget_audit", dict)
    over = {
        r.get(o, "task_id", str, "budget_audit.over_budget.")
        for o in r.get(audit, "over_budget", list, "budget_audit.")
    }
    part = r.table(r.get(data, "records", list), _RECORD, "records")
    part.insert(0, "model", model)
    part.insert(1, "display_name", r.get(data, "display_name", str))
    part.insert(2, "source_condition", condition)
    part.insert(3, "budget_usd", budget)
    part["over_budget"] = part["task_id"].isin(over).astype(object)
    part.loc[part["cost_usd"].isna(), "over_budget"] = None
    _check_finished(part, r.file)
    return (condition, budget, model), artifact, part


def _check_finished(part: pd.DataFrame, file: str) -> None:
    given = part["finished_at"].dropna()
    parsed = pd.to_datetime(given, utc=True, format="ISO8601", errors="coerce")
    bad = given[parsed.isna()]
    if len(bad):
        raise AfbenchError(
            "not an ISO-8601 date or datetime",
            file=file,
            field=f"records[{bad.index[0]}].finished_at",
            expected="YYYY-MM-DD or an ISO-8601 datetime",
            found=bad.iloc[0],
        )


_BOARD = {
    "rank": int,
    "model": str,
    "display_name": str,
    "passes": int,
    "tasks": int,
    "success_rate": NUMBER,
    "mean_cost_usd": NUMBER,
    "cost_per_solved_usd": OPT_NUMBER,
    "infrastructure_errors": int,
    "over_budget_records": int,
    "leader_tier": bool,
    "letters": list,
    "passes_errors_as_successes": int,
    "success_rate_errors_as_successes": NUMBER,
    "published_passes": (int, type(None)),
    "matches_published": (bool, type(None)),
}
_WILSON = {"wilson_low": NUMBER, "wilson_high": NUMBER, "standard_error": NUMBER}
# the analysis' clustered interval ("clustered": {...}) -> the frame's columns
_CLUSTERED = {
    "se_clustered": ("clustered_standard_error", NUMBER),
    "low": ("clustered_low", NUMBER),
    "high": ("clustered_high", NUMBER),
    "design_effect": ("design_effect", OPT_NUMBER),
}


def _clustered(r: _Reader, row: dict, where: str) -> dict:
    clustered = r.get(row, "clustered", dict, where)
    return {
        column: r.get(clustered, key, types, f"{where}clustered.")
        for key, (column, types) in _CLUSTERED.items()
    }


def leaderboard(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """The comparison summary's leaderboard (one row per model, per source condition and
    budget): reported passes, significance tier and letters, bounds over the infrastructure
    errors and the authors' published count; with the report's Wilson and clustered intervals
    and design effects when its analysis.json is in the folder (else those columns are
    <NA>)."""
    folder = _folder(root)
    found = folder.need(SUMMARY, "comparison summary", "compare")
    summaries = _by_condition(folder, found, "comparison summaries")
    analyses = {
        key: artifact
        for key, artifact, _ in _by_condition(folder, folder.of_kind(ANALYSIS), "report analyses")
    }
    rows, used = [], [artifact for _, artifact, _ in summaries]
    for key, artifact, data in summaries:
        r = _Reader(artifact)
        board = [
            r.row(row, _BOARD, f"leaderboard[{i}].")
            for i, row in enumerate(r.get(data, "leaderboard", list))
        ]
        for i, row in enumerate(board):
            row["letters"] = _letters(r, row["letters"], f"leaderboard[{i}].letters")
        intervals = {}
        analysis = analyses.pop(key, None)
        if analysis is not None:
            used.append(analysis)
            intervals = _intervals(folder, analysis, board)
        for row in board:
            rows.append(
                {
                    "source_condition": key[0],
                    "budget_usd": key[1],
                    **row,
                    **intervals.get(row["model"], {}),
                }
            )
    for analysis in analyses.values():
        raise AfbenchError(
            "a report analysis without its comparison summary in the folder",
            file=str(analysis.path),
            expected="the summary.json it was made from",
        )
    return folder.frame(rows, "leaderboard", used)


def _intervals(folder: Folder, artifact: Artifact, board: list[dict]) -> dict[str, dict]:
    """Per model: the analysis' confidence, Wilson interval and standard error; refused unless
    the analysis shows the summary's models and passes (a report of another comparison)."""
    data, r = folder.read(artifact), _Reader(artifact)
    confidence = r.get(data, "confidence", NUMBER)
    spec = {"model": str, "passes": int, "tasks": int, **_WILSON}
    shown = {
        row["model"]: row
        for row in (
            r.row(x, spec, f"leaderboard[{i}].")
            for i, x in enumerate(r.get(data, "leaderboard", list))
        )
    }
    expected = {row["model"]: (row["passes"], row["tasks"]) for row in board}
    found = {m: (row["passes"], row["tasks"]) for m, row in shown.items()}
    if found != expected:
        raise AfbenchError(
            "the report's analysis does not come from the comparison summary in this folder "
            "(an older report?): build the report again",
            file=r.file,
            field="leaderboard",
            expected=f"models and passes {sorted(expected.items())}",
            found=f"{sorted(found.items())}",
        )
    clustered = {
        x["model"]: _clustered(r, x, f"leaderboard[{i}].")
        for i, x in enumerate(r.get(data, "leaderboard", list))
    }
    return {
        m: {"confidence": confidence, **{k: row[k] for k in _WILSON}, **clustered[m]}
        for m, row in shown.items()
    }


def _letters(r: _Reader, letters: list, where: str) -> str:
    from .analysis import letters_text

    if not letters or not all(isinstance(x, str) and x.isalpha() for x in letters):
        raise AfbenchError(
            "artifact field has the wrong type", file=r.file, field=where, expected="letters"
        )
    return letters_text(letters)


_PAIR = {
    "a": str,
    "b": str,
    "tasks": int,
    "both": int,
    "only_a": int,
    "only_b": int,
    "neither": int,
    "difference_difference": NUMBER,
    "difference_standard_error": NUMBER,
    "difference_low": NUMBER,
    "difference_high": NUMBER,
    "p_exact": NUMBER,
    "p_holm": NUMBER,
    "significant": bool,
}


def comparisons(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """The report's paired comparisons: one row per pair of models (a ranked above b), with
    the discordant counts, the paired difference in success rate (a - b) and its interval,
    the same difference's clustered interval over sources and design effect, the exact
    McNemar p-value and its Holm adjustment, and the unadjusted p with the two models'
    infrastructure errors resolved in favour of a, then of b (marked when one crosses alpha)."""
    folder = _folder(root)
    found = folder.need(ANALYSIS, "report analysis", "report")
    analyses = _by_condition(folder, found, "report analyses")
    rows = []
    for (condition, budget), artifact, data in analyses:
        r = _Reader(artifact)
        confidence = r.get(data, "confidence", NUMBER)
        pairs = r.get(r.get(data, "paired", dict), "pairs", list, "paired.")
        for i, pair in enumerate(pairs):
            where = f"paired.pairs[{i}]."
            row = r.row(pair, _PAIR, where)
            row["difference"] = row.pop("difference_difference")
            row.update(_clustered(r, pair, where))
            infrastructure = r.get(pair, "infrastructure", dict, where)
            for way in ("favour_a", "favour_b"):
                resolved = r.get(infrastructure, way, dict, f"{where}infrastructure.")
                row[f"p_exact_errors_{way}"] = r.get(
                    resolved, "p_exact", NUMBER, f"{where}infrastructure.{way}."
                )
            row["infrastructure_marked"] = r.get(
                infrastructure, "marked", bool, f"{where}infrastructure."
            )
            rows.append(
                {
                    "source_condition": condition,
                    "budget_usd": budget,
                    "confidence": confidence,
                    **row,
                }
            )
    return folder.frame(rows, "comparisons", [artifact for _, artifact, _ in analyses])


def run_attempts(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """Every trial (or verdict) of every local run: its run's attempts.csv, one row each."""
    return _run_table(root, "run_attempts", "attempts.csv")


def run_outcomes(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """Every local run's outcomes.csv: one row per configuration x selected task. The reward
    is 1 (accepted), 0 (rejected) or <NA> (error, unverified, incomplete, missing): never 0
    for an error."""
    return _run_table(root, "run_outcomes", "outcomes.csv")


_REWARD = {"accepted": "1", "rejected": "0"}


def _runs(folder: Folder) -> list[tuple[Artifact, str, dict]]:
    """(summary, run name, summary data), unique by run name, in name order."""
    found = folder.need(RUN_SUMMARY, "local run", "import-run")

    def named(artifact: Artifact) -> tuple:
        data = folder.read(artifact)
        return (_Reader(artifact).get(data, "run", str),), artifact, data

    return [(a, key[0], data) for key, a, data in _unique(map(named, found), "local runs")]


def _run_table(root: str | os.PathLike | Folder, table: str, csv_name: str) -> pd.DataFrame:
    folder = _folder(root)
    schema = COLUMNS[table]
    header = [c for c in schema if c != "run" and c not in _FROM_SUMMARY]
    parts, runs = [], _runs(folder)
    for artifact, run, data in runs:
        r = _Reader(artifact)
        configurations = r.get(data, "configurations", list)
        labels = {r.get(c, "configuration", str, "configurations.") for c in configurations}
        conformant = {
            c["configuration"]: r.get(c, "conformant", (bool, type(None)), "configurations.")
            if "conformant" in c
            else None
            for c in configurations
        }
        n_tasks = r.get(r.get(data, "selection", dict), "tasks", int, "selection.")
        path = artifact.path.parent / csv_name
        part = _read_run_csv(path, header, schema)
        file = str(path)
        extra = sorted(set(part["configuration"]) - labels)
        if extra:
            raise AfbenchError(
                f"a configuration that run '{run}' does not have (not the csv of {artifact.path})",
                file=file,
                field="configuration",
                expected=sorted(labels),
                found=extra[0],
            )
        if table == "run_outcomes" and len(part) != n_tasks * len(labels):
            raise AfbenchError(
                f"run '{run}' has {len(labels)} configuration(s) x {n_tasks} selected tasks; "
                f"its outcomes do not (not the csv of {artifact.path})",
                file=file,
                expected=f"{n_tasks * len(labels)} rows",
                found=f"{len(part)} rows",
            )
        part.insert(0, "run", run)
        part["conformant"] = part["configuration"].map(conformant)
        parts.append(part)
    return folder.frame(pd.concat(parts, ignore_index=True), table, [a for a, _, _ in runs])


def _unescape(values: pd.Series) -> pd.Series:
    """The text afbench's CSV writer was given (fsutil.csv_text): its guard and escapes
    undone, exactly."""
    guarded = values.str.startswith(SPREADSHEET_GUARD)
    if not guarded.any():
        return values
    return values.where(~guarded, values[guarded].map(csv_text_value))


def _read_run_csv(path: Path, header: list[str], schema: dict) -> pd.DataFrame:
    """A run csv as plain values, every cell checked: whole numbers, finite numbers, known
    outcomes, and a reward that is 1 for accepted, 0 for rejected and empty otherwise."""
    file = str(path)
    data = read_regular_file(path, "run table", max_bytes=MAX_ARTIFACT_BYTES)
    assert data is not None
    try:
        text = data.decode("utf-8-sig")
        raw = pd.read_csv(
            io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False, engine="c"
        )
    except UnicodeDecodeError as exc:
        raise AfbenchError(f"run table is not UTF-8 (byte {exc.start})", file=file) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise AfbenchError(f"run table is not a valid CSV: {exc}", file=file) from None
    if list(raw.columns) != header:
        raise AfbenchError(
            "run table's header is not the one afbench writes",
            file=file,
            row=1,
            expected=",".join(header),
            found=",".join(map(str, raw.columns)),
        )
    out = {}
    problems: list[Problem] = []

    def refuse(mask: pd.Series, column: str, message: str, expected: str) -> None:
        if mask.any():
            i = int(mask.to_numpy().nonzero()[0][0])
            problems.append(
                Problem(
                    message + (f" ({int(mask.sum())} rows)" if mask.sum() > 1 else ""),
                    file=file,
                    row=i + 2,
                    field=column,
                    expected=expected,
                    found=raw[column].iloc[i],
                )
            )

    for column in header:
        values, spec = raw[column].astype(object), schema[column]
        empty = values == ""
        if spec == "Int64":
            whole = values.str.fullmatch(r"[0-9]{1,15}").astype(bool)
            refuse(~empty & ~whole, column, "not a whole number", "a whole number, or empty")
            out[column] = [int(v) if ok else None for v, ok in zip(values, whole, strict=True)]
        elif spec == "Float64":
            numbers = pd.to_numeric(values.where(~empty, None), errors="coerce")
            bad = ~empty & (numbers.isna() | ~numbers.abs().lt(float("inf")))
            refuse(bad, column, "not a finite number", "a number such as 12.5, or empty")
            out[column] = numbers.astype(object).where(~empty & ~bad, None)
        else:
            out[column] = _unescape(values).where(~empty, None)
    outcome = raw["outcome"]
    refuse(~outcome.isin(OUTCOMES), "outcome", "not an outcome", " / ".join(OUTCOMES))
    expected_reward = outcome.map(_REWARD).fillna("")
    refuse(
        (raw["reward"] != expected_reward) & outcome.isin(OUTCOMES),
        "reward",
        "reward contradicts the outcome (accepted 1, rejected 0, otherwise empty: "
        "an error is never 0)",
        "1 / 0 / empty by outcome",
    )
    for column in ("configuration", "task_id"):
        refuse(raw[column] == "", column, "empty value", "a non-empty value")
    raise_if(problems)
    return pd.DataFrame(out)


# --- the tables together: what a folder has, and export -------------------------------------
TABLES: dict[str, Callable[[str | os.PathLike | Folder], pd.DataFrame]] = {
    "tasks": tasks,
    "official_results": official_results,
    "leaderboard": leaderboard,
    "comparisons": comparisons,
    "run_attempts": run_attempts,
    "run_outcomes": run_outcomes,
}
_SOURCE_KIND = {
    "tasks": CATALOG,
    "official_results": MODEL_IMPORT,
    "leaderboard": SUMMARY,
    "comparisons": ANALYSIS,
    "run_attempts": RUN_SUMMARY,
    "run_outcomes": RUN_SUMMARY,
}
FORMATS = ("csv", "parquet")
PARQUET_EXTRA = "pip install 'afbench[parquet]' (pyarrow)"


def available_tables(root: str | os.PathLike | Folder) -> list[str]:
    """The tables whose artifacts the folder holds, in TABLES order."""
    folder = _folder(root)
    return [name for name, kind in _SOURCE_KIND.items() if folder.of_kind(kind)]


def _check_parquet() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise AfbenchError(
            f"parquet needs the optional extra: {PARQUET_EXTRA}",
            field="--format",
            expected="csv, or parquet with pyarrow installed",
            found="parquet",
        ) from None


def table_bytes(df: pd.DataFrame, fmt: str) -> bytes:
    """One table as a file's bytes. CSV: UTF-8, empty cells for unknown values, times in
    ISO 8601 UTC, a text cell starting with a formula character guarded by a leading "'" (as
    afbench's other CSVs); parquet: the dtypes kept."""
    if fmt == "parquet":
        _check_parquet()
        buffer = io.BytesIO()
        df.to_parquet(buffer, index=False, engine="pyarrow")
        return buffer.getvalue()
    if fmt != "csv":
        raise AfbenchError("unknown format", field="--format", expected=" or ".join(FORMATS))
    out = df.copy()
    for column in out.columns:
        series = out[column]
        if isinstance(series.dtype, pd.DatetimeTZDtype):
            out[column] = series.map(
                lambda t: None if pd.isna(t) else t.isoformat().replace("+00:00", "Z")
            )
        elif isinstance(series.dtype, pd.StringDtype | pd.CategoricalDtype):
            out[column] = series.astype(object).map(
                lambda v: None if pd.isna(v) else spreadsheet_safe(v)
            )
    return out.to_csv(index=False, na_rep="", lineterminator="\n").encode()


def export(
    root: str | os.PathLike | Folder,
    output_dir: str | os.PathLike,
    fmt: str = "csv",
    names: list[str] | None = None,
) -> list[Path]:
    """Write each table (default: every table the folder has) as OUT/<table>.<fmt>. Every
    table is built first, and the files are written as one unit (fsutil.write_outputs): a
    refusal or an interruption leaves every earlier file, never some of each."""
    from .fsutil import write_outputs

    if fmt not in FORMATS:
        raise AfbenchError("unknown format", field="--format", expected=" or ".join(FORMATS))
    if fmt == "parquet":
        _check_parquet()
    folder = _folder(root)
    unknown = [n for n in names or [] if n not in TABLES]
    if unknown:
        raise AfbenchError(
            "unknown table", field="--table", expected=f"one of {list(TABLES)}", found=unknown[0]
        )
    if names and len(set(names)) != len(names):
        raise AfbenchError(
            "a table is named twice", field="--table", expected="each table once", found=names
        )
    wanted = list(names) if names else available_tables(folder)
    if not wanted:
        raise AfbenchError(
            "no afbench artifacts in this folder",
            file=str(folder.root),
            expected="a results/<revision> folder",
        )
    _check_export_folder(folder.root, Path(output_dir))
    tables = {name: TABLES[name](folder) for name in wanted}
    files = {
        Path(output_dir) / f"{name}.{fmt}": table_bytes(table, fmt)
        for name, table in tables.items()
    }
    rows = ", ".join(f"{name} {len(table):,}" for name, table in tables.items())
    write_outputs(list(files.items()), about=f"tables: {len(files)} as {fmt} (rows: {rows})")
    return list(files)


def _check_export_folder(root: Path, output_dir: Path) -> None:
    """Tables go outside every results tree: never under the folder read, nor into a folder
    (or below one) that holds an artifact manifest (found by its kind), where a table would
    replace an artifact."""
    real_root = os.path.realpath(root)
    real_out = os.path.realpath(output_dir)
    if real_out == real_root or real_out.startswith(real_root.rstrip(os.sep) + os.sep):
        raise AfbenchError(
            f"the output folder is inside the artifact folder {root}; refusing to write tables "
            "among its artifacts (choose a folder outside it)",
            file=str(output_dir),
        )
    folder = real_out
    while True:
        if _holds_manifest(folder):
            raise AfbenchError(
                f"the output folder is inside the results tree {folder} (it has an artifact "
                "manifest); refusing to write tables among its artifacts",
                file=str(output_dir),
            )
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def _holds_manifest(folder: str) -> bool:
    try:
        with os.scandir(folder) as entries:
            names = [e.path for e in entries if e.name.endswith(".json") and e.name[:1] != "."]
    except OSError:
        return False  # a folder that is not there (yet) or can not be listed holds none
    for path in names[:1000]:
        if not _regular(Path(path)):
            continue
        try:
            found = _sniff(Path(path))
        except AfbenchError:
            continue
        if found is not None and found.kind == ARTIFACT_MANIFEST:
            return True
    return False


def read_export(path: str | os.PathLike) -> pd.DataFrame:
    """A table `export` wrote (OUT/<table>.csv or .parquet) back with its documented dtypes."""
    path = Path(path)
    table, fmt = path.stem, path.suffix.removeprefix(".")
    if table not in COLUMNS or fmt not in FORMATS:
        raise AfbenchError(
            "not an exported table",
            file=str(path),
            expected=f"<table>.csv or <table>.parquet, table one of {list(COLUMNS)}",
        )
    if fmt == "parquet":
        _check_parquet()
        return typed(pd.read_parquet(path), table)
    raw = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False)
    if list(raw.columns) != list(COLUMNS[table]):
        raise AfbenchError(
            "not the columns of this table",
            file=str(path),
            row=1,
            expected=",".join(COLUMNS[table]),
            found=",".join(raw.columns),
        )
    plain = {}
    for column, spec in COLUMNS[table].items():
        values = raw[column]
        empty = values == ""
        if spec in ("Int64", "Float64"):
            plain[column] = pd.to_numeric(values.where(~empty, None)).astype(object)
            plain[column] = plain[column].where(~empty, None)
        elif spec == "boolean":
            plain[column] = values.map({"True": True, "False": False, "": None})
        elif spec == UTC_TIME:
            plain[column] = values.where(~empty, None)
        else:
            plain[column] = _unescape(values).where(~empty, None)
    return typed(pd.DataFrame(plain), table)
