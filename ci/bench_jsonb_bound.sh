#!/usr/bin/env bash
# Benchmark (figures, not a test): what an exact server-side digest must pay for jsonb (issue 24).
# Per table with a jsonb `details` column, server-side COPY ... TO '/dev/null' timed by psql,
# the statements interleaved, medians of --reps:
#   floor       SELECT * of the table
#   jsonb text  SELECT details: the jsonb's text alone, the only exact form PostgreSQL gives of it
#   server-hash the server-hash engine's own statement (ledgerdiff digest --print-sql)
#   jsonb_hash  the same with jsonb_hash_extended(details, 0) for the text: the goal's assumption,
#               unsound as a digest (it prints the collisions it has, checked on this server)
# Needs a superuser session (COPY TO a server file). Usage:
#   ci/bench_jsonb_bound.sh --db CONNINFO --schema S [--reps 5]
# e.g. on a scratch server: build/ledgerdiff ingest --db CONNINFO --range 2:6001 --density stellar
#      --schema j1 --workers 2, then this with --schema j1.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LD=${BUILD:-$ROOT/build}/ledgerdiff
DB="" SCHEMA="" REPS=5
while (($#)); do
  case "$1" in
    --db) DB=$2; shift 2 ;;
    --schema) SCHEMA=$2; shift 2 ;;
    --reps) REPS=$2; shift 2 ;;
    *) echo "bench_jsonb_bound: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$DB" && -n "$SCHEMA" ]] || { echo "bench_jsonb_bound: --db and --schema are required" >&2; exit 2; }
WORK=$(mktemp -d /tmp/ldjsonb.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
psql_ms() { psql "$DB" -Atq -v ON_ERROR_STOP=1 -c '\timing on' -f "$1" 2>&1 | grep -o 'Time: [0-9.]*' | awk '{print $2}'; }
"$LD" digest --db "$DB" --schema "$SCHEMA" --engine server-hash --print-sql > "$WORK/all.sql"

echo "jsonb_hash_extended as a digest, on this server (t: different documents, equal hashes):"
psql "$DB" -Atq -F ' ' -c "
SELECT 'nesting [[[1,2]]] vs [1,2]:', jsonb_hash_extended('[[[1,2]]]', 7) = jsonb_hash_extended('[1,2]', 7);
SELECT 'numeric scale {\"a\":1.0} vs {\"a\":1.00}:', jsonb_hash_extended('{\"a\":1.0}', 7) = jsonb_hash_extended('{\"a\":1.00}', 7);
WITH a AS (SELECT array_agg(i) AS v FROM generate_series(0, 32) i)
SELECT '33 elements, first and last swapped:', jsonb_hash_extended(to_jsonb(v), 7) = jsonb_hash_extended(to_jsonb(v[33:33] || v[2:32] || v[1:1]), 7) FROM a;"
echo
printf "%-22s %12s %22s %22s %22s\n" table "floor ms" "jsonb text ms (/fl)" "server-hash ms (/fl)" "jsonb_hash ms (/fl)"
for t in history_effects history_operations; do
  grep -F "\"$SCHEMA\".\"$t\" t" "$WORK/all.sql" | head -1 | sed "s/TO STDOUT\$/TO '\/dev\/null'/" > "$WORK/sh_$t.sql"
  [[ -s "$WORK/sh_$t.sql" ]] || { echo "bench_jsonb_bound: no statement for $t" >&2; exit 3; }
  sed 's/(t."details")::text COLLATE "C"/jsonb_hash_extended(t."details", 0)/' "$WORK/sh_$t.sql" > "$WORK/jh_$t.sql"
  echo "COPY (SELECT * FROM \"$SCHEMA\".$t) TO '/dev/null'" > "$WORK/fl_$t.sql"
  echo "COPY (SELECT details FROM \"$SCHEMA\".$t) TO '/dev/null'" > "$WORK/jt_$t.sql"
  for q in fl jt sh jh; do : > "$WORK/m_${q}_$t"; done
  for ((i = 0; i < REPS; i++)); do
    for q in fl jt sh jh; do psql_ms "$WORK/${q}_$t.sql" >> "$WORK/m_${q}_$t"; done
  done
  med() { sort -n "$WORK/m_$1_$t" | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
  fl=$(med fl) jt=$(med jt) sh=$(med sh) jh=$(med jh)
  awk -v t="$t" -v fl="$fl" -v jt="$jt" -v sh="$sh" -v jh="$jh" \
    'BEGIN { printf "%-22s %12.0f %14.0f (%.2fx) %14.0f (%.2fx) %14.0f (%.2fx)\n", t, fl, jt, jt / fl, sh, sh / fl, jh, jh / fl }'
done
