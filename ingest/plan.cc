#include "ingest/plan.h"

#include <algorithm>
#include <cmath>

#include "core/database.h"
#include "core/enum_names.h"
#include "core/report.h"
#include "fixtures/generator.h"
#include "fixtures/ingester.h"
#include "ingest/ingest_command.h"

namespace ledgerdiff::ingest {

std::string_view ToString(CrashAction action) {
  switch (action) {
    case CrashAction::kAbort: return "abort";
    case CrashAction::kFail: return "fail";
  }
  return "abort";  // not reached: the switch names every action
}

std::optional<CrashAction> ParseCrashAction(std::string_view text) {
  return ParseEnum(std::array{CrashAction::kAbort, CrashAction::kFail}, text);
}

Result<CrashPoint> ParseFaultPoint(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  auto bad = [&] { return Status::Usagef("fault point \"{}\": expected JOB:ATTEMPT:STAGE:abort|fail", text); };
  const std::optional<CrashAction> action = parts.size() == 4 ? ParseCrashAction(parts[3]) : std::nullopt;
  if (!action) return bad();
  if (*action == CrashAction::kFail && parts[2] != kStartStage)
    return Status::Usagef("fault point \"{}\": fail is only at stage start (abort works at any stage)", text);
  try {
    return CrashPoint{static_cast<uint32_t>(std::stoul(parts[0])), static_cast<uint32_t>(std::stoul(parts[1])), parts[2],
                      *action};
  } catch (const std::exception&) {
    return bad();
  }
}

Result<HoldPoint> ParseHoldPoint(const std::string& text) {
  auto bad = [&] { return Status::Usagef("hold point \"{}\": expected JOB:ATTEMPT:STAGE:SECONDS", text); };
  size_t a = text.find(':'), b = a == std::string::npos ? a : text.find(':', a + 1),
         c = b == std::string::npos ? b : text.rfind(':');
  if (c == std::string::npos || c <= b) return bad();
  try {
    return HoldPoint{static_cast<uint32_t>(std::stoul(text.substr(0, a))),
                     static_cast<uint32_t>(std::stoul(text.substr(a + 1, b - a - 1))), text.substr(b + 1, c - b - 1),
                     std::stod(text.substr(c + 1))};
  } catch (const std::exception&) {
    return bad();
  }
}

Status IngestPlan::Validate(bool check_schema) const {
  if (check_schema) LD_RETURN_IF_ERROR(ValidateSchemaName(schema));
  if (workers == 0) return Status::Usage("--workers must be at least 1");
  if (workers > kMaxWorkers) return Status::Usagef("--workers must be at most {}", kMaxWorkers);
  if (job_size == 0) return Status::Usage("--job-size must be at least 1");
  if (job_size > kMaxJobSize) return Status::Usagef("--job-size {} is too large (at most {})", job_size, kMaxJobSize);
  // Before the split (and before any schema or run is created): SplitJobs sizes by the count.
  if (const uint64_t jobs = (range.size() + job_size - 1) / job_size; jobs > kMaxJobsPerRun)
    return Status::Usagef(
        "--job-size {} splits range {} into {} jobs, more than a run holds (at most {}): use --job-size {} or larger",
        job_size, range.str(), FormatCount(jobs), FormatCount(kMaxJobsPerRun), MinJobSizeFor(range));
  if (!std::isfinite(retry_backoff_s) || retry_backoff_s < 0 || retry_backoff_s > kMaxRetryBackoffS)
    return Status::Usagef("--retry-backoff {} must be a number of seconds from 0 to {}", retry_backoff_s,
                          kMaxRetryBackoffS);
  if (retries > kMaxRetries) return Status::Usagef("--retries {} is too many (at most {})", retries, kMaxRetries);
  // Below the minimum a healthy worker can miss its heartbeat; above the maximum the derived
  // statement_timeout (10 x) no longer fits PostgreSQL's integer milliseconds.
  if (!std::isfinite(job_timeout_s) || job_timeout_s < kMinJobTimeoutS || job_timeout_s > kMaxJobTimeoutS)
    return Status::Usagef("--job-timeout {} must be a number of seconds from {} to {}", job_timeout_s,
                          kMinJobTimeoutS, kMaxJobTimeoutS);
  if (!ingest_cmd.empty()) LD_RETURN_IF_ERROR(CheckIngestCommand(ingest_cmd));
  return Status::Ok();
}

uint32_t MinJobSizeFor(const LedgerRange& range) {
  return static_cast<uint32_t>(std::max<uint64_t>(1, (range.size() + kMaxJobsPerRun - 1) / kMaxJobsPerRun));
}

uint32_t WholeRangeJobSize(const LedgerRange& range) {
  return static_cast<uint32_t>(std::min<uint64_t>(range.size(), kMaxJobSize));
}

double IngestPlan::heartbeat_s() const { return std::min(1.0, job_timeout_s / 4); }

nlohmann::json IngestPlan::ToJson() const {
  return {{"schema", schema},
          {"from", range.from},
          {"to", range.to},
          {"job_size", job_size},
          {"workers", workers},
          {"seed", seed},
          {"density", ToString(density)},
          {"ingest_cmd", ingest_cmd},
          {"retries", retries},
          {"retry_backoff_s", retry_backoff_s},
          {"job_timeout_s", job_timeout_s}};
}

Result<IngestPlan> IngestPlan::FromJson(const nlohmann::json& j) {
  try {
    IngestPlan p;
    p.schema = j.at("schema").get<std::string>();
    p.range = {j.at("from").get<Ledger>(), j.at("to").get<Ledger>()};
    p.job_size = j.at("job_size").get<uint32_t>();
    p.workers = j.at("workers").get<uint32_t>();
    p.seed = j.at("seed").get<uint64_t>();
    const auto density = fixtures::ParseDensity(j.at("density").get<std::string>());
    if (!density.ok()) return Status::Runtimef("ingestion plan is unreadable: {}", density.status().message());
    p.density = *density;
    p.ingest_cmd = j.at("ingest_cmd").get<std::string>();
    p.retries = j.at("retries").get<uint32_t>();
    p.retry_backoff_s = j.at("retry_backoff_s").get<double>();
    p.job_timeout_s = j.at("job_timeout_s").get<double>();
    return p;
  } catch (const std::exception& e) {
    return Status::Runtimef("ingestion plan is unreadable: {}", e.what());
  }
}

bool TestHooks::active() const {
  return !bug.empty() || unsafe_commit_every != 0 || !crash_points.empty() || !hold_points.empty();
}

Status TestHooks::Validate(const IngestPlan& plan) const {
  if (bug.empty()) return Status::Ok();
  const LedgerRange& range = plan.range;
  LD_ASSIGN_OR_RETURN(auto parsed_bug, fixtures::ParseBugInjection(bug));
  if (!range.contains(parsed_bug.ledger))
    return Status::Usagef("--inject-bug {}: ledger {} is outside the range {}", bug, parsed_bug.ledger, range.str());
  if (!plan.ingest_cmd.empty()) return Status::Ok();
  // A ledger without the row the bug needs: name the nearest one of the range that has it.
  constexpr uint32_t kSearch = 10000;
  const fixtures::GeneratorConfig generator{plan.seed, plan.density};
  if (Status applies = fixtures::CheckBugApplies(generator, parsed_bug); !applies.ok()) {
    const auto nearest = fixtures::NearestLedgerWhereBugApplies(generator, parsed_bug, range, kSearch);
    return Status::Usage(applies.message() +
                         (nearest ? fmt::format("; the nearest ledger it can act on is {} (--inject-bug {}@{})",
                                                *nearest, fixtures::BugKindName(parsed_bug.kind), *nearest)
                          : range.size() <= 2 * uint64_t{kSearch} + 1
                              ? fmt::format("; no other ledger of the range {} has what it needs", range.str())
                              : fmt::format("; no ledger of the range {} within {} of it has what it needs",
                                            range.str(), FormatCountOf(kSearch, "ledger"))));
  }
  return Status::Ok();
}

nlohmann::json TestHooks::ToJson() const {
  nlohmann::json crash = nlohmann::json::array();
  for (const auto& c : crash_points)
    crash.push_back({{"job", c.job_id}, {"attempt", c.attempt}, {"stage", c.stage}, {"action", ToString(c.action)}});
  nlohmann::json hold = nlohmann::json::array();
  for (const auto& h : hold_points)
    hold.push_back({{"job", h.job_id}, {"attempt", h.attempt}, {"stage", h.stage}, {"seconds", h.seconds}});
  return {{"bug", bug}, {"unsafe_commit_every", unsafe_commit_every}, {"crash_points", crash}, {"hold_points", hold}};
}

Result<TestHooks> TestHooks::FromRunSpec(const nlohmann::json& spec) {
  // Releases before TestHooks stored the hooks at the spec's top level, for every run.
  const nlohmann::json& j = spec.contains("test_hooks") ? spec.at("test_hooks") : spec;
  try {
    TestHooks t;
    t.bug = j.value("bug", std::string());
    t.unsafe_commit_every = j.value("unsafe_commit_every", uint32_t{0});
    for (const auto& c : j.value("crash_points", nlohmann::json::array())) {
      const auto action_text = c.at("action").get<std::string>();
      const std::optional<CrashAction> action = ParseCrashAction(action_text);
      const auto stage = c.at("stage").get<std::string>();
      if (!action || (*action == CrashAction::kFail && stage != kStartStage))
        return Status::Runtimef("test hooks are unreadable: crash point action \"{}\" at stage \"{}\"", action_text,
                                stage);
      t.crash_points.push_back({c.at("job").get<uint32_t>(), c.at("attempt").get<uint32_t>(), stage, *action});
    }
    for (const auto& h : j.value("hold_points", nlohmann::json::array()))
      t.hold_points.push_back({h.at("job").get<uint32_t>(), h.at("attempt").get<uint32_t>(),
                               h.at("stage").get<std::string>(), h.at("seconds").get<double>()});
    return t;
  } catch (const std::exception& e) {
    return Status::Runtimef("test hooks are unreadable: {}", e.what());
  }
}

}  // namespace ledgerdiff::ingest
