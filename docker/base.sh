#!/bin/sh
# Make the base image locally, without any image registry: a minimal Debian bookworm built by
# debootstrap from the Debian mirror (the one apt uses) and loaded with `docker import`.
#   docker/base.sh [IMAGE]      (default igym-base:bookworm; needs root, debootstrap and docker)
# An existing image is kept, so `make image` pays for this once (about 2.5 minutes).
set -eu
image=${1:-igym-base:bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if docker image inspect "$image" >/dev/null 2>&1; then
    echo "base image $image already exists (docker rmi $image to rebuild it)"
    exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install -y debootstrap" >&2; exit 1; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
# python3-venv brings ensurepip, so the image can make a virtualenv without pip from the network.
debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$root" "$mirror"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
tar -C "$root" -c . | docker import -c 'CMD ["/bin/bash"]' -c 'ENV LANG=C.UTF-8' - "$image"
echo "built base image $image"
