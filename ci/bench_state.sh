#!/usr/bin/env bash
# Benchmark (figures, not a timed test): verify-range's state comparison (issue 45) against a full
# keyed comparison and pg_comparator, on two copies of the same synthetic Horizon state (accounts,
# trust lines, offers, key_value_store; fixtures/state.h) at --sizes rows per side, in one kept
# cluster, schemas sl_N (left) and sr_N (right). Medians of --reps runs.
#
#   digest        `verify-range --engine E` on identical sides: state.seconds from its JSON (the
#                 state tables' bucket digests, both snapshots open), and the whole command's wall
#                 time (history of --to ledgers included; its state line says identical)
#   keyed diff    the same with one account's balance changed on the right: the digest, then the
#                 rows of the differing bucket read and matched by key; the rows and bytes shipped
#                 (state.shipped) at the default split threshold (10,000) and at --split-rows
#                 (sub-bucket digests, then only the small sub-bucket's rows)
#   full keyed    the floor of a keyed comparison: per state table COPY (SELECT * ... ORDER BY key)
#                 TO STDOUT from both sides at once, compared line by line (cmp, then diff for the
#                 differing lines): every row shipped, the least work that finds the same row
#   pg_comparator pg_comparator (Debian postgresql-comparator, its C checksum extension pgcmp) per
#                 state table with its key, as its users run it (--no-lock, every column, --clear);
#                 its exit status checked: a failed run compared nothing and is reported as failed
#   growth        the same at each of --sizes: time per size and the ratio of the largest to the
#                 smallest
#
# Usage: ci/bench_state.sh [--sizes "1000000 5000000"] [--to N] [--reps R] [--split-rows N]
#                          [--engines "server-hash text"] [--keep-db DIR] [--no-peers]
#   --engines    the digest engines measured (default server-hash; text ships every row to hash it)
#   --sizes      state rows per side (default "1000000 5000000": about half accounts, two fifths
#                trust lines, a tenth offers)
#   --to N       history ledgers 2:N of the reference ingester (default 2001; the state derives
#                its accounts, assets and offers from them)
#   --keep-db    cluster directory, reused when it holds the data (default /tmp/ldbench-state)
#   --no-peers   leave out the full keyed floor and pg_comparator
# Environment: BUILD (default ./build). Run it with nice on a shared machine.
set -euo pipefail

# shellcheck source=ci/bench_lib.sh
source "$(dirname "$0")/bench_lib.sh"
SIZES="1000000 5000000"
TO=2001
REPS=3
SPLIT_ROWS=100
ENGINES="server-hash"
DIR=""
PEERS=1
bench_args bench_state --sizes=SIZES --to=TO --reps=REPS --split-rows=SPLIT_ROWS --engines=ENGINES --keep-db=DIR \
  --no-peers=PEERS=0 -- "$@"
RANGE=2:$TO
DIR=${DIR:-/tmp/ldbench-state}
PORT=5432
WORK=$(mktemp -d)

[ -x "$LD" ] || { echo "bench_state: $LD not built (cmake --build $BUILD --target ledgerdiff)" >&2; exit 2; }
command -v pg_comparator >/dev/null || PEERS=0

# 1. Data: per size, two schemas of the reference ingester's history with synthetic state (the
# same seed: the same rows), into one kept cluster (made by the first ingest).
for n in $SIZES; do
  for side in sl sr; do
    if [ ! -f "$DIR/.bench-$RANGE-$side-$n" ]; then
      echo "== ingest $RANGE with $n state rows into schema ${side}_$n, cluster $DIR"
      "$LD" ingest --range "$RANGE" --schema "${side}_$n" --workers 2 --job-size 1000 --density stellar \
        --state-rows "$n" --keep-db "$DIR" --fresh >"$WORK/ingest.txt"
      tail -1 "$WORK/ingest.txt"
      touch "$DIR/.bench-$RANGE-$side-$n"
    fi
  done
done

# 2. Serve the kept cluster for psql and pg_comparator.
bench_serve "$DIR" "$PORT" "$WORK"
psql -X -q -d "$DB" -c "VACUUM ANALYZE" >/dev/null
psql -X -q -d "$DB" -c "CREATE EXTENSION IF NOT EXISTS pgcmp" >/dev/null 2>&1 || true
STATE_TABLES="accounts?account_id trust_lines?ledger_key offers?offer_id key_value_store?key"
declare -A MED

