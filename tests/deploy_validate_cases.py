#!/usr/bin/env python3
"""The validation cases of tests/deploy_test.sh, in one process (deploy/validate.py imported once):
every file in deploy/ must pass, and each deliberately broken copy must be rejected with its reason.
Usage: deploy_validate_cases.py SOURCE_DIR   Prints ok/FAIL per case; exit 1 if any case failed."""
import contextlib
import io
import json
import pathlib
import re
import shutil
import sys
import tempfile

import yaml

src = pathlib.Path(sys.argv[1]).resolve()
deploy = src / "deploy"
sys.path.insert(0, str(deploy))
sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
import validate  # noqa: E402  (deploy/validate.py)

tmp = pathlib.Path(tempfile.mkdtemp())
failed = passed = 0


def run(args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            rc = validate.main([str(a) for a in args])
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue()


def expect(name, code, pattern, args):
    global failed, passed
    rc, out = run(args)
    if rc == code and re.search(pattern, out, re.M):
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: exit {rc} (want {code}), output should match {pattern!r}")
        print("\n".join("     | " + line for line in out.splitlines()[:20]))


def k8s_files(root):
    return sorted(root.rglob("*.yaml"))


# ------------------------------------------------------------------ Kubernetes
def pod(docs): return docs[0]["spec"]["template"]["spec"]
def container(docs): return pod(docs)["containers"][0]


def mutated_k8s(rel, edit):
    root = tmp / "k8s"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(deploy / "k8s", root)
    path = root / rel
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    edit(docs)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return root


def negative_k8s(name, rel, edit, pattern):
    expect(f"k8s rejects: {name}", 1, pattern, ["k8s", "--policy", *k8s_files(mutated_k8s(rel, edit))])


def set_(obj, key, value): obj[key] = value


def negative_systemd(name, edit, pattern):
    path = tmp / "ledgerdiff-follow.service"
    path.write_text(edit((deploy / "systemd/ledgerdiff-follow.service").read_text()))
    for f in (deploy / "systemd").glob("*.sysusers.conf"):  # the user the unit runs as
        shutil.copy(f, tmp / f.name)
    expect(f"systemd rejects: {name}", 1, pattern, ["systemd", path])


print("== Kubernetes manifests")
expect("k8s: every manifest is valid (strict schema + policy)", 0, r" 0 problems",
       ["k8s", "--policy", *k8s_files(deploy / "k8s")])
expect("k8s: a YAML round trip of the manifests is still valid", 0, r" 0 problems",
       ["k8s", "--policy", *k8s_files(mutated_k8s("digest/digest-shards-job.yaml", lambda d: None))])
negative_k8s("completionMode not in the enum", "digest/digest-shards-job.yaml",
             lambda d: set_(d[0]["spec"], "completionMode", "Indexd"), r"completionMode: 'Indexd' is not one of")
negative_k8s("parallelism that is not an integer", "digest/digest-shards-job.yaml",
             lambda d: set_(d[0]["spec"], "parallelism", "four"), r"parallelism: 'four' is not of type 'integer'")
negative_k8s("a misspelled field (strict)", "ingest/workers-job.yaml",
             lambda d: set_(d[0]["spec"], "parralelism", 8), r"Additional properties are not allowed \('parralelism'")
negative_k8s("a Job without a pod template", "ingest/plan-job.yaml",
             lambda d: d[0]["spec"].pop("template"), r"'template' is a required property")
negative_k8s("a resource request that is not a quantity", "digest/merge-diff-job.yaml",
             lambda d: set_(container(d)["resources"]["requests"], "cpu", [1]), r"requests\.cpu")
negative_k8s("a kind with no schema", "base/pvc.yaml",
             lambda d: d[0].update(apiVersion="apps/v1", kind="StatefulSet"),
             r"no schema for apiVersion 'apps/v1' kind 'StatefulSet'")
negative_k8s("a follower Deployment of two replicas", "follow/deployment.yaml",
             lambda d: set_(d[0]["spec"], "replicas", 2), r"needs replicas: 1 and strategy Recreate")
negative_k8s("a follower Deployment rolled out with both pods up", "follow/deployment.yaml",
             lambda d: set_(d[0]["spec"], "strategy", {"type": "RollingUpdate"}), r"needs replicas: 1 and strategy Recreate")
negative_k8s("a follower flag outside the contract", "follow/deployment.yaml",
             lambda d: set_(container(d)["args"], 1, "--folow"),
             r"ledgerdiff verify-range: flag --folow is not in the command contract")
negative_k8s("a follower whose state volume is not mounted", "follow/deployment.yaml",
             lambda d: set_(container(d), "volumeMounts", container(d)["volumeMounts"][1:]),
             r"--state /var/lib/ledgerdiff/follow is not on a mounted volume")
negative_k8s("completions that disagree with --shards", "digest/digest-shards-job.yaml",
             lambda d: d[0]["spec"].update(completions=5, parallelism=5),
             r"completions 5, parallelism 5 and --shards \['4'\] must agree")
negative_k8s("a merge that misses a part", "digest/merge-diff-job.yaml",
             lambda d: pod(d)["initContainers"][0]["args"].remove("/parts/part-3.ldm"),
             r"merges 3 parts .* writes exactly part-0..part-3")
negative_k8s("a merge of the other Job's volume", "cutover/merge-job.yaml",
             lambda d: set_(pod(d)["initContainers"][0]["volumeMounts"][0], "subPath", "digest"),
             r"merges 8 parts .* writes exactly part-0..part-3")
negative_k8s("a password as a literal env value", "ingest/workers-job.yaml",
             lambda d: set_(container(d)["env"], 1, {"name": "PGPASSWORD", "value": "hunter2"}),
             r"env PGPASSWORD: a secret must come from a Secret")
negative_k8s("a password inside a conninfo", "base/configmap.yaml",
             lambda d: set_(d[1]["data"], "LEFT_CONNINFO", d[1]["data"]["LEFT_CONNINFO"] + " password=hunter2"),
             r"LEFT_CONNINFO: a password written inline")
negative_k8s("a pod that may run as root", "ingest/wait-job.yaml",
             lambda d: set_(pod(d)["securityContext"], "runAsUser", 0),
             r"needs runAsNonRoot: true and a non-zero runAsUser")
negative_k8s("a container without resource requests", "cutover/verify-range-shards-job.yaml",
             lambda d: container(d)["resources"].pop("requests"), r"resources\.requests: needs cpu and memory")
negative_k8s("an $(VAR) in args that no env var declares", "digest/digest-shards-job.yaml",
             lambda d: set_(container(d)["args"], 2, "$(SCHEMAS)"), r"\$\(SCHEMAS\) names no env var")
negative_k8s("a flag outside the command contract", "digest/digest-shards-job.yaml",
             lambda d: set_(container(d)["args"], 5, "--shard-count"),
             r"ledgerdiff digest: flag --shard-count is not in the command contract")
negative_k8s("a contract typo inside the cut-over shell script", "cutover/verify-range-shards-job.yaml",
             lambda d: set_(container(d)["args"], 0, container(d)["args"][0].replace("--shard \"", "--shardz \"")),
             r"ledgerdiff verify-range: flag --shardz is not in the command contract")
negative_k8s("exit 2 retried by an Indexed Job", "digest/digest-shards-job.yaml",
             lambda d: set_(d[0]["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"], "values", [1]),
             r"spec.podFailurePolicy: exit codes \[2\] must fail the Job")
negative_k8s("exit 3 failing the workers' Job", "ingest/workers-job.yaml",
             lambda d: set_(d[0]["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"], "values", [1, 2, 3]),
             r"exit 3 \(runtime failure\) must be retried")
negative_k8s("a flag that needs a value given none", "ingest/wait-job.yaml",
             lambda d: container(d)["args"].append("--timeout"), r"ledgerdiff wait: flag --timeout needs a value")
negative_k8s("a command that does not exist", "ingest/wait-job.yaml",
             lambda d: set_(container(d)["args"], 0, "await"), r"ledgerdiff await: not a command of the contract")
root = mutated_k8s("base/pvc.yaml", lambda d: None)
shutil.move(root / "examples" / "secret.example.yaml", root / "base" / "secret.yaml")
expect("k8s rejects: a Secret among the applied manifests", 1, r"a Secret outside deploy/k8s/examples/",
       ["k8s", "--policy", *k8s_files(root)])

# ------------------------------------------------------------------ AWS Batch
print("== AWS Batch JSON")
aws = deploy / "aws-batch"
expect("aws: the job definition is a valid RegisterJobDefinition input", 0, r" 0 problems",
       ["aws-batch", "register-job-definition", aws / "job-definition.json"])
expect("aws: the submissions are valid SubmitJob inputs", 0, r"4 files, 0 problems",
       ["aws-batch", "submit-job", *sorted(aws.glob("submit-*.json"))])


def negative_aws(name, kind, file, edit, pattern):
    doc = json.loads((aws / file).read_text())
    edit(doc)
    (tmp / "aws.json").write_text(json.dumps(doc))
    expect(f"aws rejects: {name}", 1, pattern, ["aws-batch", kind, tmp / "aws.json"])


negative_aws("an array size given as a string", "submit-job", "submit-digest-array.json",
             lambda d: set_(d["arrayProperties"], "size", "8"), r"size: '8' is not of type 'integer'")
negative_aws("an array of one child", "submit-job", "submit-digest-array.json",
             lambda d: set_(d["arrayProperties"], "size", 1), r"size: 1 is less than the minimum of 2")
negative_aws("a submission without a queue", "submit-job", "submit-merge.json",
             lambda d: d.pop("jobQueue"), r"'jobQueue' is a required property")
negative_aws("an unknown parameter", "submit-job", "submit-workers-array.json",
             lambda d: set_(d, "arrayProperty", {"size": 2}), r"Additional properties are not allowed \('arrayProperty'")
negative_aws("11 attempts", "register-job-definition", "job-definition.json",
             lambda d: set_(d["retryStrategy"], "attempts", 11), r"attempts: 11 is greater than the maximum of 10")
negative_aws("a job type that does not exist", "register-job-definition", "job-definition.json",
             lambda d: set_(d, "type", "containers"), r"type: 'containers' is not one of \['container', 'multinode'\]")
negative_aws("a secret without valueFrom", "register-job-definition", "job-definition.json",
             lambda d: d["containerProperties"]["secrets"][0].pop("valueFrom"), r"'valueFrom' is a required property")
negative_aws("the password in the environment", "register-job-definition", "job-definition.json",
             lambda d: d["containerProperties"]["environment"].append({"name": "PGPASSWORD", "value": "hunter2"}),
             r"environment PGPASSWORD: a secret belongs in `secrets`")
negative_aws("a flag outside the command contract", "submit-job", "submit-workers-array.json",
             lambda d: set_(d["containerOverrides"], "command", ["worker", "--run-id", "7"]),
             r"ledgerdiff worker: flag --run-id is not in the command contract")
negative_aws("exit 1 retried", "register-job-definition", "job-definition.json",
             lambda d: d["retryStrategy"]["evaluateOnExit"].insert(0, {"onExitCode": "1", "action": "RETRY"}),
             r"retryStrategy: exit 1 must EXIT")
negative_aws("exit 2 retried (no catch-all EXIT)", "submit-job", "submit-workers-array.json",
             lambda d: d["retryStrategy"]["evaluateOnExit"].pop(),
             r"retryStrategy: exit 2 must EXIT")
negative_aws("exit 3 not retried", "register-job-definition", "job-definition.json",
             lambda d: d["retryStrategy"]["evaluateOnExit"].pop(0),
             r"retryStrategy: exit 3 \(runtime failure\) must RETRY")
negative_aws("a root user", "register-job-definition", "job-definition.json",
             lambda d: set_(d["containerProperties"], "user", "0"), r"must be a non-root uid")

# ------------------------------------------------------------------ Containerfile
print("== Containerfile")
expect("containerfile: multi-stage, Debian 12, non-root, no secrets", 0, r" 0 problems",
       ["containerfile", deploy / "Containerfile"])
original = (deploy / "Containerfile").read_text()


def negative_containerfile(name, edit, pattern):
    text = edit(original)
    assert text != original, f"the edit for {name!r} changed nothing"
    (tmp / "Containerfile").write_text(text)
    expect(f"containerfile rejects: {name}", 1, pattern, ["containerfile", tmp / "Containerfile"])


negative_containerfile("USER root", lambda t: re.sub(r"(?m)^USER .*", "USER root", t), r"USER is root")
negative_containerfile("no USER", lambda t: re.sub(r"(?m)^USER .*\n", "", t), r"USER is unset \(root\)")
negative_containerfile("a shell-form ENTRYPOINT", lambda t: t.replace('ENTRYPOINT ["ledgerdiff"]', "ENTRYPOINT ledgerdiff"),
                       r"ENTRYPOINT must be exec form")
negative_containerfile("a password in ENV", lambda t: t.replace("ENV LEDGERDIFF_PG_BINDIR", "ENV PGPASSWORD=hunter2 LEDGERDIFF_PG_BINDIR"),
                       r"no secret in an image")
negative_containerfile("a non-Debian base", lambda t: t.replace("FROM ${RUNTIME_BASE} AS runtime-base", "FROM ubuntu:24.04 AS runtime-base"),
                       r"FROM ubuntu:24.04: bases must be Debian 12")
negative_containerfile("a non-Debian default base", lambda t: t.replace("ARG RUNTIME_BASE=debian:12-slim", "ARG RUNTIME_BASE=ubuntu:24.04"),
                       r"FROM ubuntu:24.04: bases must be Debian 12")
negative_containerfile("a base variable without a default", lambda t: t.replace("ARG BUILD_BASE=debian:12\n", "ARG BUILD_BASE\n"),
                       r"FROM \$\{BUILD_BASE\}: a variable without a default")
negative_containerfile("a secret in a global ARG", lambda t: t.replace("ARG BUILD_BASE=", "ARG PGPASSWORD=hunter2\nARG BUILD_BASE="),
                       r"no secret in an image")
negative_containerfile("a missing runtime library", lambda t: t.replace(" libxxhash0 ", " "),
                       r"runtime package libxxhash0 is not installed")
negative_containerfile("a single stage", lambda t: t[t.index("FROM ${RUNTIME_BASE}"):].replace("${RUNTIME_BASE}", "debian:12-slim", 1),
                       r"not multi-stage|must RUN ci/bootstrap")

# ------------------------------------------------------------------ systemd
print("== systemd unit")
expect("systemd: the follower's unit (contract, layout, restarts, hardening)", 0, r" 0 problems",
       ["systemd", deploy / "systemd/ledgerdiff-follow.service"])
negative_systemd("a flag outside the contract", lambda t: t.replace("--scrub-period", "--scrub-every"),
                 r"ledgerdiff verify-range: flag --scrub-every is not in the command contract")
negative_systemd("root", lambda t: t.replace("User=ledgerdiff", "User=root"), r"User: must be a non-root user")
negative_systemd("restarting on a divergence", lambda t: t.replace("RestartPreventExitStatus=1 2", "RestartPreventExitStatus=2"),
                 r"RestartPreventExitStatus: exit 1 and 2 are answers")
negative_systemd("the state elsewhere than the documented layout",
                 lambda t: t.replace("--state /var/lib/ledgerdiff/follow", "--state /srv/follow"),
                 r"--state /srv/follow: the layout is /var/lib/ledgerdiff/follow")
negative_systemd("a user nothing creates", lambda t: t.replace("User=ledgerdiff", "User=ledger"),
                 r"User=ledger: no \*\.sysusers\.conf beside the unit creates it")
negative_systemd("a state directory systemd does not create", lambda t: t.replace("StateDirectory=ledgerdiff", "StateDirectory=ld"),
                 r"--state /var/lib/ledgerdiff/follow: not under StateDirectory=")
negative_systemd("a metrics directory the sandbox keeps read-only",
                 lambda t: t.replace("ReadWritePaths=/var/lib/prometheus/node-exporter\n", ""),
                 r"--metrics: /var/lib/prometheus/node-exporter is not in ReadWritePaths=")
negative_systemd("a password file in a home the sandbox hides",
                 lambda t: t.replace("LoadCredential=pgpass:/etc/ledgerdiff/pgpass\n", ""),
                 r"the password file: needs LoadCredential=")
negative_systemd("a password in the unit", lambda t: t.replace("--left ${LEFT_CONNINFO}", "--left 'password=hunter2 ${LEFT_CONNINFO}'"),
                 r"a password written inline")

# ------------------------------------------------------------------ exit codes in the docs
print("== exit-code statements in the docs against the policies")
expect("exit-docs: deploy/README, slurm/README and the unit say what the manifests, Batch JSON, the Slurm wrapper "
       "and the unit do (1 and 2 never retried, 3 retried)", 0, r"validate\.py exit-docs: \d+ statements and \d+ table cells in 3 files, 0 problems",
       ["exit-docs", deploy, src / "README.md"])


def negative_docs(name, rel, old, new, pattern):
    """A copy of deploy/ (and the top README) with OLD replaced by NEW in REL must be rejected."""
    root = tmp / "docs"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(deploy, root / "deploy", ignore=shutil.ignore_patterns("schemas", "__pycache__"))
    shutil.copy(src / "README.md", root / "README.md")
    path = root / rel
    text = path.read_text()
    assert old in text, f"the edit for {name!r} finds nothing to change in {rel}"
    path.write_text(text.replace(old, new, 1))
    expect(f"exit-docs rejects: {name}", 1, pattern, ["exit-docs", root / "deploy", root / "README.md"])


negative_docs("a README sentence that says exit 2 is retried (the text before issue 43)", "deploy/README.md",
              "and exit 2 (bad input: an unknown run id, a bad conninfo) fail it at\nonce; exit 3",
              "fails it at once; exit 2 is retried; exit 3",
              r"README\.md:\d+: says exit 2 is retried, the policy: final")
negative_docs("a Slurm README that says exit 1 is requeued", "deploy/slurm/README.md",
              "the wrapper requeues on exit 3 only", "the wrapper requeues on exit 1 and 3",
              r"slurm/README\.md:\d+: says exit 1 is retried")
negative_docs("the table: systemd restarts exit 1, the unit does not", "deploy/README.md",
              "| not restarted (`RestartPreventExitStatus=`) |", "| restarted after `RestartSec=` |",
              r"column 'follower, systemd' says exit 1 is retried .*, the files make it final")
negative_docs("a unit that restarts exit 1 while the docs say it does not", "deploy/systemd/ledgerdiff-follow.service",
              "RestartPreventExitStatus=1 2", "RestartPreventExitStatus=2",
              r"column 'follower, systemd' says exit 1 is final .*, the files make it retried")
negative_docs("a Job that retries exit 2 while the docs say none does", "deploy/k8s/ingest/workers-job.yaml",
              "operator: In, values: [1, 2]}", "operator: In, values: [1]}",
              r"column 'Kubernetes Jobs \(`podFailurePolicy`\)' says exit 2 is final .*, the files make it mixed")
negative_docs("a Batch submission that retries everything", "deploy/aws-batch/submit-merge.json",
              '{"onExitCode": "*", "action": "EXIT"}', '{"onExitCode": "*", "action": "RETRY"}',
              r"column 'AWS Batch \(`retryStrategy`\)' says exit 1 is final .*, the files make it mixed")
negative_docs("a Slurm wrapper that requeues exit 2", "deploy/slurm/ledgerdiff-slurm",
              "${LEDGERDIFF_SLURM_RETRY_EXIT-3}", "${LEDGERDIFF_SLURM_RETRY_EXIT-2 3}",
              r"says exit 2 is final .*, the files make it retried")
negative_docs("a top README that calls exit 2 worth a retry", "README.md",
              "| no: fix the input |", "| yes |", r"the exit code table says exit 2 is retried, validate\.py's policy final")

shutil.rmtree(tmp, ignore_errors=True)
print(f"validation cases: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
