#!/usr/bin/env bash
# Benchmark (figures, not a timed test): ledgerdiff digest against what users do today, on the
# same data in the same run.
#
#   digest       ledgerdiff digest --jobs N (per-ledger digests of every table)
#   floor        the same canonical COPY statements (ledgerdiff digest --print-sql) run by N psql
#                processes into /dev/null, same session work_mem as the digest's workers
#   verify-range Horizon's way: one ordered psql query per table, piped to sha256sum, in turn
#   pg_dump      pg_dump --data-only of the history tables piped to sha256sum
#
# Targets: digest <= 1.15x the floor, >= 3x faster than verify-range, peak RSS < 100 MB.
#
# Environment: BUILD (default build), BENCH_DIR (kept cluster, default /tmp/ldbench),
# BENCH_RANGE (default 1:36000, about 5M rows with the flat density), BENCH_DENSITY (flat),
# BENCH_JOBS (2), BENCH_REPS (3), BENCH_REBUILD=1 to ingest again.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
LD=$BUILD/ledgerdiff
DIR=${BENCH_DIR:-/tmp/ldbench}
RANGE=${BENCH_RANGE:-1:36000}
DENSITY=${BENCH_DENSITY:-flat}
JOBS=${BENCH_JOBS:-2}
REPS=${BENCH_REPS:-3}
SCHEMA=bench
PORT=5432
WORK=$(mktemp -d)

[ -x "$LD" ] || { echo "bench: $LD not built (cmake --build $BUILD --target ledgerdiff)" >&2; exit 2; }

# 1. Dataset: the reference ingester, 2 workers, into a kept embedded cluster.
if [ "${BENCH_REBUILD:-0}" = 1 ] || [ ! -f "$DIR/data/PG_VERSION" ] || [ ! -f "$DIR/.bench-$RANGE-$DENSITY" ]; then
  echo "== ingest $RANGE ($DENSITY) into schema $SCHEMA, 2 workers, cluster $DIR"
  "$LD" ingest --range "$RANGE" --schema "$SCHEMA" --workers 2 --profile "$DENSITY" --keep-db "$DIR" --fresh >"$WORK/ingest.txt"
  tail -3 "$WORK/ingest.txt"
  touch "$DIR/.bench-$RANGE-$DENSITY"
fi

# 2. Serve the kept cluster for psql and pg_dump (the cluster belongs to an unprivileged user).
OWNER=$(stat -c %U "$DIR/data")
as_owner() {
  if [ "$(id -u)" = 0 ] && [ "$OWNER" != root ]; then su -s /bin/sh "$OWNER" -c "$*"; else sh -c "$*"; fi
}
as_owner "pg_ctl -D '$DIR/data' -l '$DIR/bench-server.log' -w -o \"-k '$DIR' -p $PORT -c listen_addresses='' -c fsync=off -c shared_buffers=256MB\" start" >/dev/null
cleanup() {
  as_owner "pg_ctl -D '$DIR/data' -m fast -w stop" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
DB="host=$DIR port=$PORT user=ledgerdiff dbname=postgres"
ROWS=$(psql -X -At -d "$DB" -c "SELECT sum(n_live_tup) FROM pg_stat_user_tables WHERE schemaname = '$SCHEMA' AND relname NOT IN ('history_accounts', 'history_assets')")
echo "== dataset: $ROWS history rows, ledgers $RANGE, jobs $JOBS, $REPS repetitions (median)"
psql -X -q -d "$DB" -c "VACUUM ANALYZE" >/dev/null

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }

# Canonical statements: chunked like the digest (floor), one per table over the whole range
# (verify-range way).
"$LD" digest --db "$DB" --schema "$SCHEMA" --jobs "$JOBS" --print-sql >"$WORK/chunks.sql"
awk -v n="$JOBS" -v w="$WORK" '{print $0 ";" > (w "/part" (NR % n) ".sql")}' "$WORK/chunks.sql"
"$LD" digest --db "$DB" --schema "$SCHEMA" --range "$RANGE" --chunk-ledgers 2000000000 --print-sql |
  sed -e 's/^COPY (//' -e 's/) TO STDOUT$//' >"$WORK/tables.sql"

run_digest() { /usr/bin/time -f "%e %M" -o "$WORK/time" "$LD" digest --db "$DB" --schema "$SCHEMA" --jobs "$JOBS" >"$WORK/digest.txt"; }
run_floor() {
  for p in "$WORK"/part*.sql; do PGOPTIONS="-c work_mem=32MB" psql -X -q -d "$DB" -f "$p" >/dev/null & done
  wait
}
run_verify_range() {
  while IFS= read -r q; do psql -X -A -t -d "$DB" -c "$q" | sha256sum >/dev/null; done <"$WORK/tables.sql"
}
run_pg_dump() { pg_dump -d "$DB" --data-only -n "$SCHEMA" | sha256sum >/dev/null; }

declare -A MED
RSS=0
for name in digest floor verify_range pg_dump; do
  : >"$WORK/$name.times"
  for _ in $(seq "$REPS"); do
    t0=$(now)
    "run_$name"
    t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$WORK/$name.times"
    if [ "$name" = digest ]; then
      rss=$(awk '{print $2}' "$WORK/time")
      [ "$rss" -gt "$RSS" ] && RSS=$rss
    fi
  done
  MED[$name]=$(median <"$WORK/$name.times")
  printf "%-13s median %8.2f s   (%s)\n" "$name" "${MED[$name]}" "$(tr '\n' ' ' <"$WORK/$name.times" | xargs printf '%.2f ')"
done
grep '^root' "$WORK/digest.txt"

ratio() { echo "$1 / $2" | bc -l; }
r_floor=$(ratio "${MED[digest]}" "${MED[floor]}")
r_verify=$(ratio "${MED[verify_range]}" "${MED[digest]}")
r_dump=$(ratio "${MED[pg_dump]}" "${MED[digest]}")
printf "digest / floor          %.2fx   (target <= 1.15x)\n" "$r_floor"
printf "verify-range / digest   %.2fx   (target >= 3x)\n" "$r_verify"
printf "pg_dump / digest        %.2fx\n" "$r_dump"
printf "digest peak RSS         %.1f MB  (target < 100 MB)\n" "$(echo "$RSS / 1024" | bc -l)"
printf "digest rate             %.0f rows/s\n" "$(echo "$ROWS / ${MED[digest]}" | bc -l)"

# Manifest size on this dataset (compact and full).
for detail in compact full; do
  "$LD" digest --db "$DB" --schema "$SCHEMA" --jobs "$JOBS" --out "$WORK/m.ldm" --manifest-detail "$detail" | grep '^manifest'
done
