#include "ingest/ingest_command.h"

#include <libpq-fe.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/pg.h"
#include "core/process.h"
#include "core/redact.h"
#include "core/tempdir.h"
#include "core/text.h"

namespace ledgerdiff::ingest {

Result<std::string> ExpandIngestCommand(const std::string& tmpl, const std::map<std::string, std::string>& values) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    // "{{" and "}}" are literal braces; "{name}" of a known placeholder is replaced; any other
    // brace is literal too, so shell code such as ${VAR} or awk '{print}' passes through.
    if (tmpl.compare(i, 2, "{{") == 0 || tmpl.compare(i, 2, "}}") == 0) {
      out += tmpl[i];
      ++i;
      continue;
    }
    if (tmpl[i] == '{' && (i == 0 || tmpl[i - 1] != '$')) {
      size_t close = tmpl.find('}', i);
      std::string name = close == std::string::npos ? "" : tmpl.substr(i + 1, close - i - 1);
      bool word = !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos;
      if (word) {
        auto it = values.find(name);
        if (it == values.end()) {
          return Status::Usagef(
              "--ingest-cmd: unknown placeholder {{{}}} (known: {{from}} {{to}} {{schema}} {{db}} {{worker}} {{job}}; "
              "write {{{{{}}}}} for literal braces)",
              name, name);
        }
        out += ShellQuote(it->second);
        i = close;
        continue;
      }
    }
    out += tmpl[i];
  }
  return out;
}

Status CheckIngestCommand(const std::string& tmpl) {
  const std::map<std::string, std::string> probe = {{"from", ""}, {"to", ""},     {"schema", ""},
                                                    {"db", ""},   {"worker", ""}, {"job", ""}};
  return ExpandIngestCommand(tmpl, probe).status();
}

std::map<std::string, std::string> IngesterEnvironment(const std::string& conninfo, const std::string& schema) {
  std::map<std::string, std::string> env;
  env["DATABASE_URL"] = conninfo;
  char* err = nullptr;
  if (PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err)) {
    const std::map<std::string, std::string> names = {{"host", "PGHOST"},         {"port", "PGPORT"},
                                                      {"user", "PGUSER"},         {"dbname", "PGDATABASE"},
                                                      {"password", "PGPASSWORD"}, {"sslmode", "PGSSLMODE"}};
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
      auto it = names.find(o->keyword);
      if (it != names.end() && o->val && *o->val) env[it->second] = o->val;
    }
    PQconninfoFree(opts);
  }
  if (err) PQfreemem(err);
  // The schema as a quoted identifier (case, commas and quotes kept), then escaped for
  // PGOPTIONS, where a backslash escapes the next byte and spaces separate options.
  std::string escaped;
  for (char c : pg::QuoteIdent(schema)) {
    if (c == ' ' || c == '\\' || c == '\t') escaped += '\\';
    escaped += c;
  }
  env["PGOPTIONS"] = "-c search_path=" + escaped;
  return env;
}

namespace {

// "; its stderr ended: a | b | c" with the last `lines` non-empty lines (each cut at 300 bytes,
// secrets scrubbed), or "" when it wrote nothing.
std::string StderrTail(const std::string& err, size_t lines) {
  std::vector<std::string> last;
  size_t start = 0;
  while (start < err.size()) {
    size_t end = err.find('\n', start);
    if (end == std::string::npos) end = err.size();
    std::string line = err.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) last.push_back(line.substr(0, 300));
    if (last.size() > lines) last.erase(last.begin());
    start = end + 1;
  }
  if (last.empty()) return "";
  std::string out = "; its stderr ended: ";
  for (size_t i = 0; i < last.size(); ++i) out += (i ? " | " : "") + last[i];
  return ScrubSecrets(out);
}

}  // namespace

Status RunIngestCommand(const std::string& tmpl, const IngestCommandJob& job) {
  std::map<std::string, std::string> values = {{"from", std::to_string(job.range.from)},
                                               {"to", std::to_string(job.range.to)},
                                               {"schema", job.schema},
                                               {"db", job.conninfo},
                                               {"worker", job.worker},
                                               {"job", std::to_string(job.job_id)}};
  LD_ASSIGN_OR_RETURN(std::string cmd, ExpandIngestCommand(tmpl, values));
  SpawnOptions so;
  so.new_process_group = false;
  so.env = IngesterEnvironment(job.conninfo, job.schema);
  so.stdin_null = true;
  // Its stderr is captured (then passed on to ours) so a failure can quote its last lines.
  LD_ASSIGN_OR_RETURN(std::string dir, MakeOwnedTempDir("ledgerdiff-ingest-cmd-"));
  so.error_file = dir + "/stderr";
  Result<ExitInfo> ran = RunToCompletion({"/bin/sh", "-c", cmd}, so);
  std::string err;
  {
    std::ifstream in(so.error_file, std::ios::binary);
    err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  (void)RemoveTree(dir);
  if (!err.empty()) {
    std::fwrite(err.data(), 1, err.size(), stderr);
    std::fflush(stderr);
  }
  LD_ASSIGN_OR_RETURN(ExitInfo ex, std::move(ran));
  if (ex.exited && ex.code == 0) return Status::Ok();
  return Status::Runtimef("ingest command failed ({}){}", ex.str(), StderrTail(err, 5));
}

}  // namespace ledgerdiff::ingest
