"""Tidy, typed DataFrames over an artifact directory (a `results/<revision>` folder as the
pipeline writes it, or any folder holding afbench artifacts).

    import afbench.frames as af
    board = af.leaderboard("results/<revision>")

Artifacts are found by their `kind`, never by their path: every regular `*.json` file under the
folder (hidden names and symbolic links skipped) whose first key is an afbench `kind`; a local
run's `outcomes.csv` and `attempts.csv` are read beside its `summary.json`. Each artifact read
is read through its kind's declaration (afbench.kinds: its own `schema_version`, every field
of its declared type). A folder that mixes two release revisions is refused, and so is a table
asked of a folder without its artifact: one AfbenchError naming the folder (or the file) in
each case.

Columns are typed with pandas' nullable dtypes (`string`, `Int64`, `Float64`, `boolean`),
categoricals for short closed or repeating sets (categories sorted, or in the documented order
for `source_condition` and `outcome`) and `datetime64[us, UTC]` for times; unknown values are
`<NA>`/`NaT`, never 0 or "". Every column comes from a declared field (its dtype from the
field's type), so a field added to a per-task result, a leaderboard row, a pair or a run table
appears here as a column. `COLUMNS` documents every table's columns and dtypes; each frame's
`attrs` holds the folder's `revision` and the `artifacts` it was read from (paths relative to
the folder; parquet keeps them). Every function takes a folder path, or a `Folder` (one scan,
shared by several tables).
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

import pandas as pd

from afbench.core.errors import AfbenchError, Problem, raise_if
from afbench.core.fsutil import (
    SPREADSHEET_GUARD,
    csv_text_value,
    parse_json_bytes,
    probing,
    read_file_once,
    read_head,
    spreadsheet_safe,
)

from .kinds import (
    ANALYSIS,
    ARTIFACT_MANIFEST,
    ATTEMPTS,
    CATALOG,
    FAILURE_ANATOMY,
    KINDS,
    MODEL_IMPORT,
    OUTCOMES,
    RUN_FAILURE_ANATOMY,
    RUN_SUMMARY,
    SELECTION,
    SUMMARY,
    TASK_RESULT,
    TASK_TABLE,
    TRIAL_RECEIPT,
    Field,
    Kind,
    Shape,
    Table,
    lines,
)
from .kinds import UTC_TIME as UTC_TIME
from .kinds.analysis import (
    ANALYSIS_ROW,
    CLUSTERED_RATE,
    FAILED_TASK,
    INTERVAL,
    LOCAL_FAILED_TASK,
    PAIR,
    RESOLVED,
    TASK_ROW,
)
from .kinds.execution import LEDGER_ENTRY
from .kinds.official import LEADERBOARD_ROW, LETTERS
from .kinds.runs import CONFIGURATION
from .kinds.tasks import SOURCE, TASK

__all__ = [
    "COLUMNS",
    "TABLES",
    "Folder",
    "available_tables",
    "comparisons",
    "export",
    "leaderboard",
    "ledger_entries",
    "official_failures",
    "official_results",
    "read_export",
    "receipts",
    "run_attempts",
    "run_failures",
    "run_outcomes",
    "selections",
    "table_bytes",
    "task_table",
    "tasks",
]

# the largest artifact read (a model import of the bench's 34,100 tasks is about 8 MiB)
MAX_ARTIFACT_BYTES = 1 << 30
HEAD_BYTES = 64 * 1024
_KIND_FIRST = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"kind"\s*:\s*("afbench [^"\\]*")')
_REVISION = re.compile(rb'"revision"\s*:\s*"([^"\\]*)"')


# --- the documented schema: table -> column -> dtype, from the declarations -------------------
# "category" is an open set (categories: the values present, sorted); a tuple is a closed set
# in that order.
class Column:
    """A table's column: its name, the declared field it holds, and that field's key where
    the artifact names it otherwise."""

    __slots__ = ("dtype", "field", "key", "name")

    def __init__(self, name: str, field: Field, key: str | None = None) -> None:
        self.name, self.field, self.key = name, field, key or field.name
        # a letter display (a list of letters) is shown as its text, as the report shows it
        self.dtype = "string" if field.type == LETTERS else field.dtype


def _scalar(field: Field) -> bool:
    return field.type in (str, int, float, bool) or field.type == LETTERS


def _columns(source: Shape | Kind | Table, *names: str, rename=None, rest: bool = True):
    """Columns from a declaration's scalar fields: `names` first, in that order (every scalar
    field, in declared order, when none is named), then, with `rest`, every other scalar field
    in declared order, so that a field added to the declaration becomes a column."""
    fields = source.fields
    by_name = {f.name: f for f in fields}
    chosen = list(names) or [f.name for f in fields if _scalar(f)]
    if rest:
        chosen += [f.name for f in fields if _scalar(f) and f.name not in chosen]
    rename = rename or {}
    return [Column(rename.get(name, name), by_name[name], name) for name in chosen]


def _one(source: Shape | Kind | Table, key: str, name: str | None = None) -> list[Column]:
    return [Column(name or key, source.field(key), key)]


_CONDITION = _one(SUMMARY, "source_condition") + _one(SUMMARY, "budget_usd")
# the analysis' clustered interval ("clustered": {...}) -> the frame's columns
_CLUSTERED = _columns(
    CLUSTERED_RATE,
    "se_clustered",
    "df",
    "clusters",
    "low",
    "high",
    "design_effect",
    rename={
        "se_clustered": "clustered_standard_error",
        "df": "clustered_df",
        "clusters": "clustered_sources",
        "low": "clustered_low",
        "high": "clustered_high",
    },
    rest=False,
)
_BOUNDS_INTERVAL = [
    Column("errors_clustered_low", INTERVAL.field("low"), "low"),
    Column("errors_clustered_high", INTERVAL.field("high"), "high"),
]
_WILSON = _columns(ANALYSIS_ROW, "wilson_low", "wilson_high", "standard_error", rest=False)
# any other number the analysis gives a model beside the summary's row: its own column
_ANALYSIS_MORE = [
    c
    for c in _columns(ANALYSIS_ROW)
    if c.name not in LEADERBOARD_ROW.names and c.name not in {w.name for w in _WILSON}
]
_RESOLVED = [
    Column(f"{key}_errors_{way}", RESOLVED.field(key), key)
    for way in ("favour_a", "favour_b")
    for key in ("p_exact", "p_sign_flip_holm")
]
_RUN = _one(RUN_SUMMARY, "run")
# a selection's name, hash and size beside each of its tasks, and the task's place in it
_SELECTION = [
    Column("selection", SELECTION.field("name"), "name"),
    *_one(SELECTION, "selection_sha256"),
]
_SELECTION_SIZE = Column("selection_tasks", SELECTION.field("counts").type.field("tasks"), "tasks")
_POSITION = Column(
    "position", Field("position", int, doc="the task's place in the selection, from 1")
)
_SELECTION_TASK = [*_one(TASK, "task_id"), *_one(TASK, "source_id")]
# a receipt's plan (its selection, the configuration) and meter, flattened beside its fields
_PLAN_MADE = TRIAL_RECEIPT.field("plan").type
_PLANNED = _PLAN_MADE.field("selection").type
_PLANNED_SELECTION = [
    Column("selection", _PLANNED.field("name"), "name"),
    *_one(_PLANNED, "selection_sha256"),
]
_CONFIGURATION = [*_one(_PLAN_MADE, "agent"), *_one(_PLAN_MADE, "model")]
_RECEIPT = _columns(
    TRIAL_RECEIPT,
    "task_id",
    "attempt",
    "job_name",
    "run_agent",
    "run_model",
    "action",
    "outcome",
    "refused",
    "worst_case_usd",
)
_RECEIPT_TRIALS = [
    Column(
        "cost_usd",
        Field(
            "cost_usd",
            float,
            null=True,
            unit="USD",
            doc="what Harbor recorded for the receipt's trials, summed over those that "
            "recorded one; null: none did",
        ),
    ),
    Column("trials", Field("trials", int, unit="trials", doc="the receipt's Harbor trials")),
]
_METER = [
    Column(f"meter_{f.name}", f) for f in TRIAL_RECEIPT.field("meter").type.fields if _scalar(f)
]
_PLAN_DIGEST = Column("plan_sha256", _PLAN_MADE.field("sha256"), "sha256")
_ENTRY = Column("entry", Field("entry", int, minimum=1, doc="its place among the ledger's entries"))
# `at` is a word of SQL (AT TIME ZONE): the column says what the time is of
_LEDGER = _columns(LEDGER_ENTRY, "event", "at", rename={"at": "written_at"})
# from the run's summary, not its csv: the configuration's protocol-conformance certificate
# (<NA> for verdicts and for runs imported before certificates existed)
_FROM_SUMMARY = _one(CONFIGURATION, "conformant")
SPECS: dict[str, list[Column]] = {
    "tasks": [
        *_one(TASK, "task_id"),
        *_one(TASK, "source_id"),
        *_one(SOURCE, "title", "source_title"),
        *_columns(TASK, *(f.name for f in TASK.fields if f.name not in ("task_id", "source_id"))),
    ],
    "selections": [*_SELECTION, _SELECTION_SIZE, _POSITION, *_SELECTION_TASK],
    "official_results": [
        *_one(MODEL_IMPORT, "model"),
        *_one(MODEL_IMPORT, "display_name"),
        *_one(MODEL_IMPORT, "source_condition"),
        *_one(MODEL_IMPORT, "budget_usd"),
        *_columns(TASK_RESULT),
        Column("over_budget", Field("over_budget", bool, doc="in the import's budget audit")),
    ],
    "leaderboard": [
        *_CONDITION,
        *_columns(LEADERBOARD_ROW),
        *_one(ANALYSIS, "confidence"),
        *_WILSON,
        *_ANALYSIS_MORE,
        *_CLUSTERED,
        *_BOUNDS_INTERVAL,
    ],
    "comparisons": [
        *_CONDITION,
        *_one(ANALYSIS, "confidence"),
        *_columns(
            PAIR,
            "a",
            "b",
            "tasks",
            "both",
            "only_a",
            "only_b",
            "neither",
            "difference_difference",
            "difference_standard_error",
            "difference_low",
            "difference_high",
            "p_sign_flip",
            "p_sign_flip_holm",
            "significant",
            "p_exact",
            "p_holm",
            "significant_tasks_as_unit",
            rename={"difference_difference": "difference"},
        ),
        *_CLUSTERED,
        *_RESOLVED,
        Column(
            "infrastructure_marked", PAIR.field("infrastructure").type.field("marked"), "marked"
        ),
    ],
    "run_attempts": [*_RUN, *_columns(ATTEMPTS, rest=False), *_FROM_SUMMARY],
    "run_outcomes": [*_RUN, *_columns(OUTCOMES, rest=False), *_FROM_SUMMARY],
    "receipts": [
        *_PLANNED_SELECTION,
        *_CONFIGURATION,
        *_RECEIPT,
        *_RECEIPT_TRIALS,
        *_METER,
        _PLAN_DIGEST,
    ],
    "ledger_entries": [_ENTRY, *_LEDGER],
    "official_failures": [
        *_one(FAILURE_ANATOMY, "source_condition"),
        *_one(FAILURE_ANATOMY, "budget_usd"),
        *_one(MODEL_IMPORT, "model"),
        *_one(MODEL_IMPORT, "display_name"),
        *_columns(FAILED_TASK, rename={"class": "failure_class"}),
    ],
    "run_failures": [
        *_RUN,
        *_one(CONFIGURATION, "configuration"),
        *_columns(LOCAL_FAILED_TASK, rename={"class": "failure_class"}),
    ],
    "task_table": [
        *_one(TASK_TABLE, "source_condition"),
        *_one(TASK_TABLE, "budget_usd"),
        *_columns(TASK_ROW),
    ],
}
COLUMNS: dict[str, dict[str, object]] = {
    table: {c.name: c.dtype for c in columns} for table, columns in SPECS.items()
}
# a run table's csv holds the Table's columns: the run and the certificate come from its summary
_CSV: dict[str, Table] = {"run_attempts": ATTEMPTS, "run_outcomes": OUTCOMES}


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
    data = read_file_once(os.fspath(path), "artifact", MAX_ARTIFACT_BYTES)
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

    def of_kind(self, kind: Kind | str) -> list[Artifact]:
        name = kind.name if isinstance(kind, Kind) else kind
        return [a for a in self.artifacts if a.kind == name]

    def read(self, artifact: Artifact, keep: bool = True) -> dict:
        """The whole artifact, read through its kind's declaration (schema version and every
        field's type); kept for the next call unless `keep` is false (a model import: read
        once, its records made a frame)."""
        if artifact.path in self._data:
            return self._data[artifact.path]
        file = str(artifact.path)
        declared = KINDS.get(artifact.kind)
        if declared is None:
            raise AfbenchError(
                "an artifact kind this afbench does not know; rebuild it",
                file=file,
                field="kind",
                expected=" or ".join(sorted(KINDS)),
                found=artifact.kind,
            )
        raw = read_file_once(os.fspath(artifact.path), "artifact", MAX_ARTIFACT_BYTES)
        found = _KIND_FIRST.match(raw[:HEAD_BYTES])
        if found is not None and json.loads(found.group(1)) != artifact.kind:
            raise AfbenchError(
                "artifact changed while being read", file=file, expected=artifact.kind
            )
        data = lines.parse(declared, raw, file)  # by its layout when afbench wrote it so
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

    def need(self, kind: Kind, what: str, command: str) -> list[Artifact]:
        found = self.of_kind(kind)
        if not found:
            raise AfbenchError(
                f"no {what} in this folder",
                file=str(self.root),
                expected=f"an artifact of kind '{kind.name}', as `afbench {command}` writes",
            )
        return found

    def one(self, kind: Kind, what: str, command: str) -> Artifact:
        found = self.need(kind, what, command)
        if len(found) > 1:
            raise AfbenchError(
                f"{len(found)} {what}s in this folder; give the folder of one",
                file=str(self.root),
                expected=f"one artifact of kind '{kind.name}'",
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


def _values(records: list[dict], columns: list[Column]) -> dict[str, list]:
    """Each column's values from records of a declared shape (read through it: every key
    there, of its type), the letter displays as their text."""
    from afbench.report.page import letters_text

    out = {}
    for c in columns:
        values = (
            [r.get(c.key) for r in records] if c.field.optional else [r[c.key] for r in records]
        )
        out[c.name] = list(map(letters_text, values)) if c.field.type == LETTERS else values
    return out


# --- the tables -----------------------------------------------------------------------------
def tasks(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """One row per task of the catalog (MANIFEST order)."""
    folder = _folder(root)
    artifact = folder.one(CATALOG, "task catalog", "tasks")
    data = folder.read(artifact)
    titles = {source["source_id"]: source["title"] for source in data["sources"]}
    columns = [c for c in SPECS["tasks"] if c.name != "source_title"]
    rows = pd.DataFrame(_values(data["tasks"], columns), index=pd.RangeIndex(len(data["tasks"])))
    rows["source_title"] = rows["source_id"].map(titles)
    unknown = rows.index[rows["source_title"].isna()]
    if len(unknown):
        raise AfbenchError(
            "task's source is not among the catalog's sources",
            file=str(artifact.path),
            field=f"tasks[{unknown[0]}].source_id",
            expected="a source_id of the catalog's sources",
            found=rows["source_id"].iloc[unknown[0]],
        )
    return folder.frame(rows, "tasks", [artifact])


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
        data = folder.read(artifact)
        return (data["source_condition"], float(data["budget_usd"])), artifact, data

    return _unique(map(keyed, found), what)


def official_results(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """One row per model x task of the official imports (one import per model, source
    condition and budget), as the authors reported them: nothing dropped or capped."""
    folder = _folder(root)
    found = folder.need(MODEL_IMPORT, "official results import", "import-model")
    parts = _unique(map(lambda a: _import_part(folder, a), found), "official results imports")
    rows = pd.concat([part for _, _, part in parts], ignore_index=True)
    return folder.frame(rows, "official_results", [a for _, a, _ in parts])


_RESULT_COLUMNS = _columns(TASK_RESULT)


def _import_part(folder: Folder, artifact: Artifact) -> tuple[tuple, Artifact, pd.DataFrame]:
    """One model import's records as plain columns, keyed by (condition, budget, model)."""
    data = folder.read(artifact, keep=False)
    condition, budget, model = data["source_condition"], float(data["budget_usd"]), data["model"]
    over = {o["task_id"] for o in data["budget_audit"]["over_budget"]}
    records = data["records"]
    part = pd.DataFrame(_values(records, _RESULT_COLUMNS), index=pd.RangeIndex(len(records)))
    part.insert(0, "model", model)
    part.insert(1, "display_name", data["display_name"])
    part.insert(2, "source_condition", condition)
    part.insert(3, "budget_usd", budget)
    part["over_budget"] = part["task_id"].isin(over).astype(object)
    part.loc[part["cost_usd"].isna(), "over_budget"] = None
    _check_finished(part, str(artifact.path))
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


