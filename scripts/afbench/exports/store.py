"""The results store: every revision's tables (afbench.frames) as Parquet in one dataset,
partitioned by revision the Hive way, and SQL over it (DuckDB, embedded).

    <store root>/<table>/revision=<revision>/part-0.parquet

Each table's Arrow schema comes from its column declarations (frames.SPECS): a column's type
from its declared dtype, its meaning (the field's doc) in the field's metadata; nothing is
inferred from the values. A table whose artifact this revision lacks is written empty, with
its schema, so every revision has every table. The files are deterministic: the rows in the
frames' order, no timestamps, no pandas metadata, one row group, fixed compression; writing a
revision again writes the same bytes. Each file is replaced atomically (fsutil), and only this
revision's partition is written: another revision's files are never touched.

The root is a local folder or an S3 URL (s3://bucket/prefix). The job is handed its
partitions as files, so Snakemake's storage maps them as any output: an S3 root goes through
its S3 storage plugin (and with S3 as the default storage, a local root lies beside the
results under the same prefix). The query reads an S3 root with pyarrow's S3 file system (the
endpoint and keys of the storage plugin's settings, else AWS's own variables) and hands DuckDB
Arrow datasets: DuckDB's own S3 reader is an extension it downloads, never offline.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from afbench.core.errors import AfbenchError

PART = "part-0.parquet"
S3 = "s3://"
# frames.TABLES' names, here for the workflow, which names the store's files when it parses
# and must not import pandas for that; store_revision and a test hold the two equal
TABLES = (
    "tasks",
    "selections",
    "official_results",
    "leaderboard",
    "comparisons",
    "run_attempts",
    "run_outcomes",
    "receipts",
    "ledger_entries",
    "official_failures",
    "run_failures",
    "task_table",
)
FORMATS = ("table", "csv", "json")
# where the query finds an S3 endpoint and keys: the storage plugin's settings first (as
# profiles/slurm-s3 passes them to the pipeline), then AWS's own names
S3_ENDPOINT = ("SNAKEMAKE_STORAGE_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
S3_REGION = ("SNAKEMAKE_STORAGE_S3_REGION", "AWS_REGION", "AWS_DEFAULT_REGION")
S3_KEYS = ("SNAKEMAKE_STORAGE_S3_ACCESS_KEY", "SNAKEMAKE_STORAGE_S3_SECRET_KEY")
S3_TOKEN = "SNAKEMAKE_STORAGE_S3_TOKEN"


def on_s3(root: str | os.PathLike) -> bool:
    return str(root).startswith(S3)


def default_root(results_dir: str | os.PathLike | None = None) -> str:
    """Where `store.root: null` puts the store: a `store` folder beside the results folder
    (with the default results_dir, `store` in the project's folder)."""
    from afbench.core.settings import default

    return str(Path(results_dir or default("results_dir")).parent / "store")


def relative(table: str, revision: str) -> str:
    return f"{table}/revision={revision}/{PART}"


def partition(root: str | os.PathLike, table: str, revision: str) -> Path:
    """Where a revision's table lives in a local store."""
    return Path(root) / relative(table, revision)


def revision_files(root: str, revision: str) -> list[str]:
    """Every table's partition of one revision, as the workflow names its outputs: paths under
    a local root, URLs under an S3 one."""
    if on_s3(root):
        return [f"{root.rstrip('/')}/{relative(table, revision)}" for table in TABLES]
    return [str(partition(root, table, revision)) for table in TABLES]


def meaning(column) -> str:
    return " ".join((column.field.doc or "").split())


def _arrow_type(column):
    import pyarrow as pa

    from afbench.frames import UTC_TIME

    dtype = column.dtype
    if isinstance(dtype, tuple) or dtype in ("category", "string"):
        return pa.string()  # a categorical is text in the store: SQL compares it as text
    return {
        "Int64": pa.int64(),
        "Float64": pa.float64(),
        "boolean": pa.bool_(),
        UTC_TIME: pa.timestamp("us", tz="UTC"),
    }[dtype]


def declared(table: str) -> list:
    """A table's columns as its frame has them: each name once, where it is first declared."""
    from afbench.frames import SPECS

    first: dict = {}
    for column in SPECS[table]:
        first.setdefault(column.name, column)
    return list(first.values())


def schema(table: str):
    """A table's Arrow schema, from its column declarations."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field(c.name, _arrow_type(c), metadata={"meaning": meaning(c)})
            for c in declared(table)
        ]
    )


def table_parquet(frame, table: str) -> bytes:
    """One table as deterministic Parquet bytes, in its declared schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    declared = schema(table)
    arrays = []
    for field in declared:
        values = frame[field.name]
        if values.dtype.name == "category":  # its dictionary, cast to the declared text
            arrays.append(pa.array(values, from_pandas=True).cast(field.type))
        else:
            arrays.append(pa.array(values, type=field.type, from_pandas=True))
    data = pa.Table.from_arrays(arrays, schema=declared)
    sink = pa.BufferOutputStream()
    pq.write_table(
        data,
        sink,
        row_group_size=max(len(frame), 1),
        compression="zstd",
        compression_level=3,
        use_dictionary=True,
        write_statistics=True,
        store_schema=True,
    )
    return sink.getvalue().to_pybytes()


def empty_frame(table: str):
    from afbench.frames import typed

    return typed([], table)


def store_paths(outputs: list, revision: str) -> dict[str, Path]:
    """The partition of each table, from the paths a job was handed: one store, every table
    once, this revision's (so a job can only ever write its own partitions)."""
    if not outputs:
        raise AfbenchError("no partition to write", field="--output", expected="one per table")
    root = Path(outputs[0]).parents[2]
    wanted = {table: partition(root, table, revision) for table in TABLES}
    given = [Path(path) for path in outputs]
    for path in given:
        if path not in wanted.values():
            raise AfbenchError(
                "not a partition of this revision in this store",
                file=str(path),
                field="--output",
                expected=f"{root}/<table>/revision={revision}/{PART}, a table of {list(TABLES)}",
            )
    if sorted(given) != sorted(wanted.values()):
        missing = [str(p) for p in wanted.values() if p not in given]
        raise AfbenchError(
            "every table's partition is written together, each once",
            field="--output",
            expected=", ".join(str(p) for p in wanted.values()),
            found=f"missing {missing[0]}" if missing else "one given twice",
        )
    return wanted


def store_revision(
    results: str | os.PathLike, outputs: list, revision: str, ledger: Iterable[dict] = ()
) -> list[Path]:
    """Write every table of one revision's results folder into its partitions of the store
    (`outputs`: store_paths), replaced as one unit; `ledger`: the live cost ledger's entries
    (afbench.execution.ledger.read_entries), of which those of the folder's trials are stored."""
    from afbench import frames
    from afbench.core.fsutil import write_outputs

    assert tuple(frames.TABLES) == TABLES, "store.TABLES is not frames.TABLES"
    paths = store_paths(outputs, revision)
    folder = frames.Folder(results)
    if folder.revision is not None and folder.revision != revision:
        raise AfbenchError(
            "the results folder is of another revision",
            file=str(results),
            field="release.revision",
            expected=revision,
            found=folder.revision,
        )
    present = set(frames.available_tables(folder, ledger=True))

    def built(table: str):
        if table not in present:
            return empty_frame(table)
        if table == frames.LEDGER_TABLE:
            return frames.ledger_entries(folder, ledger)
        return frames.TABLES[table](folder)

    tables = {table: built(table) for table in TABLES}
    written = [(paths[t], table_parquet(f, t)) for t, f in tables.items()]
    rows = ", ".join(f"{t} {len(f):,}" for t, f in tables.items())
    write_outputs(written, about=f"store: revision {revision} (rows: {rows})")
    return [path for path, _ in written]


# --- SQL over the store -----------------------------------------------------------------------
_FILE = re.compile(rf"(?P<table>[a-z_]+)/revision=(?P<revision>[^/]+)/{re.escape(PART)}")


class Stored:
    """What a store holds: each table's partition files by revision, and where they are read
    from (a local folder, or an S3 prefix through `filesystem`)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = str(root)
        self.filesystem = None
        self.base = self.root.removeprefix(S3).rstrip("/")  # an S3 root's bucket and prefix
        self.files: dict[str, dict[str, str]] = {}
        if on_s3(root):
            self._list_s3()
        else:
            self._list_local()
        if not self.files:
            raise AfbenchError(
                "the store holds no table: build it with `snakemake store`",
                file=self.root,
                expected=f"<table>/revision=<revision>/{PART}",
            )
        self.revisions = sorted({r for found in self.files.values() for r in found})

    def _list_local(self) -> None:
        base = Path(self.root)
        if not base.is_dir():
            raise AfbenchError(
                "no results store here (no such folder): build it with `snakemake store`",
                file=self.root,
                expected="a store folder of <table>/revision=<revision>/part-0.parquet",
            )
        for table in TABLES:
            for path in sorted((base / table).glob(f"revision=*/{PART}")):
                revision = path.parent.name.removeprefix("revision=")
                self.files.setdefault(table, {})[revision] = str(path)

    def _list_s3(self) -> None:
        from pyarrow.fs import FileSelector, FileType

        self.filesystem = s3_filesystem()
        try:
            found = self.filesystem.get_file_info(
                FileSelector(self.base, recursive=True, allow_not_found=True)
            )
        except OSError as exc:
            raise unreachable(self.root, exc) from None
        for info in sorted(found, key=lambda i: i.path):
            match = _FILE.fullmatch(info.path.removeprefix(f"{self.base}/"))
            if info.type == FileType.File and match and match["table"] in TABLES:
                self.files.setdefault(match["table"], {})[match["revision"]] = info.path

    def shown(self, path: str) -> str:
        """A file as its user names it: a local path, or its S3 URL."""
        return path if self.filesystem is None else f"{S3}{path}"

    def location(self, table: str, revision: str) -> str:
        """Where a revision's partition of the table is, or would be."""
        if self.filesystem is None:
            return str(partition(self.root, table, revision))
        return self.shown(f"{self.base}/{relative(table, revision)}")

    def footer(self, path: str):
        """The file's Parquet footer: a damaged file is refused by name, before any query."""
        import pyarrow.parquet as pq

        try:
            return pq.read_metadata(path, filesystem=self.filesystem)
        except OSError as exc:
            if self.filesystem is not None:
                raise unreachable(self.shown(path), exc) from None
            raise AfbenchError(f"cannot read: {_reason(exc)}", file=path) from None
        except ValueError as exc:  # pyarrow's ArrowInvalid: not Parquet, or cut short
            raise AfbenchError(
                f"not a readable Parquet file ({_reason(exc)}); write its revision again with "
                "`snakemake store`",
                file=self.shown(path),
            ) from None

    def check(self, table: str, footers: dict[str, object]) -> None:
        """Every revision has the table's partition, each in the table's declared schema."""
        found = self.files.get(table, {})
        for revision in self.revisions:
            if revision not in found:
                raise AfbenchError(
                    f"revision {revision} has no partition of table {table} (its other tables "
                    "are in the store): write the revision again with `snakemake store`",
                    file=self.location(table, revision),
                    expected="every table's partition of every revision",
                    found="no such file",
                )
        declared = _columns_of(schema(table))
        for path in found.values():
            written = _columns_of(footers[path].schema.to_arrow_schema())
            if written == declared:
                continue
            # the first column that differs (a missing or an extra one included)
            pairs = zip([*declared, None], [*written, None], strict=False)
            at = next(i for i, (want, have) in enumerate(pairs) if want != have)
            differs = declared[at] if at < len(declared) else written[at]
            raise AfbenchError(
                f"not table {table}'s declared columns (written by another afbench?): write its "
                "revision again with `snakemake store`",
                file=self.shown(path),
                field=differs[0],
                expected=" ".join(declared[at]) if at < len(declared) else "no more columns",
                found=" ".join(written[at]) if at < len(written) else "no more columns",
            )

    def view(self, con, table: str) -> None:
        """The table as a view over its partitions, `revision` from their paths (an empty one
        in the declared schema when the store has no file of it)."""
        import pyarrow as pa

        files = list(self.files.get(table, {}).values())
        with_revision = _with_revision(table)
        if not files:
            con.register(table, with_revision.empty_table())
        elif self.filesystem is None:
            listed = ", ".join(_sql_text(p) for p in files)
            con.execute(
                f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listed}], "
                "hive_partitioning = true, hive_types = {'revision': 'VARCHAR'})"
            )
        else:
            import pyarrow.dataset as ds

            revision = ds.partitioning(pa.schema([with_revision.field("revision")]), flavor="hive")
            dataset = ds.dataset(
                files,
                schema=with_revision,
                format="parquet",
                filesystem=self.filesystem,
                partitioning=revision,
                partition_base_dir=f"{self.base}/{table}",
            )
            con.register(table, dataset)


