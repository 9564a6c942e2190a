#!/usr/bin/env bash
# Checks ci/bootstrap's sets on a clean Debian 12 (debootstrap --variant=minbase into a temporary
# directory, as ci/test_deb.sh does):
#   1. `ci/bootstrap --for run` installs its packages and none of the build-, test- or ci-only ones
#      (no compiler, no -dev package, no GoogleTest, chromium, Slurm, clang, ...), and the ledgerdiff
#      binary built here runs a small verify on the embedded PostgreSQL with only those;
#   2. `ci/bootstrap --for build` in the same root adds the toolchain and still none of the test- or
#      ci-only packages, and a default CMake configure of this source tree succeeds there.
# Not part of ci/test (it downloads ~250 MB and takes minutes). Needs root and the Debian archive
# (DEBIAN_MIRROR, default deb.debian.org). The minbase root is cached as a tarball in
# ${LEDGERDIFF_BOOTSTRAP_CACHE:-/var/tmp/ledgerdiff-bootstrap} (delete it to re-debootstrap).
# Usage: ci/test_bootstrap.sh [PATH/TO/ledgerdiff]   (default: build/ledgerdiff)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/ledgerdiff}
[[ -x "$bin" ]] || { echo "ci/test_bootstrap.sh: no ledgerdiff binary at $bin (build it, or give its path)" >&2; exit 2; }
source ci/debian_root.sh
debian_root ci/test_bootstrap.sh
# The source tree as committed (plus this checkout's ci/bootstrap, which is what is under test).
mkdir -p "$root/src"
git ls-files -z | tar --null -T - -cf - | tar -C "$root/src" -xf -
cp ci/bootstrap "$root/src/ci/bootstrap"

installed() { in_root dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
# What each set may install, stated here independently of ci/bootstrap's lists (a slip that moves
# a test package into `run`, or maps `run` to the test set, must fail this check, not redefine it).
allowed_run=(libpq5 libssl3 libxxhash0 libfmt9 postgresql postgresql-client)
allowed_build=(build-essential cmake pkg-config libpq-dev libssl-dev libxxhash-dev libcli11-dev libfmt-dev
  nlohmann-json3-dev libgtest-dev libgmock-dev)
# Every package ci/bootstrap knows of that is not in "$@" must not be installed.
expect_only() {
  local bad=()
  for p in $(ci/bootstrap --for run,build,test,ci --list); do
    printf '%s\n' "$@" | grep -qx "$p" && continue
    installed "$p" && bad+=("$p")
  done
  ((${#bad[@]} == 0)) || { echo "ci/test_bootstrap.sh: packages outside the set were installed: ${bad[*]}" >&2; exit 1; }
  echo "none of the other sets' packages is installed"
}
expect_present() {
  local missing=()
  for p in $(ci/bootstrap --for "$1" --list); do installed "$p" || missing+=("$p"); done
  ((${#missing[@]} == 0)) || { echo "ci/test_bootstrap.sh: --for $1 left out ${missing[*]}" >&2; exit 1; }
  echo "all $(ci/bootstrap --for "$1" --list | wc -l) packages of --for $1 are installed"
}

step "ci/bootstrap --for run"
in_root apt-get update -qq
in_root bash -c 'cd /src && ci/bootstrap --for run' >"$root/tmp/run.log" 2>&1 || { tail -30 "$root/tmp/run.log"; exit 1; }
tail -1 "$root/tmp/run.log"
expect_present run
expect_only "${allowed_run[@]}"
for tool in cc c++ cmake; do
  if in_root sh -c "command -v $tool" >/dev/null; then echo "ci/test_bootstrap.sh: $tool is there after --for run" >&2; exit 1; fi
done
echo "no compiler and no cmake"

step "ledgerdiff verify on the embedded server, with --for run's packages only"
install -m 0755 "$bin" "$root/usr/local/bin/ledgerdiff"
in_root ledgerdiff --version
in_root ledgerdiff verify --range 2:201 --workers 2 --job-size 50

step "ci/bootstrap --for build (in the same root)"
in_root bash -c 'cd /src && ci/bootstrap --for build' >"$root/tmp/build.log" 2>&1 || { tail -30 "$root/tmp/build.log"; exit 1; }
tail -1 "$root/tmp/build.log"
expect_present build
expect_only "${allowed_run[@]}" "${allowed_build[@]}"
step "cmake configure of the source tree (the README's cmake -B build)"
in_root bash -c 'cd /src && cmake -B /tmp/build >/tmp/configure.log 2>&1' || { tail -30 "$root/tmp/configure.log"; exit 1; }
tail -2 "$root/tmp/configure.log"
echo "ci/test_bootstrap.sh: OK (--for run runs the tool with none of the build/test packages; --for build configures with none of the test packages)"
