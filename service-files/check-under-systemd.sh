#!/usr/bin/env bash
# Check the service under a real systemd, as a user would meet it. Run as root on
# Debian/Ubuntu, after ./run-tests.sh has made .venv:
#
#     sudo service-files/check-under-systemd.sh
#
# Boots systemd with systemd-nspawn over a throw-away overlay of / (its upper layer on a
# tmpfs, so the host is never changed), creates a test user with lingering, runs
# `memory service install` as that user and checks the unit: READY, STATUS, an edit made
# searchable, read-only notes and no network inside the sandbox, watchdog pings over two
# minutes, a clean stop, a restart after kill -9, no restart after exit 75, a failed
# install that says so, `systemd-analyze verify`, the replication companion (a replica kept
# current, private and without network, restarted after Litestream is killed, removed),
# and the system unit for one user. Prints
# one PASS/FAIL line per check, exits 1 if any failed, and removes every mount and process.
set -uo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
VENV="$REPO/.venv"
[ "$(id -u)" = 0 ] || { echo "check-under-systemd: run as root" >&2; exit 2; }
[ -x "$VENV/bin/memory" ] || { echo "check-under-systemd: $VENV/bin/memory is missing; run ./run-tests.sh first" >&2; exit 2; }
if ! command -v systemd-nspawn >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd-container >/dev/null \
        || { echo "check-under-systemd: cannot install systemd-container" >&2; exit 2; }
fi

WORK="$(mktemp -d /tmp/pm-systemd.XXXXXX)"
ROOT="$WORK/root"
NSPAWN_PID=""
FAILED=0
USER_NAME=pmtest

cleanup() {
    if [ -n "$NSPAWN_PID" ] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
        kill -TERM "$NSPAWN_PID" 2>/dev/null   # nspawn asks the container to power off
        for _ in $(seq 40); do kill -0 "$NSPAWN_PID" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$NSPAWN_PID" 2>/dev/null
        wait "$NSPAWN_PID" 2>/dev/null
    fi
    umount -R -l "$ROOT" 2>/dev/null
    umount -l "$WORK" 2>/dev/null
    rmdir "$WORK" 2>/dev/null
}
trap cleanup EXIT INT TERM

check() {  # check NAME COMMAND...: PASS when the command succeeds
    local name="$1"; shift
    local out
    if out="$("$@" 2>&1)"; then
        echo "PASS $name"
    else
        echo "FAIL $name"; FAILED=1
        [ -n "$out" ] && printf '%s\n' "$out" | tail -5 | sed 's/^/     /'
    fi
}

mount -t tmpfs -o size=4G tmpfs "$WORK"
mkdir "$WORK/upper" "$WORK/work" "$ROOT"
mount -t overlay overlay -o "lowerdir=/,upperdir=$WORK/upper,workdir=$WORK/work" "$ROOT"
# The venv's interpreter may live under /root (pyenv): let the test user reach it, in the
# overlay only.
chmod 755 "$ROOT/root"
# The host has no systemd of its own to register with: no scope, no machined, no journal link.
systemd-nspawn -q -D "$ROOT" --boot --register=no --keep-unit --link-journal=no \
    --machine=pm-check --bind-ro="$REPO" >"$WORK/console.log" 2>&1 &
NSPAWN_PID=$!

LEADER=""
for _ in $(seq 120); do
    LEADER="$(pgrep -P "$NSPAWN_PID" -x systemd | head -1)"
    [ -n "$LEADER" ] && break
    sleep 0.5
done
[ -n "$LEADER" ] || { echo "FAIL boot (no systemd in the container)"; tail -20 "$WORK/console.log"; exit 1; }

inside() { nsenter -t "$LEADER" -m -u -i -n -p -- "$@"; }
for _ in $(seq 120); do
    state="$(inside systemctl is-system-running 2>/dev/null)"
    case "$state" in running|degraded) break ;; esac
    sleep 0.5
done
echo "     container: systemd $(inside systemctl --version | head -1 | cut -d' ' -f2), $state"
# nspawn mounts over /proc/kmsg, which the unit's sandbox cannot then set up (226/NAMESPACE).
inside umount /proc/kmsg 2>/dev/null

inside useradd -m -s /bin/bash "$USER_NAME"
inside useradd -m -s /bin/bash pmnolinger
inside loginctl enable-linger "$USER_NAME"
UID_T="$(inside id -u "$USER_NAME")"
for _ in $(seq 60); do inside test -S "/run/user/$UID_T/bus" && break; sleep 0.5; done

