#include "diff/diff.h"

#include <chrono>

#include <algorithm>
#include <array>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "core/concurrency.h"
#include "core/history_tables.h"
#include "core/pg.h"
#include "core/stage_timer.h"
#include "dump/canonical.h"
#include "dump/digest.h"
#include "dump/digest_job.h"
#include "dump/manifest.h"
#include "diff/coverage_builder.h"
#include "diff/side_stream.h"

namespace ledgerdiff::diff {

using dump::Chunk;
using dump::DigestSummary;
using dump::ResolvedProfile;
using dump::ResolvedTable;

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kIdentical: return "identical";
    case Verdict::kDivergent: return "divergent";
    case Verdict::kIncomplete: return "incomplete";
  }
  return "";
}

namespace {

bool IsHistoryTable(const std::string& t) { return t.rfind("history_", 0) == 0; }

std::vector<std::string> Minus(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  for (const auto& x : a)
    if (std::find(b.begin(), b.end(), x) == b.end()) out.push_back(x);
  return out;
}

// One comparison, stage by stage (DiffSources reads as the list of stages).
class DiffRun {
 public:
  DiffRun(const Source& left, const Source& right, const dump::ProfileSpec& spec, const DiffOptions& options,
          Reporter& reporter)
      : spec_(spec), options_(options), reporter_(reporter) {
    sides_[0].source = left;
    sides_[1].source = right;
    sides_[1].name = "right";
    report_.left = Describe(left);
    report_.right = Describe(right);
    report_.all = options.all;
  }

  // Each side's resolved profile and present range (schema) or header (manifest).
  Status OpenSides() {
    for (SideStream& s : sides_) {
      if (!s.is_schema()) {
        LD_ASSIGN_OR_RETURN(s.reader, dump::ManifestReader::Open(std::get<ManifestSource>(s.source).path));
        s.profile = s.reader->header().profile;
        s.present = s.reader->header().range;
        continue;
      }
      LD_ASSIGN_OR_RETURN(s.session, pg::Connection::Open(s.db().conninfo, "ledgerdiff digest", pg::Access::kReadOnly));
      pg::Connection* conn = s.session.get();
      auto p = dump::ResolveProfile(*conn, s.db().schema, spec_);
      if (!p.ok()) return p.status().With(Describe(s.source));
      s.profile = std::move(p).value();
      if (options_.settled_before_ms) dump::ApplySettledCutoff(s.profile, *options_.settled_before_ms);
      if (!options_.range) {
        auto r = dump::DetectRange(*conn, s.db().schema, s.profile);
        if (r.ok()) s.present = *r;  // an empty side is compared against the other side's range
      }
    }
    return Status::Ok();
  }

  // The engine both sides' digests are computed by: a manifest's (both manifests': the same), or
  // the option, or the default.
  Status ChooseEngine() {
    std::optional<dump::DigestEngine> chosen = options_.engine;
    const SideStream* from_manifest = nullptr;
    for (const SideStream& s : sides_) {
      if (!s.reader) continue;
      const dump::DigestEngine e = s.reader->header().engine;
      if (from_manifest && e != from_manifest->reader->header().engine)
        return Status::Usagef("{} was digested by engine {}, {} by engine {}: digests of different engines "
                              "cannot be compared (digest both with the same --engine)",
                              Describe(from_manifest->source), dump::ToString(from_manifest->reader->header().engine),
                              Describe(s.source), dump::ToString(e));
      if (!from_manifest && options_.engine && *options_.engine != e)
        return Status::Usagef("--engine {}, but {} was digested by engine {}: digests of different engines cannot "
                              "be compared (leave --engine out to use the manifest's)",
                              dump::ToString(*options_.engine), Describe(s.source), dump::ToString(e));
      from_manifest = &s;
      chosen = e;
    }
    report_.engine = chosen.value_or(dump::kDefaultEngine);
    return Status::Ok();
  }

