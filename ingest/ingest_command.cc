#include "ingest/ingest_command.h"

#include <libpq-fe.h>

#include "core/pg.h"
#include "core/process.h"
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
  LD_ASSIGN_OR_RETURN(ExitInfo ex, RunToCompletion({"/bin/sh", "-c", cmd}, so));
  if (!ex.exited || ex.code != 0) return Status::Runtimef("ingest command failed ({})", ex.str());
  return Status::Ok();
}

}  // namespace ledgerdiff::ingest
