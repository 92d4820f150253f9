"""Fetch and verify from all three sources; every failure a clear error, nothing left behind."""

from __future__ import annotations

import os
import stat
import threading
import time

import pytest

from afbench.core.config import validate_config
from afbench.core.errors import AfbenchError
from afbench.core.fsutil import (
    read_json_file,
    sha256_bytes,
)
from afbench.release.fetch import GitSource, HttpsSource

from conftest import (
    HANG_GUARD_S,
    OWNER_REPO,
    body,
    config_for,
    fetch_release,
    git,
    https_source,
    make_git_repo,
    read_verified_file,
    redirect,
    release_dir,
    revision_dir,
    status,
    write_tree,
)

MANIFEST = "MANIFEST.csv"


def assert_nothing_at(cfg, rel):
    folder = release_dir(cfg)
    assert not (folder / rel).exists()
    leftovers = (
        [p for p in folder.rglob("*") if p.name.endswith(".part")] if folder.exists() else []
    )
    assert leftovers == []


def check_landed(cfg, release_files):
    root = release_dir(cfg)
    receipt = read_json_file(root / "receipt.json", "receipt")
    assert len(receipt["files"]) == 11
    for entry in receipt["files"]:
        data = (root / entry["path"]).read_bytes()
        assert data == release_files[entry["path"]]
        assert entry["expected_sha256"] == entry["actual_sha256"] == sha256_bytes(data)
        assert entry["size"] == len(data)
        mode = (root / entry["path"]).stat().st_mode
        assert not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    return receipt


def test_dir_source_lands_byte_identical_read_only(dir_config, release_files):
    fetch_release(dir_config)
    receipt = check_landed(dir_config, release_files)
    assert receipt["source_kind"] == "dir"


def test_https_source_fetches_at_pinned_revision(tmp_path, http_release, release_files, demo_yaml):
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"]),
        tmp_path / "r",
        demo_yaml,
    )
    fetch_release(cfg)
    receipt = check_landed(cfg, release_files)
    assert receipt["files"][0]["source"].startswith(http_release["base"] + "/afbench/")
    assert all(http_release["revision"] in r for r in http_release["handler"].requests)


def test_git_source_reads_the_pinned_commit_not_the_work_tree(tmp_path, release_files, demo_yaml):
    repo, pinned = make_git_repo(tmp_path / "upstream", release_files)
    (repo / MANIFEST).write_bytes(b"changed later\n")
    git(repo, "commit", "-qam", "later change")
    (repo / MANIFEST).write_bytes(b"uncommitted edit\n")
    cfg = config_for(
        release_files, pinned, {"kind": "git", "checkout": str(repo)}, tmp_path / "r", demo_yaml
    )
    fetch_release(cfg)
    check_landed(cfg, release_files)


def test_git_checkout_without_the_commit_is_an_error(tmp_path, release_files, demo_yaml):
    repo, _ = make_git_repo(tmp_path / "upstream", release_files)
    cfg = config_for(
        release_files, "c" * 40, {"kind": "git", "checkout": str(repo)}, tmp_path / "r", demo_yaml
    )
    with pytest.raises(AfbenchError, match="does not contain the pinned commit"):
        fetch_release(cfg)
    assert_nothing_at(cfg, MANIFEST)


def test_wrong_bytes_are_refused_and_nothing_is_written(tmp_path, release_files, demo_yaml):
    mirror = write_tree(tmp_path / "m", {**release_files, MANIFEST: b"tampered\n"})
    cfg = config_for(
        release_files, "a" * 40, {"kind": "dir", "mirror": str(mirror)}, tmp_path / "r", demo_yaml
    )
    with pytest.raises(AfbenchError) as err:
        fetch_release(cfg)
    message = str(err.value)
    assert MANIFEST in message and cfg["files"]["manifest"]["sha256"] in message
    assert sha256_bytes(b"tampered\n") in message
    assert_nothing_at(cfg, MANIFEST)


