// digest, diff, dump: thin shells over dump/digest.h, dump/manifest.h, diff/diff.h, dump/dump.h.
#include <fmt/format.h>

#include "cli/command.h"
#include "core/ledger_range.h"
#include "diff/diff.h"
#include "dump/digest.h"
#include "dump/dump.h"
#include "dump/manifest.h"

namespace ledgerdiff::cli {

namespace {

struct Common {
  DatabaseOptions db;
  std::string range;
  std::string profile = "horizon";
  OutputFormat format = OutputFormat::kText;
};

Result<std::optional<LedgerRange>> RangeFlag(const std::string& text) {
  if (text.empty()) return std::optional<LedgerRange>();
  LD_ASSIGN_OR_RETURN(LedgerRange r, ParseLedgerRange(text));
  return std::optional<LedgerRange>(r);
}

// What a schema-reading command needs before its library call: the range flag parsed, the
// profile loaded, the database resolved (embedded default included).
struct Prepared {
  std::optional<LedgerRange> range;
  dump::ProfileSpec spec;
  std::unique_ptr<Database> db;
};
Result<Prepared> Prepare(const Common& c) {
  Prepared p;
  LD_ASSIGN_OR_RETURN(p.range, RangeFlag(c.range));
  LD_ASSIGN_OR_RETURN(p.spec, dump::LoadProfileSpec(c.profile));
  LD_ASSIGN_OR_RETURN(p.db, Database::Resolve(c.db));
  return p;
}

void AddCommonFlags(CLI::App* sub, Common& c) {
  AddDatabaseFlags(sub, c.db);
  sub->add_option("--range", c.range, "Ledger range FROM:TO (default: the range present)");
  sub->add_option("--profile", c.profile, "Table profile: horizon (default), auto, or a JSON file (see dump/README.md)");
}

Runner SetupDigest(CLI::App* sub) {
  struct Flags {
    Common c;
    std::string schema, out, detail = "compact";
    int jobs = 1;
    uint32_t chunk = 0;
    bool print_sql = false;
  };
  auto f = std::make_shared<Flags>();
  AddCommonFlags(sub, f->c);
  AddFormatFlag(sub, f->c.format);
  sub->add_option("--schema", f->schema, "Schema to digest")->required();
  sub->add_option("--out", f->out, "Write a manifest file (.ldm)");
  sub->add_option("--manifest-detail", f->detail, "compact (default: 128-bit per ledger + 32-bit table tags) or full")
      ->check(CLI::IsMember({"compact", "full"}));
  sub->add_option("--jobs", f->jobs, "Connections reading one exported snapshot")->check(CLI::Range(1, 64));
  sub->add_option("--chunk-ledgers", f->chunk, "Ledgers per chunk (default: sized from table statistics)")->group("");
  sub->add_flag("--print-sql", f->print_sql, "Print the canonical COPY statements, one per line (benchmarks)")->group("");
  return [f]() -> int {
    auto prepared = Prepare(f->c);
    if (!prepared.ok()) return Fail(prepared.status());
    const auto& range = prepared->range;
    const auto& spec = prepared->spec;
    const auto& db = prepared->db;
    dump::DigestOptions opts;
    opts.range = range;
    opts.jobs = f->jobs;
    opts.chunk_ledgers = f->chunk;
    if (f->print_sql) {
      auto sql = dump::CanonicalStatements(db->conninfo(), f->schema, spec, opts);
      if (!sql.ok()) return Fail(sql.status());
      for (const auto& s : *sql) fmt::print("{}\n", s);
      return 0;
    }
    StderrReporter reporter;
    Result<dump::DigestSummary> summary =
        f->out.empty() ? dump::DigestSchema(db->conninfo(), f->schema, spec, opts, nullptr, reporter)
                       : dump::DigestToManifest(db->conninfo(), f->schema, spec, opts, f->out,
                                                f->detail == "full" ? dump::ManifestDetail::kFull
                                                                    : dump::ManifestDetail::kCompact,
                                                reporter);
    reporter.Done();
    if (!summary.ok()) return Fail(summary.status());
    if (f->c.format == OutputFormat::kJson) fmt::print("{}\n", dump::DigestSummaryToJson(*summary).dump(2));
    else fmt::print("{}", dump::RenderDigestText(*summary));
    return 0;
  };
}

Runner SetupDiff(CLI::App* sub) {
  struct Flags {
    Common c;
    std::string left, right;
    diff::DiffOptions opts;
  };
  auto f = std::make_shared<Flags>();
  AddCommonFlags(sub, f->c);
  AddFormatFlag(sub, f->c.format);
  sub->add_option("LEFT", f->left,
                  "A schema in --db, a manifest (file:PATH or PATH.ldm), or a schema in another database "
                  "(postgresql://...#SCHEMA or CONNINFO::SCHEMA)")
      ->required();
  sub->add_option("RIGHT", f->right, "Same forms as LEFT")->required();
  sub->add_option("--max-rows", f->opts.max_rows, "Rows shown per table and kind of difference (default 20)");
  sub->add_flag("--all", f->opts.all, "List every divergent ledger per table as intervals");
  sub->add_option("--jobs", f->opts.jobs, "Connections per schema side")->check(CLI::Range(1, 64));
  sub->add_flag("--allow-empty", f->opts.allow_empty, "Accept zero rows on both sides as identical (else exit 2)");
  return [f]() -> int {
    auto range = RangeFlag(f->c.range);
    if (!range.ok()) return Fail(range.status());
    f->opts.range = *range;
    auto spec = dump::LoadProfileSpec(f->c.profile);
    if (!spec.ok()) return Fail(spec.status());
    std::unique_ptr<Database> db;
    if (diff::SourceNeedsDefaultDatabase(f->left) || diff::SourceNeedsDefaultDatabase(f->right)) {
      auto r = Database::Resolve(f->c.db);
      if (!r.ok()) return Fail(r.status());
      db = std::move(r).value();
    }
    std::string conninfo = db ? db->conninfo() : "";
    auto left = diff::ParseSource(f->left, conninfo);
    if (!left.ok()) return Fail(left.status());
    auto right = diff::ParseSource(f->right, conninfo);
    if (!right.ok()) return Fail(right.status());
    StderrReporter reporter;
    auto report = diff::DiffSources(*left, *right, *spec, f->opts, reporter);
    reporter.Done();
    if (!report.ok()) return Fail(report.status());
    if (f->c.format == OutputFormat::kJson) fmt::print("{}\n", diff::DiffReportToJson(*report).dump(2));
    else fmt::print("{}", diff::RenderDiffText(*report));
    return report->identical ? 0 : 1;
  };
}

Runner SetupDump(CLI::App* sub) {
  struct Flags {
    Common c;
    std::string schema, format = "jsonl", out = "-";
  };
  auto f = std::make_shared<Flags>();
  AddCommonFlags(sub, f->c);
  sub->add_option("--schema", f->schema, "Schema to dump")->required();
  sub->add_option("--format", f->format, "jsonl (default) or csv")->check(CLI::IsMember({"jsonl", "csv"}));
  sub->add_option("--out", f->out, "A directory (one file per table) or - for stdout (default)");
  return [f]() -> int {
    auto prepared = Prepare(f->c);
    if (!prepared.ok()) return Fail(prepared.status());
    const auto& range = prepared->range;
    const auto& spec = prepared->spec;
    const auto& db = prepared->db;
    dump::DumpOptions opts;
    opts.range = range;
    opts.format = f->format == "csv" ? dump::DumpFormat::kCsv : dump::DumpFormat::kJsonl;
    opts.out = f->out;
    StderrReporter reporter(/*quiet=*/f->out == "-");
    auto summary = dump::DumpSchema(db->conninfo(), f->schema, spec, opts, reporter);
    if (!summary.ok()) return Fail(summary.status());
    if (f->out != "-") {
      for (const auto& [table, rows] : summary->tables) fmt::print("{}: {} rows\n", table, FormatCount(rows));
      fmt::print("excluded columns: {}\n", fmt::join(summary->excluded_columns, ", "));
    }
    return 0;
  };
}

}  // namespace

std::vector<Command> DigestCommands() {
  return {
      {"digest", "Per-table, per-ledger digests of a schema (optionally a manifest file)", false, SetupDigest},
      {"diff", "Compare two schemas or manifests: first divergent ledger and its row diff", false, SetupDiff},
      {"dump", "Canonical rows of a schema (JSON lines or CSV), byte-identical for equal content", false, SetupDump},
  };
}

}  // namespace ledgerdiff::cli
