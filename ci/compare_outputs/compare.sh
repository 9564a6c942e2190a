#!/usr/bin/env bash
# Compares two run.sh output trees, with times masked: durations, timestamps, rates, snapshot lsn/at,
# pids; manifests through `manifest show --format json` of the newer binary.
A=$(realpath "$1"); B=$(realpath "$2"); SHOW=${SHOW:?the newer ledgerdiff binary, which shows both trees manifests}
mask() {
  sed -E 's/[0-9]+(\.[0-9]+)? (s|ms|min|h)\b/T \2/g; s/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z/TS/g; s/"(seconds|[a-z_]*_s|[a-z_]*seconds|at|lsn|same|started_at|finished_at|found_at|elapsed[a-z_]*|rate[a-z_]*|[a-z_]*per_s[a-z_]*)": *[0-9."A-Za-z:/-]+/"\1": M/g; s/[0-9,]+ (ledgers|rows)\/s/R \1\/s/g; s/[0-9A-F]+\/[0-9A-F]+/LSN/g; s/ld_[0-9_a-f]+(_[a-z]+)/ld_X\1/g; s/time="[0-9.]+"/time="T"/g; s/^pid [0-9]+ /pid P /; s/\(pid [0-9]+\)/(pid P)/g; s/": [0-9]+\.[0-9]+(e-?[0-9]+)?/": F/g'
}
view() { case "$1" in *.ldm) (cd "$(dirname "$1")" && "$SHOW" manifest show "$(basename "$1")" --format json 2>&1) | mask;; *) mask < "$1";; esac; }
same=0; differ=0
for f in $(cd "$A" && find . -type f | sort); do
  if cmp -s "$A/$f" "$B/$f"; then same=$((same+1)); continue; fi
  if diff -q <(view "$A/$f") <(view "$B/$f") > /dev/null; then echo "same once masked: $f"; same=$((same+1)); else echo "DIFFERS: $f"; diff <(view "$A/$f") <(view "$B/$f") | head -8; differ=$((differ+1)); fi
done
echo "files: $same same (raw or masked), $differ differ; only in one: $(comm -3 <(cd "$A" && find . -type f | sort) <(cd "$B" && find . -type f | sort) | tr '\n' ' ')"
