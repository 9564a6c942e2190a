#!/usr/bin/env bash
# Submits the ledgerdiff Slurm jobs of this directory, chained by dependencies, and prints one line
# per job: NAME JOB_ID (the last line of `ingest` is: run RUN_ID).
#   submit.sh digest    LEDGERDIFF_SHARDS digest shards as an array (digest-shards.sbatch), then
#                       merge-diff.sbatch with --dependency=afterok:<array> (cancelled, not left
#                       pending, if a shard fails)
#   submit.sh cutover   LEDGERDIFF_SHARDS verify-range shards as an array, then merge-diff.sbatch
#                       with --dependency=afterany:<array>: the merge joins every shard's verdict,
#                       also when a shard exited 1 (divergent)
#   submit.sh ingest    plan.sbatch, then LEDGERDIFF_WORKERS worker tasks (workers.sbatch,
#                       afterok:<plan>), then wait.sbatch (afterany:<workers>)
# Settings come from the environment (sbatch passes it on to the jobs): see README.md. Extra sbatch
# flags for every job (partition, account, time limit...): LEDGERDIFF_SBATCH_ARGS, split on
# whitespace. Job output: LEDGERDIFF_LOGS (default LEDGERDIFF_PARTS/logs, else ./ledgerdiff-logs),
# one file per job or array task, kept across requeues (appended).
# Exit 2 before submitting anything when a setting is missing or inconsistent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export LEDGERDIFF_SLURM_DIR=$here

# The same input checks as the jobs (die, need, no_password, need_db); only the prefix differs.
# shellcheck source=common.sh
. "$here/common.sh"
die() { echo "submit.sh: $*" >&2; exit 2; }
count() {  # count VAR: a number >= 1
  [[ ${!1} =~ ^[1-9][0-9]*$ ]] || die "$1=${!1} is not a positive number"
}
command -v sbatch >/dev/null || die "sbatch not found: run this on a Slurm submit host"

read -ra extra <<<"${LEDGERDIFF_SBATCH_ARGS:-}"
logs=${LEDGERDIFF_LOGS:-${LEDGERDIFF_PARTS:+$LEDGERDIFF_PARTS/logs}}
logs=${logs:-$PWD/ledgerdiff-logs}

# submit NAME SCRIPT SBATCH_ARGS...: prints NAME JOB_ID, sets $job.
submit() {
  local name=$1 script=$2
  shift 2
  mkdir -p "$logs" || die "cannot create the log directory $logs"
  local out="$logs/%x-%j.out"
  case " $* " in *" --array="*) out="$logs/%x-%A_%a.out" ;; esac
  job=$(sbatch --parsable --output="$out" "${extra[@]}" "$@" "$here/$script") || die "sbatch $script failed"
  job=${job%%;*}  # --parsable prints JOB_ID[;CLUSTER]
  echo "$name $job"
}

case ${1:-} in
  digest)
    need LEDGERDIFF_SCHEMA LEDGERDIFF_RANGE LEDGERDIFF_PARTS LEDGERDIFF_SHARDS
    count LEDGERDIFF_SHARDS
    need_db
    no_password LEDGERDIFF_DIFF_AGAINST
    export LEDGERDIFF_SHARDS
    submit ledgerdiff-digest digest-shards.sbatch --array="0-$((LEDGERDIFF_SHARDS - 1))"
    submit ledgerdiff-merge merge-diff.sbatch --dependency="afterok:$job" --kill-on-invalid-dep=yes
    ;;
  cutover)
    need LEDGERDIFF_RANGE LEDGERDIFF_PARTS LEDGERDIFF_SHARDS LEDGERDIFF_LEFT LEDGERDIFF_RIGHT
    count LEDGERDIFF_SHARDS
    no_password LEDGERDIFF_LEFT LEDGERDIFF_RIGHT
    export LEDGERDIFF_SHARDS
    submit ledgerdiff-cutover verify-range-shards.sbatch --array="0-$((LEDGERDIFF_SHARDS - 1))"
    submit ledgerdiff-merge merge-diff.sbatch --dependency="afterany:$job"
    ;;
  ingest)
    need LEDGERDIFF_RANGE LEDGERDIFF_SCHEMA LEDGERDIFF_WORKERS
    count LEDGERDIFF_WORKERS
    need_db
    export LEDGERDIFF_RUN_ID=${LEDGERDIFF_RUN_ID:-$(date -u +%Y%m%d_%H%M%S)_slurm$$}
    submit ledgerdiff-plan plan.sbatch
    submit ledgerdiff-worker workers.sbatch --array="0-$((LEDGERDIFF_WORKERS - 1))" \
      --dependency="afterok:$job" --kill-on-invalid-dep=yes
    submit ledgerdiff-wait wait.sbatch --dependency="afterany:$job"
    echo "run $LEDGERDIFF_RUN_ID"
    ;;
  *)
    die "usage: submit.sh digest | cutover | ingest   (settings from the environment: $here/README.md)"
    ;;
esac
