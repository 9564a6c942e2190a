#!/usr/bin/env bash
# The HTML reports read at 800 px (issue 22): every page kind, rendered by a real browser
# (headless Chromium) in an 800 px wide window, must not scroll sideways, must not push anything
# past the window's edge (wide tables scroll inside their own box instead), must show the verdict
# columns (verify's per-table status, the gates' check results, the timeline's lane key) without
# scrolling, must keep every chart label inside its chart, and must not shrink chart text below
# 7 px.
#
# Pages: the renderers' samples (render_test's SampleReportForBrowser and
# GateReports.SamplePagesForBrowser: verify divergent / identical / error / 8,000 attempts,
# verify-range, selftest, chaos; render_range_test's RenderRange.SamplePagesForBrowser:
# verify-range divergent with long table names and a state difference, identical, incomplete)
# and real reports of the tool (a divergent verify, a chaos round, a sweep) on an embedded server
# kept in the scratch directory, and a divergent verify-range between the verify's two kept
# schemas (the kept cluster served by pg_ctl for it).
#
# No table name (code.name) may break across lines on any page. The verify-range pages (issue
# 46: the cut-over page) are also read at 1400 px, screenshot at 800 and 1400 px, and must hold
# the headline finding, the per-column row diff and the look-again command in their DOM.
# SHOTS=DIR copies the screenshots there.
#
# A probe script is added to a copy of each page (the reports themselves carry no script);
# `chromium --dump-dom` prints the DOM after it ran, with its findings in <pre id="ld-probe">.
# Usage: report_browser_test.sh BUILD_DIR. Exit 0 pass, 1 fail (no Chromium is a failure too:
# ci/bootstrap --for test installs it). CHROMIUM picks the browser; KEEP=1 keeps the scratch directory.
set -euo pipefail
build=$(realpath "$1")
bin=$build/ledgerdiff
render=$build/tests/render_test
render_range=$build/tests/render_range_test

chromium=${CHROMIUM:-}
if [[ -z $chromium ]]; then
  for c in chromium chromium-browser google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then chromium=$c; break; fi
  done
fi
if [[ -z $chromium ]]; then
  echo "report_browser_test: FAILED: no chromium to render the reports in (run ci/bootstrap --for test, or apt-get install -y chromium)" >&2
  exit 1
