// Digest, manifest, diff and dump against the harness's real PostgreSQL: encoding cases, no false
// alarms (reordered parallel ingest, renumbered Horizon dumps), no misses (changed, deleted,
// inserted, duplicated rows), manifests (round trip, corruption), --jobs determinism, the CLI.
#include "dump/digest.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/history_tables.h"
#include "core/ledger_range.h"
#include "core/pg.h"
#include "diff/diff.h"
#include "dump/canonical.h"
#include "dump/dump.h"
#include "dump/digest_job.h"
#include "dump/manifest.h"
#include "dump/profile.h"
#include "fixtures/ingester.h"
#include "fixtures/schema.h"
#include "tests/harness.h"
#include "tests/horizon_dumps.h"
#include "report/diff_text_json.h"
#include "tests/digest_support.h"

// The helpers the files of this binary share (tests/digest_support.h).
namespace ledgerdiff::digest_support {

std::string Q(const std::string& s) { return pg::QuoteIdent(s); }

Result<diff::DiffReport> Diff(const diff::Source& a, const diff::Source& b, diff::DiffOptions o) {
  NullReporter rep;
  return diff::DiffSources(a, b, dump::HorizonProfileSpec(), o, rep);
}

diff::Source Db(const std::string& conninfo, const std::string& schema) { return diff::SchemaSource{conninfo, schema}; }

std::string& KahunaLeft() {
  static std::string conninfo = testing::LoadDump("kahuna-horizon.sql");
  return conninfo;
}

LedgerRange HeldLedgers(const std::string& conninfo) {
  auto c = testing::Connect(conninfo);
  auto r = c->Exec("SELECT min(sequence), max(sequence) FROM history_ledgers");
  EXPECT_TRUE(r.ok());
  return {static_cast<Ledger>(std::stoul(std::string(r->Get(0, 0)))),
          static_cast<Ledger>(std::stoul(std::string(r->Get(0, 1))))};
}

}  // namespace ledgerdiff::digest_support


