#!/usr/bin/env python3
"""Offline validation of the deployment files in deploy/.

  validate.py k8s [--policy] FILE.yaml...     Kubernetes manifests against the Kubernetes API schema
  validate.py aws-batch KIND FILE.json...      AWS Batch CLI input (KIND: register-job-definition | submit-job)
  validate.py containerfile FILE               structure of deploy/Containerfile (FROM ${ARG}: its default)
  validate.py exit-docs DEPLOY_DIR README.md    what the docs say about exit codes against the policies

Schemas are the vendored files in deploy/schemas/ (see its README for their source); the checking
is done by the jsonschema package (Debian: python3-jsonschema). Kubernetes objects are checked
strictly, like `kubectl apply --validate=strict`: an unknown field is an error.
--policy adds this project's rules: non-root pods, resource requests, the password only through a
Secret, Indexed Jobs whose completions/parallelism/--shards agree, merges naming exactly their parts.
Exit 0 valid, 1 invalid (one line per problem: FILE: OBJECT: PATH: MESSAGE), 2 usage/unreadable input.
"""
import copy
import fnmatch
import json
import os
import pathlib
import re
import shlex
import sys

try:
    import jsonschema
    import yaml
except ImportError as e:  # pragma: no cover - reported, not hidden
    print(f"validate.py: {e.name} is missing: run ci/bootstrap --for test (python3-jsonschema, python3-yaml)", file=sys.stderr)
    sys.exit(2)

SCHEMAS = pathlib.Path(__file__).resolve().parent / "schemas"
K8S_SCHEMA = SCHEMAS / "kubernetes-v1.27-kubernetes-models-4.3.1.json"
AWS_BATCH_SCHEMA = SCHEMAS / "aws-batch-2016-08-10-aws-sdk-2.1693.0.json"
SECRET_NAME = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|PRIVATE_KEY|ACCESS_KEY", re.I)
# A password written into a conninfo string: key=value form or a URI user:password@host.
INLINE_PASSWORD = re.compile(r"password\s*=|postgres(ql)?://[^/@\s:]+:[^/@\s]+@", re.I)


# The ledgerdiff command line these files may use comes from the binary itself:
# `ledgerdiff _docs contract` (generated from the CLI11 definition, like the man page) lists every
# command path ("digest", "manifest merge") with its flags. Set LEDGERDIFF_CONTRACT to that JSON
# (tests/deploy_test.sh does); without it every command line is a problem, never silently accepted.
def load_contract():
    path = os.environ.get("LEDGERDIFF_CONTRACT")
    if not path:
        return None
    data = json.loads(pathlib.Path(path).read_text())
    if data.get("format") != "ledgerdiff-cli-contract":
        print(f"validate.py: {path} is not a ledgerdiff CLI contract", file=sys.stderr)
        sys.exit(2)
    return {tuple(k.split()): v for k, v in data["commands"].items()}


CONTRACT = load_contract()
# Exit codes the schedulers' retry policies are built on (README, `ledgerdiff --help`): 1 and 2 are
# answers (divergent, bad input) that a retry would repeat; 3 is a runtime failure worth a retry.
FINAL_EXIT_CODES = {1, 2}
RETRY_EXIT_CODE = 3


def contract_problems(words):
    """REQUIRES: words = the arguments after `ledgerdiff`. Problems with the subcommand or its flags:
    an unknown command, an unknown flag, a flag that takes a value given none, a required flag missing."""
    words = [str(w) for w in words]
    if CONTRACT is None:
        return ["no CLI contract: set LEDGERDIFF_CONTRACT to the output of `ledgerdiff _docs contract`"]
    match = max((sub for sub in CONTRACT if tuple(words[:len(sub)]) == sub), key=len, default=None)
    if match is None:
        return [f"ledgerdiff {words[0] if words else ''}: not a command of the contract"]
    flags = CONTRACT[match]["flags"]
    problems, given = [], set()
    rest = words[len(match):]
    i = 0
    while i < len(rest):
        w = rest[i]
        i += 1
        if not w.startswith("-") or w == "-":
            continue
        name, has_inline = (w.split("=", 1)[0], "=" in w)
        if name not in flags:
            problems.append(f"ledgerdiff {' '.join(match)}: flag {name} is not in the command contract")
            continue
        given.add(name)
        if flags[name]["value"] and not has_inline:
            if i >= len(rest):
                problems.append(f"ledgerdiff {' '.join(match)}: flag {name} needs a value")
            i += 1
    for name, spec in flags.items():
        if spec.get("required") and name not in given:
            problems.append(f"ledgerdiff {' '.join(match)}: required flag {name} is missing")
    return problems