fi
[[ -x $bin && -x $render && -x $render_range ]] || { echo "report_browser_test: build ledgerdiff and render_test first" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/ldbrowser.XXXXXX")
cleanup() { [[ ${KEEP:-0} == 1 ]] && echo "kept $work" >&2 || rm -rf "$work"; }
trap cleanup EXIT
chmod 0755 "$work"  # as root the embedded server runs as postgres and must reach its cluster here
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# ---- the pages -----------------------------------------------------------------------------
LEDGERDIFF_RENDER_SAMPLE_DIR=$work/sample "$render" \
  --gtest_filter='RenderHtml.SampleReportForBrowser:GateReports.SamplePagesForBrowser' >"$work/render.log" 2>&1 ||
  { cat "$work/render.log" >&2; fail "render_test could not write the sample pages"; }
LEDGERDIFF_RENDER_SAMPLE_DIR=$work/sample "$render_range" --gtest_filter='RenderRange.SamplePagesForBrowser' \
  >"$work/render_range.log" 2>&1 ||
  { cat "$work/render_range.log" >&2; fail "render_range_test could not write the sample pages"; }

# Real runs: the embedded server's cluster and every temporary file stay in the scratch directory.
real() {  # real NAME WANT_EXIT ledgerdiff-args...
  local name=$1 want=$2 rc=0
  shift 2
  env -u LEDGERDIFF_DB TMPDIR="$work" "$bin" "$@" --keep-db "$work/pg" --report "$work/real/$name" \
    >"$work/$name.out" 2>"$work/$name.err" || rc=$?
  [[ $rc == "$want" ]] || { tail -5 "$work/$name.err" >&2; fail "ledgerdiff $1 exited $rc, not $want"; }
}
real verify 1 verify --range 2:401 --workers 3 --job-size 25 --inject-bug drop-row@201
real chaos 0 chaos --range 2:301 --workers 2 --job-size 50 --seed 3 --rounds 1 --faults kill=1,hang=1
real sweep 0 sweep --range 2:201 --workers 1,2 --job-size 50,100

# verify-range between the divergent verify's two kept schemas: the kept cluster served by
# pg_ctl as its owner, on its own unix socket, for this one run.
serve_pg() {  # serve_pg start|stop
  local owner data=$work/pg/data bindir
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  owner=$(stat -c %U "$data")
  local cmd=("$bindir/pg_ctl" -D "$data" -l "$work/pg/serve.log" -w -t 60)  # the log where its owner may write
  if [[ $1 == start ]]; then cmd+=(-o "-k $work/pg -p 54646 -c listen_addresses= -c fsync=off" start); else cmd+=(-m fast stop); fi
  if [[ $(id -un) == "$owner" ]]; then "${cmd[@]}"; else runuser -u "$owner" -- "${cmd[@]}"; fi
}
schemas=($(grep -o 'ld_[A-Za-z0-9_]*_\(serial\|parallel\)' "$work/verify.out" | awk '!seen[$0]++'))
if [[ ${#schemas[@]} -ne 2 ]]; then
  fail "the divergent verify named no serial and parallel schema: ${schemas[*]:-none}"
elif ! serve_pg start >"$work/pg-serve.out" 2>&1; then
  cat "$work/pg-serve.out" "$work/pg/serve.log" >&2 || true
  fail "could not serve the kept cluster for verify-range"
else
  trap 'serve_pg stop >/dev/null 2>&1 || true; cleanup' EXIT
  conn="host=$work/pg port=54646 user=ledgerdiff dbname=postgres"
  rc=0
  env -u LEDGERDIFF_DB "$bin" verify-range --left "$conn" --left-schema "${schemas[0]}" --right "$conn" \
    --right-schema "${schemas[1]}" --range 2:401 --report "$work/real/verify-range" \
    --markdown "$work/verify-range.md" --junit "$work/verify-range.xml" \
    >"$work/verify-range.out" 2>"$work/verify-range.err" || rc=$?
  [[ $rc == 1 ]] || { tail -5 "$work/verify-range.err" >&2; fail "ledgerdiff verify-range exited $rc, not 1"; }
  grep -q 'Divergent at ledger 201' "$work/verify-range.md" || fail "verify-range's Markdown has no headline finding"
  grep -q 'name="headline" value="Divergent at ledger 201"' "$work/verify-range.xml" ||
    fail "verify-range's JUnit has no headline property"
  serve_pg stop >/dev/null 2>&1 || true
fi

# ---- the probe -----------------------------------------------------------------------------
cat >"$work/probe.html" <<'JS'
<script>
(function () {
  var out = [], de = document.documentElement, vw = de.clientWidth;
  document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  function label(el) {
    var c = el.getAttribute('class');
    return el.tagName.toLowerCase() + (c ? '.' + c.split(' ').join('.') : '') + ' "' +
        (el.textContent || '').replace(/\s+/g, ' ').trim().slice(0, 50) + '"';
  }
  function scroller(el) {
    for (var p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return p;
    }
    return null;
  }
  if (de.scrollWidth > vw) out.push('the page is ' + de.scrollWidth + ' px wide in a ' + vw + ' px window');
  var all = document.body.querySelectorAll('*'), n = 0;
  for (var i = 0; i < all.length; i++) {
    var el = all[i];
    if (el.id === 'ld-probe' || el.tagName === 'SCRIPT') continue;
    if (el.closest('svg') && el.tagName.toLowerCase() !== 'svg') continue;
    var r = el.getBoundingClientRect();
    if (!r.width && !r.height) continue;
    ++n;
    if (!scroller(el) && (r.right > vw + 0.5 || r.left < -0.5))
      out.push(label(el) + ' spans ' + Math.round(r.left) + '..' + Math.round(r.right) + ' px, past the window');
    var cs = getComputedStyle(el);
    if ((cs.overflowX === 'hidden' || cs.overflowX === 'clip') && el.scrollWidth > el.clientWidth + 1)
      out.push(label(el) + ' clips its content');
  }
  // What a reader looks for first fits without scrolling.
  document.querySelectorAll('table.tables, table.checks, table.lane-key, table.runs').forEach(function (t) {
    var box = scroller(t), right = box ? box.getBoundingClientRect().right : vw;
    if (t.getBoundingClientRect().right > right + 0.5) out.push(label(t).slice(0, 60) + ' needs scrolling to be read');
  });
  document.querySelectorAll('svg').forEach(function (svg) {
    var vb = svg.viewBox && svg.viewBox.baseVal;
    if (!vb || !vb.width) return;
    var box = svg.getBoundingClientRect(), scale = box.width / vb.width;
    svg.querySelectorAll('text, tspan').forEach(function (t) {
      var px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (px < 7) out.push('svg.' + svg.getAttribute('class') + ' text "' + t.textContent.trim().slice(0, 30) +
                           '" renders at ' + px.toFixed(1) + ' px');
      if (t.tagName !== 'text') return;
      var b = t.getBoundingClientRect();  // as drawn: transforms (a rotated axis title) applied
      if (b.left < box.left - 0.5 || b.right > box.right + 0.5 || b.top < box.top - 0.5 || b.bottom > box.bottom + 0.5)
        out.push('svg.' + svg.getAttribute('class') + ' text "' + t.textContent.trim().slice(0, 30) +
                 '" lies outside its chart (x ' + (b.left - box.left).toFixed(1) + '..' + (b.right - box.left).toFixed(1) +
                 ' of ' + box.width.toFixed(1) + ')');
    });
  });
  // A table name never breaks across lines (issue 46: "history_trades_6000 0"): one box per name.
  document.querySelectorAll('code.name').forEach(function (c) {
    if (c.getClientRects().length > 1) out.push('table name "' + c.textContent + '" breaks across lines');
  });
  var pre = document.createElement('pre');
  pre.id = 'ld-probe';
  pre.textContent = (out.length ? out.join('\n') : 'ok') + '\nprobe: ' + n + ' elements, window ' + vw + ' px';
  document.body.appendChild(pre);
})();
</script>
JS

# ---- the pages in the browser --------------------------------------------------------------
browser() {  # browser WIDTH HEIGHT ARGS...: headless Chromium in a WIDTH x HEIGHT px window
  local width=$1 height=$2
  shift 2
  "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$work/profile" --hide-scrollbars \
    --window-size="$width,$height" "$@"
}
# read PAGE WIDTH: the probe's findings on PAGE at WIDTH px; the DOM it leaves in $probed.dom.
read_page() {
  local page=$1 width=$2
  probed=$work/probed/${page//\//_}.$width
  mkdir -p "$work/probed"
  awk -v probe="$work/probe.html" '/<\/body>/ && !done { while ((getline l < probe) > 0) print l; done = 1 } { print }' \
    "$work/$page" >"$probed.html"
  browser "$width" 1000 --dump-dom "file://$probed.html" >"$probed.dom" 2>"$probed.log" ||
    { fail "$page: chromium failed at $width px (see $probed.log)"; return 1; }
  findings=$(sed -n '/<pre id="ld-probe">/,/<\/pre>/p' "$probed.dom" | sed -e 's/.*<pre id="ld-probe">//' -e 's/<\/pre>.*//')
  if [[ -z $findings ]]; then
    fail "$page: the probe did not run"
  elif ! grep -q "^probe: [0-9]* elements, window $width px\$" <<<"$findings"; then
    fail "$page: not measured at $width px: $findings"
  elif [[ $(head -1 <<<"$findings") != ok ]]; then
    fail "$page at $width px:"$'\n'"$(sed 's/^/  /' <<<"$findings")"
  else
    echo "ok: $page at $width px ($(tail -1 <<<"$findings"))"
  fi
}

pages=$(cd "$work" && find sample real -name index.html | sort)
[[ $(wc -l <<<"$pages") -ge 14 ]] || fail "expected at least 14 pages, found: $pages"
for page in $pages; do read_page "$page" 800 || true; done

# The cut-over pages (issue 46) at 800 and 1400 px: the headline finding, the per-column row diff
# and the look-again command in the DOM, and a screenshot of each.
mkdir -p "$work/shots"
for page in sample/verify-range-divergent/index.html real/verify-range/index.html; do
  [[ -f $work/$page ]] || { fail "$page was not written"; continue; }
  for width in 800 1400; do
    [[ $width == 800 ]] || read_page "$page" "$width" || continue
    probed=$work/probed/${page//\//_}.$width
    grep -q '<span class="headline">Divergent at ledger [0-9]*</span>' "$probed.dom" ||
      fail "$page at $width px: no headline finding in the DOM"
    grep -q '<table class="rows"><tbody><tr><th></th><th>' "$probed.dom" ||
      fail "$page at $width px: no per-column row diff in the DOM"
    grep -q '<pre class="look-again">ledgerdiff verify-range ' "$probed.dom" ||
      fail "$page at $width px: no look-again command in the DOM"
    shot=${page%/index.html}
    shot=$work/shots/${shot//\//-}.$width.png
    browser "$width" 2600 --screenshot="$shot" "file://$work/$page" >/dev/null 2>&1 &&
      [[ -s $shot ]] ||
      fail "$page: no screenshot at $width px"
  done
done
if [[ -n ${SHOTS:-} ]]; then mkdir -p "$SHOTS" && cp "$work"/shots/*.png "$SHOTS"/ 2>/dev/null || true; fi

if ((failures)); then
  echo "report_browser_test: $failures failure(s)" >&2
  exit 1
fi
echo "report_browser_test: $(wc -l <<<"$pages") pages read at 800 px, the verify-range pages at 1400 px too"