as_user() {
    inside runuser -u "$USER_NAME" -- env HOME="/home/$USER_NAME" XDG_RUNTIME_DIR="/run/user/$UID_T" \
        DBUS_SESSION_BUS_ADDRESS="unix:path=/run/user/$UID_T/bus" PATH="$VENV/bin:/usr/bin:/bin" "$@"
}
prop() { as_user systemctl --user show -p "$1" --value personal-memory.service; }
wait_for() {  # wait_for SECONDS COMMAND...
    local deadline=$((SECONDS + $1)); shift
    until "$@" >/dev/null 2>&1; do [ $SECONDS -ge $deadline ] && return 1; sleep 0.5; done
}
active() { [ "$(prop ActiveState)" = active ] && [ "$(prop SubState)" = running ]; }
# Output is captured, then matched: with pipefail, `cmd | grep -q` fails when cmd does.
searchable() { [[ "$(as_user memory search "$1" --json)" == *"\"memory_id\": \"Notes/$2"* ]]; }

NOTES="/home/$USER_NAME/Notes"
as_user mkdir -p "$NOTES"
as_user sh -c "printf '# First\n\nsteady anchor note\n' > $NOTES/first.md"

# -- the user unit --------------------------------------------------------------------------
UNIT="/home/$USER_NAME/.config/systemd/user/personal-memory.service"
status_text() { [[ "$(prop StatusText)" == *"notes indexed"* ]]; }
verify_silent() { [ -z "$(as_user systemd-analyze verify --user "$UNIT" 2>&1)" ]; }
no_system_only_claims() { ! grep -Eq 'ProtectProc|ProcSubset' "$ROOT$UNIT"; }
notes_read_only() {
    [[ "$(inside nsenter -t "$(prop MainPID)" -m -- touch "$NOTES/probe" 2>&1)" == *"Read-only file system"* ]]
}
only_loopback() {
    [ "$(inside nsenter -t "$(prop MainPID)" -n -- cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ')" = lo ]
}
pinged_and_running() { [ "$(prop WatchdogTimestampMonotonic)" != "$1" ] && [ "$(prop ActiveState)" = active ]; }
restarted() { [ "$(prop NRestarts)" -gt "$1" ] && [ "$(prop ActiveState)" = active ]; }
stopped_cleanly() { [ "$(prop ExecMainStatus)" = 0 ] && [ "$1" -le 10 ]; }
not_restarted_after_75() {  # (a manual start resets NRestarts, so it is not compared)
    echo "exit $(prop ExecMainStatus), state $(prop ActiveState)/$(prop SubState), main pid $(prop MainPID), restarts $(prop NRestarts)"
    [ "$(prop ExecMainStatus)" = 75 ] && [ "$(prop ActiveState)" != active ] \
        && [ "$(prop MainPID)" = 0 ] && [ "$(prop NRestarts)" = 0 ]
}
failed_install_says_so() {
    local out code
    out="$(inside runuser -u pmnolinger -- env HOME=/home/pmnolinger PATH="$VENV/bin:/usr/bin:/bin" \
        memory service install 2>&1)"; code=$?
    [ "$code" = 2 ] && [[ "$out" == *"then run"* ]]
}
lock_taken() { inside test -e "/home/$USER_NAME/.local/share/personal-memory/memory.db.lock"; }

check "install exits 0 as a user with lingering" as_user memory service install "$NOTES"
check "READY: active (running) after Type=notify" wait_for 60 active
check "STATUS shows folders and notes indexed" wait_for 30 status_text
check "systemd-analyze verify --user prints nothing" verify_silent
check "the user unit claims no ProtectProc/ProcSubset" no_system_only_claims
as_user sh -c "printf 'edited kumquat\n' > $NOTES/edit.md"
check "an edited note is searchable within 30 s" wait_for 30 searchable kumquat edit.md
check "notes are read-only inside the sandbox (EROFS)" notes_read_only
check "no network inside the sandbox (only lo)" only_loopback

