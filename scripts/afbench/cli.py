"""The `afbench` command line: the interface page's commands, with explicit files.

Every command reads the files it is given and writes only the files it is given (or the
documented default names inside a folder it is given). Settings come from flags; a flag left
out is taken from the config files given with --config, or from the packaged official config.
Imports only what a subcommand needs, so a pipeline job starts fast.
"""

from __future__ import annotations

import argparse
import sys

from .errors import AfbenchError

EXAMPLES = {
    "fetch": "afbench fetch --release-dir .cache/autoformbench-af1aa38 --all-models\n"
    "afbench fetch --config config/demo.yaml --release-dir demo-release --all-models",
    "verify": "afbench verify --release-dir .cache/autoformbench-af1aa38",
    "tasks": "afbench tasks --release-dir .cache/autoformbench-af1aa38 --output tasks.json\n"
    "afbench tasks --release-dir .cache/autoformbench-af1aa38 --book algebraic_topology_i "
    "--limit 2 --output topology-two.json",
    "plan": "afbench plan --release-dir .cache/autoformbench-af1aa38 --repository-dir "
    "/absolute/path/to/autoformbench --task alg_top_theorem107 --agent nop --output nop-plan.json",
    "import-results": "afbench import-results --release-dir .cache/autoformbench-af1aa38 "
    "--all-models --source-condition source-present --budget-usd 200 --output reference.json",
    "import-model": "afbench import-model --catalog tasks.json --receipt REL/receipt.json "
    "--results REL/results/gpt-6-astra.csv --model gpt-6-astra --output gpt-6-astra.json",
    "compare": "afbench compare --import a.json --import b.json --summary summary.json "
    "--leaderboard leaderboard.csv [--strict-budget]",
    "verdict": "afbench verdict --path /absolute/path/to/verdict.json --task alg_top_theorem107 "
    "--output verdict-import.json",
    "import-run": "afbench import-run --selection two.json --name my-run --kind harbor "
    "--path jobs/job-1 --path jobs/job-2 --output-dir my-run",
    "execute": "afbench execute --plan nop-plan.json --task demo_s01_t001 --attempt 1 "
    "--output trial.json",
    "report": "afbench report --summary summary.json --import a.json --import b.json "
    "--catalog tasks.json --receipt REL/receipt.json --output-dir report",
    "artifacts": "afbench artifacts --root out --revision SHA1 --config-digest HEX "
    "--output out/manifest.json out/tasks.json out/reference.json",
    "demo": "afbench demo generate --out resources/demo-release\n"
    "afbench demo repo --release-files resources/demo-release --out demo-upstream",
    "discover": "afbench discover --checkout /abs/autoformbench --output-dir discovered",
    "export": "afbench export --root results/SHA1 --format csv --output-dir tables\n"
    "afbench export --root results/SHA1 --format parquet --output-dir tables "
    "--table leaderboard --table official_results",
}


def _config(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="config YAML for settings no flag gives (repeatable; later files merge over "
        "earlier; default: the packaged official config)",
    )


def _source_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("source (default: the config's `source:` and `release:`)")
    g.add_argument("--source-kind", choices=["https", "git", "dir"])
    g.add_argument(
        "--source-location",
        metavar="URL|DIR",
        help="https: base URL; git: checkout; dir: mirror folder",
    )
    g.add_argument("--repository", metavar="OWNER/NAME")
    g.add_argument("--revision", metavar="SHA1", help="the pinned 40-hex commit")
    for name in ("connect-timeout-s", "read-timeout-s", "total-timeout-s", "backoff-factor"):
        g.add_argument(f"--{name}", metavar="S")
    g.add_argument("--retries", metavar="N")
    g.add_argument("--max-bytes", metavar="N")


def _pin_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pin",
        action="append",
        metavar="KEY=PATH@SHA256",
        help="a release file and its pin (repeatable; default: config's pins)",
    )
    p.add_argument(
        "--skip",
        action="append",
        metavar="KEY=PATH",
        help="a file config names without a pin (repeatable)",
    )


