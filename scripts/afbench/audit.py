"""audit.json: every artifact with its SHA-256, the config digest and the tool versions."""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path

from . import __version__
from .fsutil import sha256_file


def tool_versions() -> dict[str, str]:
    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "python": platform.python_version(),
        "snakemake": version("snakemake"),
        "afbench": __version__,
    }


def build_audit(
    revision_dir: Path, config_digest: str, revision: str, files: list[Path] | None = None
) -> dict:
    """Hash `files` (the artifacts the config asked for), or else every file in the tree."""
    root = Path(revision_dir)
    if files is None:
        files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    artifacts = []
    for path in sorted(Path(f) for f in files):
        rel = path.relative_to(root).as_posix()
        if rel == "audit.json" or rel.startswith("logs/") or path.name.endswith(".part"):
            continue
        artifacts.append({"path": rel, "sha256": sha256_file(path), "size": path.stat().st_size})
    return {
        "kind": "afbench audit",
        "revision": revision,
        "config_digest": config_digest,
        "versions": tool_versions(),
        "artifacts": artifacts,
    }
