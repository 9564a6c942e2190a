#pragma once
// Text and JSON of a verify report (`verify`, `verify --format json`).
//
// Text: the diff's text (or the error), the run's facts and phase times, the verdict line.
// JSON: the stable object documented in verify/README.md ("verify --format json"); it embeds
// the whole `diff --format json` object and the ingestion reports (IngestReportToJson).
// INVARIANT: pure functions of the report.

#include <string>

#include <nlohmann/json.hpp>

#include "verify/follow.h"
#include "verify/verify.h"

namespace ledgerdiff::report {

nlohmann::json VerifyReportToJson(const verify::VerifyReport& report);
// One sentence linking the first divergent ledger to the parallel job that wrote it.
std::string DescribeWritingJob(Ledger ledger, const verify::WritingJob& w);
std::string RenderVerifyText(const verify::VerifyReport& report);

// A one-shot verify-range: the diff's text and JSON (report/diff_text_json.h) with what it adds:
// the look-again command, its part or manifest ("shard", "manifest"), its checkpoint ("resume").
std::string RenderVerifyRangeText(const verify::VerifyRangeReport& report);
nlohmann::json VerifyRangeToJson(const verify::VerifyRangeReport& report);

// verify-range --follow: one line per cycle, "cycle 7: verified through 1234 (+12 ledgers, 3,456
// rows), heads left 1240 right 1236, lag 4 ledgers (20 s), scrubbed 100:199, 1.2 s", and a second
// line naming a divergence ("changed after it was verified: ledger L (right side; tables)").
std::string RenderFollowCycle(const verify::FollowCycle& cycle);
// The cycle as JSON (the keys are listed in verify/README.md).
nlohmann::json FollowCycleToJson(const verify::FollowCycle& cycle);
// A follow run: "followed N cycles: verified through ledger L", then the cycle that stopped it
// (`stopped`) with its finding in full (`finding`, the verify-range report over it); either may
// be null. JSON: {"follow": {...}} with "diff" and "look_again" of the finding.
std::string RenderFollowText(const verify::FollowReport& run, const verify::FollowOptions& options,
                             const verify::FollowCycle* stopped, const verify::VerifyRangeReport* finding);
// `stopped_by`: what ended the run ("a termination signal"), the key "stopped_by" when given.
nlohmann::json FollowToJson(const verify::FollowReport& run, const verify::FollowOptions& options,
                            const verify::VerifyRangeReport* finding, const std::string& stopped_by = "");
// The line a follower stopped by `why` (a signal) prints on stdout: "stopped by a termination
// signal: verified through ledger 61 after 2 cycles (14 in all); 1 divergence open".
std::string RenderFollowStopped(const verify::FollowReport& run, const std::string& why);

// follow-status: a state directory as an operator reads it (first ledger, frontier, open and
// recently closed divergences, scrub position, segments, the lock's holder, the sides), text and
// JSON (keys in verify/README.md).
std::string RenderFollowStatusText(const verify::FollowStatus& status);
nlohmann::json FollowStatusToJson(const verify::FollowStatus& status);

}  // namespace ledgerdiff::report