namespace ledgerdiff {
namespace {

using namespace digest_support;
using dump::Digest128;

// Per (ledger, table) entries of a digest.
struct Entries {
  dump::DigestSummary summary;
  std::map<std::pair<Ledger, std::string>, std::pair<uint64_t, Digest128>> e;
  std::vector<Digest128> combined;
};

Result<Entries> DigestEntries(const std::string& conninfo, const std::string& schema, const std::string& profile,
                              std::optional<LedgerRange> range = std::nullopt, int jobs = 1, uint32_t chunk = 0,
                              bool resolve_on_client = true, dump::LookupCache* cache = nullptr) {
  auto spec = dump::LoadProfileSpec(profile);
  if (!spec.ok()) return spec.status();
  dump::DigestOptions o;
  o.resolve_on_client = resolve_on_client;
  o.lookup_cache = cache;
  o.range = range;
  o.jobs = jobs;
  o.chunk_ledgers = chunk;
  Entries out;
  std::vector<std::string> names;
  NullReporter rep;
  auto r = dump::DigestSchema(
      conninfo, schema, *spec, o,
      [&](const Chunk& c) {
        for (size_t i = 0; i < c.ledgers.size(); ++i) {
          out.combined.push_back(c.combined[i]);
          for (size_t t = 0; t < c.tables; ++t) {
            // table names come from the summary later; keyed by index for now
            out.e[{c.ledgers[i], std::to_string(t)}] = {c.counts[c.At(i, t)], c.digests[c.At(i, t)]};
          }
        }
        return Status::Ok();
      },
      rep);
  if (!r.ok()) return r.status();
  out.summary = *r;
  decltype(out.e) named;
  for (auto& [k, v] : out.e) named[{k.first, out.summary.tables[std::stoul(k.second)].table}] = v;
  out.e = std::move(named);
  return out;
}

// A schema with one table "t"(ledger_sequence int, <cols>) for encoding cases (profile auto).
std::string EncodingSchema(const std::string& cols, const std::string& values) {
  auto conn = Connect();
  std::string s = UniqueName("enc");
  EXPECT_TRUE(conn->Run(fmt::format("CREATE SCHEMA {0}; CREATE TABLE {0}.t (ledger_sequence int, {1}); "
                                    "INSERT INTO {0}.t VALUES {2}",
                                    Q(s), cols, values))
                  .ok());
  return s;
}

Digest128 LedgerDigest(const std::string& schema, Ledger l = 1, const std::string& conninfo = TestConninfo()) {
  auto e = DigestEntries(conninfo, schema, "auto", LedgerRange{1, 3});
  EXPECT_TRUE(e.ok()) << e.status().message();
  if (!e.ok()) return {};
  return e->e.at({l, "t"}).second;
}

// ---------------------------------------------------------------------------------------------
// Encoding

TEST(Encoding, NullEmptyAndTextNullDiffer) {
  Digest128 a = LedgerDigest(EncodingSchema("v text", "(1, NULL)"));
  Digest128 b = LedgerDigest(EncodingSchema("v text", "(1, '')"));
  Digest128 c = LedgerDigest(EncodingSchema("v text", "(1, 'NULL')"));
  Digest128 d = LedgerDigest(EncodingSchema("v text", "(1, '\\N')"));
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(b, c);
  EXPECT_NE(a, d);
  EXPECT_EQ(a, LedgerDigest(EncodingSchema("v text", "(1, NULL)")));
}

TEST(Encoding, FieldBoundariesAreUnambiguous) {
  EXPECT_NE(LedgerDigest(EncodingSchema("a text, b text", "(1, 'a3', 'b')")),
            LedgerDigest(EncodingSchema("a text, b text", "(1, 'a', '3b')")));
  // Two rows vs one row with the same bytes spread differently.
  EXPECT_NE(LedgerDigest(EncodingSchema("a text", "(1, 'ab'), (1, 'c')")),
            LedgerDigest(EncodingSchema("a text", "(1, 'a'), (1, 'bc')")));
}

TEST(Encoding, NegativeZeroDiffersFromZero) {
  EXPECT_NE(LedgerDigest(EncodingSchema("f float8", "(1, '-0')")),
            LedgerDigest(EncodingSchema("f float8", "(1, '0')")));
}

TEST(Encoding, NaNEqualsNaN) {
  EXPECT_EQ(LedgerDigest(EncodingSchema("f float8, n numeric", "(1, 'NaN', 'NaN')")),
            LedgerDigest(EncodingSchema("f float8, n numeric", "(1, 'NaN', 'NaN')")));
  EXPECT_NE(LedgerDigest(EncodingSchema("f float8", "(1, 'NaN')")),
            LedgerDigest(EncodingSchema("f float8", "(1, 'Infinity')")));
}

TEST(Encoding, NumericScaleIsSignificant) {
  EXPECT_NE(LedgerDigest(EncodingSchema("n numeric", "(1, 1.0)")),
            LedgerDigest(EncodingSchema("n numeric", "(1, 1.00)")));
  EXPECT_EQ(LedgerDigest(EncodingSchema("n numeric", "(1, 1.0)")),
            LedgerDigest(EncodingSchema("n numeric", "(1, 1.0)")));
  // Rows equal in value but not in scale sort deterministically: the order does not matter.
  EXPECT_EQ(LedgerDigest(EncodingSchema("n numeric", "(1, 1.0), (1, 1.00)")),
            LedgerDigest(EncodingSchema("n numeric", "(1, 1.00), (1, 1.0)")));
}

TEST(Encoding, TimestampsIndependentOfSessionTimeZoneAndDateStyle) {
  std::string s =
      EncodingSchema("ts timestamptz, t timestamp, d date, i interval",
                     "(1, '2020-01-02 03:04:05.123456+00', '2020-01-02 03:04:05', '2020-01-02', '1 day 2 hours')");
  Digest128 base = LedgerDigest(s);
  for (const char* opts :
       {"-c TimeZone=Asia/Tokyo -c DateStyle=German", "-c TimeZone=America/New_York -c DateStyle=SQL,MDY",
        "-c IntervalStyle=iso_8601 -c extra_float_digits=0"}) {
    EXPECT_EQ(base, LedgerDigest(s, 1, TestConninfo() + fmt::format(" options='{}'", opts))) << opts;
  }
}

TEST(Encoding, JsonbCanonicalJsonAsStored) {
  EXPECT_EQ(LedgerDigest(EncodingSchema("j jsonb", "(1, '{\"b\": 1, \"a\": 2}')")),
            LedgerDigest(EncodingSchema("j jsonb", "(1, '{\"a\":2,\"b\":1}')")));
  EXPECT_NE(LedgerDigest(EncodingSchema("j json", "(1, '{\"b\": 1, \"a\": 2}')")),
            LedgerDigest(EncodingSchema("j json", "(1, '{\"a\":2,\"b\":1}')")));
}

TEST(Encoding, PhysicalOrderDoesNotMatterAndEmptyLedgersAreNotListed) {
  std::string a = EncodingSchema("v text", "(1, 'x'), (1, 'y'), (3, 'z')");
  std::string b = EncodingSchema("v text", "(3, 'z'), (1, 'y'), (1, 'x')");
  auto ea = DigestEntries(TestConninfo(), a, "auto", LedgerRange{1, 3});
  auto eb = DigestEntries(TestConninfo(), b, "auto", LedgerRange{1, 3});
  ASSERT_TRUE(ea.ok() && eb.ok());
  EXPECT_EQ(ea->summary.root, eb->summary.root);
  EXPECT_EQ(ea->e.count({2, "t"}), 0u);  // ledger 2 holds no row: not listed
  EXPECT_EQ(ea->e.at({1, "t"}).first, 2u);
}

// The per-(table, ledger) digest is the documented multiset digest, derived here by hand from
// XXH3-128: sum mod 2^128 of the row hashes, then XXH3-128 over (count u64 LE, sum u128 LE).
// Duplicates add (never cancel), and every chunking and job count gives the same entries.
// Rows of t(ledger_sequence, v int8) (columns in name order); texts shorter than 128 bytes.
Digest128 MultisetByHand(const std::string& ledger, const std::vector<std::string>& int_texts) {
  uint64_t lo = 0, hi = 0;
  const char int_tag = static_cast<char>(static_cast<int>(dump::ColumnClass::kInt) + 1);
  for (const auto& v : int_texts) {
    std::string row;
    for (const std::string& field : {ledger, v}) {
      row.push_back(int_tag);
      row.push_back(static_cast<char>(field.size()));
      row += field;
    }
    XXH128_hash_t h = XXH3_128bits(row.data(), row.size());
    uint64_t before = lo;
    lo += h.low64;
    hi += h.high64 + (lo < before ? 1 : 0);
  }
  unsigned char buf[24];
  uint64_t count = int_texts.size();
  for (int i = 0; i < 8; ++i) {
    buf[i] = static_cast<unsigned char>(count >> (8 * i));
    buf[8 + i] = static_cast<unsigned char>(lo >> (8 * i));
    buf[16 + i] = static_cast<unsigned char>(hi >> (8 * i));
  }
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(buf, sizeof buf));
  Digest128 d;
  std::copy(std::begin(c.digest), std::end(c.digest), d.bytes.begin());
  return d;
}

TEST(Engine, LedgerDigestIsTheDocumentedMultisetDigest) {
  std::string s = EncodingSchema("v int8", "(1, 42), (1, -7), (1, 42), (2, 5), (3, 6), (3, 7)");
  auto e = DigestEntries(TestConninfo(), s, "auto", LedgerRange{1, 4});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->e.at({1, "t"}).first, 3u);
  EXPECT_EQ(e->e.at({1, "t"}).second, MultisetByHand("1", {"-7", "42", "42"}));
  EXPECT_NE(e->e.at({1, "t"}).second, MultisetByHand("1", {"-7"}));  // the duplicate pair does not cancel
  EXPECT_NE(e->e.at({1, "t"}).second, MultisetByHand("1", {"-7", "42"}));
  EXPECT_EQ(e->e.at({2, "t"}).second, MultisetByHand("2", {"5"}));
  EXPECT_EQ(e->e.count({4, "t"}), 0u);  // ledger 4 holds no row: not listed
  EXPECT_EQ(dump::EmptyDigest(), MultisetByHand("", {}));
  for (int jobs : {1, 2, 4})
    for (uint32_t chunk : {1u, 2u, 3u}) {
      auto o = DigestEntries(TestConninfo(), s, "auto", LedgerRange{1, 4}, jobs, chunk);
      ASSERT_TRUE(o.ok()) << o.status().message();
      EXPECT_EQ(o->e, e->e) << "jobs " << jobs << " chunk " << chunk;
      EXPECT_EQ(o->summary.root, e->summary.root);
    }
}

