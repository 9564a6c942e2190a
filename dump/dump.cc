#include "dump/dump.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/tempdir.h"
#include "core/text.h"
#include "dump/canonical.h"
#include "dump/digest.h"

namespace ledgerdiff::dump {

namespace {

std::string CsvField(const std::optional<std::string>& v) { return v ? QuoteByDoubling(*v, '"') : ""; }

}  // namespace

Result<DumpSummary> DumpSchema(const std::string& conninfo, const std::string& schema, const ProfileSpec& spec,
                               const DumpOptions& options, Reporter& reporter) {
  LD_ASSIGN_OR_RETURN(auto conn, pg::Connection::Open(conninfo, "ledgerdiff dump"));
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
  if (!to_stdout) {
    std::error_code ec;
    std::filesystem::create_directories(options.out, ec);
    if (ec) return Status::Usagef("dump directory {}: {}", options.out, ec.message());
  }
  std::vector<std::string_view> fields;
  std::string line_out;
  for (const auto& table : profile.tables) {
    FILE* f = stdout;
    if (!to_stdout) {
      // Table names are arbitrary ("../../x", "/etc/x"): the file name is derived, never taken as is.
      std::string path =
          (std::filesystem::path(options.out) / (SafeFileName(table.name) + (csv ? ".csv" : ".jsonl"))).string();
      f = std::fopen(path.c_str(), "wb");
      if (!f) return Status::Usagef("dump file {}: {}", path, std::strerror(errno));
      summary.files.push_back(path);
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
    if (!to_stdout) std::fclose(f);
    if (!s.ok()) return s.With("dump table " + table.name);
    summary.tables.emplace_back(table.name, rows);
    reporter.Note(fmt::format("dumped {}: {} rows", table.name, FormatCount(rows)));
  }
  std::fflush(stdout);
  (void)conn->Run("COMMIT");
  return summary;
}

}  // namespace ledgerdiff::dump
