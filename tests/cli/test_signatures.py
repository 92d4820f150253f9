"""Each job verb's signature, declared once (afbench.cli.signatures): the parser made from it,
the flags the user's door takes from it, and the rule's shell line it makes and checks."""

from __future__ import annotations

import argparse
import sys

import pytest

from afbench import kinds
from afbench.cli import build_parser
from afbench.cli.jobs import JOBS
from afbench.cli.signatures import SIGNATURES, name_of, shell_line, values
from afbench.cli.types import declared_files


def _parser(verb: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    JOBS[verb].arguments(parser)
    return parser


def test_every_verb_has_a_signature_and_its_parser_is_made_from_it():
    assert set(SIGNATURES) == set(JOBS)
    for verb, signature in SIGNATURES.items():
        actions = {a.dest: a for a in _parser(verb)._actions if a.dest != "help"}
        assert list(actions) == [name_of(arg) for arg in signature.args], verb
        for arg in signature.args:
            action = actions[name_of(arg)]
            assert action.type is arg.type and action.help == arg.help, (verb, arg.flag)
            assert action.default == (None if not arg.flag.startswith("-") else arg.default)


def test_a_declared_kind_is_an_artifact_kind_and_every_path_says_read_or_write():
    declared = {name for name in kinds._HOME if isinstance(getattr(kinds, name), kinds.Kind)}
    declared |= {name for name in kinds._HOME if isinstance(getattr(kinds, name), kinds.Table)}
    for verb, signature in SIGNATURES.items():
        for arg in signature.args:
            assert arg.kind is None or arg.kind in declared, (verb, arg.flag, arg.kind)
            assert arg.role in ("reads", "writes", "takes")
            if arg.role == "reads" and arg.type is not None:
                inputs, outputs, _, _ = declared_files({"x": arg.type("some/file")})
                assert inputs and not outputs, (verb, arg.flag)
            if arg.role == "writes":
                inputs, outputs, _, folders = declared_files({"x": arg.type("some/file")})
                assert (outputs or folders) and not inputs, (verb, arg.flag)


def test_values_are_what_the_parser_makes_and_refuse_an_undeclared_name():
    line = ["job", "analyse-run-failures", "--summary=s.json", "--outcomes=o.csv"]
    parsed = vars(build_parser(line[:2]).parse_args([*line, "--output=a.json"]))
    made = values("analyse-run-failures", summary=parsed["summary"], outcomes=parsed["outcomes"])
    assert vars(made) == {k: parsed[k] for k in vars(made)} | {"output": None}
    with pytest.raises(TypeError, match="render-report has no argument figures"):
        values("render-report", figures=[])


def test_the_shell_line_names_each_flag_once_from_the_declaration():
    assert shell_line(
        "analyse-failures", "imports=params.imports", "near_miss_share", "output=output.table"
    ) == (
        "afbench job analyse-failures {params.imports} {params.near_miss_share} "
        "--output={output.table:q} 2> {log:q}"
    )
    assert shell_line("write-artifact-manifest", *WRITE_MANIFEST, log="> {log:q} 2>&1") == (
        "afbench job write-artifact-manifest --root={input.root:q} {params.revision} "
        "{params.config_digest} --output={output:q} {input:q} > {log:q} 2>&1"
    )
    with pytest.raises(ValueError, match="near_miss is not one of its arguments"):
        shell_line("analyse-failures", "imports=params.imports", "near_miss", "output=output")
    with pytest.raises(ValueError, match="imports is not one of its arguments, once"):
        shell_line("analyse-failures", "imports", "imports=params.imports", "output=output")
    with pytest.raises(ValueError, match="its rule does not give near_miss_share"):
        shell_line("analyse-failures", "imports=params.imports", "output=output")


WRITE_MANIFEST = ("root", "revision", "config_digest", "output=output", "files=input")


def test_the_user_door_takes_the_flags_it_shares_with_a_job_from_the_job():
    """`afbench report`'s options are render-report's: the same flags with the same types and
    help (the confidence defaulted, where the rule always passes it)."""
    report = build_parser(["report"])._subparsers._group_actions[0].choices["report"]
    job = _parser("render-report")
    shared = {a.dest: a for a in job._actions}
    for action in report._actions:
        if action.dest in shared and action.dest != "help":
            assert action.type is shared[action.dest].type, action.dest
            assert action.help == shared[action.dest].help, action.dest
    assert {"summary", "imports", "catalog", "receipt", "task_table"} <= {
        a.dest for a in report._actions
    }


def _spelled_by_the_user_door(command, monkeypatch) -> set[str]:
    """The flags `command`'s arguments spell in afbench.cli.seed itself, not taken from a
    signature: each argument it declares that no verb's signature gave it (pick marks those
    with their verb), and each add_argument call made from that file."""
    from afbench.cli import seed

    spelled: set[str] = set()
    original, add = argparse._ActionsContainer.add_argument, seed.add

    def recording(self, *flags, **options):
        if sys._getframe(1).f_code.co_filename == seed.__file__:
            spelled.update(flags)
        return original(self, *flags, **options)

    def declared(parser, args, *groups):
        spelled.update(arg.flag for arg in args if arg.verb is None)
        return add(parser, args, *groups)

    monkeypatch.setattr(argparse._ActionsContainer, "add_argument", recording)
    monkeypatch.setattr(seed, "add", declared)
    command.arguments(argparse.ArgumentParser())
    monkeypatch.undo()
    return spelled


def test_no_flag_is_spelled_twice(monkeypatch):
    """A user command takes every flag it shares with its job verbs from their signatures: of
    the flags it spells itself, none is one of theirs; and the commands named below do have a
    job verb (so the check covers them)."""
    from afbench.cli.seed import COMMANDS, DEMO

    commands = {**COMMANDS, **{f"demo {name}": command for name, command in DEMO.items()}}
    with_verbs = {name for name, command in commands.items() if command.verbs}
    assert {"power", "diff", "decide", "preregister", "import-results", "report"} <= with_verbs
    twice = []
    for name, command in commands.items():
        theirs = {
            flag
            for verb in command.verbs
            for action in _parser(verb)._actions
            for flag in action.option_strings
        }
        twice += [
            f"{name} {flag}"
            for flag in _spelled_by_the_user_door(command, monkeypatch) & theirs - {"-h", "--help"}
        ]
    assert twice == [], "flags spelled in the user's door and in a job verb's signature"


def test_the_check_sees_a_flag_spelled_twice(monkeypatch):
    """The recording above sees a flag spelled in cli.seed (the test can fail)."""
    from afbench.cli.seed import COMMANDS

    assert "--models" in _spelled_by_the_user_door(COMMANDS["power"], monkeypatch)
    assert "--difference" not in _spelled_by_the_user_door(COMMANDS["power"], monkeypatch)
