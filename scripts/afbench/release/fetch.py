"""Fetch the pinned release files from https, a local git checkout or a mirror folder, and
prove every byte with its SHA-256 pin before it lands in the release folder."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path, PurePosixPath

from afbench.core.errors import AfbenchError
from afbench.core.fsutil import (
    atomic_write_bytes,
    read_regular_file,
    say,
    sha256_bytes,
    sha256_file,
)
from afbench.kinds import RECEIPT, VERIFIED_FILE
from afbench.release.identity import identity, license_of

TYPE_CHECKING = False  # a fetch job does not need typing (nor config) to start
if TYPE_CHECKING:
    from afbench.core.config import ReleaseFile

MAX_REDIRECTS = 5


class _DeadlinePassed(Exception):
    """Raised when a download asks for a connection after its total time is up."""


class _Deadline:
    """The total time limit of one file's download, retries included. When it passes, every
    socket the download opened is shut down (and again every 50 ms, for one still
    connecting), so a read blocked on a server that drips its headers or body one byte at a
    time returns at once; a read timeout alone never fires while bytes keep coming."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expires = time.monotonic() + seconds
        self._sockets: list = []
        self._lock = threading.Lock()
        self._fired = threading.Event()
        self._done = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="afbench-deadline", daemon=True)

    def __enter__(self) -> _Deadline:
        self._watchdog.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._done.set()
        self._watchdog.join()

    @property
    def expired(self) -> bool:
        return self._fired.is_set() or time.monotonic() >= self.expires

    def remaining(self) -> float:
        return max(0.0, self.expires - time.monotonic())

    def track(self, sock) -> None:
        """Watch `sock` (None: a connection not yet open, tracked when it connects)."""
        if self.expired:
            raise _DeadlinePassed
        if sock is not None:
            with self._lock:
                self._sockets.append(sock)

    def _watch(self) -> None:
        if self._done.wait(self.seconds):
            return
        self._fired.set()
        while True:
            with self._lock:
                sockets = list(self._sockets)
            for sock in sockets:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            if self._done.wait(0.05):
                return