  // The compared range: --range; else a manifest's; else the union of the schemas' ranges.
  Status ChooseRange() {
    SideStream& l = sides_[0];
    SideStream& r = sides_[1];
    if (options_.range) {
      range_ = *options_.range;
      for (SideStream& s : sides_)
        if (s.reader && !s.present->contains(range_))
          return Status::Usagef("range {} is outside {} (which covers {})", range_.str(), Describe(s.source),
                                s.present->str());
    } else if (l.reader && r.reader) {
      if (!(*l.present == *r.present))
        return Status::Usagef("the manifests cover different ranges ({} and {}): give --range within both",
                              l.present->str(), r.present->str());
      range_ = *l.present;
    } else if (l.reader || r.reader) {
      range_ = *(l.reader ? l.present : r.present);
    } else if (!l.present && !r.present) {
      return Status::Usagef("nothing to compare: {} and {} hold no rows in any compared table (give --range, and "
                            "--allow-empty to accept an empty comparison)",
                            report_.left, report_.right);
    } else if (!l.present || !r.present) {
      range_ = *(l.present ? l.present : r.present);
    } else {
      range_ = {std::min(l.present->from, r.present->from), std::max(l.present->to, r.present->to)};
    }
    report_.range = range_;
    return Status::Ok();
  }

  // Tables and columns in common; everything present on one side only, from both sides.
  Status MatchTables() {
    const ResolvedProfile& lp = sides_[0].profile;
    const ResolvedProfile& rp = sides_[1].profile;
    report_.profile = lp.name;
    common_.name = lp.name;
    for (const auto& lt : lp.tables) {
      const ResolvedTable* rt = rp.Find(lt.name);
      if (!rt) {
        report_.schema_differences.push_back(fmt::format("table {} only on the left", lt.name));
        continue;
      }
      common_.tables.push_back(MatchColumns(lt, *rt));
    }
    for (const auto& rt : rp.tables)
      if (!lp.Find(rt.name)) report_.schema_differences.push_back(fmt::format("table {} only on the right", rt.name));
    if (options_.require_profile_tables) FindMissingTables(lp, rp);
    if (common_.tables.empty()) return Status::Usage("the two sides have no table in common");
    for (const auto& t : common_.tables)
      for (const auto& c : t.excluded) report_.excluded_columns.push_back(t.name + "." + c);
    std::sort(report_.excluded_columns.begin(), report_.excluded_columns.end());
    // Inventory from both sides. A manifest of version 1 does not list its present tables.
    report_.lookup_tables = lp.lookup_tables;
    for (const auto& t : Minus(rp.lookup_tables, lp.lookup_tables)) report_.lookup_tables.push_back(t);
    report_.uncompared_left = lp.uncompared_tables;
    report_.uncompared_right = rp.uncompared_tables;
    report_.uncompared_tables = lp.uncompared_tables;
    for (const auto& t : Minus(rp.uncompared_tables, lp.uncompared_tables)) report_.uncompared_tables.push_back(t);
    std::sort(report_.uncompared_tables.begin(), report_.uncompared_tables.end());
    if (!lp.present_tables.empty() && !rp.present_tables.empty()) {
      report_.tables_only_left = Minus(lp.present_tables, rp.present_tables);
      report_.tables_only_right = Minus(rp.present_tables, lp.present_tables);
      // A compared table on one side only is already a schema difference; any other history
      // table (a lookup, one the profile does not compare) on one side only is one too.
      for (int i = 0; i < 2; ++i)
        for (const auto& t : i == 0 ? report_.tables_only_left : report_.tables_only_right)
          if (IsHistoryTable(t) && !(i == 0 ? lp : rp).Find(t))
            report_.schema_differences.push_back(fmt::format("table {} only on the {}", t, i == 0 ? "left" : "right"));
    }
    return Status::Ok();
  }

