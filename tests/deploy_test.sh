#!/usr/bin/env bash
# Offline checks of deploy/: the Kubernetes manifests against the Kubernetes v1.27 API schema
# (strict), the AWS Batch JSON against the AWS Batch API shapes, the Containerfile's structure,
# the shard-to-replica script of the cut-over Job, the AWS Batch entrypoint and submit.sh (against a
# stub `aws`). Every check has a negative twin: a deliberately broken copy that must be rejected.
# Every ledgerdiff command line in deploy/, the CI templates and the READMEs is checked against the
# CLI contract the binary itself prints (`ledgerdiff _docs contract`), and the schedulers' retry
# policies against the exit codes (fail on 1 and 2, retry 3), and what deploy/README.md, slurm/README.md
# and the systemd unit's comments say about each exit code against those policies (validate.py exit-docs).
# Usage: tests/deploy_test.sh [SOURCE_DIR [LEDGERDIFF]]   (ctest: deploy_test)
set -uo pipefail
src=$(cd "${1:-$(dirname "$0")/..}" && pwd)
bin=${2:-$src/build/ledgerdiff}
deploy=$src/deploy
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! "$bin" _docs contract --out "$tmp/contract.json"; then
  echo "deploy_test: cannot get the CLI contract from $bin (build it first)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
export LEDGERDIFF_CONTRACT=$tmp/contract.json

# The validator needs jsonschema and yaml (Debian: python3-jsonschema, python3-yaml via ci/bootstrap --for test).
py=""
for candidate in /usr/bin/python3 python3; do
  if "$candidate" -c 'import jsonschema, yaml' 2>/dev/null; then py=$candidate; break; fi
done
if [[ -z $py ]]; then
  echo "deploy_test: no python3 with jsonschema and yaml: run ci/bootstrap --for test" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; sed 's/^/     | /' "$tmp/out" | head -n 20; }

# expect NAME CODE PATTERN CMD...: CMD exits CODE and its output matches PATTERN (grep -E).
expect() {
  local name=$1 code=$2 pattern=$3
  shift 3
  "$@" >"$tmp/out" 2>&1
  local rc=$?
  if [[ $rc -eq $code ]] && grep -Eq -- "$pattern" "$tmp/out"; then ok "$name"; else
    echo "     exit $rc (want $code), output should match: $pattern" >>"$tmp/out"; bad "$name"; fi
}

validate() { "$py" "$deploy/validate.py" "$@"; }

# Schema and policy validation, positive and negative cases, in one process.
"$py" "$src/tests/deploy_validate_cases.py" "$src" >"$tmp/cases" 2>&1
cases_rc=$?
cat "$tmp/cases"
passed=$((passed + $(grep -c '^ok ' "$tmp/cases")))
failed=$((failed + $(grep -c '^FAIL ' "$tmp/cases")))
if [[ $cases_rc -ne 0 ]] && ! grep -q '^FAIL ' "$tmp/cases"; then failed=$((failed + 1)); echo "FAIL validation cases crashed"; fi

# A stub ledgerdiff that prints its arguments, one [arg] each, for the scripts below.
mkdir -p "$tmp/bin"
# shellcheck disable=SC2016  # the stub's own $@
printf '#!/bin/sh\nfor a in "$@"; do printf "[%%s]" "$a"; done\necho\n' >"$tmp/bin/ledgerdiff"
chmod +x "$tmp/bin/ledgerdiff"
# The scripts under test call `python3`: give them the interpreter found above (no version-manager shim).
ln -s "$(command -v "$py")" "$tmp/bin/python3"

echo "== cut-over Job: shard -> replica script (run with sh against the ConfigMap's values)"
"$py" - "$deploy/k8s/cutover/verify-range-shards-job.yaml" "$deploy/k8s/base/configmap.yaml" "$tmp" <<'PY'
import sys, yaml
job = next(yaml.safe_load_all(open(sys.argv[1])))
maps = {d["metadata"]["name"]: d["data"] for d in yaml.safe_load_all(open(sys.argv[2]))}
c = job["spec"]["template"]["spec"]["containers"][0]
assert c["command"] == ["/bin/sh", "-c"], c["command"]
open(f"{sys.argv[3]}/cutover.sh", "w").write(c["args"][0])
with open(f"{sys.argv[3]}/cutover.env", "w") as env:
    for e in c["env"]:
        if "value" in e: env.write(f"export {e['name']}='{e['value']}'\n")
        elif "configMapKeyRef" in (e.get("valueFrom") or {}):
            ref = e["valueFrom"]["configMapKeyRef"]
            env.write(f"export {e['name']}='{maps[ref['name']][ref['key']]}'\n")
    env.write(f"export COMPLETIONS={job['spec']['completions']}\n")
