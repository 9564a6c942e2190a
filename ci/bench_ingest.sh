#!/usr/bin/env bash
# Ingest benchmark (figures, not a pass/fail test): the same stellar-profile range ingested
# serially and with 2 and 4 workers on the embedded default, REPS times each; prints the median
# rows/s and ledgers/s of each and the speed-ups against serial.
# Usage: ci/bench_ingest.sh [RANGE] [REPS]     (default 2:20001, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
range=${1:-2:20001}
reps=${2:-3}
bin=build/ledgerdiff
[[ -x $bin ]] || { echo "build first: cmake -B build && cmake --build build" >&2; exit 2; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); range $range (stellar); $reps runs each"
declare -A med_rows med_ledgers
for workers in 1 2 4; do
  results=()
  for ((i = 1; i <= reps; i++)); do
    json=$($bin ingest --range "$range" --schema bench --workers "$workers" --job-size 500 --density stellar \
             --format json 2>/dev/null)
    results+=("$(python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["rows_per_s"], j["ledgers_per_s"], j["rows"], j["wall_s"])' <<<"$json")")
  done
  read -r rows_med ledgers_med total wall <<<"$(printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics
r = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
print(statistics.median(x[0] for x in r), statistics.median(x[1] for x in r), int(r[0][2]), statistics.median(x[3] for x in r))')"
  med_rows[$workers]=$rows_med
  med_ledgers[$workers]=$ledgers_med
  printf 'workers=%s  rows=%s  median wall %.1f s  %.0f rows/s  %.0f ledgers/s  (walls: %s)\n' "$workers" "$total" "$wall" \
    "$rows_med" "$ledgers_med" "$(printf '%s\n' "${results[@]}" | awk '{printf "%.1f s ", $4}')"
done
python3 - "${med_rows[1]}" "${med_rows[2]}" "${med_rows[4]}" <<'PY'
import sys
s, w2, w4 = map(float, sys.argv[1:])
print(f"speed-up vs serial: 2 workers {w2/s:.2f}x, 4 workers {w4/s:.2f}x   (targets on 2 cores: serial >= 100,000 rows/s, 2 workers >= 1.5x)")
PY