# -- the replication companion (Litestream), beside the running daemon ------------------------
LITESTREAM_BIN="$("$REPO/scripts/get-litestream.sh" 2>/dev/null)"
if [ -n "$LITESTREAM_BIN" ]; then
    install -m 755 "$LITESTREAM_BIN" "$ROOT/usr/bin/litestream"  # in the overlay only
    REPLICA="/home/$USER_NAME/replica"
    RUNIT="/home/$USER_NAME/.config/systemd/user/personal-memory-replicate.service"
    rprop() { as_user systemctl --user show -p "$1" --value personal-memory-replicate.service; }
    ractive() { [ "$(rprop ActiveState)" = active ] && [ "$(rprop SubState)" = running ]; }
    rverify_silent() { [ -z "$(as_user systemd-analyze verify --user "$RUNIT" 2>&1)" ]; }
    rhealthy() { [[ "$(as_user memory replicate status --json)" == *'"state": "healthy"'* ]]; }
    in_replica() {  # a restore of the replica finds the word
        local out="/tmp/restored-$RANDOM$RANDOM.db"
        as_user memory restore "$REPLICA" --to "$out" >/dev/null \
            && [[ "$(as_user memory --db "$out" search "$1" --json)" == *"\"memory_id\": \"Notes/$2"* ]]
    }
    replica_private() {
        [ "$(inside stat -c %a "$REPLICA")" = 700 ] && [ -z "$(inside find "$REPLICA" -type f ! -perm 600)" ]
    }
    r_only_loopback() {
        [ "$(inside nsenter -t "$(rprop MainPID)" -n -- cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ')" = lo ]
    }
    r_restarted() { [ "$(rprop NRestarts)" -gt "$1" ] && ractive; }
    removed() {
        [ ! -e "$ROOT$RUNIT" ] && [ "$(rprop LoadState)" = not-found ] \
            && [ ! -e "$ROOT/home/$USER_NAME/.local/share/personal-memory/memory.db.litestream.yml" ] \
            && inside test -d "$REPLICA/generations"
    }
    check "replicate setup installs and starts the companion" as_user memory replicate setup "$REPLICA"
    check "companion: active (running)" wait_for 30 ractive
    ractive || as_user systemctl --user status personal-memory-replicate.service --no-pager -n 20 \
        2>&1 | sed 's/^/     /'
    check "companion: systemd-analyze verify --user prints nothing" rverify_silent
    as_user sh -c "printf 'replicated quince\n' > $NOTES/quince.md"
    check "an edit reaches the replica within 30 s (restored and searched)" wait_for 30 in_replica quince quince.md
    check "the replica is private (folder 0700, files 0600)" replica_private
    check "companion: no network for a local replica (only lo)" r_only_loopback
    check "replicate status: healthy" wait_for 20 rhealthy
    rrestarts="$(rprop NRestarts)"
    inside pkill -KILL -x litestream
    check "companion: restarted after Litestream is killed" wait_for 30 r_restarted "$rrestarts"
    as_user sh -c "printf 'after the kill, medlar\n' > $NOTES/medlar.md"
    check "an edit after that restart reaches the replica" wait_for 30 in_replica medlar medlar.md
    check "replicate remove exits 0" as_user memory replicate remove
    check "replicate remove: unit, config gone; the replica kept" removed
else
    echo "FAIL the replication checks: scripts/get-litestream.sh could not fetch Litestream"
    FAILED=1
fi
first_ping="$(prop WatchdogTimestampMonotonic)"
sleep 130
check "watchdog pings over two minutes, still running" pinged_and_running "$first_ping"
restarts="$(prop NRestarts)"
inside kill -KILL "$(prop MainPID)"
sleep 8
check "restarted after kill -9" restarted "$restarts"

start=$SECONDS
as_user systemctl --user stop personal-memory.service
check "stop exits 0 within 10 s" stopped_cleanly $((SECONDS - start))
# Another daemon holds the database: the service exits 75 and is not restarted.
as_user sh -c "nohup memory watch $NOTES >/dev/null 2>&1 & echo \$! > /tmp/pm-holder.pid"
wait_for 30 lock_taken
sleep 3
as_user systemctl --user start personal-memory.service 2>/dev/null  # fails, as it should
sleep 8  # longer than RestartSec=5
check "no restart after exit 75" not_restarted_after_75
inside sh -c 'kill "$(cat /tmp/pm-holder.pid)"' 2>/dev/null
check "install without a user manager exits 2 and says what to do" failed_install_says_so
as_user memory service uninstall >/dev/null 2>&1

# -- the system unit for one user -------------------------------------------------------------
sys_active() { [ "$(inside systemctl show -p ActiveState --value personal-memory.service)" = active ]; }
limit_reported() {
    [[ "$(inside journalctl -u personal-memory.service --no-pager)" == *"watch limit is not checked"* ]]
}
check "system unit: install --system --user exits 0" \
    inside "$VENV/bin/memory" service install --systemd --system --user "$USER_NAME"
check "system unit: active (running)" wait_for 60 sys_active
check "system unit: the hidden watch limit is reported" wait_for 30 limit_reported
inside "$VENV/bin/memory" service uninstall --systemd --system >/dev/null 2>&1

if [ $FAILED = 0 ]; then echo "all checks passed"; else echo "some checks failed"; fi
exit $FAILED
