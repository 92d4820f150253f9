"""Every artifact kind afbench writes, declared once: its fields, their types and units, and
the kind's own schema version. Writers build records from the declaration, readers read
through it, and the JSON Schemas shipped in afbench/data/schemas are generated from it.

A declaration is plain frozen data (the small library here); the kinds themselves live in one
module per concern (release, tasks, official, runs, execution, analysis, upgrade, manifest)
and are all re-exported here:

    from afbench import kinds
    catalog = kinds.CATALOG.read(path)        # strict JSON + kind + version + every type
    record = kinds.SELECTION.record(**fields) # every declared field, none other, in order

A field's type is `str`, `int`, `float` (any JSON number), `bool`, `None` (always null), a
`Shape` (a nested object of declared fields), `ListOf(...)`, `MapOf(...)` (an object whose
keys are data: task ids, model slugs, paths) or `ANY` (a JSON value afbench does not read).
The order of a kind's fields is the order of its keys in the file. A declaration is frozen and
is itself: compared and hashed by identity, never by walking its fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from pathlib import Path

from afbench.core.errors import AfbenchError


class _Any:
    """Any JSON value: a part of an artifact that afbench writes for people and never reads
    (for instance a Harbor setting passed through as found)."""

    def __repr__(self) -> str:
        return "ANY"


ANY = _Any()
NULL = type(None)


class _Declaration:
    """Frozen once made (slots, no assignment), and compared and hashed by identity. Plain
    classes, not dataclasses: a job that reads one artifact should not pay for importing
    dataclasses and inspect."""

    __slots__ = ()

    def _set(self, **values: object) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: declare another")

    def __repr__(self) -> str:
        name = getattr(self, "name", None)
        return f"{type(self).__name__}({name!r})" if name else f"{type(self).__name__}(...)"


class ListOf(_Declaration):
    """A JSON array whose items are all of one type: `null` items may be null, `values` a
    closed set of item values in its documented order."""

    __slots__ = ("doc", "minimum", "null", "of", "values")

    def __init__(
        self, of: object, null: bool = False, values: tuple = (), minimum=None, doc: str = ""
    ) -> None:
        self._set(of=of, null=null, values=values, minimum=minimum, doc=doc)


class MapOf(_Declaration):
    """A JSON object whose keys are data (task ids, model slugs, paths, names: `keys` says
    which, for people), each value of one type."""

    __slots__ = ("doc", "keys", "minimum", "null", "of", "values")

    def __init__(
        self,
        of: object,
        null: bool = False,
        values: tuple = (),
        minimum=None,
        keys: str = "",
        doc: str = "",
    ) -> None:
        self._set(of=of, null=null, values=values, minimum=minimum, keys=keys, doc=doc)


class Field(_Declaration):
    """One key of a record.

    `null`: the value may be null (unknown, or not applicable: `doc` says which). `optional`:
    the key may be absent (only where a reader must accept records written without it).
    `values`: a closed set, in its documented order (a frame's categories). `category`: an open
    set of repeating values (a frame's category column). `time`: ISO-8601 date or datetime
    text (a frame's UTC time column). `unit`: what a number counts (USD, seconds, tasks).
    `pattern`: a regular expression the whole text must match (a SHA-256 digest: `SHA256`)."""

    __slots__ = (
        "category",
        "doc",
        "minimum",
        "name",
        "null",
        "optional",
        "pattern",
        "time",
        "type",
        "unit",
        "values",
    )

    def __init__(
        self,
        name: str,
        type: object,
        doc: str = "",
        *,
        unit: str | None = None,
        null: bool = False,
        optional: bool = False,
        values: tuple = (),
        minimum: float | None = None,
        category: bool = False,
        time: bool = False,
        pattern: str | None = None,
    ) -> None:
        if pattern is not None and (type is not str or pattern not in FORMS):
            raise TypeError(f"field {name!r}: a pattern is a declared form of text (FORMS)")
        self._set(
            name=name,
            type=type,
            doc=doc,
            unit=unit,
            null=null,
            optional=optional,
            values=values,
            minimum=minimum,
            category=category,
            time=time,
            pattern=pattern,
        )

    @property
    def dtype(self) -> object:
        """The pandas dtype afbench.frames gives this field's column: a tuple is a closed set
        of categories in that order; "category" an open set (the values present, sorted)."""
        if self.values:
            return tuple(self.values)
        if self.time:
            return UTC_TIME
        if self.category:
            return "category"
        dtype = _DTYPES.get(self.type)
        if dtype is None:
            raise TypeError(f"field {self.name!r} ({self.type!r}) is not a column")
        return dtype


UTC_TIME = "datetime64[us, UTC]"
# a SHA-256 digest as afbench writes every one: 64 lowercase hexadecimal digits
SHA256 = "[0-9a-f]{64}"
# a name afbench makes a file or folder of (a Harbor job's, a run's): its form is fsutil's
from afbench.core.fsutil import SAFE_NAME_FORM as SAFE_NAME  # noqa: E402

_DTYPES = {str: "string", int: "Int64", float: "Float64", bool: "boolean"}


class Shape(_Declaration):
    """A JSON object of declared fields (a nested record: a model import's per-task result, a
    leaderboard row, a pair)."""

    __slots__ = ("doc", "fields", "name")

    def __init__(self, name: str, *fields: Field, doc: str = "") -> None:
        self._set(name=name, fields=tuple(fields), doc=doc)
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise TypeError(f"{name}: a field declared twice")

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    def take(self, *names: str) -> tuple[Field, ...]:
        """These fields, as declared here: for a shape made of another's fields (a failed
        task is some of its per-task result's), so that each is declared once."""
        return tuple(map(self.field, names))

    def row(self, **values: object) -> dict:
        """A record of this shape from its fields by name (none missing, none extra), in the
        declared order."""
        _exact(self, values)
        return {f.name: values[f.name] for f in self.fields if f.name in values}

    def rows(self, **columns: Sequence) -> list[dict]:
        """Records of this shape from equally long columns, one per field (none missing, none
        extra), each record's keys in the declared order: the fast way to build thousands."""
        _exact(self, columns)
        names = tuple(f.name for f in self.fields if f.name in columns)
        in_order = [columns[name] for name in names]
        if len({len(column) for column in in_order}) > 1:
            raise TypeError(f"{self.name}: columns of different lengths")
        return list(map(_maker(names), *in_order))

    def view(self, record: dict | View) -> View:
        """`record` (already read through this shape) with its fields as attributes."""
        return View(self, record)

    def check(self, data: object, file: str, where: str = "") -> None:
        """Raise the one error naming `file` and the field, unless `data` is of this shape."""
        _check([data], _spec_of_shape(self), file, lambda _: where.rstrip("."))


class View:
    """A record read through its declaration, its fields by name: `analysis.leaderboard` is
    the record's `leaderboard`, an optional field it lacks is None, and a name its shape does
    not declare is an AttributeError naming the shape (a reader's bug, not the file's), where
    `record["leaderbord"]` would be a KeyError and `.get` a silent None. Nested records stay
    plain data; `view.record` is the whole record, to pass on."""

    __slots__ = ("_fields", "record")

    def __init__(self, shape: Shape, record: dict | View) -> None:
        if isinstance(record, View):
            record = record.record
        object.__setattr__(self, "_fields", _optional_of(shape))
        object.__setattr__(self, "record", record)

    def __getattr__(self, name: str) -> object:
        optional = self._fields[1].get(name)
        if optional is None:
            raise AttributeError(f"{self._fields[0]} declares no field {name!r}")
        return self.record.get(name) if optional else self.record[name]

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a view is read-only: build another record")


_OPTIONAL: dict[int, tuple[Shape, tuple[str, dict[str, bool]]]] = {}


def _optional_of(shape: Shape) -> tuple[str, dict[str, bool]]:
    """The shape's name, and whether each of its fields is optional, by name."""
    found = _OPTIONAL.get(id(shape))
    if found is None or found[0] is not shape:
        found = _OPTIONAL[id(shape)] = (
            shape,
            (shape.name, {f.name: f.optional for f in shape.fields}),
        )
    return found[1]


_MAKERS: dict[tuple[str, ...], Callable[..., dict]] = {}


def _maker(names: tuple[str, ...]) -> Callable[..., dict]:
    """A function of one value per name that returns them as a dict in that order, written as
    a dict display: as fast as the literal a writer would otherwise spell out."""
    made = _MAKERS.get(names)
    if made is None:
        args = ", ".join(f"_{i}" for i in range(len(names)))
        body = ", ".join(f"{name!r}: _{i}" for i, name in enumerate(names))
        scope: dict = {}
        exec(f"def make({args}):\n    return {{{body}}}\n", scope)
        made = _MAKERS[names] = scope["make"]
    return made


def _exact(shape: Shape, given: dict) -> None:
    declared = {f.name for f in shape.fields}
    required = {f.name for f in shape.fields if not f.optional}
    missing = sorted(required - given.keys())
    extra = sorted(given.keys() - declared)
    if missing or extra:
        raise TypeError(
            f"{shape.name}: "
            + "; ".join(
                part
                for part in (
                    f"fields not given: {missing}" if missing else "",
                    f"fields not declared: {extra}" if extra else "",
                )
                if part
            )
        )


class Kind(_Declaration):
    """An artifact kind: its `kind` name, its own schema version and its fields (after `kind`
    and `schema_version`, which every artifact starts with); `full` is the whole record's
    shape, those two first."""

    __slots__ = ("doc", "full", "name", "shape", "version")

    def __init__(self, name: str, *fields: Field, version: int = 1, doc: str = "") -> None:
        head = (
            Field("kind", str, values=(name,), doc="what the artifact is"),
            Field("schema_version", int, values=(version,), doc="this kind's own version"),
        )
        self._set(
            name=name,
            version=version,
            shape=Shape(name, *fields, doc=doc),
            full=Shape(name, *head, *fields, doc=doc),
            doc=doc,
        )

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.shape.fields

    @property
    def what(self) -> str:
        """The kind as messages name a file ('task catalog is not valid JSON')."""
        return self.name.removeprefix("afbench ")

    @property
    def slug(self) -> str:
        """Its schema's file name: afbench/data/schemas/<slug>.schema.json."""
        return self.what.replace(" ", "-")

    def field(self, name: str) -> Field:
        return self.shape.field(name)

    def record(self, **fields: object) -> dict:
        """An artifact of this kind: `kind`, `schema_version`, then every declared field in
        the declared order. A field missing or not declared, or a value not of its declared
        type, is a TypeError (a writer's bug, never the user's input)."""
        _exact(self.shape, fields)
        data = {"kind": self.name, "schema_version": self.version}
        for f in self.fields:
            if f.name in fields:
                data[f.name] = fields[f.name]
        try:
            self.check(data, f"<{self.what} being written>")
        except AfbenchError as exc:
            raise TypeError(f"{self.name}: {exc}") from None
        return data

    def read(self, path: Path | str) -> dict:
        """The artifact at `path`: strict JSON (fsutil.read_json_file), of this kind and schema
        version, every field of its declared type; anything else one AfbenchError naming the
        file and the field."""
        from afbench.core.fsutil import MAX_JSON_BYTES, read_regular_file

        from .lines import parse

        return parse(self, read_regular_file(Path(path), self.what, MAX_JSON_BYTES), str(path))

    def check(self, data: object, file: str) -> dict:
        """`data` (read from `file`) if it is an artifact of this kind, version and shape."""
        head(data, file, self)
        _check([data], _spec_of(self), file, lambda _: "")
        return data  # type: ignore[return-value]

    def view(self, record: dict | View) -> View:
        """`record` (read with `read` or `check`) with its fields as attributes: View."""
        return View(self.full, record)

    def body(self, data: dict) -> dict:
        """A record's fields without `kind` and `schema_version`: what `record` takes, to
        build a record again with a field changed or added."""
        return {k: v for k, v in data.items() if k not in ("kind", "schema_version")}

    def json_schema(self) -> dict:
        from .schema import kind_schema

        return kind_schema(self)


def head(data: object, file: str, *kinds: Kind) -> Kind:
    """The one of `kinds` that `data` says it is, its schema version checked; one clear error
    otherwise (not an artifact, another kind, another version)."""
    found = data.get("kind") if isinstance(data, dict) else None
    for kind in kinds:
        if found == kind.name:
            if data.get("schema_version") != kind.version:  # type: ignore[union-attr]
                raise AfbenchError(
                    "artifact written by an incompatible afbench; rebuild it",
                    file=file,
                    field="schema_version",
                    expected=kind.version,
                    found=data.get("schema_version"),  # type: ignore[union-attr]
                )
            return kind
    raise AfbenchError(
        "not the artifact expected here",
        file=file,
        field="kind",
        expected=" or ".join(k.name for k in kinds),
        found=found if isinstance(data, dict) else type(data).__name__,
    )


def read_any(path: Path | str, *kinds: Kind) -> dict:
    """An artifact that is one of `kinds` (e.g. a receipt or a verified-file record), read
    through its own declaration."""
    from afbench.core.fsutil import read_json_file

    data = read_json_file(Path(path), " or ".join(k.what for k in kinds))
    return head(data, str(path), *kinds).check(data, str(path))


class Table(_Declaration):
    """A CSV artifact: its columns in order, each a declared field (its type says how a cell
    is written and read: empty for null, whole numbers, finite numbers, text)."""

    __slots__ = ("doc", "fields", "name")

    def __init__(self, name: str, *fields: Field, doc: str = "") -> None:
        self._set(name=name, fields=tuple(fields), doc=doc)

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no column {name!r}")

    def take(self, *names: str) -> tuple[Field, ...]:
        """These columns' fields, as declared here (Shape.take)."""
        return tuple(map(self.field, names))

    def dtypes(self) -> dict[str, object]:
        return {f.name: f.dtype for f in self.fields}

    def row(self, **values: object) -> dict:
        """A row of this table from its columns by name (none missing, none extra), in the
        declared order."""
        _exact(self, values)  # type: ignore[arg-type]
        return {f.name: values[f.name] for f in self.fields}


def placeholder(field: Field | ListOf | MapOf) -> object:
    """The least value of a field's declared type: null where null is allowed, else the first
    of a closed set, its least value, "", false, an empty list or map, or a record of
    placeholders. A record built of them is one every reader accepts (tests build the fields
    they care about, and these for the rest)."""
    of = field.type if isinstance(field, Field) else field.of
    if field.null or of is ANY or of is None or of is NULL:
        return None
    if field.values:
        return field.values[0]
    if isinstance(of, Kind):
        of = of.full
    if isinstance(of, Shape):
        return {f.name: placeholder(f) for f in of.fields if not f.optional}
    if isinstance(of, ListOf):
        return []
    if isinstance(of, MapOf):
        return {}
    if of in (int, float):
        return of(field.minimum or 0)
    if isinstance(field, Field) and field.pattern is not None:
        return _LEAST_OF_FORM[field.pattern]
    return of()


# --- checking a value against its declared type ------------------------------------------------
# A list of records is checked a column at a time (the type of every value of one field at
# once), which keeps a model import of 34,100 records as fast to check as to parse; only when
# something is wrong is the value found again, one at a time, to name it.
class _Spec:
    """A value's declared type with its modifiers: what _check needs of a Field or an item."""

    __slots__ = ("minimum", "null", "of", "pattern", "types", "values")

    def __init__(self, of, null=False, values=(), minimum=None, pattern=None) -> None:
        self.of, self.null, self.values, self.minimum = of, null, frozenset(values), minimum
        if pattern is not None:
            import re

            pattern = re.compile(pattern)
        self.pattern = pattern
        if of is ANY:
            self.types = None
        elif isinstance(of, Shape | MapOf):
            self.types = {dict}
        elif isinstance(of, ListOf):
            self.types = {list}
        elif of is float:
            self.types = {int, float}
        elif of is None or of is NULL:
            self.types = {NULL}
        elif of in (str, int, bool):
            self.types = {of}
        else:
            raise TypeError(f"not a declared type: {of!r}")
        if null and self.types is not None:
            self.types = self.types | {NULL}


_SPECS: dict[int, tuple[object, _Spec]] = {}


def _spec_of(holder: Field | ListOf | MapOf | Kind) -> _Spec:
    found = _SPECS.get(id(holder))
    if found is not None and found[0] is holder:
        return found[1]
    if isinstance(holder, Kind):
        spec = _Spec(holder.full)
    else:
        of = holder.type if isinstance(holder, Field) else holder.of
        if isinstance(of, Kind):
            of = of.full
        pattern = holder.pattern if isinstance(holder, Field) else None
        spec = _Spec(of, holder.null, holder.values, holder.minimum, pattern)
    _SPECS[id(holder)] = (holder, spec)
    return spec


def _spec_of_shape(shape: Shape) -> _Spec:
    found = _SPECS.get(id(shape))
    if found is not None and found[0] is shape:
        return found[1]
    spec = _Spec(shape)
    _SPECS[id(shape)] = (shape, spec)
    return spec


def _check(values: list, spec: _Spec, file: str, where: Callable[[int], str]) -> None:
    if not _fine(values, spec):
        for i, value in enumerate(values):
            _one(value, spec, file, where(i))
        raise AssertionError("a column check and a value check disagree")  # pragma: no cover


def _fine(values: list, spec: _Spec) -> bool:
    """Whether every value is of `spec`: the fast, column-wise check (no names)."""
    if spec.types is None:
        return True
    if not set(map(type, values)) <= spec.types:
        return False
    present = [v for v in values if v is not None] if spec.null else values
    if not present:
        return True
    if spec.values and not set(present) <= spec.values:
        return False
    if spec.minimum is not None and min(present) < spec.minimum:
        return False
    if spec.pattern is not None and not all(map(spec.pattern.fullmatch, present)):
        return False
    of = spec.of
    if isinstance(of, Shape):
        return _fine_records(present, of)
    if isinstance(of, ListOf):
        return _fine([x for v in present for x in v], _spec_of(of))
    if isinstance(of, MapOf):
        return _fine([x for v in present for x in v.values()], _spec_of(of))
    return True


def _fine_records(records: list[dict], shape: Shape) -> bool:
    names = shape.names
    optional = any(f.optional for f in shape.fields)
    if optional:
        required = frozenset(f.name for f in shape.fields if not f.optional)
        declared = frozenset(names)
        if not all(required <= r.keys() <= declared for r in records):
            return False
    elif set(map(len, records)) != {len(names)}:
        return False  # with every declared key found below, as many keys means no other
    for f in shape.fields:
        if f.optional:
            column = _present(records, f.name)
        else:
            try:
                column = list(map(itemgetter(f.name), records))
            except KeyError:
                return False
        if not _fine(column, _spec_of(f)):
            return False
    return True


def _present(records: list[dict], name: str) -> list:
    return [r[name] for r in records if name in r]


FORMS = {
    SHA256: "a SHA-256 digest (64 lowercase hexadecimal digits)",
    SAFE_NAME: "a name of letters, digits, '_', '.' and '-', not starting with '.' or '-'",
}
_LEAST_OF_FORM = {SHA256: "0" * 64, SAFE_NAME: "0"}
_JSON_TYPE = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    NULL: "null",
    list: "array",
    dict: "object",
}


def _expected(spec: _Spec) -> str:
    of = spec.of
    if isinstance(of, Shape):
        name = f"an object ({of.name})"
    elif isinstance(of, MapOf):
        name = "an object"
    elif isinstance(of, ListOf):
        name = "a list"
    elif of is float:
        name = "a number"
    else:
        name = _JSON_TYPE.get(of if of is not None else NULL, repr(of))
    return name + (" or null" if spec.null else "")


def _one(value: object, spec: _Spec, file: str, field: str) -> None:
    """Raise the error that names what is wrong with `value` at `field`, if anything is."""
    if spec.types is None:
        return
    if type(value) not in spec.types:
        raise AfbenchError(
            "artifact field has the wrong type",
            file=file,
            field=field or None,
            expected=_expected(spec),
            found=_JSON_TYPE.get(type(value), type(value).__name__),
        )
    if value is None:
        return
    if spec.values and value not in spec.values:
        raise AfbenchError(
            "artifact field holds a value afbench does not write",
            file=file,
            field=field or None,
            expected=" / ".join(sorted(map(str, spec.values))),
            found=value,
        )
    if spec.minimum is not None and value < spec.minimum:  # type: ignore[operator]
        raise AfbenchError(
            "artifact field is below its least value",
            file=file,
            field=field or None,
            expected=f">= {spec.minimum:g}",
            found=value,
        )
    if spec.pattern is not None and not spec.pattern.fullmatch(value):  # type: ignore[arg-type]
        raise AfbenchError(
            "artifact field is not of its declared form",
            file=file,
            field=field or None,
            expected=FORMS.get(spec.pattern.pattern, f"text matching {spec.pattern.pattern}"),
            found=value,
        )
    of = spec.of
    at = f"{field}." if field else ""
    if isinstance(of, Shape):
        declared = set(of.names)
        for f in of.fields:
            if f.name not in value:  # type: ignore[operator]
                if f.optional:
                    continue
                raise AfbenchError("artifact lacks a field", file=file, field=at + f.name)
            _one(value[f.name], _spec_of(f), file, at + f.name)  # type: ignore[index]
        for key in value:  # type: ignore[union-attr]
            if key not in declared:
                raise AfbenchError(
                    "artifact has a field afbench does not write",
                    file=file,
                    field=at + str(key),
                    expected=f"the fields of {of.name}: {', '.join(of.names)}",
                )
    elif isinstance(of, ListOf):
        item = _spec_of(of)
        for i, x in enumerate(value):  # type: ignore[arg-type]
            _one(x, item, file, f"{field}[{i}]")
    elif isinstance(of, MapOf):
        item = _spec_of(of)
        for key, x in value.items():  # type: ignore[union-attr]
            _one(x, item, file, at + str(key))


# --- the kinds, one module per concern ----------------------------------------------------------
# Where each declared name lives. A module is imported when one of its names is first asked
# for (PEP 562), so a job that reads a catalog builds the declarations of tasks and release,
# not all 28 kinds; KINDS (every kind, in this order) and TABLES import them all.
_HOME = {
    "RELEASE_IDENTITY": "release",
    "RECEIPT": "release",
    "VERIFIED_FILE": "release",
    "RELEASE": "release",
    "CATALOG": "tasks",
    "SELECTION": "tasks",
    "PLAN": "tasks",
    "TASK_DIGESTS": "tasks",
    "TASK_CHECKSUMS": "tasks",
    "MODEL_IMPORT": "official",
    "SUMMARY": "official",
    "OFFICIAL_REFERENCE": "official",
    "TASK_RESULT": "official",
    "VERDICT": "runs",
    "RUN_SUMMARY": "runs",
    "OUTCOMES": "runs",
    "ATTEMPTS": "runs",
    "PASS_AT_K": "runs",
    "TRIAL_RECEIPT": "execution",
    "COST_LEDGER": "execution",
    "ANALYSIS_PLAN": "execution",
    "RUN_PLAN": "execution",
    "SEQUENTIAL_DECISION": "execution",
    "SEQUENTIAL_RUN": "execution",
    "ANALYSIS": "analysis",
    "POWER_PLAN": "analysis",
    "TASK_TABLE": "analysis",
    "FAILURE_ANATOMY": "analysis",
    "RUN_FAILURE_ANATOMY": "analysis",
    "UPGRADE_DIFF": "upgrade",
    "UPGRADE_PLAN": "upgrade",
    "CROSS_REVISION": "upgrade",
    "ARTIFACT_MANIFEST": "manifest",
    "DISCOVERY": "manifest",
    "AUDIT": "manifest",
}


def __getattr__(name: str) -> object:
    from importlib import import_module

    if name in ("KINDS", "TABLES"):
        declared = [__getattr__(n) for n in _HOME]
        globals()["KINDS"] = {k.name: k for k in declared if isinstance(k, Kind)}
        globals()["TABLES"] = {t.name: t for t in declared if isinstance(t, Table)}
        return globals()[name]
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ANALYSIS",
    "ANALYSIS_PLAN",
    "ANY",
    "ARTIFACT_MANIFEST",
    "ATTEMPTS",
    "AUDIT",
    "CATALOG",
    "COST_LEDGER",
    "CROSS_REVISION",
    "DISCOVERY",
    "FAILURE_ANATOMY",
    "FORMS",
    "KINDS",
    "MODEL_IMPORT",
    "OFFICIAL_REFERENCE",
    "OUTCOMES",
    "PASS_AT_K",
    "PLAN",
    "POWER_PLAN",
    "RECEIPT",
    "RELEASE",
    "RELEASE_IDENTITY",
    "RUN_FAILURE_ANATOMY",
    "RUN_PLAN",
    "RUN_SUMMARY",
    "SAFE_NAME",
    "SELECTION",
    "SEQUENTIAL_DECISION",
    "SEQUENTIAL_RUN",
    "SHA256",
    "SUMMARY",
    "TABLES",
    "TASK_CHECKSUMS",
    "TASK_DIGESTS",
    "TASK_RESULT",
    "TASK_TABLE",
    "TRIAL_RECEIPT",
    "UPGRADE_DIFF",
    "UPGRADE_PLAN",
    "UTC_TIME",
    "VERDICT",
    "VERIFIED_FILE",
    "Field",
    "Kind",
    "ListOf",
    "MapOf",
    "Shape",
    "Table",
    "View",
    "head",
    "lookup",
    "placeholder",
    "read_any",
]


def lookup(kind: str) -> tuple[str, Kind] | None:
    """The Python name and the declaration of a `kind` name ("afbench task catalog" ->
    ("CATALOG", CATALOG)), looked for first in the concern modules already imported (a record
    just built was declared in one of them), then in all; None for an unknown kind."""
    import sys

    for loaded in (True, False):
        for attr, home in _HOME.items():
            module = sys.modules.get(f"{__name__}.{home}")
            if loaded and module is None:
                continue
            value = __getattr__(attr) if module is None else getattr(module, attr)
            if isinstance(value, Kind) and value.name == kind:
                return attr, value
    return None