def _cells(row: dict, columns: list[Column]) -> dict:
    """One record's columns."""
    return {name: values[0] for name, values in _values([row], columns).items()}


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
    board_columns = _columns(LEADERBOARD_ROW)
    rows, used = [], [artifact for _, artifact, _ in summaries]
    for key, _, data in summaries:
        board = data["leaderboard"]
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
                    **_cells(row, board_columns),
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
    """Per model: the analysis' confidence, Wilson interval and standard error, and its
    clustered intervals; refused unless the analysis shows the summary's models and passes (a
    report of another comparison)."""
    data = folder.read(artifact)
    shown = {row["model"]: row for row in data["leaderboard"]}
    expected = {row["model"]: (row["passes"], row["tasks"]) for row in board}
    found = {m: (row["passes"], row["tasks"]) for m, row in shown.items()}
    if found != expected:
        raise AfbenchError(
            "the report's analysis does not come from the comparison summary in this folder "
            "(an older report?): build the report again",
            file=str(artifact.path),
            field="leaderboard",
            expected=f"models and passes {sorted(expected.items())}",
            found=f"{sorted(found.items())}",
        )
    return {
        model: {
            "confidence": data["confidence"],
            **_cells(row, _WILSON),
            **_cells(row, _ANALYSIS_MORE),
            **_cells(row["clustered"], _CLUSTERED),
            **_cells(row["infrastructure_bounds"]["clustered"], _BOUNDS_INTERVAL),
        }
        for model, row in shown.items()
    }


