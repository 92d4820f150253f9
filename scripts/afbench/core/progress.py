"""A progress bar on standard error for the long steps (a Harbor import of many trials, a
download): one line, redrawn in place with a carriage return, shown only when standard error
is a terminal (never in a Snakemake log or a pipe), and cleared when the step ends, however it
ends, so the next line (a summary, a warning, an error) starts on a clean line.

It stays out of the way: nothing is drawn for a step that ends within DELAY_S, the line is
redrawn at most every INTERVAL_S (a 100,000-trial import redraws it a few dozen times, not
100,000), is never wider than the terminal, and its label is escaped (errors.printable). The
command line turns every bar off with --quiet (`show(False)`)."""

from __future__ import annotations

import os
import sys
import time

from afbench.core.errors import printable

DELAY_S = 0.3  # a step this short shows no bar at all
INTERVAL_S = 0.1  # between two redraws
MAX_WIDTH = 100  # characters of the whole line
BAR_WIDTH = 24  # characters of the bar itself
CLEAR = "\r\x1b[K"  # back to the start of the line, and erase it

_shown = True


def show(on: bool) -> bool:
    """Turn every bar of this process on or off (--quiet turns them off); returns what it
    was before."""
    global _shown
    before, _shown = _shown, on
    return before


def _size(count: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1000
    raise AssertionError("unreachable")


class Progress:
    """A step of `total` units (None: not known in advance), counted with advance() and ended
    with close() (or a `with` block). `unit`: "bytes" shows sizes; otherwise counts."""

    def __init__(self, total: int | None, label: str, unit: str = "", stream=None) -> None:
        self.total, self.unit, self.count = total, unit, 0
        self.label = printable(label, MAX_WIDTH)
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _shown and _is_terminal(self.stream)
        self.started = time.monotonic()
        self.next_draw = self.started + DELAY_S
        self.drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def advance(self, units: int = 1) -> None:
        self.count += units
        if self.enabled:
            now = time.monotonic()
            if now >= self.next_draw:
                self.next_draw = now + INTERVAL_S
                self._draw()

    def line(self, columns: int) -> str:
        """The bar as drawn on a terminal `columns` wide."""
        shown = _size if self.unit == "bytes" else (lambda n: f"{n:,}")
        if self.total:
            filled = min(BAR_WIDTH, BAR_WIDTH * self.count // self.total)
            bar = f" [{'#' * filled}{'.' * (BAR_WIDTH - filled)}]"
            tally = f"{shown(self.count)} of {shown(self.total)}"
        else:
            bar, tally = "", shown(self.count)
        tail = f"{bar} {tally}"
        room = min(columns - 1, MAX_WIDTH) - len(tail)  # the label gives way, never the counts
        label = self.label if len(self.label) <= room else self.label[: max(0, room - 3)] + "..."
        return (label + tail)[: max(0, min(columns - 1, MAX_WIDTH))]

    def _draw(self) -> None:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        columns = columns or 80  # a terminal that does not say its size (0 columns)
        self._write(CLEAR + self.line(columns))
        self.drawn = True

    def close(self) -> None:
        """End the step: the bar, if one was drawn, is erased."""
        if self.drawn:
            self._write(CLEAR)
            self.drawn = False
        self.enabled = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed terminal: the step goes on without its bar
            self.enabled = False


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False