measure() {  # NAME COMMAND...: median wall time of REPS runs into MED[NAME]
  local name=$1 t0 t1
  shift
  : >"$WORK/times"
  for _ in $(seq "$REPS"); do
    t0=$(now); "$@"; t1=$(now)
    echo "$t1 - $t0" | bc -l >>"$WORK/times"
  done
  MED[$name]=$(median <"$WORK/times")
}
ratio() { echo "$1 / $2" | bc -l; }
jq_state() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["state"]; print(eval(sys.argv[2], {}, {"s": s}))' "$@"; }

# verify-range on sides L R (schemas) with ENGINE and extra flags; the JSON in $WORK/vr.json, the
# state's seconds appended to $WORK/state_s.
run_vr() {  # L R ENGINE [FLAG...]
  local l=$1 r=$2 e=$3
  shift 3
  "$LD" verify-range --left "$DB" --right "$DB" --left-schema "$l" --right-schema "$r" --range "$RANGE" --jobs 2 \
    --engine "$e" --format json "$@" >"$WORK/vr.json" 2>"$WORK/vr.err" || true
  jq_state "$WORK/vr.json" 's["seconds"]' >>"$WORK/state_s"
}
measure_vr() {  # NAME L R ENGINE [FLAG...]: MED[NAME] the command, MED[NAME state] its state part
  local name=$1
  shift
  : >"$WORK/state_s"
  measure "$name" run_vr "$@"
  MED[$name state]=$(median <"$WORK/state_s")
}

