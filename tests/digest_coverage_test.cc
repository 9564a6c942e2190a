// Coverage is part of the verdict (issues 22, 47), against the harness's real PostgreSQL and the
// real Horizon dumps: which ledgers each side holds, ranges past the data, gaps inside both sides
// or one, a lost ledger row, every output format of verify-range saying incomplete. Part of the
// digest_test binary (tests/digest_support.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/history_tables.h"
#include "core/ledger_range.h"
#include "core/pg.h"
#include "diff/diff.h"
#include "dump/canonical.h"
#include "dump/digest.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "report/diff_text_json.h"
#include "tests/digest_support.h"
#include "tests/harness.h"
#include "tests/horizon_dumps.h"

namespace ledgerdiff {
namespace {

using namespace digest_support;

// Issue 22: coverage is part of the verdict. Which ledgers each side holds is read off
// history_ledgers; a ledger of the range that a side lacks is "incomplete" (exit 1), listed, and
// accepted (still listed) with allow_gaps; rows at ledgers without a history_ledgers row are named.

TEST(Coverage, ARangePastTheDataIsIncompleteAndAllowGapsAcceptsIt) {
  const LedgerRange held = HeldLedgers(KahunaLeft());
  diff::DiffOptions o;
  o.range = LedgerRange{held.from, held.to + 1000};
  auto r = Diff(Db(KahunaLeft()), Db(KahunaLeft()), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kIncomplete);
  EXPECT_FALSE(r->identical);
  EXPECT_FALSE(r->first_divergent_ledger);
  ASSERT_TRUE(r->coverage.checked);
  for (const diff::SideCoverage* side : {&r->coverage.left, &r->coverage.right}) {
    EXPECT_EQ(side->first, std::optional<Ledger>(held.from));
    EXPECT_EQ(side->last, std::optional<Ledger>(held.to));
    EXPECT_EQ(side->held, held.size());
    EXPECT_EQ(side->missing_ledgers, 1000u);
    ASSERT_EQ(side->missing.size(), 1u);
    EXPECT_EQ(side->missing[0], (LedgerRange{held.to + 1, held.to + 1000}));
  }
  const std::string text = report::RenderDiffText(*r);
  EXPECT_NE(text.find(fmt::format("incomplete: 1,000 ledgers missing on both sides: {}-{}", held.to + 1, held.to + 1000)),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nincomplete: ledgers of "), std::string::npos) << text;
  const nlohmann::json j = report::DiffReportToJson(*r);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_EQ(j["identical"], false);
  EXPECT_EQ(j["coverage"]["complete"], false);
  EXPECT_EQ(j["coverage"]["left"]["missing"], nlohmann::json::parse(fmt::format("[[{},{}]]", held.to + 1, held.to + 1000)));

  o.allow_gaps = true;
  r = Diff(Db(KahunaLeft()), Db(KahunaLeft()), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kIdentical);
  EXPECT_TRUE(r->identical);
  EXPECT_EQ(r->coverage.left.missing_ledgers, 1000u);  // still listed
  EXPECT_NE(report::RenderDiffText(*r).find("gaps (accepted by --allow-gaps)"), std::string::npos);

  // The range inside the data: complete.
  o.allow_gaps = false;
  o.range = held;
  r = Diff(Db(KahunaLeft()), Db(KahunaLeft()), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kIdentical);
  EXPECT_TRUE(r->coverage.complete());
}

TEST(Coverage, AGapInsideBothSidesIsIncompleteWithOrWithoutARange) {
  std::string a = LoadDump("kahuna-horizon.sql"), b = LoadDump("kahuna-horizon.sql");
  const LedgerRange held = HeldLedgers(a);
  const Ledger gap = held.from + (held.to - held.from) / 2;
  DeleteLedger(a, gap);
  DeleteLedger(b, gap);
  for (bool ranged : {false, true}) {
    SCOPED_TRACE(ranged);
    diff::DiffOptions o;
    if (ranged) o.range = held;
    auto r = Diff(Db(a), Db(b), o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->verdict, diff::Verdict::kIncomplete) << report::RenderDiffText(*r);
    EXPECT_EQ(r->coverage.left.missing, std::vector<LedgerRange>{(LedgerRange{gap, gap})});
    EXPECT_EQ(r->coverage.right.missing, std::vector<LedgerRange>{(LedgerRange{gap, gap})});
    EXPECT_EQ(r->coverage.left.held, held.size() - 1);
    EXPECT_TRUE(r->coverage.left.orphans.empty());
  }
}

// A gap on one side only, under an explicit --range (a job the new database never ingested, and
// its data ending two ledgers early), with either engine: the coverage names that side and those
// ledgers, and says nothing of the other side, which holds them all. verify-range compares two
// databases that ingest on their own, so a ledger one side has not written at all is not yet
// there, not wrong: the verdict is incomplete (exit 1), nothing is divergent, and the ledgers both
// hold are compared (diff/README.md). A change of that rule is a change of this test.
TEST(Coverage, AGapOnOneSideUnderARangeIsIncompleteAndNamesThatSideAndItsLedgers) {
  std::string b = LoadDump("kahuna-horizon.sql");
  const LedgerRange held = HeldLedgers(b);
  const Ledger gap = held.from + (held.to - held.from) / 2;
  ASSERT_LT(gap + 2, held.to - 1);
  for (Ledger l : {gap, held.to - 1, held.to}) DeleteLedger(b, l);
  const std::string missing = fmt::format("{}, {}-{}", gap, held.to - 1, held.to);
  testing::ScratchDir dir("ledgerdiff_coverage");
  for (const std::string engine : {"text", "server-hash"}) {
    SCOPED_TRACE(engine);
    const std::vector<std::string> args = {"verify-range", "--range", held.str(), "--left", KahunaLeft(), "--right", b,
                                           "--engine", engine};
    std::vector<std::string> json_args = args;
    json_args.insert(json_args.end(), {"--format", "json"});
    auto r = RunCli(json_args);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
    const auto& cov = j["coverage"];
    EXPECT_EQ(cov["checked"], true);
    EXPECT_EQ(cov["explicit_range"], true);
    EXPECT_EQ(cov["complete"], false) << "one side lacks ledgers: the coverage is not complete";
    EXPECT_EQ(cov["left"]["held"], held.size());
    EXPECT_EQ(cov["left"]["missing"], nlohmann::json::array());
    EXPECT_EQ(cov["left"]["missing_ledgers"], 0);
    EXPECT_EQ(cov["right"]["held"], held.size() - 3);
    EXPECT_EQ(cov["right"]["first"], held.from);
    EXPECT_EQ(cov["right"]["last"], held.to - 2);
    EXPECT_EQ(cov["right"]["missing"],
              nlohmann::json::parse(fmt::format("[[{0},{0}],[{1},{2}]]", gap, held.to - 1, held.to)));
    EXPECT_EQ(cov["right"]["missing_ledgers"], 3);
    EXPECT_EQ(cov["right"]["missing_ranges"], 2);
    EXPECT_EQ(j["verdict"], "incomplete");
    EXPECT_TRUE(j["first_divergent_ledger"].is_null()) << j["first_divergent_ledger"];

    std::vector<std::string> text_args = args;
    text_args.insert(text_args.end(), {"--junit", dir.path + "/" + engine + ".xml"});
    auto t = RunCli(text_args);
    EXPECT_EQ(t.exit_code, 1) << t.out << t.err;
    EXPECT_NE(t.out.find(fmt::format("coverage (history_ledgers): left holds {} ledgers ({} to {}); right holds {} "
                                     "ledgers ({} to {})",
                                     held.size(), held.from, held.to, held.size() - 3, held.from, held.to - 2)),
              std::string::npos)
        << t.out;
    EXPECT_NE(t.out.find("\nincomplete: 3 ledgers missing on the right: " + missing + "\n"), std::string::npos) << t.out;
    EXPECT_EQ(t.out.find("missing on the left"), std::string::npos) << t.out;
    EXPECT_EQ(t.out.find("missing on both sides"), std::string::npos) << t.out;
    EXPECT_EQ(t.out.find("divergent"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("incomplete: ledgers of " + held.str() + " are missing (left 0, right 3, of "), std::string::npos)
        << t.out;
    const std::string junit = testing::ReadFileBytes(dir.path + "/" + engine + ".xml");
    // The side and its ledgers: in the headline and in the coverage line, as the text says them.
    EXPECT_NE(junit.find("value=\"Incomplete: right lacks 3 ledgers of " + held.str() + "\""), std::string::npos)
        << junit;
    EXPECT_NE(junit.find("incomplete: 3 ledgers missing on the right: " + missing), std::string::npos) << junit;
    EXPECT_EQ(junit.find("missing on the left"), std::string::npos) << junit;
  }
  // A difference at a ledger both sides hold still takes precedence over the gap: divergent there.
  const Ledger changed = gap - 2;
  ExecSql(*Connect(b), fmt::format("UPDATE history_ledgers SET total_coins = total_coins + 1 WHERE sequence = {}", changed));
  for (const std::string engine : {"text", "server-hash"}) {
    SCOPED_TRACE(engine);
    auto r = RunCli({"verify-range", "--range", held.str(), "--left", KahunaLeft(), "--right", b, "--engine", engine,
                     "--format", "json"});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
    EXPECT_EQ(j["verdict"], "divergent");
    EXPECT_EQ(j["first_divergent_ledger"], changed);
    EXPECT_EQ(j["divergent_ledgers"], 1) << "the gap's ledgers are not divergent";
    EXPECT_EQ(j["coverage"]["right"]["missing_ledgers"], 3);
  }
  // diff compares what one job wrote on both sides: there a ledger one side lacks is a wrong write.
  diff::DiffOptions o;
  o.range = held;
  auto d = Diff(Db(KahunaLeft()), Db(b), o);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->verdict, diff::Verdict::kDivergent);
  EXPECT_EQ(d->first_divergent_ledger, std::optional<Ledger>(changed));
  EXPECT_EQ(d->divergent_ledgers, 4u) << "the changed ledger and the three of the gap";
}

TEST(Coverage, ALostLedgerRowIsDivergentAndItsRowsAreNamed) {
  std::string b = LoadDump("kahuna-horizon.sql");
  const LedgerRange held = HeldLedgers(b);
  // A ledger with operations: its header row goes, its other rows stay.
  auto c = Connect(b);
  auto q = c->Exec("SELECT max(ledger_sequence) FROM history_transactions");
  ASSERT_TRUE(q.ok());
  const Ledger lost = static_cast<Ledger>(std::stoul(std::string(q->Get(0, 0))));
  ExecSql(*c, fmt::format("DELETE FROM history_ledgers WHERE sequence = {}", lost));
  auto r = Diff(Db(KahunaLeft()), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kDivergent);  // a difference takes precedence over a gap
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(lost));
  EXPECT_TRUE(r->coverage.left.missing.empty());
  const std::vector<LedgerRange> at_lost{{lost, lost}};
  if (lost == held.to) {
    // The right side's data now ends before `lost`: beyond its data, not a gap inside it.
    EXPECT_EQ(r->coverage.right.not_held, at_lost);
  } else {
    EXPECT_EQ(r->coverage.right.missing, at_lost);
  }
  bool transactions_named = false;
  for (const auto& o : r->coverage.right.orphans)
    if (o.table == "history_transactions") {
      transactions_named = true;
      EXPECT_EQ(o.at, at_lost);
      EXPECT_GT(o.rows, 0u);
    }
  EXPECT_TRUE(transactions_named) << report::RenderDiffText(*r);
  EXPECT_NE(report::RenderDiffText(*r).find("history_transactions (right): "), std::string::npos);
  // verify-range too: a ledger that lost its header row while its other rows stay was written,
  // wrongly; it is not a ledger the side has yet to write (not incomplete).
  auto v = RunCli({"verify-range", "--range", held.str(), "--left", KahunaLeft(), "--right", b, "--format", "json"});
  EXPECT_EQ(v.exit_code, 1) << v.out << v.err;
  const auto j = nlohmann::json::parse(v.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << v.out << v.err;
  EXPECT_EQ(j["verdict"], "divergent");
  EXPECT_EQ(j["first_divergent_ledger"], lost);
  // Against a side that has no row of that ledger at all: both lack its header, but one side's
  // rows there were written (wrongly), so the ledger is compared and diverges, not a gap.
  const std::string none = LoadDump("kahuna-horizon.sql");
  DeleteLedger(none, lost);
  auto w = RunCli({"verify-range", "--range", held.str(), "--left", none, "--right", b, "--format", "json"});
  EXPECT_EQ(w.exit_code, 1) << w.out << w.err;
  const auto k = nlohmann::json::parse(w.out, nullptr, false);
  ASSERT_FALSE(k.is_discarded()) << w.out << w.err;
  EXPECT_EQ(k["verdict"], "divergent");
  EXPECT_EQ(k["first_divergent_ledger"], lost);
}

TEST(Coverage, EveryOutputFormatOfVerifyRangeSaysIncomplete) {
  const LedgerRange held = HeldLedgers(KahunaLeft());
  testing::ScratchDir dir("ledgerdiff_coverage");
  const std::string range = fmt::format("{}:{}", held.from, held.to + 50);
  auto r = testing::RunCli({"verify-range", "--range", range, "--left", KahunaLeft(), "--right", KahunaLeft(),
                            "--junit", dir.path + "/v.xml", "--markdown", dir.path + "/v.md", "--report",
                            dir.path + "/html"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("\nincomplete: ledgers of " + range), std::string::npos) << r.out;
  const std::string junit = testing::ReadFileBytes(dir.path + "/v.xml");
  EXPECT_NE(junit.find("name=\"verdict\" value=\"incomplete\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("value=\"Incomplete: left lacks 50 ledgers, right lacks 50 ledgers of " + range + "\""),
            std::string::npos)
      << junit;
  EXPECT_NE(junit.find(fmt::format("incomplete: 50 ledgers missing on both sides: {}-{}", held.to + 1, held.to + 50)),
            std::string::npos)
      << junit;
  EXPECT_NE(testing::ReadFileBytes(dir.path + "/v.md").find("incomplete"), std::string::npos);
  const std::string html = testing::ReadFileBytes(dir.path + "/html/index.html");
  EXPECT_NE(html.find("Incomplete: left lacks 50 ledgers, right lacks 50 ledgers of " + range), std::string::npos)
      << html;
  EXPECT_NE(html.find("ledgerdiff verify-range --range"), std::string::npos) << "the look-again command";
  r = testing::RunCli({"verify-range", "--range", range, "--left", KahunaLeft(), "--right", KahunaLeft(), "--format",
                       "json"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "incomplete");
  EXPECT_EQ(j["coverage"]["right"]["missing_ledgers"], 50);
  // --metrics: an identical run, then the incomplete one over the same file, which keeps the
  // identical run's last success; prometheus_client's parser reads both.
  const std::string metrics = dir.path + "/deep/ledgerdiff.prom";
  auto ok = testing::RunCli({"verify-range", "--range", held.str(), "--left", KahunaLeft(), "--right", KahunaLeft(),
                             "--metrics", metrics});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const std::string first = testing::ReadFileBytes(metrics);
  auto again = testing::RunCli({"verify-range", "--range", range, "--left", KahunaLeft(), "--right", KahunaLeft(),
                                "--metrics", metrics});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  const std::string second = testing::ReadFileBytes(metrics);
  const std::string parse = "/usr/bin/python3 '" + testing::SourceDir() + "/tests/parse_metrics.py' '" + metrics + "' >/dev/null";
  EXPECT_EQ(std::system(parse.c_str()), 0) << second;
  for (const auto& [text, verdict] : {std::pair{first, "identical"}, std::pair{second, "incomplete"}}) {
    EXPECT_NE(text.find(fmt::format("ledgerdiff_verdict{{command=\"verify-range\",verdict=\"{}\"}} 1\n", verdict)),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(fmt::format("\nledgerdiff_verified_through_ledger {}\n", held.to)), std::string::npos) << text;
    EXPECT_NE(text.find(fmt::format("\nledgerdiff_head_ledger{{side=\"right\"}} {}\n", held.to)), std::string::npos)
        << text;
  }
  EXPECT_NE(second.find("\nledgerdiff_missing_ledgers{side=\"right\"} 50\n"), std::string::npos) << second;
  const auto success = [](const std::string& text) {
    const size_t at = text.find("\nledgerdiff_last_success_timestamp_seconds ");
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at + 1) - at);
  };
  EXPECT_FALSE(success(first).empty()) << first;
  EXPECT_EQ(success(second), success(first)) << second;

  // The look-again command spans every missing ledger, not only the first.
  const std::string missing = fmt::format("--range {}:{} ", held.to + 1, held.to + 50);
  EXPECT_NE(j["look_again"].get<std::string>().find(missing), std::string::npos) << j["look_again"];
  r = testing::RunCli({"verify-range", "--range", range, "--left", KahunaLeft(), "--right", KahunaLeft(),
                       "--allow-gaps"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gaps (accepted by --allow-gaps): 50 ledgers missing on both sides"), std::string::npos) << r.out;

  // Sharded: the second slice lies partly past the data; the merged outcome is incomplete.
  std::vector<std::string> parts;
  for (int k = 0; k < 2; ++k) {
    parts.push_back(dir.path + fmt::format("/part-{}.ldm", k));
    r = testing::RunCli({"verify-range", "--range", range, "--left", KahunaLeft(), "--right", KahunaLeft(), "--shards",
                         "2", "--shard", std::to_string(k), "--out", parts.back()});
    EXPECT_EQ(r.exit_code, k == 0 ? 0 : 1) << r.out << r.err;
  }
  r = testing::RunCli({"manifest", "merge", "--out", dir.path + "/full.ldm", parts[0], parts[1]});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("incomplete: the "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ledgers missing: 50 left, 50 right"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ledgerdiff
