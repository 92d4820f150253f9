"""Hostile input, round two (issue 14): every bad input is one message naming the file (and the
field or line), a non-zero exit, no traceback, no hang, and nothing earlier lost."""

from __future__ import annotations

import copy
import math
import os
import socket
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from afbench import demo, figures
from afbench.config import (
    MAX_CONFIG_BYTES,
    SCHEMA_PATH,
    _schema,
    load_config,
    validate_config,
)
from afbench.errors import AfbenchError, Problem
from afbench.fetch import HttpsSource
from afbench.fsutil import (
    atomic_write_bytes,
    check_name,
    parse_json_bytes,
    read_json_file,
    read_regular_file,
    sha256_file,
    write_json,
)
from afbench.harbor import ENVIRONMENT_TYPES, check_environment_type
from afbench.plan import build_plan

import properties as prop
from conftest import OWNER_REPO, REPO, https_source, refusal_lines

AFBENCH = str(Path(sys.executable).with_name("afbench"))
DEMO = REPO / "config" / "demo.yaml"


def one_clean_message(text: str) -> None:
    """What every refusal prints: one `afbench: error:` line, no traceback."""
    assert "Traceback" not in text
    lines = refusal_lines(text)
    assert len(lines) == 1 and lines[0].startswith("afbench: error: "), text


def refused(data: object, *needles: str) -> str:
    with pytest.raises(AfbenchError) as err:
        validate_config(data, "my.yaml")
    message = str(err.value)
    assert "my.yaml" in message
    for needle in needles:
        assert needle in message, message
    return message


