#!/usr/bin/env bash
# Registers the ledgerdiff job definition and submits AWS Batch jobs from the JSON files beside this
# script (edit them first: image, queue, roles, EFS, secret ARN, range, schema, sizes).
# Usage:
#   submit.sh register          aws batch register-job-definition --cli-input-json file://job-definition.json
#   submit.sh digest            the array job of submit-digest-array.json (one child per shard), then
#                               submit-merge.json once every child succeeded, then submit-diff.json
#   submit.sh workers RUN_ID [N]  N ingestion workers (default: the file's size) for a run made by
#                               `ledgerdiff plan`; follow with `ledgerdiff wait --run RUN_ID`
# Prints one line per submitted job: NAME JOB_ID. Needs the AWS CLI (configured) and python3.
# INVARIANT: the merge lists exactly part-0..part-(size-1) of the array job it depends on, and the
# array size equals the `shards` parameter (else exit 2 before submitting anything).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

die() { echo "submit.sh: $*" >&2; exit 2; }

# edit_json IN OUT PYTHON: writes the JSON of IN to OUT after running PYTHON on it as `doc`
# (extra arguments are sys.argv[3:]).
edit_json() {
  python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(doc, open(sys.argv[2], "w"), indent=1)
' "$1" "$2" "$3" "${@:4}"
}

submit() {  # submit FILE -> prints the job id
  aws batch submit-job --cli-input-json "file://$1" --query jobId --output text
}

case ${1:-} in
  register)
    aws batch register-job-definition --cli-input-json "file://$here/job-definition.json" \
      --query '[jobDefinitionName, revision]' --output text
    ;;
  digest)
    size=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["arrayProperties"]["size"])' \
      "$here/submit-digest-array.json")
    shards=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["parameters"]["shards"])' \
      "$here/submit-digest-array.json")
    [[ $size == "$shards" ]] || die "submit-digest-array.json: arrayProperties.size $size != parameters.shards $shards"
    array_id=$(submit "$here/submit-digest-array.json")
    echo "ledgerdiff-digest-shards $array_id"
    edit_json "$here/submit-merge.json" "$tmp/merge.json" '
doc["dependsOn"] = [{"jobId": sys.argv[4]}]
doc["containerOverrides"]["command"] = ["manifest", "merge", "--out", "/parts/full.ldm"] + \
    [f"/parts/part-{k}.ldm" for k in range(int(sys.argv[5]))]' "$array_id" "$size"
    merge_id=$(submit "$tmp/merge.json")
    echo "ledgerdiff-merge $merge_id"
    edit_json "$here/submit-diff.json" "$tmp/diff.json" 'doc["dependsOn"] = [{"jobId": sys.argv[4]}]' "$merge_id"
    diff_id=$(submit "$tmp/diff.json")
    echo "ledgerdiff-diff $diff_id"
    ;;
  workers)
    run_id=${2:-}
    [[ -n $run_id ]] || die "workers needs RUN_ID (printed by ledgerdiff plan)"
    [[ ${3:-} =~ ^[0-9]*$ ]] || die "workers: N must be a number, got '${3:-}'"
    edit_json "$here/submit-workers-array.json" "$tmp/workers.json" '
doc["containerOverrides"]["command"] = ["worker", "--run", sys.argv[4]]
if sys.argv[5]:
    n = int(sys.argv[5])  # an array job has 2..10000 children; one worker is a plain job
    if n > 1: doc["arrayProperties"] = {"size": n}
    else: doc.pop("arrayProperties", None)' "$run_id" "${3:-}"
    workers_id=$(submit "$tmp/workers.json")
    echo "ledgerdiff-workers $workers_id"
    ;;
  *)
    die "usage: submit.sh register | digest | workers RUN_ID [N]"
    ;;
esac
