// Core: ranges, job splitting, quoting, the embedded server and schema ownership.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/concurrency.h"
#include "core/database.h"
#include "core/ledger_range.h"
#include "core/pg.h"
#include "core/redact.h"
#include "core/report.h"
#include "core/text.h"
#include "tests/harness.h"

namespace ledgerdiff {
namespace {

using testing::Connect;
using testing::UniqueName;

// The concurrency kit (core/concurrency.h): what the digest streams and the heartbeats rely on.
TEST(BoundedQueue, KeepsOrderBlocksWhenFullAndDrainsAfterClose) {
  BoundedQueue<int> q(2);
  std::atomic<int> pushed{0};
  std::thread producer([&] {
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(q.Push(i));
      ++pushed;
    }
    q.Close(Status::Runtime("the producer's end"));
  });
  // The third push waits for a pop: the bound holds.
  for (int spins = 0; spins < 200 && pushed.load() < 2; ++spins) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(pushed.load(), 2);
  std::vector<int> got;
  int v = -1;
  while (q.Pop(v)) got.push_back(v);
  producer.join();
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 3, 4}));  // nothing queued before Close is dropped
  EXPECT_EQ(q.status().message(), "the producer's end");
}

TEST(BoundedQueue, CancelReleasesABlockedProducer) {
  BoundedQueue<int> q(1);
  ASSERT_TRUE(q.Push(1));
  std::atomic<int> second{-1};
  std::thread producer([&] { second = q.Push(2) ? 1 : 0; });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(second.load(), -1);  // still blocked: the queue is full
  q.Cancel();
  producer.join();
  EXPECT_EQ(second.load(), 0);
  EXPECT_FALSE(q.Push(3));
}

TEST(PeriodicThread, TicksUntilStoppedAndTickNowWaitsForAFreshTick) {
  std::atomic<int> ticks{0};
  {
    PeriodicThread t(std::chrono::hours(1), PeriodicThread::Start::kAfterOnePeriod, [&] { ++ticks; });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_EQ(ticks.load(), 0);  // an hour's period: no tick without a request
    EXPECT_TRUE(t.TickNow(std::chrono::seconds(5)));
    EXPECT_EQ(ticks.load(), 1);
    EXPECT_TRUE(t.TickNow(std::chrono::seconds(5)));
    EXPECT_EQ(ticks.load(), 2);
    t.Stop();
    EXPECT_FALSE(t.TickNow(std::chrono::milliseconds(10)));  // stopped: nothing runs
  }
  EXPECT_EQ(ticks.load(), 2);
  std::atomic<int> fast{0};
  PeriodicThread f(std::chrono::milliseconds(5), PeriodicThread::Start::kTickAtOnce, [&] { ++fast; });
  for (int spins = 0; spins < 400 && fast.load() < 3; ++spins) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  f.Stop();
  const int at_stop = fast.load();
  EXPECT_GE(at_stop, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(fast.load(), at_stop);  // none after Stop returned
}

TEST(LedgerRange, ParsesAndRejects) {
  auto r = ParseLedgerRange("2:5001");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->from, 2u);
  EXPECT_EQ(r->to, 5001u);
  EXPECT_EQ(r->size(), 5000u);
  EXPECT_EQ(ParseLedgerRange("7")->to, 7u);
  for (const char* bad : {"5:2", "0:3", "-1:4", "a:b", "1:", ":3", "", "1:2:3", "1:99999999999"}) {
    auto e = ParseLedgerRange(bad);
    EXPECT_FALSE(e.ok()) << bad;
    if (!e.ok()) {
      EXPECT_EQ(e.status().kind(), Status::Kind::kUsage) << bad;
      EXPECT_EQ(e.status().message().find('\n'), std::string::npos);
    }
  }
  EXPECT_NE(ParseLedgerRange("5:2").status().message().find("before"), std::string::npos);
  // The edge: TO one before FROM is no range (not an empty one); TO == FROM is one ledger.
  EXPECT_NE(ParseLedgerRange("5:4").status().message().find("TO (4) is before FROM (5)"), std::string::npos);
  EXPECT_EQ(ParseLedgerRange("5:5")->size(), 1u);
}