def write_config(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load_refused(path: Path, *needles: str) -> str:
    with pytest.raises(AfbenchError) as err:
        load_config([path])
    message = str(err.value)
    assert str(path) in message and len(message) < 1000, message
    for needle in needles:
        assert needle in message, message
    return message


def at(doc: dict, path: list, value: object) -> dict:
    doc = copy.deepcopy(doc)
    node = doc
    for step in path[:-1]:
        node = node.setdefault(step, {}) if isinstance(node, dict) else node[step]
    node[path[-1]] = value
    return doc


# 1. config: bounded YAML -------------------------------------------------------------------
def _load_in_child(path: Path) -> subprocess.CompletedProcess:
    """load_config in a child, so that a regression (a segfault) fails this test, not pytest."""
    code = textwrap.dedent(
        f"""
        import sys
        from afbench.config import load_config
        from afbench.errors import AfbenchError
        try:
            load_config([{str(path)!r}])
        except AfbenchError as exc:
            print(f"afbench: error: {{exc}}", file=sys.stderr)
            sys.exit(2)
        """
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=5, check=False
    )


@pytest.mark.parametrize("depth", [20_000, 50_000])
def test_deeply_nested_yaml_is_refused_before_it_is_built(tmp_path, depth):
    path = write_config(tmp_path, "release: " + "[" * depth + "]" * depth + "\n")
    result = _load_in_child(path)
    assert result.returncode == 2
    one_clean_message(result.stderr)
    assert "nested more than 64 levels deep (line 1)" in result.stderr


def laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join([*lines, f"release: *a{levels - 1}", ""])


@pytest.mark.parametrize("levels", [5, 6, 10])
def test_billion_laughs_is_refused_without_expanding_it(tmp_path, levels):
    path = write_config(tmp_path, laughs(levels))
    if levels == 5:  # 9^5 values: within the bound, so the schema sees it: still no flood
        message = load_refused(path, "field 'release'")
    else:
        result = _load_in_child(path)
        assert result.returncode == 2
        one_clean_message(result.stderr)
        message = result.stderr
        assert "more than 200000 values once aliases are expanded" in message
    assert message.count("lol") <= 10  # never the expanded value


def test_recursive_alias_is_refused(tmp_path):
    load_refused(write_config(tmp_path, "release: &a [1, *a]\n"), "recursive or undefined alias")


def test_too_many_aliases_are_refused(tmp_path):
    text = "a: &x 1\nb: [" + ", ".join(["*x"] * 1001) + "]\n"
    load_refused(write_config(tmp_path, text), "more than 1000 aliases")


def test_a_config_larger_than_the_cap_is_refused_unread(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"# " + b"x" * MAX_CONFIG_BYTES + b"\n")
    load_refused(path, "larger than the size cap")


@pytest.mark.parametrize(
    "text,key,lines",
    [
        ("release: {}\nrelease: {}\n", "'release'", ("line 2", "line 1")),
        (
            "release:\n  revision: " + "a" * 40 + "\n  revision: " + "b" * 40 + "\n",
            "'revision'",
            ("line 3", "line 2"),
        ),
        (
            "models:\n  m:\n    display_name: M\n    sha256: null\n    sha256: " + "c" * 64 + "\n",
            "'sha256'",
            ("line 5", "line 4"),
        ),
        ('{"a": 1, "a": 2}\n', "'a'", ("line 1",)),  # JSON is read by the same loader
    ],
)
def test_duplicate_keys_are_refused_naming_key_and_lines(tmp_path, text, key, lines):
    message = load_refused(write_config(tmp_path, text), f"duplicate key {key}", *lines)
    assert message.index(lines[0]) < message.index(key)  # where, then what


@pytest.mark.parametrize("key", ["123", "on", "null", "[a, b]"])
def test_keys_that_are_not_text_are_refused(tmp_path, key):
    load_refused(write_config(tmp_path, f"selections:\n  {key}: {{}}\n"), "a key must be text")


def test_a_config_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    load_refused(fifo, "FIFO")
    load_refused(Path("/dev/zero"), "character device")
    load_refused(tmp_path, "a folder")
    link = tmp_path / "link.yaml"  # a link to a regular file is read (config/config.yaml is one)
    link.symlink_to(DEMO)
    assert load_config([link])["release"]["synthetic"] is True
    to_fifo = tmp_path / "to-fifo.yaml"
    to_fifo.symlink_to(fifo)
    load_refused(to_fifo, "FIFO")


# 1. config: the schema ---------------------------------------------------------------------
def _all_patterns(node: object):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern":
                yield value
            else:
                yield from _all_patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _all_patterns(value)


def test_every_anchored_schema_pattern_ends_with_a_full_match_anchor():
    patterns = list(_all_patterns(_schema()))
    assert len(patterns) > 10
    for pattern in patterns:
        assert not pattern.endswith("$"), pattern  # `$` matches before a final newline
        if pattern.startswith("^"):
            assert pattern.endswith(r"\Z"), pattern


TRAILING_NEWLINE = [
    (["release", "revision"], "a" * 40 + "\n"),
    (["release", "mathlib"], "a" * 40 + "\n"),
    (["release", "repository"], "owner/name\n"),
    (["files", "manifest", "sha256"], "a" * 64 + "\n"),
    (["files", "manifest", "path"], "MANIFEST.csv\n"),
    (["models", "demo-model-a", "sha256"], "a" * 64 + "\n"),
    (["models", "demo-model-a", "display_name"], "Model A\n"),
    (["release", "images"], [{"role": "verifier", "digest": "sha256:" + "a" * 64 + "\n"}]),
    (["selections", "x\n"], {}),
    (["selections", "x"], {"tasks": ["demo_s01_t001\n"]}),
    (["import", "models"], ["demo-model-a\n"]),
    (["plans", "environment_type"], "docker\n"),
    (["plans", "items"], [{"selection": "x", "agent": "nop\n"}]),
    (["plans", "items"], [{"selection": "x", "agent": "codex", "model": "openai/gpt\n"}]),
    (["results_dir"], "results\n"),
    (["source", "base_url"], "https://example.org/\n"),
    (["release", "dates", "release_page"], "2026-10-13\n"),
    (["columns", "manifest", "task_id"], "task_id\n"),
]


@pytest.mark.parametrize("path,value", TRAILING_NEWLINE)
def test_a_trailing_newline_is_refused_by_us_and_by_snakemake(demo_yaml, path, value):
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    doc = at(demo_yaml, path, value)
    message = refused(doc)
    assert "\n" not in message  # escaped, so the message stays on one line
    with pytest.raises(WorkflowError):
        validate(copy.deepcopy(doc), str(SCHEMA_PATH))


@pytest.mark.parametrize(
    "value", ["2026-13-45", "2026-02-30", "2025-02-29", "1900-02-29", "0000-01-01", "2026-1-1"]
)
def test_impossible_dates_are_refused(demo_yaml, value):
    refused(
        at(demo_yaml, ["release", "dates", "release_page"], value), "release/dates/release_page"
    )


@pytest.mark.parametrize("value", ["2024-02-29", "2000-02-29", "2026-12-31", None])
def test_real_dates_are_accepted(demo_yaml, value):
    config = validate_config(at(demo_yaml, ["release", "dates", "release_page"], value))
    assert config["release"]["dates"]["release_page"] == value


def test_unquoted_dates_impossible_or_not_are_refused_with_their_line(tmp_path):
    text = DEMO.read_text().replace(
        "  nominal_budget_usd: 200\n",
        "  nominal_budget_usd: 200\n  dates: {release_page: 2026-13-45}\n",
        1,
    )
    assert "2026-13-45" in text
    load_refused(write_config(tmp_path, text), "not a valid date", "line ")
    text = text.replace("2026-13-45", "2026-10-13")
    load_refused(
        write_config(tmp_path, text), "write a date in quotes", "release/dates/release_page"
    )


@pytest.mark.parametrize("value", ["../..", "a/..", "./b", "a/.", "..", "a/b/c", "a", "a/b\n"])
def test_repository_must_be_owner_slash_name(demo_yaml, value):
    refused(at(demo_yaml, ["release", "repository"], value), "release/repository")


def test_repository_may_start_with_a_dot(demo_yaml):
    assert validate_config(at(demo_yaml, ["release", "repository"], "org/.github"))


NUMBER_SETTINGS = [
    ["release", "nominal_budget_usd"],
    ["source", "connect_timeout_s"],
    ["source", "read_timeout_s"],
    ["source", "total_timeout_s"],
    ["source", "backoff_factor"],
    ["report", "confidence"],
    ["runs", "r", "budget_usd"],
    ["source", "retries"],
    ["source", "max_bytes"],
    ["release", "expected_counts", "tasks"],
    ["selections", "s", "limit"],
]


def _with_number(demo_yaml: dict, path: list, value: object) -> dict:
    doc = copy.deepcopy(demo_yaml)
    doc.setdefault("runs", {})["r"] = {"kind": "verdicts", "paths": ["x"], "selection": "s"}
    doc.setdefault("selections", {})["s"] = {}
    for key in ("expected_counts",):
        doc["release"].setdefault(key, {})
    return at(doc, path, value)


@pytest.mark.parametrize("path", NUMBER_SETTINGS, ids=lambda p: "/".join(p))
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1.0, -200])
def test_non_finite_and_negative_numbers_are_refused_in_every_number_setting(
    demo_yaml, path, value
):
    message = refused(_with_number(demo_yaml, path, value), "/".join(path))
    assert len(message) < 500