def _columns_of(arrow_schema) -> list[tuple[str, str]]:
    return [(f.name, str(f.type)) for f in arrow_schema]


def _given(*names: str) -> str | None:
    """The first of these environment variables that is set (and not empty)."""
    return next((os.environ[name] for name in names if os.environ.get(name)), None)


def s3_filesystem():
    """pyarrow's S3 file system with the storage plugin's settings, else AWS's own (its
    timeouts and retries only keep an endpoint that never answers from hanging the query)."""
    from pyarrow.fs import AwsStandardS3RetryStrategy, S3FileSystem

    options: dict = {
        "connect_timeout": 10,
        "request_timeout": 60,
        "retry_strategy": AwsStandardS3RetryStrategy(max_attempts=3),
    }
    if _given(*S3_ENDPOINT):
        options["endpoint_override"] = _given(*S3_ENDPOINT)
    if _given(*S3_REGION):
        options["region"] = _given(*S3_REGION)
    key, secret = (_given(name) for name in S3_KEYS)
    if key and secret:  # else AWS's own chain: AWS_ACCESS_KEY_ID, ~/.aws, ...
        options |= {"access_key": key, "secret_key": secret, "session_token": _given(S3_TOKEN)}
    return S3FileSystem(**options)


def unreachable(where: str, exc: OSError) -> AfbenchError:
    endpoint = _given(*S3_ENDPOINT)
    return AfbenchError(
        f"cannot read the results store on S3 ({_reason(exc)})",
        file=where,
        expected=f"an S3 endpoint that answers ({' or '.join(S3_ENDPOINT)})",
        found=endpoint or "AWS S3 (no endpoint set)",
    )