def k8s_final_codes(spec):
    """The exit codes a Job's podFailurePolicy fails at once (FailJob)."""
    final = set()
    for rule in ((spec.get("podFailurePolicy") or {}).get("rules") or []):
        codes = rule.get("onExitCodes") or {}
        values = set(codes.get("values") or [])
        if rule.get("action") == "FailJob" and codes.get("operator") == "In":
            final |= values
        if rule.get("action") == "FailJob" and codes.get("operator") == "NotIn":
            final |= set(range(1, 256)) - values
    return final


def k8s_exit_policy_problems(spec):
    """A retried Job (backoffLimit > 0) must fail at once on exit 1 and 2 and retry exit 3."""
    if (spec.get("backoffLimit") or 0) == 0:
        return []
    final = k8s_final_codes(spec)
    problems = []
    if not FINAL_EXIT_CODES <= final:
        problems.append(f"spec.podFailurePolicy: exit codes {sorted(FINAL_EXIT_CODES - final)} must fail the Job "
                        "at once (1 divergent, 2 bad input: a retry repeats the answer)")
    if RETRY_EXIT_CODE in final:
        problems.append("spec.podFailurePolicy: exit 3 (runtime failure) must be retried, not fail the Job")
    return problems


def batch_decision(strategy, code):
    """RETRY or EXIT: what a retryStrategy does with an exit code. The first matching evaluateOnExit
    rule decides; AWS Batch retries when none matches; one attempt retries nothing."""
    if (strategy.get("attempts") or 1) <= 1:
        return "EXIT"
    for r in strategy.get("evaluateOnExit") or []:
        pattern = r.get("onExitCode")
        if pattern is not None and fnmatch.fnmatchcase(str(code), pattern):
            return r.get("action", "").upper()
    return "RETRY"


def batch_exit_policy_problems(strategy):
    """A retried Batch job (attempts > 1) retries exit 3 (and host failures) and nothing else: the
    first matching evaluateOnExit rule decides, and AWS Batch retries when no rule matches."""
    if not strategy or (strategy.get("attempts") or 1) <= 1:
        return []
    def decision(code):
        return batch_decision(strategy, code)

    problems = []
    for code in sorted(FINAL_EXIT_CODES) + [137]:
        if decision(code) != "EXIT":
            problems.append(f"retryStrategy: exit {code} must EXIT (only 3 and host failures are retried)")
    if decision(RETRY_EXIT_CODE) != "RETRY":
        problems.append("retryStrategy: exit 3 (runtime failure) must RETRY")
    return problems


def invocations(container):
    """The ledgerdiff argument lists a container runs: its args (image entrypoint ledgerdiff), or
    each `ledgerdiff ...` line of a /bin/sh -c script."""
    command = container.get("command")
    if not command or command == ["ledgerdiff"]:
        return [container.get("args") or []]
    if command[:2] == ["/bin/sh", "-c"]:
        script = " ".join(container.get("args") or []).replace("\\\n", " ")
        return [shlex.split(m) for m in re.findall(r"\bexec ledgerdiff ([^\n]*)", script)]
    return []


def strict(schema):
    """REQUIRES: an OpenAPI-derived schema. Returns a copy in which every object with declared
    properties admits no others (what kubectl's strict field validation does)."""
    schema = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(schema)
    return schema


def schema_errors(instance, definitions, name):
    """Errors of instance against definitions[name], each as (path, message), most specific first."""
    validator = jsonschema.Draft7Validator({"$ref": f"#/definitions/{name}", "definitions": definitions})
    out = []
    for error in sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path)):
        best = jsonschema.exceptions.best_match([error])
        path = ".".join(str(p) for p in best.absolute_path) or "(root)"
        out.append((path, best.message))
    return out


class Report:
    def __init__(self):
        self.problems = 0

    def fail(self, where, what):
        self.problems += 1
        print(f"{where}: {what}")


# ---------------------------------------------------------------- Kubernetes

def load_yaml(path):
    try:
        return [d for d in yaml.safe_load_all(pathlib.Path(path).read_text()) if d is not None]
    except (OSError, yaml.YAMLError) as e:
        print(f"validate.py: cannot read {path}: {e}".splitlines()[0], file=sys.stderr)
        sys.exit(2)


def pod_spec(doc):
    return (((doc.get("spec") or {}).get("template") or {}).get("spec")) or {}


def containers(doc):
    spec = pod_spec(doc)
    return list(spec.get("initContainers") or []) + list(spec.get("containers") or [])


def shards_of(container):
    """The shard count a container passes to ledgerdiff: the --shards argument, or env SHARDS."""
    args = [str(a) for a in container.get("args") or []]
    if "--shards" in args and args.index("--shards") + 1 < len(args):
        return args[args.index("--shards") + 1]
    for env in container.get("env") or []:
        if env.get("name") == "SHARDS" and "value" in env:
            return str(env["value"])
    return None


def parts_mount(container):
    for m in container.get("volumeMounts") or []:
        if m.get("mountPath") == "/parts":
            return m.get("subPath", "")
    return None


