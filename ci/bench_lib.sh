# Sourced by the benchmarks (ci/bench_digest.sh, ci/bench_follow.sh, ci/bench_sparse.sh) before
# anything else: what they share. Sets ROOT (the checkout), BUILD (default $ROOT/build) and LD (the
# ledgerdiff binary under test); defines their argument parsing, their kept embedded cluster (made
# once and served by pg_ctl for psql, pg_dump and the peers), the floor's statements and medians.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
LD=$BUILD/ledgerdiff

# bench_args NAME SPEC... -- ARG...: sets the benchmark's variables from its arguments ARG. A SPEC
# "--opt=VAR" takes the argument after --opt as VAR's value; "--flag=VAR=VALUE" sets VAR to VALUE.
# Any other argument exits 2 with "NAME: unknown argument ARG" on stderr.
bench_args() {
  local bench_name=$1 bench_spec bench_var bench_known
  shift
  local -a bench_specs=()
  while [ "$1" != -- ]; do
    bench_specs+=("$1")
    shift
  done
  shift
  while (($#)); do
    bench_known=0
    for bench_spec in "${bench_specs[@]}"; do
      [ "$1" = "${bench_spec%%=*}" ] || continue
      bench_known=1
      bench_var=${bench_spec#*=}
      if [[ $bench_var == *=* ]]; then
        printf -v "${bench_var%%=*}" '%s' "${bench_var#*=}"
        shift
      else
        printf -v "$bench_var" '%s' "$2"
        shift 2
      fi
      break
    done
    ((bench_known)) || { echo "$bench_name: unknown argument $1" >&2; exit 2; }
  done
}

# median: the median of the numbers on stdin, one a line (the upper one of an even count).
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# now: seconds since the epoch, to the nanosecond.
now() { date +%s.%N; }

# bench_stellar_dataset LD RANGE DIR SCHEMA WORK: the digest benchmark's dataset (the reference
# ingester, 2 workers, --density stellar) in the kept cluster DIR, unless DIR holds it already.
bench_stellar_dataset() {
  local ld=$1 range=$2 dir=$3 schema=$4 work=$5
  if [ ! -f "$dir/data/PG_VERSION" ] || [ ! -f "$dir/.bench-$range-stellar" ]; then
    echo "== ingest $range (stellar) into schema $schema, 2 workers, cluster $dir"
    "$ld" ingest --range "$range" --schema "$schema" --workers 2 --job-size 2000 --density stellar \
      --keep-db "$dir" --fresh >"$work/ingest.txt"
    tail -2 "$work/ingest.txt"
    touch "$dir/.bench-$range-stellar"
  fi
}

# bench_serve DIR PORT WORK: starts the cluster DIR on a unix socket in DIR (as its owner when
# running as root), sets DB to its conninfo and defines as_owner; at exit the server stops and
# WORK is removed.
bench_serve() {
  BENCH_DIR=$1 BENCH_PORT=$2 BENCH_WORK=$3
  BENCH_OWNER=$(stat -c %U "$BENCH_DIR/data")
  as_owner() {
    if [ "$(id -u)" = 0 ] && [ "$BENCH_OWNER" != root ]; then su -s /bin/sh "$BENCH_OWNER" -c "$*"; else sh -c "$*"; fi
  }
  as_owner "pg_ctl -D '$BENCH_DIR/data' -l '$BENCH_DIR/bench-server.log' -w -o \"-k '$BENCH_DIR' -p $BENCH_PORT -c listen_addresses='' -c fsync=off -c shared_buffers=256MB\" start" >/dev/null
  bench_cleanup() {
    as_owner "pg_ctl -D '$BENCH_DIR/data' -m fast -w stop" >/dev/null 2>&1 || true
    rm -rf "$BENCH_WORK"
  }
  trap bench_cleanup EXIT
  DB="host=$BENCH_DIR port=$BENCH_PORT user=ledgerdiff dbname=postgres"
}

# bench_floor_sql SCHEMA FILE [DIGEST-ARG...]: the floor's statements over SCHEMA into FILE, one a
# line: the digest's own (digest --print-sql with DIGEST-ARGs, e.g. --range, one per table) with
# their joins and columns stripped down to SELECT * and the same range predicate; largest table
# first (pg_class.relpages, as the digest hands out its units), so that two at a time they end
# together: in a fixed order the last big table runs alone and the floor pays for a schedule, not
# for its rows.
bench_floor_sql() {
  local schema=$1 file=$2 sizes
  shift 2
  "$LD" digest --db "$DB" --schema "$schema" "$@" --chunk-ledgers 2000000000 --print-sql |
    sed -E 's/^COPY \(SELECT .* FROM ("[^"]+"\."[^"]+") t (.* )?WHERE (.*)\) TO STDOUT$/COPY (SELECT * FROM \1 t WHERE \3) TO STDOUT/' >"$file.unsorted"
  sizes=$(psql -X -At -F' ' -d "$DB" -c "SELECT relname, relpages FROM pg_class WHERE relnamespace = '$schema'::regnamespace AND relkind = 'r'")
  while IFS= read -r line; do
    local t
    t=$(sed -E 's/.* FROM "[^"]+"\."([^"]+)" t .*/\1/' <<<"$line")
    printf '%s\t%s\n' "$(awk -v t="$t" '$1 == t {print $2}' <<<"$sizes")" "$line"
  done <"$file.unsorted" | sort -t$'\t' -k1,1nr | cut -f2- >"$file"
}

# bench_run_sql FILE: FILE's statements, one a line, two at a time, their output to /dev/null.
bench_run_sql() { tr '\n' '\0' <"$1" | xargs -0 -P 2 -I{} psql -X -q -d "$DB" -c "{}" -o /dev/null; }
