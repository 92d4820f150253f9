"""The command line's value types: each flag's text becomes a typed value here, checked as
strictly as the config schema checks the same setting (whole values, finite numbers), or the
command stops with argparse's one-line error naming the flag, what was expected and what was
found. argparse's `type=` calls these; nothing after parsing checks a flag's form again."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from pathlib import PosixPath

from ..errors import AfbenchError, printable

SHA256 = re.compile(r"[0-9a-f]{64}")
COMMIT = re.compile(r"[0-9a-f]{40}")
DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
WHOLE = re.compile(r"-?[0-9]{1,12}")
IMAGE_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# text without control characters: the schema's `text`
TEXT = re.compile("[^\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]*")


def _refuse(expected: str, found: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"expected {expected}, found {printable(repr(found), 200)}")


def _named(name: str, convert: Callable[[str], object]) -> Callable[[str], object]:
    convert.__name__ = name  # argparse names a type by its function's name
    return convert


def text(value: str) -> str:
    if len(value) > 10_000 or not TEXT.fullmatch(value):
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
    if not SHA256.fullmatch(value):
        raise _refuse("64 lowercase hex digits", value)
    return value


def commit(value: str) -> str:
    if not COMMIT.fullmatch(value):
        raise _refuse("a full 40-hex commit", value)
    return value


def name(value: str) -> str:
    """A value that becomes a path component or an argv element."""
    from ..fsutil import check_name

    try:
        return check_name(value, "name")
    except AfbenchError:
        raise _refuse(
            "a safe name (letters, digits, '_', '-', '.'; no '..', '/', leading '.' or '-')",
            value,
        ) from None


def agent(value: str) -> str:
    """A Harbor agent's name, or a custom agent's module.path:ClassName (`-a` takes both)."""
    from ..harbor import is_import_path

    if is_import_path(value):
        return value
    try:
        return name(value)
    except argparse.ArgumentTypeError:
        raise _refuse("a Harbor agent name or module.path:ClassName", value) from None


VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def variable(value: str) -> str:
    """An environment variable's name."""
    if len(value) > 200 or not VARIABLE.fullmatch(value):
        raise _refuse("an environment variable's name (letters, digits, _)", value)
    return value


def number(minimum: float = 0, *, above: bool = False, below: float | None = None):
    """A finite decimal number >= minimum (> with `above`; < `below` if given)."""
    bound = f"> {minimum:g}" if above else f">= {minimum:g}"
    if below is not None:
        bound += f" and < {below:g}"

    def convert(value: str) -> float:
        if not DECIMAL.fullmatch(value):
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
        if not WHOLE.fullmatch(value):
            raise _refuse(f"a whole number >= {minimum}", value)
        result = int(value)
        if result < minimum:
            raise _refuse(f"a whole number >= {minimum}", value)
        return result

    return _named("whole number", convert)


def boolean(value: str) -> bool:
    if value not in ("true", "false"):
        raise _refuse("true or false", value)
    return value == "true"


def date(value: str) -> str | None:
    """YYYY-MM-DD, a real calendar date; empty for unknown."""
    if not value:
        return None
    from datetime import date as calendar

    try:
        if DATE.fullmatch(value):
            calendar.fromisoformat(value)
            return value
    except ValueError:
        pass
    raise _refuse("a real date YYYY-MM-DD (or empty for unknown)", value)


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
    from ..config import ReleaseFile

    key, sep, rest = value.partition("=")
    path, at, digest = rest.rpartition("@")
    if not (sep and at and key and path and SHA256.fullmatch(digest)):
        raise _refuse("KEY=PATH@SHA256", value)
    return ReleaseFile(name(key), ReleaseFile.kind_of(key), relpath(path), digest)


def unpinned_file(value: str):
    """KEY=PATH: a file the config names without a pin."""
    from ..config import ReleaseFile

    key, sep, path = value.partition("=")
    if not (sep and key and path):
        raise _refuse("KEY=PATH", value)
    return ReleaseFile(name(key), ReleaseFile.kind_of(key), relpath(path), None)


RELPATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def relpath(value: str) -> str:
    """A relative POSIX path inside the upstream repository (the schema's `relpath`)."""
    if not RELPATH.fullmatch(value) or ".." in value:
        raise _refuse("a relative path inside the repository (no '..')", value)
    return value


def image(value: str) -> dict:
    """ROLE=REFERENCE@DIGEST; an empty reference or digest is unknown."""
    role, sep, rest = value.partition("=")
    reference, _, digest = rest.partition("@")
    if not sep or not role or (digest and not IMAGE_DIGEST.fullmatch(digest)):
        raise _refuse("ROLE=REFERENCE@sha256:<64 hex> (reference or digest may be empty)", value)
    return {"role": text(role), "reference": optional_text(reference), "digest": digest or None}


def counts(value: str) -> dict[str, int]:
    """TASKS,SOURCES,OBLIGATIONS."""
    parts = value.split(",")
    if len(parts) != 3:
        raise _refuse("TASKS,SOURCES,OBLIGATIONS", value)
    at_least_one = whole(1)
    return dict(zip(("tasks", "sources", "obligations"), map(at_least_one, parts), strict=True))


def environment_type(value: str) -> str:
    from ..harbor import ENVIRONMENT_TYPES, check_environment_type

    try:
        return check_environment_type(value)
    except AfbenchError:
        raise _refuse(
            f"a Harbor 0.22.0 environment type ({', '.join(sorted(ENVIRONMENT_TYPES)[:4])}, ...) "
            "or module.path:ClassName",
            value,
        ) from None


def model(value: str) -> str:
    from ..harbor import MODEL

    if not MODEL.fullmatch(value):
        raise _refuse("provider/model", value)
    return value


def confidence(value: str) -> float:
    return number(0, above=True, below=1)(value)


def stratified_flags(p: argparse.ArgumentParser) -> None:
    """A stratified selection's flags, for both doors."""
    p.add_argument(
        "--stratified-tasks",
        type=whole(1),
        metavar="N",
        help="draw N tasks proportionally per source (largest remainder); needs --stratified-seed",
    )
    p.add_argument(
        "--stratified-seed",
        type=whole(0),
        metavar="S",
        help="the draw's seed: per source, the tasks with the lowest sha256(f'{S}:{task_id}')",
    )


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
class InputPath(PosixPath):
    """A file or folder the command reads."""


class InputTree(InputPath):
    """A folder whose whole content the command reads (a Harbor job, an artifact folder):
    nothing may be written inside it."""


class OutputPath(PosixPath):
    """A file the command writes."""


class OutputDir(PosixPath):
    """A folder the command writes into; `files` are the names it writes there, as far as they
    are known before the command runs (the rest are checked as they are written)."""

    files: tuple[str, ...] = ()


def _path(kind: type, value: str) -> PosixPath:
    if not value or "\x00" in value:
        raise _refuse("a path", value)
    return kind(value)


def input_path(value: str) -> InputPath:
    return _path(InputPath, value)


def optional_input_path(value: str) -> InputPath | None:
    """A path the command reads, or nothing when empty (a setting left unset)."""
    return input_path(value) if value else None


def input_tree(value: str) -> InputTree:
    return _path(InputTree, value)


def output_path(value: str) -> OutputPath:
    return _path(OutputPath, value)


def output_dir(*files: str):
    """A folder the command writes `files` into."""

    def convert(value: str) -> OutputDir:
        folder = _path(OutputDir, value)
        folder.files = files
        return folder

    return _named("output folder", convert)


def declared_files(values: dict) -> tuple[list, list, list, list]:
    """The inputs, output files, input trees and output folders among a parsed command's
    values."""
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