def _identity_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("release identity (default: the config's `release:`)")
    g.add_argument("--release-name")
    g.add_argument("--synthetic", choices=["true", "false"])
    g.add_argument("--lean")
    g.add_argument("--mathlib")
    g.add_argument("--harbor-version")
    g.add_argument("--nominal-budget-usd", metavar="USD")
    g.add_argument(
        "--image",
        action="append",
        metavar="ROLE=REFERENCE@DIGEST",
        help="a prebuilt image (repeatable); empty reference or digest is unknown",
    )


def _selection_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--book",
        action="append",
        metavar="SOURCE_ID",
        help="keep tasks of this source (repeatable)",
    )
    p.add_argument("--task", action="append", metavar="ID", help="keep this task (repeatable)")
    p.add_argument("--limit", metavar="N", help="keep the first N selected tasks")
    p.add_argument("--name", help="the selection's name (default: the output file's stem)")


def _release_inputs(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--release-dir",
        metavar="DIR",
        help=f"a fetched release (with receipt.json): {what} from it",
    )


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, the other subcommands are listed but not filled in."""
    parser = argparse.ArgumentParser(
        prog="afbench",
        description="Reproducible, auditable tools for the AutoformBench benchmark: fetch and "
        "verify the pinned release, export tasks, plan Harbor runs, import results, report.",
        epilog="example: afbench fetch --release-dir .cache/autoformbench-af1aa38 --all-models",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog="examples:\n  " + EXAMPLES[name].replace("\n", "\n  "),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        return p if only in (None, name) else argparse.ArgumentParser(add_help=False)

    p = command("fetch", "fetch release files and verify every byte against its SHA-256 pin")
    _config(p)
    p.add_argument(
        "--release-dir",
        metavar="DIR",
        help="fetch MANIFEST, SOURCES (and models) into DIR and write DIR/receipt.json",
    )
    models = p.add_mutually_exclusive_group()
    models.add_argument("--all-models", action="store_true", help="every model with a pin")
    models.add_argument("--model", action="append", metavar="SLUG", help="repeatable")
    p.add_argument("--file", metavar="PATH", help="fetch one file (release-relative path)")
    p.add_argument("--sha256", metavar="HEX", help="the pin of --file")
    p.add_argument("--output", metavar="FILE", help="where --file lands")
    _source_flags(p)

    p = command("verify", "re-hash fetched release files against their pins; write receipts")
    _config(p)
    p.add_argument("--release-dir", metavar="DIR", help="re-verify a whole fetched release")
    p.add_argument("--file", metavar="FILE", help="verify one fetched file (with one --pin)")
    p.add_argument(
        "--entry",
        action="append",
        metavar="FILE",
        help="combine verified-file records into the receipt (repeatable)",
    )
    p.add_argument("--output", metavar="FILE", help="default: DIR/receipt.json")
    _pin_flags(p)
    _identity_flags(p)
    _source_flags(p)

    p = command("tasks", "export the source-free task catalog, or a selection of it")
    _config(p)
    _release_inputs(p, "MANIFEST, SOURCES and the receipt are read")
    p.add_argument("--manifest", metavar="FILE")
    p.add_argument("--sources", metavar="FILE")
    p.add_argument(
        "--receipt",
        action="append",
        metavar="FILE",
        help="the receipt or verified-file records of MANIFEST and SOURCES",
    )
    p.add_argument("--catalog", metavar="FILE", help="select from this catalog")
    p.add_argument("--output", metavar="FILE", required=True)
    _selection_flags(p)
    p.add_argument("--manifest-column", action="append", metavar="FIELD=COLUMN")
    p.add_argument("--sources-column", action="append", metavar="FIELD=COLUMN")
    p.add_argument("--expected-counts", metavar="TASKS,SOURCES,OBLIGATIONS")

    p = command("plan", "write a Harbor 0.22.0 run plan (argument vectors; never executed)")
    _config(p)
    _release_inputs(p, "the catalog is built in memory")
    p.add_argument("--catalog", metavar="FILE")
    p.add_argument("--selection", metavar="FILE")
    _selection_flags(p)
    p.add_argument(
        "--repository-dir",
        metavar="DIR",
        help="absolute path of an upstream checkout at the pinned revision",
    )
    p.add_argument("--agent", default="nop", help="Harbor agent (default nop)")
    p.add_argument("--model", help="provider/model, required for agents other than nop/oracle")
    p.add_argument("--tasks-dir", help="exported tasks folder (relative to the checkout)")
    p.add_argument("--jobs-dir", help="Harbor's -o folder")
    p.add_argument("--environment-type", help="Harbor's -e")
    p.add_argument("--harbor", metavar="EXECUTABLE", help="the harbor executable")
    p.add_argument("--output", metavar="FILE", required=True)
    p.add_argument("--manifest-column", action="append", metavar="FIELD=COLUMN")
    p.add_argument("--sources-column", action="append", metavar="FIELD=COLUMN")
    p.add_argument("--expected-counts", metavar="TASKS,SOURCES,OBLIGATIONS")

    p = command("import-results", "import the official per-model results and compare them")
    _config(p)
    p.add_argument("--release-dir", metavar="DIR", required=True)
    models = p.add_mutually_exclusive_group(required=True)
    models.add_argument("--all-models", action="store_true", help="every model with a pin")
    models.add_argument("--model", action="append", metavar="SLUG", help="repeatable")
    p.add_argument("--source-condition", choices=["source-present", "source-free"])
    p.add_argument("--budget-usd", metavar="USD")
    p.add_argument(
        "--strict-budget",
        action="store_true",
        help="refuse the comparison if any reported cost exceeds the budget",
    )
    p.add_argument("--output", metavar="FILE", required=True)

    p = command("import-model", "import one model's official results against the catalog")
    _config(p)
    p.add_argument("--catalog", metavar="FILE", required=True)
    p.add_argument(
        "--receipt",
        action="append",
        metavar="FILE",
        required=True,
        help="the receipt, or the results file's verified-file record",
    )
    p.add_argument("--results", metavar="FILE", required=True)
    p.add_argument("--model", metavar="SLUG", required=True)
    p.add_argument("--display-name")
    p.add_argument("--pinned-condition", choices=["source-present", "source-free"])
    p.add_argument("--source-condition", choices=["source-present", "source-free"])
    p.add_argument("--budget-usd", metavar="USD")
    p.add_argument("--column", action="append", metavar="FIELD=COLUMN")
    p.add_argument("--output", metavar="FILE", required=True)

    p = command("compare", "compare model imports like for like; summary and leaderboard")
    p.add_argument("--import", dest="imports", action="append", metavar="FILE", required=True)
    p.add_argument(
        "--receipt",
        action="append",
        metavar="FILE",
        help="refuse imports older than the pins in these receipts (repeatable)",
    )
    p.add_argument("--strict-budget", action="store_true")
    p.add_argument("--summary", metavar="FILE", required=True)
    p.add_argument("--leaderboard", metavar="FILE", required=True)

    p = command("verdict", "check one verifier verdict JSON (reward 1 / 0 / null)")
    p.add_argument("--path", required=True, help="the verdict JSON file")
    p.add_argument("--task", required=True, help="the task id the verdict must be for")
    p.add_argument("--output", help="write the import here (default: standard output)")

    p = command("import-run", "import a local run: Harbor job directories or verdict files")
    p.add_argument(
        "--selection", metavar="FILE", required=True, help="the selection the run was made on"
    )
    p.add_argument("--name", required=True, help="the run's name")
    p.add_argument("--kind", choices=["harbor", "verdicts"], required=True)
    p.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="DIR",
        help="a job directory or verdict folder (repeatable)",
    )
    p.add_argument(
        "--executed",
        action="append",
        default=[],
        metavar="FILE",
        help="a trial receipt of `afbench execute`: its Harbor job (repeatable)",
    )
    p.add_argument("--budget-usd", metavar="USD", help="default: the release's nominal budget")
    p.add_argument(
        "--output-dir",
        metavar="DIR",
        help="writes summary.json, outcomes.csv and attempts.csv there",
    )
    p.add_argument("--summary", metavar="FILE")
    p.add_argument("--outcomes", metavar="FILE")
    p.add_argument("--attempts", metavar="FILE")

    p = command("execute", "run one planned trial: export, check, harbor run; write a receipt")
    p.add_argument("--plan", metavar="FILE", required=True)
    p.add_argument("--task", metavar="ID", required=True)
    p.add_argument("--attempt", metavar="N", default="1", help="attempt number (default 1)")
    p.add_argument(
        "--env",
        action="append",
        metavar="NAME=VALUE",
        help="extra environment for the steps (repeatable)",
    )
    p.add_argument(
        "--allow-model-agent",
        action="store_true",
        help="let an agent other than nop/oracle run (it spends money)",
    )
    p.add_argument("--output", metavar="FILE", required=True, help="the trial receipt")

    p = command("report", "write the analysis, the figures and the HTML report")
    p.add_argument("--summary", metavar="FILE", required=True)
    p.add_argument("--import", dest="imports", action="append", metavar="FILE", required=True)
    p.add_argument("--catalog", metavar="FILE", required=True)
    p.add_argument("--receipt", metavar="FILE", required=True)
    p.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="FILE",
        help="a local run's summary.json (repeatable)",
    )
    p.add_argument("--confidence", default="0.95")
    p.add_argument("--settings-digest", help="digest of the settings shown in provenance")
    p.add_argument(
        "--output-dir",
        metavar="DIR",
        help="writes index.html, analysis.json and figures/*.svg there",
    )
    p.add_argument("--html", metavar="FILE")
    p.add_argument("--analysis", metavar="FILE")
    p.add_argument(
        "--figure",
        action="append",
        metavar="FILE",
        help="a figure's path; its stem names it (repeatable)",
    )

    p = command("artifacts", "write the artifact manifest: every artifact with its SHA-256")
    p.add_argument("files", nargs="*", metavar="FILE")
    p.add_argument("--root", metavar="DIR", required=True)
    p.add_argument("--revision", required=True)
    p.add_argument("--config-digest", required=True)
    p.add_argument("--output", metavar="FILE", required=True)

    p = command("demo", "generate the synthetic demo release or its git repository")
    p.add_argument("action", choices=["generate", "repo"])
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument(
        "--release-files",
        default="resources/demo-release",
        help="(repo) the demo release files to commit",
    )

    p = command("discover", "read pins, paths and columns from an upstream checkout")
    _config(p)
    p.add_argument("--checkout", required=True, help="a git checkout of the upstream repo")
    p.add_argument("--revision", metavar="SHA1")
    p.add_argument("--max-bytes", metavar="N")
    _pin_flags(p)
    p.add_argument("--column", action="append", metavar="KIND.FIELD=COLUMN")
    p.add_argument("--display-name", action="append", metavar="SLUG=NAME")
    p.add_argument(
        "--output-dir",
        metavar="DIR",
        help="writes discovery.json and discovered.yaml there (default: .)",
    )
    p.add_argument("--discovery", metavar="FILE", help="instead of DIR/discovery.json")
    p.add_argument("--fragment", metavar="FILE", help="instead of DIR/discovered.yaml")

    p = command("export", "write the artifact directory's tables as CSV or parquet files")
    p.add_argument(
        "--root",
        metavar="DIR",
        required=True,
        help="an artifact directory (results/<revision>); artifacts are found by their kind",
    )
    p.add_argument(
        "--format",
        choices=["csv", "parquet"],
        required=True,
        help="parquet needs the optional extra: pip install 'afbench[parquet]'",
    )
    p.add_argument(
        "--output-dir", metavar="OUT", required=True, help="writes OUT/<table>.csv or .parquet"
    )
    p.add_argument(
        "--table",
        action="append",
        metavar="NAME",
        help="a table to write (repeatable; default: every table the folder has): tasks, "
        "official_results, leaderboard, comparisons, run_attempts, run_outcomes",
    )
    return parser


def _safe(text: str) -> str:
    """Printable on any terminal: lone surrogates and the like are escaped, never fatal."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(chosen if chosen in EXAMPLES else None).parse_args(argv)
    from . import commands

    handler = getattr(commands, "cmd_" + args.command.replace("-", "_"))
    try:
        for line in handler(args) or []:
            print(_safe(f"afbench: warning: {line}"), file=sys.stderr)
    except AfbenchError as exc:
        print(_safe(f"afbench: error: {exc}"), file=sys.stderr)
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        print(_safe(f"afbench: error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("afbench: interrupted; nothing partial was left at a final path", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