  // Starts the digests of schema sides (concurrently); maps common tables to each side's.
  void StartDigests() {
    const size_t T = common_.tables.size();
    for (SideStream& s : sides_) {
      if (s.reader) {
        for (const auto& t : common_.tables) {
          int idx = -1;
          for (size_t k = 0; k < s.profile.tables.size(); ++k)
            if (s.profile.tables[k].name == t.name) idx = static_cast<int>(k);
          s.map.push_back(idx);
        }
        continue;
      }
      for (size_t k = 0; k < T; ++k) s.map.push_back(static_cast<int>(k));  // restricted to common
      dump::DigestOptions dopts;
      dopts.range = range_;
      dopts.jobs = options_.jobs;
      dopts.restrict_to = common_;
      dopts.phase = fmt::format("digest {}", s.name);
      dopts.resolve_on_client = options_.resolve_on_client;
      dopts.engine = report_.engine;
      dopts.settled_before_ms = options_.settled_before_ms;
      dopts.lookup_cache = options_.lookup_caches[&s == &sides_[0] ? 0 : 1];
      dopts.session = std::move(s.session);
      dopts.before_commit = [&s](const std::string& id, const dump::SeenReferences& seen, pg::Connection& in_snapshot) {
        return s.gate.PublishAndWait(id, seen, in_snapshot);
      };
      const int side = &s == &sides_[0] ? 0 : 1;
      dump::DigestJob* job = options_.job;
      const uint64_t resumed = job ? job->resumed_ledgers() : 0;
      s.thread = std::jthread([&s, this, dopts, job, side, resumed] {
        // Part of the range replayed: the roots are taken over every chunk, not the digest's part.
        std::optional<dump::SummaryBuilder> whole;
        if (resumed) whole.emplace(dump::RestrictProfile(s.profile, common_), range_, Describe(s.source));
        auto forward = [&](const Chunk& c) -> Status {
          if (whole) whole->Add(c);
          return s.queue.Push(c) ? Status::Ok() : Status::Runtime("cancelled");
        };
        Result<DigestSummary> r =
            job ? job->RunSide(side, common_, s.db().conninfo, s.db().schema, spec_, dopts, forward, reporter_)
                : dump::DigestSchema(s.db().conninfo, s.db().schema, spec_, dopts, forward, reporter_);
        if (r.ok()) {
          s.summary = std::move(r).value();
          if (whole) {
            DigestSummary all = whole->Finish();
            s.summary.range = all.range;
            s.summary.rows = all.rows;
            s.summary.tables = all.tables;
            s.summary.root = all.root;
          }
          s.queue.Close(Status::Ok());
        } else {
          s.queue.Close(r.status().With(Describe(s.source)));
        }
        s.gate.Finished();
      });
    }
  }

  // What the ledger-by-ledger walk carries between ledgers.
  struct LedgerWalk {
    int ledger_table = -1;  // index of kLedgerTable among the common tables, -1 when not compared
    std::optional<CoverageBuilder> coverage[2];
    bool combined_comparable = false;
    bool unlocalised_noted = false;
  };

  LedgerWalk StartLedgerWalk() {
    const size_t T = common_.tables.size();
    report_.tables.resize(T);
    for (size_t t = 0; t < T; ++t) report_.tables[t].table = common_.tables[t].name;
    LedgerWalk w;
    w.combined_comparable =
        report_.schema_differences.empty() &&
        std::all_of(std::begin(sides_), std::end(sides_), [&](const SideStream& s) { return s.profile.tables.size() == T; });
    // Coverage from the ledger table's counts, when both sides compare it.
    const auto ledger_table = std::find_if(common_.tables.begin(), common_.tables.end(),
                                           [](const ResolvedTable& t) { return t.name == kLedgerTable; });
    w.ledger_table = ledger_table == common_.tables.end() ? -1 : int(ledger_table - common_.tables.begin());
    std::vector<std::string> names;
    for (const auto& t : common_.tables) names.push_back(t.name);
    if (w.ledger_table >= 0)
      for (auto& c : w.coverage) c.emplace(options_.range.has_value(), names);
    return w;
  }

  // Rows of common table t in the ledger side i is at (`at[i]`: its entry index, none when the
  // ledger is not listed there).
  uint64_t ListedCount(const std::optional<size_t> (&at)[2], int i, size_t t) const {
    return at[i] ? sides_[i].chunk.counts[sides_[i].chunk.At(*at[i], sides_[i].map[t])] : 0;
  }

