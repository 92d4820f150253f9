"""The release: its identity (carried by every artifact), the verified files and the receipt."""

from __future__ import annotations

from . import Field, Kind, ListOf, Shape

SHA256 = "64 lowercase hex digits"

RELEASE_DATES = Shape(
    "release dates",
    *(
        Field(name, str, null=True, time=True, doc="YYYY-MM-DD, or null when not known")
        for name in ("release_page", "manuscript_cover", "software_citation")
    ),
    Field(
        "first_public_release",
        str,
        null=True,
        time=True,
        doc="YYYY-MM-DD; null: no date establishes a first public release",
    ),
    doc="three distinct dates of the release as config records them (release.DATE_KEYS)",
)
IMAGE = Shape(
    "image",
    Field("role", str, doc="task-environment or verifier"),
    Field("reference", str, null=True),
    Field("digest", str, null=True, doc="sha256:<64 hex digits>; required for a formal run"),
)
RELEASE = Shape(
    "release",
    Field("name", str),
    Field("repository", str, doc="owner/name on GitHub"),
    Field("revision", str, doc="the pinned upstream commit (40 hex digits)"),
    Field("synthetic", bool, doc="true only for the embedded demo release"),
    Field("lean", str, doc="Lean toolchain version"),
    Field("mathlib", str, doc="Mathlib commit"),
    Field("harbor", str, doc="Harbor version the release targets"),
    Field("nominal_budget_usd", float, unit="USD per task", minimum=0),
    Field("license", str, doc="the upstream data's licence"),
    Field("dates", RELEASE_DATES),
    Field("images", ListOf(IMAGE)),
    doc="the release block every artifact carries (release.identity: one key order)",
)
VERIFIED_ENTRY = Shape(
    "verified file entry",
    Field("key", str, doc="manifest, sources, or a model slug"),
    Field("kind", str, values=("manifest", "sources", "results")),
    Field("path", str, doc="the file's path in the upstream repository"),
    Field("source", str, doc="where it was read from (kind and location)"),
    Field("expected_sha256", str, doc=f"the pin ({SHA256})"),
    Field("actual_sha256", str, doc=f"the bytes' hash ({SHA256})"),
    Field("size", int, unit="bytes", minimum=0),
    Field("verified", bool),
)
SKIPPED = Shape(
    "skipped file",
    Field("key", str),
    Field("path", str),
    Field("reason", str),
)
SOURCE_KINDS = ("https", "git", "dir")

RELEASE_IDENTITY = Kind(
    "afbench release identity",
    Field("release", RELEASE),
    doc="the release as config pins it (`afbench job write-release-identity`)",
)
VERIFIED_FILE = Kind(
    "afbench verified file",
    Field("release", RELEASE),
    Field("source_kind", str, values=SOURCE_KINDS),
    Field("license", str, doc="the licence note of everything derived from the release"),
    Field("file", VERIFIED_ENTRY),
    doc="one fetched release file re-hashed against its pin",
)
RECEIPT = Kind(
    "afbench release receipt",
    Field("release", RELEASE),
    Field("source_kind", str, values=SOURCE_KINDS),
    Field("files", ListOf(VERIFIED_ENTRY)),
    Field("skipped", ListOf(SKIPPED), doc="files config names without a pin: never read"),
    Field("license", str),
    doc="what was fetched, from where, with both hashes: what later stages read the release by",
)
