// Text and JSON of a verify report (contracts in verify_text_json.h).
#include "report/verify_text_json.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "core/report.h"
#include "core/text.h"
#include "dump/source_identity.h"
#include "report/ingest_text_json.h"
#include "report/diff_text_json.h"
#include "report/state_text_json.h"

namespace ledgerdiff::report {

using verify::VerifyReport;

nlohmann::json VerifyReportToJson(const VerifyReport& r) {
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& p : r.phases) phases.push_back({{"name", p.name}, {"seconds", p.seconds}});
  nlohmann::json diff = report::DiffReportToJson(r.diff);
  nlohmann::json j = {
      {"verdict", ToString(r.verdict())},
      {"identical", r.identical},
      {"run_id", r.run_id},
      {"range", {{"from", r.range.from}, {"to", r.range.to}}},
      {"workers", r.workers},
      {"job_size", r.job_size},
      {"schemas", {{"serial", r.serial_schema.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.serial_schema)},
                   {"parallel", r.parallel_schema},
                   {"kept", r.schemas_kept}}},
      {"baseline", r.baseline.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.baseline)},
      {"phases", phases},
      {"speedup", r.speedup},
      {"rows_per_table",
       {{"serial", r.serial ? nlohmann::json(r.serial->rows_per_table) : nlohmann::json(nullptr)},
        {"parallel", r.parallel.rows_per_table}}},
      {"first_divergent_ledger", diff.value("first_divergent_ledger", nlohmann::json(nullptr))},
      {"divergent_tables", diff.value("divergent_tables", nlohmann::json::array())},
      {"rows", diff.value("rows", nlohmann::json::array())},
      {"excluded_columns", diff.value("excluded_columns", nlohmann::json::array())},
      {"diff", diff},
      {"parallel_run", IngestReportToJson(r.parallel)},
  };
  if (r.serial) j["serial_run"] = IngestReportToJson(*r.serial);
  if (!r.look_again.empty()) j["look_again"] = r.look_again;
  j["first_divergent_job"] = nullptr;
  if (const auto& w = r.first_divergent_job)
    j["first_divergent_job"] = {{"job", w->job},         {"attempt", w->attempt},   {"worker", w->worker},
                                {"from", w->range.from}, {"to", w->range.to}, {"position", w->position}};
  if (!r.kept_cluster.empty())
    j["kept_cluster"] = {{"dir", r.kept_cluster}, {"remove", r.remove_command}};
  if (!r.evidence_gone.empty()) j["evidence_gone"] = r.evidence_gone;
  if (!r.saved_baseline.empty()) j["saved_baseline"] = r.saved_baseline;
  if (!r.bug.empty()) j["injected_bug"] = r.bug;
  if (!r.error.empty()) j["error"] = r.error;
  if (r.target) j["target"] = r.target->ToJson();
  return j;
}

std::string DescribeWritingJob(Ledger ledger, const verify::WritingJob& w) {
  return fmt::format("ledger {} was written on the parallel side by job {} (ledgers {}, attempt {}, worker {}); it is the job's "
                     "{} ledger{}",
                     ledger, w.job, w.range.str(), w.attempt, w.worker, w.position,
                     w.position == "inner" ? "" : ": a job boundary, suspect the boundary handling");
}

