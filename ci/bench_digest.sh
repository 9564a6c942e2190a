#!/usr/bin/env bash
# Benchmark (figures, not a timed test): ledgerdiff digest against the raw COPY floor and what
# users do today, on the same stellar-density data in the same run. Medians of --reps runs.
#
#   floor        every history table's rows of the range COPY'd to /dev/null, two tables at a
#                time, unordered, no joins (SELECT * ... WHERE <range>): the server's row output
#   digest-sql   the digest's own statements (ledgerdiff digest --print-sql: joins, no ORDER BY)
#                run by --jobs psql processes into /dev/null: the server's share of the digest
#   digest jN    ledgerdiff digest --jobs N (peak RSS from /usr/bin/time -v): the text engine
#   server jN    ledgerdiff digest --engine server-hash --jobs N: rows hashed in the server, one
#                line per ledger and table shipped (issue 24); its roots differ from the text
#                engine's by design (another function), each engine's roots agree across runs
#   server-sql   the server-hash engine's own statements through psql into /dev/null (--server-share)
#   bytes/row    what each way ships to the client per history row: the floor's COPY, the text
#                digest's statements, the server-hash digest's (psql ... | wc -c)
#   CPU          per run, the server's CPU (what the postmaster reaped from exited backends) and
#                the client's (ledgerdiff's user + sys): the server's row output alone is the
#                floor's server CPU, the client's parse/resolve/hash alone the digest's client CPU
#   old jN       the same with --old BIN (the engine before, e.g. main's build), for before/after;
#                each repetition runs both engines back to back (interleaved, order alternating)
#   verify-range Horizon's way (services/horizon/docker/verify-range/start): per table one ordered
#                psql query (its joins, -t -A -F, FETCH_COUNT=100), piped to sha256sum, in turn
#   pg_dump      pg_dump --data-only of the schema piped to sha256sum
#   growth       --scale: floor and both engines' digest --jobs 2 over sub-ranges 2:N of the same
#                dataset, so the cost's growth with rows is read off one run
#   peers        --peers: a copy of the schema with one effect changed in the middle ledger, then
#                `ledgerdiff diff`, `verify-range` (its digest/diff phases from --format json),
#                `ledgerdiff diff --engine server-hash`,
#                pg_comparator (its C checksum extension; one run per table, with the table's key)
#                twice: "pg_comparator" reads views of every column (arrays cast to text), "direct"
#                reads each table as its users run it (key and content columns, created_at,
#                updated_at and importer_version left out), and Horizon's way on both sides, all
#                on the same two copies; diff / pg_comparator
#   verify phases --verify-to N: one `ledgerdiff verify --range 2:N --workers 2` on the embedded
#                default (two fresh ingests, then the digests and the diff), its phase times
#
# Usage: ci/bench_digest.sh [--to N] [--keep-db DIR] [--old BIN] [--reps R] [--jobs "1 2"]
#                           [--scale "10001 20001"] [--peers] [--no-main] [--server-share]
#                           [--verify-to N]
#   --server-share  also time digest-sql (the digest's own statements through psql)
#   --quick      leave the verify-range way and pg_dump out of the single-side table
#   --no-main    skip the single-side table (floor, digest, verify-range way, pg_dump)
#   --to N       ledgers 2:N (default 10001: 3.2M rows; 40001: 28.8M rows)
#   --keep-db    cluster directory, reused when it already holds the range (default
#                /tmp/ldbench-digest-N); the dataset is ingested once by `ledgerdiff ingest
#                --workers 2 --job-size 2000 --density stellar`
# Environment: BUILD (default ./build).
set -euo pipefail

# shellcheck source=ci/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
TO=10001
DIR=""
OLD=""
REPS=3
JOBS_LIST="1 2"
SCALE=""
PEERS=0
MAIN=1
SERVER_SHARE=0
QUICK=0
VERIFY_TO=""
bench_args bench_digest --to=TO --keep-db=DIR --old=OLD --reps=REPS --jobs=JOBS_LIST --scale=SCALE --peers=PEERS=1 \
  --no-main=MAIN=0 --server-share=SERVER_SHARE=1 --quick=QUICK=1 --verify-to=VERIFY_TO -- "$@"