// The sum is one 128-bit number: a low half that wraps carries into the high half. On real rows
// too: 64 values whose hashes' low halves wrap many times over give the documented digest.
TEST(Engine, MultisetSumCarriesFromTheLowHalfIntoTheHighHalf) {
  dump::RowMultiset m;
  m.Add(XXH128_hash_t{~uint64_t{0}, 0});
  m.Add(XXH128_hash_t{1, 0});
  EXPECT_EQ(m.lo, 0u);
  EXPECT_EQ(m.hi, 1u);
  EXPECT_EQ(m.count, 2u);
  std::string values;
  std::vector<std::string> texts;
  for (int i = 1; i <= 64; ++i) {
    values += fmt::format("{}(1, {})", i > 1 ? ", " : "", i);
    texts.push_back(std::to_string(i));
  }
  auto e = DigestEntries(TestConninfo(), EncodingSchema("v int8", values), "auto", LedgerRange{1, 1});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->e.at({1, "t"}).second, MultisetByHand("1", texts));
}

TEST(Encoding, UnescapeCopyField) {
  EXPECT_EQ(dump::UnescapeCopyField("\\N"), std::nullopt);
  EXPECT_EQ(*dump::UnescapeCopyField("a\\tb\\\\c\\n"), "a\tb\\c\n");
}

// ---------------------------------------------------------------------------------------------
// Manifests

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (UniqueName("ldm") + "_" + name)).string();
}

