"""Shared fixtures: releases made on disk, real git repositories, a real HTTP server."""

from __future__ import annotations

import contextlib
import copy
import fcntl
import functools
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, settings

from afbench.cli import build_parser, words
from afbench.core import harbor
from afbench.core.config import (
    file_for,
    load_config,
    validate_config,
)
from afbench.core.fsutil import (
    sha256_bytes,
)
from afbench.kinds import CATALOG, SELECTION
from afbench.kinds.tasks import TASK as TASK_ROW
from afbench.plans.plan import build_plan
from afbench.release import demo
from afbench.release.identity import identity, read_verified

import properties as prop

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "harbor-0.22.0-jobs"
OWNER_REPO = "afbench/test-release"


# `make test-fast` (AFBENCH_QUICK_PROPERTIES=1) runs each property test on a quarter of its
# examples, at least 10, the way Hypothesis' documentation keeps a quick profile for iteration;
# `make test`, which CI runs, gives every property its full count
QUICK_PROPERTIES = os.environ.get("AFBENCH_QUICK_PROPERTIES") == "1"


def examples(count: int) -> int:
    """A property test's number of examples: `count`, or a quarter of it in a quick run."""
    return max(10, count // 4) if QUICK_PROPERTIES else count


# every property test: no per-example deadline (Hypothesis' 200 ms is a timing assertion that a
# loaded CI machine can fail at random; speed is measured in bench/, not asserted here)
settings.register_profile("afbench", deadline=None, max_examples=examples(100))
settings.load_profile("afbench")


# the machine's shared engines: under xdist (`make test` runs `-n 3 --dist loadgroup`) the tests
# that drive them run one after another on one worker, as they do in a serial run (they wait
# for SLURM's queue to empty, count a cluster's submissions, watch Docker's containers, time
# trials), while the other workers take the rest
SHARED_ENGINES = ("slurm", "docker", "harbor")


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if any(item.get_closest_marker(name) for name in SHARED_ENGINES):
            item.add_marker(pytest.mark.xdist_group("shared-engines"))


@pytest.fixture(autouse=True)
def _private_temporary_folder(request, monkeypatch):
    """Harbor's docker environment leaves its compose files (tmpXXXXXXXX/docker-compose-*.json)
    in the temporary folder: the trial tests' processes get a short one of their own, removed
    after the test."""
    if not any(request.node.get_closest_marker(name) for name in ("harbor", "docker")):
        yield
        return

    folder = tempfile.mkdtemp(prefix="afbench-test-")
    monkeypatch.setenv("TMPDIR", folder)
    yield
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def release_files() -> dict[str, bytes]:
    return demo.generate_release()


@pytest.fixture(scope="session")
def demo_yaml() -> dict:
    return yaml.safe_load((REPO / "config" / "demo.yaml").read_text())


def refusal_lines(err: str) -> list[str]:
    """What a command printed on standard error from its first `afbench:` line on: the lines
    before it are the summary lines of what it wrote before it stopped (cli.say), each one
    line that is neither indented nor afbench's own."""
    lines = [line for line in err.splitlines() if line.strip()]
    first = next((i for i, line in enumerate(lines) if line.startswith("afbench: ")), len(lines))
    for said in lines[:first]:
        assert " -> " in said and not said[0].isspace(), err
    return lines[first:]


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return root


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t.invalid",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    return subprocess.run(
        ["git", "-c", "commit.gpgSign=false", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def make_git_repo(root: Path, files: dict[str, bytes]) -> tuple[Path, str]:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    write_tree(root, files)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "release")
    return root, git(root, "rev-parse", "HEAD")


def config_for(
    files: dict[str, bytes], revision: str, source: dict, results: Path, base: dict, **sections
) -> dict:
    """A validated config whose pins are the sha256 of `files`."""
    cfg = copy.deepcopy(base)
    cfg.pop("demo", None)
    cfg["results_dir"] = str(results)
    cfg["release"]["revision"] = revision
    cfg["release"]["repository"] = OWNER_REPO
    cfg["source"] = source
    for key in ("manifest", "sources"):
        cfg["files"][key]["sha256"] = sha256_bytes(files[cfg["files"][key]["path"]])
    for spec in cfg["models"].values():
        spec["sha256"] = sha256_bytes(files[spec["path"]])
    cfg["plans"]["repository_dir"] = None
    cfg["plans"]["items"] = []
    cfg.update(sections)
    return validate_config(cfg, "test config")


@pytest.fixture
def dir_config(tmp_path, release_files, demo_yaml) -> dict:
    mirror = write_tree(tmp_path / "mirror", release_files)
    return config_for(
        release_files,
        "a" * 40,
        {"kind": "dir", "mirror": str(mirror)},
        tmp_path / "results",
        demo_yaml,
    )


@pytest.fixture
def fetched_config(dir_config) -> dict:
    fetch_release(dir_config)
    return dir_config


# the CLI in-process, with a config dict written to a file: errors propagate as AfbenchError
def revision_dir(cfg: dict) -> Path:
    return Path(cfg["results_dir"]) / cfg["release"]["revision"]


def release_dir(cfg: dict) -> Path:
    return revision_dir(cfg) / "release"


def config_file(cfg: dict) -> str:
    # libyaml's dumper: PyYAML's own takes ~20 ms a config, and hundreds are written
    text = yaml.dump(cfg, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
    path = (
        Path(cfg["results_dir"]).parent
        / f"config-{hashlib.sha256(text.encode()).hexdigest()[:12]}.yaml"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def afbench(*argv: str, cfg: dict | None = None):
    """One afbench command run in this process; returns its warnings. With `cfg`, a seed
    command reads it as its --config."""
    argv = [str(a) for a in argv] + (["--config", config_file(cfg)] if cfg is not None else [])
    args = build_parser(words(argv)).parse_args(argv)
    return args.handler(args)


def job(*argv: str):
    """`afbench job ...` in this process, its flags as the workflow's rules pass them."""
    return afbench("job", *argv)


VERDICTS = {
    "demo_s01_t001": "accepted",
    "demo_s01_t002": "rejected",
    "demo_s01_t003": "error",
}  # the verdict run add_local_runs imports


def verdict(task_id: str, status: str) -> dict:
    """A verifier verdict of the format `afbench verdict` and verdict-folder runs read."""
    ok = status == "accepted"
    return {
        "task_id": task_id,
        "status": status,
        "obligations": [
            {"declaration": "D.x", "status": "accepted" if ok else "rejected", "detail": ""}
        ],
        "checks": {
            "target_equivalence": True,
            "allowed_axioms": True,
            "lean_kernel": ok,
            "nanoda_replay": ok,
        },
        "error": {"kind": "timeout", "message": "verifier timed out"}
        if status == "error"
        else None,
        "verifier": {"name": "comparator", "version": "1.0"},
    }


def declared(kind, **fields) -> dict:
    """A record of `kind` (an afbench.kinds Kind, or a nested Shape) with these fields and
    every other declared field at the least value of its declared type (null where null is
    allowed, an empty list or map, 0, "", the first of a closed set): for a test that needs
    only some of an artifact's fields, and still an artifact every reader accepts."""
    from afbench.kinds import Kind, placeholder

    least = {f.name: placeholder(f) for f in kind.fields if not f.optional}
    if isinstance(kind, Kind):
        return kind.record(**{**least, **fields})
    return kind.row(**{**least, **fields})


def add_local_runs(base: Path, rev: Path) -> tuple[list[Path], list[str], Path]:
    """Two local runs under rev/runs/, imported as the pipeline's import_run does: the Harbor
    0.22.0 fixture jobs (harbor-fixtures, on a selection of their own task ids) and a verdict
    folder on three demo tasks (verdicts-three, VERDICTS). Returns the fixture jobs, their task
    ids and their selection."""

    catalog = rev / "tasks/catalog.json"
    jobs = sorted(FIXTURES.iterdir())
    tasks = sorted({t.name.split("__")[0] for j in jobs for t in j.iterdir() if t.is_dir()})
    selection = base / "fixture-selection.json"
    selection.write_text(
        json.dumps(
            declared(
                SELECTION,
                name="harbor-fixtures",
                release=json.loads(catalog.read_text())["release"],
                selection_sha256="0" * 64,
                task_ids=tasks,
            )
        )
    )
    afbench(
        *["import-run", "--selection", selection, "--name", "harbor-fixtures"],
        *["--kind", "harbor", *[arg for j in jobs for arg in ("--path", j)]],
        *["--output-dir", rev / "runs/harbor-fixtures"],
    )
    three = rev / "tasks/selections/three.json"
    job(
        *["select-tasks", f"--catalog={catalog}", "--name=three"],
        *[f"--task={t}" for t in VERDICTS],
        f"--output={three}",
    )
    folder = base / "verdicts"
    folder.mkdir()
    for task, status in VERDICTS.items():
        (folder / f"{task}.json").write_text(json.dumps(verdict(task, status)))
    afbench(
        *["import-run", "--selection", three, "--name", "verdicts-three"],
        *["--kind", "verdicts", "--path", folder, "--output-dir", rev / "runs/verdicts-three"],
    )
    for run in ("harbor-fixtures", "verdicts-three"):  # as the workflow's analyse_run_failures
        job(
            *["analyse-run-failures", f"--summary={rev / 'runs' / run / 'summary.json'}"],
            f"--outcomes={rev / 'runs' / run / 'outcomes.csv'}",
            f"--output={rev / 'runs' / run / 'failure-anatomy.json'}",
        )
    return jobs, tasks, selection


def source_flags(cfg: dict) -> list[str]:
    source = cfg["source"]
    from afbench.core.config import SOURCE_LOCATION

    location = source[SOURCE_LOCATION[source["kind"]]]
    return [f"--source-kind={source['kind']}", f"--source-location={location}"]


def transport_flags(cfg: dict) -> list[str]:
    from afbench.core.config import TRANSPORT_SETTINGS

    return [f"--{k.replace('_', '-')}={cfg['source'][k]}" for k in TRANSPORT_SETTINGS]


def column_flags(flag: str, mapping: dict[str, str]) -> list[str]:
    return [f"--{flag}={ours}={theirs}" for ours, theirs in mapping.items()]


def published_flags(cfg: dict) -> list[str]:
    """The compare-models job's published facts and strictness, as the workflow passes them."""
    from afbench.core.config import published_facts

    facts = published_facts(cfg)
    return [
        f"--published-source={facts['source'] or ''}",
        f"--published-task-rows={facts['task_rows'] or ''}",
        *[f"--published-passes={slug}={n}" for slug, n in facts["passes"].items()],
        *[
            f"--published-over-budget={slug}={usd!r}"
            for slug, costs in facts["over_budget_usd"].items()
            for usd in costs
        ],
        f"--strict-published={str(cfg['import']['strict_published']).lower()}",
    ]


def fetch_release(cfg: dict, only: list[str] | None = None) -> list[str]:
    """Every pinned file and the receipt (`afbench fetch --release-dir … --all-models`), or just
    the files named in `only` (a model through --model, a file through `job fetch-file`)."""
    if not only:
        return afbench("fetch", "--release-dir", release_dir(cfg), "--all-models", cfg=cfg)
    for key in only:
        spec = file_for(cfg, key)
        if spec.kind == "results":
            afbench("fetch", "--release-dir", release_dir(cfg), "--model", key, cfg=cfg)
        else:
            job(
                "fetch-file",
                f"--file={spec.path}",
                f"--sha256={spec.sha256}",
                *source_flags(cfg),
                f"--repository={cfg['release']['repository']}",
                f"--revision={cfg['release']['revision']}",
                *transport_flags(cfg),
                f"--output={release_dir(cfg) / spec.path}",
            )
    return []


def read_verified_file(cfg: dict, key: str) -> bytes:
    spec = file_for(cfg, key)
    return read_verified(release_dir(cfg) / spec.path, spec.sha256)


def catalog_of(cfg: dict) -> dict:
    out = revision_dir(cfg) / "tasks" / "catalog.json"
    afbench("tasks", "--release-dir", release_dir(cfg), "--output", out, cfg=cfg)
    return json.loads(out.read_text())


def import_model(cfg: dict, slug: str, condition: str = "source-present") -> dict:
    """`afbench job import-model` on a fetched release (the catalog is exported first)."""
    catalog_of(cfg)
    out = revision_dir(cfg) / "imports" / f"{slug}.json"
    spec = cfg["models"][slug]
    job(
        "import-model",
        f"--catalog={revision_dir(cfg) / 'tasks' / 'catalog.json'}",
        f"--verified={release_dir(cfg) / 'receipt.json'}",
        f"--results={release_dir(cfg) / file_for(cfg, slug).path}",
        f"--model={slug}",
        f"--display-name={spec['display_name']}",
        f"--pinned-condition={spec['source_condition']}",
        f"--source-condition={condition}",
        *column_flags("column", cfg["columns"]["results"]),
        f"--output={out}",
    )
    return json.loads(out.read_text())


class Release(BaseHTTPRequestHandler):
    """Serves /<owner>/<repo>/<revision>/<path>; `faults` changes what one path does."""

    files: dict[str, bytes] = {}
    faults: dict[str, Callable] = {}
    requests: list[str] = []

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        fault = type(self).faults.get(self.path)
        if fault is not None and fault(self) is not None:
            return
        data = type(self).files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class ReleaseServer(ThreadingHTTPServer):
    """The release's server. A request it fails to answer (a client that hung up mid-drip, as
    the timeout tests make it) is told on the process's own standard error, never on
    sys.stderr: its handler thread may outlive the test, and an afbench command that a later
    test runs in this process (run_afbench) has sys.stderr redirected to read its refusal."""

    def handle_error(self, request, client_address) -> None:
        import traceback

        print(f"the test server failed to answer {client_address}:", file=sys.__stderr__)
        traceback.print_exc(file=sys.__stderr__)


@pytest.fixture
def http_release(release_files):
    """A real HTTP server on 127.0.0.1 serving the release at a fixed revision."""
    revision = "b" * 40
    handler = type(
        "Handler",
        (Release,),
        {
            "files": {
                f"/{OWNER_REPO}/{revision}/{rel}": data for rel, data in release_files.items()
            },
            "faults": {},
            "requests": [],
        },
    )
    server = ReleaseServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    yield {
        "base": base,
        "revision": revision,
        "handler": handler,
        "prefix": f"/{OWNER_REPO}/{revision}/",
    }
    server.shutdown()
    server.server_close()


def https_source(base: str, **overrides) -> dict:
    source = {
        "kind": "https",
        "base_url": base,
        "connect_timeout_s": 2,
        "read_timeout_s": 1,
        "total_timeout_s": 5,
        "retries": 2,
        "backoff_factor": 0.01,
    }
    source.update(overrides)
    return source


# fault helpers for the HTTP server ------------------------------------------------------------
def status(code: int, times: int | None = None):
    state = {"n": 0}

    def fault(handler):
        state["n"] += 1
        if times is None or state["n"] <= times:
            handler.send_error(code)
            return True
        return None

    return fault


def redirect(location: str):
    def fault(handler):
        handler.send_response(302)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return True

    return fault


def body(data: bytes, length: int | None = None, gzip_it: bool = False, delay: float = 0):
    def fault(handler):
        payload = gzip.compress(data) if gzip_it else data
        handler.send_response(200)
        handler.send_header("Content-Length", str(length if length is not None else len(payload)))
        if gzip_it:
            handler.send_header("Content-Encoding", "gzip")
        handler.end_headers()
        if delay:
            half = len(payload) // 2
            handler.wfile.write(payload[:half])
            handler.wfile.flush()
            time.sleep(delay)
            handler.wfile.write(payload[half:])
        else:
            handler.wfile.write(payload)
        if length is not None and length > len(payload):
            handler.close_connection = True
        return True

    return fault


def snakemake_env() -> dict:
    """The environment of a shell with this venv activated: rules call `afbench` from PATH."""
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def project(tmp_path: Path) -> Path:
    """A fresh project folder: the workflow, profiles, config and the demo release."""
    root = tmp_path / "project"
    for part in ("workflow", "profiles", "config", "resources"):
        shutil.copytree(REPO / part, root / part)
    return root


def snakemake(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [SNAKEMAKE, *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env=snakemake_env(),
    )
    if check and result.returncode != 0:
        raise AssertionError(result.stdout[-3000:] + result.stderr[-3000:])
    return result


def planned(root: Path, *args: str) -> dict[str, int]:
    """Jobs Snakemake would run now (its dry-run job stats), by rule."""
    out = snakemake(root, "-n", *args).stdout
    if "Nothing to be done" in out:
        return {}
    lines = out.split("Job stats:")[1].strip().splitlines()[2:]
    jobs = {}
    for line in lines:
        name, count = line.split()
        if name == "total":
            break
        jobs[name] = int(count)
    return jobs


@pytest.fixture(scope="session")
def demo_project(tmp_path_factory) -> Path:
    """The demo pipeline built once per test session with a plain `snakemake` (the default
    profile runs config/demo.yaml). Tests only read it, or run Snakemake dry."""
    root = project(tmp_path_factory.mktemp("demo"))
    snakemake(root)
    return root


@functools.cache
def demo_revision() -> str:
    """The demo's pinned revision, read from config/demo.yaml once a process (no test changes
    the checkout's own file; a test that edits a config edits its copy)."""
    return yaml.safe_load((REPO / "config/demo.yaml").read_text())["release"]["revision"]


# the demo's upgrade: its second revision, built beside the first
DEMO_UPGRADE = ["--configfile", "config/demo.yaml", "config/demo-upgrade.yaml"]


@pytest.fixture(scope="session")
def demo_store(demo_project, tmp_path_factory) -> Path:
    """A demo project whose store holds both revisions: the session's demo (its store built by
    `all`) with the digests the second's diff needs, then the upgrade. Built once a session
    for the tests that read it (their xdist group "store-demo" keeps them on one worker); a
    test that changes it works on a copy."""
    root = tmp_path_factory.mktemp("store") / "project"
    shutil.copytree(demo_project, root, symlinks=True)
    snakemake(root, "store", "digests")
    snakemake(root, "store", *DEMO_UPGRADE)
    return root


def beyond_the_leaderboard(catalog: Path, imports: Path, each: list[str]) -> list[str]:
    """The failure anatomy and (two or more models) the task table, as the workflow's
    analyse_failures and analyse_tasks write them with the config's defaults; the report's
    flags that read them."""
    anatomy = imports / "failure-anatomy.json"
    job("analyse-failures", *each, "--near-miss-share=0.5", f"--output={anatomy}")
    if len(each) < 2:
        return ["--anatomy", str(anatomy)]
    table = imports / "task-table.json"
    job(
        *["analyse-tasks", f"--catalog={catalog}", *each, "--shuffles=199"],
        *["--seed=20261013", "--alpha=0.05", "--min-discrimination=0.3", f"--output={table}"],
    )
    return ["--anatomy", str(anatomy), "--task-table", str(table)]


def run_all(cfg: dict, *, until: str = "manifest") -> Path:
    """The pipeline's chain through the CLI in this process, laid out as the workflow lays it
    out: fetch, catalog, one import per pinned model, comparison, the analyses beyond the
    leaderboard, report, artifact manifest. `until` stops it earlier, for a test that reads
    only what the first steps write: "comparison" (summary.json, leaderboard.csv), "analyses"
    (the failure anatomy and the task table too; a test that renders its own report)."""
    assert until in ("comparison", "analyses", "manifest"), until
    rev, rel = revision_dir(cfg), release_dir(cfg)
    fetch_release(cfg)
    catalog, receipt = rev / "tasks/catalog.json", rel / "receipt.json"
    catalog_of(cfg)
    imports = rev / "imports/source-present/budget-200"
    models = [slug for slug, spec in cfg["models"].items() if spec["sha256"]]
    for slug in models:
        spec = cfg["models"][slug]
        job(
            "import-model",
            f"--catalog={catalog}",
            f"--verified={receipt}",
            f"--results={rel / spec['path']}",
            f"--model={slug}",
            f"--display-name={spec['display_name']}",
            f"--pinned-condition={spec['source_condition']}",
            f"--source-condition={cfg['import']['source_condition']}",
            *column_flags("column", cfg["columns"]["results"]),
            f"--output={imports / f'{slug}.json'}",
        )
    each = [f"--import={imports / f'{slug}.json'}" for slug in models]
    job(
        "compare-models",
        *each,
        f"--verified={receipt}",
        f"--strict-budget={str(cfg['import']['strict_budget']).lower()}",
        *published_flags(cfg),
        f"--summary={imports / 'summary.json'}",
        f"--leaderboard={imports / 'leaderboard.csv'}",
    )
    if until == "comparison":
        return rev
    beyond = beyond_the_leaderboard(catalog, imports, each)
    if until == "analyses":
        return rev
    afbench(
        "report",
        "--summary",
        imports / "summary.json",
        *each,
        "--catalog",
        catalog,
        "--receipt",
        receipt,
        *beyond,
        "--output-dir",
        rev / "report",
    )
    files = [p for p in rev.rglob("*") if p.is_file() and p.name != "artifacts.json"]
    job(
        "write-artifact-manifest",
        f"--root={rev}",
        f"--revision={cfg['release']['revision']}",
        f"--config-digest={'0' * 64}",
        f"--output={rev / 'artifacts.json'}",
        *files,
    )
    return rev


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory, release_files, demo_yaml) -> dict:
    """The pipeline's chain (run_all) on the demo release at its own revision, built once per
    test run from a mirror of its own (under xdist by the first worker that asks, the others
    waiting on a lock); its config. No test writes into it: a test reads it, or works on a
    copy (copy_demo_run)."""

    worker = os.environ.get("PYTEST_XDIST_WORKER")
    shared = tmp_path_factory.getbasetemp()
    base = (shared.parent if worker else shared) / "demo-run"
    cfg = config_for(
        release_files,
        demo_yaml["release"]["revision"],
        {"kind": "dir", "mirror": str(base / "mirror")},
        base / "results",
        demo_yaml,
    )
    with open(f"{base}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (base / "built").is_file():
            shutil.rmtree(base, ignore_errors=True)  # a worker's build that failed
            write_tree(base / "mirror", release_files)
            run_all(cfg)
            (base / "built").touch()
    return cfg


def copy_demo_run(cfg: dict, dest: Path) -> dict:
    """A copy of the session's demo run (demo_run) as dest/results, and its config: what
    run_all leaves there, its release read from the same mirror (which no test changes)."""
    shutil.copytree(cfg["results_dir"], dest / "results", symlinks=True)
    copied = copy.deepcopy(cfg)
    copied["results_dir"] = str(dest / "results")
    return copied


@pytest.fixture
def built_config(demo_run, tmp_path) -> dict:
    """A fetched config on which the whole chain has run (run_all), in this test's own folder:
    a copy of the session's demo run."""
    return copy_demo_run(demo_run, tmp_path)


# --- the execution stage's real pieces: Harbor 0.22.0 (make harbor), a Docker engine for its
# own `docker` environment (make docker) and SLURM (make slurm) -------------------------------
HARBOR = REPO / ".harbor-venv" / "bin" / "harbor"
# the demo tasks' Dockerfiles build FROM it; no registry is reachable, so it must be local
BASE_IMAGE = "debian:bookworm-slim"
COMPOSE_PROJECT = "com.docker.compose.project"


def harbor_skip_reason() -> str | None:
    if not HARBOR.is_file():
        return f"no Harbor 0.22.0 at {HARBOR}: run `make harbor` (ci/harbor-setup.sh)"
    return None


@functools.cache
def docker_skip_reason() -> str | None:
    """Why Harbor's `docker` environment cannot run the demo tasks here, or None: it needs an
    engine that answers, Docker Compose v2 and the tasks' base image."""
    setup = "run `make docker` (ci/docker-up.sh, as root)"
    if shutil.which("docker") is None:
        return f"no docker client on PATH: {setup}"

    def docker(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["docker", *args], capture_output=True, text=True, timeout=30, check=False
        )

    info = docker("info", "--format", "{{.ServerVersion}}")
    if info.returncode != 0:
        return f"no Docker engine answers ({(info.stdout + info.stderr).strip()[:200]}): {setup}"
    compose = docker("compose", "version", "--short")
    if compose.returncode != 0 or not compose.stdout.strip().lstrip("v").startswith("2."):
        return f"Harbor's docker environment needs Docker Compose v2, not here: {setup}"
    if docker("image", "inspect", BASE_IMAGE).returncode != 0:
        return f"no {BASE_IMAGE} image (the demo tasks build FROM it): {setup}"
    return None


def docker_leftovers(jobs: Path) -> list[str]:
    """What Docker still holds of the Harbor trials under `jobs` (its <job>/<trial> folders):
    containers, images, networks and volumes of their Compose projects, which Harbor names
    after the trial (`<trial>__env`, lowercased; Compose labels all it makes with the project)."""
    prefixes = tuple(
        re.sub(r"[^a-z0-9_-]", "-", p.name.lower()) + "__" for p in jobs.glob("*/*") if p.is_dir()
    )
    assert prefixes, f"no trial folders under {jobs}"

    def docker(*args: str) -> list[str]:
        return subprocess.run(
            ["docker", *args], capture_output=True, text=True, timeout=60, check=True
        ).stdout.splitlines()

    labelled = ("--filter", f"label={COMPOSE_PROJECT}")
    row = '{{.Label "' + COMPOSE_PROJECT + '"}}\t{{.Name}}'
    rows = {
        "container": docker("ps", "-a", *labelled, "--format", row.replace(".Name", ".Names")),
        "network": docker("network", "ls", *labelled, "--format", row),
        "volume": docker("volume", "ls", *labelled, "--format", row),
    }
    images = docker("image", "ls", "-q", *labelled)
    rows["image"] = (
        docker(
            "image",
            "inspect",
            "--format",
            '{{index .Config.Labels "' + COMPOSE_PROJECT + '"}}\t{{.RepoTags}}',
            *sorted(set(images)),
        )
        if images
        else []
    )
    return [
        f"{kind} {name}"
        for kind, lines in rows.items()
        for project, _, name in (line.partition("\t") for line in lines)
        if project.startswith(prefixes)
    ]


def slurm_skip_reason() -> str | None:
    if shutil.which("sinfo") is None:
        return "no SLURM here (no sinfo): run `make slurm` (ci/slurm-up.sh, as root)"
    answer = subprocess.run(
        ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=30, check=False
    )
    states = answer.stdout.split()
    if answer.returncode != 0 or not {"idle", "mix"} & set(states):
        return f"SLURM has no idle node: sinfo said {(answer.stdout + answer.stderr).strip()!r}"
    return None


def one_clean_message(text: str) -> None:
    """What every refusal prints: one `afbench: error:` line, no traceback."""
    assert "Traceback" not in text
    lines = refusal_lines(text)
    assert len(lines) == 1 and lines[0].startswith("afbench: error: "), text


# 6. demo repository: never deletes a folder -------------------------------------------------
RELEASE = REPO / "resources" / "demo-release"


# 8. the properties bench/robustness.py runs 5,000 times each, here briefly -------------------
EXAMPLES_100 = settings(
    max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


EXAMPLES_60 = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck)
)


AFBENCH = str(Path(sys.executable).with_name("afbench"))


def run_afbench(
    *argv: object,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    process: bool = False,
    timeout: float = 120,
) -> subprocess.CompletedProcess:
    """`afbench ARGV`: its exit status, standard output and standard error (text), run in the
    folder `cwd` with the variables `env` added to the environment.

    By default in this process, through the entry point's own `main` (cli.main, which the
    script and `python -m afbench` call): what a test of a command's output, its files or its
    refusal checks, without an interpreter start and the package's imports for each command.
    The working folder and the environment are put back afterwards. With process=True the
    installed script runs in a process of its own, for what only a process shows: the real
    entry point's exit status, no traceback on standard error, signals, what it reads from the
    environment at start-up (the encoding of its streams). `timeout` guards a process against
    a hang; it is no speed check."""
    args = [str(a) for a in argv]
    if process:
        return subprocess.run(
            [AFBENCH, *args],
            cwd=cwd,
            env={**os.environ, **env} if env else None,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    from afbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, env or {}),
        contextlib.chdir(os.getcwd() if cwd is None else cwd),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = main(args)
    return subprocess.CompletedProcess(["afbench", *args], code, out.getvalue(), err.getvalue())


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = refusal_lines(err)
    assert len(lines) == 1, err
    return lines[0]


def cli(*argv: object) -> tuple[int, str]:
    return prop.cli(*argv)


# --- 4. git runs hardened --------------------------------------------------------------------
@pytest.fixture
def git_release(tmp_path, release_files, demo_yaml):
    """A checkout holding the demo release, and a config whose source is that checkout."""
    checkout, revision = make_git_repo(tmp_path / "upstream", release_files)
    cfg = config_for(
        release_files,
        revision,
        {"kind": "git", "checkout": str(checkout)},
        tmp_path / "results",
        demo_yaml,
    )
    return checkout, revision, cfg


def _selection_for(tmp_path: Path, task_ids: list[str]) -> Path:
    doc = json.loads(prop.write_tree().selection.read_text())
    doc["task_ids"] = task_ids
    path = tmp_path / "selection.json"
    path.write_text(json.dumps(doc))
    return path


def _import_harbor_job(tmp_path: Path, job: Path, task_ids: list[str], out: Path):
    """`afbench import-run` of one Harbor job folder on a selection of `task_ids`."""
    selection = _selection_for(tmp_path, task_ids)
    return cli(
        *["import-run", "--selection", selection, "--name", "r", "--kind", "harbor"],
        *["--path", job, "--output-dir", out],
    )


# --- 8. the same artifacts whatever the environment ------------------------------------------
def _hostile_environment(tmp_path: Path) -> tuple[dict, Path]:
    rc = tmp_path / "user-mpl"
    rc.mkdir()
    (rc / "matplotlibrc").write_text(
        "text.usetex: True\nfont.family: serif\nfont.size: 31\nsvg.fonttype: path\n"
        "axes.formatter.use_locale: True\nsvg.hashsalt: mine\nlines.linewidth: 7\n"
    )
    env = {
        **snakemake_env(),
        "MATPLOTLIBRC": str(rc / "matplotlibrc"),
        "MPLCONFIGDIR": str(rc),
        "MPLBACKEND": "no-such-backend",
        "LC_ALL": "de_DE.UTF-8",
        "LANG": "de_DE.UTF-8",
        "TZ": "Pacific/Kiritimati",
        "HOME": str(tmp_path / "no-such-home"),
        "GIT_DIR": str(tmp_path / "nowhere"),
    }
    return env, rc


EXAMPLES_150 = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


DEMO = REPO / "config" / "demo.yaml"


IMPORTS = "imports/source-present/budget-200"


@pytest.fixture(scope="session")
def demo_chain(tmp_path_factory, demo_run) -> tuple[Path, dict]:
    base = tmp_path_factory.mktemp("numbers")
    cfg = copy_demo_run(demo_run, base)  # run_all's tree, copied
    return revision_dir(cfg), cfg


@pytest.fixture(scope="session")
def demo_chain_rev(demo_chain) -> Path:
    return demo_chain[0]


@pytest.fixture(scope="session")
def demo_chain_analysis(demo_chain_rev) -> dict:
    return json.loads((demo_chain_rev / "report/analysis.json").read_text())


@pytest.fixture(scope="session")
def demo_chain_records(demo_chain_rev) -> dict[str, dict[str, dict]]:
    """model -> task id -> the import's per-task record."""
    return {
        path.stem: {r["task_id"]: r for r in json.loads(path.read_text())["records"]}
        for path in sorted((demo_chain_rev / IMPORTS).glob("demo-model-*.json"))
    }


@pytest.fixture(scope="session")
def demo_chain_catalog(demo_chain_rev) -> dict:
    return json.loads((demo_chain_rev / "tasks/catalog.json").read_text())


TASK = "demo_s01_t001"


# --- waiting on another process, never on the clock -------------------------------------------
# How long a test waits for a state another process reaches before it fails: a guard against a
# hang, never a margin the test's outcome depends on (a loaded machine only takes longer).
HANG_GUARD_S = 300


def wait_until(
    condition: Callable[[], object], what: str, process: subprocess.Popen | None = None
) -> None:
    """Return once condition() holds. Fail naming `what` (and what `process` wrote on standard
    error) if `process` ends first, or if HANG_GUARD_S pass: then something hangs."""
    until = time.monotonic() + HANG_GUARD_S
    while not condition():
        ended = process is not None and process.poll() is not None
        if ended or time.monotonic() > until:
            why = f"exited {process.returncode}" if ended else f"not in {HANG_GUARD_S} s"
            said = "".join(_text(x) for x in process.communicate()) if ended else ""
            pytest.fail(f"{what}: {why}\n{said[-3000:]}")
        time.sleep(0.02)


def _text(said: str | bytes | None) -> str:
    return said.decode(errors="replace") if isinstance(said, bytes) else said or ""


# --- one copy of each trial: the lock ---------------------------------------------------------
# a holder of LOCK until the file RELEASE exists; with a third argument it says "busy" each time
# it finds the lock held, so a test sees it try again and again instead of sleeping a while
HOLD = """
import sys, time
from pathlib import Path
from afbench.core import locking
lock, release = Path(sys.argv[1]), Path(sys.argv[2])
if len(sys.argv) > 3:
    tried = locking._try_lock
    def try_lock(fd):
        got = tried(fd)
        if not got:
            print("busy", flush=True)
        return got
    locking._try_lock = try_lock
def waiting(who):
    print("waiting for", who["pid"], flush=True)
with locking.held(lock, on_wait=waiting, poll_s=0.05) as me:
    print("held", me["pid"], flush=True)
    while not release.exists():
        time.sleep(0.02)
print("released", flush=True)
"""


def holder_process(lock: Path, release: Path, *, say_tries: bool = False) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock), str(release), *(["tries"] if say_tries else [])],
        stdout=subprocess.PIPE,
        text=True,
    )