@pytest.mark.parametrize(
    "fault,match",
    [
        (status(404), "HTTP 404"),
        (status(500), "HTTP 500"),
        (redirect("http://example.invalid/x"), "redirect to another host"),
        (body(b"x" * 100, length=1000), "download failed"),  # truncated body
        (body(b"x" * 6_000_000), "size cap"),
        (body(b"x" * 6_000_000, gzip_it=True), "size cap"),  # inflates past the cap
        (body(b"wrong bytes"), "do not match the pin"),
    ],
)
def test_https_failures_are_clear_errors(
    tmp_path, http_release, release_files, demo_yaml, fault, match
):
    http_release["handler"].faults[http_release["prefix"] + MANIFEST] = fault
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"]),
        tmp_path / "r",
        demo_yaml,
    )
    with pytest.raises(AfbenchError, match=match) as err:
        fetch_release(cfg, only=["manifest"])
    assert MANIFEST in str(err.value)
    assert_nothing_at(cfg, MANIFEST)


def test_https_retries_5xx_then_verifies(tmp_path, http_release, release_files, demo_yaml):
    path = http_release["prefix"] + MANIFEST
    http_release["handler"].faults[path] = status(503, times=2)
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"]),
        tmp_path / "r",
        demo_yaml,
    )
    fetch_release(cfg, only=["manifest"])
    assert http_release["handler"].requests.count(path) == 3
    assert read_verified_file(cfg, "manifest") == release_files[MANIFEST]


def test_same_host_redirect_is_followed(tmp_path, http_release, release_files, demo_yaml):
    prefix = http_release["prefix"]
    http_release["handler"].faults[prefix + MANIFEST] = redirect(prefix + "moved.csv")
    http_release["handler"].files[prefix + "moved.csv"] = release_files[MANIFEST]
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"]),
        tmp_path / "r",
        demo_yaml,
    )
    fetch_release(cfg, only=["manifest"])
    assert (release_dir(cfg) / MANIFEST).read_bytes() == release_files[MANIFEST]


def test_tampered_cached_file_is_an_error(fetched_config):
    target = release_dir(fetched_config) / MANIFEST
    os.chmod(target, 0o644)
    target.write_bytes(b"tampered")
    with pytest.raises(AfbenchError, match="does not match its pin") as err:
        fetch_release(fetched_config)
    assert sha256_bytes(b"tampered") in str(err.value)
    with pytest.raises(AfbenchError, match="changed since it was verified"):
        read_verified_file(fetched_config, "manifest")


def test_cached_symlink_is_refused(dir_config, tmp_path, release_files):
    target = release_dir(dir_config) / MANIFEST
    target.parent.mkdir(parents=True)
    (tmp_path / "elsewhere.csv").write_bytes(release_files[MANIFEST])
    target.symlink_to(tmp_path / "elsewhere.csv")
    with pytest.raises(AfbenchError, match="symbolic link"):
        fetch_release(dir_config)


def test_null_pin_is_skipped_with_a_warning_and_refused_when_asked(
    tmp_path, release_files, demo_yaml
):
    mirror = write_tree(tmp_path / "m", release_files)
    cfg = config_for(
        release_files, "a" * 40, {"kind": "dir", "mirror": str(mirror)}, tmp_path / "r", demo_yaml
    )
    cfg["models"]["demo-model-b"]["sha256"] = None
    warnings = fetch_release(cfg)
    assert any("demo-model-b" in w for w in warnings)
    assert not (release_dir(cfg) / "results/demo-model-b.csv").exists()
    receipt = read_json_file(release_dir(cfg) / "receipt.json", "receipt")
    assert receipt["skipped"][0]["key"] == "demo-model-b"
    with pytest.raises(AfbenchError, match=r"models.demo-model-b.sha256"):
        fetch_release(cfg, only=["demo-model-b"])


@pytest.mark.parametrize("revision", ["main", "v1.0", "af1aa38", "A" * 40])
def test_moving_revision_is_refused_by_the_schema(demo_yaml, revision):
    cfg = dict(demo_yaml, release=dict(demo_yaml["release"], revision=revision))
    with pytest.raises(AfbenchError, match="release/revision"):
        validate_config(cfg)


# 2. fetch: total_timeout_s against a drip --------------------------------------------------
class Drip:
    """A server that sends `size` bytes of headers or body one byte at a time (10 s in all):
    never silent long enough for a read timeout. `ended` is set when it stops, `hung_up` says
    whether the client hung up before the last byte."""

    def __init__(self, what: str, size: int = 200, pause: float = 0.05) -> None:
        self.what, self.size, self.pause = what, size, pause
        self.ended, self.hung_up = threading.Event(), False

    def __call__(self, handler) -> bool:
        head = b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % self.size
        if self.what == "headers":
            data = b"HTTP/1.0 200 OK\r\nX-Slow: " + b"a" * self.size
        else:
            data = b"x" * self.size
        try:
            if self.what == "body":
                handler.wfile.write(head)
            for byte in data:
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(self.pause)
        except OSError:
            self.hung_up = True  # the client hung up: what the deadline does
        finally:
            self.ended.set()
        return True