  // The common tables whose rows of ledger l differ between the sides.
  std::vector<size_t> DifferingTables(LedgerWalk& w, Ledger l, const std::optional<size_t> (&at)[2]) {
    const size_t T = common_.tables.size();
    const Chunk& a = sides_[0].chunk;
    const Chunk& b = sides_[1].chunk;
    std::vector<size_t> differing;
    for (size_t t = 0; t < T; ++t) {
      const uint64_t ca = ListedCount(at, 0, t), cb = ListedCount(at, 1, t);
      report_.tables[t].left_rows += ca;
      report_.tables[t].right_rows += cb;
      bool diff = ca != cb;
      if (!diff && ca != 0) {  // both list l (a count is non-zero)
        const size_t ia = a.At(*at[0], sides_[0].map[t]), ib = b.At(*at[1], sides_[1].map[t]);
        diff = a.full && b.full ? !(a.digests[ia] == b.digests[ib])
                                : a.Tag(*at[0], sides_[0].map[t]) != b.Tag(*at[1], sides_[1].map[t]);
      }
      if (diff) differing.push_back(t);
    }
    if (differing.empty() && w.combined_comparable && at[0] && at[1] && !(a.combined[*at[0]] == b.combined[*at[1]])) {
      // The 32-bit tags collided; the 128-bit combined digest still tells the ledger differs.
      for (size_t t = 0; t < T; ++t) differing.push_back(t);
      if (!w.unlocalised_noted)
        report_.notes.push_back(
            fmt::format("ledger {}: combined digest differs but no table tag does: every table is listed", l));
      w.unlocalised_noted = true;
    }
    return differing;
  }

  // Compares ledger l, listed by at least one side: coverage, row counts, divergent tables.
  void CompareListedLedger(LedgerWalk& w, Ledger l) {
    std::optional<size_t> at[2];
    for (int i = 0; i < 2; ++i)
      if (sides_[i].NextListed() == l) at[i] = sides_[i].pos;
    if (w.ledger_table >= 0)
      for (int i = 0; i < 2; ++i)
        w.coverage[i]->Add(l, ListedCount(at, i, static_cast<size_t>(w.ledger_table)) > 0, [&](size_t t) { return ListedCount(at, i, t); });
    ++report_.ledgers_compared;
    if (IsOneSidedGap(w, at)) {
      for (size_t t = 0; t < report_.tables.size(); ++t) {
        report_.tables[t].left_rows += ListedCount(at, 0, t);
        report_.tables[t].right_rows += ListedCount(at, 1, t);
      }
      return;  // missing on one side (the coverage says so): incomplete there, not divergent
    }
    const std::vector<size_t> differing = DifferingTables(w, l, at);
    for (size_t t : differing) {
      auto& tc = report_.tables[t];
      ++tc.divergent_ledgers;
      if (options_.all) {
        if (!tc.divergent.empty() && tc.divergent.back().to + 1 == l) tc.divergent.back().to = l;
        else tc.divergent.push_back({l, l});
      }
      if (!report_.first_divergent_ledger || *report_.first_divergent_ledger == l)
        report_.divergent_tables.push_back({common_.tables[t].name, ListedCount(at, 0, t), ListedCount(at, 1, t)});
    }
    if (!differing.empty()) {
      ++report_.divergent_ledgers;
      if (report_.divergent_sample.size() < kDivergentSample) report_.divergent_sample.push_back(l);
      if (!report_.first_divergent_ledger) report_.first_divergent_ledger = l;
    }
  }

  // DiffOptions::OneSidedGap::kIncomplete: the ledger at `at` (of the explicit range) is written
  // on one side (its ledger-table row) and not at all on the other (no row of any table). A side
  // that holds some of its rows but not the ledger-table row lost that row: compared, divergent.
  bool IsOneSidedGap(const LedgerWalk& w, const std::optional<size_t> (&at)[2]) const {
    if (options_.one_sided_gap != DiffOptions::OneSidedGap::kIncomplete || !options_.range || w.ledger_table < 0)
      return false;
    auto writes_any = [&](int i) {
      for (size_t t = 0; t < common_.tables.size(); ++t)
        if (ListedCount(at, i, t) > 0) return true;
      return false;
    };
    const bool left = writes_any(0), right = writes_any(1);
    return left != right && ListedCount(at, left ? 0 : 1, static_cast<size_t>(w.ledger_table)) > 0;
  }

