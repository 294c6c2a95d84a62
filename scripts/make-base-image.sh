#!/usr/bin/env bash
# Makes the local base image of orca's CPU images without a registry: a Debian 12
# (bookworm) rootfs made by debootstrap from Debian's mirror and `docker import`ed.
# Cached: does nothing when the image exists (ORCA_BASE_REBUILD=1 makes it again).
#
#   scripts/make-base-image.sh            -> orca-local/debian:12 (ORCA_BASE_IMAGE)
#
# Needs a Docker engine (docker/dockerd.sh start) and root (debootstrap); installs
# debootstrap with apt-get when missing. The rootfs gets bookworm, bookworm-updates and
# bookworm-security, the same suites as the machines that build orca, so that packages
# installed into it by scripts/install-deps.sh match the hosts' versions.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${ORCA_BASE_IMAGE:-orca-local/debian:12}
MIRROR=${ORCA_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${ORCA_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm

log() { printf '[base-image] %s\n' "$*"; }
die() { printf '[base-image] error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

docker version >/dev/null 2>&1 || die "no Docker engine answers; run docker/dockerd.sh start"
if [ "${ORCA_BASE_REBUILD:-0}" != 1 ] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "$IMAGE exists ($(docker image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec) ); skipping"
  exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  log "apt-get install debootstrap"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends debootstrap
fi

root=$(mktemp -d "${TMPDIR:-/tmp}/orca-rootfs.XXXXXX")
trap '$SUDO rm -rf "$root"' EXIT
start=$SECONDS
log "debootstrap --variant=minbase $SUITE from $MIRROR"
if ! $SUDO debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$root" "$MIRROR" \
    >"$root.log" 2>&1; then
  tail -30 "$root.log" >&2
  die "debootstrap failed (log: $root.log)"
fi
rm -f "$root.log"

# The suites and apt settings of a docker image; no caches, no logs, no machine identity.
$SUDO tee "$root/etc/apt/sources.list" >/dev/null <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main
EOF
$SUDO tee "$root/etc/apt/apt.conf.d/docker-clean" >/dev/null <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
EOF
echo 'APT::Install-Recommends "false";' | $SUDO tee "$root/etc/apt/apt.conf.d/docker-no-recommends" >/dev/null
$SUDO rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/* "$root"/tmp/*
$SUDO truncate -s 0 "$root/etc/machine-id" 2>/dev/null || true
$SUDO rm -f "$root/etc/hostname" "$root/etc/resolv.conf"

log "docker import -> $IMAGE"
$SUDO tar -C "$root" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  --message "debootstrap --variant=minbase $SUITE $MIRROR" - "$IMAGE" >/dev/null
docker run --rm --network none "$IMAGE" sh -c '. /etc/os-release && echo "$PRETTY_NAME"' |
  grep -q 'Debian GNU/Linux 12' || die "$IMAGE does not run Debian 12"
log "$IMAGE made in $((SECONDS - start)) s ($(docker image inspect --format '{{.Size}}' "$IMAGE" | numfmt --to=iec))"
