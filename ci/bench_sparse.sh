#!/usr/bin/env bash
# Benchmark (figures, not a timed test): does the digest's cost follow the data or the range's
# width? The same rows twice, in one run: schema `dense` holds ledgers 2..N+1 (the reference
# ingester, flat density); schema `sparse` holds the same rows with every ledger number multiplied
# by SPREAD (ledger L -> L * SPREAD, TOIDs' ledger bits the same way), so N ledgers are spread over
# a range SPREAD times as wide. Medians of --reps runs of:
#   floor      every history table's rows COPY'd to /dev/null, two tables at a time, largest first,
#              unordered, no joins (SELECT * ... WHERE <range>): the cheapest way to get the rows
#   digest     ledgerdiff digest --jobs 2 (no --range: the range each schema holds)
#   old        the same with --old BIN (an engine before sparse chunks), for before/after
# and the ratios digest/floor per schema and sparse/dense per engine: a cost that follows the data
# keeps sparse/dense near 1.
#
# Usage: ci/bench_sparse.sh [--ledgers N] [--spread S] [--reps R] [--keep-db DIR] [--old BIN] [--sparse-only]
#   --ledgers N  ledgers holding rows (default 100000; flat density: ~140 rows per ledger)
#   --spread S   (default 50: N = 1M would span 50M ledgers, the issue's shape)
#   --keep-db    cluster directory, reused when it holds the dataset (default /tmp/ldbench-sparse-N);
#                its dense schema serves every --spread
#   --sparse-only  measure the sparse schema only, against its own floor: each dense table is dropped
#                once copied, so the disk holds one copy (the issue's 1M ledgers at ~140 rows each are
#                ~141M rows, ~45 GB a copy); a later run at another --spread ingests again
# Environment: BUILD (default ./build).
set -euo pipefail

# shellcheck source=ci/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
N=100000
SPREAD=50
REPS=3
DIR=""
OLD=""
SPARSE_ONLY=0
bench_args bench_sparse --ledgers=N --spread=SPREAD --reps=REPS --keep-db=DIR --old=OLD --sparse-only=SPARSE_ONLY=1 -- "$@"
[[ $N =~ ^[0-9]+$ && $SPREAD =~ ^[0-9]+$ && $N -ge 1 && $SPREAD -ge 1 ]] ||
  { echo "bench_sparse: --ledgers and --spread take positive integers" >&2; exit 2; }
(( (N + 1) * SPREAD < 2147483647 )) || { echo "bench_sparse: (N + 1) * SPREAD must stay below 2^31 - 1" >&2; exit 2; }
[ -x "$LD" ] || { echo "bench_sparse: $LD not built" >&2; exit 2; }
[ -z "$OLD" ] || [ -x "$OLD" ] || { echo "bench_sparse: --old $OLD is not executable" >&2; exit 2; }
RANGE=2:$((N + 1))
DIR=${DIR:-/tmp/ldbench-sparse-$N}
PORT=5433
WORK=$(mktemp -d)

# 1. Dataset: the reference ingester, 2 workers, into a kept embedded cluster; then the spread copy.
# The dense schema is kept for every spread (marker .bench-RANGE-flat); the sparse copy is
# remade when the spread changes (marker .bench-sparse-SPREAD).
NEED_SPREAD=0
[ -f "$DIR/.bench-sparse-$SPREAD" ] || NEED_SPREAD=1
if [ ! -f "$DIR/data/PG_VERSION" ] || { [ ! -f "$DIR/.bench-$RANGE-flat" ] && ((NEED_SPREAD)); }; then
  echo "== ingest $RANGE (flat) into schema dense, 2 workers, cluster $DIR"
  "$LD" ingest --range "$RANGE" --schema dense --workers 2 --job-size 5000 --density flat \
    --keep-db "$DIR" --fresh >"$WORK/ingest.txt"
  tail -1 "$WORK/ingest.txt"
  rm -f "$DIR"/.bench-sparse-* "$DIR/.bench-rows"
  touch "$DIR/.bench-$RANGE-flat"
  NEED_SPREAD=1
fi

bench_serve "$DIR" "$PORT" "$WORK"

# Exact counts (n_live_tup is an estimate that ANALYZE makes from a sample of a large table).
rows_of() {
  local q
  q=$(psql -X -At -d "$DB" -c "SELECT string_agg(format('(SELECT count(*) FROM %I.%I)', schemaname, relname), ' + ')
    FROM pg_stat_user_tables WHERE schemaname = '$1' AND relname LIKE 'history\_%' AND relname NOT IN
    ('history_accounts', 'history_assets', 'history_claimable_balances', 'history_liquidity_pools')")
  psql -X -At -d "$DB" -c "SELECT $q"
}
if ((NEED_SPREAD)); then
  rows_of dense >"$DIR/.bench-rows"  # the rows the copy must hold, whether or not dense stays
  DROP_COPIED=""
  # A lookup table's copy keeps the dense sequence as its id default (LIKE ... INCLUDING ALL):
  # those tables are small and stay.
  ((SPARSE_ONLY)) && DROP_COPIED="IF NOT EXISTS (SELECT 1 FROM pg_depend d JOIN pg_class q ON q.oid = d.objid
      AND q.relkind = 'S' WHERE d.refobjid = format('dense.%I', r.t)::regclass) THEN
      EXECUTE format('DROP TABLE dense.%I', r.t); END IF;"
  echo "== copy schema dense to sparse with ledger L -> L * $SPREAD$( ((SPARSE_ONLY)) && echo ", dropping each dense table once copied")"
  psql -X -q -v ON_ERROR_STOP=1 -d "$DB" <<SQL