def check_policy(path, doc, where, report, shard_counts, merges, configmap_keys):
    kind = doc.get("kind")
    for key, value in walk_strings(doc):
        if INLINE_PASSWORD.search(value):
            report.fail(where, f"{key}: a password written inline")
    if kind == "ConfigMap":
        for key in (doc.get("data") or {}):
            if SECRET_NAME.search(key):
                report.fail(where, f"data.{key}: a secret in a ConfigMap (use a Secret)")
    if kind == "Secret":
        if "examples" not in pathlib.Path(path).parts:
            report.fail(where, "a Secret outside deploy/k8s/examples/: create it with kubectl, never commit it")
        for key, value in {**(doc.get("stringData") or {}), **(doc.get("data") or {})}.items():
            if not str(value).startswith("REPLACE_"):
                report.fail(where, f"{key}: an example Secret must hold a REPLACE_... placeholder")
    if kind not in ("Job", "Deployment"):
        return
    spec, pod = doc.get("spec") or {}, pod_spec(doc)
    if kind == "Job":
        for problem in k8s_exit_policy_problems(spec):
            report.fail(where, problem)
    else:  # the follower: its state directory is locked by one process at a time
        if spec.get("replicas") != 1 or (spec.get("strategy") or {}).get("type") != "Recreate":
            report.fail(where, "a ledgerdiff Deployment needs replicas: 1 and strategy Recreate (one follower holds "
                               "the state directory's lock)")
    sc = pod.get("securityContext") or {}
    if sc.get("runAsNonRoot") is not True or sc.get("runAsUser", 0) == 0:
        report.fail(where, "spec.template.spec.securityContext: needs runAsNonRoot: true and a non-zero runAsUser")
    if pod.get("automountServiceAccountToken") is not False:
        report.fail(where, "spec.template.spec.automountServiceAccountToken: must be false (no API access needed)")
    for c in containers(doc):
        cw = f"{where}: container {c.get('name')}"
        requests = (c.get("resources") or {}).get("requests") or {}
        if not {"cpu", "memory"} <= set(requests):
            report.fail(cw, "resources.requests: needs cpu and memory")
        csc = c.get("securityContext") or {}
        if csc.get("allowPrivilegeEscalation") is not False or csc.get("runAsUser") == 0 or csc.get("privileged"):
            report.fail(cw, "securityContext: needs allowPrivilegeEscalation: false, not privileged, not root")
        if not str(c.get("image", "")).startswith("ledgerdiff:"):
            continue  # a sidecar (the metrics file's node-exporter): the checks above only
        calls = invocations(c)
        if not calls:
            report.fail(cw, "runs neither ledgerdiff nor `/bin/sh -c` with `exec ledgerdiff ...`")
        for words in calls:
            for problem in contract_problems(words) + follow_args_problems(words):
                report.fail(cw, problem)
            if kind == "Deployment" and "--state" in words:
                mounts = [m.get("mountPath", "") for m in c.get("volumeMounts") or []]
                if not any(FOLLOW_STATE.startswith(m.rstrip("/") + "/") for m in mounts):
                    report.fail(cw, f"--state {FOLLOW_STATE} is not on a mounted volume (the state must survive the pod)")
        declared = {e.get("name") for e in c.get("env") or []}
        for source in c.get("envFrom") or []:
            declared |= configmap_keys.get((source.get("configMapRef") or {}).get("name"), set())
        for ref in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", " ".join(map(str, (c.get("command") or []) + (c.get("args") or [])))):
            if ref not in declared:  # the kubelet would pass "$(NAME)" on literally
                report.fail(cw, f"args: $({ref}) names no env var of this container")
        for env in c.get("env") or []:
            name = env.get("name", "")
            if SECRET_NAME.search(name) and not ((env.get("valueFrom") or {}).get("secretKeyRef")):
                report.fail(cw, f"env {name}: a secret must come from a Secret (valueFrom.secretKeyRef)")
    if spec.get("completionMode") == "Indexed":
        shards = {shards_of(c) for c in pod.get("containers") or []} - {None}
        n = spec.get("completions")
        if shards != {str(n)} or spec.get("parallelism") != n:
            report.fail(where, f"Indexed Job: completions {n}, parallelism {spec.get('parallelism')} "
                               f"and --shards {sorted(shards) or 'missing'} must agree")
        else:
            for c in pod.get("containers") or []:
                shard_counts.setdefault(parts_mount(c), []).append((where, int(n)))
    for c in containers(doc):
        args = [str(a) for a in c.get("args") or []]
        if args[:2] == ["manifest", "merge"]:
            parts = [a for a in args[2:] if a.startswith("/parts/part-")]
            merges.append((f"{where}: container {c.get('name')}", parts_mount(c), parts))


