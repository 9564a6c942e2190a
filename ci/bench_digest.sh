#!/usr/bin/env bash
# Benchmark (figures, not a timed test): ledgerdiff digest against what users do today, on the
# same data in the same run.
#
#   digest       ledgerdiff digest --jobs N (per-ledger digests of every table)
#   floor        the same canonical COPY statements (ledgerdiff digest --print-sql) run by N psql
#                processes into /dev/null, same session work_mem as the digest's workers
#   verify-range Horizon's way, as its verify-range start script does it: per table one ordered
#                psql query (its own queries: joins to the lookup tables, -t -A -F, FETCH_COUNT=100)
#                into a file, then sha256 of the file; tables in turn
#   ordered-copy the best a shell script can do: our canonical queries, one COPY per table over
#                the whole range, piped to sha256sum, in turn
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
# Horizon's dump_horizon_db queries (services/horizon/docker/verify-range/start), on our tables.
cat >"$WORK/horizon.sql" <<'SQL'
select history_effects.history_operation_id, history_effects.order, type, details, history_accounts.address, address_muxed from history_effects left join history_accounts on history_accounts.id = history_effects.history_account_id order by history_operation_id asc, "order" asc
select sequence, ledger_hash, previous_ledger_hash, transaction_count, operation_count, closed_at, id, total_coins, fee_pool, base_fee, base_reserve, max_tx_set_size, protocol_version, ledger_header, successful_transaction_count, failed_transaction_count from history_ledgers order by sequence asc
select * from history_operations order by id asc
select history_operation_id, address from history_operation_participants left join history_accounts on history_accounts.id = history_operation_participants.history_account_id order by history_operation_id asc, address asc
select history_trades.history_operation_id, history_trades.order, history_trades.ledger_closed_at, CASE WHEN history_trades.base_is_seller THEN history_trades.price_n ELSE history_trades.price_d END, CASE WHEN history_trades.base_is_seller THEN history_trades.price_d ELSE history_trades.price_n END, CASE WHEN history_trades.base_is_seller THEN history_trades.base_offer_id ELSE history_trades.counter_offer_id END, CASE WHEN history_trades.base_is_seller THEN history_trades.counter_offer_id ELSE history_trades.base_offer_id END, CASE WHEN history_trades.base_is_seller THEN baccount.address ELSE caccount.address END, CASE WHEN history_trades.base_is_seller THEN caccount.address ELSE baccount.address END, CASE WHEN history_trades.base_is_seller THEN basset.asset_type ELSE casset.asset_type END, CASE WHEN history_trades.base_is_seller THEN basset.asset_code ELSE casset.asset_code END, CASE WHEN history_trades.base_is_seller THEN basset.asset_issuer ELSE casset.asset_issuer END, CASE WHEN history_trades.base_is_seller THEN casset.asset_type ELSE basset.asset_type END, CASE WHEN history_trades.base_is_seller THEN casset.asset_code ELSE basset.asset_code END, CASE WHEN history_trades.base_is_seller THEN casset.asset_issuer ELSE basset.asset_issuer END from history_trades left join history_accounts baccount on baccount.id = history_trades.base_account_id left join history_accounts caccount on caccount.id = history_trades.counter_account_id left join history_assets basset on basset.id = history_trades.base_asset_id left join history_assets casset on casset.id = history_trades.counter_asset_id order by history_operation_id asc, "order" asc
select transaction_hash, ledger_sequence, application_order, account, account_sequence, max_fee, operation_count, id, tx_envelope, tx_result, tx_fee_meta, signatures, memo_type, memo, time_bounds, successful, fee_charged, inner_transaction_hash, fee_account, inner_signatures, new_max_fee, account_muxed, fee_account_muxed from history_transactions order by id asc
select history_transaction_id, address from history_transaction_participants left join history_accounts on history_accounts.id = history_transaction_participants.history_account_id order by history_transaction_id, address
SQL
run_verify_range() {
  local n=0
  while IFS= read -r q; do
    n=$((n + 1))
    PGOPTIONS="-c search_path=$SCHEMA" psql -X -d "$DB" -t -A -F"," --variable="FETCH_COUNT=100" -c "$q" >"$WORK/vr_$n"
    sha256sum "$WORK/vr_$n" >/dev/null
    rm -f "$WORK/vr_$n"
  done <"$WORK/horizon.sql"
}
run_ordered_copy() {
  while IFS= read -r q; do psql -X -A -t -d "$DB" -c "COPY ($q) TO STDOUT" | sha256sum >/dev/null; done <"$WORK/tables.sql"
}
run_pg_dump() { pg_dump -d "$DB" --data-only -n "$SCHEMA" | sha256sum >/dev/null; }

declare -A MED
RSS=0
for name in digest floor verify_range ordered_copy pg_dump; do
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
printf "ordered-copy / digest   %.2fx\n" "$(ratio "${MED[ordered_copy]}" "${MED[digest]}")"
printf "pg_dump / digest        %.2fx\n" "$r_dump"
printf "digest peak RSS         %.1f MB  (target < 100 MB)\n" "$(echo "$RSS / 1024" | bc -l)"
printf "digest rate             %.0f rows/s\n" "$(echo "$ROWS / ${MED[digest]}" | bc -l)"

# Manifest size on this dataset (compact and full).
for detail in compact full; do
  "$LD" digest --db "$DB" --schema "$SCHEMA" --jobs "$JOBS" --out "$WORK/m.ldm" --manifest-detail "$detail" | grep '^manifest'
done
