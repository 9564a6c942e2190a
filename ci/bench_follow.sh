#!/usr/bin/env bash
# Benchmark of verify-range --follow (issue 23) on the digest benchmark's dataset (one schema,
# compared with itself: both sides read in full, as between two copies):
#   full         verify-range over the whole range, what an operator re-runs without --follow
#   prime        the follower's first cycle over all but the last 1,000 ledgers (its one full read)
#   cycle N      one steady-state cycle that finds N new ledgers (--scrub-period huge: the scrub
#                takes 1 ledger), from a copy of the primed state; per new ledger, and the ratio to
#                `full`
#   scrub        one cycle with nothing new whose scrub slice is what a 24 h period asks for in one
#                hour (--interval 3600 --scrub-period 86400: verified/24 ledgers): the scrub's cost
#                per hour; and at the deployed pace (--interval 30: verified/2880 per cycle) x 120
#   stages       the seconds by stage (the cycle JSON's `stages`), medians, of the 10-ledger cycle
#                and of the empty 30 s cycle
#   steady       an empty cycle in a running follower: cycles 2..8 of one process (its lookup caches
#                and sessions warm, the state comparison not due), their median and stages' medians
#   connections  the sessions a follower opens per empty cycle (pg_stat_database.sessions of a
#                3-cycle run less a 1-cycle run's, halved: the start-up cancels out)
# Figures are cycle times from the follower's JSON (the process's start-up excluded), medians of
# --reps runs.
# Usage: ci/bench_follow.sh [--to N (default 40001: 28.8M rows)] [--reps R (3)] [--keep-db DIR]
# Environment: BUILD (default ./build).
set -euo pipefail

# shellcheck source=ci/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
TO=40001
REPS=3
DIR=""
bench_args bench_follow --to=TO --reps=REPS --keep-db=DIR -- "$@"
RANGE=2:$TO
DIR=${DIR:-/tmp/ldbench-digest-$TO}  # shared with ci/bench_digest.sh
SCHEMA=bench
PORT=5432
WORK=$(mktemp -d)
[ -x "$LD" ] || { echo "bench_follow: $LD not built" >&2; exit 2; }

bench_stellar_dataset "$LD" "$RANGE" "$DIR" "$SCHEMA" "$WORK"
bench_serve "$DIR" "$PORT" "$WORK"
psql -X -q -d "$DB" -c "VACUUM ANALYZE" >/dev/null
ROWS=$(psql -X -At -d "$DB" -c "SELECT sum(n_live_tup) FROM pg_stat_user_tables WHERE schemaname = '$SCHEMA' AND relname LIKE 'history\_%' AND relname NOT IN ('history_accounts', 'history_assets', 'history_claimable_balances', 'history_liquidity_pools')")
FROM=${RANGE%%:*}
PRIMED=$((TO - 1000))
echo "== dataset: $ROWS history rows, ledgers $RANGE, $(nproc) cores, $REPS repetitions (median)"

SIDES=(--left "$DB" --right "$DB" --left-schema "$SCHEMA" --right-schema "$SCHEMA")
# cycle_seconds STATE ARGS...: one follow run from a copy of STATE; prints the last cycle's seconds
# and appends its stages (one JSON object a line) to $WORK/stages.jsonl.
# print_stages LABEL MEDIAN: the stages in $WORK/stages.jsonl, each stage's median in the cycle's
# order, then the parts; the file is emptied.
cycle_seconds() {
  local state=$1
  shift
  rm -rf "$WORK/run" && cp -a "$state" "$WORK/run"
  "$LD" verify-range --follow "${SIDES[@]}" --state "$WORK/run" --format json "$@" >"$WORK/out.json"
  python3 -c 'import json,sys
c = json.load(open(sys.argv[1]))["follow"]["cycles"][-1]
print(c["seconds"])
open(sys.argv[2], "a").write(json.dumps(c["stages"]) + "\n")' "$WORK/out.json" "$WORK/stages.jsonl"
}

print_stages() {
  echo "  stages of $1, medians:"
  python3 - "$WORK/stages.jsonl" "$2" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
order = ["heads", "kept", "recheck", "windows", "new_ledgers", "scrub", "state", "write_state", "lag"]
total = 0.0
for name in order:
    m = statistics.median(r.get(name, 0.0) for r in runs)
    total += m
    print(f"  stage {name:<38} {m:8.3f} s")
for name in sorted(set(k for r in runs for k in r) - set(order)):  # parts of the stages above
    print(f"    part {name:<37} {statistics.median(r.get(name, 0.0) for r in runs):8.3f} s")
print(f"  {'stages, sum of medians':<44} {total:8.3f} s   (cycle median {float(sys.argv[2]):.3f} s)")
PY
  rm -f "$WORK/stages.jsonl"
}

