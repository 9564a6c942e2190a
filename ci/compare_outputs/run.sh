#!/usr/bin/env bash
# Runs the same ledgerdiff commands (verify-range identical, divergent, one-sided gap, --out,
# shards and merge, diff, digest, follow, usage errors) with one binary into OUTDIR: stdout,
# stderr, exit code and every file written. Run it with the binary before and after a change,
# then compare.sh OLD NEW. The schemas (ledgers 2:1001) and database come from the environment:
#   LD_CMP_DB (conninfo), LD_CMP_SERIAL, LD_CMP_PARALLEL (equal), LD_CMP_BUGGED (ingest
#   --inject-bug mutate-row@500), LD_CMP_GAPPY (--inject-bug skip-ledger@700).
#   usage: run.sh BINARY OUTDIR
set -u
BIN=$1; OUT=$2
C=${LD_CMP_DB:?conninfo of the database holding the schemas}
: "${LD_CMP_SERIAL:?}" "${LD_CMP_PARALLEL:?}" "${LD_CMP_BUGGED:?}" "${LD_CMP_GAPPY:?}"
rm -rf "$OUT"; mkdir -p "$OUT"
run() {  # name, args...
  local name=$1; shift
  (cd "$OUT" && "$BIN" "$@" > "$name.out" 2> "$name.err"; echo $? > "$name.rc")
}
L=(--left "$C" --left-schema $LD_CMP_SERIAL)
run vr-identical-json verify-range --range 2:1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_PARALLEL --format json --skip-state
run vr-identical-text verify-range --range 2:1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_PARALLEL --skip-state
run vr-divergent-json verify-range --range 2:1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_BUGGED --format json --skip-state
run vr-divergent-text verify-range --range 2:1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_BUGGED --skip-state --all
run vr-divergent-files verify-range --range 2:1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_BUGGED --skip-state --markdown r.md --junit r.xml --report rep
run vr-gap-json verify-range --range 2:1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_GAPPY --format json --skip-state
run vr-out verify-range --range 2:1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_PARALLEL --skip-state --out m.ldm
run manifest-show manifest show m.ldm
run vr-shard0 verify-range --range 2:1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_BUGGED --shards 2 --shard 0 --out p0.ldm
run vr-shard1 verify-range --range 2:1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_BUGGED --shards 2 --shard 1 --out p1.ldm
run merge manifest merge p0.ldm p1.ldm --out merged.ldm --format json
run diff-json diff --db "$C" $LD_CMP_SERIAL $LD_CMP_BUGGED --range 2:1001 --format json
run digest-json digest --db "$C" --schema $LD_CMP_SERIAL --range 2:1001 --format json
run digest-out digest --db "$C" --schema $LD_CMP_SERIAL --range 2:1001 --out d.ldm
run follow-json verify-range --follow --from 2 --until 1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_PARALLEL --state st --skip-state --format json --interval 0.2
run follow-div verify-range --follow --from 2 --until 1001 "${L[@]}" --right "$C" --right-schema $LD_CMP_BUGGED --state st2 --skip-state --interval 0.2
run err-noleft verify-range --range 2:1001 --right "$C"
run err-badrange verify-range --range 9:2 "${L[@]}" --right "$C"
run err-typo verify-range --lefft x