_PAIR_COLUMNS = [c for c in SPECS["comparisons"] if c.field in PAIR.fields]


def comparisons(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """The report's paired comparisons: one row per pair of models (a ranked above b), with
    the discordant counts, the paired difference in success rate (a - b) and its interval,
    the same difference's clustered (CR2) interval over sources with its degrees of freedom
    and design effect, the sign-flip test over sources (p, Holm, `significant`: the decision
    the report shows) and the exact McNemar test over tasks (p, Holm,
    significant_tasks_as_unit), and with the two models' infrastructure errors resolved in
    favour of a, then of b: the exact p and the recomputed Holm sign-flip p (marked when the
    decision shown flips)."""
    folder = _folder(root)
    found = folder.need(ANALYSIS, "report analysis", "report")
    analyses = _by_condition(folder, found, "report analyses")
    rows = []
    for (condition, budget), _, data in analyses:
        for pair in data["paired"]["pairs"]:
            infrastructure = pair["infrastructure"]
            rows.append(
                {
                    "source_condition": condition,
                    "budget_usd": budget,
                    "confidence": data["confidence"],
                    **_cells(pair, _PAIR_COLUMNS),
                    **_cells(pair["clustered"], _CLUSTERED),
                    **{
                        c.name: infrastructure[way][c.key]
                        for c, way in zip(
                            _RESOLVED, ("favour_a", "favour_a", "favour_b", "favour_b"), strict=True
                        )
                    },
                    "infrastructure_marked": infrastructure["marked"],
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
        return (data["run"],), artifact, data

    return [(a, key[0], data) for key, a, data in _unique(map(named, found), "local runs")]


def _run_table(root: str | os.PathLike | Folder, table: str, csv_name: str) -> pd.DataFrame:
    folder = _folder(root)
    declared = _CSV[table]
    parts, runs = [], _runs(folder)
    for artifact, run, data in runs:
        configurations = data["configurations"]
        labels = {c["configuration"] for c in configurations}
        conformant = {c["configuration"]: c.get("conformant") for c in configurations}
        n_tasks = data["selection"]["tasks"]
        path = artifact.path.parent / csv_name
        part = _read_run_csv(path, declared)
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


def _read_run_csv(path: Path, table: Table) -> pd.DataFrame:
    """A run csv as plain values, every cell checked against its declared column: whole
    numbers, finite numbers, a closed set's values, no empty cell where the declaration allows
    no null, and a reward that is 1 for accepted, 0 for rejected and empty otherwise."""
    file = str(path)
    data = read_file_once(os.fspath(path), "run table", MAX_ARTIFACT_BYTES)
    assert data is not None
    header = table.columns
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

    for f in table.fields:
        column, spec = f.name, f.dtype
        values = raw[column].astype(object)
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
    for f in table.fields:
        if f.values:
            what = f"not {'an' if f.name[0] in 'aeiou' else 'a'} {f.name}"
            refuse(~raw[f.name].isin(f.values), f.name, what, " / ".join(f.values))
    outcome = raw["outcome"]
    known = outcome.isin(table.field("outcome").values)
    expected_reward = outcome.map(_REWARD).fillna("")
    refuse(
        (raw["reward"] != expected_reward) & known,
        "reward",
        "reward contradicts the outcome (accepted 1, rejected 0, otherwise empty: "
        "an error is never 0)",
        "1 / 0 / empty by outcome",
    )
    for f in table.fields:
        if not f.null and not f.values:
            refuse(raw[f.name] == "", f.name, "empty value", "a non-empty value")
    raise_if(problems)
    return pd.DataFrame(out)


# --- the tables together: what a folder has, and export -------------------------------------
def _part(records: list[dict], columns: list[Column], head: dict) -> pd.DataFrame:
    """Records of a declared shape as a frame, each row led by the `head` values."""
    part = pd.DataFrame(_values(records, columns), index=pd.RangeIndex(len(records)))
    for i, (name, value) in enumerate(head.items()):
        part.insert(i, name, value)
    return part


def _joined(parts: list[pd.DataFrame]) -> pd.DataFrame | list:
    return pd.concat(parts, ignore_index=True) if parts else []


def official_failures(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """Every failed task of every official model with its failure class
    (afbench.task_analysis.anatomy: one class per task, by the stated precedence), its obligations,
    stop reason and cost."""
    folder = _folder(root)
    found = folder.need(FAILURE_ANATOMY, "official failure anatomy", "job analyse-failures")
    columns = _columns(FAILED_TASK, rename={"class": "failure_class"})
    rows, used = [], []
    for (condition, budget), artifact, data in _by_condition(folder, found, "failure anatomies"):
        used.append(artifact)
        for model in data["models"]:
            head = {
                "source_condition": condition,
                "budget_usd": budget,
                "model": model["model"],
                "display_name": model["display_name"],
            }
            rows.append(_part(model["failed_tasks"], columns, head))
    return folder.frame(_joined(rows), "official_failures", used)


def run_failures(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """Every task a local run configuration did not get accepted, with its failure class and,
    for an infrastructure failure, the advisory class of its exception types (never a
    verdict)."""
    folder = _folder(root)
    found = folder.need(RUN_FAILURE_ANATOMY, "run failure anatomy", "job analyse-run-failures")

    def named(artifact: Artifact) -> tuple:
        data = folder.read(artifact)
        return (data["run"],), artifact, data

    columns = _columns(LOCAL_FAILED_TASK, rename={"class": "failure_class"})
    rows, used = [], []
    for (run,), artifact, data in _unique(map(named, found), "run failure anatomies"):
        used.append(artifact)
        for config in data["configurations"]:
            head = {"run": run, "configuration": config["configuration"]}
            rows.append(_part(config["failed_tasks"], columns, head))
    return folder.frame(_joined(rows), "run_failures", used)


def task_table(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """The task table (afbench.task_analysis.items): per task its solves, discrimination, Rasch
    difficulty with its posterior SD (<NA> when the shuffled controls fitted as well), and whether
    it is in the discriminative subset."""
    folder = _folder(root)
    found = folder.need(TASK_TABLE, "task table", "job analyse-tasks")
    columns = _columns(TASK_ROW)
    rows, used = [], []
    for (condition, budget), artifact, data in _by_condition(folder, found, "task tables"):
        used.append(artifact)
        head = {"source_condition": condition, "budget_usd": budget}
        rows.append(_part(data["tasks"], columns, head))
    return folder.frame(_joined(rows), "task_table", used)


def selections(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """One row per task of every selection in the folder (those of the config, a task
    table's discriminative subset, an upgrade's comparable subset), in each selection's order,
    with the selection's name, hash and size."""
    folder = _folder(root)
    found = folder.need(SELECTION, "task selection", "tasks")

    def named(artifact: Artifact) -> tuple:
        data = folder.read(artifact)
        return (data["name"],), artifact, data

    rows, used = [], []
    for _, artifact, data in _unique(map(named, found), "task selections"):
        used.append(artifact)
        head = _cells(data, _SELECTION) | {_SELECTION_SIZE.name: data["counts"]["tasks"]}
        part = _part(data["tasks"], _SELECTION_TASK, head)
        part.insert(len(head), _POSITION.name, range(1, len(part) + 1))
        rows.append(part)
    return folder.frame(_joined(rows), "selections", used)


def _first(item: tuple) -> object:
    return item[0]


def _trial_of(folder: Folder, artifact: Artifact) -> tuple:
    """A trial receipt keyed by its trial: selection, configuration (agent, model), task and
    attempt, as `snakemake execute` names its file."""
    data = folder.read(artifact)
    made = data["plan"]
    key = (made["selection"]["name"], made["agent"], made["model"] or "", data["task_id"])
    return (*key, data["attempt"]), artifact, data


def receipts(root: str | os.PathLike | Folder) -> pd.DataFrame:
    """One row per trial receipt of `snakemake execute` (a task's attempt by a configuration):
    what the job did with it (`action`), its outcome or why it did not run, its cap, what Harbor
    recorded that it cost, what afbench's meter saw, and the plan and argv it ran under. The
    receipts hold no times: the live ledger's entries (ledger_entries) do."""
    folder = _folder(root)
    found = folder.need(TRIAL_RECEIPT, "trial receipt", "job run-trial")
    # by selection, configuration, task, then the attempt as a number
    read = sorted(_unique((_trial_of(folder, a) for a in found), "trial receipts"), key=_first)
    rows = []
    for _, _, data in read:
        made, costs = data["plan"], [t["cost_usd"] for t in data["trials"]]
        recorded = [c for c in costs if c is not None]
        rows.append(
            {
                **_cells(made["selection"], _PLANNED_SELECTION),
                **_cells(made, _CONFIGURATION),
                **_cells(data, _RECEIPT),
                "cost_usd": sum(recorded) if recorded else None,
                "trials": len(costs),
                **(_cells(data["meter"], _METER) if data["meter"] is not None else {}),
                "plan_sha256": made["sha256"],
            }
        )
    return folder.frame(rows, "receipts", [a for _, a, _ in read])


def ledger_entries(
    root: str | os.PathLike | Folder, entries: Iterable[dict] | None = None
) -> pd.DataFrame:
    """The live cost ledger's entries of the folder's trials, in the ledger's order: every
    reservation, cost, release, interruption and refusal with its time. The live ledger is no
    artifact (it lies beside the Harbor jobs folder, which revisions may share): `entries` are
    its lines as `afbench.execution.ledger.read_entries` reads them, and those of the trials whose
    receipts the folder holds (by job name) are kept. `entry` is the line's place among the
    ledger's entries."""
    folder = _folder(root)
    found = folder.need(TRIAL_RECEIPT, "trial receipt", "job run-trial")
    if entries is None:
        raise AfbenchError(
            "the live cost ledger is no artifact of the folder: give its entries "
            "(afbench.execution.ledger.read_entries; `afbench export --ledger FILE`)",
            file=str(folder.root),
            field="ledger",
            expected="the entries of results/<revision>/jobs.ledger.jsonl",
        )
    jobs = {folder.read(artifact)["job_name"] for artifact in found}
    rows = [
        {_ENTRY.name: number, **_cells(entry, _LEDGER)}
        for number, entry in enumerate(entries, start=1)
        if entry["job_name"] in jobs
    ]
    return folder.frame(rows, "ledger_entries", found)


TABLES: dict[str, Callable[..., pd.DataFrame]] = {
    "tasks": tasks,
    "selections": selections,
    "official_results": official_results,
    "leaderboard": leaderboard,
    "comparisons": comparisons,
    "run_attempts": run_attempts,
    "run_outcomes": run_outcomes,
    "receipts": receipts,
    "ledger_entries": ledger_entries,
    "official_failures": official_failures,
    "run_failures": run_failures,
    "task_table": task_table,
}
# the table of the live cost ledger, whose entries the caller reads (the ledger is no artifact)
LEDGER_TABLE = "ledger_entries"
_SOURCE_KIND: dict[str, Kind] = {
    "tasks": CATALOG,
    "selections": SELECTION,
    "official_results": MODEL_IMPORT,
    "leaderboard": SUMMARY,
    "comparisons": ANALYSIS,
    "run_attempts": RUN_SUMMARY,
    "run_outcomes": RUN_SUMMARY,
    "receipts": TRIAL_RECEIPT,
    "ledger_entries": TRIAL_RECEIPT,  # its trials are the receipts'
    "official_failures": FAILURE_ANATOMY,
    "run_failures": RUN_FAILURE_ANATOMY,
    "task_table": TASK_TABLE,
}
assert list(TABLES) == list(SPECS) == list(_SOURCE_KIND)

FORMATS = ("csv", "parquet")


def available_tables(root: str | os.PathLike | Folder, ledger: bool = False) -> list[str]:
    """The tables whose artifacts the folder holds, in TABLES order; the live ledger's only
    with `ledger` (its entries given)."""
    folder = _folder(root)
    return [
        name
        for name, kind in _SOURCE_KIND.items()
        if folder.of_kind(kind) and (ledger or name != LEDGER_TABLE)
    ]


def _check_parquet() -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise AfbenchError(
            # pyarrow is a dependency: an environment without it was not installed from the locks
            "parquet needs pyarrow, which this environment lacks: pip install --require-hashes "
            "-r requirements/run.txt (pyarrow)",
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
    ledger: list[dict] | None = None,
) -> list[Path]:
    """Write each table (default: every table the folder has, and the live ledger's when its
    entries are given) as OUT/<table>.<fmt>. Every table is built first, and the files are
    written as one unit (fsutil.write_outputs): a refusal or an interruption leaves every
    earlier file, never some of each."""
    from afbench.core.fsutil import write_outputs

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
    wanted = list(names) if names else available_tables(folder, ledger=ledger is not None)
    if not wanted:
        raise AfbenchError(
            "no afbench artifacts in this folder",
            file=str(folder.root),
            expected="a results/<revision> folder",
        )
    _check_export_folder(folder.root, Path(output_dir))
    tables = {
        name: TABLES[name](folder, ledger) if name == LEDGER_TABLE else TABLES[name](folder)
        for name in wanted
    }
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
            with probing():  # the folder's own earlier exports are looked at, not read
                found = _sniff(Path(path))
        except AfbenchError:
            continue
        if found is not None and found.kind == ARTIFACT_MANIFEST.name:
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