PY
extract_rc=$?
if ((extract_rc != 0)); then echo "FAIL could not extract the cut-over script"; echo "$passed passed, $((failed + 1)) failed"; exit 1; fi
cutover_ok=1
: >"$tmp/out"
# shellcheck disable=SC1091  # written just above
. "$tmp/cutover.env"
for ((k = 0; k < COMPLETIONS; k++)); do
  PATH=$tmp/bin:$PATH JOB_COMPLETION_INDEX=$k PGPASSWORD=hunter2 sh "$tmp/cutover.sh" >>"$tmp/cutover.out" 2>&1 || cutover_ok=0
done
read -r -a lefts <<<"$LEFT_REPLICA_HOSTS"
read -r -a rights <<<"$RIGHT_REPLICA_HOSTS"
for ((k = 0; k < COMPLETIONS; k++)); do
  r=$((k / SHARDS_PER_REPLICA))
  want="[verify-range][--range][$RANGE][--left][$LEFT_CONNINFO host=${lefts[r % ${#lefts[@]}]}][--right][$RIGHT_CONNINFO host=${rights[r % ${#rights[@]}]}][--shards][$COMPLETIONS][--shard][$k][--out][/parts/part-$k.ldm]"
  grep -qxF -- "$want" "$tmp/cutover.out" || { cutover_ok=0; echo "missing for shard $k: $want" >>"$tmp/out"; }
done
# With the committed values: 8 shards, 4 per replica -> shards 0-3 on replica 0, 4-7 on replica 1.
if ! grep -q "^shard 5 of 8: left old-db-replica-1.databases.svc, right new-db-replica-1" "$tmp/cutover.out"; then
  cutover_ok=0; echo "shard 5 is not on replica 1" >>"$tmp/out"
fi
[[ $(grep -c '^\[verify-range\]' "$tmp/cutover.out") -eq $COMPLETIONS ]] || cutover_ok=0
grep -q hunter2 "$tmp/cutover.out" && cutover_ok=0
cat "$tmp/cutover.out" >>"$tmp/out"
if ((cutover_ok)); then ok "cutover: one verify-range per shard on replica K/SHARDS_PER_REPLICA, own part, no password"
else bad "cutover: one verify-range per shard on replica K/SHARDS_PER_REPLICA, own part, no password"; fi

echo "== AWS Batch entrypoint (ledgerdiff-batch)"
expect "batch: {index} becomes the array index" 0 '^\[digest\]\[--out\]\[/parts/part-5\.ldm\]\[a 55 b\]\[\]$' \
  env PATH="$tmp/bin:$PATH" AWS_BATCH_JOB_ARRAY_INDEX=5 sh "$deploy/aws-batch/ledgerdiff-batch" \
  digest --out '/parts/part-{index}.ldm' 'a {index}{index} b' ''
expect "batch: arguments without {index} pass through outside an array" 0 '^\[manifest\]\[show\]\[/parts/full\.ldm\]$' \
  env -u AWS_BATCH_JOB_ARRAY_INDEX PATH="$tmp/bin:$PATH" sh "$deploy/aws-batch/ledgerdiff-batch" manifest show /parts/full.ldm
expect "batch rejects: {index} outside an array job" 2 "needs AWS_BATCH_JOB_ARRAY_INDEX" \
  env -u AWS_BATCH_JOB_ARRAY_INDEX -u JOB_COMPLETION_INDEX PATH="$tmp/bin:$PATH" \
  sh "$deploy/aws-batch/ledgerdiff-batch" digest --out '/parts/part-{index}.ldm'