@pytest.mark.parametrize("text,word", [(".nan", "NaN"), (".inf", "infinity"), ("-.inf", "")])
def test_yaml_nan_and_inf_are_refused_from_a_file(tmp_path, text, word):
    source = DEMO.read_text().replace("nominal_budget_usd: 200", f"nominal_budget_usd: {text}")
    load_refused(write_config(tmp_path, source), "release/nominal_budget_usd", word)


def test_a_whole_number_written_as_a_float_is_refused_where_an_integer_is_needed(demo_yaml):
    refused(_with_number(demo_yaml, ["source", "retries"], 3.0), "source/retries")


@pytest.mark.parametrize("slug", ["summary", "leaderboard", "Summary", "LEADERBOARD"])
def test_model_slugs_that_collide_with_summary_files_are_refused(demo_yaml, slug):
    doc = copy.deepcopy(demo_yaml)
    doc["models"][slug] = doc["models"]["demo-model-a"]
    refused(doc, "not 'summary' or 'leaderboard'")
    refused(at(demo_yaml, ["import", "models"], [slug]), "import/models/0")


@pytest.mark.parametrize(
    "value",
    ["--help", "-e", "docker ", "Docker", "docker;rm", "mod:", ":Cls", "a..b:C", "a.b:C.D", "1a:B"],
)
def test_environment_type_is_a_harbor_name_or_an_import_path(demo_yaml, value):
    refused(at(demo_yaml, ["plans", "environment_type"], value), "plans/environment_type")
    with pytest.raises(AfbenchError, match="environment type"):
        check_environment_type(value)


def test_every_harbor_0_22_environment_type_and_import_paths_are_accepted(demo_yaml):
    # the list lives in afbench.harbor alone: the schema holds only the shape of a name
    assert "enum" not in str(_schema()["properties"]["plans"]["properties"]["environment_type"])
    assert len(ENVIRONMENT_TYPES) == 26
    for value in [*ENVIRONMENT_TYPES, "my_envs.cloud:CloudEnv", "pkg:E"]:
        config = validate_config(at(demo_yaml, ["plans", "environment_type"], value))
        assert check_environment_type(config["plans"]["environment_type"]) == value


