"""The release's tasks: the catalog, selections, run plans, content digests and the exported
tasks' checksums."""

from __future__ import annotations

from . import SHA256, Field, Kind, ListOf, MapOf, Shape
from .release import IMAGE, RELEASE

MANIFEST_ROW = Shape(
    "MANIFEST row",
    Field("task_id", str),
    Field("source_id", str, category=True, doc="the task's source (the book --book selects)"),
    Field("source_ref", str, doc="where in the source, e.g. 'Theorem 10.7'"),
    Field("target_declaration", str, doc="the Lean declaration the task must establish"),
    Field("n_obligations", int, minimum=1, unit="proof obligations"),
    Field("workspace", str, doc="the workspace's path in the upstream repository"),
    doc="one task as MANIFEST.csv lists it (upstream column names are mapped in config)",
)
TASK = Shape(
    "task",
    *MANIFEST_ROW.fields,
    Field("workspace_url", str, doc="the workspace at the pinned revision on GitHub"),
    doc="a catalog's task: its MANIFEST row and where to read its workspace",
)
SOURCE = Shape(
    "source",
    Field("source_id", str),
    Field("title", str),
    Field("authors", str),
    Field("license", str, doc="the book's own licence (never downloaded)"),
    Field("n_tasks", int, minimum=0, unit="tasks"),
    doc="one source as SOURCES.csv lists it",
)
CATALOG_DIGEST_NAMES = ("manifest_row", "source_reference", "obligations")
CATALOG = Kind(
    "afbench task catalog",
    Field("note", str),
    Field("release", RELEASE),
    Field("license", str),
    Field("inputs", MapOf(str, keys="release path"), doc="release path -> SHA-256 read"),
    Field(
        "extra_columns",
        MapOf(ListOf(str), keys="release path"),
        doc="columns of each file that afbench ignored",
    ),
    Field(
        "counts",
        Shape(
            "catalog counts",
            Field("tasks", int, minimum=0, unit="tasks"),
            Field("sources", int, minimum=0, unit="sources"),
            Field("obligations", int, minimum=0, unit="proof obligations"),
        ),
    ),
    Field("sources", ListOf(SOURCE)),
    Field("tasks", ListOf(TASK), doc="in MANIFEST order"),
    Field(
        "task_digests",
        MapOf(
            Shape(
                "catalog digests",
                *(Field(name, str, pattern=SHA256) for name in CATALOG_DIGEST_NAMES),
            ),
            keys="task id",
        ),
        doc="per task, SHA-256 of the canonical JSON of its row, source reference, obligations",
    ),
    doc="the release's tasks and sources, cross-checked (`afbench tasks`)",
)

RELEASE_REF = Shape(
    "release reference",
    Field("name", str),
    Field("repository", str),
    Field("revision", str),
    Field("synthetic", bool),
)
PART_NAMES = ("statement", "verifier", "environment", "solution", "metadata")
EXPORTED_TASK = Shape(
    "exported task digests",
    Field(
        "checksum",
        str,
        pattern=SHA256,
        doc="Harbor 0.22.0's task_checksum of the exported folder (of its files and task.toml)",
    ),
    Field(
        "parts",
        Shape("part digests", *(Field(part, str, pattern=SHA256) for part in PART_NAMES)),
        doc="per part, the SHA-256 of its files' lines (path, digest, executable bit), sorted",
    ),
    Field(
        "files",
        MapOf(
            Shape(
                "exported file",
                Field("part", str, values=PART_NAMES),
                Field("sha256", str, pattern=SHA256),
                Field("executable", bool),
            ),
            keys="path in the task folder, or task.toml#<table>",
        ),
    ),
    Field(
        "task_toml_sha256",
        str,
        null=True,
        pattern=SHA256,
        doc="SHA-256 of task.toml's bytes (its tables are in `files`); null: none",
    ),
    Field(
        "declared",
        Shape(
            "declared package",
            Field("name", str, null=True),
            Field("version", str, null=True),
        ),
        doc="[task] name and version of task.toml",
    ),
    Field("regrade", str, null=True, doc="why Harbor 0.22.0 cannot regrade it; null: it can"),
)
TASK_CONTENT = Shape(
    "task content digests",
    Field("row", MANIFEST_ROW),
    *(Field(name, str, pattern=SHA256) for name in CATALOG_DIGEST_NAMES),
    Field("export", EXPORTED_TASK, null=True, doc="null: not exported (no checkout)"),
)
TASK_DIGESTS = Kind(
    "afbench task digests",
    Field("note", str),
    Field("release", RELEASE),
    Field("license", str),
    Field("inputs", MapOf(str, keys="release path")),
    Field(
        "export",
        Shape(
            "export done",
            Field("exported", bool),
            Field("reason", str, null=True, doc="why not; null when exported"),
        ),
    ),
    Field("tasks", MapOf(TASK_CONTENT, keys="task id")),
    # 2: each exported task's task.toml digest (its checksum is derived again from its files)
    version=2,
    doc="each task's content digests, the upgrade diff's input (`afbench job digest-tasks`)",
)

