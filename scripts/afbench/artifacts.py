"""The artifact manifest: every artifact the config asked for, with its SHA-256, the settings'
digest and the tool versions, so that an artifact directory proves what was done."""

from __future__ import annotations

from pathlib import Path

from . import __version__
from .errors import AfbenchError
from .fsutil import sha256_file
from .kinds import ARTIFACT_MANIFEST


def build_manifest(root: Path, files: list[Path], config_digest: str, revision: str) -> dict:
    """Hash `files`, each named relative to `root`; a file outside `root` is refused."""
    root = Path(root).resolve()
    artifacts = []
    for path in sorted(Path(f) for f in files):
        resolved = path.resolve()
        if not resolved.is_relative_to(root):
            raise AfbenchError(
                "artifact lies outside the artifact directory",
                file=str(path),
                expected=f"a file under {root}",
            )
        if not resolved.is_file():
            raise AfbenchError("artifact is not a regular file", file=str(path))
        artifacts.append(
            {
                "path": resolved.relative_to(root).as_posix(),
                "sha256": sha256_file(resolved),
                "size": resolved.stat().st_size,
            }
        )
    return ARTIFACT_MANIFEST.record(
        revision=revision,
        config_digest=config_digest,
        versions=tool_versions(),
        artifacts=artifacts,
    )


def tool_versions() -> dict[str, str]:
    """The versions an artifact directory was made with (the manifest's and the report's)."""
    # imported here: importlib.metadata costs a job start-up more than any stage needs
    import platform
    from importlib import metadata

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