def test_build_plan_refuses_an_environment_type_the_schema_never_saw(tmp_path, demo_yaml):
    from afbench.release import identity

    release = identity(validate_config(demo_yaml)["release"])
    catalog = {"release": release, "license": "x", "tasks": [{"task_id": "t1"}]}
    selection = {"name": "s", "task_ids": ["t1"], "selection_sha256": "0" * 64, "release": release}
    with pytest.raises(AfbenchError, match="not a Harbor 0.22.0 environment type"):
        build_plan(
            catalog,
            selection,
            "nop",
            None,
            str(tmp_path),
            "tasks",
            str(tmp_path / "jobs"),
            "--help",
        )


def test_schema_messages_are_short_even_for_a_huge_value(demo_yaml):
    message = refused(at(demo_yaml, ["release", "revision"], "x" * 500_000), "release/revision")
    assert len(message) < 1000
    message = refused(at(demo_yaml, ["release", "name"], list(range(100_000))), "release/name")
    assert len(message) < 1000


def test_a_python_built_config_with_odd_values_is_refused(demo_yaml):
    import datetime

    refused(at(demo_yaml, ["results_dir"], b"results"), "results_dir", "not a plain value")
    refused(at(demo_yaml, ["selections"], {1: {}}), "a key must be text")
    refused(at(demo_yaml, ["release", "name"], datetime.date(2026, 1, 1)), "in quotes")
    refused(at(demo_yaml, ["models", "demo-model-a", "display_name"], "A\udc80"), "display_name")
    refused(at(demo_yaml, ["source", "base_url"], "https://example.org\ud800"), "base_url")


# 2. fetch: total_timeout_s against a drip --------------------------------------------------
def drip(what: str, size: int = 200, pause: float = 0.05):
    """A server that sends `size` bytes of headers or body one byte at a time (10 s in all):
    never silent long enough for a read timeout."""

    def fault(handler):
        head = b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % size
        data = (b"HTTP/1.0 200 OK\r\nX-Slow: " + b"a" * size) if what == "headers" else b"x" * size
        try:
            if what == "body":
                handler.wfile.write(head)
            for byte in data:
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(pause)
        except OSError:
            pass  # the client hung up: what the deadline does
        return True

    return fault


@pytest.mark.parametrize("what", ["body", "headers"])
def test_total_timeout_holds_against_a_server_that_drips(http_release, what):
    handler = http_release["handler"]
    handler.faults[http_release["prefix"] + "MANIFEST.csv"] = drip(what)
    source = HttpsSource(
        https_source(http_release["base"], total_timeout_s=1, read_timeout_s=2, max_bytes=10**6),
        OWNER_REPO,
        http_release["revision"],
    )
    started = time.monotonic()
    with pytest.raises(AfbenchError) as err:
        source.read("MANIFEST.csv")
    assert "exceeded the total time limit" in str(err.value)
    assert "MANIFEST.csv" in str(err.value) and "source.total_timeout_s" in str(err.value)
    assert time.monotonic() - started < 9  # the drip alone lasts 10 s


def test_a_fast_download_after_a_timed_out_one_still_works(http_release, release_files):
    handler = http_release["handler"]
    handler.faults[http_release["prefix"] + "MANIFEST.csv"] = drip("body")
    source = HttpsSource(
        https_source(http_release["base"], total_timeout_s=1, max_bytes=10**6),
        OWNER_REPO,
        http_release["revision"],
    )
    with pytest.raises(AfbenchError, match="total time limit"):
        source.read("MANIFEST.csv")
    assert source.read("SOURCES.csv") == release_files["SOURCES.csv"]


