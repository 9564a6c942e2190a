// CommandEta: the whole command's progress and ETA from its plan (core/report.h).
#include <algorithm>

#include "core/report.h"

namespace ledgerdiff {

CommandEta::CommandEta(CommandPlan plan) : plan_(std::move(plan)), phases_(plan_.size()) {
  for (size_t i = 0; i < plan_.size(); ++i) phases_[i].reports.resize(plan_[i].reports.size());
}

// The phase `p` is of, among those listing its name (several do when a command repeats work:
// selftest's cases each digest "digest left"): the one in progress, else the first not begun,
// except that a finished report of an ended phase is that phase's last word (a repeated final
// update), else the last ended one. plan_.size(): none.
size_t CommandEta::PhaseOf(const Progress& p) const {
  size_t first_new = plan_.size(), last_ended = plan_.size();
  for (size_t i = 0; i < plan_.size(); ++i) {
    const auto& names = plan_[i].reports;
    if (std::find(names.begin(), names.end(), p.phase) == names.end()) continue;
    const Phase& phase = phases_[i];
    if (phase.begun_s >= 0 && phase.ended_s < 0) return i;
    if (phase.begun_s < 0 && !phase.skipped && first_new == plan_.size()) first_new = i;
    if (phase.ended_s >= 0) last_ended = i;
  }
  const bool finished = p.total && p.done >= p.total;
  if (first_new < plan_.size() && !(finished && last_ended < plan_.size())) return first_new;
  return last_ended;
}

void CommandEta::Update(const Progress& p, double t_s, double phase_eta_s) {
  if (const size_t i = PhaseOf(p); i < plan_.size()) {
    const auto& names = plan_[i].reports;
    const auto at = std::find(names.begin(), names.end(), p.phase);
    Phase& phase = phases_[i];
    if (phase.begun_s < 0) {
      // Its time runs from the end of the one before (what happened between, e.g. a digest's
      // planning, is its), else from its first report.
      phase.begun_s = t_s;
      for (size_t j = i; j-- > 0;)
        if (!phases_[j].skipped && phases_[j].ended_s >= 0) {
          phase.begun_s = phases_[j].ended_s;
          break;
        } else if (phases_[j].begun_s >= 0) {
          break;
        }
      for (size_t j = 0; j < i; ++j) {
        if (phases_[j].ended_s >= 0) continue;
        if (phases_[j].begun_s < 0) phases_[j].skipped = true;
        phases_[j].ended_s = t_s;
      }
    }
    Report& r = phase.reports[static_cast<size_t>(at - names.begin())];
    r.seen = true;
    r.finished = p.total && p.done >= p.total;
    r.fraction = r.finished          ? 1.0
                 : p.work_total > 0  ? std::min(1.0, static_cast<double>(p.work_done) / static_cast<double>(p.work_total))
                 : p.total > 0       ? std::min(1.0, static_cast<double>(p.done) / static_cast<double>(p.total))
                                     : 0.0;
    r.eta_s = phase_eta_s;
    r.eta_at_s = t_s;
    if (phase.ended_s < 0 && std::all_of(phase.reports.begin(), phase.reports.end(),
                                         [](const Report& x) { return x.finished; }))
      phase.ended_s = t_s;
  }
}

double CommandEta::FractionOf(size_t i) const {
  const Phase& phase = phases_[i];
  if (phase.ended_s >= 0) return 1;
  if (phase.begun_s < 0 || phase.reports.empty()) return 0;
  double sum = 0;
  for (const Report& r : phase.reports) sum += r.fraction;  // a report not seen yet counts 0
  return sum / static_cast<double>(phase.reports.size());
}

CommandEstimate CommandEta::Estimate(double t_s, const Progress* of) const {
  CommandEstimate e;
  e.count = plan_.size();
  double cost = 0, cost_done = 0, spent_s = 0, spent_cost = 0;
  for (size_t i = 0; i < plan_.size(); ++i) {
    const Phase& phase = phases_[i];
    const double done = FractionOf(i) * plan_[i].cost;
    cost += plan_[i].cost;
    cost_done += done;
    if (phase.begun_s >= 0 && !phase.skipped) {
      spent_s += (phase.ended_s >= 0 ? phase.ended_s : t_s) - phase.begun_s;
      spent_cost += done;
    }
    if (phase.begun_s >= 0 && phase.ended_s < 0) {
      e.index = i + 1;
      e.phase = plan_[i].name;
    }
  }
  if (e.index == 0 && of != nullptr) {
    if (const size_t i = PhaseOf(*of); i < plan_.size() && phases_[i].ended_s >= 0) {
      e.index = i + 1;
      e.phase = plan_[i].name;
    }
  }
  e.fraction = cost > 0 ? std::min(1.0, cost_done / cost) : 0;
  const double pace = spent_cost > 0 && spent_s > 0 ? spent_s / spent_cost : -1;  // seconds per unit of cost
  double left_s = 0;
  for (size_t i = 0; i < plan_.size(); ++i) {
    const Phase& phase = phases_[i];
    if (phase.ended_s >= 0) continue;
    if (phase.begun_s >= 0) {
      // In progress: its own ETA when every report has one, the latest of them aged to now.
      double own = 0;
      bool known = true;
      for (const Report& r : phase.reports) {
        if (r.finished) continue;
        if (!r.seen || r.eta_s < 0) {
          known = false;
          break;
        }
        own = std::max(own, r.eta_s - (t_s - r.eta_at_s));
      }
      if (known) {
        left_s += std::max(0.0, own);
        continue;
      }
    }
    if (pace < 0) return e;  // nothing measured yet: the ETA is unknown
    left_s += (1 - FractionOf(i)) * plan_[i].cost * pace;
  }
  e.eta_s = left_s;
  return e;
}

}  // namespace ledgerdiff