TEST(Manifest, RoundTripAndSchemaVsManifestEqualsSchemaVsSchema) {
  for (auto detail : {dump::ManifestDetail::kCompact, dump::ManifestDetail::kFull}) {
    std::string path = TempPath("m.ldm");
    NullReporter rep;
    auto s = dump::DigestToManifest(KahunaLeft(), "public", dump::HorizonProfileSpec(), {}, path, detail, rep);
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto back = dump::ReadManifestSummary(path);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->root, s->root);
    EXPECT_EQ(back->rows, s->rows);
    EXPECT_EQ(back->range, s->range);
    // identical vs the schema and vs itself
    auto r = Diff(diff::ManifestSource{path}, Db(KahunaLeft()));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->identical) << report::RenderDiffText(*r);
    EXPECT_EQ(r->left_root, r->right_root);
    // a change: same first ledger and tables as schema vs schema
    std::string b = LoadDump("kahuna-horizon.sql");
    ExecSql(*Connect(b), "UPDATE history_effects SET type = type + 1 WHERE history_operation_id = 21474844673");
    auto rs = Diff(Db(KahunaLeft()), Db(b));
    auto rm = Diff(diff::ManifestSource{path}, Db(b));
    ASSERT_TRUE(rs.ok() && rm.ok());
    EXPECT_EQ(rs->first_divergent_ledger, rm->first_divergent_ledger);
    ASSERT_EQ(rm->divergent_tables.size(), 1u);
    EXPECT_EQ(rm->divergent_tables[0].table, "history_effects");
    EXPECT_FALSE(rm->rows[0].left_available);
    EXPECT_GT(rm->rows[0].only_right_total, 0u);
    std::filesystem::remove(path);
  }
}

TEST(Manifest, CompactSizeAndSubRange) {
  std::string path = TempPath("c.ldm");
  NullReporter rep;
  auto s = dump::DigestToManifest(KahunaLeft(), "public", dump::HorizonProfileSpec(), {}, path,
                                  dump::ManifestDetail::kCompact, rep);
  ASSERT_TRUE(s.ok());
  diff::DiffOptions o;
  o.range = LedgerRange{10, 20};
  auto r = Diff(diff::ManifestSource{path}, Db(KahunaLeft()), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->identical);
  EXPECT_EQ(r->ledgers_compared, 11u);
  o.range = LedgerRange{50, 70};
  auto bad = Diff(diff::ManifestSource{path}, Db(KahunaLeft()), o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("outside"), std::string::npos);
}

TEST(Manifest, CorruptTruncatedAndForeignVersionAreRejected) {
  std::string path = TempPath("good.ldm");
  NullReporter rep;
  ASSERT_TRUE(dump::DigestToManifest(KahunaLeft(), "public", dump::HorizonProfileSpec(), {}, path,
                                     dump::ManifestDetail::kCompact, rep)
                  .ok());
  std::string good = testing::ReadFileBytes(path);
  std::string corrupt = good;
  corrupt[corrupt.size() - 200] ^= 0x40;
  std::string truncated = good.substr(0, good.size() / 2 + 37);
  std::string foreign = good;
  foreign[8] = 9;
  std::string notone = "hello world, not a manifest at all";
  for (auto& [name, bytes, expect] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"corrupt", corrupt, "corrupted"},
           {"truncated", truncated, "truncated"},
           {"foreign", foreign, "version 9"},
           {"notone", notone, "not a ledgerdiff manifest"}}) {
    std::string p = TempPath(name + ".ldm");
    testing::WriteFileBytes(p, bytes);
    auto r = dump::ReadManifestSummary(p);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_NE(r.status().message().find(expect), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().exit_code(), ExitCode::kUsage);
    auto d = Diff(diff::ManifestSource{p}, Db(KahunaLeft()));
    EXPECT_FALSE(d.ok()) << name;
    auto cli = testing::RunCli({"diff", "--db", KahunaLeft(), "file:" + p, "public"});
    EXPECT_EQ(cli.exit_code, 2) << name << cli.err;
    const std::string error = testing::AfterTargetLine(cli.err);  // the sides, when the digest had begun
    EXPECT_EQ(std::count(error.begin(), error.end(), '\n'), 1) << cli.err;
  }
}

// ---------------------------------------------------------------------------------------------
// Determinism and our own schema