# 3. fsutil: regular files, atomic writes ---------------------------------------------------
def test_read_regular_file_refuses_everything_else_without_blocking(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    regular = tmp_path / "regular.json"
    regular.write_bytes(b"{}")
    link = tmp_path / "link.json"
    link.symlink_to(regular)
    sock_path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        cases = {
            fifo: "a FIFO",
            tmp_path: "a folder",
            Path("/dev/zero"): "a character device",
            link: "a symbolic link",
            sock_path: "a socket",
            tmp_path / "missing": "not found",
        }
        for path, kind in cases.items():
            with pytest.raises(AfbenchError) as err:
                read_regular_file(path, "verdict file", 1000)
            assert len(err.value.problems) == 1
            assert str(err.value).startswith(f"{path}: verdict file") and kind in str(err.value)
    finally:
        server.close()
    assert read_regular_file(regular, "verdict file", 2) == b"{}"
    with pytest.raises(AfbenchError, match="larger than the size cap"):
        read_regular_file(regular, "verdict file", 1)


def test_hashing_and_json_reading_refuse_a_fifo(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(AfbenchError, match="FIFO"):
        sha256_file(fifo)
    with pytest.raises(AfbenchError, match="FIFO"):
        read_json_file(fifo, "run summary")


WRITER = textwrap.dedent(
    """
    import sys
    from afbench.fsutil import atomic_write_bytes
    for i in range(int(sys.argv[2])):
        atomic_write_bytes(sys.argv[1], (sys.argv[3] * 50_000).encode(), about="test")
    """
)


def test_concurrent_writers_never_delete_each_others_temporary_files(tmp_path):
    target = tmp_path / "summary.json"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), "150", letter],
            stderr=subprocess.PIPE,
            text=True,
        )
        for letter in "ab"
    ]
    errors = [w.communicate(timeout=120)[1] for w in writers]
    assert [w.returncode for w in writers] == [0, 0], errors
    assert target.read_text() in ("a" * 50_000, "b" * 50_000)
    assert not list(tmp_path.glob(".*.part"))


def test_only_a_dead_writers_temporary_file_on_this_host_is_removed(tmp_path):
    from afbench.fsutil import _HOST

    target = tmp_path / "x.json"
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = tmp_path / f".x.json.{int(finished.stdout)}.{_HOST}.00000000.part"
    live = tmp_path / f".x.json.{os.getpid()}.{_HOST}.11111111.part"
    other_host = tmp_path / f".x.json.{int(finished.stdout)}.0badc0de.22222222.part"
    for part in (dead, live, other_host):
        part.write_bytes(b"partial")
    atomic_write_bytes(target, b"done", about="test")
    assert target.read_bytes() == b"done"
    assert not dead.exists() and live.exists() and other_host.exists()


FULL_DISK = textwrap.dedent(
    """
    import resource, signal, sys
    from afbench.errors import AfbenchError
    from afbench.fsutil import atomic_write_bytes
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    try:
        atomic_write_bytes(sys.argv[1], b"x" * 100_000, about="test")
    except AfbenchError as exc:
        print(f"afbench: error: {exc}", file=sys.stderr)
        sys.exit(2)
    """
)


def test_a_failed_write_names_the_file_leaves_no_temporary_file_and_keeps_the_old_one(tmp_path):
    target = tmp_path / "leaderboard.csv"
    target.write_bytes(b"earlier\n")
    result = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(target)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    one_clean_message(result.stderr)
    assert str(target) in result.stderr and "cannot write this file" in result.stderr
    assert target.read_bytes() == b"earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leaderboard.csv"]


def test_a_write_into_a_path_under_a_file_is_our_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(AfbenchError, match="cannot write this file") as err:
        atomic_write_bytes(tmp_path / "file" / "sub" / "a.json", b"{}", about="test")
    assert "file/sub/a.json" in str(err.value)


# 4. surrogates and control characters in messages and outputs ------------------------------
def test_messages_escape_surrogates_and_control_characters_and_stay_short():
    problem = Problem(
        "bad\nname \udc80",
        file="/tmp/x\udcff\n.json",
        field="a\x1b[31m",
        found="y" * 10_000 + "\udc80",
    )
    text = str(AfbenchError(problems=[problem]))
    text.encode("utf-8")  # strict: no lone surrogate left
    assert "\n" not in text and "\x1b" not in text
    assert r"\udcff" in text and r"\n" in text and r"\x1b" in text
    assert len(text) < 1500


def test_json_with_a_lone_surrogate_is_refused_naming_the_field():
    with pytest.raises(AfbenchError, match="lone surrogate") as err:
        parse_json_bytes(b'{"verifier": {"name": "v\\udc80"}}', "v.json", "verdict")
    assert "verifier/name" in str(err.value)
    assert parse_json_bytes(b'{"a": "\\ud83d\\ude00"}', "v.json", "verdict") == {"a": "\U0001f600"}