echo "== AWS Batch submit.sh (stub aws: records each request, answers job ids)"
mkdir -p "$tmp/aws"
cat >"$tmp/bin/aws" <<EOF
#!/bin/sh
# stub: aws batch OPERATION --cli-input-json file://F ...
n=\$(ls "$tmp/aws" | wc -l)
for a in "\$@"; do case \$a in file://*) cp "\${a#file://}" "$tmp/aws/\$n-\$2.json" ;; esac; done
case \$2 in submit-job) echo "job-\$n" ;; register-job-definition) echo "ledgerdiff 1" ;; esac
EOF
chmod +x "$tmp/bin/aws"
expect "submit: register" 0 "^ledgerdiff 1$" env PATH="$tmp/bin:$PATH" bash "$deploy/aws-batch/submit.sh" register
expect "submit: digest = array, merge after it, diff after merge" 0 "ledgerdiff-diff job-3" \
  env PATH="$tmp/bin:$PATH" bash "$deploy/aws-batch/submit.sh" digest
expect "submit: workers for a run" 0 "ledgerdiff-workers job-4" \
  env PATH="$tmp/bin:$PATH" bash "$deploy/aws-batch/submit.sh" workers run-42 3
expect "submit: one worker is a plain job" 0 "ledgerdiff-workers job-5" \
  env PATH="$tmp/bin:$PATH" bash "$deploy/aws-batch/submit.sh" workers run-42 1
expect "submit rejects: workers without a run id" 2 "workers needs RUN_ID" \
  env PATH="$tmp/bin:$PATH" bash "$deploy/aws-batch/submit.sh" workers