DROP SCHEMA IF EXISTS sparse CASCADE;
CREATE SCHEMA sparse;
DO \$\$
DECLARE
  r record;
  cols text;
BEGIN
  FOR r IN SELECT c.relname AS t,
                  (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname IN
                     ('sequence', 'ledger_sequence', 'history_operation_id', 'history_transaction_id',
                      'open_ledger_toid') ORDER BY a.attname = 'sequence' DESC, a.attname = 'ledger_sequence' DESC
                     LIMIT 1) AS col
           FROM pg_class c WHERE c.relnamespace = 'dense'::regnamespace AND c.relkind = 'r' LOOP
    IF r.t = 'history_operations' THEN r.col := 'id'; END IF;
    SELECT string_agg(CASE WHEN r.col IS NULL OR a.attname <> r.col THEN quote_ident(a.attname)
                           WHEN a.attname IN ('sequence', 'ledger_sequence') THEN format('%I * $SPREAD', a.attname)
                           ELSE format('(((%1\$I >> 32) * $SPREAD) << 32) | (%1\$I & 4294967295)', a.attname) END,
                      ', ' ORDER BY a.attnum)
      INTO cols FROM pg_attribute a
      WHERE a.attrelid = format('dense.%I', r.t)::regclass AND a.attnum > 0 AND NOT a.attisdropped;
    EXECUTE format('CREATE TABLE sparse.%I (LIKE dense.%I INCLUDING ALL)', r.t, r.t);
    EXECUTE format('INSERT INTO sparse.%I SELECT %s FROM dense.%I', r.t, cols, r.t);
    $DROP_COPIED
  END LOOP;
END
\$\$;
SQL
  rm -f "$DIR"/.bench-sparse-*
  ((SPARSE_ONLY)) && rm -f "$DIR/.bench-$RANGE-flat"  # dense is gone: another spread ingests again
  touch "$DIR/.bench-sparse-$SPREAD"
fi
psql -X -q -d "$DB" -c "VACUUM ANALYZE" >/dev/null
[ -f "$DIR/.bench-rows" ] || rows_of dense >"$DIR/.bench-rows"  # a cluster made before this file was kept
ROWS=$(cat "$DIR/.bench-rows")
SPARSE_ROWS=$(rows_of sparse)
[ "$ROWS" = "$SPARSE_ROWS" ] || { echo "bench_sparse: dense holds $ROWS rows, sparse $SPARSE_ROWS" >&2; exit 3; }
HELD=$(psql -X -At -d "$DB" -c "SELECT count(*), min(sequence), max(sequence) FROM sparse.history_ledgers")
echo "== dataset: $ROWS history rows per schema; dense ledgers $RANGE; sparse: $HELD (count, first, last):" \
  "$N ledgers over a range of $(( (N + 1) * SPREAD - 2 * SPREAD + 1 )); $(nproc) cores; medians of $REPS"

SCHEMAS="dense sparse"
((SPARSE_ONLY)) && SCHEMAS=sparse
# Per schema, every table's SELECT * over the schema's whole range, largest first.
for schema in $SCHEMAS; do bench_floor_sql "$schema" "$WORK/floor-$schema.sql"; done
run_floor() { bench_run_sql "$WORK/floor-$1.sql"; }
run_digest() {  # BIN SCHEMA
  /usr/bin/time -v -o "$WORK/time" "$1" digest --db "$DB" --schema "$2" --jobs 2 >"$WORK/digest.txt"
  awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time" >>"$WORK/rss"
  grep '^root' "$WORK/digest.txt" | awk '{print $2}' >>"$WORK/roots"
}

declare -A MED RSS
measure() {  # NAME COMMAND...
  local name=$1; shift
  : >"$WORK/times"; : >"$WORK/rss"; : >"$WORK/roots"
  for _ in $(seq "$REPS"); do
    local t0 t1
    t0=$(now); "$@"; t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$WORK/times"
  done
  MED[$name]=$(median <"$WORK/times")
  RSS[$name]=$( [ -s "$WORK/rss" ] && sort -n "$WORK/rss" | tail -1 || echo "")
  printf "%-16s median %8.2f s  %10.0f rows/s%s  runs: %s%s\n" "$name" "${MED[$name]}" \
    "$(echo "$ROWS / ${MED[$name]}" | bc -l)" \
    "$([ -n "${RSS[$name]}" ] && printf "  peak RSS %6.1f MB" "$(echo "${RSS[$name]} / 1024" | bc -l)")" \
    "$(xargs printf '%.2f ' <"$WORK/times")" \
    "$([ -s "$WORK/roots" ] && printf "  roots: %s" "$(sort -u "$WORK/roots" | cut -c1-16 | tr '\n' ' ')")"
}

for schema in $SCHEMAS; do
  measure "floor $schema" run_floor "$schema"
  measure "digest $schema" run_digest "$LD" "$schema"
  [ -z "$OLD" ] || measure "old $schema" run_digest "$OLD" "$schema"
done
ratio() { printf "%.2fx" "$(echo "${MED[$1]} / ${MED[$2]}" | bc -l)"; }
echo "== ratios"
if ((SPARSE_ONLY)); then
  echo "digest / floor: sparse $(ratio 'digest sparse' 'floor sparse')"
else
  echo "digest / floor: dense $(ratio 'digest dense' 'floor dense'), sparse $(ratio 'digest sparse' 'floor sparse')"
  echo "sparse / dense: floor $(ratio 'floor sparse' 'floor dense'), digest $(ratio 'digest sparse' 'digest dense')"
fi
[ -z "$OLD" ] || ((SPARSE_ONLY)) || echo "old engine: sparse / dense $(ratio 'old sparse' 'old dense'); sparse: old / new $(ratio 'old sparse' 'digest sparse')"