  // Coverage (which ledgers each side holds) and the totals, once both sides are drained.
  void FinishLedgerWalk(LedgerWalk& w) {
    Coverage& cov = report_.coverage;
    cov.explicit_range = options_.range.has_value();
    cov.allow_gaps = options_.allow_gaps;
    if (w.ledger_table >= 0) {
      cov.checked = true;
      cov.table = kLedgerTable;
      cov.left = w.coverage[0]->Finish();
      cov.right = w.coverage[1]->Finish();
    } else {
      report_.notes.push_back(fmt::format("coverage not checked: {} is not compared on both sides, so which ledgers "
                                          "each side holds is unknown",
                                          kLedgerTable));
    }
    for (const auto& t : report_.tables) {
      report_.rows_compared_left += t.left_rows;
      report_.rows_compared_right += t.right_rows;
    }
    report_.digest_seconds = started_.Seconds();
  }

  // Compares the sides ledger by ledger: divergent ledgers per table, the first one's tables.
  // Walks the ledgers either side lists, in order; a span that neither lists holds no row on
  // either side (equal, and held by neither) and costs one step whatever its width.
  Status CompareLedgers() {
    LedgerWalk w = StartLedgerWalk();
    const uint64_t end = uint64_t{range_.to} + 1;
    for (uint64_t cur = range_.from; cur < end;) {
      for (SideStream& s : sides_) {
        LD_ASSIGN_OR_RETURN(bool ok, s.Seek(static_cast<Ledger>(cur)));
        if (!ok) return Status::Runtimef("{} ended before ledger {}", Describe(s.source), cur);
      }
      const uint64_t next = std::min({sides_[0].NextListed(), sides_[1].NextListed(), end});
      if (next > cur) {
        const LedgerRange run{static_cast<Ledger>(cur), static_cast<Ledger>(next - 1)};
        if (w.ledger_table >= 0)
          for (auto& c : w.coverage) c->AddEmpty(run);
        report_.ledgers_compared += run.size();
        cur = next;
        continue;
      }
      CompareListedLedger(w, static_cast<Ledger>(cur));
      cur = cur + 1;
    }
    for (SideStream& s : sides_) LD_RETURN_IF_ERROR(s.Drain());
    FinishLedgerWalk(w);
    return Status::Ok();
  }

