#!/usr/bin/env bash
# A one-node SLURM cluster on this host, for the tests of the SLURM profile (profiles/slurm):
# Debian's slurm-wlm and munge, slurmctld and slurmd both on this machine, no accounting,
# ProctrackType=proctrack/linuxproc and TaskPlugin=task/none (no cgroups needed), the node's
# CPUs and memory as slurmd detects them. Idempotent: a cluster that is up with this
# configuration is left as it is. Exits 0 once `sinfo` shows the node idle, non-zero with the
# reason otherwise. Needs root (it installs packages and starts daemons).
set -euo pipefail

say() { echo "slurm-up: $*" >&2; }
die() {
    say "$*"
    exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (installs slurm-wlm and munge, starts munged, slurmctld, slurmd)"

CONF=/etc/slurm/slurm.conf
LOGDIR=/var/log/slurm
WAIT_S=${SLURM_UP_WAIT_S:-60}

# 1. Packages.
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
    || ! command -v sinfo >/dev/null || ! command -v munged >/dev/null; then
    command -v apt-get >/dev/null || die "slurm-wlm/munge are missing and there is no apt-get"
    say "installing Debian's slurm-wlm and munge"
    apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null \
        || die "apt-get install slurm-wlm munge failed"
fi

# 2. Munge (authentication between the SLURM daemons and clients).
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    [ -s /etc/munge/munge.key ] || mungekey --create --keyfile /etc/munge/munge.key \
        || die "cannot create /etc/munge/munge.key"
    chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
    mkdir -p /run/munge && chown munge:munge /run/munge && chmod 0755 /run/munge
    say "starting munged"
    runuser -u munge -- /usr/sbin/munged || die "munged did not start (see /var/log/munge)"
    for _ in $(seq 1 20); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
        sleep 0.5
    done
    munge -n | unmunge >/dev/null || die "munge does not work after starting munged"
fi

# 3. slurm.conf for this machine.
NODE_LINE=$(slurmd -C 2>/dev/null | head -n 1) || true
case "$NODE_LINE" in
NodeName=*) ;;
*) die "slurmd -C did not describe this node: $NODE_LINE" ;;
esac
NODE=$(sed -E 's/^NodeName=([^ ]+).*/\1/' <<<"$NODE_LINE")
CPUS=$(sed -E 's/.* CPUs=([0-9]+).*/\1/' <<<"$NODE_LINE")
MEMORY=$(sed -E 's/.* RealMemory=([0-9]+).*/\1/' <<<"$NODE_LINE")
# Leave 5% of the memory slurmd sees as slack: a node configured above what it detects drains.
MEMORY=$((MEMORY * 95 / 100))
TOPOLOGY=$(grep -oE 'Boards=[0-9]+ SocketsPerBoard=[0-9]+ CoresPerSocket=[0-9]+ ThreadsPerCore=[0-9]+' \
    <<<"$NODE_LINE" || true)
NEW_CONF=$(mktemp)
trap 'rm -f "$NEW_CONF"' EXIT
cat >"$NEW_CONF" <<EOF
# A one-node SLURM cluster on this host, written by afbench's ci/slurm-up.sh.
ClusterName=afbench
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
ReturnToService=2
MinJobAge=300
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/spool/slurmd
StateSaveLocation=/var/spool/slurmctld
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd.log
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS $TOPOLOGY RealMemory=$MEMORY State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

mkdir -p /etc/slurm /var/spool/slurmd /var/spool/slurmctld "$LOGDIR"
if ! cmp -s "$NEW_CONF" "$CONF"; then
    say "writing $CONF"
    install -m 0644 "$NEW_CONF" "$CONF"
    # Daemons running on an older configuration (started by this script: their pid files).
    for pidfile in /run/slurmd.pid /run/slurmctld.pid; do
        if alive "$pidfile"; then
            pid=$(cat "$pidfile")
            say "restarting the daemon of $pidfile (pid $pid) on the new configuration"
            kill "$pid"
            for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        fi
    done
fi

# 4. Daemons.
if ! alive /run/slurmctld.pid; then
    say "starting slurmctld"
    slurmctld || die "slurmctld did not start: $(tail -n 5 "$LOGDIR/slurmctld.log" 2>/dev/null)"
fi
if ! alive /run/slurmd.pid; then
    say "starting slurmd"
    slurmd || die "slurmd did not start: $(tail -n 5 "$LOGDIR/slurmd.log" 2>/dev/null)"
fi

# 5. Wait for the node to be idle (resume it if an earlier run left it down or drained).
state=""
for i in $(seq 1 $((WAIT_S * 2))); do
    state=$(sinfo -h -n "$NODE" -o %t 2>/dev/null | head -n 1 || true)
    case "$state" in
    idle | mix | alloc) break ;;
    down* | drain* | drng* | fail*)
        [ $((i % 10)) = 1 ] && scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true
        ;;
    esac
    sleep 0.5
done
case "$state" in
idle | mix | alloc)
    say "node $NODE is $state ($CPUS CPUs, $MEMORY MB)"
    ;;
*)
    say "node $NODE is not idle after ${WAIT_S}s (state: ${state:-no answer from sinfo})"
    sinfo -R >&2 2>/dev/null || true
    tail -n 5 "$LOGDIR/slurmctld.log" "$LOGDIR/slurmd.log" >&2 2>/dev/null || true
    exit 1
    ;;
esac