FROZEN = Shape(
    "frozen selection",
    Field("since", str, doc="the revision the members were first frozen at"),
    Field("basis", str, values=("export", "manifest")),
    Field("members_sha256", str),
    Field("members", MapOf(TASK_CONTENT, keys="task id")),
)
SELECTION = Kind(
    "afbench task selection",
    Field("note", str),
    Field("name", str),
    Field(
        "derived",
        Shape(
            "derived from",
            Field("from", str),
            Field("task_table_sha256", str),
            Field("rule", str),
            Field("models", ListOf(str)),
            Field("note", str),
        ),
        optional=True,
        doc="only in a selection derived from the task table (the discriminative subset)",
    ),
    Field("release", RELEASE),
    Field("license", str),
    Field(
        "criteria",
        Shape(
            "selection criteria",
            Field("tasks", ListOf(str)),
            Field("sources", ListOf(str)),
            Field("limit", int, null=True, minimum=1),
            Field(
                "stratified",
                Shape(
                    "stratified draw",
                    Field("tasks", int, minimum=1, unit="tasks"),
                    Field("seed", int, minimum=0),
                    Field("allocation", MapOf(int, keys="source id"), unit="tasks"),
                    Field("method", str),
                ),
                null=True,
            ),
            Field("order", str),
        ),
    ),
    Field("selection_sha256", str),
    Field(
        "counts",
        Shape(
            "selection counts",
            Field("tasks", int, minimum=0, unit="tasks"),
            Field("obligations", int, minimum=0, unit="proof obligations"),
        ),
    ),
    Field("task_ids", ListOf(str)),
    Field("tasks", ListOf(TASK)),
    Field(
        "comparable",
        Shape(
            "comparable subset",
            Field("previous", RELEASE_REF),
            Field("current", RELEASE_REF),
            Field(
                "previous_inputs",
                MapOf(str, keys="release path"),
                doc="the catalog files the previous revision's digests came from",
            ),
            Field("current_inputs", MapOf(str, keys="release path")),
            Field("diff_sha256", str),
            Field("basis", str, values=("export", "manifest")),
            Field("excluded", MapOf(int, keys="change class"), unit="tasks"),
            Field("note", str),
        ),
        optional=True,
        doc="only in the comparable subset of a release upgrade",
    ),
    Field("frozen", FROZEN, optional=True, doc="only in a frozen selection"),
    doc="a deterministic subset of the catalog's tasks (`afbench job select-tasks`)",
)

ARGV = ListOf(str, doc="an argument vector, never a shell string")
PLAN_TASK = Shape(
    "planned task",
    Field("task_id", str),
    Field("job_name", str),
    Field("job_dir", str),
    Field("export", Shape("export step", Field("argv", ARGV), Field("cwd", str))),
    Field(
        "check",
        Shape("check step", Field("argv", ARGV), Field("cwd", str), Field("read_only", bool)),
    ),
    Field(
        "run",
        Shape(
            "harbor run step",
            Field("argv", ARGV),
            Field("cwd", str),
            Field("env", MapOf(str, keys="environment variable")),
        ),
    ),
)
SELECTION_REF = Shape(
    "selection reference",
    Field("name", str),
    Field("selection_sha256", str),
    Field("tasks", int, minimum=0, unit="tasks"),
)
PLAN = Kind(
    "afbench harbor run plan",
    Field("note", str),
    Field("executed", bool),
    Field("dollar_cap_enforced", bool),
    Field("release", RELEASE),
    Field("license", str),
    Field("selection", SELECTION_REF),
    Field("agent", str),
    Field("model", str, null=True, doc="provider/model; null for an agent without one"),
    Field("expected_reward", int, null=True, doc="0 for nop; null otherwise"),
    Field("repository_dir", str),
    Field("environment_type", str),
    Field(
        "timeouts",
        Shape(
            "timeouts",
            Field("agent_s", int, unit="seconds"),
            Field("verifier_s", int, unit="seconds"),
            Field("preserved", str),
        ),
    ),
    Field(
        "requirements",
        Shape(
            "requirements",
            Field("lean", str),
            Field("mathlib", str),
            Field("harbor", str),
            Field("images", ListOf(IMAGE)),
            Field("image_digests_required_for_formal_run", bool),
            Field("formal_run_ready", bool),
        ),
    ),
    Field("traps", ListOf(str)),
    Field("tasks", ListOf(PLAN_TASK)),
    doc="exact Harbor 0.22.0 argument vectors for one selection and agent, never run by it",
)

TASK_CHECKSUMS = Kind(
    "afbench task checksums",
    Field("release", RELEASE),
    Field(
        "selection", Shape("selection named", Field("name", str), Field("selection_sha256", str))
    ),
    Field("exporter", str),
    Field("checksum", str, doc="how each checksum was computed"),
    Field(
        "tasks",
        MapOf(
            Shape(
                "exported task checksum",
                Field("checksum", str),
                Field("images", ListOf(str)),
            ),
            keys="task id",
        ),
    ),
    doc="the exporter's task folders' checksums, which a Harbor run's are compared with",
)
