#!/usr/bin/env bash
# Renders a verify HTML report in a real browser (headless Chromium) and saves a screenshot.
#
#   ci/check_report_browser.sh [REPORT_DIR] [OUT.png]
#
# REPORT_DIR: an existing report (a directory with index.html, from `ledgerdiff verify --report`).
# Without it the script makes one: with the real tool when it has `verify --report`
#   build/ledgerdiff verify --range 2:401 --workers 3 --job-size 25 --inject-bug drop-row@201 --report DIR
# (a divergent run, exit code 1 expected; LEDGERDIFF_CHECK_BUG=KIND@LEDGER picks another bug: a bug
# that cannot apply makes the run fail, and the error report is screenshotted instead), else with
# the sample report of the render test (LEDGERDIFF_RENDER_SAMPLE_DIR, tests/render_test.cc).
#
# Checks that Chromium renders the page without fetching anything and that the screenshot is a
# real image, then prints the PNG's path. Look at it: the verdict banner, the tables, the row
# diff and both charts should be readable (the automated check at 800 px is ctest
# report_browser_test, tests/report_browser_test.sh). Chromium: `apt-get install -y chromium`, or
# ci/bootstrap. Environment: BUILD_DIR (default build),
# CHROMIUM (default: chromium, chromium-browser or google-chrome, whichever exists), WINDOW_SIZE
# (default 1400,2700).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
REPORT_DIR="${1:-}"
OUT="${2:-}"

die() { echo "check_report_browser: $*" >&2; exit 2; }

CHROMIUM="${CHROMIUM:-}"
if [[ -z "$CHROMIUM" ]]; then
  for c in chromium chromium-browser google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then CHROMIUM="$c"; break; fi
  done
fi
[[ -n "$CHROMIUM" ]] || die "no chromium found (apt-get install -y chromium, or ci/bootstrap)"

WORK="$(mktemp -d /tmp/ldreport-check.XXXXXX)"
cleanup() { rm -rf "$WORK/profile"; }
trap cleanup EXIT

if [[ -z "$REPORT_DIR" ]]; then
  REPORT_DIR="$WORK/report"
  made=""
  BUG="${LEDGERDIFF_CHECK_BUG:-drop-row@201}"
  if [[ -x "$BUILD_DIR/ledgerdiff" ]] && "$BUILD_DIR/ledgerdiff" verify --help 2>/dev/null | grep -q -- '--report'; then
    echo "check_report_browser: running the real tool: ledgerdiff verify ... --report $REPORT_DIR" >&2
    set +e
    "$BUILD_DIR/ledgerdiff" verify --range 2:401 --workers 3 --job-size 25 --inject-bug "$BUG" \
      --report "$REPORT_DIR" >"$WORK/verify.out" 2>"$WORK/verify.err"
    rc=$?
    set -e
    # 1 = divergent, what an applied bug must produce; 2 (error) still writes a report to look at.
    [[ -f "$REPORT_DIR/index.html" ]] || die "ledgerdiff verify exited $rc and wrote no report; see $WORK/verify.err"
    [[ $rc -eq 1 ]] || echo "check_report_browser: note: ledgerdiff verify exited $rc, not 1 (divergent);" \
      "the report shows that; see $WORK/verify.out" >&2
    made="cli"
  fi
  if [[ -z "$made" ]]; then
    test_bin=""
    for d in "$BUILD_DIR" "$ROOT"/build-*; do
      if [[ -x "$d/tests/render_test" ]]; then test_bin="$d/tests/render_test"; break; fi
    done
    [[ -n "$test_bin" ]] || die "neither 'ledgerdiff verify --report' nor tests/render_test is built; pass a REPORT_DIR"
    echo "check_report_browser: 'verify --report' not available; using the render test's sample report" >&2
    LEDGERDIFF_RENDER_SAMPLE_DIR="$REPORT_DIR" "$test_bin" --gtest_filter='RenderHtml.SampleReportForBrowser' \
      >"$WORK/render_test.out" 2>&1 || die "render_test failed; see $WORK/render_test.out"
  fi
fi

INDEX="$(cd "$REPORT_DIR" && pwd)/index.html"
[[ -f "$INDEX" ]] || die "$INDEX does not exist"
[[ -n "$OUT" ]] || OUT="$WORK/report.png"

# Self-contained: nothing that makes a browser fetch (inline CSS and SVG only, no scripts).
if grep -Eq '<script|<link|<img|<iframe| src=| href=|url\(|@import' "$INDEX"; then
  die "$INDEX references external resources or scripts"
fi

"$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$WORK/profile" --hide-scrollbars \
  --screenshot="$OUT" --window-size="${WINDOW_SIZE:-1400,2700}" "file://$INDEX" >"$WORK/chromium.log" 2>&1 ||
  die "chromium failed; see $WORK/chromium.log"

[[ -s "$OUT" ]] || die "no screenshot written; see $WORK/chromium.log"
# A PNG signature, and more than a blank page's worth of bytes.
[[ "$(head -c 8 "$OUT" | od -An -tx1 | tr -d ' \n')" == "89504e470d0a1a0a" ]] || die "$OUT is not a PNG"
size=$(stat -c %s "$OUT")
[[ $size -gt 20000 ]] || die "$OUT is only $size bytes: the page looks blank"

echo "report:     $INDEX"
echo "screenshot: $OUT ($size bytes)"