@pytest.mark.parametrize("what", ["body", "headers"])
def test_total_timeout_holds_against_a_server_that_drips(http_release, what):
    """The deadline cuts the download short: the client hangs up mid-drip (a check made only
    once the drip is over would read it all and then refuse)."""
    handler = http_release["handler"]
    handler.faults[http_release["prefix"] + "MANIFEST.csv"] = drip = Drip(what)
    source = HttpsSource(
        https_source(http_release["base"], total_timeout_s=1, read_timeout_s=2, max_bytes=10**6),
        OWNER_REPO,
        http_release["revision"],
    )
    with pytest.raises(AfbenchError) as err:
        source.read("MANIFEST.csv")
    assert "exceeded the total time limit" in str(err.value)
    assert "MANIFEST.csv" in str(err.value) and "source.total_timeout_s" in str(err.value)
    assert drip.ended.wait(HANG_GUARD_S), "the server is still dripping"
    assert drip.hung_up, "the client read the whole drip before it gave up"


def test_a_fast_download_after_a_timed_out_one_still_works(http_release, release_files):
    handler = http_release["handler"]
    handler.faults[http_release["prefix"] + "MANIFEST.csv"] = Drip("body")
    source = HttpsSource(
        https_source(http_release["base"], total_timeout_s=1, max_bytes=10**6),
        OWNER_REPO,
        http_release["revision"],
    )
    with pytest.raises(AfbenchError, match="total time limit"):
        source.read("MANIFEST.csv")
    assert source.read("SOURCES.csv") == release_files["SOURCES.csv"]


def test_a_missing_commit_and_a_missing_object_each_say_so(git_release, tmp_path):
    checkout, revision, _cfg = git_release
    source = GitSource({"checkout": str(checkout), "max_bytes": 1 << 20}, "f" * 40)
    with pytest.raises(AfbenchError, match="does not contain the pinned commit"):
        source.read("MANIFEST.csv")
    source.close()
    oid = git(checkout, "rev-parse", f"{revision}:SOURCES.csv")
    (checkout / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    source = GitSource({"checkout": str(checkout), "max_bytes": 1 << 20}, revision)
    assert source.read("MANIFEST.csv")
    with pytest.raises(AfbenchError, match=f"missing object {oid} \\(SOURCES.csv\\)"):
        source.read("SOURCES.csv")
    with pytest.raises(AfbenchError, match="file not present at the pinned commit"):
        source.read("NOT-THERE.csv")
    source.close()


def slow_headers(delay: float):
    def fault(handler):
        time.sleep(delay)
        handler.send_error(500)
        return True

    return fault


@pytest.mark.parametrize(
    "fault,overrides,match",
    [
        (slow_headers(2.5), {"retries": 0}, "ReadTimeout"),
        (body(b"x" * 1000, delay=2.5), {"retries": 0}, "download failed"),
        (
            body(b"x" * 1000, delay=0.5),
            {"total_timeout_s": 0.2, "read_timeout_s": 2},
            "total time limit",
        ),
    ],
)
def test_slow_servers_time_out(
    tmp_path, http_release, release_files, demo_yaml, fault, overrides, match
):
    http_release["handler"].faults[http_release["prefix"] + "MANIFEST.csv"] = fault
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"], **overrides),
        tmp_path / "r",
        demo_yaml,
    )
    with pytest.raises(AfbenchError, match=match):
        fetch_release(cfg, only=["manifest"])
    assert not (revision_dir(cfg) / "release/MANIFEST.csv").exists()


def test_redirect_loop_is_refused(tmp_path, http_release, release_files, demo_yaml):
    prefix = http_release["prefix"]
    http_release["handler"].faults[prefix + "MANIFEST.csv"] = redirect(prefix + "b.csv")
    http_release["handler"].faults[prefix + "b.csv"] = redirect(prefix + "MANIFEST.csv")
    cfg = config_for(
        release_files,
        http_release["revision"],
        https_source(http_release["base"]),
        tmp_path / "r",
        demo_yaml,
    )
    with pytest.raises(AfbenchError, match="redirect loop"):
        fetch_release(cfg, only=["manifest"])