  // In each schema side's digest snapshot: rows outside the range, lookups, invariants, and the
  // rows of the first divergent ledger. Manifest sides have no rows: noted.
  Status CheckSides() {
    const Stopwatch row_diff;
    pg::Connection* conns[2] = {nullptr, nullptr};
    for (int i = 0; i < 2; ++i) {
      if (sides_[i].is_schema()) {
        LD_ASSIGN_OR_RETURN(conns[i], sides_[i].InSnapshot());
      }
    }
    std::vector<LookupFacts> facts[2];
    const bool scoped = options_.range.has_value();
    // The checks scan whole tables: both sides at once, each on its own connection; the results
    // go into the report afterwards, left before right, as if run in turn.
    struct SideChecks {
      Status status;
      std::vector<dump::OutsideRange> outside;
      std::vector<InvariantResult> invariants;
    } checks[2];
    auto check_side = [&](int i) -> Status {
      const SideStream& s = sides_[i];
      const bool without_ledger_only = scoped && options_.outside_rows == DiffOptions::OutsideRows::kWithoutLedger;
      LD_ASSIGN_OR_RETURN(checks[i].outside, dump::CountRowsOutsideRange(*conns[i], s.db().schema, s.profile, range_,
                                                                         without_ledger_only));
      // What the digest saw, where it saw all of it (its range is range_ unless resumed).
      const dump::SeenReferences& seen = s.gate.seen();
      LD_ASSIGN_OR_RETURN(facts[i], ReadLookupFacts(*conns[i], s.db().schema, spec_, s.profile,
                                                    scoped ? std::optional<LedgerRange>(range_) : std::nullopt,
                                                    KnownReferences{&seen, range_, checks[i].outside}));
      LD_ASSIGN_OR_RETURN(checks[i].invariants,
                          CheckInvariants(*conns[i], s.db().schema, s.profile, range_, SideAt(i), &seen));
      return Status::Ok();
    };
    std::thread right;
    if (conns[1]) right = std::thread([&] { checks[1].status = check_side(1); });
    if (conns[0]) checks[0].status = check_side(0);
    if (right.joinable()) right.join();
    for (int i = 0; i < 2; ++i) {
      LD_RETURN_IF_ERROR(checks[i].status);
      for (const auto& o : checks[i].outside)
        report_.rows_outside_range.push_back({o.table, SideAt(i), o.before, o.after, o.no_ledger});
      for (auto& v : checks[i].invariants) report_.invariants.push_back(std::move(v));
    }
    if ((!scoped || options_.outside_rows == DiffOptions::OutsideRows::kWithoutLedger) && conns[0] && conns[1])
      FindOutsideRangeDifferences();
    if (conns[0] && conns[1]) {
      report_.lookups = CompareLookups(facts[0], facts[1], scoped, options_.max_rows);
    } else {
      report_.notes.push_back("lookup tables and side invariants are checked on schema sides only (a manifest has "
                              "no rows)");
    }
    if (report_.first_divergent_ledger) LD_RETURN_IF_ERROR(DiffFirstLedgerRows(conns));
    report_.row_diff_seconds = row_diff.Seconds();
    return Status::Ok();
  }

  // Releases the snapshots, waits for the digests to finish, and takes the roots.
  Status FinishDigests() {
    for (SideStream& s : sides_) {
      if (!s.is_schema()) continue;
      s.gate.Release();
      Chunk rest;
      while (s.queue.Pop(rest)) {
      }
      s.thread.join();
      LD_RETURN_IF_ERROR(s.queue.status());
    }
    const size_t T = common_.tables.size();
    for (int i = 0; i < 2; ++i) {
      SideStream& s = sides_[i];
      DigestSummary sum = s.reader ? s.reader->summary() : s.summary;
      bool usable = !s.reader || (*s.present == range_ && s.profile.tables.size() == T);
      (i == 0 ? report_.left_root : report_.right_root) = usable ? sum.root : "";
      for (size_t t = 0; t < T; ++t) {
        std::string tr;
        if (usable)
          for (const auto& ts : sum.tables)
            if (ts.table == common_.tables[t].name) tr = ts.root;
        (i == 0 ? report_.tables[t].left_root : report_.tables[t].right_root) = tr;
      }
    }
    if (report_.left_root.empty() || report_.right_root.empty())
      report_.notes.push_back("roots of a manifest are only known for its whole range and tables");
    CollectReadFacts();
    return Status::Ok();
  }

  // What each schema side's digest recorded of its read: its snapshot, and its unsettled rows
  // per windowed table.
  void CollectReadFacts() {
    if (sides_[0].is_schema()) report_.left_snapshot = sides_[0].summary.snapshot;
    if (sides_[1].is_schema()) report_.right_snapshot = sides_[1].summary.snapshot;
    report_.settled_before_ms = options_.settled_before_ms;
    if (!options_.settled_before_ms) return;
    std::map<std::string, UnsettledCount> by_table;
    for (int i = 0; i < 2; ++i) {
      if (!sides_[i].is_schema()) continue;
      for (const dump::UnsettledRows& u : sides_[i].summary.unsettled) {
        UnsettledCount& c = by_table[u.table];
        c.table = u.table;
        (i == 0 ? c.left : c.right) = u.rows;
      }
    }
    for (auto& [table, c] : by_table) report_.unsettled.push_back(c);
  }