std::string RenderVerifyText(const VerifyReport& r) {
  std::string out = r.target ? r.target->Line() + "\n" : "";
  if (!r.error.empty()) {
    out += fmt::format("ERROR: {}\n", r.error);
  } else {
    out += report::RenderDiffText(r.diff);
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  if (r.first_divergent_job && r.diff.first_divergent_ledger)
    out += DescribeWritingJob(*r.diff.first_divergent_ledger, *r.first_divergent_job) + "\n";
  out += fmt::format("verify {}: {} ({}), {}, jobs of {}\n", r.run_id, r.range.str(),
                     FormatCountOf(r.range.size(), "ledger"), FormatCountOf(r.workers, "worker"),
                     FormatCountOf(r.job_size, "ledger"));
  for (const auto& p : r.phases) out += fmt::format("  {:<18} {:>10}\n", p.name, FormatDuration(p.seconds));
  if (r.speedup > 0) out += fmt::format("  parallel speed-up  {:>9.2f}x\n", r.speedup);
  if (!r.saved_baseline.empty()) out += fmt::format("  baseline saved to {}\n", r.saved_baseline);
  if (r.schemas_kept) {
    out += fmt::format("  schemas kept: {}{}\n", r.serial_schema.empty() ? "" : "\"" + r.serial_schema + "\", ",
                       "\"" + r.parallel_schema + "\"");
    if (!r.kept_cluster.empty()) out += fmt::format("  embedded cluster kept in {}\n", r.kept_cluster);
    if (!r.look_again.empty()) out += fmt::format("  look again: {}\n", r.look_again);
    if (!r.remove_command.empty()) out += fmt::format("  remove it when done: {}\n", r.remove_command);
  }
  if (!r.evidence_gone.empty()) out += fmt::format("  nothing kept: {}\n", r.evidence_gone);
  out += fmt::format("verdict: {}\n", UpperAscii(ToString(r.verdict())));
  return out;
}

std::string RenderFollowCycle(const verify::FollowCycle& c) {
  // Nothing is called verified that was not compared (the frontier before the first ledger).
  const bool none = c.frontier < c.first;
  std::string s = none ? fmt::format("cycle {}: nothing verified yet", c.number)
                       : fmt::format("cycle {}: verified through {}", c.number, c.frontier);
  if (c.compared)
    s += fmt::format(" (+{}, {} rows)", FormatCountOf(c.compared->size(), "ledger"), FormatCount(c.rows_left));
  else if (none && !c.finding)
    s += fmt::format(" (waiting for ledger {})", c.first);
  else
    s += " (nothing new)";
  auto head = [](const std::optional<Ledger>& h) { return h ? std::to_string(*h) : std::string("none"); };
  s += fmt::format(", heads left {} right {}", head(c.head_left), head(c.head_right));
  if (c.behind_left || c.behind_right)
    s += fmt::format(" ({} {} behind)", c.behind_left ? "left" : "right", FormatCount(std::max(c.behind_left, c.behind_right)));
  s += fmt::format(", lag {}", FormatCountOf(c.lag_ledgers, "ledger"));
  if (c.lag_seconds) s += fmt::format(" ({:.0f} s)", *c.lag_seconds);
  // The lag's other parts, when there are any (the side behind is said above).
  std::vector<std::string> parts;
  if (c.held_back_ledgers) parts.push_back(fmt::format("{} held back by a divergence", FormatCount(c.held_back_ledgers)));
  if (c.backlog_ledgers) parts.push_back(fmt::format("{} not compared yet", FormatCount(c.backlog_ledgers)));
  for (const auto& [side, gap] : {std::pair{"left", c.gap_left}, std::pair{"right", c.gap_right}})
    if (gap) parts.push_back(fmt::format("{} missing on the {} (a gap)", FormatCount(gap), side));
  if (!parts.empty()) s += fmt::format(" [{}]", fmt::join(parts, ", "));
  if (c.scrubbed) s += fmt::format(", scrubbed {}", c.scrubbed->str());
  if (c.rechecked) s += fmt::format(", rechecked {} ({})", c.rechecked->ledgers.str(), c.rechecked->verdict);
  if (c.reaped) s += fmt::format(", reaped {} (gone from both sides)", c.reaped->str());
  s += fmt::format(", {:.1f} s", c.seconds);
  if (!c.retry.empty()) s += " (" + c.retry + ")";
  if (c.finding) {
    const verify::FollowFinding& f = *c.finding;
    std::string tables;
    for (const auto& t : f.tables) tables += (tables.empty() ? "" : ", ") + t;
    if (f.gone)
      s += fmt::format("\n  gone after it was verified: {} from ledger {} ({} side{}; {})",
                       FormatCountOf(f.gone_ledgers, "ledger"), f.ledger, ToString(f.sides),
                       f.sides == SideSet::kBoth ? "s" : "",
                       tables);
    else if (f.changed_after_verified)
      s += fmt::format("\n  changed after it was verified: ledger {} ({} side{}; {})", f.ledger, ToString(f.sides),
                       f.sides == SideSet::kBoth ? "s" : "", tables.empty() ? "no table named" : tables);
    else
      s += fmt::format("\n  divergent: first divergent ledger {} ({})", f.ledger, tables.empty() ? "see below" : tables);
  }
  for (const auto& closed : c.closed)
    s += fmt::format("\n  closed: the divergence at ledgers {} (found {} in cycle {}): {}", closed.divergence.ledgers.str(),
                     closed.divergence.how, closed.divergence.cycle, closed.why);
  if (c.state) {
    // The state comparison this cycle tried: its lines, indented under the cycle's.
    const std::string state = RenderStateText(*c.state);
    for (size_t at = 0; at < state.size();) {
      const size_t end = state.find('\n', at);
      s += "\n  " + state.substr(at, end == std::string::npos ? std::string::npos : end - at);
      at = end == std::string::npos ? state.size() : end + 1;
    }
  }
  if (!c.open.empty() && c.open.front().how == verify::kFoundInState)  // the state's alone (it is last)
    s += fmt::format("\n  open: 1 divergence (the state at ledger {}, found in cycle {})", c.open.front().ledgers.from,
                     c.open.front().cycle);
  else if (!c.open.empty())
    s += fmt::format("\n  open: {} (the first at ledgers {}, found {} in cycle {})",
                     FormatCountOf(c.open.size(), "divergence"), c.open.front().ledgers.str(), c.open.front().how,
                     c.open.front().cycle);
  return s;
}

nlohmann::json OpenDivergenceToJson(const verify::OpenDivergence& d) {
  nlohmann::json j = {{"from", d.ledgers.from}, {"to", d.ledgers.to}, {"how", d.how},        {"sides", ToString(d.sides)},
                      {"tables", d.tables},     {"found_at", d.found_at}, {"found_cycle", d.cycle}};
  if (d.how == verify::kFoundInState) j["differing_keys"] = d.differing_keys;
  return j;
}

// When state last agreed (issue 45), as the cycle JSON and follow-status show it.
static void AddStateAgreement(nlohmann::json& j, const std::optional<Ledger>& agreed_ledger, int64_t agreed_at,
                       int64_t compared_at, bool divergent) {
  j["state_last_agreed_ledger"] = agreed_ledger ? nlohmann::json(*agreed_ledger) : nlohmann::json();
  j["state_last_agreed_at"] = agreed_at ? nlohmann::json(agreed_at) : nlohmann::json();
  j["state_last_compared_at"] = compared_at ? nlohmann::json(compared_at) : nlohmann::json();
  j["state_differs"] = divergent;  // "divergent" would read as a verdict in a search of the output
}

// A closed divergence as the cycle JSON and follow-status show it: the open one's keys, when it
// closed and why (verify/README.md).
nlohmann::json ClosedDivergenceToJson(const verify::ClosedDivergence& c) {
  nlohmann::json j = OpenDivergenceToJson(c.divergence);
  j["closed_at"] = c.closed_at;
  j["why"] = c.why;
  return j;
}

nlohmann::json FollowCycleToJson(const verify::FollowCycle& c) {
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  auto range = [](const std::optional<LedgerRange>& r) {
    return r ? nlohmann::json{{"from", r->from}, {"to", r->to}} : nlohmann::json();
  };
  nlohmann::json stages = nlohmann::json::object();
  for (const auto& s : c.stages) stages[s.name] = s.seconds;
  nlohmann::json j = {{"cycle", c.number},
                      {"verified_through", c.frontier},
                      {"compared", range(c.compared)},
                      {"scrubbed", range(c.scrubbed)},
                      {"head", {{"left", opt(c.head_left)}, {"right", opt(c.head_right)}}},
                      {"lag_ledgers", c.lag_ledgers},
                      {"behind", {{"left", c.behind_left}, {"right", c.behind_right}}},
                      {"gap_ledgers", {{"left", c.gap_left}, {"right", c.gap_right}}},
                      {"held_back_ledgers", c.held_back_ledgers},
                      {"backlog_ledgers", c.backlog_ledgers},
                      {"lag_seconds", opt(c.lag_seconds)},
                      {"rows_compared", {{"left", c.rows_left}, {"right", c.rows_right}}},
                      {"seconds", c.seconds},
                      {"stages", stages},
                      {"scrub_coverage", c.scrub_coverage},
                      {"divergences_total", c.divergences_total},
                      {"finding", nullptr}};
  if (!c.retry.empty()) j["retry"] = c.retry;
  if (c.reaped) j["reaped"] = range(c.reaped);
  if (c.rechecked)
    j["rechecked"] = {{"from", c.rechecked->ledgers.from}, {"to", c.rechecked->ledgers.to}, {"verdict", c.rechecked->verdict}};
  if (c.finding)
    j["finding"] = {{"kind", c.finding->gone                     ? "gone_after_verified"
                             : c.finding->changed_after_verified ? "changed_after_verified"
                                                                 : "divergent"},
                    {"ledger", c.finding->ledger},
                    {"sides", c.finding->changed_after_verified ? nlohmann::json(std::string(ToString(c.finding->sides))) : nlohmann::json()},
                    {"tables", c.finding->tables}};
  if (c.finding && c.finding->gone) j["finding"]["ledgers"] = c.finding->gone_ledgers;
  j["open_divergences"] = nlohmann::json::array();
  for (const auto& d : c.open) j["open_divergences"].push_back(OpenDivergenceToJson(d));
  j["closed_divergences"] = nlohmann::json::array();
  for (const auto& d : c.closed) j["closed_divergences"].push_back(ClosedDivergenceToJson(d));
  j["state"] = c.state ? StateToJson(*c.state) : nlohmann::json();
  AddStateAgreement(j, c.state_last_agreed_ledger, c.state_last_agreed_at, c.state_last_compared_at, c.state_divergent);
  return j;
}

std::string RenderVerifyRangeText(const verify::VerifyRangeReport& report) {
  std::string text = RenderDiffText(report.diff);
  if (!report.look_again.empty()) text += fmt::format("  look again: {}\n", report.look_again);
  if (report.state) {
    text += RenderStateText(*report.state);
    text += RenderStateVerdictLine(report.diff.verdict, report.verdict());
  }
  if (report.manifest)
    text += report.shard ? fmt::format("part {} (shard {} of {}) written: join the parts with `ledgerdiff "
                                       "manifest merge --out FULL PART...`\n",
                                       report.manifest->manifest_path, report.shard->index, report.shard->count)
                         : fmt::format("manifest {} written\n", report.manifest->manifest_path);
  if (!report.checkpoint.empty() && report.ledgers_resumed)
    text += fmt::format("resumed from checkpoint {}: {} taken from it, {} digested\n", report.checkpoint,
                        FormatCountOf(report.ledgers_resumed, "ledger"),
                        FormatCount(report.diff.range.size() - report.ledgers_resumed));
  return text;
}

nlohmann::json VerifyRangeToJson(const verify::VerifyRangeReport& report) {
  nlohmann::json j = DiffReportToJson(report.diff);
  if (!report.look_again.empty()) j["look_again"] = report.look_again;
  if (report.state) {
    j["state"] = StateToJson(*report.state);
    j["history_verdict"] = diff::VerdictName(report.diff.verdict);
    j["verdict"] = diff::VerdictName(report.verdict());
    j["identical"] = report.verdict() == diff::Verdict::kIdentical;
  }
  if (report.shard)
    j["shard"] = {{"index", report.shard->index},
                  {"count", report.shard->count},
                  {"full_range", {{"from", report.shard->full_range.from}, {"to", report.shard->full_range.to}}}};
  if (report.manifest)
    j["manifest"] = {{"path", report.manifest->manifest_path},
                     {"bytes", report.manifest->manifest_bytes},
                     {"root", report.manifest->root}};
  if (!report.checkpoint.empty()) {
    const uint64_t ledgers = report.diff.range.size();
    j["resume"] = {{"checkpoint", report.checkpoint},
                   {"ledgers_resumed", report.ledgers_resumed},
                   {"ledgers_digested", ledgers - report.ledgers_resumed}};
  }
  return j;
}

std::string RenderFollowText(const verify::FollowReport& r, const verify::FollowOptions& o,
                             const verify::FollowCycle* stopped, const verify::VerifyRangeReport* finding) {
  const std::string verified = r.frontier < r.first ? std::string("nothing verified yet")
                                                     : fmt::format("verified through ledger {}", r.frontier);
  std::string text = fmt::format("followed {} cycles: {}{}\n", r.cycles.size(), verified,
                                 r.reached_until              ? " (--until reached)"
                                 : stopped && !o.keep_going ? " (stopped at the divergence below)"
                                 : r.frontier < r.first     ? fmt::format(" (waiting for ledger {})", r.first)
                                                            : "");
  if (!r.cycles.empty() && !r.cycles.back().open.empty() && r.cycles.back().open.front().how == verify::kFoundInState) {
    const auto& state = r.cycles.back().open.front();
    text += fmt::format("1 divergence open (the state at ledger {}, found in cycle {}): the verdict stays divergent "
                        "until a state comparison at a common ledger agrees\n",
                        state.ledgers.from, state.cycle);
  } else if (!r.cycles.empty() && !r.cycles.back().open.empty()) {
    const auto& open = r.cycles.back().open;
    text += fmt::format("{} open (the first at ledgers {}, found {} in cycle {}): the verdict stays divergent until "
                        "a cycle finds both sides as verified there\n",
                        FormatCountOf(open.size(), "divergence"), open.front().ledgers.str(), open.front().how,
                        open.front().cycle);
  }
  if (stopped && finding) {
    text += RenderFollowCycle(*stopped) + "\n" + RenderDiffText(finding->diff);
    if (!finding->look_again.empty()) text += fmt::format("  look again: {}\n", finding->look_again);
  }
  return text;
}

std::string RenderFollowStopped(const verify::FollowReport& r, const std::string& why) {
  const std::string verified = r.frontier < r.first ? std::string("nothing verified yet")
                                                     : fmt::format("verified through ledger {}", r.frontier);
  return fmt::format("stopped by {}: {} after {} ({} in all); {}\n", why, verified,
                     FormatCountOf(r.cycles.size(), "cycle"), r.cycles_total,
                     r.open_divergences ? FormatCountOf(r.open_divergences, "divergence") + " open"
                                        : std::string("no divergence open"));
}

nlohmann::json FollowToJson(const verify::FollowReport& r, const verify::FollowOptions& o,
                            const verify::VerifyRangeReport* finding, const std::string& stopped_by) {
  nlohmann::json cycles = nlohmann::json::array();
  for (const auto& c : r.cycles) cycles.push_back(FollowCycleToJson(c));
  nlohmann::json j = {{"follow",
                       {{"state", o.state_dir},
                        {"verified_through", r.frontier},
                        {"reached_until", r.reached_until},
                        {"diverged", r.diverged},
                        {"cycles_total", r.cycles_total},
                        {"open_divergences", r.open_divergences},
                        {"cycles", cycles}}}};
  if (!stopped_by.empty()) j["follow"]["stopped_by"] = stopped_by;
  if (finding) {
    j["diff"] = DiffReportToJson(finding->diff);
    if (!finding->look_again.empty()) j["look_again"] = finding->look_again;
  }
  return j;
}

namespace {

std::string UtcTime(int64_t unix_seconds) {
  if (unix_seconds <= 0) return "unknown";
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec);
}

std::string DivergenceLine(const verify::OpenDivergence& d) {
  std::string tables;
  for (const auto& t : d.tables) tables += (tables.empty() ? "" : ", ") + t;
  if (d.how == verify::kFoundInState)
    return fmt::format("state at ledger {} ({}; {}), found {} in cycle {}", d.ledgers.from,
                       FormatCountOf(d.differing_keys, "differing key"), tables.empty() ? "no table named" : tables,
                       UtcTime(d.found_at), d.cycle);
  return fmt::format("ledgers {} ({}{}{}), found {} in cycle {}", d.ledgers.str(), d.how,
                     d.sides == SideSet::kNone
                         ? ""
                         : fmt::format(", {} side{}", ToString(d.sides), d.sides == SideSet::kBoth ? "s" : ""),
                     tables.empty() ? "" : "; " + tables, UtcTime(d.found_at), d.cycle);
}

// The scrub's share of the verified range in its current pass (as the cycle's metric).
double ScrubCoverage(const verify::FollowState& s) {
  const Ledger end = s.VerifiedThrough(), from = s.Kept();
  if (end < from) return 0;
  const double verified = static_cast<double>(end + 1 - from);
  return std::min(1.0, static_cast<double>(s.scrub_next - std::min(s.scrub_next, from)) / verified);
}

}  // namespace