def test_writing_a_lone_surrogate_is_refused_and_keeps_the_earlier_file(tmp_path):
    target = tmp_path / "summary.json"
    write_json(target, {"ok": 1})
    with pytest.raises(AfbenchError, match="not valid Unicode") as err:
        write_json(target, {"name": "x\udcff"})
    assert str(target) in str(err.value)
    assert target.read_text() == '{\n  "ok": 1\n}\n'


VERDICT = (
    b'{"task_id": "t", "status": "accepted", "obligations": [{"declaration": "A", '
    b'"status": "accepted", "detail": ""}], "checks": {"target_equivalence": true, '
    b'"allowed_axioms": true, "lean_kernel": true, "nanoda_replay": true}, "error": null, '
    b'"verifier": {"name": "v", "version": "1"}}'
)


def afbench(*args: str | bytes, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [AFBENCH, *args],
        cwd=cwd,
        capture_output=True,
        timeout=5,
        env={**os.environ, **env},
        check=False,
    )


def test_verdict_with_a_file_name_that_is_not_utf8_prints_and_writes(tmp_path):
    name = os.fsdecode(b"v\xff.json")
    (tmp_path / name).write_bytes(VERDICT)
    result = afbench(
        "verdict", "--path", name, "--task", "t", cwd=tmp_path, PYTHONIOENCODING="utf-8"
    )
    assert result.returncode == 0, result.stderr
    assert b"v\\\\xff.json" in result.stdout
    result = afbench("verdict", "--path", name, "--task", "t", "--output", "o.json", cwd=tmp_path)
    assert result.returncode == 0 and b"v\\\\xff.json" in (tmp_path / "o.json").read_bytes()
    missing = os.fsdecode(b"nope\xff\n.json")
    result = afbench(
        "verdict", "--path", missing, "--task", "t", cwd=tmp_path, PYTHONIOENCODING="utf-8"
    )
    assert result.returncode == 2
    one_clean_message(result.stderr.decode())
    assert b"nope\\udcff\\n.json: verdict file not found" in result.stderr


# 3. the CLI edge: verdict --path on what is not a regular file -----------------------------
@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "folder", "symlink"])
def test_verdict_path_that_is_not_a_regular_file_is_refused_at_once(tmp_path, kind):
    (tmp_path / "x.json").write_bytes(b"earlier")
    (tmp_path / "real.json").write_bytes(VERDICT)
    path = {"/dev/zero": "/dev/zero", "fifo": "fifo", "folder": "folder", "symlink": "link"}[kind]
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")
    elif kind == "folder":
        (tmp_path / "folder").mkdir()
    elif kind == "symlink":
        (tmp_path / "link").symlink_to(tmp_path / "real.json")
    result = afbench("verdict", "--path", path, "--task", "t", "--output", "x.json", cwd=tmp_path)
    assert result.returncode == 2
    one_clean_message(result.stderr.decode())
    assert f"afbench: error: {path}: verdict file is ".encode() in result.stderr
    assert (tmp_path / "x.json").read_bytes() == b"earlier"


def test_check_name_refuses_a_trailing_newline():
    for value in ("t1\n", "t1\r", "t1\x00"):
        with pytest.raises(AfbenchError, match="not a safe name"):
            check_name(value, "task_id")


# 5. figures: labels drawn literally --------------------------------------------------------
LABELS = ["$x^2$", r"\frac{a}{b}", r"$\frac$", "a$b", r"a\$b", "<&>", "50% $5 $"]


def svg_texts(svg: str) -> list[str]:
    return [
        "".join(t.itertext()) for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")
    ]


def test_every_figure_draws_display_names_exactly_as_typed():
    models = [f"m{i}" for i in range(len(LABELS))]
    labels = dict(zip(models, LABELS, strict=True))
    board = [
        {
            "display_name": n,
            "success_rate": 0.5,
            "wilson_low": 0.4,
            "wilson_high": 0.6,
            "clustered": {"low": 0.35, "high": 0.65},
        }
        for n in LABELS
    ]
    cost = [
        {"display_name": n, "mean_cost_usd": i, "success_rate": 0.1 * i, "on_frontier": i % 2 == 0}
        for i, n in enumerate(LABELS)
    ]
    pairs = [
        {"a": models[0], "b": m, "difference_difference": 0.1, "significant": True}
        for m in models[1:]
    ]
    sources = [{"source_id": "s$1$", "tasks": 3, "rates": dict.fromkeys(models, 0.5)}]
    drawn = {
        "leaderboard": svg_texts(figures.leaderboard_figure(board, 0.95)),
        "cost": svg_texts(figures.cost_figure(cost, [], 200)),
        "pairs": svg_texts(figures.pairs_figure(models, labels, pairs)),
        "per_source": svg_texts(figures.per_source_figure(sources, models, labels)),
    }
    for name, texts in drawn.items():
        for label in LABELS:
            assert label in texts, (name, label, texts)
    assert "s$1$ (3)" in drawn["per_source"]