# afbench told on standard error, as on a terminal, when it waits for another process writing
# its output (cli._waiting says so only on a terminal): "afbench: waiting for pid ..."
WAITING = """
import sys
from afbench import cli
from afbench.core.locking import describe
def waiting(target, who):
    print(f"afbench: waiting for {describe(who)}, which is writing {target}", file=sys.stderr,
          flush=True)
cli._waiting = waiting
sys.exit(cli.main(sys.argv[1:]))
"""


def waiting_afbench(argv: list, **popen) -> subprocess.Popen:
    """`afbench ARGV` started while another process writes its output (its standard error a
    pipe, read here); returns once it says it waits for that process."""
    process = subprocess.Popen(
        [sys.executable, "-c", WAITING, *map(str, argv)],
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )
    said: list[str] = []  # its first line; "" if it ended saying nothing
    reader = threading.Thread(target=lambda: said.append(process.stderr.readline()), daemon=True)
    reader.start()
    reader.join(HANG_GUARD_S)
    if not said or not said[0].startswith("afbench: waiting for pid "):
        if reader.is_alive():  # it hangs, saying nothing
            process.kill()
        rest = process.communicate(timeout=HANG_GUARD_S)[1]
        pytest.fail(
            f"the second command never said it waits for the first (exit {process.returncode}):"
            f" {''.join(said)}{rest[-3000:]}"
        )
    return process