RANGE=2:$TO
DIR=${DIR:-/tmp/ldbench-digest-$TO}
SCHEMA=bench
PORT=5432
WORK=$(mktemp -d)

[ -x "$LD" ] || { echo "bench_digest: $LD not built (cmake --build $BUILD --target ledgerdiff)" >&2; exit 2; }
[ -z "$OLD" ] || [ -x "$OLD" ] || { echo "bench_digest: --old $OLD is not executable" >&2; exit 2; }

# 1. Dataset: the reference ingester, 2 workers, into a kept embedded cluster.
bench_stellar_dataset "$LD" "$RANGE" "$DIR" "$SCHEMA" "$WORK"

# 2. Serve the kept cluster for psql and pg_dump (the cluster belongs to an unprivileged user).
bench_serve "$DIR" "$PORT" "$WORK"
psql -X -q -d "$DB" -c "VACUUM ANALYZE" >/dev/null
ROWS=$(psql -X -At -d "$DB" -c "SELECT sum(n_live_tup) FROM pg_stat_user_tables WHERE schemaname = '$SCHEMA' AND relname LIKE 'history\_%' AND relname NOT IN ('history_accounts', 'history_assets', 'history_claimable_balances', 'history_liquidity_pools')")
echo "== dataset: $ROWS history rows, ledgers $RANGE, $(nproc) cores, $REPS repetitions (median)"

# The floor's statements over the range (bench_floor_sql), and the digest's own.
bench_floor_sql "$SCHEMA" "$WORK/floor.sql" --range "$RANGE"
"$LD" digest --db "$DB" --schema "$SCHEMA" --range "$RANGE" --jobs 2 --print-sql >"$WORK/chunks.sql"
"$LD" digest --db "$DB" --schema "$SCHEMA" --range "$RANGE" --jobs 2 --engine server-hash --print-sql >"$WORK/server-chunks.sql"
run_floor() { bench_run_sql "$WORK/floor.sql"; }
run_digest_sql() { bench_run_sql "$WORK/chunks.sql"; }
run_server_sql() { bench_run_sql "$WORK/server-chunks.sql"; }
bytes_of() { tr '\n' '\0' <"$1" | xargs -0 -I{} psql -X -q -d "$DB" -c "{}" | wc -c; }  # FILE: bytes its COPYs ship
run_ld() {  # BIN JOBS [ENGINE]
  /usr/bin/time -v -o "$WORK/time" "$1" digest --db "$DB" --schema "$SCHEMA" --range "$RANGE" --jobs "$2" \
    --engine "${3:-text}" >"$WORK/digest.txt"
  awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time" >>"$WORK/rss"
  awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$WORK/time" >>"$WORK/ccpu"
  grep '^root' "$WORK/digest.txt" | awk '{print $2}' >>"$WORK/roots"
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
  while IFS= read -r q; do
    PGOPTIONS="-c search_path=$SCHEMA" psql -X -d "$DB" -t -A -F"," --variable="FETCH_COUNT=100" -c "$q" | sha256sum >/dev/null
  done <"$WORK/horizon.sql"
}
run_pg_dump() { pg_dump -d "$DB" --data-only -n "$SCHEMA" | sha256sum >/dev/null; }