  // The verdict. identical requires that something was compared (unless --allow-empty).
  Result<DiffReport> Verdict() {
    bool lookups_differ = std::any_of(report_.lookups.begin(), report_.lookups.end(),
                                      [](const LookupComparison& c) { return c.divergent(); });
    bool invariants_broken = std::any_of(report_.invariants.begin(), report_.invariants.end(),
                                         [](const InvariantResult& v) { return v.violations > 0; });
    const bool differs = report_.first_divergent_ledger || !report_.schema_differences.empty() || lookups_differ ||
                         invariants_broken || !report_.outside_range_differences.empty();
    const Coverage& cov = report_.coverage;
    const bool accepted_empty = options_.allow_empty && cov.left.held == 0 && cov.right.held == 0;
    const bool incomplete = (!cov.complete() && !options_.allow_gaps && !accepted_empty) || !report_.missing_tables.empty();
    report_.verdict = differs ? Verdict::kDivergent : incomplete ? Verdict::kIncomplete : Verdict::kIdentical;
    report_.identical = report_.verdict == Verdict::kIdentical;
    if (!differs && report_.rows_compared_left == 0 && report_.rows_compared_right == 0 &&
        !options_.allow_empty && !options_.empty_slice)
      return Status::Usagef("nothing compared: {} and {} hold no rows in ledgers {} (the wrong --range, database or schema?); "
                            "--allow-empty accepts an empty comparison",
                            report_.left, report_.right, range_.str());
    return std::move(report_);
  }

 private:
  // REQUIRES: both sides are schemas, rows_outside_range counted for both (without --range, or only
  // the rows without a ledger: OutsideRows::kWithoutLedger). A table
  // whose rows outside the range differ in number between the sides (a NULL ledger on one side
  // only, rows written after the range was chosen) is a provable difference.
  void FindOutsideRangeDifferences() {
    std::map<std::string, std::array<OutsideRows, 2>> by_table;
    for (const auto& o : report_.rows_outside_range) by_table[o.table][SideIndex(o.side)] = o;
    for (const auto& [table, o] : by_table) {
      if (o[0].before == o[1].before && o[0].after == o[1].after && o[0].no_ledger == o[1].no_ledger) continue;
      report_.outside_range_differences.push_back(
          fmt::format("{}: rows outside ledgers {} (before / after / without a ledger): left {} / {} / {}, right "
                      "{} / {} / {}",
                      table, range_.str(), o[0].before, o[0].after, o[0].no_ledger, o[1].before, o[1].after,
                      o[1].no_ledger));
    }
  }

  // The required tables of the profile that neither side compares.
  void FindMissingTables(const ResolvedProfile& lp, const ResolvedProfile& rp) {
    for (const dump::TableRule& rule : spec_.tables) {
      if (!rule.required || lp.Find(rule.table) || rp.Find(rule.table)) continue;
      const bool allowed = std::find(options_.allow_missing_tables.begin(), options_.allow_missing_tables.end(),
                                     rule.table) != options_.allow_missing_tables.end();
      (allowed ? report_.allowed_missing_tables : report_.missing_tables).push_back(rule.table);
    }
  }

  // The common form of a table: the columns both sides have (by name), class-equal widenings
  // noted, anything else a schema difference.
  ResolvedTable MatchColumns(const ResolvedTable& lt, const ResolvedTable& rt) {
    ResolvedTable t = lt;
    t.columns.clear();
    for (const auto& c : lt.columns) {
      auto it = std::find_if(rt.columns.begin(), rt.columns.end(), [&](const auto& o) { return o.name == c.name; });
      if (it == rt.columns.end()) {
        report_.schema_differences.push_back(fmt::format("column {}.{} only on the left", lt.name, c.name));
        continue;
      }
      if (it->cls != c.cls) {
        const ColumnClassDifference& d = class_differences_[lt.name].emplace_back(
            ColumnClassDifference{c.name, dump::ColumnClassName(c.cls), dump::ColumnClassName(it->cls)});
        report_.schema_differences.push_back(
            fmt::format("column {}.{} is {} on the left, {} on the right", lt.name, c.name, d.left, d.right));
      } else if (!c.type.empty() && !it->type.empty() && c.type != it->type)
        report_.schema_notes.push_back(fmt::format("column {}.{} is {} on the left, {} on the right (same class {}: "
                                                   "compared as equal)",
                                                   lt.name, c.name, c.type, it->type, dump::ColumnClassName(c.cls)));
      t.columns.push_back(c);
    }
    for (const auto& c : rt.columns)
      if (std::none_of(lt.columns.begin(), lt.columns.end(), [&](const auto& o) { return o.name == c.name; }))
        report_.schema_differences.push_back(fmt::format("column {}.{} only on the right", lt.name, c.name));
    return t;
  }