# The floor of a keyed comparison: every state table's rows in key order from both sides at once,
# compared; the differing lines kept.
run_full_keyed() {  # L R
  : >"$WORK/full.txt"
  for tk in $STATE_TABLES; do
    local t=${tk%%\?*} k=${tk#*\?}
    psql -X -q -d "$DB" -c "COPY (SELECT * FROM $1.$t ORDER BY $k) TO STDOUT" >"$WORK/left.copy" &
    psql -X -q -d "$DB" -c "COPY (SELECT * FROM $2.$t ORDER BY $k) TO STDOUT" >"$WORK/right.copy"
    wait
    cmp -s "$WORK/left.copy" "$WORK/right.copy" || diff "$WORK/left.copy" "$WORK/right.copy" >>"$WORK/full.txt" || true
  done
}
full_keyed_bytes() {  # L R: bytes both sides ship
  local b=0 t k
  for tk in $STATE_TABLES; do
    t=${tk%%\?*} k=${tk#*\?}
    b=$((b + $(psql -X -q -d "$DB" -c "COPY (SELECT * FROM $1.$t ORDER BY $k) TO STDOUT" | wc -c) * 2))
  done
  echo "$b"
}
# pg_comparator per table with its key, every column; a non-zero exit is a failed comparison.
run_pg_comparator() {  # L R
  : >"$WORK/pgc.txt"
  for tk in $STATE_TABLES; do
    if ! PGHOST=$DIR PGPORT=$PORT pg_comparator --no-lock --clear "pgsql://ledgerdiff@/postgres/$1.$tk" \
      "pgsql://ledgerdiff@/postgres/$2.${tk%%\?*}" >>"$WORK/pgc.txt" 2>>"$WORK/pgc.err"; then
      echo "${tk%%\?*}" >>"$WORK/pgc.failed"
    fi
  done
}

echo "== $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $REPS repetitions (median), history $RANGE"
for n in $SIZES; do
  L=sl_$n R=sr_$n
  psql -X -q -d "$DB" -v ON_ERROR_STOP=1 -c "UPDATE $R.accounts SET balance = (SELECT balance FROM $L.accounts
    WHERE account_id = (SELECT min(account_id COLLATE \"C\") FROM $L.accounts)) WHERE account_id = (SELECT
    min(account_id COLLATE \"C\") FROM $L.accounts)" >/dev/null  # identical again (an earlier run's change)
  ROWS=$(psql -X -At -d "$DB" -c "SELECT (SELECT count(*) FROM $L.accounts) + (SELECT count(*) FROM $L.trust_lines)
    + (SELECT count(*) FROM $L.offers) + (SELECT count(*) FROM $L.key_value_store)")
  echo "== size $n: $ROWS state rows per side (schemas $L, $R)"
  for e in $ENGINES; do
    measure_vr "digest $e $n" "$L" "$R" "$e"
    printf "%-28s median %7.2f s  (verify-range in all %7.2f s) state %s\n" "digest $e, identical" \
      "${MED[digest $e $n state]}" "${MED[digest $e $n]}" "$(jq_state "$WORK/vr.json" 's["verdict"]')"
  done
  # One changed row: the first account's balance + 1 on the right.
  psql -X -q -d "$DB" -v ON_ERROR_STOP=1 -c "UPDATE $R.accounts SET balance = balance + 1 WHERE account_id =
    (SELECT min(account_id COLLATE \"C\") FROM $R.accounts)" >/dev/null
  for e in $ENGINES; do
    for split in default "$SPLIT_ROWS"; do
      flags=()
      [ "$split" = default ] || flags=(--state-split-rows "$split")
      measure_vr "keyed $e $split $n" "$L" "$R" "$e" "${flags[@]}"
      printf "%-28s median %7.2f s  found %s; shipped %s rows, %s bytes; %s digest statements, split depth %s\n" \
        "keyed diff $e, split $split" "${MED[keyed $e $split $n state]}" "$(jq_state "$WORK/vr.json" 's["differing_rows"]')" \
        "$(jq_state "$WORK/vr.json" 's["rows_shipped"]')" "$(jq_state "$WORK/vr.json" 's["bytes_shipped"]')" \
        "$(jq_state "$WORK/vr.json" 's["digest_queries"]')" "$(jq_state "$WORK/vr.json" 's["split_depth"]')"
    done
  done
  if ((PEERS)); then
    measure "full $n" run_full_keyed "$L" "$R"
    FULL_BYTES=$(full_keyed_bytes "$L" "$R")
    printf "%-28s median %7.2f s  found %s differing lines; shipped %s rows, %s bytes\n" "full keyed (COPY ORDER BY)" \
      "${MED[full $n]}" "$(grep -c '^[<>]' "$WORK/full.txt" || true)" "$((ROWS * 2))" "$FULL_BYTES"
    rm -f "$WORK/pgc.failed"
    measure "pgc $n" run_pg_comparator "$L" "$R"
    if [ -s "$WORK/pgc.failed" ]; then
      printf "%-28s FAILED on %s (exit status non-zero; see below): compared nothing there\n" "pg_comparator" \
        "$(sort -u "$WORK/pgc.failed" | tr '\n' ' ')"
      tail -3 "$WORK/pgc.err"
    else
      printf "%-28s median %7.2f s  found %s differing rows: %s\n" "pg_comparator" "${MED[pgc $n]}" \
        "$(grep -c -E '^(UPDATE|INSERT|DELETE)' "$WORK/pgc.txt" || true)" "$(head -1 "$WORK/pgc.txt")"
    fi
  fi
  for e in $ENGINES; do
    printf "ratios %-11s keyed diff / digest %5.2fx" "$e" "$(ratio "${MED[keyed $e default $n state]}" "${MED[digest $e $n state]}")"
    if ((PEERS)); then
      printf "   full keyed / keyed diff %5.2fx" "$(ratio "${MED[full $n]}" "${MED[keyed $e default $n state]}")"
      [ -s "$WORK/pgc.failed" ] || printf "   pg_comparator / keyed diff %5.2fx" \
        "$(ratio "${MED[pgc $n]}" "${MED[keyed $e default $n state]}")"
    fi
    echo
  done
done
set -- $SIZES
if [ $# -ge 2 ]; then
  first=$1 last=${!#}
  printf "growth %s -> %s rows (x%s):" "$first" "$last" "$(ratio "$last" "$first" | xargs printf '%.1f')"
  for e in $ENGINES; do
    printf "  digest %s x%.2f, keyed %s x%.2f" "$e" "$(ratio "${MED[digest $e $last state]}" "${MED[digest $e $first state]}")" \
      "$e" "$(ratio "${MED[keyed $e default $last state]}" "${MED[keyed $e default $first state]}")"
  done
  ((PEERS)) && printf "  full keyed x%.2f  pg_comparator x%.2f" "$(ratio "${MED[full $last]}" "${MED[full $first]}")" \
    "$(ratio "${MED[pgc $last]}" "${MED[pgc $first]}")"
  echo
fi
