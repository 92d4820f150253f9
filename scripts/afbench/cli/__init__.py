"""The `afbench` command line: two doors over one library.

- `afbench <command>`: the user's door (afbench.cli.seed): the interface page's commands as
  written there, each reading its config once.
- `afbench job <rule>`: the pipeline's door (afbench.cli.jobs): one command per Snakemake rule,
  every value a typed flag, no config read.

Only the command asked for is built and imported, so a job starts fast. Every refusal is one
line on standard error and exit status 2; never a traceback. Every command's files are declared
by its flags' types (cli.types: input, input folder, output, output folder) and checked before
it reads anything (fsutil.command_files). SIGINT, SIGTERM and SIGHUP end a command alike: one
line saying what was and was not replaced, exit status 128 + the signal's number.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import re
import signal
import sys

from afbench.core.errors import AfbenchError, NotHeld, printable, tell

DESCRIPTION = (
    "Reproducible, auditable tools for the AutoformBench benchmark: fetch and verify the pinned "
    "release, export tasks, plan Harbor runs, import results, report."
)


QUIET_HELP = (
    "say nothing on success: no line per file written, no progress bar (warnings and errors "
    "are still shown)"
)


_CHOICE = r"(?s)invalid choice: (.*) \(choose from (.*)\)$"


class Parser(argparse.ArgumentParser):
    """argparse, with its refusals in afbench's one-line form (usage is in --help), a value
    out of a flag's choices said as what was expected and what was found."""

    def error(self, message: str):  # type: ignore[override]
        message = re.sub(_CHOICE, r"expected one of \2, found \1", message)
        self.exit(
            2,
            printable(f"afbench: error: {self.prog}: {message} (see {self.prog} --help)", 4000)
            + "\n",
        )


class Formatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter, as wide as argparse makes it ($COLUMNS, else the terminal's width,
    else 80, less 2) without the shutil import argparse makes for that: shutil brings bz2 and
    lzma, a tenth of a job's start-up, and argparse builds a formatter for every argument."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None) -> None:
        super().__init__(prog, indent_increment, max_help_position, width or _columns() - 2)


def _columns() -> int:
    """shutil.get_terminal_size().columns."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def _described(summary: str, example: str | None = None) -> dict:
    """A parser's (or a subparser's) description, examples and form."""
    epilog = ("examples:\n  " + example.replace("\n", "\n  ")) if example else None
    return {"description": summary, "epilog": epilog, "formatter_class": Formatter,
            "allow_abbrev": False}  # fmt: skip


def build_parser(only: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only` (the command words of argv), just that command's
    arguments are filled in (the others are listed by name)."""
    return _built(None if only is None else tuple(only))


# Built once per process for each command's words: parsing leaves a parser as it was, and a
# process that runs several commands (the tests run hundreds in theirs) paid ~10 ms for each,
# half of it argparse's gettext lookups of its own messages.
@functools.cache
def _built(only: tuple[str, ...] | None) -> argparse.ArgumentParser:
    from .jobs import JOBS

    def wanted(*words: str) -> bool:
        return only is None or list(only[: len(words)]) == list(words)

    # A job's start-up builds its own parser alone: no user command is imported or built, and
    # no other job's (each subparser costs argparse ~1 ms, 30 of them a third of a start-up).
    # A word that names no job gets them all, so argparse's refusal lists the choices.
    one_job = bool(only) and only[0] == "job"
    if one_job:
        COMMANDS, DEMO = {}, {}
        if len(only) > 1 and only[1] in JOBS:
            JOBS = {only[1]: JOBS[only[1]]}
    else:
        from .seed import COMMANDS, DEMO

    example = "afbench fetch --release-dir .cache/af --all-models"
    parser = Parser(prog="afbench", **_described(DESCRIPTION, example))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(group, name: str, command, *words: str) -> None:
        described = _described(command.summary, getattr(command, "example", None))
        p = group.add_parser(name, help=command.summary, **described)
        p.set_defaults(handler=guarded(command.run))
        if wanted(*words):
            command.arguments(p)
            p.add_argument("--quiet", action="store_true", help=QUIET_HELP)

    for name, command in COMMANDS.items():
        add(sub, name, command, name)
    if not one_job:
        demo = sub.add_parser(
            "demo",
            help="the synthetic demo release: its files or its repository",
            formatter_class=Formatter,
        )
        demo_sub = demo.add_subparsers(dest="action", required=True, metavar="ACTION")
        for name, command in DEMO.items():
            add(demo_sub, name, command, "demo", name)
    job = sub.add_parser(
        "job",
        help="the pipeline's commands, one per Snakemake rule (files and typed settings only)",
        description="One command per rule of the workflow; Snakemake runs them.",
        formatter_class=Formatter,
    )
    job_sub = job.add_subparsers(dest="job", required=True, metavar="RULE")
    for name, command in JOBS.items():
        add(job_sub, name, command, "job", name)
    return parser