class HttpsSource:
    """Raw files at the pinned revision, e.g. https://raw.githubusercontent.com/<repo>/<rev>/."""

    def __init__(self, source: dict, repository: str, revision: str) -> None:
        self.settings = source
        self.base = f"{source['base_url'].rstrip('/')}/{repository}/{revision}/"
        self._session = None
        self._deadline: _Deadline | None = None

    def describe(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def session(self):
        if self._session is None:
            import requests
            from requests.adapters import HTTPAdapter
            from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
            from urllib3.util.retry import Retry

            retries = self.settings["retries"]
            retry = Retry(
                total=retries,
                connect=retries,
                read=retries,
                status=retries,
                backoff_factor=self.settings["backoff_factor"],
                backoff_max=10,
                status_forcelist=(500, 502, 503, 504),
                allowed_methods={"GET"},
                redirect=False,
                raise_on_status=False,
                respect_retry_after_header=False,
            )
            session = requests.Session()
            session.trust_env = False  # no proxies or netrc from the environment
            adapter = HTTPAdapter(max_retries=retry)
            source = self

            def tracked(pool_class):
                class TrackedConnection(pool_class.ConnectionCls):
                    def connect(self):
                        super().connect()
                        if source._deadline is not None:
                            source._deadline.track(self.sock)

                class Tracked(pool_class):
                    """Hands every socket to the current download's deadline."""

                    ConnectionCls = TrackedConnection

                    def _get_conn(self, timeout=None):
                        connection = super()._get_conn(timeout)
                        if source._deadline is not None:
                            try:
                                source._deadline.track(connection.sock)
                            except _DeadlinePassed:
                                self._put_conn(connection)
                                raise
                        return connection

                return Tracked

            adapter.poolmanager.pool_classes_by_scheme = {
                "http": tracked(HTTPConnectionPool),
                "https": tracked(HTTPSConnectionPool),
            }
            session.mount("https://", adapter)
            session.mount("http://", adapter)
            self._session = session
        return self._session

    def _too_slow(self, url: str) -> AfbenchError:
        return AfbenchError(
            "download exceeded the total time limit; nothing was written",
            file=url,
            expected=f"at most {self.settings['total_timeout_s']} s (source.total_timeout_s)",
        )

    def read(self, path: str) -> bytes:
        url = self.describe(path)
        with _Deadline(self.settings["total_timeout_s"]) as deadline:
            self._deadline = deadline
            try:
                data = self._read_with_retries(url, deadline)
            except _DeadlinePassed:
                raise self._too_slow(url) from None
            finally:
                self._deadline = None
        if deadline.expired:  # a body cut by the watchdog may look complete: never use it
            raise self._too_slow(url)
        return data

    def _read_with_retries(self, url: str, deadline: _Deadline) -> bytes:
        import requests

        attempts = self.settings["retries"] + 1
        for attempt in range(attempts):
            try:
                return self._read_once(url)
            except (
                requests.exceptions.ChunkedEncodingError,
                requests.exceptions.ConnectionError,
                requests.exceptions.Timeout,
            ) as exc:
                if deadline.expired:
                    raise _DeadlinePassed from None
                # urllib3 retries the request itself; a body cut mid-way is retried here.
                if attempt + 1 == attempts:
                    raise AfbenchError(
                        f"download failed after {attempts} attempts: "
                        f"{type(exc).__name__}: {_short(exc)}",
                        file=url,
                    ) from None
                time.sleep(
                    min(self.settings["backoff_factor"] * (2**attempt), deadline.remaining())
                )
            except requests.exceptions.RequestException as exc:
                if deadline.expired:
                    raise _DeadlinePassed from None
                raise AfbenchError(
                    f"download failed: {type(exc).__name__}: {_short(exc)}", file=url
                ) from None
        raise AssertionError("unreachable")

    def _read_once(self, url: str) -> bytes:
        from urllib.parse import urljoin, urlsplit

        settings = self.settings
        origin = urlsplit(url)[:2]
        seen = {url}
        for _ in range(MAX_REDIRECTS + 1):
            response = self.session().get(
                url,
                stream=True,
                allow_redirects=False,
                timeout=(settings["connect_timeout_s"], settings["read_timeout_s"]),
            )
            with response:
                if response.is_redirect:
                    target = urljoin(url, response.headers.get("Location", ""))
                    if urlsplit(target)[:2] != origin:
                        raise AfbenchError(
                            "refusing a redirect to another host",
                            file=url,
                            expected="/".join(origin),
                            found=target,
                        )
                    if target in seen:
                        raise AfbenchError(
                            "redirect loop", file=url, expected="a new location", found=target
                        )
                    seen.add(target)
                    url = target
                    continue
                if response.status_code != 200:
                    raise AfbenchError(
                        f"HTTP {response.status_code} {response.reason}",
                        file=url,
                        expected="HTTP 200",
                    )
                return self._read_body(response, url)
        raise AfbenchError(f"more than {MAX_REDIRECTS} redirects", file=url)

    def _read_body(self, response, url: str) -> bytes:
        from afbench.core.progress import Progress

        cap = self.settings["max_bytes"]
        chunks, size = [], 0
        length = response.headers.get("Content-Length", "")
        # the bar's total only (a length the server gets wrong changes nothing else); of a
        # compressed body it counts other bytes than the inflated ones counted here
        encoded = response.headers.get("Content-Encoding", "identity") != "identity"
        known = length.isdigit() and len(length) < 19 and not encoded
        total = int(length) if known else None
        label = f"downloading {url.rsplit('/', 1)[-1]}"
        # iter_content inflates gzip/deflate: the cap bounds what would be written.
        with Progress(total, label, "bytes") as bar:
            for chunk in response.iter_content(chunk_size=65536):
                size += len(chunk)
                if size > cap:
                    raise AfbenchError(
                        "response larger than the size cap",
                        file=url,
                        expected=f"at most {cap} bytes (source.max_bytes)",
                        found=f"more than {cap} bytes",
                    )
                if self._deadline is not None and self._deadline.expired:
                    raise _DeadlinePassed
                chunks.append(chunk)
                bar.advance(len(chunk))
        return b"".join(chunks)


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) < 300 else text[:300] + "..."


