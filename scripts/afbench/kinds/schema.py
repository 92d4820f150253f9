"""JSON Schemas (draft 2020-12) generated from the declarations: one file per kind, shipped in
afbench/data/schemas, so that an artifact directory can be validated without afbench.

    python -m afbench.kinds.schema --write   # regenerate (make schemas)
    python -m afbench.kinds.schema --check   # exit 1 when a shipped file differs"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import ANY, KINDS, NULL, Field, Kind, ListOf, MapOf, Shape

DIALECT = "https://json-schema.org/draft/2020-12/schema"
FOLDER = Path(__file__).resolve().parents[1] / "data" / "schemas"
_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def file_name(kind: Kind) -> str:
    return f"{kind.slug}.schema.json"


def _describe(doc: str, unit: str | None) -> str:
    return "; ".join(part for part in (doc, f"unit: {unit}" if unit else "") if part)


class _Builder:
    """One kind's schema: every named shape once under $defs, referenced where it is used."""

    def __init__(self) -> None:
        self.defs: dict[str, dict] = {}
        self.names: dict[int, str] = {}

    def value(self, of, null: bool = False, values: tuple = (), minimum=None) -> dict:
        if of is ANY:
            return {}
        if of is None or of is NULL:
            return {"type": "null"}
        if isinstance(of, Kind):
            out = {"$ref": f"#/$defs/{self.shape(of.full)}"}
        elif isinstance(of, Shape):
            out = {"$ref": f"#/$defs/{self.shape(of)}"}
        elif isinstance(of, ListOf):
            out = {"type": "array", "items": self.value(of.of, of.null, of.values, of.minimum)}
        elif isinstance(of, MapOf):
            out = {
                "type": "object",
                "additionalProperties": self.value(of.of, of.null, of.values, of.minimum),
            }
            if of.keys:
                out["propertyNames"] = {"description": of.keys}
        else:
            out = {"type": _TYPES[of]}
            if values:
                out["enum"] = list(values)
            if minimum is not None:
                out["minimum"] = minimum
        if not null:
            return out
        if "$ref" in out:
            return {"anyOf": [out, {"type": "null"}]}
        out["type"] = [out["type"], "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out

    def field(self, f: Field) -> dict:
        out = self.value(f.type, f.null, f.values, f.minimum)
        if f.pattern is not None:
            # \Z, as the config schema: $ would let a trailing newline through
            out = {**out, "pattern": f"^{f.pattern}\\Z"}
        described = _describe(f.doc, f.unit)
        if described:
            out = (
                {**out, "description": described}
                if "$ref" not in out
                else {
                    "allOf": [out],
                    "description": described,
                }
            )
        if f.time:
            out["x-afbench-time"] = "ISO-8601 date or datetime"
        return out

    def shape(self, shape: Shape) -> str:
        known = self.names.get(id(shape))
        if known is not None:
            return known
        name = shape.name.replace(" ", "_").replace("-", "_")
        taken = set(self.defs)
        n = 2
        base = name
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        self.names[id(shape)] = name
        self.defs[name] = {}  # reserved before its fields (a shape may nest its own name)
        self.defs[name] = self.object(shape)
        return name

    def object(self, shape: Shape) -> dict:
        out: dict = {"type": "object"}
        if shape.doc:
            out["description"] = shape.doc
        out["properties"] = {f.name: self.field(f) for f in shape.fields}
        out["required"] = [f.name for f in shape.fields if not f.optional]
        out["additionalProperties"] = False
        return out


def kind_schema(kind: Kind) -> dict:
    builder = _Builder()
    body = builder.object(kind.full)
    return {
        "$schema": DIALECT,
        "$id": f"urn:afbench:schema:{kind.slug}:{kind.version}",
        "title": kind.name,
        **body,
        "$defs": dict(sorted(builder.defs.items())),
    }


def schema_bytes(kind: Kind) -> bytes:
    return (json.dumps(kind_schema(kind), indent=2, ensure_ascii=False) + "\n").encode()


def schemas() -> dict[str, bytes]:
    """Every kind's schema file: name -> bytes, and the index of kinds by name."""
    files = {file_name(kind): schema_bytes(kind) for kind in KINDS.values()}
    index = {
        "note": "afbench artifact schemas: each JSON artifact's `kind` names its schema file",
        "kinds": {
            kind.name: {"schema": file_name(kind), "schema_version": kind.version}
            for kind in KINDS.values()
        },
    }
    files["index.json"] = (json.dumps(index, indent=2, ensure_ascii=False) + "\n").encode()
    return files


def differences(folder: Path = FOLDER) -> list[str]:
    """The shipped schema files that differ from the declarations (or are missing, or extra)."""
    wanted = schemas()
    present = {p.name for p in folder.glob("*.json")} if folder.is_dir() else set()
    out = [f"{name}: extra" for name in sorted(present - set(wanted))]
    for name, data in wanted.items():
        path = folder / name
        if not path.is_file():
            out.append(f"{name}: missing")
        elif path.read_bytes() != data:
            out.append(f"{name}: differs")
    return out


def write(folder: Path = FOLDER) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.json"):
        if stale.name not in schemas():
            stale.unlink()
    written = []
    for name, data in schemas().items():
        path = folder / name
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
        written.append(path)
    return written


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        written = write()
        print(f"{len(written)} schema files in {FOLDER}")
        return 0
    if argv == ["--check"]:
        found = differences()
        for line in found:
            print(line)
        if found:
            print("regenerate them: make schemas")
        return 1 if found else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