def words(argv: list[str]) -> list[str]:
    """The command words: the first one or two arguments that are not flags."""
    words = []
    for arg in argv:
        if arg.startswith("-"):
            break
        words.append(arg)
        if len(words) == 2:
            break
    return words


def guarded(run):
    """A command's body, run with its declared files checked and kept apart (fsutil), its
    outputs' locks held (locking.writing: two commands writing one output take turns), each
    unit it writes named in one line on standard error (cli.say), and progress bars on a
    terminal; neither with --quiet."""

    @functools.wraps(run)
    def handler(args: argparse.Namespace):
        from afbench.core import progress
        from afbench.core.fsutil import command_files
        from afbench.core.locking import writing

        from .say import listener
        from .types import declared_files

        quiet = bool(getattr(args, "quiet", False))
        inputs, outputs, trees, folders = declared_files(vars(args))
        shown = progress.show(not quiet)
        try:
            with (
                command_files(inputs, outputs, trees, folders, listener(quiet)),
                writing(
                    []
                    if getattr(run, "takes_its_own_turn", False)
                    else _written_whole(outputs, folders),
                    on_wait=None if quiet else _waiting,
                ),
            ):
                return run(args)
        finally:
            progress.show(shown)

    return handler


def _written_whole(outputs: list, folders: list) -> list:
    """What a command's lock covers: each output folder, and each output file outside them
    (a folder's files are covered by the folder's lock)."""
    inside = {str(folder.joinpath(name)) for folder in folders for name in folder.files}
    return [*folders, *(path for path in outputs if str(path) not in inside)]


def _waiting(target: str, who: dict | None) -> None:
    """On a terminal, why nothing happens yet (elsewhere a refusal stays one line)."""
    from afbench.core.locking import describe

    if not sys.stderr.isatty():
        return
    line = f"afbench: waiting for {describe(who)}, which is writing {target}"
    print(printable(line, 4000), file=sys.stderr)


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP: the command stops where it is, as Ctrl-C stops it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _interrupt(signum, frame):
    raise Interrupted(signum)


@contextlib.contextmanager
def _stop_signals():
    """SIGTERM and SIGHUP handled as SIGINT is, for the command's run (then as before)."""
    previous = {}
    try:
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            number = getattr(signal, name, None)
            if number is not None:
                previous[number] = signal.signal(number, _interrupt)
    except ValueError:  # not the main thread: signals stay as they are
        pass
    try:
        yield
    finally:
        for number, handler in previous.items():
            with contextlib.suppress(KeyboardInterrupt):  # one arriving now: the command is done
                signal.signal(number, handler)


def _shown(paths: list[str]) -> str:
    text = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return printable(text, 2000)


def _written_before() -> str:
    """What a failed command had already written (a command of several write steps)."""
    from afbench.core.fsutil import written_outputs

    written = written_outputs()
    return f" (written before this error, each whole: {_shown(written)})" if written else ""


def _interrupted_message(signum: int) -> str:
    from afbench.core.fsutil import written_outputs

    name = signal.Signals(signum).name
    written = written_outputs()
    if not written:
        return f"afbench: interrupted by {name}; nothing was replaced"
    return (
        f"afbench: interrupted by {name} after writing {_shown(written)} (each whole); "
        "nothing else was replaced"
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with _stop_signals():
        try:
            args = build_parser(words(argv)).parse_args(argv)
        except SystemExit as done:  # --help, or argparse's refusal (already printed)
            return done.code if isinstance(done.code, int) else 2
        except KeyboardInterrupt as stop:
            signum = getattr(stop, "signum", signal.SIGINT)
            tell(_interrupted_message(signum))
            return 128 + signum
        from afbench.core.fsutil import command_files

        # the command's own scope is opened by its handler; this outer one only keeps what was
        # written for the interruption message
        with command_files():
            try:
                for line in args.handler(args) or []:
                    tell(printable(f"afbench: warning: {line}", 4000))
            except AfbenchError as exc:
                tell(f"afbench: error: {exc}{_written_before()}")
                return 2
            except NotHeld as failed:
                tell(printable(f"afbench: {failed}", 4000))
                return 1
            except OSError as exc:
                where = f"{exc.filename}: " if exc.filename else ""
                tell(
                    printable(f"afbench: error: {where}{exc.strerror or exc}", 4000)
                    + _written_before()
                )
                return 2
            except KeyboardInterrupt as stop:
                signum = getattr(stop, "signum", signal.SIGINT)
                tell(printable(_interrupted_message(signum), 4000))
                return 128 + signum
    return 0


if __name__ == "__main__":
    sys.exit(main())
