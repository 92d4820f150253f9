"""The command line's value types: each flag's text becomes a typed value here, checked as
strictly as the config schema checks the same setting (whole values, finite numbers), or the
command stops with argparse's one-line error naming the flag, what was expected and what was
found. argparse's `type=` calls these; nothing after parsing checks a flag's form again."""

from __future__ import annotations

import argparse
import functools
import math
import re
from collections.abc import Callable

from afbench.core.errors import AfbenchError, printable

# patterns, not compiled ones: re compiles (and caches) each on first use, so a job that never
# meets one does not pay for it at start-up
SHA256 = r"[0-9a-f]{64}"
DECIMAL = r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?"
WHOLE = r"-?[0-9]{1,12}"
IMAGE_DIGEST = r"sha256:[0-9a-f]{64}"
# text without control characters: the schema's `text`
TEXT = "[^\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]*"


def _refuse(expected: str, found: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"expected {expected}, found {printable(repr(found), 200)}")


def _named(name: str, convert: Callable[[str], object]) -> Callable[[str], object]:
    convert.__name__ = name  # argparse names a type by its function's name
    return convert


def text(value: str) -> str:
    if len(value) > 10_000 or not re.fullmatch(TEXT, value):
        raise _refuse("text without control characters (at most 10,000)", value)
    return value


def nonempty(value: str) -> str:
    if not value:
        raise _refuse("a non-empty value", value)
    return text(value)


def optional_text(value: str) -> str | None:
    """Text, or nothing when empty (a null setting)."""
    return text(value) or None


def optional(convert: Callable[[str], object]) -> Callable[[str], object]:
    """`convert`, or None for the empty value (a null setting)."""

    def maybe(value: str) -> object:
        return None if value == "" else convert(value)

    return _named(getattr(convert, "__name__", "value"), maybe)


def sha256(value: str) -> str:
    if not re.fullmatch(SHA256, value):
        raise _refuse("64 lowercase hex digits", value)
    return value


def name(value: str) -> str:
    """A value that becomes a path component or an argv element."""
    from afbench.core.fsutil import check_name

    try:
        return check_name(value, "name")
    except AfbenchError:
        raise _refuse(
            "a safe name (letters, digits, '_', '-', '.'; no '..', '/', leading '.' or '-')",
            value,
        ) from None


VARIABLE = r"[A-Za-z_][A-Za-z0-9_]*"


def variable(value: str) -> str:
    """An environment variable's name."""
    if len(value) > 200 or not re.fullmatch(VARIABLE, value):
        raise _refuse("an environment variable's name (letters, digits, _)", value)
    return value


def number(minimum: float = 0, *, above: bool = False, below: float | None = None):
    """A finite decimal number >= minimum (> with `above`; < `below` if given)."""
    bound = f"> {minimum:g}" if above else f">= {minimum:g}"
    if below is not None:
        bound += f" and < {below:g}"

    def convert(value: str) -> float:
        if not re.fullmatch(DECIMAL, value):
            raise _refuse(f"a decimal number {bound}", value)
        result = float(value)
        if (
            not math.isfinite(result)
            or result < minimum
            or (above and result == minimum)
            or (below is not None and result >= below)
        ):
            raise _refuse(f"a finite number {bound}", value)
        return result

    return _named("number", convert)


def whole(minimum: int = 0):
    def convert(value: str) -> int:
        if not re.fullmatch(WHOLE, value):
            raise _refuse(f"a whole number >= {minimum}", value)
        result = int(value)
        if result < minimum:
            raise _refuse(f"a whole number >= {minimum}", value)
        return result

    return _named("whole number", convert)


def pair(separator: str = "=", left: Callable = nonempty, right: Callable = nonempty):
    """LEFT=RIGHT, each part converted."""

    def convert(value: str) -> tuple:
        key, sep, rest = value.partition(separator)
        if not sep:
            raise _refuse(f"NAME{separator}VALUE", value)
        return left(key), right(rest)

    return _named("pair", convert)


def release_file(value: str):
    """KEY=PATH@SHA256: a release file and its pin."""
    from afbench.core.config import ReleaseFile

    key, sep, rest = value.partition("=")
    path, at, digest = rest.rpartition("@")
    if not (sep and at and key and path and re.fullmatch(SHA256, digest)):
        raise _refuse("KEY=PATH@SHA256", value)
    return ReleaseFile(name(key), ReleaseFile.kind_of(key), relpath(path), digest)


def unpinned_file(value: str):
    """KEY=PATH: a file the config names without a pin."""
    from afbench.core.config import ReleaseFile

    key, sep, path = value.partition("=")
    if not (sep and key and path):
        raise _refuse("KEY=PATH", value)
    return ReleaseFile(name(key), ReleaseFile.kind_of(key), relpath(path), None)


