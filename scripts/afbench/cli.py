"""The `afbench` command line. Imports only what a subcommand needs, so it starts fast."""

from __future__ import annotations

import argparse
import sys

from .errors import AfbenchError

EXAMPLES = {
    "fetch": "afbench fetch --config config/demo.yaml\n"
    "afbench fetch --config config/config.yaml --only manifest",
    "tasks": "afbench tasks --config config/demo.yaml\n"
    "afbench tasks --config config/demo.yaml --name two --book demo_source_03 "
    "--limit 2",
    "plan": "afbench plan --config config/demo.yaml\n"
    "afbench plan --config config/config.yaml --selection all --agent claude-code "
    "--model anthropic/claude-opus-4-1 --repository-dir /abs/path/autoformbench",
    "import-results": "afbench import-results --config config/demo.yaml --all-models\n"
    "afbench import-results --config config/demo.yaml --model demo-model-a "
    "--source-condition source-present --budget-usd 200 --strict-budget",
    "verdict": "afbench verdict --path /abs/verdict.json --task alg_top_theorem107 "
    "--output verdict-import.json",
    "import-run": "afbench import-run --config config/demo.yaml --name my-run --kind harbor "
    "--path jobs/job-1 --path jobs/job-2 --selection demo-first-tasks",
    "report": "afbench report --config config/demo.yaml",
    "audit": "afbench audit --config config/demo.yaml",
    "demo": "afbench demo generate --out resources/demo-release\n"
    "afbench demo repo --out results/demo-upstream",
    "discover": "afbench discover --config config/config.yaml --checkout /abs/autoformbench",
}


def _add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="config YAML (repeatable; later files are merged over earlier)",
    )
    parser.add_argument("--config-json", metavar="JSON", help=argparse.SUPPRESS)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, the other subcommands are listed but not filled in (each job
    of the pipeline is one CLI call, so its start-up time counts)."""
    parser = argparse.ArgumentParser(
        prog="afbench",
        description="Reproducible, auditable pipeline for the AutoformBench benchmark. Every "
        "artifact lands under results/<revision>/.",
        epilog="example: afbench fetch --config config/demo.yaml && afbench tasks --config "
        "config/demo.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        parser = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog="examples:\n  " + EXAMPLES[name].replace("\n", "\n  "),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        # arguments of the other commands go to a throwaway parser when `only` is set
        return parser if only in (None, name) else argparse.ArgumentParser(add_help=False)

    p = command("fetch", "fetch the pinned release files and verify every byte (SHA-256)")
    _add_config(p)
    p.add_argument(
        "--only",
        action="append",
        metavar="KEY",
        help="fetch only this file: manifest, sources or a model slug (repeatable)",
    )

    p = command("tasks", "write the task catalog and task selections")
    _add_config(p)
    p.add_argument("--catalog-only", action="store_true", help="write only the catalog")
    p.add_argument(
        "--selection",
        action="append",
        metavar="NAME",
        help="write only this configured selection (repeatable)",
    )
    p.add_argument("--name", help="write an ad-hoc selection with this name")
    p.add_argument("--task", action="append", metavar="ID", help="select a task (repeatable)")
    p.add_argument(
        "--book", action="append", metavar="SOURCE_ID", help="select a book/source (repeatable)"
    )
    p.add_argument("--limit", metavar="N", help="keep the first N selected tasks")

    p = command("plan", "write Harbor 0.22.0 run plans (argument vectors; never executed)")
    _add_config(p)
    p.add_argument("--selection", metavar="NAME", help="plan this selection (else config's)")
    p.add_argument("--agent", default=None, help="Harbor agent (default nop)")
    p.add_argument("--model", default=None, help="provider/model, required for real agents")
    p.add_argument(
        "--repository-dir",
        default=None,
        help="absolute path of an upstream checkout at the pinned revision",
    )

    p = command("import-results", "import the official per-model results with strict checks")
    _add_config(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--model", action="append", metavar="SLUG", help="repeatable")
    group.add_argument("--all-models", action="store_true", help="every model with a pin")
    p.add_argument("--source-condition", choices=["source-present", "source-free"])
    p.add_argument("--budget-usd", type=float)
    p.add_argument(
        "--strict-budget",
        action="store_true",
        default=None,
        help="refuse the comparison if any reported cost exceeds the budget",
    )
    p.add_argument("--models-only", action="store_true", help="per-model imports, no summary")
    p.add_argument(
        "--summary-only", action="store_true", help="summary from existing per-model imports"
    )

    p = command("verdict", "check one verifier verdict JSON (reward 1 / 0 / null)")
    p.add_argument("--path", required=True, help="the verdict JSON file")
    p.add_argument("--task", required=True, help="the task id the verdict must be for")
    p.add_argument("--output", help="write the import here (default: standard output)")

    p = command("import-run", "import a local run: Harbor job directories or verdict files")
    _add_config(p)
    p.add_argument("--run", metavar="NAME", help="a run configured under runs:")
    p.add_argument("--name", help="name of an ad-hoc run")
    p.add_argument("--kind", choices=["harbor", "verdicts"])
    p.add_argument("--path", action="append", metavar="DIR", help="repeatable (attempts)")
    p.add_argument("--selection", metavar="NAME", help="the selection the run was made on")
    p.add_argument("--budget-usd", type=float)

    p = command("report", "write the analysis and the HTML report")
    _add_config(p)

    p = command("audit", "write audit.json: every artifact with its SHA-256")
    _add_config(p)
    p.add_argument(
        "--file",
        action="append",
        metavar="PATH",
        help="artifacts to list (default: every file under results/<revision>)",
    )

    p = command("demo", "generate the synthetic demo release or its git repository")
    p.add_argument("action", choices=["generate", "repo"])
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument(
        "--release-files",
        default="resources/demo-release",
        help="(repo) the demo release files to commit",
    )

    p = command("discover", "read pins, paths and columns from an upstream checkout")
    _add_config(p)
    p.add_argument("--checkout", required=True, help="a git checkout of the upstream repo")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(chosen if chosen in EXAMPLES else None).parse_args(argv)
    from . import commands

    handler = getattr(commands, "cmd_" + args.command.replace("-", "_"))
    try:
        for line in handler(args) or []:
            print(f"afbench: warning: {line}", file=sys.stderr)
    except AfbenchError as exc:
        print(f"afbench: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"afbench: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("afbench: interrupted; nothing partial was left at a final path", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