// The workers share chunks by their tables (one unit per table and chunk): however many workers
// and chunks, the same entries, combined digests and root; progress only grows, to the total.
TEST(Digest, EntriesDoNotDependOnJobsOrChunks) {
  auto a = DigestEntries(KahunaLeft(), "public", "horizon", std::nullopt, 1, 0);
  ASSERT_TRUE(a.ok()) << a.status().message();
  for (int jobs : {2, 4, 9})
    for (uint32_t chunk : {0u, 1u, 3u, 40u}) {
      auto b = DigestEntries(KahunaLeft(), "public", "horizon", std::nullopt, jobs, chunk);
      ASSERT_TRUE(b.ok()) << b.status().message();
      EXPECT_EQ(a->summary.root, b->summary.root) << "jobs " << jobs << " chunk " << chunk;
      EXPECT_EQ(a->e, b->e) << "jobs " << jobs << " chunk " << chunk;
      EXPECT_EQ(a->combined, b->combined) << "jobs " << jobs << " chunk " << chunk;
    }

  struct Recorder : Reporter {
    std::vector<Progress> updates;
    void Note(std::string_view) override {}
    void Update(const Progress& p) override { updates.push_back(p); }
  } recorder;
  dump::DigestOptions o;
  o.jobs = 3;
  o.chunk_ledgers = 5;
  auto spec = dump::LoadProfileSpec("horizon");
  ASSERT_TRUE(spec.ok());
  auto r = dump::DigestSchema(KahunaLeft(), "public", *spec, o, nullptr, recorder);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->root, a->summary.root);
  ASSERT_FALSE(recorder.updates.empty());
  for (size_t i = 1; i < recorder.updates.size(); ++i)
    EXPECT_GE(recorder.updates[i].done, recorder.updates[i - 1].done);
  EXPECT_EQ(recorder.updates.back().done, r->range.size());
  EXPECT_EQ(recorder.updates.back().total, r->range.size());
}

// Client-side resolution (dump/lookup_map.h) must give exactly the canonical joins' digests:
// every real dump, renumbered (every trade turned around), with an id whose lookup row is gone,
// a natural key with escapes and NULLs, and a duplicate lookup id (which falls back to the joins).
TEST(Digest, ClientResolutionGivesTheCanonicalJoinsDigests) {
  auto same = [](const std::string& conninfo, const std::string& schema) -> size_t {
    auto client = DigestEntries(conninfo, schema, "horizon", std::nullopt, 2, 0, true);
    auto joins = DigestEntries(conninfo, schema, "horizon", std::nullopt, 2, 0, false);
    EXPECT_TRUE(client.ok()) << client.status().message();
    EXPECT_TRUE(joins.ok()) << joins.status().message();
    if (!client.ok() || !joins.ok()) return 0;
    EXPECT_EQ(client->summary.root, joins->summary.root);
    EXPECT_EQ(client->e, joins->e);
    EXPECT_EQ(client->combined, joins->combined);
    EXPECT_GT(client->summary.rows, 0u);
    EXPECT_EQ(joins->summary.tables_resolved_on_client, 0u);
    return client->summary.tables_resolved_on_client;
  };
  for (const auto& file : LoadableDumps()) {
    SCOPED_TRACE(file);
    std::string a = LoadDump(file);
    EXPECT_GE(same(a, "public"), 4u);  // effects, trades, both participants at least
    Renumber(a);
    EXPECT_GE(same(a, "public"), 4u);
  }
  std::string a = LoadDump("kahuna-horizon.sql");
  Renumber(a);
  auto c = Connect(a);
  // An effect whose account is gone, a trade whose asset is gone, an asset code with a tab and a
  // backslash (COPY escapes), an issuer NULL (orientation stops at the NULL pair).
  ExecSql(*c, "DELETE FROM history_accounts WHERE id = (SELECT min(history_account_id) FROM history_effects)");
  ExecSql(*c, "DELETE FROM history_assets WHERE id = (SELECT max(base_asset_id) FROM history_trades)");
  ExecSql(*c, "UPDATE history_assets SET asset_code = E'A\\tB\\\\' WHERE id = (SELECT min(id) FROM history_assets)");
  ExecSql(*c, "ALTER TABLE history_assets ALTER COLUMN asset_issuer DROP NOT NULL");
  ExecSql(*c, "UPDATE history_assets SET asset_issuer = NULL WHERE id = (SELECT max(id) FROM history_assets)");
  EXPECT_GE(same(a, "public"), 4u);
  auto before = DigestEntries(a, "public", "horizon");
  ASSERT_TRUE(before.ok());
  // Sparse ids (a lookup row far past the others, no history row naming it): the map gives up
  // its dense index and searches; the digests do not move.
  ExecSql(*c, "INSERT INTO history_accounts (id, address) VALUES (1099511627776, 'GSPARSEACCOUNT')");
  EXPECT_GE(same(a, "public"), 4u);
  auto sparse = DigestEntries(a, "public", "horizon");
  ASSERT_TRUE(sparse.ok());
  EXPECT_EQ(sparse->summary.root, before->summary.root);
  // A duplicate lookup id: the joins yield a row twice; the client path must give the same.
  ExecSql(*c, "ALTER TABLE history_assets DROP CONSTRAINT IF EXISTS history_assets_pkey CASCADE");
  ExecSql(*c,
          "ALTER TABLE history_assets DROP CONSTRAINT IF EXISTS history_assets_asset_code_asset_type_asset_issuer_key");
  auto joined = [&] {
    auto r = c->Exec("SELECT count(*) FROM history_trades t JOIN history_assets a ON a.id = t.counter_asset_id");
    return r.ok() ? r->GetInt(0, 0) : -1;
  };
  int64_t trades_joined = joined();
  ASSERT_GT(trades_joined, 0);
  ExecSql(*c,
          "INSERT INTO history_assets SELECT * FROM history_assets WHERE id = (SELECT min(counter_asset_id) FROM "
          "history_trades)");
  EXPECT_GT(joined(), trades_joined) << "a trade's counter asset is now twice in history_assets";
  EXPECT_EQ(same(a, "public"), 0u);  // back to the joins
  auto after = DigestEntries(a, "public", "horizon");
  ASSERT_TRUE(after.ok());
  EXPECT_NE(before->summary.root, after->summary.root);

  // Our own schema: base_is_exact true/false/NULL, many trades both ways.
  auto conn = Connect();
  std::string own = UniqueName("client");
  ExecSql(*conn, "CREATE SCHEMA " + Q(own));
  ASSERT_TRUE(fixtures::CreateHistorySchema(*conn, own).ok());
  ASSERT_TRUE(fixtures::IngestJob(*conn, own, LedgerRange{1, 300}, {}).ok());
  EXPECT_GE(same(TestConninfo(), own), 4u);
}