  // Row diff of every divergent table at the first divergent ledger, read in the digests'
  // snapshots (conns[i] is null for a manifest side).
  Status DiffFirstLedgerRows(pg::Connection* (&conns)[2]) {
    Ledger l = *report_.first_divergent_ledger;
    for (const auto& dt : report_.divergent_tables) {
      TableRowDiff rd;
      rd.table = dt.table;
      const ResolvedTable* ct = common_.Find(dt.table);
      for (const auto& c : ct->columns) rd.columns.push_back(c.name);
      rd.key = ct->key;
      if (auto cd = class_differences_.find(dt.table); cd != class_differences_.end())
        rd.class_differences = cd->second;
      LedgerRows rows[2];
      for (int i = 0; i < 2; ++i) {
        SideStream& s = sides_[i];
        if (!conns[i]) {
          (i == 0 ? rd.left_available : rd.right_available) = false;
          continue;
        }
        const ResolvedTable* st = s.profile.Find(dt.table);
        if (!st) continue;
        // The side's own SQL, restricted to the common columns (as its digest read them).
        LD_ASSIGN_OR_RETURN(rows[i], FetchRows(*conns[i], s.db().schema, dump::RestrictColumns(*st, rd.columns), l));
      }
      std::vector<size_t> key;
      for (const auto& k : rd.key)
        for (size_t c = 0; c < rd.columns.size(); ++c)
          if (rd.columns[c] == k) key.push_back(c);
      DiffRows(rows[0].rows, rows[1].rows, key, rd.columns, options_.max_rows, rd, rows[0].stored_flipped,
               rows[1].stored_flipped);
      report_.rows.push_back(std::move(rd));
    }
    return Status::Ok();
  }

  const dump::ProfileSpec& spec_;
  const DiffOptions& options_;
  Reporter& reporter_;
  const Stopwatch started_;
  DiffReport report_;
  LedgerRange range_;
  ResolvedProfile common_;  // the tables and columns both sides have
  // Per common table, its columns of another type class (MatchColumns), for the row diffs.
  std::map<std::string, std::vector<ColumnClassDifference>> class_differences_;
  SideStream sides_[2];           // declared last: their threads stop before the members above go
};

}  // namespace

Result<DiffReport> DiffSources(const Source& left, const Source& right, const dump::ProfileSpec& spec,
                               const DiffOptions& options, Reporter& reporter) {
  DiffRun run(left, right, spec, options, reporter);
  // 1. Each side's profile (live columns, or the manifest's header) and present range.
  LD_RETURN_IF_ERROR(run.OpenSides());
  // 1b. The digest engine: a manifest side's, else --engine, else the default.
  LD_RETURN_IF_ERROR(run.ChooseEngine());
  // 2. The compared range: --range, else a manifest's, else the union over both schemas.
  LD_RETURN_IF_ERROR(run.ChooseRange());
  // 3. Tables and columns in common; one-side-only tables, widenings and inventory of both sides.
  LD_RETURN_IF_ERROR(run.MatchTables());
  // 4. Digest the schema sides concurrently; each holds its snapshot open until step 7.
  run.StartDigests();
  // 5. Compare ledger by ledger: first divergent ledger, divergent ledgers per table.
  LD_RETURN_IF_ERROR(run.CompareLedgers());
  // 6. In the same snapshots: rows outside the range, lookups, invariants, the row diff.
  LD_RETURN_IF_ERROR(run.CheckSides());
  // 7. Release the snapshots, wait for the digests, take the roots.
  LD_RETURN_IF_ERROR(run.FinishDigests());
  // 8. The verdict (identical only when something was compared, unless --allow-empty).
  return run.Verdict();
}

}  // namespace ledgerdiff::diff