// Ledger 0 is comparable (a broken copy can hold rows there) but never ingested.
TEST(LedgerRange, LedgerZeroOnlyInComparisonRanges) {
  auto compare = ParseLedgerRange("0:7", RangeUse::kCompare);
  ASSERT_TRUE(compare.ok()) << compare.status().message();
  EXPECT_EQ(*compare, (LedgerRange{0, 7}));
  EXPECT_EQ(compare->size(), 8u);
  EXPECT_TRUE(compare->contains(0));
  EXPECT_EQ(*ParseLedgerRange("0", RangeUse::kCompare), (LedgerRange{0, 0}));
  auto ingest = ParseLedgerRange("0:7");  // kIngest is the default
  ASSERT_FALSE(ingest.ok());
  EXPECT_EQ(ingest.status().kind(), Status::Kind::kUsage);
  EXPECT_NE(ingest.status().message().find("FROM is 0"), std::string::npos) << ingest.status().message();
  EXPECT_FALSE(ParseLedgerRange("0:7", RangeUse::kIngest).ok());
  for (const char* bad : {"5:2", "-1:4", "a:b", "1:", ":3", "", "1:2:3", "0:99999999999", "0:-1"}) {
    auto e = ParseLedgerRange(bad, RangeUse::kCompare);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.status().kind(), Status::Kind::kUsage) << bad;
  }
}

TEST(LedgerRange, SplitJobsCoversRangeExactlyWithShortLastJob) {
  auto jobs = SplitJobs({2, 11}, 3);
  ASSERT_EQ(jobs.size(), 4u);
  EXPECT_EQ(jobs[0], (LedgerRange{2, 4}));
  EXPECT_EQ(jobs[3], (LedgerRange{11, 11}));  // a last job of exactly one ledger is kept
  EXPECT_EQ(SplitJobs({5, 5}, 100).size(), 1u);
  for (uint32_t size : {1u, 2u, 7u, 250u}) {
    auto js = SplitJobs({2, 1001}, size);
    Ledger next = 2;
    for (auto& j : js) {
      EXPECT_EQ(j.from, next);
      EXPECT_LE(j.to - j.from + 1, size);
      next = j.to + 1;
    }
    EXPECT_EQ(next, 1002u);
  }
}

TEST(LedgerRange, Intervals) {
  EXPECT_EQ(FormatIntervals(std::vector<Ledger>{12, 13, 14, 15, 40}), "12-15, 40");
  EXPECT_EQ(FormatIntervals(std::vector<Ledger>{}), "");
  EXPECT_EQ(FormatIntervals(std::vector<Ledger>{3}), "3");
}

TEST(Toid, Layout) {
  EXPECT_EQ(Toid(2), int64_t{2} << 32);
  EXPECT_EQ(Toid(2, 1), (int64_t{2} << 32) | (1 << 12));
  EXPECT_EQ(Toid(2, 1, 1), (int64_t{2} << 32) | (1 << 12) | 1);
  EXPECT_EQ(ToidLedger(Toid(123456, 7, 3)), 123456u);
}

// One escaping loop, two tables: COPY text and XML escape exactly their characters, append to
// what is there, and copy runs of plain text (multi-byte UTF-8 included) unchanged.
TEST(Text, EscapingTables) {
  static constexpr EscapeTable kBrackets{{'[', "(("}, {']', "))"}};
  std::string out = "kept:";
  AppendEscaped(out, "a[b]]c", kBrackets);
  EXPECT_EQ(out, "kept:a((b))))c");
  AppendEscaped(out, "", kBrackets);
  EXPECT_EQ(out, "kept:a((b))))c");

  std::string copy = ">";
  pg::AppendCopyEscaped(copy, "a\\b\tc\nd\re\xc3\xa9");
  EXPECT_EQ(copy, ">a\\\\b\\tc\\nd\\re\xc3\xa9");

  EXPECT_EQ(XmlEscape("<a href=\"x\">Tom & Jerry's</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
  EXPECT_EQ(XmlEscape("plain \xc3\xa9 text"), "plain \xc3\xa9 text");
}

TEST(Pg, QuotingAndRedaction) {
  EXPECT_EQ(pg::QuoteIdent("a\"b"), "\"a\"\"b\"");
  EXPECT_EQ(pg::QuoteLiteral("it's"), "'it''s'");
  // Rebuilt by libpq's parser without the password (every form: tests/safety_test.cc).
  EXPECT_EQ(pg::RedactConninfo("postgresql://bob:s3cret@host/db"), "user=bob dbname=db host=host");
  EXPECT_EQ(pg::RedactConninfo("host=x password=s3cret user=bob"), "user=bob host=x");
  EXPECT_EQ(pg::RedactConninfo("host=x password='a b' user=bob"), "user=bob host=x");
}

// Leaks found by tests/fuzz/redact_fuzz.cc: each conninfo, the password it holds, and the pieces
// of it that were shown. Neither the redacted conninfo, nor a Status holding the conninfo as
// written, nor a Status holding the password may show them.
// Issue 22: the one number formatter of text output.
TEST(Text, CountsWithSeparatorsAndNounsInTheNumbersForm) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(1000), "1,000");
  EXPECT_EQ(FormatCount(1234567), "1,234,567");
  EXPECT_EQ(FormatCountOf(1, "worker"), "1 worker");
  EXPECT_EQ(FormatCountOf(2, "worker"), "2 workers");
  EXPECT_EQ(FormatCountOf(0, "row"), "0 rows");
  EXPECT_EQ(FormatCountOf(1500, "ledger"), "1,500 ledgers");
  EXPECT_EQ(FormatCountOf(1, "entry", "entries"), "1 entry");
  EXPECT_EQ(FormatCountOf(2000000, "entry", "entries"), "2,000,000 entries");
}

TEST(Secrets, LeaksFoundByFuzzing) {
  struct Case {
    std::string conninfo, password;
    std::vector<std::string> pieces;
  };
  const std::vector<Case> cases = {
      // A '?' is part of a URI password (libpq ends the user info at '@' or '/'); the scan ended
      // it at the '?', so when libpq could not parse the URI nothing of the password was masked.
      {"postgresql://bob:Pa?ss%zzword@host/db", "Pa?ss%zzword", {"Pa?ss", "ss%zzword"}},
      // libpq percent-decodes query keys: pass%77ord is the password.
      {"postgresql://bob@host/db?pass%77ord=Encoded%20Secret&application_name=%zz",
       "Encoded Secret",
       {"Encoded", "Secret"}},
      // libpq takes whitespace into a URI's query value: the scan ended it there.
      {"postgresql://bob@host/db?password=Raw Query=Secret&noeq", "Raw Query=Secret", {"Query=Secret"}},
      // A password quoted inside a quoted dbname conninfo is written with two levels of escapes.
      {"dbname='user=bob password=\\'nested \\\\\\'kv\\\\\\' secret\\'' host=h",
       "nested 'kv' secret",
       {"kv", "secret"}},
      // A URI given as dbname in a conninfo libpq cannot parse.
      {"dbname='postgresql://bob:UriSecret@h/db' junk", "UriSecret", {"UriSecret"}},
      // sslpassword is a secret too (libpq parses it from any spelling of the key).
      {"postgresql://h/db?sslpass%77ord=KeyPass", "KeyPass", {"KeyPass"}},
      {"host=h sslpassword='key pass' user=u", "key pass", {"key pass"}},
      // Two candidates that overlap ("password=\\'" as the user info's password, and what
      // follows the "password=" inside it): masking one after the other left part of the first.
      {"postgresql://:password=\\'@/?bogus=1", "password=\\'", {"password="}},
      // A bare value that starts with an escaped quote is a candidate as such, not only as a
      // value quoted inside a quoted one.
      {"host=h password=\\'\\ Quote1Secret junk", "' Quote1Secret", {"Quote1Secret"}},
      // Issue 22: an unquoted password with a space. libpq ends the value at the space and
      // rejects the rest (missing "=" after "ter2Q"), echoing that part of the password.
      {"host=h password=Hun ter2Q user=u", "Hun ter2Q", {"ter2Q", "Hun"}},
      {"password=Hun ter2Q", "Hun ter2Q", {"ter2Q", "Hun"}},
      // Issue 44 (redact_fuzz, form bare-to-key): an unquoted value runs to the next recognised
      // key, junk words included; the password the user meant ends at a word before them, with
      // its whitespace: masking its words alone left "\r\r\r\r" between them.
      {"PASSWORD=H\r\r\r\r\r\r\r:n ter2\f_n junk", "H\r\r\r\r\r\r\r:n ter2\f_n", {"\r\r\r\r"}},
  };
  for (const auto& c : cases) {
    const std::string shown = RedactConninfo(c.conninfo);
    const std::string raw = Status::Runtime("bad --db " + c.conninfo).message();
    const std::string told = Status::Usage("server said: " + c.password).message();
    for (const auto& piece : c.pieces) {
      EXPECT_EQ(shown.find(piece), std::string::npos) << c.conninfo << " -> " << shown;
      EXPECT_EQ(raw.find(piece), std::string::npos) << c.conninfo << " -> " << raw;
      EXPECT_EQ(told.find(piece), std::string::npos) << c.conninfo << " -> " << told;
    }
  }
  // The error libpq gives for it names the fragment; the connection's error carries none of it.
  auto opened = pg::Connection::Open("host=/nonexistent password=Hun ter2Q user=u");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().message().find("ter2Q"), std::string::npos) << opened.status().message();
  EXPECT_EQ(RedactConninfo("host=h password=Hun ter2Q user=u").find("ter2Q"), std::string::npos);
  EXPECT_NE(RedactConninfo("host=h password=Hun ter2Q user=u").find("user=u"), std::string::npos);
  EXPECT_EQ(RedactConninfo("postgresql://h/db?sslpass%77ord=KeyPass"), "dbname=db host=h");
  EXPECT_EQ(RedactConninfo("postgresql://:password=\\'@/?bogus=1"), "postgresql://:***");
  // Overlapping registered secrets are masked as one run.
  RegisterSecret("Overlap1Left");
  RegisterSecret("Left2Right");
  EXPECT_EQ(ScrubSecrets("x Overlap1Left2Right y"), "x *** y");
}

// Issue 44: malformed conninfos that libpq parses as something else or not at all. The rules need
// no parse: a URI-shaped user info is everything between a ':' or "//" and the '@' after it; a
// password or sslpassword value runs up to the next key libpq recognises. No 4-byte piece of the
// password in the redacted conninfo, a Status holding the conninfo, or the connect error.
TEST(Secrets, MalformedConninfosAreMaskedWithoutLibpqParsingThem) {
  struct Case {
    std::string conninfo, password;
  };
  const std::vector<Case> cases = {
      {"postgresql:/bob:OneSlashPw77@nohost.invalid/db", "OneSlashPw77"},
      {"postgresql//bob:NoColonPw88@nohost.invalid/db", "NoColonPw88"},
      {"postgres:bob:SchemeOnlyPw99@nohost.invalid/db", "SchemeOnlyPw99"},
      {"bob:BareUserinfoPw11@nohost.invalid/db", "BareUserinfoPw11"},
      {"postgresql:/bob:Two Words@Pw22@nohost.invalid/db", "Two Words@Pw22"},
      {"host=/nonexistent port=1 user=bob password=Hun ter=2Qx", "Hun ter=2Qx"},
      {"host=/nonexistent password=Hun ter=2Qx user=bob", "Hun ter=2Qx"},
      {"host=/nonexistent port=1 sslpassword=Key Pass=Word7 user=bob", "Key Pass=Word7"},
      {"host=/nonexistent port=1 user=bob sslpassword=Key Pass=Word7", "Key Pass=Word7"},
  };
  auto pieces = [](const std::string& pw) {
    std::vector<std::string> out;
    for (size_t i = 0; i + 4 <= pw.size(); ++i) out.push_back(pw.substr(i, 4));
    return out;
  };
  for (const auto& c : cases) {
    const std::string shown = RedactConninfo(c.conninfo);
    const std::string raw = Status::Runtime("bad --db " + c.conninfo).message();
    auto opened = pg::Connection::Open(c.conninfo);
    ASSERT_FALSE(opened.ok()) << c.conninfo;
    for (const auto& piece : pieces(c.password)) {
      EXPECT_EQ(shown.find(piece), std::string::npos) << c.conninfo << " -> " << shown;
      EXPECT_EQ(raw.find(piece), std::string::npos) << c.conninfo << " -> " << raw;
      EXPECT_EQ(opened.status().message().find(piece), std::string::npos) << opened.status().message();
    }
  }
  // What is not user info nor a password stays: the rules stop at a recognised key.
  EXPECT_EQ(RedactConninfo("host=/tmp user=a:b password=Hun ter=2Qx dbname=x"), "host=/tmp user=a:b password=*** dbname=x");
  EXPECT_EQ(RedactConninfo("postgresql:/bob:OneSlashPw77@nohost.invalid/db"), "postgresql:***@nohost.invalid/db");
}

// An external ingester's output may show part of a password: ScrubSecretPieces masks every 4-byte
// piece of one, ScrubSecrets (the tool's own messages) only whole forms.
TEST(Secrets, ForeignTextIsScrubbedOfEveryPieceOfAPassword) {
  RegisterConninfoSecrets("host=h password=Ingest3rPiecePw user=u");
  EXPECT_EQ(ScrubSecretPieces("auth as u with Ingest3rPiece and PiecePw, ok"), "auth as u with *** and ***, ok");
  EXPECT_EQ(ScrubSecretPieces("first 4: Inge | rest"), "first 4: *** | rest");
  EXPECT_EQ(ScrubSecrets("auth with Ingest3rPiece"), "auth with Ingest3rPiece");
  EXPECT_EQ(ScrubSecrets("auth with Ingest3rPiecePw"), "auth with ***");
}

TEST(Pg, SessionSettingsArePinned) {
  auto conn = Connect(testing::TestConninfo() + " options='-c TimeZone=Asia/Tokyo -c DateStyle=German'");
  ASSERT_TRUE(conn);
  auto rows = conn->Exec("SELECT '2020-01-02 03:04:05+00'::timestamptz::text");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->Get(0, 0), "2020-01-02 03:04:05+00");
}

// Issue 44: a privilege the role lacks (SQLSTATE 42501) is the configuration's to fix: a Usage
// error, exit 2 (a follower or a scheduler retrying it only repeats it), not a runtime one.
TEST(Pg, InsufficientPrivilegeIsBadInputNotARuntimeFailure) {
  auto admin = Connect();
  ASSERT_TRUE(admin);
  const std::string schema = UniqueName("private"), role = UniqueName("nopriv");
  ASSERT_TRUE(admin->Run("CREATE SCHEMA " + pg::QuoteIdent(schema) + "; CREATE TABLE " +
                         pg::Qualified(schema, "t") + " (x int); CREATE ROLE " + pg::QuoteIdent(role) + " LOGIN")
                  .ok());
  const std::string as_role = testing::TestConninfo() + " user=" + role;
  auto conn = pg::Connection::Open(as_role);
  ASSERT_TRUE(conn.ok()) << conn.status().message();
  auto denied = (*conn)->Exec("SELECT * FROM " + pg::Qualified(schema, "t"));
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.status().message().find("permission denied for schema"), std::string::npos)
      << denied.status().message();
  EXPECT_EQ(denied.status().kind(), Status::Kind::kUsage);
  EXPECT_TRUE(pg::IsInsufficientPrivilege("42501"));
  EXPECT_FALSE(pg::IsInsufficientPrivilege("42P01"));
  EXPECT_FALSE(pg::IsInsufficientPrivilege(nullptr));
  // Through the CLI: a role that may not create schemas (42501 "permission denied for database").
  auto r = testing::RunCli({"ingest", "--range", "2:3", "--schema", UniqueName("denied"), "--db", as_role});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("permission denied for"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // At connect: no CONNECT privilege on the database.
  const std::string closed_db = UniqueName("closed");
  ASSERT_TRUE(testing::TestServer().CreateDatabase(closed_db).ok());
  ASSERT_TRUE(admin->Run("REVOKE CONNECT ON DATABASE " + pg::QuoteIdent(closed_db) + " FROM PUBLIC").ok());
  auto refused = pg::Connection::Open(testing::TestServer().conninfo(closed_db) + " user=" + role);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("permission denied for database"), std::string::npos)
      << refused.status().message();
  EXPECT_EQ(refused.status().kind(), Status::Kind::kUsage);
}

TEST(Pg, UnreachableDatabaseIsAClearError) {
  auto c = pg::Connection::Open("host=/nonexistent port=1 user=x password=hunter2");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cannot connect"), std::string::npos);
  EXPECT_EQ(c.status().message().find("hunter2"), std::string::npos);
}

TEST(Pg, CopyRoundTrip) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  std::string s = UniqueName("copy");
  ASSERT_TRUE(conn->Run("CREATE TABLE " + s + " (a text, b int)").ok());
  ASSERT_TRUE(conn->BeginCopyIn("COPY " + s + " FROM STDIN").ok());
  std::string data;
  pg::AppendCopyEscaped(data, "tab\there\\");
  data += "\t1\n\\N\t2\n";
  ASSERT_TRUE(conn->PutCopyData(data).ok());
  ASSERT_TRUE(conn->EndCopyIn().ok());
  std::vector<std::string> lines;
  ASSERT_TRUE(conn->CopyOut("COPY (SELECT a, b FROM " + s + " ORDER BY b) TO STDOUT",
                            [&](std::string_view l) {
                              lines.emplace_back(l);
                              return Status::Ok();
                            })
                  .ok());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "tab\\there\\\\\t1");
  EXPECT_EQ(lines[1], "\\N\t2");
  std::vector<std::string_view> fields;
  pg::SplitCopyFields(lines[1], fields);
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0], "\\N");
}

TEST(Ownership, RefusesForeignSchemaAndDropsOnlyOwned) {
  auto conn = Connect();
  ASSERT_TRUE(conn);
  std::string foreign = UniqueName("users data");  // needs quoting
  ASSERT_TRUE(conn->Run("CREATE SCHEMA " + pg::QuoteIdent(foreign) + "; CREATE TABLE " +
                        pg::Qualified(foreign, "keep") + " (x int); INSERT INTO " + pg::Qualified(foreign, "keep") +
                        " VALUES (1)")
                  .ok());
  auto created = CreateOwnedSchema(*conn, foreign, "r1", IfOwned::kReplace, IfForeign::kRefuse);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().kind(), Status::Kind::kUsage);
  EXPECT_NE(created.status().message().find("not created by ledgerdiff"), std::string::npos);
  EXPECT_FALSE(DropOwnedSchema(*conn, foreign).ok());
  auto still = conn->Exec("SELECT count(*) FROM " + pg::Qualified(foreign, "keep"));
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->GetInt(0, 0), 1);

  std::string mine = UniqueName("mine");
  auto made = CreateOwnedSchema(*conn, mine, "r2", IfOwned::kReplace, IfForeign::kRefuse);
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_TRUE(*made);
  EXPECT_EQ(*InspectSchema(*conn, mine), SchemaState::kOwned);
  EXPECT_EQ(*SchemaRunId(*conn, mine), "r2");
  EXPECT_TRUE(DropOwnedSchema(*conn, mine).ok());
  EXPECT_EQ(*InspectSchema(*conn, mine), SchemaState::kAbsent);
}