// A lookup cache (verify-range --follow's cycles) reads only the rows above the highest id it
// keeps, and the table whole again when a row at or below it appeared or went (an account row
// committed late under a lower id): the digests are always those of a fresh read.
TEST(Digest, ALookupCacheReadsOnlyNewRowsAndReadsWholeWhenARowBelowChanges) {
  std::string a = LoadDump("kahuna-horizon.sql");
  Renumber(a);
  auto c = Connect(a);
  dump::LookupCache cache;
  auto fresh = [&] { return DigestEntries(a, "public", "horizon"); };
  auto cached = [&] { return DigestEntries(a, "public", "horizon", std::nullopt, 2, 0, true, &cache); };
  auto first = cached();
  ASSERT_TRUE(first.ok()) << first.status().message();
  const uint64_t lookups = cache.full_reads();
  ASSERT_GE(lookups, 2u);  // accounts and assets at least
  EXPECT_EQ(cache.extensions(), 0u);
  uint64_t read = cache.rows_read();
  // Nothing new: no row read, same digests.
  auto again = cached();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(cache.full_reads(), lookups);
  EXPECT_EQ(cache.extensions(), lookups);
  EXPECT_EQ(cache.rows_read(), read);
  EXPECT_EQ(again->e, first->e);
  // Two accounts above the highest id, one referenced by an effect: only they are read.
  auto top = c->Exec("SELECT max(id) FROM history_accounts");
  ASSERT_TRUE(top.ok());
  const int64_t max_id = top->GetInt(0, 0);
  ExecSql(*c, fmt::format("INSERT INTO history_accounts (id, address) VALUES ({}, 'GNEWACCOUNTONE'), ({}, "
                          "'GNEWACCOUNTTWO')",
                          max_id + 1, max_id + 2));
  ExecSql(*c, fmt::format("UPDATE history_effects SET history_account_id = {} WHERE history_operation_id = (SELECT "
                          "max(history_operation_id) FROM history_effects)",
                          max_id + 2));
  auto grown = cached();
  auto grown_fresh = fresh();
  ASSERT_TRUE(grown.ok() && grown_fresh.ok());
  EXPECT_EQ(cache.full_reads(), lookups);
  EXPECT_EQ(cache.rows_read(), read + 2);
  EXPECT_EQ(grown->e, grown_fresh->e);
  EXPECT_EQ(grown->summary.root, grown_fresh->summary.root);
  EXPECT_NE(grown->summary.root, first->summary.root);
  read = cache.rows_read();
  // An account an effect references goes, then comes back (a late commit under a lower id):
  // each time the cache reads the table whole, and the digests are a fresh read's.
  auto referenced = c->Exec("SELECT min(history_account_id) FROM history_effects");
  ASSERT_TRUE(referenced.ok());
  const int64_t gone = referenced->GetInt(0, 0);
  auto address = c->Exec(fmt::format("SELECT address FROM history_accounts WHERE id = {}", gone));
  ASSERT_TRUE(address.ok());
  const std::string gone_address(address->Get(0, 0));
  ExecSql(*c, fmt::format("DELETE FROM history_accounts WHERE id = {}", gone));
  auto without = cached();
  auto without_fresh = fresh();
  ASSERT_TRUE(without.ok() && without_fresh.ok());
  EXPECT_EQ(cache.full_reads(), lookups + 1);
  EXPECT_EQ(without->summary.root, without_fresh->summary.root);
  EXPECT_NE(without->summary.root, grown->summary.root);
  ExecSql(*c, fmt::format("INSERT INTO history_accounts (id, address) VALUES ({}, {})", gone, pg::QuoteLiteral(gone_address)));
  auto back = cached();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(cache.full_reads(), lookups + 2);
  EXPECT_EQ(back->summary.root, grown->summary.root);
  EXPECT_EQ(back->e, grown->e);
  // One referenced account goes and another comes under a lower id, the count unchanged: the
  // ids' sums tell (the kept row of the gone id would still resolve it).
  ExecSql(*c, fmt::format("DELETE FROM history_accounts WHERE id = {}", gone));
  ExecSql(*c, "INSERT INTO history_accounts (id, address) VALUES (-7, 'GLATEACCOUNT')");
  auto swapped = cached();
  auto swapped_fresh = fresh();
  ASSERT_TRUE(swapped.ok() && swapped_fresh.ok());
  EXPECT_EQ(cache.full_reads(), lookups + 3);
  EXPECT_EQ(swapped->summary.root, swapped_fresh->summary.root);
  EXPECT_EQ(swapped->summary.root, without->summary.root);
}

