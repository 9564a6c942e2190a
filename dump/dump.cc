#include "dump/dump.h"
#include "core/atomic_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/process.h"
#include "core/tempdir.h"
#include "core/text.h"
#include "dump/canonical.h"
#include "dump/digest.h"

namespace ledgerdiff::dump {

namespace {

std::string CsvField(const std::optional<std::string>& v) { return v ? QuoteByDoubling(*v, '"') : ""; }

// The dump's files are written into a fresh sibling of the --out directory (OUT.tmpXXXXXX) and
// moved into OUT only once every table is written; on any failure, and on SIGINT/SIGTERM/SIGHUP
// (the cleanup registry), the sibling is removed.
// INVARIANT: until Commit() succeeds, OUT (absent or pre-existing) is untouched.
class StagedDirectory {
 public:
  static Result<std::unique_ptr<StagedDirectory>> Create(const std::string& out) {
    namespace fs = std::filesystem;
    std::string target = out;
    while (target.size() > 1 && target.back() == '/') target.pop_back();
    std::error_code ec;
    if (fs::is_symlink(target, ec)) return Status::Usagef("refusing to write dump directory {}: it is a symbolic link", out);
    if (fs::exists(target, ec) && !fs::is_directory(target, ec))
      return Status::Usagef("dump directory {}: exists and is not a directory", out);
    const fs::path parent = fs::path(target).parent_path();
    if (!parent.empty()) {
      fs::create_directories(parent, ec);
      if (ec) return Status::Usagef("dump directory {}: {}", out, ec.message());
    }
    std::string pattern = target + ".tmpXXXXXX";
    if (!mkdtemp(pattern.data())) return Status::Usagef("dump directory {}: {}", out, std::strerror(errno));
    std::unique_ptr<StagedDirectory> d(new StagedDirectory(target, pattern));
    d->cleanup_ = RegisterDescribedCleanup([staging = pattern, out] {
      return RemoveTree(staging).ok() ? "removed the unfinished dump " + staging + " (" + out + " untouched)"
                                      : std::string();
    });
    return d;
  }
  ~StagedDirectory() {
    if (!committed_) (void)RemoveTree(staging_);
    UnregisterCleanup(cleanup_);
  }
  const std::string& staging() const { return staging_; }
  const std::string& target() const { return target_; }

  // Moves the staged files into the target: one rename of the whole directory when the target
  // does not exist, else file by file (each replacing its namesake; other files stay).
  Status Commit() {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(target_, ec)) {
      fs::rename(staging_, target_, ec);
      if (ec) return Status::Runtimef("dump directory {}: cannot move {} into place: {}", target_, staging_, ec.message());
    } else {
      for (const auto& entry : fs::directory_iterator(staging_, ec)) {
        fs::rename(entry.path(), fs::path(target_) / entry.path().filename(), ec);
        if (ec) return Status::Runtimef("dump directory {}: cannot move {} into it: {}", target_, entry.path().string(), ec.message());
      }
      if (ec) return Status::Runtimef("dump directory {}: {}", staging_, ec.message());
      LD_RETURN_IF_ERROR(RemoveTree(staging_));
    }
    committed_ = true;
    return Status::Ok();
  }

 private:
  StagedDirectory(std::string target, std::string staging) : target_(std::move(target)), staging_(std::move(staging)) {}
  std::string target_, staging_;
  int cleanup_ = 0;
  bool committed_ = false;
};

}  // namespace

Status CheckDumpTargets(const std::string& out, const std::vector<std::string>& tables, DumpFormat format) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (out == "-" || !fs::is_directory(out, ec)) return Status::Ok();
  for (const auto& table : tables) {
    const std::string name = SafeFileName(table) + (format == DumpFormat::kCsv ? ".csv" : ".jsonl");
    LD_RETURN_IF_ERROR(CheckWriteTarget((fs::path(out) / name).string()));
  }
  return Status::Ok();
}

Result<DumpSummary> DumpSchema(const std::string& conninfo, const std::string& schema, const ProfileSpec& spec,
                               const DumpOptions& options, Reporter& reporter) {
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff dump", pg::Access::kReadOnly));
  LD_RETURN_IF_ERROR(conn->Run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  LD_ASSIGN_OR_RETURN(ResolvedProfile profile, ResolveProfile(*conn, schema, spec));
  DumpSummary summary;
  if (options.range) {
    summary.range = *options.range;
  } else {
    LD_ASSIGN_OR_RETURN(summary.range, DetectRange(*conn, schema, profile));
  }
  summary.excluded_columns = profile.ExcludedColumns();
  const bool to_stdout = options.out == "-";
  const bool csv = options.format == DumpFormat::kCsv;
  std::unique_ptr<StagedDirectory> staged;
  if (!to_stdout) {
    // Each file this dump will move into --out, checked before a row is read: a symbolic link
    // there would be silently replaced by the commit's rename.
    std::vector<std::string> tables;
    for (const auto& table : profile.tables) tables.push_back(table.name);
    LD_RETURN_IF_ERROR(CheckDumpTargets(options.out, tables, options.format));
    LD_ASSIGN_OR_RETURN(staged, StagedDirectory::Create(options.out));
  }
  std::vector<std::string_view> fields;
  std::string line_out;
  for (const auto& table : profile.tables) {
    FILE* f = stdout;
    if (!to_stdout) {
      // Table names are arbitrary ("../../x", "/etc/x"): the file name is derived, never taken as is.
      const std::string name = SafeFileName(table.name) + (csv ? ".csv" : ".jsonl");
      const std::string path = (std::filesystem::path(staged->staging()) / name).string();
      // The staging directory is fresh and private (mkdtemp): a new file, never a link's target.
      const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      f = fd < 0 ? nullptr : fdopen(fd, "wb");
      if (!f) return Status::Runtimef("dump file {}: {}", path, std::strerror(errno));
      summary.files.push_back((std::filesystem::path(staged->target()) / name).string());
    }
    if (csv) {
      if (to_stdout) std::fprintf(f, "# table %s\n", table.name.c_str());
      std::string header = "ledger";
      for (const auto& c : table.columns) header += "," + CsvField(c.name);
      std::fprintf(f, "%s\n", header.c_str());
    }
    uint64_t rows = 0;
    Status s = conn->CopyOut(CanonicalCopy(table, schema, summary.range), [&](std::string_view line) -> Status {
      pg::SplitCopyFields(line, fields);
      if (fields.size() != table.columns.size() + 1) return Status::Runtime("unexpected field count");
      line_out.clear();
      if (csv) {
        line_out.append(fields[0]);
        for (size_t i = 1; i < fields.size(); ++i) line_out += "," + CsvField(UnescapeCopyField(fields[i]));
      } else {
        nlohmann::ordered_json j;
        if (to_stdout) j["table"] = table.name;
        j["ledger"] = std::stoll(std::string(fields[0]));
        for (size_t i = 1; i < fields.size(); ++i) {
          auto v = UnescapeCopyField(fields[i]);
          if (v) j[table.columns[i - 1].name] = *v;
          else j[table.columns[i - 1].name] = nullptr;
        }
        line_out = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      }
      line_out.push_back('\n');
      if (std::fwrite(line_out.data(), 1, line_out.size(), f) != line_out.size())
        return Status::Runtimef("dump write failed: {}", std::strerror(errno));
      ++rows;
      return Status::Ok();
    });
    if (!to_stdout && (std::fflush(f) != 0 || fsync(fileno(f)) != 0) && s.ok())
      s = Status::Runtimef("dump write failed: {}", std::strerror(errno));
    if (!to_stdout && std::fclose(f) != 0 && s.ok())
      s = Status::Runtimef("dump write failed: {}", std::strerror(errno));
    if (!s.ok()) return s.With("dump table " + table.name);
    summary.tables.emplace_back(table.name, rows);
    reporter.Note(fmt::format("dumped {}: {} rows", table.name, FormatCount(rows)));
  }
  std::fflush(stdout);
  (void)conn->Run("COMMIT");
  if (staged) LD_RETURN_IF_ERROR(staged->Commit());
  return summary;
}

}  // namespace ledgerdiff::dump
