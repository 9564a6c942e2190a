#!/usr/bin/env bash
# Installs a ledgerdiff .deb on a clean Debian 12 (debootstrap --variant=minbase into a temporary
# directory) and checks that the tool works there: with the package's Depends only, --version,
# the man page, completions and copyright file are in place and the embedded default exits 2
# naming postgresql-15; with its Recommends too (postgresql-15, bash-completion), completion works
# and a small verify on the embedded PostgreSQL passes. Not part of ci/test (it downloads ~200 MB and takes minutes).
# Needs root and the Debian archive (DEBIAN_MIRROR, default deb.debian.org); the clean root is
# ci/debian_root.sh's (its minbase cached in /var/tmp/ledgerdiff-bootstrap).
# Usage: ci/test_deb.sh [PATH.deb]   (default: the newest build/ledgerdiff_*.deb; make it with
#        `cmake --build build && (cd build && cpack -G DEB)`)
set -euo pipefail
cd "$(dirname "$0")/.."
deb=${1:-$(ls -t build/ledgerdiff_*.deb 2>/dev/null | head -1)}
[[ -n "$deb" && -f "$deb" ]] || { echo "ci/test_deb.sh: no .deb given and none in build/ (run cpack -G DEB in build/)" >&2; exit 2; }
source ci/debian_root.sh
debian_root ci/test_deb.sh
cp "$deb" "$root/tmp/ledgerdiff.deb"

step "apt-get install ./$(basename "$deb") (Depends only)"
in_root apt-get update -qq
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/ledgerdiff.deb \
  >"$root/tmp/apt.log" 2>&1 || { tail -30 "$root/tmp/apt.log"; exit 1; }
in_root dpkg-query -W -f='installed: ${Package} ${Version}\n' ledgerdiff libpq5 libfmt9 libssl3 libxxhash0
# The server is a Recommends (only the embedded default needs it): not there yet.
if in_root dpkg-query -W -f='${Status}' postgresql-15 2>/dev/null | grep -q "install ok installed"; then
  echo "ci/test_deb.sh: postgresql-15 came with the package's Depends; it must be a Recommends" >&2; exit 1
fi

step "ledgerdiff --version"
in_root ledgerdiff --version

step "man page, completions, docs"
for f in /usr/share/man/man1/ledgerdiff.1 /usr/share/bash-completion/completions/ledgerdiff \
  /usr/share/zsh/vendor-completions/_ledgerdiff /usr/share/doc/ledgerdiff/README.md /usr/share/doc/ledgerdiff/copyright; do
  in_root test -s "$f" && echo "present: $f"
done

step "without the server: the embedded default exits 2 naming the package"
rc=0
in_root ledgerdiff verify --range 2:201 --workers 2 --job-size 50 >"$root/tmp/noserver.out" 2>"$root/tmp/noserver.err" || rc=$?
cat "$root/tmp/noserver.err"
[[ $rc == 2 ]] && grep -q 'apt-get install postgresql-15' "$root/tmp/noserver.err" ||
  { echo "ci/test_deb.sh: without postgresql-15, verify exited $rc without naming the package" >&2; exit 1; }

step "apt-get install ./$(basename "$deb") with its Recommends (postgresql-15, bash-completion)"
# apt installs the Recommends of a package it installs, not of one already there: remove it first.
in_root env DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq ledgerdiff >"$root/tmp/apt.log" 2>&1 ||
  { tail -30 "$root/tmp/apt.log"; exit 1; }
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/ledgerdiff.deb >"$root/tmp/apt.log" 2>&1 ||
  { tail -30 "$root/tmp/apt.log"; exit 1; }
for p in postgresql-15 bash-completion; do
  in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { echo "ci/test_deb.sh: $p did not come with the package's Recommends" >&2; exit 1; }
done
in_root dpkg-query -W -f='installed: ${Package} ${Version}\n' postgresql-15 bash-completion
in_root bash -c 'source /usr/share/bash-completion/bash_completion && source /usr/share/bash-completion/completions/ledgerdiff
  COMP_WORDS=(ledgerdiff ver); COMP_CWORD=1; _ledgerdiff; echo "bash: ledgerdiff ver<TAB> -> ${COMPREPLY[*]}"'

step "ledgerdiff verify on the embedded server (runs as user postgres)"
in_root ledgerdiff verify --range 2:201 --workers 2 --job-size 50
echo "ci/test_deb.sh: OK ($(basename "$deb") installs and runs on a clean Debian 12)"
