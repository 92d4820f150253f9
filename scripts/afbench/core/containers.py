"""The container engine under Harbor 0.22.0's `docker` environment, as a trial job sees it:
whether it answers, and what a dead trial's environment left in it (containers, networks,
volumes and images of the trial's Compose projects, which Harbor names after the trial), to be
removed. Every command runs with the trial's own environment (its DOCKER_HOST), and nothing of
any other Compose project is touched."""

from __future__ import annotations

import re
import subprocess

from afbench.core.errors import AfbenchError

COMPOSE_PROJECT = "com.docker.compose.project"


def engine_name(env: dict[str, str]) -> str:
    if env.get("DOCKER_HOST"):
        return f"the Docker engine at DOCKER_HOST={env['DOCKER_HOST']}"
    if env.get("DOCKER_CONTEXT"):
        return f"the Docker engine of context {env['DOCKER_CONTEXT']}"
    return "the Docker engine at unix:///var/run/docker.sock (the default)"


def _docker(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["docker", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise AfbenchError(
            "Harbor's docker environment needs the docker client: not found",
            field="plans.environment_type",
            expected=f"docker on PATH {env.get('PATH')}",
        ) from None
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, 124, "", f"no answer in {timeout:g} s")


def engine_problem(env: dict[str, str]) -> str | None:
    """Why the Docker engine does not answer (one line), or None when it does."""
    answer = _docker(env, "info", "--format", "{{.ServerVersion}}", timeout=30)
    if answer.returncode == 0 and answer.stdout.strip():
        return None
    said = (answer.stderr or answer.stdout).strip().splitlines()
    return said[-1][:300] if said else f"docker info exited {answer.returncode}"


def compose_prefix(trial_name: str) -> str:
    """The start of the Compose project names of a trial's environments: Harbor 0.22.0 names
    the project after the trial (`<trial>__env`, a separate verifier's `<trial>__<key>`),
    lowercased, other characters than a-z, 0-9, - and _ as -."""
    name = re.sub(r"[^a-z0-9_-]", "-", trial_name.lower())
    return ("0" + name if not re.match(r"[a-z0-9]", name) else name) + "__"


def remove_leftovers(trial_names: list[str], env: dict[str, str]) -> list[str]:
    """Remove what the Docker engine still holds of these trials' Harbor environments (their
    containers, networks, volumes and images, by Compose project) and say what went; nothing
    of any other project is touched."""
    prefixes = tuple(compose_prefix(name) for name in trial_names)
    if not prefixes:
        return []
    label = ("--filter", f"label={COMPOSE_PROJECT}")
    row = '{{.ID}}\t{{.Label "' + COMPOSE_PROJECT + '"}}'

    def listed(*args: str) -> list[str]:
        answer = _docker(env, *args)
        if answer.returncode != 0:
            raise AfbenchError(
                f"cannot list what {engine_name(env)} holds: {answer.stderr.strip()[:300]}",
                field="docker " + " ".join(args[:2]),
            )
        return [
            ident
            for ident, _, project in (line.partition("\t") for line in answer.stdout.splitlines())
            if project.startswith(prefixes)
        ]

    containers = listed("ps", "-a", *label, "--format", row.replace(".ID", ".ID"))
    networks = listed("network", "ls", *label, "--format", row)
    volumes = listed("volume", "ls", *label, "--format", row.replace(".ID", ".Name"))
    image_ids = _docker(env, "image", "ls", "-q", "--no-trunc", *label).stdout.split()
    images = []
    if image_ids:
        inspected = _docker(
            env,
            "image",
            "inspect",
            "--format",
            '{{.Id}}\t{{index .Config.Labels "' + COMPOSE_PROJECT + '"}}',
            *sorted(set(image_ids)),
        ).stdout.splitlines()
        images = [
            i for i, _, p in (line.partition("\t") for line in inspected) if p.startswith(prefixes)
        ]
    removed = []
    for kind, ids, command in (
        ("container", containers, ("rm", "-f")),
        ("network", networks, ("network", "rm")),
        ("volume", volumes, ("volume", "rm", "-f")),
        ("image", images, ("image", "rm")),
    ):
        if not ids:
            continue
        answer = _docker(env, *command, *ids, timeout=120)
        if answer.returncode != 0:
            raise AfbenchError(
                f"cannot remove the {kind}(s) a dead trial left in {engine_name(env)}: "
                f"{answer.stderr.strip()[:300]}",
                field="docker " + " ".join(command),
                expected=f"the {kind}(s) removed",
                found=", ".join(ids),
            )
        removed += [f"{kind} {ident[:24]}" for ident in ids]
    return removed