std::string RenderFollowStatusText(const verify::FollowStatus& st) {
  const verify::FollowState& s = st.state;
  const bool none = s.compared_through < s.from;
  std::string out = fmt::format("follow state {} (profile {}, engine {})\n", st.dir, s.profile, dump::ToString(s.engine));
  out += fmt::format("  first ledger {}; {}\n", s.from,
                     none ? std::string("nothing compared yet")
                          : fmt::format("compared through {}, verified through {}", s.compared_through,
                                        s.VerifiedThrough()));
  if (s.reaped_through >= s.from) out += fmt::format("  reaped through {} (gone from both sides)\n", s.reaped_through);
  out += fmt::format("  cycles {}; cycles that found a divergence {}\n", FormatCount(s.cycles), FormatCount(s.divergences));
  if (s.open_divergences.empty()) {
    out += "  open divergences: none\n";
  } else {
    out += fmt::format("  open divergences: {}\n", s.open_divergences.size());
    for (const auto& d : s.open_divergences) out += "    " + DivergenceLine(d) + "\n";
  }
  for (const auto& c : s.closed_divergences)
    out += fmt::format("  closed {} in cycle {}: {}: {}\n", UtcTime(c.closed_at), c.cycle, DivergenceLine(c.divergence),
                       c.why);
  const bool state_open = !s.open_divergences.empty() && s.open_divergences.back().how == verify::kFoundInState;
  out += s.state_last_agreed_ledger
             ? fmt::format("  state: last agreed at ledger {} ({}); last compared {}{}\n", *s.state_last_agreed_ledger,
                           UtcTime(s.state_last_agreed_at), UtcTime(s.state_last_compared_at),
                           state_open ? "; differs now (open divergence)" : "")
         : s.state_last_compared_at
             ? fmt::format("  state: never agreed; last compared {}{}\n", UtcTime(s.state_last_compared_at),
                           state_open ? " (open divergence)" : "")
             : std::string("  state: not compared at a common ledger yet\n");
  if (!none)
    out += fmt::format("  scrub: next ledger {}, {:.0f}% of the verified range in this pass\n", s.scrub_next,
                       100 * ScrubCoverage(s));
  if (!s.segments.empty())
    out += fmt::format("  segments: {} ({} bytes), ledgers {}:{}\n", FormatCountOf(s.segments.size(), "file"),
                       FormatCount(st.segment_bytes), s.segments.front().range.from, s.segments.back().range.to);
  out += st.holder.empty() ? std::string("  lock: no holder recorded\n")
                           : fmt::format("  lock: last taken by {}{}\n", st.holder,
                                         !st.holder_running        ? ""
                                         : *st.holder_running ? " (that process is running)"
                                                              : " (that process is gone)");
  for (const auto& [side, j] : {std::pair{"left", &s.left}, std::pair{"right", &s.right}})
    out += fmt::format("  {}: {}\n", side, dump::DescribeSourceIdentity(dump::SourceIdentityFromJson(*j, side)));
  return out;
}

