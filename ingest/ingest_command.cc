#include "ingest/ingest_command.h"

#include <libpq-fe.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <vector>

#include "core/pg.h"
#include "core/process.h"
#include "core/redact.h"
#include "core/tempdir.h"
#include "core/text.h"

namespace ledgerdiff::ingest {

namespace {

// Where a placeholder sits in the template, as /bin/sh reads it.
enum class Quoting { kNone, kSingle, kDouble, kComment };

// The reference to `variable` that yields its value as one word in `context`.
std::string VariableReference(const std::string& variable, Quoting context) {
  const std::string ref = "${" + variable + "}";
  switch (context) {
    case Quoting::kDouble:
      return ref;
    case Quoting::kSingle:
      return "'\"" + ref + "\"'";
    case Quoting::kNone:
    case Quoting::kComment:
      break;
  }
  return "\"" + ref + "\"";
}

bool StartsWord(const std::string& tmpl, size_t i) {
  return i == 0 || std::strchr(" \t\n;&|()<>", tmpl[i - 1]) != nullptr;
}

// Creates `dir` (mode 0700) unless it is already a directory of ours; refuses a symlink or a
// directory of another user (a shared $TMPDIR).
Status EnsurePrivateDir(const std::string& dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) return Status::Runtimef("ingest logs: cannot inspect {}: {}", dir, std::strerror(errno));
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      return Status::Runtimef("ingest logs: cannot create {}: {}", dir, std::strerror(errno));
    if (lstat(dir.c_str(), &st) != 0)
      return Status::Runtimef("ingest logs: cannot inspect {}: {}", dir, std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
    return Status::Runtimef("ingest logs: {} is not a directory owned by this user (refusing to write logs there)", dir);
  return Status::Ok();
}

std::streamoff FileSize(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// The last `max_lines` non-empty lines of `path` from byte `offset` on (at most the last 64 KiB),
// each cut to 200 bytes, joined with " | ".
std::string TailSince(const std::string& path, std::streamoff offset, size_t max_lines = 5) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  std::streamoff end = in.tellg();
  std::streamoff from = std::max(offset, end - 65536);
  if (from >= end) return "";
  in.seekg(from);
  std::string text(static_cast<size_t>(end - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(start, nl - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (!line.empty()) lines.push_back(line.size() > 200 ? line.substr(0, 200) + "..." : line);
    start = nl + 1;
  }
  std::string out;
  for (size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : " | ") + lines[i];
  return ScrubSecretPieces(out);  // it may show part of a password (core/redact.h)
}

}  // namespace

const std::map<std::string, std::string>& PlaceholderVariables() {
  static const std::map<std::string, std::string> vars = {
      {"from", "LEDGERDIFF_JOB_FROM"},   {"to", "LEDGERDIFF_JOB_TO"},         {"schema", "LEDGERDIFF_JOB_SCHEMA"},
      {"db", "LEDGERDIFF_JOB_DB"},       {"worker", "LEDGERDIFF_JOB_WORKER"}, {"job", "LEDGERDIFF_JOB_ID"}};
  return vars;
}

Result<std::string> ExpandIngestCommand(const std::string& tmpl) {
  std::string out;
  Quoting q = Quoting::kNone;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    // "{{" and "}}" are literal braces in every context.
    if (tmpl.compare(i, 2, "{{") == 0 || tmpl.compare(i, 2, "}}") == 0) {
      out += c;
      ++i;
      continue;
    }
    // "{name}" of a known placeholder is replaced; any other brace is literal too, so shell
    // code such as ${VAR} or awk '{print}' passes through.
    if (c == '{' && (i == 0 || tmpl[i - 1] != '$')) {
      size_t close = tmpl.find('}', i);
      std::string name = close == std::string::npos ? "" : tmpl.substr(i + 1, close - i - 1);
      bool word = !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") == std::string::npos;
      if (word) {
        auto it = PlaceholderVariables().find(name);
        if (it == PlaceholderVariables().end()) {
          return Status::Usagef(
              "--ingest-cmd: unknown placeholder {{{}}} (known: {{from}} {{to}} {{schema}} {{db}} {{worker}} {{job}}; "
              "write {{{{{}}}}} for literal braces)",
              name, name);
        }
        out += VariableReference(it->second, q);
        i = close;
        continue;
      }
    }
    out += c;
    switch (q) {
      case Quoting::kNone:
        if (c == '\\' && i + 1 < tmpl.size()) {
          out += tmpl[++i];  // an escaped character starts nothing
        } else if (c == '\'') {
          q = Quoting::kSingle;
        } else if (c == '"') {
          q = Quoting::kDouble;
        } else if (c == '#' && StartsWord(tmpl, i)) {
          q = Quoting::kComment;
        }
        break;
      case Quoting::kSingle:
        if (c == '\'') q = Quoting::kNone;
        break;
      case Quoting::kDouble:
        if (c == '\\' && i + 1 < tmpl.size()) {
          out += tmpl[++i];
        } else if (c == '"') {
          q = Quoting::kNone;
        }
        break;
      case Quoting::kComment:
        if (c == '\n') q = Quoting::kNone;
        break;
    }
  }
  return out;
}

Status CheckIngestCommand(const std::string& tmpl) { return ExpandIngestCommand(tmpl).status(); }

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

std::map<std::string, std::string> PlaceholderEnvironment(const IngestCommandJob& job) {
  const auto& v = PlaceholderVariables();
  return {{v.at("from"), std::to_string(job.range.from)},
          {v.at("to"), std::to_string(job.range.to)},
          {v.at("schema"), job.schema},
          {v.at("db"), job.conninfo},
          {v.at("worker"), job.worker},
          {v.at("job"), std::to_string(job.job_id)}};
}

Result<std::string> RunLogDir(const std::string& run_id, const std::string& root) {
  std::string base = root;
  if (base.empty()) {
    LD_ASSIGN_OR_RETURN(std::string tmp, TempRoot());
    base = tmp + "/ledgerdiff-logs";
  }
  return base + "/" + SafeFileName(run_id);
}

std::string JobStdoutLog(const std::string& log_dir, uint32_t job_id) {
  return log_dir + "/job-" + std::to_string(job_id) + ".stdout.log";
}
std::string JobStderrLog(const std::string& log_dir, uint32_t job_id) {
  return log_dir + "/job-" + std::to_string(job_id) + ".stderr.log";
}

Status RunIngestCommand(const std::string& tmpl, const IngestCommandJob& job) {
  LD_ASSIGN_OR_RETURN(std::string cmd, ExpandIngestCommand(tmpl));
  if (job.log_dir.empty()) return Status::Runtime("ingest command: no log directory for the job's output");
  // The root (e.g. $TMPDIR/ledgerdiff-logs) and the run's directory, both private.
  const std::string parent = job.log_dir.substr(0, job.log_dir.find_last_of('/'));
  if (!parent.empty() && parent != job.log_dir) LD_RETURN_IF_ERROR(EnsurePrivateDir(parent));
  LD_RETURN_IF_ERROR(EnsurePrivateDir(job.log_dir));

  SpawnOptions so;
  so.new_process_group = false;
  so.env = IngesterEnvironment(job.conninfo, job.schema);
  for (auto& [k, v] : PlaceholderEnvironment(job)) so.env[k] = v;
  so.stdin_null = true;
  so.output_file = JobStdoutLog(job.log_dir, job.job_id);
  so.error_file = JobStderrLog(job.log_dir, job.job_id);
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char when[32] = {};
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const std::string header = fmt::format("== ledgerdiff: job {} attempt {} [ledgers {}] by worker {} at {} ==\n",
                                         job.job_id, job.attempt, job.range.str(), job.worker, when);
  std::streamoff out_from = 0, err_from = 0;
  for (const auto& [path, from] : {std::pair<std::string, std::streamoff*>{so.output_file, &out_from},
                                   std::pair<std::string, std::streamoff*>{so.error_file, &err_from}}) {
    std::ofstream log(path, std::ios::app | std::ios::binary);
    log << header;
    log.close();
    if (!log) return Status::Runtimef("ingest logs: cannot write {}", path);
    *from = FileSize(path);
  }
  LD_ASSIGN_OR_RETURN(ExitInfo ex, RunToCompletion({"/bin/sh", "-c", cmd}, so));
  if (ex.exited && ex.code == 0) return Status::Ok();
  std::string tail = TailSince(so.error_file, err_from);
  if (!tail.empty()) return Status::Runtimef("ingest command failed ({}); {} ends: {}", ex.str(), so.error_file, tail);
  tail = TailSince(so.output_file, out_from);
  if (!tail.empty())
    return Status::Runtimef("ingest command failed ({}); no stderr; {} ends: {}", ex.str(), so.output_file, tail);
  return Status::Runtimef("ingest command failed ({}); it wrote nothing ({})", ex.str(), so.error_file);
}

}  // namespace ledgerdiff::ingest
