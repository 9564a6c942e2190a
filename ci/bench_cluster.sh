# Sourced by the benchmarks (ci/bench_digest.sh, ci/bench_follow.sh, ci/bench_sparse.sh): their
# kept embedded cluster, made once and served by pg_ctl for psql, pg_dump and the peers.

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