run_ld_range() { "$LD" digest --db "$DB" --schema "$SCHEMA" --range "$1" --jobs 2 --engine "${2:-text}" >/dev/null; }
# Where the time goes: the server's CPU is what the postmaster reaped from the backends that
# exited during a run (cutime + cstime of its /proc stat), the client's is ledgerdiff's user + sys
# (/usr/bin/time). The floor's server CPU is the server's row output alone; the digest's client
# CPU is its parse, resolve and hash alone; the digest's wall time is the two together.
PM_PID=$(head -1 "$DIR/data/postmaster.pid")
TICKS=$(getconf CLK_TCK)
server_cpu() { awk -v t="$TICKS" '{print ($16 + $17) / t}' "/proc/$PM_PID/stat"; }
declare -A MED RSS ROOTS SCPU CCPU
measure() {  # NAME COMMAND...
  local name=$1; shift
  : >"$WORK/times"; : >"$WORK/rss"; : >"$WORK/roots"; : >"$WORK/scpu"; : >"$WORK/ccpu"
  for _ in $(seq "$REPS"); do
    local t0 t1 s0 s1
    s0=$(server_cpu); t0=$(now); "$@"; t1=$(now); s1=$(server_cpu)
    echo "$t1 - $t0" | bc -l >>"$WORK/times"
    echo "$s1 - $s0" | bc -l >>"$WORK/scpu"
  done
  MED[$name]=$(median <"$WORK/times")
  RSS[$name]=$(sort -n "$WORK/rss" | tail -1)
  ROOTS[$name]=$(sort -u "$WORK/roots" | tr '\n' ' ')
  SCPU[$name]=$(median <"$WORK/scpu")
  CCPU[$name]=$( [ -s "$WORK/ccpu" ] && median <"$WORK/ccpu" || echo "")
  printf "%-14s median %8.2f s  %9.0f rows/s   server CPU %6.1f s%s   runs: %s\n" "$name" "${MED[$name]}" \
    "$(echo "$ROWS / ${MED[$name]}" | bc -l)" "${SCPU[$name]}" \
    "$([ -n "${CCPU[$name]}" ] && printf "  client CPU %6.1f s" "${CCPU[$name]}")" "$(xargs printf '%.2f ' <"$WORK/times")"
}

# Two engines interleaved: NAME_A NAME_B RUN BIN_A BIN_B ARGS... (RUN BIN ARGS... is one run).
measure_ab() {
  local na=$1 nb=$2 run=$3 ba=$4 bb=$5; shift 5
  for side in a b; do for f in times rss roots scpu ccpu; do : >"$WORK/$f.$side"; done; done
  for rep in $(seq "$REPS"); do
    local order="a b"; ((rep % 2)) || order="b a"
    for side in $order; do
      local bin=$ba; [ "$side" = b ] && bin=$bb
      : >"$WORK/rss"; : >"$WORK/roots"; : >"$WORK/ccpu"
      local t0 t1 s0 s1
      s0=$(server_cpu); t0=$(now); "$run" "$bin" "$@"; t1=$(now); s1=$(server_cpu)
      echo "$t1 - $t0" | bc -l >>"$WORK/times.$side"
      echo "$s1 - $s0" | bc -l >>"$WORK/scpu.$side"
      for f in rss roots ccpu; do cat "$WORK/$f" >>"$WORK/$f.$side"; done
    done
  done
  for side in a b; do
    local name=$na; [ "$side" = b ] && name=$nb
    MED[$name]=$(median <"$WORK/times.$side")
    RSS[$name]=$(sort -n "$WORK/rss.$side" | tail -1)
    ROOTS[$name]=$(sort -u "$WORK/roots.$side" | tr '\n' ' ')
    SCPU[$name]=$(median <"$WORK/scpu.$side")
    CCPU[$name]=$(median <"$WORK/ccpu.$side")
    printf "%-14s median %8.2f s  %9.0f rows/s   server CPU %6.1f s  client CPU %6.1f s   runs: %s (interleaved with %s)\n" \
      "$name" "${MED[$name]}" "$(echo "$ROWS / ${MED[$name]}" | bc -l)" "${SCPU[$name]}" "${CCPU[$name]}" \
      "$(xargs printf '%.2f ' <"$WORK/times.$side")" "$([ "$side" = a ] && echo "$nb" || echo "$na")"
  done
}

ratio() { echo "$1 / $2" | bc -l; }
# One unmeasured pass over every table first: the server was just started, and the first
# measurement would otherwise pay for filling the caches alone (seen: a first floor run 50% slower).
run_floor
if ((MAIN)); then
measure floor run_floor
((SERVER_SHARE)) && measure digest-sql run_digest_sql
((SERVER_SHARE)) && measure server-sql run_server_sql
if [ -n "$OLD" ]; then
  # Before/after interleaved: each repetition runs both engines back to back, the order turned
  # around every other time, so a slow spell of the shared machine falls on both alike.
  for j in $JOBS_LIST; do measure_ab "digest j$j" "old j$j" run_ld "$LD" "$OLD" "$j"; done
