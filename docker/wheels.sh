#!/bin/sh
# Build every wheel the image installs, on the host, through the host's own package settings
# (pip.conf, mirrors, certificates), so the image build downloads nothing (--no-index there).
#   docker/wheels.sh DEST [PYTHON_VERSION]
# The image's interpreter is Debian bookworm's python3 (3.11.2), not necessarily the host's, and
# dependency markers differ between them (redis needs async-timeout below 3.11.3), so the set is
# resolved for the image's version and platform: only binary wheels, for glibc 2.17-2.36 x86_64.
set -eu
dest=$1
version=${2:-3.11.2}
python=${PYTHON:-python3}
rm -rf "$dest"
"$python" -m pip wheel --quiet --no-deps --wheel-dir "$dest" .
platforms="--platform linux_x86_64 --platform manylinux2014_x86_64 --platform manylinux2010_x86_64 --platform manylinux1_x86_64"
minor=17
while [ "$minor" -le 36 ]; do
    platforms="$platforms --platform manylinux_2_${minor}_x86_64"
    minor=$((minor + 1))
done
# pip applies the target version to `python_version` markers but not to `python_full_version`
# ones, so what those pull in on 3.11.2 is named here (redis: async-timeout below 3.11.3).
# shellcheck disable=SC2086  # $platforms is a list of options
"$python" -m pip download --quiet --only-binary=:all: --python-version "$version" --implementation cp \
    --abi "cp$(echo "$version" | cut -d. -f1,2 | tr -d .)" $platforms \
    --find-links "$dest" --dest "$dest" 'integrity-gym[server,redis]' 'async-timeout>=4.0.3'
echo "$(ls "$dest" | wc -l) wheels in $dest for CPython $version"