class GitSource:
    """Blobs at the pinned commit of a local checkout, whatever its work tree holds."""

    def __init__(self, source: dict, revision: str) -> None:
        if not source.get("checkout"):
            raise AfbenchError(
                "source.kind is git but source.checkout is not set", field="source.checkout"
            )
        self.checkout = Path(source["checkout"]).resolve()
        self.revision = revision
        self.max_bytes = source["max_bytes"]
        self._batch = None

    def describe(self, path: str) -> str:
        return f"git:{self.checkout}@{self.revision}:{path}"

    def _start(self):
        """One `git cat-file --batch` for every file (gitrun.Batch: hardened, see there),
        after checking that the pinned commit is there."""
        from afbench.core import gitrun

        if self._batch is not None and self._batch.open:
            return self._batch
        if not self.checkout.is_dir():
            raise AfbenchError("git checkout not found", file=str(self.checkout))
        self._batch = gitrun.Batch(self.checkout)
        kind, _ = self._batch.get(f"{self.revision}^{{commit}}")
        if kind != "commit":
            self.close()
            raise AfbenchError(
                "the checkout does not contain the pinned commit "
                "(fetch it, e.g. `git fetch origin <revision>`)",
                file=str(self.checkout),
                expected=self.revision,
            )
        return self._batch

    def read(self, path: str) -> bytes:
        from afbench.core import gitrun

        batch = self._start()
        kind, data = batch.get(f"{self.revision}:{path}", cap=self.max_bytes)
        if kind is None:
            # not in the commit's tree, or in it but the object itself is missing
            self.close()
            listed = gitrun.output(self.checkout, "ls-tree", "-z", self.revision, "--", path)
            if listed:
                oid = listed.split(b"\t", 1)[0].split()[-1].decode()
                raise gitrun.missing_object(self.checkout, oid, path=path)
            raise AfbenchError("file not present at the pinned commit", file=self.describe(path))
        if kind != "blob":
            raise AfbenchError(
                f"not a file at the pinned commit (a {kind})", file=self.describe(path)
            )
        if isinstance(data, int):
            raise AfbenchError(
                "file larger than the size cap",
                file=self.describe(path),
                expected=f"at most {self.max_bytes} bytes",
                found=f"{data} bytes",
            )
        return data

    def close(self) -> None:
        if self._batch is not None:
            self._batch.close()
            self._batch = None


class DirSource:
    """A local folder laid out like the repository at the pinned revision."""

    def __init__(self, source: dict) -> None:
        if not source.get("mirror"):
            raise AfbenchError(
                "source.kind is dir but source.mirror is not set", field="source.mirror"
            )
        self.root = Path(source["mirror"]).resolve()
        self.max_bytes = source["max_bytes"]

    def describe(self, path: str) -> str:
        return str(self.root / path)

    def close(self) -> None:
        """Nothing to release: a mirror is read file by file."""

    def read(self, path: str) -> bytes:
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root):
            raise AfbenchError("path leaves the mirror folder", file=str(self.root / path))
        if not target.is_file():
            raise AfbenchError("file not found in the mirror", file=str(target))
        return read_regular_file(target, "mirror file", self.max_bytes)


def describe(source: dict, repository: str, revision: str, path: str) -> str:
    """Where a release file comes from, as its verified-file record names it (the source's
    kind and location only: how it is downloaded is not part of what it is). A local checkout
    or mirror is named as the config names it, never resolved: the same config built in two
    folders, or from a storage plugin's local copy, records the same bytes."""
    if source["kind"] == "https":
        return f"{source['base_url'].rstrip('/')}/{repository}/{revision}/{path}"
    if source["kind"] == "git":
        return f"git:{PurePosixPath(source['checkout'])}@{revision}:{path}"
    return str(PurePosixPath(source["mirror"]) / path)


def make_source(source: dict, repository: str, revision: str):
    """The configured source (`source:` in config) at the pinned revision."""
    if source["kind"] == "https":
        return HttpsSource(source, repository, revision)
    if source["kind"] == "git":
        return GitSource(source, revision)
    return DirSource(source)


def verify_cached(path: Path, spec: ReleaseFile) -> bool:
    """True if a verified copy is already in place; an error if something else is there."""
    if path.is_symlink():
        raise AfbenchError("cached release file is a symbolic link; refusing it", file=str(path))
    if not path.exists():
        return False
    actual = sha256_file(path)
    if actual != spec.sha256:
        raise AfbenchError(
            "cached release file does not match its pin; delete it to fetch it again",
            file=str(path),
            expected=f"sha256 {spec.sha256}",
            found=f"sha256 {actual}",
        )
    return True