full=()
for _ in $(seq "$REPS"); do
  t0=$(now)
  "$LD" verify-range --range "$RANGE" "${SIDES[@]}" >/dev/null
  full+=("$(echo "$(now) - $t0" | bc)")
done
FULL=$(printf '%s\n' "${full[@]}" | median)
printf '%-44s %8.2f s   (%s)\n' "verify-range $RANGE, whole range" "$FULL" "${full[*]}"

t0=$(now)
"$LD" verify-range --follow "${SIDES[@]}" --state "$WORK/primed" --from "$FROM" --until "$PRIMED" \
  --scrub-period 1e12 --format json >"$WORK/prime.json"
printf '%-44s %8.2f s\n' "follow: first cycle, $FROM:$PRIMED" "$(echo "$(now) - $t0" | bc)"

for n in 10 100 1000; do
  rm -f "$WORK/stages.jsonl"
  runs=()
  for _ in $(seq "$REPS"); do runs+=("$(cycle_seconds "$WORK/primed" --until $((PRIMED + n)) --scrub-period 1e12)"); done
  m=$(printf '%s\n' "${runs[@]}" | median)
  printf '%-44s %8.3f s   %7.2f ms/ledger   full / cycle %7.1fx   (%s)\n' "follow: a cycle of $n new ledgers" "$m" \
    "$(echo "$m * 1000 / $n" | bc -l)" "$(echo "$FULL / $m" | bc -l)" "${runs[*]}"
  if [ "$n" = 10 ]; then print_stages "the 10-ledger cycle" "$m"; fi
done

verified=$((PRIMED - FROM + 1))
runs=()
for _ in $(seq "$REPS"); do runs+=("$(cycle_seconds "$WORK/primed" --until "$PRIMED" --interval 3600 --scrub-period 86400)"); done
m=$(printf '%s\n' "${runs[@]}" | median)
printf '%-44s %8.2f s   (%s ledgers of %s; %s)\n' "scrub: one hour's share of a 24 h period" "$m" \
  "$(( (verified + 23) / 24 ))" "$verified" "${runs[*]}"
runs=()
rm -f "$WORK/stages.jsonl"
for _ in $(seq "$REPS"); do runs+=("$(cycle_seconds "$WORK/primed" --until "$PRIMED" --interval 30 --scrub-period 86400)"); done
m30=$(printf '%s\n' "${runs[@]}" | median)
printf '%-44s %8.3f s   x 120 cycles = %6.1f s per hour   (%s)\n' "scrub: one 30 s cycle's slice (nothing new)" "$m30" \
  "$(echo "$m30 * 120" | bc -l)" "${runs[*]}"
# Where the empty cycle's time goes.
print_stages "the empty 30 s cycle" "$m30"

# An empty cycle in a running follower: the runs above are each a new process, whose first cycle
# fills the lookup caches, opens the sessions and compares the state tables.
rm -rf "$WORK/run" && cp -a "$WORK/primed" "$WORK/run"
"$LD" verify-range --follow "${SIDES[@]}" --state "$WORK/run" --settle 1000 --interval 0 --scrub-period 86400 \
  --cycles 8 --format json >"$WORK/out.json"
python3 -c 'import json,sys
for c in json.load(open(sys.argv[1]))["follow"]["cycles"][1:]:
    print(c["seconds"])
    open(sys.argv[2], "a").write(json.dumps(c["stages"]) + "\n")' "$WORK/out.json" "$WORK/stages.jsonl" >"$WORK/steady.txt"
ms=$(median <"$WORK/steady.txt")
printf '%-44s %8.3f s   (%s)\n' "an empty cycle in a running follower" "$ms" "$(tr '\n' ' ' <"$WORK/steady.txt")"
print_stages "cycles 2-8 of one follower" "$ms"

# Sessions per empty cycle: pg_stat_database.sessions counts every session the server started.
sessions() { psql -X -At -d "$DB" -c "SELECT sum(sessions) FROM pg_stat_database"; }
opened_by() {
  rm -rf "$WORK/run" && cp -a "$WORK/primed" "$WORK/run"
  local s0 s1
  s0=$(sessions)
  "$LD" verify-range --follow "${SIDES[@]}" --state "$WORK/run" --settle 1000 --interval 0 --scrub-period 86400 \
    --cycles "$1" --format json >/dev/null
  sleep 1  # the backends' counts reach the shared statistics as they exit
  s1=$(sessions)
  echo $((s1 - s0))
}
one=$(opened_by 1)
three=$(opened_by 3)
printf '%-44s %8s     (a 1-cycle run %s, a 3-cycle run %s, one psql each)\n' "sessions opened per empty cycle" \
  "$(echo "($three - $one) / 2" | bc -l | xargs printf '%.1f')" "$one" "$three"
