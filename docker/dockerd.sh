#!/usr/bin/env bash
# A Docker engine for building and testing orca's images on a machine that has none
# running (CI and development machines: docs/images.md).
#
#   docker/dockerd.sh start    install docker.io if missing; start dockerd unless one answers
#   docker/dockerd.sh stop     stop the dockerd that `start` started (none other)
#   docker/dockerd.sh status   exit 0 when an engine answers
#
# The engine started here has no bridge network and touches no iptables rules: every
# build and container of orca's scripts runs with `--network host`, on loopback. Its
# data root is ORCA_DOCKER_DATA_ROOT (/var/lib/docker), so images persist between runs
# on one machine; the storage driver is overlay2 (seen working on ext4), else dockerd's
# own choice. Logs: $ORCA_DOCKER_STATE/dockerd.log.
set -euo pipefail

DATA_ROOT=${ORCA_DOCKER_DATA_ROOT:-/var/lib/docker}
STATE=${ORCA_DOCKER_STATE:-/var/run/orca-dockerd}
SOCKET=/var/run/docker.sock
PIDFILE=$STATE/dockerd.pid

log() { printf '[dockerd] %s\n' "$*"; }
die() { printf '[dockerd] error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

answers() { timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

install_engine() {
  if command -v dockerd >/dev/null 2>&1; then return; fi
  log "apt-get install docker.io"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends docker.io
}

start() {
  if answers; then
    log "an engine already answers ($(docker version --format '{{.Server.Version}}'))"
    return
  fi
  install_engine
  command -v docker >/dev/null 2>&1 || die "no docker client after installing docker.io"
  $SUDO mkdir -p "$DATA_ROOT" "$STATE"
  local driver=()
  if grep -qw overlay /proc/filesystems; then driver=(--storage-driver overlay2); fi
  log "starting dockerd (data root $DATA_ROOT, ${driver[*]:-default storage driver}, no bridge)"
  # setsid: the engine outlives this script and is not in its process group.
  $SUDO setsid dockerd --data-root "$DATA_ROOT" "${driver[@]}" --bridge=none --iptables=false \
    --ip6tables=false --host "unix://$SOCKET" --pidfile "$PIDFILE" \
    >"$STATE/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 120); do
    if answers; then
      log "dockerd $(docker version --format '{{.Server.Version}}') up (pid $(cat "$PIDFILE"), driver $(docker info --format '{{.Driver}}'))"
      return
    fi
    sleep 0.5
  done
  tail -30 "$STATE/dockerd.log" >&2 || true
  die "dockerd did not answer within 60 s (log above: $STATE/dockerd.log)"
}

stop() {
  if [ ! -f "$PIDFILE" ]; then
    log "no dockerd started by this script (no $PIDFILE)"
    return
  fi
  local pid
  pid=$(cat "$PIDFILE")
  if ! kill -0 "$pid" 2>/dev/null; then
    log "dockerd (pid $pid) is not running"
    $SUDO rm -f "$PIDFILE"
    return
  fi
  log "stopping dockerd (pid $pid)"
  $SUDO kill -TERM "$pid"
  for _ in $(seq 60); do
    kill -0 "$pid" 2>/dev/null || { log "dockerd stopped"; return; }
    sleep 0.5
  done
  die "dockerd (pid $pid) did not stop within 30 s"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) answers ;;
  *) die "usage: docker/dockerd.sh start|stop|status" ;;
esac