def fetch_file(source, spec: ReleaseFile, dest: Path) -> None:
    """One release file at `dest`: kept if it already matches its pin, else downloaded,
    checked against the pin, made read-only and renamed into place."""
    if not spec.sha256:
        raise AfbenchError(
            "file has no SHA-256 pin, so it cannot be verified", file=spec.path, field="sha256"
        )
    if verify_cached(dest, spec):
        say(f"release file {spec.path}: already in place and matching its pin, kept", [dest])
        return
    data = source.read(spec.path)
    actual = sha256_bytes(data)
    if actual != spec.sha256:
        raise AfbenchError(
            "downloaded bytes do not match the pin; nothing was written",
            file=source.describe(spec.path),
            expected=f"sha256 {spec.sha256}",
            found=f"sha256 {actual}",
        )
    atomic_write_bytes(
        dest,
        data,
        about=f"release file {spec.path}: {len(data):,} bytes, matching its pin",
        read_only=True,
    )


def verify_file(release: dict, source: dict, spec: ReleaseFile, path: Path) -> dict:
    """One fetched file re-hashed against its pin: the verified-file record later stages read
    (with the release identity they carry on)."""
    path = Path(path)
    if not verify_cached(path, spec):
        raise AfbenchError("release file missing; fetch it first", file=str(path))
    entry = {
        "key": spec.key,
        "kind": spec.kind,
        "path": spec.path,
        "source": describe(source, release["repository"], release["revision"], spec.path),
        "expected_sha256": spec.sha256,
        "actual_sha256": sha256_file(path),
        "size": path.stat().st_size,
        "verified": True,
    }
    return VERIFIED_FILE.record(
        release=identity(release),
        source_kind=source["kind"],
        license=license_of(release),
        file=entry,
    )


def combine_receipt(verified: list[dict], skipped: list[ReleaseFile]) -> dict:
    """The release's receipt from its verified-file records, which must share one release."""
    if not verified:
        raise AfbenchError(
            "no verified files to make a receipt of",
            field="--entry",
            expected="at least one verified-file record",
        )
    first = verified[0]
    for other in verified[1:]:
        if (other["release"], other["source_kind"]) != (first["release"], first["source_kind"]):
            raise AfbenchError(
                "verified files come from different releases or sources",
                field=f"files.{other['file']['key']}",
                expected=first["release"]["revision"],
                found=other["release"]["revision"],
            )
    keys = [v["file"]["key"] for v in verified]
    if len(set(keys)) != len(keys):
        raise AfbenchError(
            "a release file is listed twice",
            field="files",
            expected="each file once",
            found=str(keys),
        )
    return RECEIPT.record(
        release=first["release"],
        source_kind=first["source_kind"],
        files=[v["file"] for v in verified],
        skipped=[
            {
                "key": spec.key,
                "path": spec.path,
                "reason": "no SHA-256 pin in config; not fetched, never read",
            }
            for spec in skipped
        ],
        license=first["license"],
    )


def build_receipt(
    release: dict,
    source: dict,
    pins: list[ReleaseFile],
    paths: dict[str, Path],
    skipped: list[ReleaseFile],
) -> dict:
    """What was fetched, from where, with both hashes. Every pinned file must be in place at
    `paths[key]` and match its pin; `skipped` are the files config names without a pin."""
    verified = [verify_file(release, source, spec, paths[spec.key]) for spec in pins]
    return combine_receipt(verified, skipped)


def fetch_release(
    release: dict,
    source: dict,
    pins: list[ReleaseFile],
    skipped: list[ReleaseFile],
    release_dir: Path,
) -> dict:
    """Fetch (or re-verify) every pinned file into `release_dir` and return the receipt."""
    reader = make_source(source, release["repository"], release["revision"])
    paths = {spec.key: Path(release_dir) / spec.path for spec in pins}
    try:
        for spec in pins:
            fetch_file(reader, spec, paths[spec.key])
    finally:
        reader.close()
    return build_receipt(release, source, pins, paths, skipped)