expect "submit: every recorded request is a valid AWS Batch input" 0 "5 files, 0 problems" \
  validate aws-batch submit-job "$tmp"/aws/*-submit-job.json
expect "submit: the recorded job definition is valid" 0 "1 files, 0 problems" \
  validate aws-batch register-job-definition "$tmp"/aws/*-register-job-definition.json
expect "submit: dependencies chain and the merge names part-0..7, workers get the run" 0 "^chained$" \
  "$py" -c '
import json, sys
d = sys.argv[1]
merge, diff = json.load(open(f"{d}/2-submit-job.json")), json.load(open(f"{d}/3-submit-job.json"))
w3, w1 = json.load(open(f"{d}/4-submit-job.json")), json.load(open(f"{d}/5-submit-job.json"))
assert merge["dependsOn"] == [{"jobId": "job-1"}], merge["dependsOn"]
assert diff["dependsOn"] == [{"jobId": "job-2"}], diff["dependsOn"]
assert merge["containerOverrides"]["command"][4:] == [f"/parts/part-{k}.ldm" for k in range(8)]
assert w3["containerOverrides"]["command"] == ["worker", "--run", "run-42"] and w3["arrayProperties"] == {"size": 3}
assert "arrayProperties" not in w1
print("chained")' "$tmp/aws"
"$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); d["arrayProperties"]["size"] = 6; json.dump(d, open(sys.argv[2], "w"))' \
  "$deploy/aws-batch/submit-digest-array.json" "$tmp/size6.json"
mkdir -p "$tmp/aws-copy" && cp "$deploy"/aws-batch/* "$tmp/aws-copy/" && cp "$tmp/size6.json" "$tmp/aws-copy/submit-digest-array.json"
expect "submit rejects: an array size that is not the shard count (before submitting)" 2 "size 6 != parameters.shards 8" \
  env PATH="$tmp/bin:$PATH" bash "$tmp/aws-copy/submit.sh" digest

echo "== Prometheus alert rules (deploy/prometheus) with the real promtool"
rules=$deploy/prometheus
expect "alerts: promtool check rules" 0 "SUCCESS: 8 rules found" promtool check rules "$rules/ledgerdiff-alerts.yml"
expect "alerts: promtool test rules (each alert fires on its series, none on a healthy run)" 0 "SUCCESS" \
  promtool test rules "$rules/ledgerdiff-alerts.test.yml"
# Negative twins: a rule on a metric the tool does not write, and a divergence alert that no longer fires.
mkdir -p "$tmp/prom"
cp "$rules/ledgerdiff-alerts.test.yml" "$tmp/prom/"
sed 's/ledgerdiff_verdict{verdict="divergent"}/ledgerdiff_verdict{verdict="diverged"}/' \
  "$rules/ledgerdiff-alerts.yml" >"$tmp/prom/ledgerdiff-alerts.yml"
expect "alerts rejects: a divergence rule that matches no verdict the tool writes" 1 "FAILED" \
  promtool test rules "$tmp/prom/ledgerdiff-alerts.test.yml"
# Every metric the rules read is one the tool documents (report/README.md's table).
missing=""
for m in $(grep -oE 'ledgerdiff_[a-z_]+' "$rules/ledgerdiff-alerts.yml" | sort -u); do
  grep -q "\`$m\`" "$src/report/README.md" || missing="$missing $m"
done
if [[ -z $missing ]]; then ok "alerts: every metric they read is documented"; else
  echo "undocumented:$missing" >"$tmp/out"; bad "alerts: every metric they read is documented"; fi

echo "== systemd unit (deploy/systemd) with the real systemd-analyze"
# ExecStart must name an executable that exists: the copy runs the binary under test.
sed "s|/usr/bin/ledgerdiff|$bin|" "$deploy/systemd/ledgerdiff-follow.service" >"$tmp/ledgerdiff-follow.service"
analyze() {  # prints systemd-analyze's complaints and exits 1, or prints "clean"
  local said
  said=$(cd "$tmp" && systemd-analyze verify --man=no "$1" 2>&1)
  if [[ -n $said ]]; then echo "$said"; return 1; fi
  echo clean
}
expect "systemd: systemd-analyze verify finds nothing to say" 0 "^clean$" analyze "$tmp/ledgerdiff-follow.service"
sed 's/^RestartSec=/RestartSecs=/' "$tmp/ledgerdiff-follow.service" >"$tmp/bad-unit.service"
expect "systemd rejects: a misspelled directive" 1 "Unknown key 'RestartSecs'" analyze "$tmp/bad-unit.service"
# The unit's user, made for real by systemd-sysusers into an empty tree (no change to this host).
sysusers() {  # ROOT CONF: the passwd line of ledgerdiff that CONF creates under ROOT
  mkdir -p "$1/etc" && systemd-sysusers --root="$1" "$2" >/dev/null 2>&1 && grep '^ledgerdiff:' "$1/etc/passwd" ||
    { echo "no user ledgerdiff"; return 1; }
}
expect "systemd: the sysusers file makes user ledgerdiff, home /var/lib/ledgerdiff, no login" 0 \
  '^ledgerdiff:x:[0-9]+:[0-9]+:[^:]*:/var/lib/ledgerdiff:/usr/sbin/nologin$' \
  sysusers "$tmp/sysroot" "$deploy/systemd/ledgerdiff.sysusers.conf"
sed 's/^u ledgerdiff /u ledger /' "$deploy/systemd/ledgerdiff.sysusers.conf" >"$tmp/bad.sysusers.conf"
expect "systemd rejects: a sysusers file that makes another user" 1 '^no user ledgerdiff$' sysusers "$tmp/sysroot-bad" "$tmp/bad.sysusers.conf"

echo "== command lines in scripts, CI templates and READMEs against the binary's contract"
mapfile -t scripted < <(cd "$src" && ls ci/github/action.yml ci/gitlab/*.yml ci/soak deploy/aws-batch/submit.sh \
  deploy/slurm/* README.md ./*/README.md 2>/dev/null)
expect "commands: every ledgerdiff command line is in the contract" 0 " 0 problems" \
  validate commands "${scripted[@]/#/$src/}"
printf '#!/bin/sh\nledgerdiff digest --schema s --shard-count 4 --out x.ldm\nexec ledgerdiff manifest merge --out\n' >"$tmp/bad.sh"
expect "commands rejects: an unknown flag and a flag without its value" 1 \
  "flag --shard-count is not in the command contract" validate commands "$tmp/bad.sh"
expect "commands rejects: a flag without its value" 1 "flag --out needs a value" validate commands "$tmp/bad.sh"

echo "$passed passed, $failed failed"
((failed == 0))
