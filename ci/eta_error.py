#!/usr/bin/env python3
"""How honest a command's ETA is (issue 46): runs it off a terminal with --progress-interval S,
timestamps every stderr line as it arrives, and compares, at every 10% of the run's wall time, the
remaining time the last progress line predicted ("..., ETA 3 min 5 s") with the time the run
actually still took. Prints one row per step and the worst error from the first 10% on, then
the longest silence of each phase: the most seconds between two of its progress lines (issue 46:
a digest is never silent for more than a few seconds).

  ci/eta_error.py [--interval S] -- ledgerdiff verify --range 2:20001 --workers 4

The command's exit status is checked (a run that failed measured nothing): non-zero exits 3.
A step with no ETA line before it prints "-" (nothing was predicted there: that is an error too).
"""
import argparse
import re
import subprocess
import sys
import time

PHASE = re.compile(r"^\d{4}-\d\d-\d\dT[\d:]+Z (.+?): [\d,]+ (?:/ [\d,]+ )?\w+")
ETA = re.compile(r", ETA (?:(\d+) h (\d+) min|(\d+) min (\d+) s|([0-9.]+) s)\s*$")


def eta_seconds(line):
    m = ETA.search(line)
    if not m:
        return None
    h, hm, mi, ms, s = m.groups()
    if h is not None:
        return int(h) * 3600 + int(hm) * 60
    if mi is not None:
        return int(mi) * 60 + int(ms)
    return float(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--interval", type=float, default=1.0, help="--progress-interval passed to the command")
    ap.add_argument("--log", help="also write the timestamped stderr here")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("no command given (after --)")
    cmd = cmd + ["--progress-interval", str(a.interval)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []  # (t, line)
    for line in proc.stderr:
        lines.append((time.monotonic() - start, line.rstrip("\n")))
    rc = proc.wait()
    total = time.monotonic() - start
    if a.log:
        with open(a.log, "w") as f:
            for t, line in lines:
                f.write(f"{t:9.2f} {line}\n")
    if rc != 0:
        print(f"eta_error: the command exited {rc}; nothing measured", file=sys.stderr)
        sys.exit(3)
    etas = [(t, eta_seconds(line), line) for t, line in lines if eta_seconds(line) is not None]
    print(f"run: {total:.1f} s, {len(lines)} stderr lines, {len(etas)} with an ETA")
    print(f"{'at':>5} {'t s':>8} {'predicted left s':>17} {'actual left s':>14} {'error':>8}  phase")
    worst = 0.0
    missing = 0
    for step in range(1, 10):
        t = total * step / 10
        before = [e for e in etas if e[0] <= t]
        actual = total - t
        if not before:
            missing += 1
            print(f"{step * 10:>4}% {t:8.1f} {'-':>17} {actual:14.1f} {'-':>8}")
            continue
        te, eta, line = before[-1]
        predicted = eta - (t - te)  # the prediction, aged to the step
        err = (predicted - actual) / actual
        worst = max(worst, abs(err))
        phase = re.sub(r"^\d{4}-\d\d-\d\dT[\d:]+Z ", "", line).split(":")[0]
        print(f"{step * 10:>4}% {t:8.1f} {predicted:17.1f} {actual:14.1f} {err:+8.0%}  {phase}")
    print(f"worst |error| from 10% on: {worst:.0%}; steps without a prediction: {missing}")
    last_at, longest = {}, {}
    for t, line in lines:
        m = PHASE.match(line)
        if not m:
            continue
        phase = m.group(1)
        if phase in last_at:
            longest[phase] = max(longest.get(phase, 0.0), t - last_at[phase])
        last_at[phase] = t
    for phase, gap in longest.items():
        print(f"longest silence of {phase}: {gap:.1f} s")


if __name__ == "__main__":
    main()
