# Sourced by the *.sbatch scripts beside it (not run on its own). Every check failing here is bad
# input: exit 2, which the exit code policy never requeues (README.md, "Exit codes").
# shellcheck disable=SC2034  # shard, shards and resume are read by the scripts that source this
die() { echo "ledgerdiff slurm: $*" >&2; exit 2; }

# need VAR...: each must be set and non-empty (submit.sh exports them; or sbatch --export).
need() {
  local v
  for v; do [[ -n ${!v:-} ]] || die "$v is not set (see deploy/slurm/README.md)"; done
}

# no_password VAR...: conninfos that go on a command line (visible in ps and in Slurm's job records)
# must not hold a password; it belongs in PGPASSWORD or a PGPASSFILE.
no_password() {
  local v
  for v; do
    case ${!v:-} in
      *password=* | *://*:*@*) die "$v holds a password: pass it as PGPASSWORD or PGPASSFILE, never in a conninfo" ;;
    esac
  done
}

# The database: ledgerdiff reads LEDGERDIFF_DB (else PG*) itself, so no conninfo is on the command
# line. Without one it would start an empty throwaway server of its own, which no job wants.
need_db() {
  [[ -n ${LEDGERDIFF_DB:-}${PGHOST:-}${PGSERVICE:-} ]] ||
    die "no database: set LEDGERDIFF_DB (conninfo without the password) or PGHOST/PGSERVICE"
}
# A command that writes (plan, worker) uses only LEDGERDIFF_DB or --db: PG* alone is ignored by it.
need_write_db() {
  [[ -n ${LEDGERDIFF_DB:-} ]] ||
    die "no database to write into: set LEDGERDIFF_DB (conninfo without the password); ledgerdiff's writing commands ignore PG* alone"
}

# array_shard: this task's shard (SLURM_ARRAY_TASK_ID) and the shard count, which must be the
# array's size (LEDGERDIFF_SHARDS when given, else the array size).
array_shard() {
  [[ -n ${SLURM_ARRAY_TASK_ID:-} ]] || die "not a Slurm array task: submit with sbatch --array=0-(N-1)"
  shards=${LEDGERDIFF_SHARDS:-$SLURM_ARRAY_TASK_COUNT}
  if [[ ${SLURM_ARRAY_TASK_MIN:-} != 0 || ${SLURM_ARRAY_TASK_MAX:-} != $((shards - 1)) ||
    ${SLURM_ARRAY_TASK_COUNT:-} != "$shards" ]]; then
    die "array ${SLURM_ARRAY_TASK_MIN:-?}-${SLURM_ARRAY_TASK_MAX:-?} (${SLURM_ARRAY_TASK_COUNT:-?} tasks) does not match $shards shards: submit with --array=0-$((shards - 1))"
  fi
  shard=$SLURM_ARRAY_TASK_ID
}

# resume_if_requeued OUT: --resume when this job is a requeued attempt (Slurm or ledgerdiff-slurm
# ran it again) and its previous attempt left a checkpoint OUT.partial, so the ledgers it digested
# are not read again. A first attempt never resumes: a checkpoint there is someone else's, and
# ledgerdiff refuses it (exit 2) rather than guess.
resume=()
resume_if_requeued() {
  resume=()
  if ((${SLURM_RESTART_COUNT:-0} > 0)) && [[ -s $1.partial ]]; then resume=(--resume); fi
}

ledgerdiff_slurm() { "$LEDGERDIFF_SLURM_DIR/ledgerdiff-slurm" "$@"; }