def walk_strings(node, key=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk_strings(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk_strings(v, f"{key}[{i}]")
    elif isinstance(node, str):
        yield key, node


def check_k8s(files, policy):
    bundle = json.loads(K8S_SCHEMA.read_text())
    definitions = strict(bundle["definitions"])
    report, shard_counts, merges = Report(), {}, []
    docs = [(path, doc) for path in files for doc in load_yaml(path)]
    configmap_keys = {(d.get("metadata") or {}).get("name"): set(d.get("data") or {})
                      for _, d in docs if isinstance(d, dict) and d.get("kind") == "ConfigMap"}
    for path, doc in docs:
        if not isinstance(doc, dict):
            report.fail(path, "a YAML document that is not an object")
            continue
        where = f"{path}: {doc.get('kind')}/{(doc.get('metadata') or {}).get('name')}"
        name = bundle["kinds"].get(f"{doc.get('apiVersion')} {doc.get('kind')}")
        if name is None:
            report.fail(where, f"no schema for apiVersion {doc.get('apiVersion')!r} kind {doc.get('kind')!r} "
                               f"(known: {', '.join(bundle['kinds'])})")
            continue
        for err_path, message in schema_errors(doc, definitions, name):
            report.fail(where, f"{err_path}: {message}")
        if policy:
            check_policy(path, doc, where, report, shard_counts, merges, configmap_keys)
    for where, mount, parts in merges:
        producers = shard_counts.get(mount, [])
        if len(producers) != 1:
            report.fail(where, f"merge of /parts (subPath {mount!r}) needs exactly one Indexed Job writing there, "
                               f"found {len(producers)}")
            continue
        n = producers[0][1]
        want = [f"/parts/part-{k}.ldm" for k in range(n)]
        if parts != want:
            report.fail(where, f"merges {len(parts)} parts {parts[:3]}..., but {producers[0][0]} writes exactly "
                               f"part-0..part-{n - 1}")
    print(f"validate.py k8s: {len(docs)} objects in {len(files)} files, {report.problems} problems")
    return report.problems


# ---------------------------------------------------------------- AWS Batch

def check_aws_batch(kind, files):
    bundle = json.loads(AWS_BATCH_SCHEMA.read_text())
    if kind not in bundle["requests"]:
        print(f"validate.py: unknown AWS Batch request {kind!r} (known: {', '.join(bundle['requests'])})",
              file=sys.stderr)
        sys.exit(2)
    report = Report()
    for path in files:
        try:
            doc = json.loads(pathlib.Path(path).read_text())
        except (OSError, ValueError) as e:
            print(f"validate.py: cannot read {path}: {e}", file=sys.stderr)
            sys.exit(2)
        for err_path, message in schema_errors(doc, bundle["definitions"], bundle["requests"][kind]):
            report.fail(path, f"{err_path}: {message}")
        for key, value in walk_strings(doc):
            if INLINE_PASSWORD.search(value):
                report.fail(path, f"{key}: a password written inline")
        props = doc.get("containerProperties") or doc.get("containerOverrides") or {}
        for env in props.get("environment") or []:
            if SECRET_NAME.search(env.get("name", "")):
                report.fail(path, f"environment {env.get('name')}: a secret belongs in `secrets` (Secrets Manager)")
        for problem in batch_exit_policy_problems(doc.get("retryStrategy")):
            report.fail(path, problem)
        command = props.get("command")
        if command is not None:
            for problem in contract_problems(command):
                report.fail(path, f"command: {problem}")
        user = str(props.get("user", ""))
        if kind == "register-job-definition" and (not user or user.split(":")[0] in ("0", "root")):
            report.fail(path, "containerProperties.user: must be a non-root uid")
    print(f"validate.py aws-batch {kind}: {len(files)} files, {report.problems} problems")
    return report.problems


# ---------------------------------------------------------------- Containerfile

def containerfile_stages(text):
    """([(base, name, [(INSTRUCTION, rest)])], {global ARG: default}) with continuation lines joined
    and comments dropped. A FROM's ${VAR} / $VAR is replaced by the default of a global ARG (one
    before the first FROM): that is the base an ordinary build uses."""
    lines, current = [], ""
    for raw in text.splitlines():
        if not current and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if current and raw.lstrip().startswith("#"):
            continue
        current += raw.rstrip("\\").rstrip() + " " if raw.rstrip().endswith("\\") else raw
        if not raw.rstrip().endswith("\\"):
            lines.append(current.strip())
            current = ""
    stages, global_args = [], {}
    for line in lines:
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word == "FROM":
            m = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?", rest.strip(), re.I)
            if not m:
                raise ValueError(f"unreadable FROM line: {line}")
            base = re.sub(r"\$\{(\w+)\}|\$(\w+)",
                          lambda v: global_args.get(v.group(1) or v.group(2)) or v.group(0), m.group(1))
            stages.append((base, m.group(2), []))
        elif not stages and word == "ARG":
            name, _, default = rest.strip().partition("=")
            global_args[name] = default
        elif not stages:
            raise ValueError(f"{word} before the first FROM")
        else:
            stages[-1][2].append((word, rest.strip()))
    return stages, global_args


def check_containerfile(path):
    report = Report()
    try:
        stages, global_args = containerfile_stages(pathlib.Path(path).read_text())
    except (OSError, ValueError) as e:
        print(f"validate.py: cannot read {path}: {e}", file=sys.stderr)
        sys.exit(2)
    by_name = {name: (base, name, body) for base, name, body in stages if name}

    def chain(stage):
        """The stage and its ancestors among the file's stages, the stage last."""
        out = [stage]
        while out[0][0] in by_name:
            out.insert(0, by_name[out[0][0]])
        return out

    def last(stage, word):
        found = [rest for s in chain(stage) for w, rest in s[2] if w == word]
        return found[-1] if found else None

    if len(stages) < 2:
        report.fail(path, "not multi-stage: needs a build stage and a runtime stage")
    for base, name, _ in stages:
        if "$" in base:
            report.fail(path, f"FROM {base}: a variable without a default in a global ARG (before the first FROM)")
        elif base not in by_name and not re.fullmatch(r"debian:12(-slim)?|debian:bookworm(-slim)?", base):
            report.fail(path, f"FROM {base}: bases must be Debian 12 (debian:12, debian:12-slim)")
    build = [s for s in stages if s[0] not in by_name and not s[0].endswith("-slim")]
    if not build or not any(w == "RUN" and "ci/bootstrap" in r and "cmake" in r for w, r in build[0][2]):
        report.fail(path, "the build stage (FROM debian:12) must RUN ci/bootstrap and cmake")
    final = stages[-1] if stages else None
    runtime = [s for s in stages if chain(s)[0][0].endswith("-slim")]
    if final and not chain(final)[0][0].endswith("-slim"):
        report.fail(path, f"the final stage must derive from debian:12-slim, not {chain(final)[0][0]}")
    if final and last(final, "ENTRYPOINT") != '["ledgerdiff"]':
        report.fail(path, f"the final stage's ENTRYPOINT is {last(final, 'ENTRYPOINT')}, want [\"ledgerdiff\"]")
    for stage in runtime:
        label = f"{path}: stage {stage[1] or stage[0]}"
        user = last(stage, "USER")
        if user is None or user.split(":")[0] in ("root", "0"):
            report.fail(label, f"USER is {user or 'unset (root)'}: a runtime stage must run as a non-root user")
        entry = last(stage, "ENTRYPOINT")
        if entry is not None and not entry.startswith("["):
            report.fail(label, "ENTRYPOINT must be exec form (a JSON array)")
        runs = " ".join(r for s in chain(stage) for w, r in s[2] if w == "RUN")
        for pkg in ("libpq5", "libfmt9", "libssl3", "libxxhash0", "postgresql-15"):
            if not re.search(rf"(^|\s){re.escape(pkg)}(\s|$)", runs):
                report.fail(label, f"runtime package {pkg} is not installed")
        if not any(w == "COPY" and "--from=" in r and "ledgerdiff" in r for s in chain(stage) for w, r in s[2]):
            report.fail(label, "the ledgerdiff binary is not copied from the build stage")
    global_body = [("ARG", f"{k}={v}" if v else k) for k, v in global_args.items()]
    for base, name, body in [(None, None, global_body)] + stages:
        for word, rest in body:
            if word in ("ENV", "ARG", "LABEL") and SECRET_NAME.search(rest):
                report.fail(path, f"{word} {rest}: no secret in an image (it is readable by anyone with the image)")
            if INLINE_PASSWORD.search(rest):
                report.fail(path, f"{word} {rest}: a password written inline")
    print(f"validate.py containerfile: {len(stages)} stages, {report.problems} problems")
    return report.problems


# ---------------------------------------------------------------- command lines in scripts

COMMAND_LINE = re.compile(r"(?:^|[\s;&|(`'\"])(?:exec\s+|\S*/)?ledgerdiff\s+([a-z][a-z_-]*(?:[ \t]+[^\n#]*)?)")


def command_lines(text):
    """Each `ledgerdiff COMMAND ...` in a shell script or a YAML/CI template, as argument lists cut at
    the first shell operator. Prose that only names ledgerdiff ("a ledgerdiff gate") is skipped: the
    word after it must be a command of the contract."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        if line.lstrip().startswith("#"):
            continue
        for m in COMMAND_LINE.finditer(line):
            if line[:m.start(1)].count('"') % 2:  # inside a message string, not a command
                continue
            rest = re.split(r"\s(?:\||\|\||&&|;|>|2>|<)\s|\)\s*$|\s#", m.group(1))[0]
            try:
                words = shlex.split(rest)
            except ValueError:
                words = rest.split()
            if words and CONTRACT is not None and any(sub[0] == words[0] for sub in CONTRACT):
                out.append(words)
    return out


def code_blocks(markdown):
    """The fenced code blocks of a Markdown file: its runnable examples (prose is not checked)."""
    return "\n".join(re.findall(r"^```[a-z]*\n(.*?)^```", markdown, re.M | re.S))


def check_commands(files):
    report = Report()
    count = 0
    for path in files:
        text = pathlib.Path(path).read_text()
        if path.endswith(".md"):
            text = code_blocks(text)
        for words in command_lines(text):
            count += 1
            for problem in contract_problems(words):
                report.fail(path, problem)
    print(f"validate.py commands: {count} command lines in {len(files)} files, {report.problems} problems")
    return report.problems


# The follower's layout (deploy/README.md, "Following"): the same paths in the Deployment and the unit.
FOLLOW_STATE = "/var/lib/ledgerdiff/follow"


def follow_args_problems(words):
    """Problems with a `verify-range --follow` command line beyond the contract: the state where the
    documented layout puts it."""
    words = [str(w) for w in words]
    if "--follow" not in words or "--state" not in words:
        return []
    state = words[words.index("--state") + 1] if words.index("--state") + 1 < len(words) else ""
    return [] if state == FOLLOW_STATE else [f"--state {state}: the layout is {FOLLOW_STATE}"]


def unit_sections(text):
    """A systemd unit as {section: [(key, value)]}, continuation lines joined."""
    sections, current = {}, None
    text = re.sub(r"\\\n\s*", " ", text)
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
        elif "=" in line and current is not None:
            key, value = line.split("=", 1)
            current.append((key.strip(), value.strip()))
    return sections


def check_systemd(path):
    report = Report()
    text = pathlib.Path(path).read_text()
    service = dict(unit_sections(text).get("Service", []))
    for key, value in unit_sections(text).get("Service", []):
        if INLINE_PASSWORD.search(value):
            report.fail(path, f"{key}: a password written inline")
    if service.get("User", "root") in ("root", "0"):
        report.fail(path, "User: must be a non-root user")
    words = shlex.split(service.get("ExecStart", ""))
    if not words or not words[0].endswith("/ledgerdiff"):
        report.fail(path, "ExecStart: must run ledgerdiff")
    else:
        for problem in contract_problems(words[1:]) + follow_args_problems(words[1:]):
            report.fail(path, problem)
    prevent = set(service.get("RestartPreventExitStatus", "").split())
    if not {"1", "2"} <= prevent or "3" in prevent or service.get("Restart") != "on-failure":
        report.fail(path, "RestartPreventExitStatus: exit 1 and 2 are answers (no restart), exit 3 is retried "
                          "(Restart=on-failure)")
    if service.get("ProtectSystem") != "strict" or service.get("NoNewPrivileges") != "true":
        report.fail(path, "hardening: needs ProtectSystem=strict and NoNewPrivileges=true")
    # What the unit needs from the host, as written: its user, its state, the collector's directory,
    # the password file. Its user comes from a sysusers.d file beside it (or DynamicUser=yes).
    user = service.get("User", "")
    sysusers = [line.split() for f in sorted(pathlib.Path(path).parent.glob("*.sysusers.conf"))
                for line in f.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if service.get("DynamicUser") != "yes" and not any(w[:2] == ["u", user] for w in sysusers):
        report.fail(path, f"User={user}: no *.sysusers.conf beside the unit creates it (and DynamicUser= is not yes)")
    if words and "--state" in words[:-1]:
        state = words[words.index("--state") + 1]
        dirs = ["/var/lib/" + d for d in service.get("StateDirectory", "").split()]
        if not any(state == d or state.startswith(d + "/") for d in dirs):
            report.fail(path, f"--state {state}: not under StateDirectory= (nothing creates it for User={user})")
    if words and "--metrics" in words[:-1]:
        metrics_dir = str(pathlib.PurePosixPath(words[words.index("--metrics") + 1]).parent)
        writable = service.get("ReadWritePaths", "").split()
        if not any(metrics_dir == d.lstrip("-") or metrics_dir.startswith(d.lstrip("-") + "/") for d in writable):
            report.fail(path, f"--metrics: {metrics_dir} is not in ReadWritePaths= (ProtectSystem=strict makes it read-only)")
    credentials = {c.split(":", 1)[0] for c in service.get("LoadCredential", "").split()}
    passfile = re.fullmatch(r"PGPASSFILE=%d/(\S+)", service.get("Environment", ""))
    if not passfile or passfile.group(1) not in credentials:
        report.fail(path, "the password file: needs LoadCredential=NAME:FILE and Environment=PGPASSFILE=%d/NAME "
                          "(a home .pgpass needs a home the sandbox lets it read)")
    print(f"validate.py systemd: {path}, {report.problems} problems")
    return report.problems


# ---------------------------------------------------------------- exit-code statements in the docs

# What the docs say happens to an exit code, read from prose and from tables. A clause that names
# exit codes and says they are never retried (or fail, end, are answers) is "final"; one that says
# they are retried, requeued or restarted is "retried"; one that says neither is not a statement.
FINAL_WORDS = re.compile(r"\b(never|not|no|cannot|fails?|ends?|FailJob|EXIT|FAILED|answers?|would repeat|repeats?)\b")
RETRY_WORDS = re.compile(r"\b(retried|retry|retries|requeued|requeues?|restarted|restarts?|RETRY|yes)\b")
EXIT_CODES = re.compile(r"\bexit(?:s| codes?| status(?:es)?)?\s+(\d+(?:\s*(?:,|and|or|/)\s*\d+)*)\b", re.I)
# Where a clause ends: a sentence, a semicolon, a dash, or a comma before another exit code.
CLAUSE_END = re.compile(r";\s|\.\s|\s—\s|,\s(?=(?:and\s|but\s|while\s)?(?:an\s)?exit\s)", re.I)


def statement(text, cell=False):
    """(class, codes) of a clause: class "final", "retried" or None; codes the exit codes it names.
    In a clause any word of no retry makes it final ("is never retried", "a retry would repeat
    it"); a table cell is read by its first word ("requeued ..., then FAILED" is a retry)."""
    codes = {int(c) for m in EXIT_CODES.finditer(text) for c in re.findall(r"\d+", m.group(1))}
    final, retried = FINAL_WORDS.search(text), RETRY_WORDS.search(text)
    if cell and final and retried:
        return ("final" if final.start() < retried.start() else "retried"), codes
    return ("final" if final else "retried" if retried else None), codes


def prose_statements(path, text):
    """[(line, clause, class, codes)] of the prose of a Markdown file or the comments of a unit:
    paragraphs joined, tables and code blocks left out (tables are read by markdown_tables)."""
    markdown = str(path).endswith(".md")
    paragraphs, current, fenced = [], [], False
    for number, line in enumerate(text.splitlines(), 1):
        if markdown and line.startswith("```"):
            fenced = not fenced
            continue
        if not markdown:  # a unit: only its comments are prose
            line = line[1:].strip() if line.startswith("#") else ""
        if fenced or not line.strip() or line.lstrip().startswith("|"):
            if current:
                paragraphs.append(current)
            current = []
            continue
        current.append((number, line.strip()))
    if current:
        paragraphs.append(current)
    out = []
    for para in paragraphs:
        joined, starts = "", []
        for number, line in para:
            starts.append((len(joined), number))
            joined += line + " "
        begin = 0
        for end in [m.start() for m in CLAUSE_END.finditer(joined)] + [len(joined)]:
            clause = joined[begin:end].strip()
            line = max(n for offset, n in starts if offset <= begin)
            begin = end + 1
            kind, codes = statement(clause)
            if kind and codes:
                out.append((line, clause, kind, codes))
    return out


def markdown_tables(text):
    """Tables whose first column is an exit code: [(line, header, {code: [cell per column]})]."""
    tables, rows, header, first = [], None, None, 0
    for number, line in enumerate(text.splitlines() + [""], 1):
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header, rows, first = cells, {}, number
            elif not set(line) <= set("|-: "):
                code = re.sub(r"[*`]", "", cells[0])
                if code.isdigit():
                    rows[int(code)] = cells
            continue
        if header is not None and "exit" in header[0].lower() or header is not None and header[0] == "code":
            tables.append((first, header, rows))
        header = None
    return tables


def policies(deploy):
    """What the files under deploy/ do with exit codes 1..3, per scheduler: {name: {code: class}}
    ("final", "retried", or "mixed" when files of one scheduler disagree), with the files read."""
    deploy = pathlib.Path(deploy)
    found = {}

    def note(name, code, kind):
        have = found.setdefault(name, {})
        have[code] = kind if have.get(code, kind) == kind else "mixed"

    for path in sorted((deploy / "k8s").rglob("*.yaml")):
        for doc in load_yaml(path):
            if not isinstance(doc, dict):
                continue
            spec = doc.get("spec") or {}
            if doc.get("kind") == "Job" and (spec.get("backoffLimit") or 0) > 0:  # backoffLimit 0: the plan
                final = k8s_final_codes(spec)
                for code in (1, 2, 3):
                    note("k8s-job", code, "final" if code in final else "retried")
            if doc.get("kind") == "Deployment":  # restartPolicy Always is all a Deployment allows
                always = pod_spec(doc).get("restartPolicy", "Always") == "Always"
                for code in (1, 2, 3):
                    note("deployment", code, "retried" if always else "final")
    for path in sorted((deploy / "aws-batch").glob("*.json")):
        strategy = json.loads(path.read_text()).get("retryStrategy")
        if strategy is not None:
            for code in (1, 2, 3):
                note("aws-batch", code, "retried" if batch_decision(strategy, code) == "RETRY" else "final")
    wrapper = deploy / "slurm" / "ledgerdiff-slurm"
    if wrapper.exists():
        m = re.search(r"\$\{LEDGERDIFF_SLURM_RETRY_EXIT-([^}]*)\}", wrapper.read_text())
        requeued = {int(c) for c in (m.group(1).split() if m else [])}
        for code in (1, 2, 3):
            note("slurm", code, "retried" if code in requeued else "final")
    for path in sorted((deploy / "systemd").glob("*.service")):
        service = dict(unit_sections(path.read_text()).get("Service", []))
        prevent = set(service.get("RestartPreventExitStatus", "").split()) | set(service.get("SuccessExitStatus", "").split())
        restarts = service.get("Restart", "no") in ("on-failure", "always", "on-abnormal")
        for code in (1, 2, 3):
            note("systemd", code, "retried" if restarts and str(code) not in prevent else "final")
    return found


def column_policy(header):
    """The scheduler a table column speaks for, by its heading."""
    h = header.lower()
    for words, name in (("deployment", "deployment"), ("kubernetes job", "k8s-job"), ("aws batch", "aws-batch"),
                        ("systemd", "systemd"), ("slurm", "slurm"), ("the job", "slurm"), ("retry?", "truth")):
        if words in h:
            return name
    return None


def check_exit_docs(deploy, top_readme):
    """The exit-code statements of deploy/README.md, slurm/README.md and the unit's comments against
    the policy of the top README's table and the policies the manifests and scripts apply."""
    report, deploy = Report(), pathlib.Path(deploy)
    truth = {code: "final" for code in FINAL_EXIT_CODES} | {RETRY_EXIT_CODE: "retried"}
    does = policies(deploy)
    docs = [deploy / "README.md", deploy / "slurm" / "README.md", *sorted((deploy / "systemd").glob("*.service"))]
    statements = cells = 0
    # The top README's table is the policy; validate.py's constants must say the same.
    for line, header, rows in markdown_tables(pathlib.Path(top_readme).read_text()):
        for col, heading in enumerate(header):
            if column_policy(heading) == "truth":
                for code, want in truth.items():
                    kind, _ = statement(rows.get(code, [""] * len(header))[col], cell=True)
                    if kind != want:
                        report.fail(f"{top_readme}:{line}", f"the exit code table says exit {code} is {kind}, "
                                                            f"validate.py's policy {want}")
    for path in docs:
        text = path.read_text()
        for line, clause, kind, codes in prose_statements(path, text):
            statements += 1
            for code in sorted(codes & set(truth)):
                if kind != truth[code]:
                    report.fail(f"{path}:{line}", f"says exit {code} is {kind}, the policy: {truth[code]} "
                                                  f"(1 and 2 never retried, 3 retried): {clause!r}")
        if path.suffix != ".md":
            continue
        for line, header, rows in markdown_tables(text):
            for col, heading in enumerate(header[1:], 1):
                name = column_policy(heading)
                if name is None or name == "truth":
                    continue
                for code in sorted(set(truth) & set(rows)):
                    cell = rows[code][col] if col < len(rows[code]) else ""
                    kind, _ = statement(cell, cell=True)
                    cells += 1
                    actual = does.get(name, {}).get(code)
                    if actual is None:
                        report.fail(f"{path}:{line}", f"column {heading!r}: no file under {deploy} applies it")
                    elif kind != actual:
                        report.fail(f"{path}:{line}", f"column {heading!r} says exit {code} is {kind} ({cell!r}), "
                                                      f"the files make it {actual}")
    for name, codes in sorted(does.items()):
        for code, kind in sorted(codes.items()):
            if name != "deployment" and kind != truth[code]:
                report.fail(str(deploy), f"{name}: exit {code} is {kind}, the policy: {truth[code]}")
    print(f"validate.py exit-docs: {statements} statements and {cells} table cells in {len(docs)} files, "
          f"{report.problems} problems")
    return report.problems


def main(argv):
    if len(argv) >= 2 and argv[0] == "k8s":
        policy = "--policy" in argv[1:]
        files = [a for a in argv[1:] if a != "--policy"]
        return 1 if check_k8s(files, policy) else 0
    if len(argv) >= 3 and argv[0] == "aws-batch":
        return 1 if check_aws_batch(argv[1], argv[2:]) else 0
    if len(argv) == 2 and argv[0] == "containerfile":
        return 1 if check_containerfile(argv[1]) else 0
    if len(argv) >= 2 and argv[0] == "commands":
        return 1 if check_commands(argv[1:]) else 0
    if len(argv) == 2 and argv[0] == "systemd":
        return 1 if check_systemd(argv[1]) else 0
    if len(argv) == 3 and argv[0] == "exit-docs":
        return 1 if check_exit_docs(argv[1], argv[2]) else 0
    print("validate.py: usage: k8s [--policy] FILE... | aws-batch KIND FILE... | containerfile FILE | commands FILE... | "
          "systemd FILE | exit-docs DEPLOY_DIR TOP_README",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