# afbench on a stalling file system (a loaded NFS server): one rename, the first or the second,
# waits until the file RELEASE exists (HANG_GUARD_S at most, should the test die); the file
# STALLED says that it waits
STALLED = f"""
import os, sys, time
from pathlib import Path
stalled, release = Path(os.environ["STALLED"]), Path(os.environ["RELEASE"])
before = os.environ["STALL"] == "before"
rename = os.replace
def stall():
    stalled.touch()
    until = time.monotonic() + {HANG_GUARD_S}
    while not release.exists() and time.monotonic() < until:
        time.sleep(0.02)
def stalled_replace(*args, **kwargs):
    first = not stalled.exists()
    if first and before:
        stall()
    rename(*args, **kwargs)
    if first and not before:
        stall()
os.replace = stalled_replace
from afbench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def stalled_afbench(
    argv: list, signals: Path, *, after_first_rename: bool
) -> tuple[subprocess.Popen, Path]:
    """`afbench ARGV` in a process of its own, stalled before its first rename or after it
    until the returned file is created; returns once it stalls."""
    signals.mkdir(parents=True, exist_ok=True)
    stalled, release = signals / "stalled", signals / "release"
    env = {
        **os.environ,
        "STALLED": str(stalled),
        "RELEASE": str(release),
        "STALL": "after" if after_first_rename else "before",
    }
    process = subprocess.Popen(
        [sys.executable, "-c", STALLED, *map(str, argv)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    wait_until(stalled.exists, "the first command never stalled", process)
    return process, release


def attempt(checksum: str | None, **verifier) -> dict:
    return {
        "task_id": TASK,
        "trial_name": f"{TASK}__x",
        "task_checksum": checksum,
        # as runs.py reads a trial: without a checksum, one killed before its result.json
        "outcome": "accepted" if checksum else "incomplete",
        "reason": None if checksum else "no result.json",
        "configuration": "c",
        "verifier": {**harbor.VERIFIER_SETTINGS, **verifier},
    }


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The demo release as the git checkout a plan points at, at the pinned revision."""
    root = tmp_path_factory.mktemp("upstream") / "demo-upstream"
    demo.build_repository(REPO / "resources/demo-release", root)
    return root


