"""The one exception type the CLI turns into a clear message and a non-zero exit."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

# Control characters, DEL, C1 controls, lone surrogates, line and paragraph separators: escaped
# in every message, so a hostile name can neither break the terminal nor a UTF-8 encoder, and a
# message stays one line.
_UNPRINTABLE = "[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]"
MAX_PART = 500  # characters of one file name, field, message or found value in a message


def printable(text: str, limit: int = MAX_PART) -> str:
    """`text` with unprintable characters escaped (\\n, \\x1b, \\udc80) and clipped to
    about `limit` characters."""
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    return re.sub(_UNPRINTABLE, lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class Problem:
    """One thing wrong with an input: where it is, what was expected, what was found."""

    __slots__ = ("expected", "field", "file", "found", "message", "row")

    def __init__(
        self,
        message: str,
        file: str | None = None,
        row: int | None = None,
        field: str | None = None,
        expected: object = None,
        found: object = None,
    ) -> None:
        self.message, self.file, self.row, self.field = message, file, row, field
        self.expected, self.found = expected, found

    def __repr__(self) -> str:
        return f"Problem({self})"

    def __str__(self) -> str:
        where = [
            part
            for part in (
                printable(self.file) if self.file is not None else None,
                f"row {self.row}" if self.row is not None else None,
                f"field '{printable(str(self.field))}'" if self.field is not None else None,
            )
            if part
        ]
        text = ": ".join([*where, printable(self.message, 4 * MAX_PART)])
        details = []
        if self.expected is not None:
            details.append(f"expected {printable(str(self.expected))}")
        if self.found is not None:
            found = self.found
            shown = repr(found[: MAX_PART + 1]) if isinstance(found, str) else str(found)
            details.append(f"found {printable(shown)}")
        if details:
            text += f" ({', '.join(details)})"
        return text


class AfbenchError(Exception):
    """Bad input or environment. Carries every problem found, not just the first."""

    def __init__(
        self, message: str | None = None, *, problems: Iterable[Problem] = (), **where: object
    ) -> None:
        found = list(problems)
        if message is not None:
            found.insert(0, Problem(message, **where))  # type: ignore[arg-type]
        if not found:
            raise ValueError("AfbenchError needs a message or problems")
        self.problems = found
        super().__init__(str(self))

    def __str__(self) -> str:
        if len(self.problems) == 1:
            return str(self.problems[0])
        shown = self.problems[:50]
        lines = [f"{len(self.problems)} problems:"] + [f"  - {p}" for p in shown]
        if len(self.problems) > len(shown):
            lines.append(f"  ... and {len(self.problems) - len(shown)} more")
        return "\n".join(lines)


def raise_if(problems: list[Problem]) -> None:
    if problems:
        raise AfbenchError(problems=problems)


class NotHeld(Exception):
    """The command ran to its end and found that what it checks does not hold (an audit with a
    failed relation): the command line prints the message and exits 1, not 2 (bad input)."""


def tell(text: str) -> None:
    """One line on standard error, if it is open: with it closed from the start (2>&-,
    sys.stderr is None, and print would write to standard output instead) or closed since
    (EBADF, EPIPE), the line is lost but the exit status still says how the command ended."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(text + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass
