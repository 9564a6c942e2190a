// digest, diff, dump: thin shells over dump/digest.h, dump/manifest.h, diff/diff.h, dump/dump.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "cli/command.h"
#include "core/atomic_file.h"
#include "core/ledger_range.h"
#include "diff/diff.h"
#include "dump/digest.h"
#include "dump/dump.h"
#include "dump/digest_job.h"
#include "dump/manifest.h"
#include "dump/shard.h"
#include "report/diff_text_json.h"
#include "report/dump_text_json.h"

namespace ledgerdiff::cli {

namespace {

// Flags every schema-reading command has: the range (optional) and the digest profile, checked
// before any database is touched.
struct Common {
  std::string range_text;
  std::string profile = "horizon";
  std::optional<LedgerRange> range;
  dump::ProfileSpec spec;
  std::function<std::optional<dump::DigestEngine>()> engine_flag;
  std::optional<dump::DigestEngine> engine;  // --engine; nullopt: a manifest's, else dump::kDefaultEngine

  void AddFlags(CLI::App* sub, bool digests = true) {
    sub->add_option("--range", range_text, "Ledger range FROM:TO (default: the range present)");
    AddDigestProfileFlag(sub, profile);
    if (digests) engine_flag = AddDigestEngineFlag(sub);
  }
  Status Check() {
    if (!range_text.empty()) {
      LD_ASSIGN_OR_RETURN(range, ParseLedgerRange(range_text, RangeUse::kCompare));
    }
    LD_ASSIGN_OR_RETURN(spec, dump::LoadProfileSpec(profile));
    if (engine_flag) engine = engine_flag();
    return Status::Ok();
  }
};

struct DigestFlags {
  Common c;
  std::string schema, out, detail = "compact";
  int jobs = 1;
  uint32_t chunk = 0;
  bool print_sql = false;
  bool resume = false;
  uint32_t shards = 0;  // 0: not sharded
  int64_t shard_flag = -1;
  CLI::Option* shard_opt = nullptr;
  uint32_t shard = 0;
  bool append = false;
  CLI::Option* append_opt = nullptr;
  CLI::Option* detail_opt = nullptr;
};

void AddDigestFlags(CLI::App* sub, DigestFlags& f) {
  f.c.AddFlags(sub);
  sub->add_option("--schema", f.schema, "Schema to digest")->required();
  sub->add_option("--out", f.out, "Write a manifest file (.ldm)")->check(WritableFile());
  f.detail_opt = sub->add_option("--manifest-detail", f.detail, "compact (default: 128-bit per ledger + 32-bit table tags) or full")
      ->check(CLI::IsMember({"compact", "full"}));
  sub->add_option("--jobs", f.jobs, "Connections reading one exported snapshot")->check(CLI::Range(1, 64));
  sub->add_flag("--resume", f.resume,
                "Continue an interrupted digest --out FILE from its checkpoint FILE.partial (same schema, range, "
                "profile, detail and shard; the ledgers in it are not digested again)");
  f.append_opt = sub->add_flag("--append", f.append,
                "Extend the full-detail manifest --out FILE with the ledgers after its last one (through --range's "
                "end, else the schema's last ledger), reading only those: the result is the manifest one digest of "
                "the whole range writes");
  sub->add_option("--shards", f.shards,
                  "Digest one shard of N (deterministic contiguous slices of --range) into a partial manifest "
                  "(--out); join the parts with `manifest merge`");
  f.shard_opt = sub->add_option("--shard", f.shard_flag,
                                 "This shard, 0..N-1 (default: $JOB_COMPLETION_INDEX, else $AWS_BATCH_JOB_ARRAY_INDEX, else $SLURM_ARRAY_TASK_ID)");
  sub->add_option("--chunk-ledgers", f.chunk, "Ledgers per chunk (default: the whole range, at most 50000)")->group("");
  sub->add_flag("--print-sql", f.print_sql, "Print the canonical COPY statements, one per line (benchmarks)")->group("");
}

Status CheckDigestAppendFlags(const DigestFlags& f) {
  if (f.out.empty() || f.out == "-") return Status::Usage("--append needs --out FILE (the manifest to extend)");
  for (const auto& [given, name] : {std::pair{f.resume, "--resume"}, std::pair{f.shards != 0, "--shards"},
                                    std::pair{f.print_sql, "--print-sql"}})
    if (given) return Status::Usagef("--append and {} cannot be combined", name);
  if (f.detail_opt->count() && f.detail != "full")
    return Status::Usage("--append extends a full-detail manifest (--manifest-detail full), not a compact one");
  if (!std::filesystem::exists(f.out))
    return Status::Usagef("--append {}: no such manifest (write it first with digest --out {} "
                          "--manifest-detail full)",
                          f.out, f.out);
  return CheckRegularFile(f.out, "manifest " + f.out);
}

Status CheckDigestFlags(DigestFlags& f) {
  LD_RETURN_IF_ERROR(f.c.Check());
  if (f.resume && f.print_sql) return Status::Usage("--print-sql and --resume cannot be combined");
  if (f.shards && f.print_sql) return Status::Usage("--print-sql and --shards cannot be combined");
  if (f.append) LD_RETURN_IF_ERROR(CheckDigestAppendFlags(f));
  const std::optional<int64_t> shard = f.shard_opt->count() ? std::optional<int64_t>(f.shard_flag) : std::nullopt;
  LD_ASSIGN_OR_RETURN(f.shard, dump::CheckShardAndResumeFlags({shard, f.shards, f.resume, f.out}, f.c.range));
  return Status::Ok();
}

// The digest's options as the flags give them; `--append` keeps a manifest's own engine and
// writes no checkpoint.
dump::DigestOptions DigestOptionsOf(const DigestFlags& f) {
  dump::DigestOptions opts;
  if (!f.shards) opts.range = f.c.range;  // a shard's slice is DigestShardToManifest's to set
  opts.jobs = f.jobs;
  opts.chunk_ledgers = f.chunk;
  if (f.append) return opts;
  opts.checkpoint = true;
  opts.resume = f.resume;
  opts.engine = f.c.engine.value_or(dump::kDefaultEngine);
  return opts;
}

Result<Outcome> RunDigestShard(const DigestFlags& f, Database& db, Context& ctx) {
  const dump::DigestOptions opts = DigestOptionsOf(f);
  LD_ASSIGN_OR_RETURN(auto summary, dump::DigestShardToManifest(db.conninfo(), f.schema, f.c.spec, opts, *f.c.range,
                                                                f.shards, f.shard, f.out, ctx.reporter()));
  summary.target = db.target({f.schema});
  const dump::ShardInfo shard{f.shard, f.shards, *f.c.range};
  Outcome out;
  out.json = report::DigestShardToJson(summary, shard);
  out.text = report::RenderDigestShardText(summary, shard);
  return out;
}

Result<Outcome> RunDigestAppend(const DigestFlags& f, Database& db, Context& ctx) {
  const dump::DigestOptions opts = DigestOptionsOf(f);
  LD_ASSIGN_OR_RETURN(auto appended, dump::AppendToManifest(db.conninfo(), f.schema, f.c.spec, opts, f.out, f.c.range,
                                                            ctx.reporter()));
  appended.summary.target = db.target({f.schema});
  Outcome out;
  out.json = report::AppendedToJson(appended);
  out.text = report::RenderAppendedText(appended, f.out);
  return out;
}

Result<Outcome> RunDigestCommand(const DigestFlags& f, Context& ctx) {
  LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
  ctx.Announce(db->target({f.schema}));
  if (f.shards) return RunDigestShard(f, *db, ctx);
  if (f.append) return RunDigestAppend(f, *db, ctx);
  const dump::DigestOptions opts = DigestOptionsOf(f);
  Outcome out;
  if (f.print_sql) {
    LD_ASSIGN_OR_RETURN(auto sql, dump::CanonicalStatements(db->conninfo(), f.schema, f.c.spec, opts));
    for (const auto& s : sql) out.text += s + "\n";
    return out;
  }
  const auto detail = f.detail == "full" ? dump::ManifestDetail::kFull : dump::ManifestDetail::kCompact;
  LD_ASSIGN_OR_RETURN(auto summary,
                      f.out.empty()
                          ? dump::DigestSchema(db->conninfo(), f.schema, f.c.spec, opts, nullptr, ctx.reporter())
                          : dump::DigestToManifest(db->conninfo(), f.schema, f.c.spec, opts, f.out, detail,
                                                   ctx.reporter()));
  summary.target = db->target({f.schema});
  out.json = report::DigestSummaryToJson(summary);
  out.text = report::RenderDigestText(summary);
  return out;
}

}  // namespace

Action SetupDigest(CLI::App* sub) {
  auto f = std::make_shared<DigestFlags>();
  AddDigestFlags(sub, *f);
  Action a;
  a.check = [f]() -> Status { return CheckDigestFlags(*f); };
  a.run = [f](Context& ctx) -> Result<Outcome> { return RunDigestCommand(*f, ctx); };
  return a;
}

Action SetupDiff(CLI::App* sub) {
  struct Flags {
    Common c;
    std::string left, right;
    diff::DiffOptions opts;
  };
  auto f = std::make_shared<Flags>();
  f->c.AddFlags(sub);
  sub->add_option("LEFT", f->left,
                  "A schema in --db, a manifest (file:PATH or PATH.ldm), or a schema in another database "
                  "(postgresql://...#SCHEMA or CONNINFO::SCHEMA)")
      ->required();
  sub->add_option("RIGHT", f->right, "Same forms as LEFT")->required();
  sub->add_option("--max-rows", f->opts.max_rows, "Rows shown per table and kind of difference (default 20)");
  sub->add_flag("--all", f->opts.all, "List every divergent ledger per table as intervals");
  sub->add_option("--jobs", f->opts.jobs, "Connections per schema side")->check(CLI::Range(1, 64));
  sub->add_flag("--allow-empty", f->opts.allow_empty, "Accept zero rows on both sides as identical (else exit 2)");
  sub->add_flag("--allow-gaps", f->opts.allow_gaps,
                "Accept ledgers of the range that a side does not hold (else the verdict is incomplete, exit 1); "
                "they are still listed");
  Action a;
  a.check = [f]() -> Status {
    LD_RETURN_IF_ERROR(f->c.Check());
    // A manifest side is a regular file, refused before any server starts (a FIFO would block).
    for (const std::string* side : {&f->left, &f->right}) {
      if (diff::SourceNeedsDefaultDatabase(*side)) continue;
      auto source = diff::ParseSource(*side, "");
      const auto* manifest = source.ok() ? std::get_if<diff::ManifestSource>(&*source) : nullptr;
      if (manifest) LD_RETURN_IF_ERROR(CheckRegularFile(manifest->path, "manifest " + manifest->path));
    }
    return Status::Ok();
  };
  a.run = [f](Context& ctx) -> Result<Outcome> {
    f->opts.range = f->c.range;
    f->opts.engine = f->c.engine;
    // Two manifests, or schemas in named databases, need no --db: no embedded server then.
    Database* db = nullptr;
    if (diff::SourceNeedsDefaultDatabase(f->left) || diff::SourceNeedsDefaultDatabase(f->right)) {
      LD_ASSIGN_OR_RETURN(db, ctx.database());
    }
    // "" is a database too: libpq's defaults, the PG* environment of a reader.
    const std::optional<std::string> conninfo = db ? std::optional<std::string>(db->conninfo()) : std::nullopt;
    LD_ASSIGN_OR_RETURN(auto left, diff::ParseSource(f->left, conninfo));
    LD_ASSIGN_OR_RETURN(auto right, diff::ParseSource(f->right, conninfo));
    // Each side as it is reached: a manifest file, a schema in --db, or in a database of its own.
    auto side = [db](const diff::Source& source) -> Result<Target> {
      if (const auto* m = std::get_if<diff::ManifestSource>(&source)) return Target::Manifest(m->path);
      const auto& s = std::get<diff::SchemaSource>(source);
      if (db && s.conninfo == db->conninfo()) return db->target({s.schema});
      return ConnectedTarget(s.conninfo, {s.schema});
    };
    LD_ASSIGN_OR_RETURN(Target left_target, side(left));
    LD_ASSIGN_OR_RETURN(Target right_target, side(right));
    const TargetPair targets{left_target, right_target};
    ctx.Announce(targets);
    LD_ASSIGN_OR_RETURN(auto report, diff::DiffSources(left, right, f->c.spec, f->opts, ctx.reporter()));
    report.targets = targets;
    return Outcome{report.identical ? 0 : 1, report::RenderDiffText(report), report::DiffReportToJson(report), ""};
  };
  return a;
}

Action SetupDump(CLI::App* sub) {
  struct Flags {
    Common c;
    std::string schema, format = "jsonl", out = "-";
  };
  auto f = std::make_shared<Flags>();
  f->c.AddFlags(sub, /*digests=*/false);
  sub->add_option("--schema", f->schema, "Schema to dump")->required();
  sub->add_option("--format", f->format, "jsonl (default) or csv")->check(CLI::IsMember({"jsonl", "csv"}));
  sub->add_option("--out", f->out, "A directory (one file per table) or - for stdout (default)")
      ->check(WritableDirectory());
  Action a;
  a.check = [f]() -> Status {
    LD_RETURN_IF_ERROR(f->c.Check());
    // Before the server starts: the files of the profile's tables (the dump checks again once
    // the schema resolves them).
    std::vector<std::string> tables;
    for (const auto& t : f->c.spec.tables) tables.push_back(t.table);
    return dump::CheckDumpTargets(f->out, tables, f->format == "csv" ? dump::DumpFormat::kCsv : dump::DumpFormat::kJsonl);
  };
  a.quiet = [f] { return f->out == "-"; };  // the rows themselves go to stdout
  a.run = [f](Context& ctx) -> Result<Outcome> {
    LD_ASSIGN_OR_RETURN(Database * db, ctx.database());
    ctx.Announce(db->target({f->schema}));
    dump::DumpOptions opts;
    opts.range = f->c.range;
    opts.format = f->format == "csv" ? dump::DumpFormat::kCsv : dump::DumpFormat::kJsonl;
    opts.out = f->out;
    LD_ASSIGN_OR_RETURN(auto summary, dump::DumpSchema(db->conninfo(), f->schema, f->c.spec, opts, ctx.reporter()));
    Outcome out;
    if (f->out != "-") out.text = report::RenderDumpText(summary, db->target({f->schema}));  // "-": the rows are the output
    return out;
  };
  return a;
}

}  // namespace ledgerdiff::cli