else
  for j in $JOBS_LIST; do measure "digest j$j" run_ld "$LD" "$j"; done
fi
for j in $JOBS_LIST; do measure "server j$j" run_ld "$LD" "$j" server-hash; done
echo "== bytes shipped to the client per history row"
for way in floor:floor.sql text:chunks.sql server-hash:server-chunks.sql; do
  b=$(bytes_of "$WORK/${way#*:}")
  printf "%-12s %14s bytes  %8.2f bytes/row\n" "${way%%:*}" "$b" "$(echo "$b / $ROWS" | bc -l)"
done
if ((QUICK)); then
  MED[verify-range]=0; MED[pg_dump]=0
else
  measure verify-range run_verify_range
  measure pg_dump run_pg_dump
fi

echo "== where the digest's time goes (medians; CPU-seconds over both cores)"
printf "server's row output alone (the floor's server CPU)   %6.1f s\n" "${SCPU[floor]}"
((SERVER_SHARE)) && printf "server-hash statements alone: %6.2f s wall, server CPU %6.1f s\n" "${MED[server-sql]}" "${SCPU[server-sql]}"
for j in $JOBS_LIST; do
  printf "server j%s: server CPU %6.1f s, client %6.1f s, %6.2f s wall\n" \
    "$j" "${SCPU[server j$j]}" "${CCPU[server j$j]}" "${MED[server j$j]}"
done
for j in $JOBS_LIST; do
  printf "digest j%s: server CPU %6.1f s, client parse+resolve+hash alone %6.1f s, the two together %6.2f s wall\n" \
    "$j" "${SCPU[digest j$j]}" "${CCPU[digest j$j]}" "${MED[digest j$j]}"
done
echo "== ratios (medians)"
for name in "${!MED[@]}"; do
  case "$name" in "digest j"*|"server j"*|old*) ;; *) continue ;; esac
  peers=""
  ((QUICK)) || peers=$(printf "   verify-range / it %5.2fx   pg_dump / it %5.2fx" \
    "$(ratio "${MED[verify-range]}" "${MED[$name]}")" "$(ratio "${MED[pg_dump]}" "${MED[$name]}")")
  printf "%-14s / floor %5.2fx%s   peak RSS %6.1f MB   roots %s\n" \
    "$name" "$(ratio "${MED[$name]}" "${MED[floor]}")" "$peers" "$(echo "${RSS[$name]:-0} / 1024" | bc -l)" "${ROOTS[$name]:-}"
done | sort
fi

if [ -n "$SCALE" ]; then
  echo "== growth: the same dataset's sub-ranges (digest --jobs 2 against the floor, medians)"
  printf "%-10s %12s %10s %10s %8s %10s %8s\n" range rows floor text ratio server-hash ratio
  for to in $SCALE $TO; do
    r=2:$to
    bench_floor_sql "$SCHEMA" "$WORK/floor-$to.sql" --range "$r"
    n=$(psql -X -At -d "$DB" -c "SELECT sum(c) FROM (SELECT count(*) c FROM $SCHEMA.history_ledgers WHERE sequence BETWEEN 2 AND $to
      UNION ALL SELECT count(*) FROM $SCHEMA.history_transactions WHERE ledger_sequence BETWEEN 2 AND $to
      UNION ALL SELECT count(*) FROM $SCHEMA.history_operations WHERE id BETWEEN 2::bigint<<32 AND (($to::bigint+1)<<32)-1
      UNION ALL SELECT count(*) FROM $SCHEMA.history_effects WHERE history_operation_id BETWEEN 2::bigint<<32 AND (($to::bigint+1)<<32)-1
      UNION ALL SELECT count(*) FROM $SCHEMA.history_trades WHERE history_operation_id BETWEEN 2::bigint<<32 AND (($to::bigint+1)<<32)-1
      UNION ALL SELECT count(*) FROM $SCHEMA.history_operation_participants WHERE history_operation_id BETWEEN 2::bigint<<32 AND (($to::bigint+1)<<32)-1
      UNION ALL SELECT count(*) FROM $SCHEMA.history_transaction_participants WHERE history_transaction_id BETWEEN 2::bigint<<32 AND (($to::bigint+1)<<32)-1) x")
    if [ "$to" = "$TO" ] && [ -n "${MED[floor]:-}" ] && [ -n "${MED[digest j2]:-}" ]; then
      MED[floor $r]=${MED[floor]}; MED[digest $r]=${MED[digest j2]}  # measured above
      MED[server $r]=${MED[server j2]}
    else
      measure "floor $r" bench_run_sql "$WORK/floor-$to.sql" >/dev/null
      measure "digest $r" run_ld_range "$r" >/dev/null
      measure "server $r" run_ld_range "$r" server-hash >/dev/null
    fi
    printf "%-10s %12s %9.2fs %9.2fs %7.2fx %9.2fs %7.2fx\n" "$r" "$n" "${MED[floor $r]}" "${MED[digest $r]}" \
      "$(ratio "${MED[digest $r]}" "${MED[floor $r]}")" "${MED[server $r]}" "$(ratio "${MED[server $r]}" "${MED[floor $r]}")"
  done
