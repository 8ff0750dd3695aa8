# Sourced by ./gw (and by scripts/env.sh when npm is missing): sets up the system parts
# the two commands need when they are missing, from Debian's packages. A fresh Debian
# needs only git, root or sudo, its package mirror and the npm registry.
#   - `ensure_npm`: npm (Debian's `npm`, with its Node), which env.sh fetches Node 24 with;
# `ensure_test_system` (./gw test) makes sure that
#   - npm is there (the SDK's pack-and-install test uses it),
#   - Postgres answers on 127.0.0.1:$GW_PG_PORT (5432), user postgres without a password,
#   - `nats-server` is installed (several tests start their own) and NATS with JetStream
#     answers on 127.0.0.1:$GW_NATS_PORT (4222),
#   - Debian's Chromium is at $GW_CHROMIUM (/usr/bin/chromium), which the browser tests drive;
# `ensure_stack_system` (./gw up) installs `nats-server` when nothing answers on
# $GW_NATS_PORT, as the stack then starts one (Postgres falls back to an embedded one);
# installing them with apt-get (after one `apt-get update`) and starting them when not.
# Something present is left alone: each check comes first and nothing runs when it holds.
# TEST_DATABASE_URL set means the tests use that Postgres instead: no Postgres set-up. (NATS
# has no such escape: several tests connect to nats://127.0.0.1:4222 directly.)
# GW_DRY_RUN=1 prints what would run instead of running it (and waits for nothing).
# shellcheck shell=bash

GW_PG_PORT="${GW_PG_PORT:-5432}"
GW_NATS_PORT="${GW_NATS_PORT:-4222}"
GW_CHROMIUM="${GW_CHROMIUM:-/usr/bin/chromium}"
# Where Debian puts nats-server, outside a normal user's PATH.
GW_SBIN="${GW_SBIN:-/usr/sbin}"

sys_log() { echo "gw: $*" >&2; }

# Runs a command as root (sudo when not root), or prints it under GW_DRY_RUN=1.
sys_run() {
  if [ "${GW_DRY_RUN:-}" = 1 ]; then
    echo "would run: $*"
    return 0
  fi
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    sys_log "not root and no sudo: run as root: $*"
    return 1
  fi
}

sys_listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# True when the NATS server on port $1 announces JetStream in its INFO line.
sys_nats_has_jetstream() {
  local info=""
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  IFS= read -r -t 5 info <&3 || true
  exec 3<&- 3>&-
  [[ "$info" == INFO* && "$info" == *'"jetstream":true'* ]]
}

sys_wait_port() {
  [ "${GW_DRY_RUN:-}" = 1 ] && return 0
  for _ in $(seq 1 60); do sys_listening "$1" && return 0; sleep 1; done
  sys_log "nothing listens on 127.0.0.1:$1 after starting $2"
  return 1
}

# True while an apt-get, apt or dpkg runs. Read from /proc, not with pgrep: a bare Debian
# has no procps, and a missing pgrep would silently skip the wait.
sys_apt_busy() {
  local comm name
  for comm in "${GW_PROC:-/proc}"/[0-9]*/comm; do
    { IFS= read -r name <"$comm"; } 2>/dev/null || continue
    case "$name" in apt-get | apt | dpkg) return 0 ;; esac
  done
  return 1
}

sys_apt_updated=""
# apt-get install, after one apt-get update per run, never beside another apt-get.
sys_apt_install() {
  if [ "${GW_DRY_RUN:-}" != 1 ]; then
    local waited=0
    while sys_apt_busy; do
      [ "$waited" -eq 0 ] && sys_log "waiting for another apt-get or dpkg to finish"
      waited=$((waited + 1))
      if [ "$waited" -gt 900 ]; then
        sys_log "apt-get or dpkg still running after 15 minutes"
        return 1
      fi
      sleep 1
    done
  fi
  if [ -z "$sys_apt_updated" ]; then
    sys_run apt-get update -qq || return 1
    sys_apt_updated=1
  fi
  sys_run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" </dev/null
}

ensure_postgres() {
  [ -n "${TEST_DATABASE_URL:-}" ] && return 0
  sys_listening "$GW_PG_PORT" && return 0
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    sys_log "installing postgresql"
    sys_apt_install postgresql || return 1
    # The tests connect as postgres over TCP without a password, as on the dev machines.
    sys_run sed -i -E 's/(scram-sha-256|md5|peer)$/trust/' /etc/postgresql/*/main/pg_hba.conf || return 1
  fi
  local version
  version="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1 || true)"
  sys_log "starting postgresql ${version:-(the version apt-get installs)}"
  sys_run pg_ctlcluster --skip-systemctl-redirect "${version:-15}" main start || return 1
  sys_wait_port "$GW_PG_PORT" postgresql
}

ensure_npm() {
  command -v npm >/dev/null 2>&1 && return 0
  sys_log "installing npm (it fetches Node ${NODE_VERSION:-24} and pnpm into .tools/)"
  sys_apt_install npm
}

# nats-server on PATH: Debian puts it in $GW_SBIN, outside a normal user's PATH.
ensure_nats_server() {
  if ! command -v nats-server >/dev/null 2>&1 && [ ! -x "$GW_SBIN/nats-server" ]; then
    sys_log "installing nats-server"
    sys_apt_install nats-server || return 1
  fi
  case ":$PATH:" in *":$GW_SBIN:"*) ;; *) export PATH="$PATH:$GW_SBIN" ;; esac
}

ensure_nats() {
  # Installed even when a server answers: several tests start a nats-server of their own.
  ensure_nats_server || return 1
  if sys_listening "$GW_NATS_PORT"; then
    sys_nats_has_jetstream "$GW_NATS_PORT" && return 0
    sys_log "the NATS server on 127.0.0.1:$GW_NATS_PORT runs without JetStream: restart it with -js"
    return 1
  fi
  sys_log "starting nats-server with JetStream"
  sys_run mkdir -p /var/lib/nats-server /var/log || return 1
  # Matched by its own pidfile, not by the executable: a nats-server of another network
  # namespace or port (a chroot's host, a container) must not pass for this port's server.
  sys_run start-stop-daemon --start --oknodo --background --pidfile /run/gw-nats-server.pid --make-pidfile \
    --exec "$GW_SBIN/nats-server" -- \
    -a 127.0.0.1 -p "$GW_NATS_PORT" -js -sd /var/lib/nats-server -l /var/log/nats-server.log || return 1
  sys_wait_port "$GW_NATS_PORT" nats-server
}

# Debian's own Chromium: playwright-core drives it, never a downloaded build.
ensure_chromium() {
  [ -x "$GW_CHROMIUM" ] && return 0
  sys_log "installing chromium"
  sys_apt_install chromium
}

ensure_test_system() {
  # npm itself too: tests/e2e/sdk-package.test.ts packs the SDK and installs it with npm.
  ensure_npm && ensure_postgres && ensure_nats && ensure_chromium
}

# ./gw up: the stack starts a nats-server from PATH when nothing answers on the NATS port.
ensure_stack_system() {
  sys_listening "$GW_NATS_PORT" && return 0
  ensure_nats_server
}