def _reason(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _sql_text(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _refused(exc: Exception) -> AfbenchError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return AfbenchError(f"the query is refused: {first}", field="SQL")


def _named(sql: str) -> list[str]:
    """The store's tables the query names, from DuckDB's own parse of it (its syntax tree as
    JSON: every base table read, a CTE's name too). Unparsable SQL names none: running it
    refuses it."""
    import json

    import duckdb

    con = duckdb.connect(":memory:")
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])
    except duckdb.Error:
        return []
    finally:
        con.close()
    named: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "BASE_TABLE" and isinstance(node.get("table_name"), str):
                named.add(node["table_name"].lower())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return [table for table in TABLES if table in named]


def _with_revision(table: str):
    import pyarrow as pa

    return schema(table).append(pa.field("revision", pa.string()))


def query(root: str | os.PathLike, sql: str) -> tuple[list[str], list[tuple]]:
    """The query's column names and rows, each store table a view over all its revisions. Every
    file's footer is read first (a damaged one is refused by name), then each table the query
    names is checked whole (every revision's partition there, in its declared schema); bad SQL
    is one AfbenchError."""
    import duckdb

    stored = Stored(root)
    footers = {
        path: stored.footer(path) for found in stored.files.values() for path in found.values()
    }
    for table in _named(sql):
        stored.check(table, footers)
    con = duckdb.connect(":memory:")
    try:
        con.execute("SET TimeZone = 'UTC'")  # the ledger's times, whatever the machine's zone
        for table in TABLES:
            stored.view(con, table)
        try:
            result = con.execute(sql)
            if result.description is None:
                return [], []
            return [d[0] for d in result.description], result.fetchall()
        except duckdb.Error as exc:
            raise _refused(exc) from None
    finally:
        con.close()


def describe() -> list[tuple[str, str, str, str]]:
    """Every table's columns: (table, column, SQL type, meaning), `revision` last."""
    rows = []
    for table in TABLES:
        for column in declared(table):
            rows.append((table, column.name, str(_arrow_type(column)), meaning(column)))
        rows.append((table, "revision", "string", "the release revision (the partition)"))
    return rows


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def render(columns: list[str], rows: list[tuple], fmt: str) -> str:
    """The result as aligned text, CSV or JSON (a list of objects)."""
    if fmt == "json":
        import json

        return json.dumps([dict(zip(columns, r, strict=True)) for r in rows], default=str) + "\n"
    if fmt == "csv":
        import csv
        import io

        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([[_cell(v) for v in r] for r in rows])
        return out.getvalue()
    if fmt != "table":
        raise AfbenchError("unknown format", field="--format", expected=" or ".join(FORMATS))
    cells = [columns, *[[_cell(v) for v in r] for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"