// What a StderrReporter off a terminal (or on one: `tty`) writes while `feed` drives it.
std::string LogOf(bool quiet, bool tty, double interval_s, const std::function<void(StderrReporter&)>& feed) {
  std::FILE* out = std::tmpfile();
  EXPECT_NE(out, nullptr);
  if (!out) return "";
  {
    StderrReporter rep(quiet, tty ? StderrReporter::Display::kLiveBlock : StderrReporter::Display::kLogLines,
                       interval_s, out);
    feed(rep);
  }
  std::rewind(out);
  std::string text;
  for (int c; (c = std::fgetc(out)) != EOF;) text += static_cast<char>(c);
  std::fclose(out);
  return text;
}

// Issue 46: a job's event is a progress line of a log like the others: at most one line per
// interval in all (a run of 160 jobs no longer logs 160 lines); on a terminal the live block
// shows the workers instead; quiet prints nothing at all.
TEST(Progress, EventsShareTheLogsIntervalAndQuietPrintsNothing) {
  auto feed = [](StderrReporter& rep) {
    for (int job = 1; job <= 50; ++job) rep.Event("job " + std::to_string(job) + " done");  // the first only
    Progress p;
    p.phase = "ingest";
    p.total = 1000;
    rep.Update(p);  // the phase's first line waits an interval
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    p.done = 100;
    rep.Update(p);  // due: the progress line
    rep.Event("job 51 done");  // within that line's interval: left out
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    rep.Event("job 52 done");
    rep.Note("a note is never throttled");
  };
  const std::string log = LogOf(/*quiet=*/false, /*tty=*/false, 0.2, feed);
  EXPECT_EQ(log.rfind("job 1 done\n", 0), 0u) << log;
  EXPECT_NE(log.find("Z ingest: 100 / 1,000 ledgers (10.0%)"), std::string::npos) << log;
  EXPECT_EQ(log.find("job 2 done"), std::string::npos) << log;
  EXPECT_EQ(log.find("job 51 done"), std::string::npos) << log;
  EXPECT_NE(log.find("\njob 52 done\na note is never throttled\n"), std::string::npos) << log;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 4) << log;

  const std::string live = LogOf(/*quiet=*/false, /*tty=*/true, 0.2, feed);
  EXPECT_EQ(live.find("done"), std::string::npos) << live;
  EXPECT_NE(live.find("a note is never throttled"), std::string::npos) << live;
  EXPECT_EQ(LogOf(/*quiet=*/true, /*tty=*/false, 0.2, feed), "");
  EXPECT_EQ(LogOf(/*quiet=*/true, /*tty=*/true, 0.2, feed), "");
}

TEST(Embedded, SecondServerStartsAndIsRemovedOnStop) {
  auto server = EmbeddedPostgres::Start({});
  ASSERT_TRUE(server.ok()) << server.status().message();
  std::string dir = (*server)->dir();
  auto conn = Connect((*server)->conninfo());
  ASSERT_TRUE(conn);
  auto rows = conn->Exec("SHOW listen_addresses");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->Get(0, 0), "");  // no TCP listener
  conn.reset();
  EXPECT_TRUE((*server)->Stop().ok());
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace ledgerdiff