# 6. demo repository: never deletes a folder -------------------------------------------------
RELEASE = REPO / "resources" / "demo-release"


def test_demo_repository_refuses_a_folder_that_is_not_an_earlier_demo(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work")
    with pytest.raises(AfbenchError, match="not an earlier afbench demo repository"):
        demo.build_repository(RELEASE, out)
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]
    other = tmp_path / "other-repo"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    (other / "code.py").write_text("x = 1\n")
    with pytest.raises(AfbenchError, match="not an earlier afbench demo repository"):
        demo.build_repository(RELEASE, other)
    assert (other / "code.py").read_text() == "x = 1\n"
    a_file = tmp_path / "file"
    a_file.write_text("keep")
    with pytest.raises(AfbenchError, match="not a folder"):
        demo.build_repository(RELEASE, a_file)
    assert a_file.read_text() == "keep"


def test_demo_repository_rebuilds_an_earlier_demo_but_never_its_local_changes(tmp_path):
    out = tmp_path / "demo-upstream"
    out.mkdir()  # an empty folder is fine
    commit = demo.build_repository(RELEASE, out)
    assert demo.is_demo_repository(out)
    assert demo.build_repository(RELEASE, out) == commit  # rebuilt in place, same commit
    (out / "notes.txt").write_text("mine")
    with pytest.raises(AfbenchError, match="local changes or extra files"):
        demo.build_repository(RELEASE, out)
    assert (out / "notes.txt").read_text() == "mine"


def test_demo_repo_cli_refusal_is_one_message(tmp_path):
    (tmp_path / "keep.txt").write_text("keep")
    result = afbench(
        "demo", "repo", "--out", str(tmp_path), "--release-files", str(RELEASE), cwd=tmp_path
    )
    assert result.returncode == 2
    one_clean_message(result.stderr.decode())
    assert (tmp_path / "keep.txt").read_text() == "keep"


# 8. the properties bench/robustness.py runs 5,000 times each, here briefly -------------------
FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(path=st.sampled_from(prop.TEXT_PLACES), text=prop.hostile_texts)
def test_hostile_text_at_any_config_setting_is_refused_or_sane(path, text):
    prop.check_config_text(path, text)


@FAST
@given(path=st.sampled_from(prop.NUMBER_PLACES), value=prop.hostile_numbers)
def test_hostile_numbers_at_any_number_setting_are_refused_or_sane(path, value):
    prop.check_config_number(path, value)


@FAST
@given(case=prop.yaml_cases)
def test_deep_aliased_duplicate_or_hostile_yaml_is_refused_or_sane(case):
    prop.check_config_yaml(case)


@FAST
@given(
    kind=st.sampled_from(prop.FILE_KINDS),
    reader=st.sampled_from(sorted(prop.FILE_READERS)),
    name=prop.file_names,
)
def test_every_reader_refuses_what_is_not_a_regular_file(kind, reader, name):
    prop.check_file_kind(kind, reader, name)


@FAST
@given(index=st.integers(0, 20), text=prop.hostile_texts)
def test_a_verdict_with_hostile_strings_is_refused_or_writable(index, text):
    prop.check_verdict_writable(index, text)


def test_the_oracle_catches_a_schema_hole(demo_yaml):
    """assert_config_sane is independent of the schema: it refuses what a weaker schema let by."""
    config = validate_config(prop.HOSTILE_BASE)
    prop.assert_config_sane(config)
    for path, value in [
        (["release", "revision"], "a" * 40 + "\n"),
        (["source", "total_timeout_s"], math.nan),
        (["plans", "environment_type"], "--help"),
        (["models"], {"summary": config["models"]["demo-model-a"]}),
    ]:
        with pytest.raises((AssertionError, AfbenchError)):
            prop.assert_config_sane(at(config, path, value))
