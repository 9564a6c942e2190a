#include "verify/usl.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "core/report.h"

namespace ledgerdiff::verify {

namespace {

// Least squares y ≈ Σ coef_k · basis_k(x) through the normal equations (at most 3 unknowns).
// Returns nullopt when the system is singular (too few distinct points for the model).
std::optional<std::vector<double>> LeastSquares(const std::vector<double>& xs, const std::vector<double>& ys,
                                                const std::vector<std::function<double(double)>>& basis) {
  const size_t k = basis.size();
  std::vector<std::vector<double>> m(k, std::vector<double>(k + 1, 0.0));
  for (size_t i = 0; i < xs.size(); ++i) {
    for (size_t r = 0; r < k; ++r) {
      double fr = basis[r](xs[i]);
      for (size_t c = 0; c < k; ++c) m[r][c] += fr * basis[c](xs[i]);
      m[r][k] += fr * ys[i];
    }
  }
  for (size_t col = 0; col < k; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < k; ++r)
      if (std::fabs(m[r][col]) > std::fabs(m[pivot][col])) pivot = r;
    if (std::fabs(m[pivot][col]) < 1e-12) return std::nullopt;
    std::swap(m[col], m[pivot]);
    for (size_t r = 0; r < k; ++r) {
      if (r == col) continue;
      double f = m[r][col] / m[col][col];
      for (size_t c = col; c <= k; ++c) m[r][c] -= f * m[col][c];
    }
  }
  std::vector<double> coef(k);
  for (size_t r = 0; r < k; ++r) coef[r] = m[r][k] / m[r][r];
  return coef;
}

struct Candidate {
  double sigma = 0, kappa = 0, lambda = 0;
  double sse = 0;  // in the linearised space
  const char* pinned = nullptr;
};

// Tolerance for "negative": rounding on exact data must not count as a broken bound.
constexpr double kEps = 1e-9;

}  // namespace

double UslFit::Predict(double n) const {
  double denom = 1 + sigma * (n - 1) + kappa * n * (n - 1);
  return denom > 0 ? lambda * n / denom : 0;
}

