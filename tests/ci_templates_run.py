#!/usr/bin/env python3
"""Runs the CI templates' shell steps for real, the way their runners would, against the
installed ledgerdiff (tests/packaging_test.sh calls it):
- ci/github/action.yml: every `run` step of the composite action in order, with `${{ inputs.* }}`
  and `${{ steps.*.outputs.* }}` substituted, GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files, and the
  runner's `bash --noprofile --norc -eo pipefail`; `if: always()` steps run after a failure, the
  `uses:` step (upload-artifact) is only checked to point at the reports directory.
- ci/gitlab/ledgerdiff.gitlab-ci.yml: the `.ledgerdiff` job's script lines under `sh -e`, with its
  variables (before_script installs packages, so ledgerdiff must already be on PATH).
Usage: ci_templates_run.py SRC_DIR BIN_DIR WORK_DIR
"""
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

src, bin_dir, work = sys.argv[1:4]
errors = []
# The runs' TMPDIR: the embedded server's user must be able to enter it (else ledgerdiff falls
# back to /tmp), and a divergent gate keeps its cluster there; all of it goes when this ends.
tmpdir = tempfile.mkdtemp(prefix="ld-ci-templates-")
os.chmod(tmpdir, 0o755)
atexit.register(shutil.rmtree, tmpdir, True)


def need(cond, what):
    if not cond:
        errors.append(what)


def base_env():
    env = dict(os.environ)
    env["PATH"] = bin_dir + os.pathsep + env["PATH"]
    for k in ["LEDGERDIFF_DB", "PGHOST", "PGPORT", "PGDATABASE", "PGSERVICE", "GITHUB_ACTIONS"]:
        env.pop(k, None)
    env["TMPDIR"] = tmpdir
    return env


def run_github_action(command, job_dir):
    """Returns (outputs of the gate step, exit code of the last step run, step summary text)."""
    action = yaml.safe_load(open(f"{src}/ci/github/action.yml"))
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    inputs["command"] = command
    inputs["reports-dir"] = os.path.join(job_dir, "reports")
    summary = os.path.join(job_dir, "step_summary.md")
    open(summary, "w").close()
    outputs = {}
    failed = False
    last = 0

    def expand(text):
        text = re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m.group(1)], text)
        return re.sub(r"\$\{\{\s*steps\.([\w-]+)\.outputs\.([\w-]+)\s*\}\}",
                      lambda m: outputs.get(m.group(1), {}).get(m.group(2), ""), text)

    for i, step in enumerate(action["runs"]["steps"]):
        if failed and step.get("if") != "always()":
            continue
        if "uses" in step:
            need(expand(step.get("with", {}).get("path", "")) == inputs["reports-dir"],
                 "action.yml: the upload step does not upload the reports directory")
            continue
        out_file = os.path.join(job_dir, f"output_{i}")
        open(out_file, "w").close()
        env = base_env()
        env.update({k: expand(str(v)) for k, v in step.get("env", {}).items()})
        env.update({"GITHUB_OUTPUT": out_file, "GITHUB_STEP_SUMMARY": summary})
        p = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", expand(step["run"])],
                           env=env, cwd=job_dir, capture_output=True, text=True)
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in open(out_file).read().splitlines() if "=" in line)
        last = p.returncode
        if p.returncode != 0:
            failed = True
            if step.get("name") != "Verdict":
                errors.append(f"action.yml: step '{step.get('name')}' failed ({p.returncode}): {p.stderr[-500:]}")
    return outputs.get("gate", {}), last, open(summary).read()


# GitHub: a gate that finds a divergence fails the job and says where, in the step summary alone.
job = os.path.join(work, "github")
os.makedirs(job)
gate, code, summary = run_github_action("verify --range 2:101 --workers 2 --job-size 50 --inject-bug drop-row@50", job)
need(gate.get("exit-code") == "1", f"action.yml: gate exit-code output is {gate.get('exit-code')!r}, want '1'")
need(code == 1, f"action.yml: the job's last step exited {code}, want 1 (divergent)")
need("First divergent ledger: 50" in summary, "action.yml: the step summary does not name ledger 50")
need(summary.count("ledgerdiff verify") == 1, "action.yml: the summary was written other than once")
kept = [d for d in os.listdir(tmpdir) if d.startswith("ledgerdiff-pg-")]
need(len(kept) == 1 and f"rm -rf {os.path.join(tmpdir, kept[0])}" in summary,
     f"action.yml: the kept cluster {kept} is not the one the step summary says how to remove")
for f in ["junit.xml", "summary.md", "output.txt", "html"]:
    need(os.path.exists(os.path.join(job, "reports", f)), f"action.yml: reports/{f} missing")

# GitLab: a passing gate passes the job and leaves the JUnit report where artifacts:reports expects it.
job = os.path.join(work, "gitlab")
os.makedirs(job)
template = yaml.safe_load(open(f"{src}/ci/gitlab/ledgerdiff.gitlab-ci.yml"))[".ledgerdiff"]
env = base_env()
env.update({k: str(v) for k, v in template["variables"].items()})
env["LEDGERDIFF_COMMAND"] = "verify --range 2:51 --workers 2 --job-size 25"
p = subprocess.run(["sh", "-e", "-c", "\n".join(template["script"])], env=env, cwd=job, capture_output=True, text=True)
need(p.returncode == 0, f"gitlab: the script exited {p.returncode}: {p.stderr[-500:]}")
need(os.path.exists(os.path.join(job, template["artifacts"]["reports"]["junit"])), "gitlab: no JUnit report")
for path in template["artifacts"]["paths"]:
    need(os.path.isdir(os.path.join(job, path)), f"gitlab: artifact path {path} missing")

for e in errors:
    print(e, file=sys.stderr)
sys.exit(1 if errors else 0)