fi

if ((PEERS)); then
  COPY=${SCHEMA}_copy
  MID=$(( (2 + TO) / 2 ))
  # The second copy: the same rows (as two serial ingests give), then one effect changed in the
  # middle ledger. Made once per dataset; the change is idempotent.
  if [ ! -f "$DIR/.bench-$RANGE-copy" ]; then
    echo "== copying schema $SCHEMA to $COPY"
    psql -X -q -d "$DB" -v ON_ERROR_STOP=1 -c "DROP SCHEMA IF EXISTS $COPY CASCADE; CREATE SCHEMA $COPY" >/dev/null
    for t in $(psql -X -At -d "$DB" -c "SELECT tablename FROM pg_tables WHERE schemaname = '$SCHEMA' AND tablename LIKE 'history\_%' ORDER BY 1"); do
      psql -X -q -d "$DB" -v ON_ERROR_STOP=1 -c "CREATE TABLE $COPY.$t (LIKE $SCHEMA.$t INCLUDING ALL); INSERT INTO $COPY.$t SELECT * FROM $SCHEMA.$t" >/dev/null
    done
    psql -X -q -d "$DB" -c "VACUUM ANALYZE" >/dev/null
    touch "$DIR/.bench-$RANGE-copy"  # an interrupted copy is made again
  fi
  psql -X -q -d "$DB" -v ON_ERROR_STOP=1 -c "UPDATE $COPY.history_effects SET details = coalesce(details, '{}') || '{\"bench_planted\": true}'
    WHERE (history_operation_id, \"order\") = (SELECT history_operation_id, \"order\" FROM $COPY.history_effects
      WHERE history_operation_id >= $MID::bigint << 32 ORDER BY 1, 2 LIMIT 1)" >/dev/null
  psql -X -q -d "$DB" -c "CREATE EXTENSION IF NOT EXISTS pgcmp" >/dev/null
  # pg_comparator concatenates columns as text and trips over arrays and does not quote names:
  # it reads views (schema pgc_<side>) with arrays cast to text and "order" renamed order_.
  for side in "$SCHEMA" "$COPY"; do
    psql -X -q -d "$DB" -c "CREATE SCHEMA IF NOT EXISTS pgc_$side" >/dev/null
    for t in $(psql -X -At -d "$DB" -c "SELECT tablename FROM pg_tables WHERE schemaname = '$side' AND tablename LIKE 'history\_%'"); do
      cols=$(psql -X -At -d "$DB" -c "SELECT string_agg(quote_ident(column_name) || CASE WHEN data_type = 'ARRAY' THEN '::text' ELSE '' END || ' AS ' || CASE WHEN quote_ident(column_name) <> column_name THEN column_name || '_' ELSE column_name END, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_schema = '$side' AND table_name = '$t'")
      psql -X -q -d "$DB" -c "DROP VIEW IF EXISTS pgc_$side.$t; CREATE VIEW pgc_$side.$t AS SELECT $cols FROM $side.$t" >/dev/null
    done
  done
  echo "== peers: $SCHEMA against $COPY (one effect changed in ledger $MID)"
  run_diff() {  # [ENGINE]
    /usr/bin/time -v -o "$WORK/time" "$LD" diff --db "$DB" "$SCHEMA" "$COPY" --range "$RANGE" --jobs 2 \
      --engine "${1:-text}" --format json >"$WORK/diff.json" || true
    awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time" >>"$WORK/rss"
    awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$WORK/time" >>"$WORK/ccpu"
  }
  run_verify_range_ld() {
    "$LD" verify-range --left "$DB" --right "$DB" --left-schema "$SCHEMA" --right-schema "$COPY" --range "$RANGE" \
      --jobs 2 --format json >"$WORK/vr.json" || true
  }
  # pg_comparator: one run per table with its key (it needs one), server-side ck checksums.
  PGC_TABLES="history_ledgers?sequence history_transactions?id history_operations?id
    history_effects?history_operation_id,order_ history_trades?history_operation_id,order_
    history_operation_participants?history_operation_id,history_account_id
    history_transaction_participants?history_transaction_id,history_account_id history_accounts?id history_assets?id"
  run_pg_comparator() {
    : >"$WORK/pgc.txt"
    for tk in $PGC_TABLES; do
      PGHOST=$DIR PGPORT=$PORT pg_comparator --no-lock --clear "pgsql://ledgerdiff@/postgres/pgc_$SCHEMA.$tk" \
        "pgsql://ledgerdiff@/postgres/pgc_$COPY.${tk%%\?*}" >>"$WORK/pgc.txt" 2>>"$WORK/pgc.err" || true
    done
  }
  # pg_comparator as its users run it (issue 24): each table read directly, its key, and the
  # columns that carry the ledger's content (created_at, updated_at and importer_version left out:
  # they differ between two ingestions of the same ledgers); names quoted in the URL, which
  # pg_comparator keeps. It joins the columns with || '|' ||, which an array column turns into an
  # array concatenation ("malformed array literal"), so a table with arrays (history_transactions'
  # signatures) is read through a view of the same columns with the arrays cast to text: the
  # least a user must do to compare it at all.
  PGC_SKIP="'created_at','updated_at','importer_version'"
  pgc_direct_url() {  # SIDE TABLE KEY: pgsql URL of SIDE.TABLE?key:cols (or of its view)
    local side=$1 t=$2 key=$3 cols arrays rel=$1.$2
    local where="table_schema = '$side' AND table_name = '$t' AND column_name NOT IN ($PGC_SKIP)"
    cols=$(psql -X -At -d "$DB" -c "SELECT string_agg(quote_ident(column_name), ',' ORDER BY ordinal_position)
      FROM information_schema.columns WHERE $where AND quote_ident(column_name) <> ALL (string_to_array('$key', ','))")
    arrays=$(psql -X -At -d "$DB" -c "SELECT count(*) FROM information_schema.columns WHERE $where AND data_type = 'ARRAY'")
    if [ "$arrays" != 0 ]; then
      rel=pgcd_$side.$t
      psql -X -q -d "$DB" -v ON_ERROR_STOP=1 -c "CREATE SCHEMA IF NOT EXISTS pgcd_$side; DROP VIEW IF EXISTS $rel;
        CREATE VIEW $rel AS SELECT $(psql -X -At -d "$DB" -c "SELECT string_agg(quote_ident(column_name)
          || CASE WHEN data_type = 'ARRAY' THEN '::text AS ' || quote_ident(column_name) ELSE '' END, ', '
          ORDER BY ordinal_position) FROM information_schema.columns WHERE $where") FROM $side.$t" >/dev/null
    fi
    printf 'pgsql://ledgerdiff@/postgres/%s?%s:%s' "$rel" "$key" "$cols"
  }
  : >"$WORK/pgc-direct-urls"
  for tk in $PGC_TABLES; do
    t=${tk%%\?*} key=${tk#*\?}
    key=${key//order_/\"order\"}
    printf '%s %s\n' "$(pgc_direct_url "$SCHEMA" "$t" "$key")" "$(pgc_direct_url "$COPY" "$t" "$key")" >>"$WORK/pgc-direct-urls"
  done
  run_pg_comparator_direct() {
    : >"$WORK/pgcd.txt"
    while read -r left right; do
      PGHOST=$DIR PGPORT=$PORT pg_comparator --no-lock --clear "$left" "$right" >>"$WORK/pgcd.txt" 2>>"$WORK/pgcd.err" || true
    done <"$WORK/pgc-direct-urls"
  }
  run_horizon_both() { run_verify_range; SCHEMA=$COPY run_verify_range; }
  measure "ledgerdiff diff" run_diff
  measure "diff server-hash" run_diff server-hash
  measure "ld verify-range" run_verify_range_ld
  measure "pg_comparator" run_pg_comparator
  measure "pg_comparator direct" run_pg_comparator_direct
  if [ "${MED[verify-range]:-0}" != 0 ]; then
    # Both sides are the same rows: twice the single-side median measured above, not re-run.
    MED[horizon way x2]=$(echo "2 * ${MED[verify-range]}" | bc -l)
    printf "%-14s %8.2f s  (2 x the single-side verify-range way above)\n" "horizon way x2" "${MED[horizon way x2]}"
  else
    measure "horizon way x2" run_horizon_both
  fi
  printf "ledgerdiff diff: peak RSS %6.1f MB\n" "$(echo "${RSS[ledgerdiff diff]:-0} / 1024" | bc -l)"
  printf "diff server-hash / pg_comparator %5.2fx   diff server-hash / diff text %5.2fx\n" \
    "$(ratio "${MED[diff server-hash]}" "${MED[pg_comparator]}")" "$(ratio "${MED[diff server-hash]}" "${MED[ledgerdiff diff]}")"
  printf "ledgerdiff diff / pg_comparator %5.2fx   ld verify-range / pg_comparator %5.2fx   horizon way x2 / ledgerdiff diff %5.2fx\n" \
    "$(ratio "${MED[ledgerdiff diff]}" "${MED[pg_comparator]}")" "$(ratio "${MED[ld verify-range]}" "${MED[pg_comparator]}")" \
    "$(ratio "${MED[horizon way x2]}" "${MED[ledgerdiff diff]}")"
  echo "ledgerdiff diff: $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("identical", j.get("identical"), "first divergent ledger", j.get("first_divergent_ledger"), "phases", [(p["name"], round(p["seconds"], 1)) for p in j.get("phases", [])])' "$WORK/diff.json" 2>/dev/null)"
  echo "verify-range phases: $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j.get("phases", j.get("seconds")))' "$WORK/vr.json" 2>/dev/null)"
  printf "diff server-hash / pg_comparator direct %5.2fx   ledgerdiff diff / pg_comparator direct %5.2fx\n" \
    "$(ratio "${MED[diff server-hash]}" "${MED[pg_comparator direct]}")" "$(ratio "${MED[ledgerdiff diff]}" "${MED[pg_comparator direct]}")"
  echo "pg_comparator found: $(grep -c -E '^(UPDATE|INSERT|DELETE)' "$WORK/pgc.txt") differing rows: $(head -3 "$WORK/pgc.txt" | tr '\n' ' ')"
  [ ! -s "$WORK/pgc.err" ] || { echo "pg_comparator stderr:"; head -5 "$WORK/pgc.err"; }
  echo "pg_comparator direct found: $(grep -c -E '^(UPDATE|INSERT|DELETE)' "$WORK/pgcd.txt") differing rows: $(head -3 "$WORK/pgcd.txt" | tr '\n' ' ')"
  [ ! -s "$WORK/pgcd.err" ] || { echo "pg_comparator direct stderr:"; head -5 "$WORK/pgcd.err"; }
fi

if [ -n "$VERIFY_TO" ]; then
  echo "== verify --range 2:$VERIFY_TO --workers 2 on the embedded default: phase times"
  "$LD" verify --range "2:$VERIFY_TO" --workers 2 --job-size 2000 --density stellar --format json >"$WORK/verify.json" 2>"$WORK/verify.err" || true
  python3 - "$WORK/verify.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
rows = sum(j["rows_per_table"]["parallel"].values())
print(f"verdict {j['verdict']}, {rows} rows per side")
for p in j["phases"]:
    print(f"  {p['name']:<16} {p['seconds']:8.2f} s")
PY
fi
