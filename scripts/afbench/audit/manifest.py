"""The artifact manifest: every artifact the config asked for, with its SHA-256, the settings'
digest and the tool versions, so that an artifact directory proves what was done."""

from __future__ import annotations

from pathlib import Path

from afbench import __version__
from afbench.core.errors import AfbenchError, Problem
from afbench.core.fsutil import sha256_file
from afbench.kinds import ARTIFACT_MANIFEST


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


def manifest_of_files(manifest: dict, on_disk: dict) -> list[Problem]:
    """MANIFEST_OF_FILES (afbench.kinds.relations): every artifact the manifest lists is a
    regular file inside the directory, once, with the SHA-256 and size listed."""
    from collections import Counter

    problems = []
    twice = sorted(p for p, n in Counter(e["path"] for e in manifest["artifacts"]).items() if n > 1)
    if twice:
        problems.append(
            Problem(
                "an artifact is listed twice",
                field="artifacts",
                expected="each path once",
                found=twice[0],
            )
        )
    for index, entry in enumerate(manifest["artifacts"]):
        found = on_disk.get(entry["path"])
        at = f"artifacts[{index}]"
        if found is None:
            problems.append(
                Problem(
                    "the listed artifact is not a regular file inside the directory",
                    field=f"{at}.path",
                    expected="a regular file inside the directory",
                    found=entry["path"],
                )
            )
            continue
        for field in ("sha256", "size"):
            if found[field] != entry[field]:
                problems.append(
                    Problem(
                        f"{entry['path']} is not the file listed",
                        field=f"{at}.{field}",
                        expected=entry[field],
                        found=found[field],
                    )
                )
    return problems
