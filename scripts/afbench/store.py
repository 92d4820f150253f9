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

The job is handed its partitions as files, so Snakemake's storage maps them as any output:
with S3 as the default storage the store is on S3 (beside the results, under the same
prefix); store.root itself is a local path (a URL is refused by the setting's schema).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .errors import AfbenchError

PART = "part-0.parquet"
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


def partition(root: str | os.PathLike, table: str, revision: str) -> Path:
    """Where a revision's table lives in the store."""
    return Path(root) / table / f"revision={revision}" / PART


def meaning(column) -> str:
    return " ".join((column.field.doc or "").split())


def _arrow_type(column):
    import pyarrow as pa

    from .frames import UTC_TIME

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
    from .frames import SPECS

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
    from .frames import typed

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
    (afbench.ledger.read_entries), of which those of the folder's trials are stored."""
    from . import frames
    from .fsutil import write_outputs

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
def stored_tables(root: str | os.PathLike) -> dict[str, list[Path]]:
    """The store's tables (those frames declares) and their files, for every revision."""
    base = Path(root)
    if not base.is_dir():
        raise AfbenchError(
            "no results store here (no such folder): build it with `snakemake store`",
            file=str(base),
            expected="a store folder of <table>/revision=<revision>/part-0.parquet",
        )
    found = {}
    for table in TABLES:
        files = sorted((base / table).glob(f"revision=*/{PART}"))
        if files:
            found[table] = files
    if not found:
        raise AfbenchError(
            "the folder holds no store table: build it with `snakemake store`",
            file=str(base),
            expected="<table>/revision=<revision>/part-0.parquet",
        )
    return found


def _sql_text(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def connect(root: str | os.PathLike):
    """An in-memory DuckDB with each of the store's tables a view over its partitions. Each
    file's footer is read once here, so a damaged file is refused by name before the query."""
    import duckdb
    import pyarrow.parquet as pq

    tables = stored_tables(root)
    for files in tables.values():
        for path in files:
            try:
                pq.read_metadata(path)
            except (OSError, ValueError) as exc:
                reason = " ".join(str(exc).split())[:200]
                raise AfbenchError(
                    f"not a readable Parquet file ({reason}); write its revision again with "
                    "`snakemake store`",
                    file=str(path),
                ) from None
    con = duckdb.connect(":memory:")
    for table, files in tables.items():
        listed = ", ".join(_sql_text(p) for p in files)
        con.execute(
            f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listed}], "
            "hive_partitioning = true, hive_types = {'revision': 'VARCHAR'})"
        )
    return con


def query(root: str | os.PathLike, sql: str) -> tuple[list[str], list[tuple]]:
    """The query's column names and rows; bad SQL or an unreadable file is one AfbenchError."""
    import duckdb

    con = connect(root)
    try:
        result = con.execute(sql)
        if result.description is None:
            return [], []
        return [d[0] for d in result.description], result.fetchall()
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise AfbenchError(f"the query is refused: {first}", field="SQL") from None
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