TEST(Digest, SerialAndReorderedParallelIngestAreIdentical) {
  auto conn = Connect();
  std::string serial = UniqueName("serial"), parallel = UniqueName("parallel");
  for (const auto& s : {serial, parallel}) {
    ExecSql(*conn, "CREATE SCHEMA " + Q(s));
    ASSERT_TRUE(fixtures::CreateHistorySchema(*conn, s).ok());
  }
  const LedgerRange range{1, 400};
  fixtures::IngestJobOptions opts;
  auto r = fixtures::IngestJob(*conn, serial, range, opts);
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto jobs = SplitJobs(range, 37);
  std::mt19937 rng(7);
  std::shuffle(jobs.begin(), jobs.end(), rng);
  for (const auto& j : jobs) {
    auto rj = fixtures::IngestJob(*conn, parallel, j, opts);
    ASSERT_TRUE(rj.ok()) << rj.status().message();
  }
  diff::DiffOptions o;
  o.jobs = 3;
  auto d = Diff(Db(TestConninfo(), serial), Db(TestConninfo(), parallel), o);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_TRUE(d->identical) << report::RenderDiffText(*d);
  EXPECT_EQ(d->ledgers_compared, 400u);
  EXPECT_GT(d->rows_compared_left, 1000u);

  // A bug injected into one job is found at its ledger.
  std::string buggy = UniqueName("buggy");
  ExecSql(*conn, "CREATE SCHEMA " + Q(buggy));
  ASSERT_TRUE(fixtures::CreateHistorySchema(*conn, buggy).ok());
  auto pick =
      conn->Exec(fmt::format("SELECT (min(history_operation_id) >> 32)::int FROM {} "
                             "WHERE history_operation_id >= (200::bigint << 32)",
                             pg::Qualified(serial, "history_operation_participants")));
  ASSERT_TRUE(pick.ok() && !pick->IsNull(0, 0));
  const Ledger target = static_cast<Ledger>(pick->GetInt(0, 0));
  fixtures::IngestJobOptions bug = opts;
  bug.bug = {fixtures::BugKind::kDuplicateRow, target};
  auto rb = fixtures::IngestJob(*conn, buggy, range, bug);
  ASSERT_TRUE(rb.ok()) << rb.status().message();
  auto db = Diff(Db(TestConninfo(), serial), Db(TestConninfo(), buggy));
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(db->first_divergent_ledger, std::optional<Ledger>(target)) << report::RenderDiffText(*db);
  ASSERT_EQ(db->rows.size(), 1u);
  EXPECT_EQ(db->rows[0].only_right_total, 1u) << report::RenderDiffText(*db);

  // Manifest size for our 9-table schema.
  std::string path = TempPath("own.ldm");
  NullReporter rep;
  auto s = dump::DigestToManifest(TestConninfo(), serial, dump::HorizonProfileSpec(), {}, path,
                                  dump::ManifestDetail::kCompact, rep);
  ASSERT_TRUE(s.ok());
  double bpl = static_cast<double>(s->manifest_bytes) / static_cast<double>(s->range.size());
  std::printf("compact manifest: %.1f bytes/ledger (%zu tables)\n", bpl, s->tables.size());
  EXPECT_LE(bpl, 64.0 + 2000.0 / 400);  // header amortised over 400 ledgers

  // Canonical dumps of the two schemas are byte-identical.
  std::string d1 = TempPath("d1"), d2 = TempPath("d2");
  dump::DumpOptions dopt;
  dopt.out = d1;
  ASSERT_TRUE(dump::DumpSchema(TestConninfo(), serial, dump::HorizonProfileSpec(), dopt, rep).ok());
  dopt.out = d2;
  ASSERT_TRUE(dump::DumpSchema(TestConninfo(), parallel, dump::HorizonProfileSpec(), dopt, rep).ok());
  for (const auto& e : std::filesystem::directory_iterator(d1)) {
    std::string other = (std::filesystem::path(d2) / e.path().filename()).string();
    EXPECT_EQ(testing::ReadFileBytes(e.path().string()), testing::ReadFileBytes(other)) << e.path();
  }
}

TEST(Digest, UserProfileFromJson) {
  auto conn = Connect();
  std::string s = UniqueName("user");
  ExecSql(
      *conn,
      fmt::format(
          "CREATE SCHEMA {0}; CREATE TABLE {0}.accts (id int, addr text); "
          "CREATE TABLE {0}.moves (seq int, acct int, note text, created_at timestamptz DEFAULT now()); "
          "INSERT INTO {0}.accts VALUES (1, 'GA'), (2, 'GB'); INSERT INTO {0}.moves VALUES (5, 1, 'x'), (6, 2, 'y')",
          Q(s)));
  std::string path = TempPath("profile.json");
  testing::WriteFileBytes(
      path, R"({"name": "mine", "tables": [{"table": "moves", "ledger": {"column": "seq"}, "key": ["acct"],
                     "resolve": [{"column": "acct", "lookup": "accts", "id": "id", "natural": ["addr"]}]}]})");
  auto spec = dump::LoadProfileSpec(path);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto conn2 = Connect();
  auto p = dump::ResolveProfile(*conn2, s, *spec);
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->tables.size(), 1u);
  // Canonical columns in name order (physical order is not data): acct.addr, note, seq.
  ASSERT_EQ(p->tables[0].columns.size(), 3u);
  EXPECT_EQ(p->tables[0].columns[0].name, "acct.addr");
  EXPECT_EQ(p->tables[0].columns[2].name, "seq");
  EXPECT_EQ(p->ExcludedColumns(), std::vector<std::string>{"moves.created_at"});
  EXPECT_EQ(p->lookup_tables, std::vector<std::string>{"accts"});
  testing::WriteFileBytes(path, "{nope");
  EXPECT_EQ(dump::LoadProfileSpec(path).status().kind(), Status::Kind::kUsage);
}

// ---------------------------------------------------------------------------------------------
// CLI

TEST(Cli, DigestDiffAndExitCodes) {
  std::string b = LoadDump("kahuna-horizon.sql");
  std::string path = TempPath("cli.ldm");
  auto d = testing::RunCli({"digest", "--db", KahunaLeft(), "--schema", "public", "--out", path, "--jobs", "2"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("root "), std::string::npos);
  EXPECT_NE(d.out.find("excluded columns: history_ledgers.created_at"), std::string::npos) << d.out;
  auto same = testing::RunCli({"diff", "--db", KahunaLeft(), "public", b + "::public"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  // The sides first (issue 22), then the verdict.
  EXPECT_EQ(same.out.rfind("target: left: database ", 0), 0u) << same.out;
  EXPECT_EQ(same.out.find("\nidentical: 61 ledgers"), same.out.find('\n')) << same.out;
  auto vs_manifest = testing::RunCli({"diff", path, b + "::public", "--format", "json"});
  EXPECT_EQ(vs_manifest.exit_code, 0) << vs_manifest.err;
  auto j = nlohmann::json::parse(vs_manifest.out);
  EXPECT_EQ(j["identical"], true);
  EXPECT_TRUE(j["first_divergent_ledger"].is_null());
  ExecSql(*Connect(b), "UPDATE history_transactions SET memo = 'x' WHERE ledger_sequence = 33");
  auto differ = testing::RunCli({"diff", "--db", KahunaLeft(), "public", b + "::public", "--format", "json", "--all"});
  EXPECT_EQ(differ.exit_code, 1) << differ.err;
  auto jd = nlohmann::json::parse(differ.out);
  EXPECT_EQ(jd["first_divergent_ledger"], 33);
  EXPECT_EQ(jd["divergent_tables"][0], "history_transactions");
  EXPECT_TRUE(jd.contains("all_divergent"));
  auto missing = testing::RunCli({"digest", "--db", KahunaLeft(), "--schema", "nope"});
  EXPECT_EQ(missing.exit_code, 2);
  auto dumped = testing::RunCli({"dump", "--db", KahunaLeft(), "--schema", "public", "--range", "1:3"});
  EXPECT_EQ(dumped.exit_code, 0) << dumped.err;
  EXPECT_NE(dumped.out.find("\"table\":\"history_ledgers\""), std::string::npos);
}


}  // namespace
}  // namespace ledgerdiff