namespace {

// The points in the linearised form N/X(N) = a + b·(N-1) + c·(N-1)², with a = 1/λ, b = (σ+κ)/λ,
// c = κ/λ; points with no workers or no throughput are left out.
struct UslLinearised {
  std::vector<double> xs, ys;
  size_t distinct_workers = 0;
};

UslLinearised LineariseUslPoints(const std::vector<UslPoint>& points) {
  UslLinearised l;
  std::set<double> distinct;
  for (const auto& p : points) {
    if (p.workers < 1 || !(p.throughput > 0)) continue;
    l.xs.push_back(p.workers - 1);
    l.ys.push_back(p.workers / p.throughput);
    distinct.insert(p.workers);
  }
  l.distinct_workers = distinct.size();
  return l;
}

// From linearised coefficients (a, b, c) to (σ, κ, λ); nullopt when a bound is broken.
std::optional<Candidate> UslCandidate(const UslLinearised& l, double a, double b, double c, const char* pinned) {
  if (!(a > 0)) return std::nullopt;
  Candidate cand;
  cand.lambda = 1 / a;
  cand.kappa = c / a;
  cand.sigma = b / a - cand.kappa;
  if (cand.kappa < -kEps || cand.sigma < -kEps) return std::nullopt;
  cand.kappa = std::max(0.0, cand.kappa);
  cand.sigma = std::max(0.0, cand.sigma);
  for (size_t i = 0; i < l.xs.size(); ++i) {
    double e = l.ys[i] - (a + b * l.xs[i] + c * l.xs[i] * l.xs[i]);
    cand.sse += e * e;
  }
  cand.pinned = pinned;
  return cand;
}

// The free fit; when it breaks a bound, the best of the fits with σ, κ or both pinned at 0.
std::optional<Candidate> BestUslCandidate(const UslLinearised& l) {
  const std::function<double(double)> one = [](double) { return 1.0; };
  const std::function<double(double)> lin = [](double x) { return x; };
  const std::function<double(double)> sq = [](double x) { return x * x; };
  const std::function<double(double)> nn1 = [](double x) { return x * x + x; };  // N(N-1)
  if (auto c = LeastSquares(l.xs, l.ys, {one, lin, sq}))
    if (auto free_fit = UslCandidate(l, (*c)[0], (*c)[1], (*c)[2], nullptr)) return free_fit;
  std::vector<Candidate> options;
  if (auto c = LeastSquares(l.xs, l.ys, {one, lin}))
    if (auto m = UslCandidate(l, (*c)[0], (*c)[1], 0, "κ")) options.push_back(*m);
  if (auto c = LeastSquares(l.xs, l.ys, {one, nn1}))
    if (auto m = UslCandidate(l, (*c)[0], (*c)[1], (*c)[1], "σ")) options.push_back(*m);
  if (auto c = LeastSquares(l.xs, l.ys, {one}))
    if (auto m = UslCandidate(l, (*c)[0], 0, 0, "σ and κ")) options.push_back(*m);
  std::optional<Candidate> best;
  for (const auto& o : options)
    if (!best || o.sse < best->sse) best = o;
  return best;
}

// R² of the throughput itself, not of the linearised form.
double UslRSquared(const UslFit& fit, const std::vector<UslPoint>& points) {
  double mean = 0, n = 0;
  for (const auto& p : points)
    if (p.workers >= 1 && p.throughput > 0) mean += p.throughput, n += 1;
  mean /= n;
  double ss_res = 0, ss_tot = 0;
  for (const auto& p : points) {
    if (p.workers < 1 || !(p.throughput > 0)) continue;
    double e = p.throughput - fit.Predict(p.workers);
    ss_res += e * e;
    ss_tot += (p.throughput - mean) * (p.throughput - mean);
  }
  return ss_tot > 0 ? 1 - ss_res / ss_tot : (ss_res < 1e-12 ? 1 : 0);
}

// What makes a fit poor, as notes; and the note that no peak is predicted.
void NoteUslFitQuality(UslFit& fit, const char* pinned) {
  bool poor = false;
  if (fit.points < 4) {
    poor = true;
    fit.notes.push_back(fmt::format("only {} worker counts for 3 parameters: nothing is left to test the fit", fit.points));
  }
  if (fit.r_squared < 0.9) {
    poor = true;
    fit.notes.push_back(fmt::format("R² {:.3f} is below 0.9", fit.r_squared));
  }
  if (pinned) {
    poor = true;
    fit.notes.push_back(fmt::format("the free fit made {} negative; pinned at 0", pinned));
  }
  if (!fit.peak_workers) fit.notes.push_back("κ = 0: no peak predicted, throughput approaches λ/σ");
  fit.poor = poor;
}

}  // namespace

UslFit FitUsl(const std::vector<UslPoint>& points) {
  UslFit fit;
  const UslLinearised l = LineariseUslPoints(points);
  fit.points = l.distinct_workers;
  if (fit.points < 3) {
    fit.notes.push_back(fmt::format("{} measured: the fit needs at least 3", FormatCountOf(fit.points, "worker count")));
    return fit;
  }
  const std::optional<Candidate> best = BestUslCandidate(l);
  if (!best) {
    fit.notes.push_back("no fit with non-negative σ and κ and positive λ exists for these points");
    return fit;
  }
  fit.fitted = true;
  fit.sigma = best->sigma;
  fit.kappa = best->kappa;
  fit.lambda = best->lambda;
  if (fit.kappa > 0 && fit.sigma < 1) {
    fit.peak_workers = std::sqrt((1 - fit.sigma) / fit.kappa);
  } else if (fit.sigma >= 1) {
    fit.peak_workers = 1;
  }
  fit.r_squared = UslRSquared(fit, points);
  NoteUslFitQuality(fit, best->pinned);
  return fit;
}

}  // namespace ledgerdiff::verify
