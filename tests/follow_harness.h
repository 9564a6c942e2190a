#pragma once
// What the tests of verify-range --follow share (follow_test, follow_live_test): SQL on a
// database by conninfo, the follower's command line and JSON outcome, waiting on what a follower
// wrote, and two copies of the real kahuna database. Header-only; every failure is a test failure.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness.h"

namespace ledgerdiff::testing {

// The single integer `sql` returns; -1 (and a test failure on error) when it returns no single value.
inline int64_t QueryInt(const std::string& conninfo, const std::string& sql) {
  auto c = Connect(conninfo);
  auto r = c->Exec(sql);
  EXPECT_TRUE(r.ok()) << sql;
  return r.ok() && r->size() == 1 && !r->IsNull(0, 0) ? r->GetInt(0, 0) : -1;
}

// The single text value `sql` returns; "" (and a test failure) when it returns no single value.
inline std::string QueryText(const std::string& conninfo, const std::string& sql) {
  auto c = Connect(conninfo);
  auto r = c->Exec(sql);
  EXPECT_TRUE(r.ok() && r->size() == 1 && !r->IsNull(0, 0)) << sql;
  return r.ok() && r->size() == 1 && !r->IsNull(0, 0) ? std::string(r->Get(0, 0)) : std::string();
}

// The samples of a Prometheus text file (a --metrics file), each series (name and labels as
// written) to its value.
inline std::map<std::string, std::string> Samples(const std::string& exposition) {
  std::map<std::string, std::string> out;
  std::istringstream in(exposition);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

// The follower's JSON document; a test failure and an empty outcome (no cycles, verified through
// -1) when `r` printed none.
inline nlohmann::json FollowOutcome(const CliResult& r) {
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("follow")) {
    ADD_FAILURE() << "not a follow outcome: " << r.out << r.err;
    return {{"follow", {{"cycles", nlohmann::json::array()}, {"verified_through", -1}}}};
  }
  return j;
}

// verify-range --follow on LEFT and RIGHT with --state STATE, --format json unless `more` has --format.
inline std::vector<std::string> FollowArgs(const std::string& left, const std::string& right,
                                           const std::string& state, std::vector<std::string> more) {
  std::vector<std::string> args = {"verify-range", "--follow", "--left", left, "--right", right, "--state", state};
  if (std::find(more.begin(), more.end(), "--format") == more.end()) more.insert(more.end(), {"--format", "json"});
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// Polls the file at `path` every 100 ms until `text` stands in it at or after byte `from` (true) or
// 60 s pass (false): the tests order their steps by what the follower wrote, never by fixed sleeps.
inline bool WaitForText(const std::string& path, const std::string& text, size_t from = 0) {
  for (int i = 0; i < 600; ++i) {
    const std::string bytes = ReadFileBytes(path);
    if (bytes.size() > from && bytes.find(text, from) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// Two copies of the real kahuna Horizon database, and its ledgers.
struct Kahuna {
  std::string left = LoadDump("kahuna-horizon.sql");
  std::string right = LoadDump("kahuna-horizon.sql");
  int64_t first = QueryInt(left, "SELECT min(sequence) FROM history_ledgers");
  int64_t last = QueryInt(left, "SELECT max(sequence) FROM history_ledgers");
};

}  // namespace ledgerdiff::testing