def plan_fields(tmp_path: Path, checkout: Path, agent: str, harbor: str) -> list[str]:
    """A trial job's plan flags for one task of the demo checkout: a catalog and a selection
    of that task written beside them, the agent and the Harbor executable given."""
    release = identity(load_config([REPO / "config/demo.yaml"])["release"])
    from afbench.tasks.catalog import select_tasks

    tasks = declared(
        CATALOG, release=release, license="x", tasks=[declared(TASK_ROW, task_id=TASK)]
    )
    catalog = tmp_path / "catalog.json"
    catalog.write_text(json.dumps(tasks))
    selection = tmp_path / "selection.json"  # selected from it, so the two agree
    selection.write_text(json.dumps(select_tasks(tasks, "one", [TASK])))
    return [
        f"--catalog={catalog}",
        f"--selection={selection}",
        f"--agent={agent}",
        f"--repository-dir={checkout}",
        "--tasks-dir=tasks",
        f"--jobs-dir={tmp_path / 'jobs'}",
        "--environment-type=docker",
        f"--harbor={harbor}",
    ]


def plan_for(checkout: Path, agent: str, jobs: Path, environment: str = "docker") -> dict:
    config = load_config([REPO / "config/demo.yaml"])
    release = identity(config["release"])
    catalog = {"release": release, "license": "synthetic", "tasks": [{"task_id": TASK}]}
    selection = {
        "name": "infra",
        "task_ids": [TASK],
        "selection_sha256": "0" * 64,
        "release": release,
    }
    plan = build_plan(
        catalog, selection, agent, None, str(checkout), "tasks", str(jobs), environment
    )
    return plan["tasks"][0]


def run(argv: list[str], cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def python_argv(step: dict) -> list[str]:
    assert step["argv"][0] == "python"
    return [sys.executable, *step["argv"][1:]]


def trial_skip_reason() -> str | None:
    return harbor_skip_reason() or docker_skip_reason()


@pytest.fixture
def fetched_catalog(fetched_config):
    return catalog_of(fetched_config)
