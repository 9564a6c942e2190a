#!/usr/bin/env bash
# A subtly WRONG external ingester, the negative control of tests/verify_test.cc.
#
#   copy_off_by_one.sh FROM TO TARGET_SCHEMA
#
# Treats TO as exclusive (the classic `< to` instead of `<= to`): it copies FROM..TO-1, so the
# last ledger of every job is never written. Serially (one job over the whole range) that loses
# only the range's last ledger; in parallel it loses the last ledger of every job, and verify
# must name the last ledger of the first job as the first divergent ledger.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 FROM TO TARGET_SCHEMA" >&2
  exit 2
fi
if ! [[ $2 =~ ^[0-9]+$ ]]; then
  echo "$0: TO must be a ledger number, got '$2'" >&2
  exit 2
fi
exec "$(dirname "$0")/copy_from_source.sh" "$1" "$(($2 - 1))" "$3"