nlohmann::json FollowStatusToJson(const verify::FollowStatus& st) {
  const verify::FollowState& s = st.state;
  const bool none = s.compared_through < s.from;
  nlohmann::json open = nlohmann::json::array(), closed = nlohmann::json::array();
  for (const auto& d : s.open_divergences) open.push_back(OpenDivergenceToJson(d));
  for (const auto& c : s.closed_divergences) closed.push_back(ClosedDivergenceToJson(c));
  nlohmann::json segments = nlohmann::json::array();
  for (const auto& seg : s.segments) segments.push_back({{"from", seg.range.from}, {"to", seg.range.to}});
  nlohmann::json j = {{"state", st.dir},
          {"profile", s.profile},
          {"engine", dump::ToString(s.engine)},
          {"first", s.from},
          {"compared_through", none ? nlohmann::json() : nlohmann::json(s.compared_through)},
          {"verified_through", none ? nlohmann::json() : nlohmann::json(s.VerifiedThrough())},
          {"reaped_through", s.reaped_through >= s.from ? nlohmann::json(s.reaped_through) : nlohmann::json()},
          {"cycles", s.cycles},
          {"divergences_total", s.divergences},
          {"open_divergences", open},
          {"closed_divergences", closed},
          {"scrub_next", s.scrub_next},
          {"scrub_coverage", ScrubCoverage(s)},
          {"segments", segments},
          {"segment_bytes", st.segment_bytes},
          {"lock_holder", st.holder.empty() ? nlohmann::json() : nlohmann::json(st.holder)},
          {"lock_holder_running", st.holder_running ? nlohmann::json(*st.holder_running) : nlohmann::json()},
          {"left", s.left},
          {"right", s.right}};
  AddStateAgreement(j, s.state_last_agreed_ledger, s.state_last_agreed_at, s.state_last_compared_at,
                    !s.open_divergences.empty() && s.open_divergences.back().how == verify::kFoundInState);
  return j;
}

}  // namespace ledgerdiff::report

