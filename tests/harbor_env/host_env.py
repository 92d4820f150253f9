"""A Harbor 0.22.0 environment that runs a trial on this host, for tests on machines without a
container engine. It is the only stand-in in afbench's execution tests: Harbor, the task
exporter, the grader, Snakemake and SLURM are real.

Select it with Harbor's import-path form of the environment flag, with this folder on the
module path of the Python that runs Harbor:

    PYTHONPATH=tests/harbor_env harbor run -p TASK -a nop ... -e host_env:HostEnvironment

What a trial sees: the host's own file system and programs, except for a private tree kept in a
temporary folder per environment: /tmp, /logs, /tests, /solution, /harbor, and the task's
WORKDIR and COPY destinations (for example /workspace). Each command runs as root in a fresh
mount namespace (`unshare --mount`) whose root is a tmpfs holding bind mounts of the host's
top-level folders and of that private tree, plus the trial's log folders where Harbor asks for
them (so the environment is `mounted`: Harbor reads the reward file in place), in a PID
namespace of its own that dies with Harbor (a killed `harbor run` leaves no process behind).
Nothing is written to the host outside the temporary folder and the trial directory. It needs
root (or CAP_SYS_ADMIN) and util-linux's unshare and setpriv.

The task's environment/Dockerfile is read, not built: FROM is noted and ignored (the host's
programs stand in for the image), WORKDIR, COPY (local sources only) and ENV are applied, LABEL
and ARG are ignored, and any other instruction (RUN among them) is refused with the reason,
because running it would change the host.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import signal
import tempfile
from pathlib import Path, PurePosixPath

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

# Private at the top level of every host environment; others come from the Dockerfile.
ALWAYS_PRIVATE = ("harbor", "logs", "solution", "tests", "tmp")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
IGNORED = ("LABEL", "ARG", "MAINTAINER", "EXPOSE", "CMD", "ENTRYPOINT", "STOPSIGNAL")


class HostEnvironmentError(RuntimeError):
    pass


def _dockerfile_instructions(text: str) -> list[tuple[int, str, str]]:
    """(line number, INSTRUCTION, arguments), with continuation lines joined."""
    result, pending, start = [], "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        keyword, _, rest = full.partition(" ")
        result.append((start, keyword.upper(), rest.strip()))
    return result


class HostEnvironment(BaseEnvironment):
    @staticmethod
    def type() -> str:
        return "afbench-host"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(mounted=True)

    # -- definition ---------------------------------------------------------------------------

    def _validate_definition(self):
        # A bad definition fails the trial at start(), where Harbor records it as the trial's
        # exception (an infrastructure error), instead of aborting the whole `harbor run`.
        self._sandbox: Path | None = None
        self._definition_error: Exception | None = None
        self._image, self._workdir, self._copies, self._image_env = None, PurePosixPath("/"), [], {}
        self._private = list(ALWAYS_PRIVATE)
        try:
            self._read_definition()
        except (OSError, ValueError, HostEnvironmentError) as error:
            self._definition_error = error

    def _read_definition(self):
        dockerfile = self.environment_dir / "Dockerfile"
        if not dockerfile.is_file():
            raise FileNotFoundError(
                f"host environment: {dockerfile} not found (it reads the task's Dockerfile)"
            )
        workdir = PurePosixPath("/")
        copies: list[tuple[Path, PurePosixPath, bool]] = []
        env: dict[str, str] = {}
        for number, keyword, args in _dockerfile_instructions(dockerfile.read_text()):
            where = f"{dockerfile}:{number}"
            if keyword == "FROM":
                self._image = args
            elif keyword == "WORKDIR":
                workdir = workdir / args
            elif keyword == "ENV":
                env.update(self._parse_env(args, where))
            elif keyword == "COPY":
                copies.extend(self._parse_copy(args, workdir, where))
            elif keyword in IGNORED:
                continue
            else:
                raise HostEnvironmentError(
                    f"host environment: {where}: {keyword} is not supported (it reads "
                    "FROM, WORKDIR, COPY and ENV; running anything else would change the host)"
                )
        if self.task_env_config.workdir:
            workdir = PurePosixPath(self.task_env_config.workdir)
        self._workdir = workdir
        self._copies = copies
        self._image_env = env
        private = set(ALWAYS_PRIVATE)
        for path in [workdir, *(dst for _, dst, _ in copies)]:
            if len(path.parts) > 1:
                private.add(path.parts[1])
        for mount in self._mounts:
            parts = PurePosixPath(mount["target"]).parts
            if len(parts) > 1:
                private.add(parts[1])
        for name in sorted(private - set(ALWAYS_PRIVATE)):
            if os.path.lexists(f"/{name}"):
                raise HostEnvironmentError(
                    f"host environment: the task needs /{name} of its own, but /{name} is "
                    "the host's; only new top-level folders can be private"
                )
        self._private = sorted(private)

    def _parse_env(self, args: str, where: str) -> dict[str, str]:
        words = shlex.split(args)
        if len(words) >= 2 and "=" not in words[0]:
            return {words[0]: " ".join(words[1:])}
        pairs = {}
        for word in words:
            key, sep, value = word.partition("=")
            if not sep or not key:
                raise HostEnvironmentError(f"host environment: {where}: bad ENV {args!r}")
            pairs[key] = value
        return pairs

    def _parse_copy(
        self, args: str, workdir: PurePosixPath, where: str
    ) -> list[tuple[Path, PurePosixPath, bool]]:
        words = [w for w in shlex.split(args) if not w.startswith("--")]
        if len(words) < 2:
            raise HostEnvironmentError(f"host environment: {where}: bad COPY {args!r}")
        *sources, dest = words
        dst = workdir / dest
        into = dest.endswith("/") or len(sources) > 1
        root = self.environment_dir.resolve()
        result = []
        for source in sources:
            path = (root / source).resolve()
            if path != root and root not in path.parents:
                raise HostEnvironmentError(
                    f"host environment: {where}: COPY source {source!r} is outside {root}"
                )
            if not path.exists():
                raise HostEnvironmentError(f"host environment: {where}: {path} not found")
            result.append((path, dst, into))
        return result

    # -- paths --------------------------------------------------------------------------------

    def _container_path(self, path: str) -> PurePosixPath:
        pure = PurePosixPath(path)
        pure = pure if pure.is_absolute() else self._workdir / pure
        parts = [p for p in pure.parts[1:] if p not in ("", ".")]
        if ".." in parts:
            raise HostEnvironmentError(f"host environment: path {path!r} has '..'")
        return PurePosixPath("/", *parts)

    def _host_path(self, path: str, for_writing: bool) -> Path:
        """Where a path of the trial's view lives on the host."""
        pure = self._container_path(path)
        for mount in sorted(self._mounts, key=lambda m: -len(m["target"])):
            target = PurePosixPath(mount["target"])
            if pure == target or target in pure.parents:
                return Path(mount["source"], *pure.relative_to(target).parts)
        if len(pure.parts) > 1 and pure.parts[1] in self._private:
            return self._fs / Path(*pure.parts[1:])
        if for_writing:
            raise HostEnvironmentError(
                f"host environment: cannot write {pure}: outside the trial's private folders "
                f"({', '.join('/' + p for p in self._private)}) it is the host's"
            )
        return Path(pure)

    @property
    def _fs(self) -> Path:
        if self._sandbox is None:
            raise HostEnvironmentError("host environment: not started")
        return self._sandbox / "fs"

    # -- life cycle ---------------------------------------------------------------------------

    async def start(self, force_build: bool) -> None:
        if self._sandbox is not None:
            return
        if self._definition_error is not None:
            raise self._definition_error
        for tool in ("unshare", "setpriv"):
            if shutil.which(tool) is None:
                raise HostEnvironmentError(f"host environment: util-linux's {tool} is missing")
        self._sandbox = Path(tempfile.mkdtemp(prefix="harbor-host-env-"))
        (self._sandbox / "root").mkdir()
        for name in self._private:
            (self._fs / name).mkdir(parents=True, exist_ok=True)
        (self._fs / "tmp").chmod(0o1777)
        for source, dst, into in self._copies:
            target = self._host_path(str(dst), for_writing=True)
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True, symlinks=True)
            else:
                target = target / source.name if into else target
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        self._host_path(str(self._workdir), for_writing=True).mkdir(parents=True, exist_ok=True)
        probe = await self.exec("true", timeout_sec=60)
        if probe.return_code != 0:
            raise HostEnvironmentError(
                "host environment: cannot make a mount namespace (it needs root or "
                f"CAP_SYS_ADMIN): {(probe.stderr or probe.stdout or '').strip()}"
            )
        self.logger.debug(f"host environment in {self._sandbox} (image {self._image} ignored)")

    async def stop(self, delete: bool):
        if self._sandbox is not None:
            shutil.rmtree(self._sandbox, ignore_errors=True)
            self._sandbox = None

    # -- commands -----------------------------------------------------------------------------

    def _namespace_script(self) -> str:
        root = shlex.quote(str(self._sandbox / "root"))
        lines = ["set -e", f"mount -t tmpfs -o mode=0755 afbench-host-env {root}"]
        for name in sorted(os.listdir("/")):
            if name in self._private:
                continue
            host = f"/{name}"
            inside = shlex.quote(f"{self._sandbox}/root/{name}")
            if name == "proc":  # the command's own PID namespace
                lines += [f"mkdir {inside}", f"mount -t proc proc {inside}"]
            elif os.path.islink(host):
                lines.append(f"ln -s {shlex.quote(os.readlink(host))} {inside}")
            elif os.path.isdir(host):
                lines += [f"mkdir {inside}", f"mount --rbind {shlex.quote(host)} {inside}"]
        for name in self._private:
            inside = shlex.quote(f"{self._sandbox}/root/{name}")
            lines += [
                f"mkdir {inside}",
                f"mount --bind {shlex.quote(str(self._fs / name))} {inside}",
            ]
        for mount in sorted(self._mounts, key=lambda m: len(m["target"])):
            target = self._container_path(mount["target"])
            inside = shlex.quote(f"{self._sandbox}/root{target}")
            source = shlex.quote(mount["source"])
            lines += [f"mkdir -p {inside}", f"mount --bind {source} {inside}"]
        return "\n".join(lines)

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        if self._sandbox is None:
            raise HostEnvironmentError("host environment: exec before start")
        user = self._resolve_user(user)
        if user not in (None, "root", 0, "0"):
            self.logger.debug(f"host environment runs every command as root, not {user!r}")
        variables = {"PATH": DEFAULT_PATH, "HOME": "/root", "LANG": "C.UTF-8"}
        variables.update(self._image_env)
        variables.update(self._merge_env(env) or {})
        workdir = str(self._container_path(cwd) if cwd else self._workdir)
        inner = [
            "/usr/bin/env",
            "-i",
            *(f"{k}={v}" for k, v in variables.items()),
            "/usr/sbin/chroot",
            str(self._sandbox / "root"),
            "/bin/bash",
            "-c",
            'cd -- "$1" || exit 1; exec /bin/bash -c "$2"',
            "host-env",
            workdir,
            command,
        ]
        script = self._namespace_script() + "\nexec " + shlex.join(inner)
        # Killed with Harbor: setpriv makes unshare die with its parent, --kill-child takes
        # the namespace's first process with it, and the PID namespace everything in it.
        process = await asyncio.create_subprocess_exec(
            "setpriv",
            "--pdeathsig",
            "KILL",
            "--",
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--pid",
            "--fork",
            "--kill-child=KILL",
            "/bin/bash",
            "-c",
            script,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=timeout_sec)
        except TimeoutError:
            await self._kill(process)
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds") from None
        except asyncio.CancelledError:
            await self._kill(process)
            raise
        return ExecResult(
            stdout=stdout.decode(errors="replace"),
            stderr=stderr.decode(errors="replace"),
            return_code=process.returncode if process.returncode is not None else -1,
        )

    @staticmethod
    async def _kill(process: asyncio.subprocess.Process) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()

    # -- files --------------------------------------------------------------------------------

    async def upload_file(self, source_path: Path | str, target_path: str):
        target = self._host_path(target_path, for_writing=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source_path, target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str):
        target = self._host_path(target_dir, for_writing=True)
        shutil.copytree(source_dir, target, dirs_exist_ok=True, symlinks=True)

    async def download_file(self, source_path: str, target_path: Path | str):
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self._host_path(source_path, for_writing=False), target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str):
        shutil.copytree(
            self._host_path(source_dir, for_writing=False),
            target_dir,
            dirs_exist_ok=True,
            symlinks=True,
        )
