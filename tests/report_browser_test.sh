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
# verify-range, selftest, chaos) and real reports of the tool (a divergent verify, a chaos round,
# a sweep) on an embedded server kept in the scratch directory.
#
# A probe script is added to a copy of each page (the reports themselves carry no script);
# `chromium --dump-dom` prints the DOM after it ran, with its findings in <pre id="ld-probe">.
# Usage: report_browser_test.sh BUILD_DIR. Exit 0 pass, 1 fail (no Chromium is a failure too:
# ci/bootstrap installs it). CHROMIUM picks the browser; KEEP=1 keeps the scratch directory.
set -euo pipefail
build=$(realpath "$1")
bin=$build/ledgerdiff
render=$build/tests/render_test

chromium=${CHROMIUM:-}
if [[ -z $chromium ]]; then
  for c in chromium chromium-browser google-chrome; do
    if command -v "$c" >/dev/null 2>&1; then chromium=$c; break; fi
  done
fi
if [[ -z $chromium ]]; then
  echo "report_browser_test: FAILED: no chromium to render the reports in (run ci/bootstrap, or apt-get install -y chromium)" >&2
  exit 1
fi
[[ -x $bin && -x $render ]] || { echo "report_browser_test: build ledgerdiff and render_test first" >&2; exit 2; }

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
  var pre = document.createElement('pre');
  pre.id = 'ld-probe';
  pre.textContent = (out.length ? out.join('\n') : 'ok') + '\nprobe: ' + n + ' elements, window ' + vw + ' px';
  document.body.appendChild(pre);
})();
</script>
JS

# ---- every page at 800 px ------------------------------------------------------------------
pages=$(cd "$work" && find sample real -name index.html | sort)
[[ $(wc -l <<<"$pages") -ge 10 ]] || fail "expected at least 10 pages, found: $pages"
for page in $pages; do
  probed=$work/probed/${page//\//_}
  mkdir -p "$work/probed"
  awk -v probe="$work/probe.html" '/<\/body>/ && !done { while ((getline l < probe) > 0) print l; done = 1 } { print }' \
    "$work/$page" >"$probed"
  "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$work/profile" --hide-scrollbars \
    --window-size=800,1000 --dump-dom "file://$probed" >"$probed.dom" 2>"$probed.log" ||
    { fail "$page: chromium failed (see $probed.log)"; continue; }
  findings=$(sed -n '/<pre id="ld-probe">/,/<\/pre>/p' "$probed.dom" | sed -e 's/.*<pre id="ld-probe">//' -e 's/<\/pre>.*//')
  if [[ -z $findings ]]; then
    fail "$page: the probe did not run"
  elif ! grep -q '^probe: [0-9]* elements, window 800 px$' <<<"$findings"; then
    fail "$page: not measured at 800 px: $findings"
  elif [[ $(head -1 <<<"$findings") != ok ]]; then
    fail "$page at 800 px:"$'\n'"$(sed 's/^/  /' <<<"$findings")"
  else
    echo "ok: $page ($(tail -1 <<<"$findings"))"
  fi
done

if ((failures)); then
  echo "report_browser_test: $failures failure(s)" >&2
  exit 1
fi
echo "report_browser_test: $(wc -l <<<"$pages") pages read at 800 px"
