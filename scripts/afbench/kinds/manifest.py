"""What proves an artifact directory: the artifact manifest; and what `afbench discover` saw in
a checkout."""

from __future__ import annotations

from . import ANY, Field, Kind, ListOf, MapOf, Shape

ARTIFACT_MANIFEST = Kind(
    "afbench artifact manifest",
    Field("revision", str),
    Field("config_digest", str, doc="SHA-256 of the settings the artifacts were made with"),
    Field("versions", MapOf(str, keys="tool"), doc="python, snakemake, afbench"),
    Field(
        "artifacts",
        ListOf(
            Shape(
                "artifact entry",
                Field("path", str, doc="relative to the artifact directory"),
                Field("sha256", str),
                Field("size", int, unit="bytes"),
            )
        ),
    ),
    doc="every artifact the config asked for, with its SHA-256 (the artifact manifest)",
)
FOUND = "only when the file was found"
DISCOVERY = Kind(
    "afbench discovery",
    Field("checkout", str),
    Field("revision", str),
    Field("observed_not_published", bool),
    Field(
        "csv_files",
        ListOf(
            Shape(
                "csv blob",
                Field("path", str),
                Field("sha256", str),
                Field("size", int, unit="bytes"),
                Field("rows", int),
                Field("header", ListOf(str)),
            )
        ),
    ),
    Field(
        "files",
        ListOf(
            Shape(
                "configured file",
                Field("key", str),
                Field("kind", str, values=("manifest", "sources", "results")),
                Field("configured_path", str),
                Field("configured_sha256", str, null=True),
                Field("found_path", str, null=True),
                Field("status", str, optional=True, doc="only when the file was not found"),
                Field("observed_sha256", str, optional=True, doc=FOUND),
                Field("size", int, optional=True, doc=FOUND),
                Field("rows", int, optional=True, doc=FOUND),
                Field("header", ListOf(str), optional=True, doc=FOUND),
                Field("pin", str, optional=True, doc=FOUND),
                Field(
                    "missing_columns",
                    MapOf(
                        Shape(
                            "missing column",
                            Field("mapped", str),
                            Field("closest", ListOf(str)),
                        ),
                        keys="our field",
                    ),
                    optional=True,
                    doc=FOUND,
                ),
                Field("conflicts", ListOf(str), optional=True),
            )
        ),
    ),
    Field(
        "unconfigured_results",
        ListOf(
            Shape(
                "unconfigured results file",
                Field("path", str),
                Field("proposed_slug", str),
                Field("sha256", str),
                Field("rows", int),
            )
        ),
    ),
    Field("fragment", MapOf(ANY, keys="config section"), doc="the config fragment to review"),
    doc="config's files, models and columns against a checkout (`afbench discover`)",
)
AUDIT = Kind(
    "afbench audit",
    Field("note", str),
    Field("revision", str, null=True, doc="the release identity's; null: none in the directory"),
    Field("held", bool, doc="every check held (and there was one)"),
    Field(
        "counts",
        Shape(
            "audit counts",
            Field("checks", int, minimum=0),
            Field("held", int, minimum=0),
            Field("failed", int, minimum=0),
        ),
    ),
    Field(
        "checks",
        ListOf(
            Shape(
                "audit check",
                Field("relation", str, doc="a name of afbench.kinds.relations, or 'readable'"),
                Field("method", str, values=("re-derived", "cross-checked", "read")),
                Field("artifact", str, doc="relative to the directory"),
                Field("derived_from", str, null=True, doc="relative; null: its own fields"),
                Field("held", bool),
                Field("problems", ListOf(str), doc="each naming both files and the field"),
            )
        ),
    ),
    doc="what `afbench audit` found in an artifact directory, relation by relation",
)
