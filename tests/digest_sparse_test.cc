// Cost follows the data (issue 22), against the harness's real PostgreSQL: stray rows far from
// the rest found without walking the range, entries and roots independent of probing and
// chunking, progress counted in the rows the statistics put in the range. Part of the digest_test
// binary (tests/digest_support.h).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/history_tables.h"
#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/stage_timer.h"
#include "diff/diff.h"
#include "dump/canonical.h"
#include "dump/digest.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "fixtures/ingester.h"
#include "fixtures/schema.h"
#include "report/diff_text_json.h"
#include "tests/digest_support.h"
#include "tests/harness.h"
#include "tests/horizon_dumps.h"

namespace ledgerdiff {
namespace {

using namespace digest_support;

// Issue 22: cost follows the data. Only ledgers holding a row are listed (digest chunks,
// manifests, checkpoints, the diff); with ledger-leading indexes the digest reads no statement
// over an empty span, so a stray row at the last possible ledger costs as much as any other.
// What a digest of `conninfo` emitted: its chunks and the ledgers they list.
struct ChunkTrace {
  std::vector<LedgerRange> spans;
  uint64_t listed = 0;
  std::string root;
};
ChunkTrace TraceDigest(const std::string& conninfo, std::optional<LedgerRange> range = std::nullopt,
                       uint32_t chunk = 0) {
  dump::DigestOptions o;
  o.range = range;
  o.chunk_ledgers = chunk;
  ChunkTrace trace;
  NullReporter rep;
  auto r = dump::DigestSchema(
      conninfo, "public", dump::HorizonProfileSpec(), o,
      [&](const Chunk& c) {
        trace.spans.push_back(c.range);
        trace.listed += c.ledgers.size();
        return Status::Ok();
      },
      rep);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (r.ok()) trace.root = r->root;
  return trace;
}

TEST(Sparse, AStrayRowAtTheLastLedgerIsFoundWithoutWalkingTheRange) {
  const Ledger kLast = 2147483647;
  std::string b = LoadDump("kahuna-horizon.sql");
  const LedgerRange held = HeldLedgers(b);
  auto c = Connect(b);
  // One effect copied to the last ledger a TOID can name (operation 1 of its transaction 1).
  ExecSql(*c, fmt::format("CREATE TEMP TABLE stray AS SELECT * FROM history_effects ORDER BY history_operation_id "
                          "LIMIT 1; UPDATE stray SET history_operation_id = {}; "
                          "INSERT INTO history_effects SELECT * FROM stray",
                          (int64_t{kLast} << 32) | 4097));
  const Stopwatch started;
  auto r = Diff(Db(KahunaLeft()), Db(b));
  const double seconds = started.Seconds();
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::printf("[ measured ] diff of kahuna against a copy with a stray effect at ledger %u: %.2f s\n", kLast, seconds);
  EXPECT_EQ(r->verdict, diff::Verdict::kDivergent);
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(kLast));
  EXPECT_EQ(r->ledgers_compared, uint64_t{kLast} - held.from + 1);  // every ledger of the range, compared
  bool named = false;
  for (const auto& o : r->coverage.right.orphans)
    if (o.table == "history_effects") {
      named = true;
      EXPECT_EQ(o.at, (std::vector<LedgerRange>{{kLast, kLast}}));
    }
  EXPECT_TRUE(named) << report::RenderDiffText(*r);
  ASSERT_EQ(r->rows.size(), 1u) << report::RenderDiffText(*r);
  EXPECT_EQ(r->rows[0].table, "history_effects");

  // The digest of the stray side: the data's chunk and one chunk at the stray ledger, which
  // takes the empty span before it unread; the ledgers listed are those holding a row.
  const ChunkTrace trace = TraceDigest(b);
  ASSERT_EQ(trace.spans.size(), 2u);
  EXPECT_EQ(trace.spans[0].from, held.from);
  EXPECT_EQ(trace.spans[1].to, kLast);
  EXPECT_EQ(trace.listed, held.size() + 1);

