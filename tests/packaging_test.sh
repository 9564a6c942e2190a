#!/usr/bin/env bash
# Packaging (issue 14): `cmake --install` lays out the binary, ledgerdiff(1), completions and docs;
# the man page and completions agree with --help; the .deb has the right files and dependencies
# (issue 22: the server and bash-completion are Recommends; a machine-readable copyright file);
# the CI templates and the README's copy-paste examples are valid YAML of the right shape.
# The clean-Debian install is ci/test_deb.sh (slow, network). Usage: packaging_test.sh BUILD_DIR
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$(dirname "$0")/..")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# ---- cmake --install ---------------------------------------------------------------------
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/ledgerdiff share/man/man1/ledgerdiff.1 share/bash-completion/completions/ledgerdiff \
  share/zsh/vendor-completions/_ledgerdiff share/doc/ledgerdiff/README.md share/doc/ledgerdiff/copyright \
  share/doc/ledgerdiff/ci/github/action.yml share/doc/ledgerdiff/ci/gitlab/ledgerdiff.gitlab-ci.yml; do
  [[ -s "$prefix/$f" ]] || fail "install: $f missing"
done
for readme in "$src"/*/README.md "$src"/ci/*/README.md; do
  [[ -e "$readme" ]] || continue
  rel=${readme#"$src"/}
  [[ $rel == build* ]] && continue
  [[ -s "$prefix/share/doc/ledgerdiff/$rel" ]] || fail "install: doc $rel missing"
done
bin=$prefix/bin/ledgerdiff
version=$("$bin" --version)
[[ $version == "ledgerdiff "[0-9]* ]] || fail "installed --version printed '$version'"

# ---- the man page agrees with --help -------------------------------------------------------
man=$prefix/share/man/man1/ledgerdiff.1
warnings=$(groff -man -Tutf8 -ww -z "$man" 2>&1) || true
[[ -z $warnings ]] || fail "groff warns about ledgerdiff.1: $warnings"
rendered=$(MANWIDTH=200 man -l "$man" 2>/dev/null | col -b)
commands=$("$bin" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF {print $1}')
[[ $(wc -w <<<"$commands") -ge 8 ]] || fail "--help lists too few commands: $commands"
for cmd in $commands; do
  grep -q "^   ledgerdiff $cmd " <<<"$rendered" || fail "man page has no section for $cmd"
  section=$(awk -v head="^   ledgerdiff $cmd " '$0 ~ head {on=1; next} /^   ledgerdiff / {on=0} /^[A-Z]/ {on=0} on' <<<"$rendered")
  summary=$("$bin" "$cmd" --help | sed -n 1p)  # sed reads it all: head would close the pipe early (SIGPIPE, exit 141 under pipefail)
  grep -qF "$summary" <<<"$section" || fail "man page: $cmd's description differs from --help ('$summary')"
  for flag in $("$bin" "$cmd" --help | sed -n '/^Options:/,/^$/p' | grep -oE '^  (-h,)?--[a-z][a-z0-9-]*' | sed 's/.*,//; s/^ *//'); do
    grep -qE -- "(^|[ ,])$flag( |,|$)" <<<"$section" || fail "man page: $cmd lacks $flag"
  done
  grep -q "Examples:" <<<"$section" || fail "man page: $cmd has no examples"
done
"$bin" _docs man | cmp -s - "$man" || fail "installed man page differs from 'ledgerdiff _docs man'"
for section in "EXIT STATUS" ENVIRONMENT EXAMPLES FILES "SEE ALSO"; do
  grep -q "^$section" <<<"$rendered" || fail "man page lacks $section"
done
# ENVIRONMENT says which commands read PG*: every visible command in exactly one group, and the
# group agrees with what its --db help says it does (issue 22).
envsec=$(awk '/^ENVIRONMENT/ {on=1; next} /^[A-Z]/ {on=0} on' <<<"$rendered")
grep -q "Which database a command uses" <<<"$envsec" || fail "man page ENVIRONMENT lacks 'Which database a command uses'"
group_of() {  # the text of the group whose heading lists command $1
  awk -v cmd="$1" '/^       [a-z]/ {on=0} /^       [a-z][a-z-]*(, [a-z][a-z-]*)*$/ {
      n = split($0, w, /, */); on = 0; for (i = 1; i <= n; i++) { gsub(/ /, "", w[i]); if (w[i] == cmd) on = 1 } }
    on' <<<"$(sed -n '/Which database a command uses/,$p' <<<"$envsec")"
}
for cmd in $commands; do
  group=$(group_of "$cmd")
  [[ -n $group ]] || { fail "man page ENVIRONMENT: $cmd is in no 'Which database' group"; continue; }
  heads=$(sed -n '/Which database a command uses/,$p' <<<"$envsec" | grep -cE "^       ([a-z-]+, )*$cmd(, [a-z-]+)*$") || true
  [[ $heads == 1 ]] || fail "man page ENVIRONMENT: $cmd is in $heads groups"
  dbhelp=$("$bin" "$cmd" --help | tr -s ' \n' ' ')  # --db's text says where the command's database comes from
  if [[ $dbhelp == *"then the PG* environment"* ]]; then
    grep -q "Only read. The database is --db, else LEDGERDIFF_DB, else libpq's defaults" <<<"$group" ||
      fail "man page: $cmd reads PG* (its --help says so) but is not in the read-only group"
  elif [[ $dbhelp == *"PG* environment is ignored"* || $dbhelp == *"must be named"* ]]; then
    grep -q "the PG\* variables never choose it" <<<"$group" ||
      fail "man page: $cmd ignores PG* (its --help says so) but is not in the writing group"
  elif "$bin" "$cmd" --help | grep -q -- '--left'; then
    grep -q "from the two databases --left and --right name" <<<"$group" || fail "man page: $cmd's --left/--right group"
  fi
done
filesec=$(awk '/^FILES/ {on=1; next} /^[A-Z]/ {on=0} on' <<<"$rendered")
for f in 'ledgerdiff-pg-XXXXXX' 'ledgerdiff-logs/RUN/job-N.stdout.log' 'FILE.partial' 'index.html' '--junit FILE' \
  '--keep-db DIR' 'apt-get install postgresql-15' '/usr/share/doc/ledgerdiff/'; do
  grep -qF -- "$f" <<<"$filesec" || fail "man page FILES lacks $f"
done
for var in LEDGERDIFF_DB PGHOST PGPASSWORD TMPDIR LEDGERDIFF_PG_BINDIR GITHUB_ACTIONS GITHUB_STEP_SUMMARY; do
  grep -q "$var" <<<"$rendered" || fail "man page ENVIRONMENT lacks $var"
done
# The hidden commands stay hidden.
grep -qE "ledgerdiff (_worker|_docs)" <<<"$rendered" && fail "man page documents a hidden command"

# ---- bash completion -----------------------------------------------------------------------
complete_bash() {  # complete_bash WORD... : completions of the last word
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ledgerdiff; ((${#COMPREPLY[@]} == 0)) || printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$prefix/share/bash-completion/completions/ledgerdiff" "$@" | sort | tr '\n' ' '
}
expect_bash() { local want=$1; shift; local got; got=$(complete_bash "$@"); [[ "$got" == "$want" ]] || fail "bash: '$*' completed to '$got', want '$want'"; }
expect_bash "verify verify-range " ledgerdiff ver
expect_bash "--version " ledgerdiff --ver
expect_bash "--workers --workers-external --workers-timeout " ledgerdiff verify --range 2:10 --wor
expect_bash "json text " ledgerdiff verify --format ""
expect_bash "csv jsonl " ledgerdiff dump --format ""
expect_bash "compact full " ledgerdiff digest --manifest-detail ""
expect_bash "" ledgerdiff verify --workers ""
expect_bash "$src/README.md " ledgerdiff verify --baseline "$src/READ"
expect_bash "$src/README.md " ledgerdiff diff "$src/READ"
got=$(complete_bash ledgerdiff "")
for cmd in $commands; do [[ " $got" == *" $cmd "* ]] || fail "bash: ledgerdiff <TAB> lacks $cmd"; done
[[ $got == *_worker* || $got == *_docs* ]] && fail "bash: completes a hidden command"

# ---- zsh completion ------------------------------------------------------------------------
zsh_file=$prefix/share/zsh/vendor-completions/_ledgerdiff
zsh -n "$zsh_file" || fail "zsh: _ledgerdiff is not valid zsh"
head -1 "$zsh_file" | grep -qx '#compdef ledgerdiff' || fail "zsh: no #compdef line"
for cmd in $commands; do grep -q "^    '$cmd:" "$zsh_file" || fail "zsh: no command entry for $cmd"; done
grep -qF "'--format[Output format]:text|json:(text json)'" "$zsh_file" || fail "zsh: --format choices missing"

# ---- the Debian package --------------------------------------------------------------------
(cd "$build" && cpack -G DEB -B "$work/cpack" >"$work/cpack.log" 2>&1) || { cat "$work/cpack.log" >&2; fail "cpack -G DEB failed"; }
deb=$(ls "$work"/cpack/ledgerdiff_*_*.deb 2>/dev/null | head -1)
if [[ -n $deb ]]; then
  has() { [[ ", $1," == *", $2 "* || ", $1," == *", $2,"* ]]; }  # has FIELD-VALUE PACKAGE
  depends=$(dpkg-deb -f "$deb" Depends)
  recommends=$(dpkg-deb -f "$deb" Recommends)
  suggests=$(dpkg-deb -f "$deb" Suggests)
  for dep in libpq5 libfmt9 libssl3 libxxhash0 libstdc++6 libc6; do
    has "$depends" "$dep" || fail "deb: Depends lacks $dep ($depends)"
  done
  # The server only for the embedded default, completions only with bash-completion (issue 22).
  for dep in postgresql-15 postgresql bash-completion; do
    has "$depends" "$dep" && fail "deb: Depends has $dep; it must be a Recommends ($depends)"
  done
  for dep in postgresql-15 bash-completion; do
    has "$recommends" "$dep" || fail "deb: Recommends lacks $dep ($recommends)"
  done
  has "$suggests" zsh || fail "deb: Suggests lacks zsh ($suggests)"
  [[ $(dpkg-deb -f "$deb" Package) == ledgerdiff ]] || fail "deb: package name"
  [[ $(dpkg-deb -f "$deb" Version) == "${version#ledgerdiff }" ]] || fail "deb: version differs from --version"
  contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
  for f in ./usr/bin/ledgerdiff ./usr/share/man/man1/ledgerdiff.1 ./usr/share/bash-completion/completions/ledgerdiff \
    ./usr/share/zsh/vendor-completions/_ledgerdiff ./usr/share/doc/ledgerdiff/README.md ./usr/share/doc/ledgerdiff/verify/README.md \
    ./usr/share/doc/ledgerdiff/copyright; do
    grep -qx -- "$f" <<<"$contents" || fail "deb: $f missing"
  done
  dpkg-deb -x "$deb" "$work/unpacked"
  # The copyright file in Debian's machine-readable format 1.0: a header paragraph, Files
  # paragraphs with Copyright and License, every license named there given in full once.
  python3 - "$work/unpacked/usr/share/doc/ledgerdiff/copyright" <<'PY' || fail "deb: copyright file (see above)"
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
errors = []
paras = [p for p in re.split(r"\n\s*\n", text.strip("\n"))]
def fields(p):
    out, key = {}, None
    for line in p.split("\n"):
        if line.startswith((" ", "\t")):
            if key is None: errors.append(f"continuation line before any field: {line!r}")
            else: out[key] += "\n" + line
        else:
            m = re.match(r"([A-Za-z][A-Za-z0-9-]*):\s?(.*)$", line)
            if not m: errors.append(f"not a field: {line!r}"); continue
            key = m.group(1)
            if key in out: errors.append(f"field {key} twice in a paragraph")
            out[key] = m.group(2)
    return out
ps = [fields(p) for p in paras]
head = ps[0]
if head.get("Format") != "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/":
    errors.append(f"Format is {head.get('Format')!r}")
if head.get("Upstream-Name") != "ledgerdiff": errors.append("Upstream-Name is not ledgerdiff")
files = [p for p in ps[1:] if "Files" in p]
standalone = {p["License"].split("\n")[0].strip(): p["License"] for p in ps[1:] if "Files" not in p and "License" in p}
if not files or files[0].get("Files", "").strip() != "*": errors.append("the first Files paragraph is not Files: *")
used = set()
for p in files:
    for k in ("Copyright", "License"):
        if not p.get(k, "").strip(): errors.append(f"Files: {p['Files']} has no {k}")
    first = p.get("License", "").split("\n")[0]
    used |= {n.strip() for n in re.split(r"\s+(?:and|or)\s+", first) if n.strip()}
for name in used:
    if name not in standalone and "\n" not in next((p["License"] for p in files if p["License"].startswith(name)), ""):
        errors.append(f"license {name} is used but its text is nowhere")
for name, body in standalone.items():
    if name not in used: errors.append(f"license {name} is given but no Files paragraph uses it")
    if len(body.split("\n")) < 2: errors.append(f"license {name} has no text")
for e in errors: print("copyright:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
  [[ $("$work/unpacked/usr/bin/ledgerdiff" --version) == "$version" ]] || fail "deb: packaged binary does not run"
else
  fail "cpack made no .deb"
fi

# ---- CI templates and the README's copy-paste examples -------------------------------------
python3 - "$src" <<'PY' || fail "CI templates (see above)"
import re, sys, yaml
src = sys.argv[1]
errors = []
def need(cond, what):
    if not cond: errors.append(what)

action = yaml.safe_load(open(f"{src}/ci/github/action.yml"))
need(action.get("runs", {}).get("using") == "composite", "action.yml: not a composite action")
steps = action["runs"]["steps"]
for s in steps:
    if "run" in s: need("shell" in s, f"action.yml: step {s.get('name')} has run but no shell")
    need(("run" in s) != ("uses" in s), f"action.yml: step {s.get('name')} needs exactly one of run/uses")
uses = [s["uses"] for s in steps if "uses" in s]
need(any(u.startswith("actions/upload-artifact@") for u in uses), "action.yml: no actions/upload-artifact step")
need(any("GITHUB_STEP_SUMMARY" in s.get("run", "") for s in steps), "action.yml: no step summary")
need(any("ledgerdiff --version" in s.get("run", "") for s in steps), "action.yml: install step does not check the binary")
text = open(f"{src}/ci/github/action.yml").read()
for ref in re.findall(r"inputs\.([\w-]+)", text):
    need(ref in action["inputs"], f"action.yml: uses undeclared input {ref}")
for ref in re.findall(r"steps\.([\w-]+)\.", text):
    need(any(s.get("id") == ref for s in steps), f"action.yml: refers to unknown step id {ref}")

gitlab = yaml.safe_load(open(f"{src}/ci/gitlab/ledgerdiff.gitlab-ci.yml"))
job = gitlab.get(".ledgerdiff", {})
need(job.get("artifacts", {}).get("reports", {}).get("junit"), "gitlab: no artifacts:reports:junit")
need(job.get("artifacts", {}).get("when") == "always", "gitlab: artifacts not kept on failure")
need(any("ledgerdiff" in line for line in job.get("script", [])), "gitlab: script does not run ledgerdiff")
junit = job["artifacts"]["reports"]["junit"]
need(any(junit in line for line in job["script"]), "gitlab: the junit report path is not what the script writes")

readme = open(f"{src}/README.md").read()
section = readme.split("## CI templates", 1)
need(len(section) == 2, "README.md: no '## CI templates' section")
blocks = re.findall(r"```yaml\n(.*?)```", section[-1].split("\n## ", 1)[0], re.S)
need(len(blocks) >= 2, "README.md: CI templates section lacks the two yaml examples")
for b in blocks:
    doc = yaml.safe_load(b)
    need(isinstance(doc, dict), "README.md: a yaml example is not a mapping")
gh = [yaml.safe_load(b) for b in blocks if "jobs" in b]
need(gh and any("ci/github" in str(st.get("uses", "")) for j in gh[0]["jobs"].values() for st in j["steps"]),
     "README.md: the GitHub example does not use ci/github")
gl = [yaml.safe_load(b) for b in blocks if "include" in b]
need(gl and any(isinstance(v, dict) and v.get("extends") == ".ledgerdiff" for v in gl[0].values()),
     "README.md: the GitLab example does not extend .ledgerdiff")
for e in errors: print(e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
# ...and their shell steps do what they claim, run as their runners would (ci_templates_run.py).
mkdir "$work/ci"
python3 "$src/tests/ci_templates_run.py" "$src" "$prefix/bin" "$work/ci" || fail "CI templates do not run (see above)"

if ((failures)); then
  echo "packaging_test: $failures failure(s)" >&2
  exit 1
fi
echo "packaging_test: install, man page, completions, .deb and CI templates OK"