RELPATH = r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*"


def relpath(value: str) -> str:
    """A relative POSIX path inside the upstream repository (the schema's `relpath`)."""
    if not re.fullmatch(RELPATH, value) or ".." in value:
        raise _refuse("a relative path inside the repository (no '..')", value)
    return value


def image(value: str) -> dict:
    """ROLE=REFERENCE@DIGEST; an empty reference or digest is unknown."""
    role, sep, rest = value.partition("=")
    reference, _, digest = rest.partition("@")
    if not sep or not role or (digest and not re.fullmatch(IMAGE_DIGEST, digest)):
        raise _refuse("ROLE=REFERENCE@sha256:<64 hex> (reference or digest may be empty)", value)
    return {"role": text(role), "reference": optional_text(reference), "digest": digest or None}


def counts(value: str) -> dict[str, int]:
    """TASKS,SOURCES,OBLIGATIONS."""
    parts = value.split(",")
    if len(parts) != 3:
        raise _refuse("TASKS,SOURCES,OBLIGATIONS", value)
    at_least_one = whole(1)
    return dict(zip(("tasks", "sources", "obligations"), map(at_least_one, parts), strict=True))


def stratified(args: argparse.Namespace) -> dict | None:
    """{tasks, seed} from the two flags (both or neither), or None."""
    tasks, seed = args.stratified_tasks, args.stratified_seed
    if (tasks is None) != (seed is None):
        raise AfbenchError(
            "a stratified selection needs both its size and its seed",
            field="--stratified-tasks" if tasks is None else "--stratified-seed",
            expected="--stratified-tasks N --stratified-seed S",
        )
    return None if tasks is None else {"tasks": tasks, "seed": seed}


# --- paths: every file or folder flag says whether the command reads it or writes it ----------
# The command line collects them (cli.declared_files) and hands them to fsutil.command_files
# before the command reads anything: an output that is one of the inputs, that lies inside an
# input folder, that is named twice or that is not a regular file is refused there, naming both
# paths. A test keeps every path flag of every command one of these.
@functools.cache
def _path_kinds() -> dict[str, type]:
    """The path classes, made on a flag's first path: pathlib is imported when a command runs,
    not for its --help or its start-up (~5 ms of every job's CPU)."""
    from pathlib import PosixPath

    class InputPath(PosixPath):
        """A file or folder the command reads."""

    class InputTree(InputPath):
        """A folder whose whole content the command reads (a Harbor job, an artifact folder):
        nothing may be written inside it."""

    class OutputPath(PosixPath):
        """A file the command writes."""

    class OutputDir(PosixPath):
        """A folder the command writes into; `files` are the names it writes there, as far as
        they are known before the command runs (the rest are checked as they are written)."""

        files: tuple[str, ...] = ()

    kinds = {"InputPath": InputPath, "InputTree": InputTree, "OutputPath": OutputPath}
    kinds["OutputDir"] = OutputDir
    for name, kind in kinds.items():
        kind.__qualname__, kind.__module__ = name, __name__
    return kinds


def __getattr__(name: str) -> type:
    """InputPath, InputTree, OutputPath and OutputDir, made on their first use (any other name
    is missing from that namespace: Python's AttributeError)."""
    from types import SimpleNamespace

    return getattr(SimpleNamespace(**_path_kinds()), name)


def _path(kind: str, value: str):
    if not value or "\x00" in value:
        raise _refuse("a path", value)
    return _path_kinds()[kind](value)


def input_path(value: str):
    return _path("InputPath", value)


def optional_input_path(value: str):
    """A path the command reads, or nothing when empty (a setting left unset)."""
    return input_path(value) if value else None


def input_tree(value: str):
    return _path("InputTree", value)


def output_path(value: str):
    return _path("OutputPath", value)


def output_dir(*files: str):
    """A folder the command writes `files` into."""

    def convert(value: str):
        folder = _path("OutputDir", value)
        folder.files = files
        return folder

    return _named("output folder", convert)


def declared_files(values: dict) -> tuple[list, list, list, list]:
    """The inputs, output files, input trees and output folders among a parsed command's
    values."""
    from pathlib import PosixPath

    kinds = _path_kinds()
    InputPath, InputTree = kinds["InputPath"], kinds["InputTree"]
    OutputPath, OutputDir = kinds["OutputPath"], kinds["OutputDir"]
    inputs, outputs, trees, folders = [], [], [], []
    for value in values.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, InputTree):
                trees.append(item)
                inputs.append(item)
            elif isinstance(item, InputPath):
                inputs.append(item)
            elif isinstance(item, OutputPath):
                outputs.append(item)
            elif isinstance(item, OutputDir):
                folders.append(item)
                outputs.extend(PosixPath(item) / name for name in item.files)
    return inputs, outputs, trees, folders