  // Its manifest is as small as the data's, and a diff against it finds the same ledger.
  testing::ScratchDir dir("ledgerdiff_sparse");
  const std::string path = dir.path + "/stray.ldm";
  auto m = testing::RunCli({"digest", "--db", b, "--schema", "public", "--out", path});
  ASSERT_EQ(m.exit_code, 0) << m.err;
  auto plain = testing::RunCli({"digest", "--db", KahunaLeft(), "--schema", "public", "--out", dir.path + "/plain.ldm"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_LT(std::filesystem::file_size(path), std::filesystem::file_size(dir.path + "/plain.ldm") + 200);
  auto d = testing::RunCli({"diff", "--db", KahunaLeft(), "public", "file:" + path, "--format", "json"});
  EXPECT_EQ(d.exit_code, 1) << d.err;
  EXPECT_EQ(nlohmann::json::parse(d.out)["first_divergent_ledger"], kLast);
}

TEST(Sparse, AStrayRowOfEveryTableIsNamedAtItsFarLedger) {
  // One row of every history table that has rows (but history_ledgers: a stray ledger row is a
  // held ledger, coverage's business) copied to a ledger of its own near 2^31: the probe that
  // plans the chunks must find each (a table it forgot would be skipped unread). The strays lie
  // further apart than any chunk is wide, so each must be found by the probe itself: a stray
  // inside a chunk another table's stray began would be read without it.
  constexpr Ledger kApart = 10'000'000;
  std::string b = LoadDump("kahuna-horizon.sql");
  auto c = Connect(b);
  std::map<std::string, Ledger> stray_at;
  Ledger far = 2147483647;
  for (const auto& t : HorizonHistoryTables()) {
    const std::string name = t.name;
    if (name == kLedgerTable || !HasColumn(*c, name, t.ledger_column)) continue;
    auto n = c->Exec(fmt::format("SELECT count(*) FROM {}", Q(name)));
    ASSERT_TRUE(n.ok());
    if (n->GetInt(0, 0) == 0) continue;
    const Ledger at = far;
    far -= kApart;
    std::string set = t.kind == LedgerColumnKind::kToid
                          ? fmt::format("{} = {}", Q(t.ledger_column), (int64_t{at} << 32) | 4097)
                          : fmt::format("{} = {}", Q(t.ledger_column), at);
    if (name == "history_transactions") set += fmt::format(", id = {}", (int64_t{at} << 32) | 4096);
    ExecSql(*c, fmt::format("CREATE TEMP TABLE s AS SELECT * FROM {0} LIMIT 1; UPDATE s SET {1}; "
                            "INSERT INTO {0} SELECT * FROM s; DROP TABLE s",
                            Q(name), set));
    stray_at[name] = at;
  }
  ASSERT_GE(stray_at.size(), 5u);
  auto r = Diff(Db(KahunaLeft()), Db(b));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kDivergent);
  EXPECT_EQ(r->first_divergent_ledger, std::optional<Ledger>(far + kApart));
  EXPECT_EQ(r->divergent_ledgers, stray_at.size());
  std::map<std::string, Ledger> named;
  for (const auto& o : r->coverage.right.orphans) {
    ASSERT_EQ(o.at.size(), 1u) << o.table;
    EXPECT_EQ(o.at[0].from, o.at[0].to);
    named[o.table] = o.at[0].from;
  }
  EXPECT_EQ(named, stray_at) << report::RenderDiffText(*r);
}

TEST(Sparse, EntriesAndRootsDoNotDependOnProbingOrChunking) {
  // A gap inside the data and a range far past it: the probing digest (indexes led by the ledger
  // column) and the digest cut by width (one such index dropped) list the same ledgers and give
  // the same root, whatever the chunk size.
  std::string a = LoadDump("kahuna-horizon.sql");
  const LedgerRange held = HeldLedgers(a);
  DeleteLedger(a, held.from + 10);
  std::string b = LoadDump("kahuna-horizon.sql");
  DeleteLedger(b, held.from + 10);
  ExecSql(*Connect(b), "DROP INDEX hop_by_hoid");  // history_operation_participants: no probe
  const LedgerRange range{held.from, held.to + 100000};
  const ChunkTrace probed = TraceDigest(a, range);
  EXPECT_LE(probed.spans.size(), 2u) << "the empty tail is read by no chunk of its own";
  EXPECT_EQ(probed.listed, held.size() - 1);
  for (uint32_t chunk : {0u, 7u, 50000u}) {
    SCOPED_TRACE(chunk);
    const ChunkTrace p = TraceDigest(a, range, chunk);
    const ChunkTrace w = TraceDigest(b, range, chunk);
    EXPECT_EQ(p.root, probed.root);
    EXPECT_EQ(w.root, probed.root);
    EXPECT_EQ(w.listed, probed.listed);
    EXPECT_GE(w.spans.size(), p.spans.size());
  }
  diff::DiffOptions o;
  o.range = range;
  o.allow_gaps = true;
  auto r = Diff(Db(a), Db(b), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, diff::Verdict::kIdentical) << report::RenderDiffText(*r);
  EXPECT_EQ(r->coverage.left.missing_ledgers, 1u + 100000u);
}

// ---------------------------------------------------------------------------------------------
// Progress (issue 22): the ETA weighs ledgers by the rows the server's statistics put in them,
// each row by its table's bytes per row (issue 46: a row of JSON costs more than one of two ids).

struct ProgressRecorder : Reporter {
  std::vector<Progress> updates;
  void Note(std::string_view) override {}
  void Update(const Progress& p) override { updates.push_back(p); }
};

// A schema of ours holding `range` of the stellar density, whose rows per ledger grow along it.
// `analyzed`: with the statistics ANALYZE gathers; else with none. Autovacuum is off: no
// statistics come or change but the test's.
std::string GrowingSchema(const LedgerRange& range, bool analyzed) {
  auto conn = Connect();
  const std::string schema = UniqueName(analyzed ? "growing" : "unanalyzed");
  ExecSql(*conn, "CREATE SCHEMA " + Q(schema));
  EXPECT_TRUE(fixtures::CreateHistorySchema(*conn, schema).ok());
  std::vector<std::string> tables = fixtures::HistoryTables();
  for (const auto& t : fixtures::LookupTables()) tables.push_back(t);
  for (const auto& t : tables)
    ExecSql(*conn, fmt::format("ALTER TABLE {} SET (autovacuum_enabled = false)", pg::Qualified(schema, t)));
  auto r = fixtures::IngestJob(*conn, schema, range, {});
  EXPECT_TRUE(r.ok()) << r.status().message();
  // The ingest's writes counted now, not after the analyze (where they would make it stale).
  ExecSql(*conn, "SELECT pg_stat_force_next_flush()");
  if (analyzed)
    for (const auto& t : tables) ExecSql(*conn, "ANALYZE " + pg::Qualified(schema, t));
  return schema;
}

// The progress a digest of `schema` over `range` reports, and its summary.
std::pair<std::vector<Progress>, dump::DigestSummary> DigestProgress(const std::string& schema,
                                                                     const LedgerRange& range) {
  ProgressRecorder recorder;
  dump::DigestOptions o;
  o.range = range;
  o.jobs = 2;
  o.chunk_ledgers = 500;
  auto spec = dump::LoadProfileSpec("horizon");
  EXPECT_TRUE(spec.ok());
  if (!spec.ok()) return {};
  auto r = dump::DigestSchema(TestConninfo(), schema, *spec, o, nullptr, recorder);
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return {};
  return {recorder.updates, *r};
}

// The bytes a digest read, measured apart from the statistics: each table's rows it read times
// the table's size over its rows counted.
double BytesRead(const std::string& schema, const dump::DigestSummary& summary) {
  auto conn = Connect();
  double bytes = 0;
  for (const auto& t : summary.tables) {
    if (t.rows == 0) continue;
    const std::string table = pg::Qualified(schema, t.table);
    auto r = conn->Exec("SELECT pg_relation_size(" + pg::QuoteLiteral(table) + "), count(*) FROM " + table);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return 0;
    bytes += static_cast<double>(t.rows) * static_cast<double>(r->GetInt(0, 0)) / static_cast<double>(r->GetInt(0, 1));
  }
  return bytes;
}

TEST(Progress, DigestWorkIsTheBytesTheStatisticsPutInTheRange) {
  const LedgerRange held{2, 3000};
  const std::string schema = GrowingSchema(held, /*analyzed=*/true);
  for (const LedgerRange range : {held, LedgerRange{2000, 3000}}) {
    SCOPED_TRACE(range.str());
    const auto [updates, summary] = DigestProgress(schema, range);
    ASSERT_FALSE(updates.empty());
    const uint64_t estimated = updates.front().work_total;
    const double bytes = BytesRead(schema, summary);
    std::printf("[ measured ] digest of ledgers %s: %llu bytes estimated from the statistics, %.0f read\n",
                range.str().c_str(), static_cast<unsigned long long>(estimated), bytes);
    EXPECT_GE(static_cast<double>(estimated), bytes / 1.5);
    EXPECT_LE(static_cast<double>(estimated), bytes * 1.5);
    for (size_t i = 0; i < updates.size(); ++i) {
      EXPECT_EQ(updates[i].work_total, estimated) << i;
      if (i) {
        EXPECT_GE(updates[i].work_done, updates[i - 1].work_done) << i;
      }
    }
    EXPECT_EQ(updates.back().done, range.size());
    EXPECT_EQ(updates.back().work_done, estimated);
    if (range.from != held.from) continue;
    // The rows grow along the range: when half the ledgers are done, far less than half the
    // estimated work is (each span's share comes from the histogram, not from its width).
    const auto half = std::find_if(updates.begin(), updates.end(),
                                   [&](const Progress& p) { return 2 * p.done >= range.size(); });
    ASSERT_NE(half, updates.end());
    EXPECT_LT(static_cast<double>(half->work_done), 0.4 * static_cast<double>(estimated))
        << half->done << " of " << range.size() << " ledgers";
  }
}

// Issue 46: a digest reports as it reads, not only when a unit (a table of a chunk) ends: with
// one chunk read by one connection, the nine units end nine times, yet the progress takes many
// more values, each between the last unit's end and the next, never going back.
TEST(Progress, ADigestReportsAsItReadsNotOnlyWhenAUnitEnds) {
  const LedgerRange range{2, 3000};
  const std::string schema = GrowingSchema(range, /*analyzed=*/true);
  ProgressRecorder recorder;
  dump::DigestOptions o;
  o.range = range;
  o.jobs = 1;
  o.chunk_ledgers = range.size();
  o.progress_tick = std::chrono::milliseconds(1);
  auto spec = dump::LoadProfileSpec("horizon");
  ASSERT_TRUE(spec.ok());
  auto r = dump::DigestSchema(TestConninfo(), schema, *spec, o, nullptr, recorder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::set<uint64_t> values;
  for (size_t i = 0; i < recorder.updates.size(); ++i) {
    values.insert(recorder.updates[i].work_done);
    if (i) {
      EXPECT_GE(recorder.updates[i].work_done, recorder.updates[i - 1].work_done) << i;
      EXPECT_GE(recorder.updates[i].done, recorder.updates[i - 1].done) << i;
    }
  }
  std::printf("[ measured ] %zu progress updates, %zu distinct amounts of work, %zu tables\n",
              recorder.updates.size(), values.size(), r->tables.size());
  EXPECT_GT(values.size(), 3 * r->tables.size());
  EXPECT_EQ(recorder.updates.back().work_done, recorder.updates.back().work_total);
}

// Without statistics that describe the rows the ETA counts ledgers: never analyzed (and the
// digest does not analyze), or analyzed before most of the rows came.
// An ingest ANALYZEs the schema it wrote: the digest of a freshly ingested schema estimates its
// work by rows, not ledgers.
TEST(Progress, AnIngestLeavesStatisticsSoItsSchemasDigestCountsRows) {
  const std::string schema = UniqueName("ingest_analyzed");
  auto r = testing::RunCli({"ingest", "--db", testing::TestConninfo(), "--range", "2:1201", "--schema", schema,
                            "--workers", "2", "--job-size", "200"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto [updates, summary] = DigestProgress(schema, LedgerRange{2, 1201});
  ASSERT_FALSE(updates.empty());
  const double bytes = BytesRead(schema, summary);
  EXPECT_GE(static_cast<double>(updates.front().work_total), bytes / 1.5) << bytes;
  EXPECT_LE(static_cast<double>(updates.front().work_total), bytes * 1.5) << bytes;
}

TEST(Progress, DigestWithoutStatisticsOfItsRowsCountsLedgers) {
  const LedgerRange range{2, 1200};
  const std::string never = GrowingSchema(range, /*analyzed=*/false);
  const std::string stale = GrowingSchema(range, /*analyzed=*/true);
  {
    auto conn = Connect();
    auto more = fixtures::IngestJob(*conn, stale, {1201, 2400}, {});
    ASSERT_TRUE(more.ok()) << more.status().message();
    ExecSql(*conn, "SELECT pg_stat_force_next_flush()");  // its writes counted before it goes idle
  }
  for (const auto& [schema, digested] : {std::pair{never, range}, std::pair{stale, LedgerRange{2, 2400}}}) {
    SCOPED_TRACE(schema);
    const auto [updates, summary] = DigestProgress(schema, digested);
    ASSERT_FALSE(updates.empty());
    EXPECT_GT(summary.rows, 0u);
    for (const Progress& p : updates) {
      EXPECT_EQ(p.work_total, 0u);
      EXPECT_EQ(p.work_done, 0u);
    }
    EXPECT_EQ(updates.back().done, digested.size());
  }
  // Nothing was written into the schema: still no statistics.
  auto conn = Connect();
  auto stats = conn->Exec("SELECT count(*) FROM pg_stats WHERE schemaname = $1", {never});
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->GetInt(0, 0), 0);
}

}  // namespace
}  // namespace ledgerdiff
