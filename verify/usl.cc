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

UslFit FitUsl(const std::vector<UslPoint>& points) {
  UslFit fit;
  std::vector<double> xs, ys;
  std::set<double> distinct;
  for (const auto& p : points) {
    if (p.workers < 1 || !(p.throughput > 0)) continue;
    xs.push_back(p.workers - 1);
    ys.push_back(p.workers / p.throughput);
    distinct.insert(p.workers);
  }
  fit.points = distinct.size();
  if (fit.points < 3) {
    fit.notes.push_back(fmt::format("{} measured: the fit needs at least 3", FormatCountOf(fit.points, "worker count")));
    return fit;
  }

  auto sse = [&](double a, double b, double c) {
    double s = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      double e = ys[i] - (a + b * xs[i] + c * xs[i] * xs[i]);
      s += e * e;
    }
    return s;
  };
  std::function<double(double)> one = [](double) { return 1.0; };
  std::function<double(double)> lin = [](double x) { return x; };
  std::function<double(double)> sq = [](double x) { return x * x; };
  std::function<double(double)> nn1 = [](double x) { return x * x + x; };  // N(N-1)

  // From linearised coefficients (a, b, c) to (σ, κ, λ); nullopt when a bound is broken.
  auto make = [&](double a, double b, double c, const char* pinned) -> std::optional<Candidate> {
    if (!(a > 0)) return std::nullopt;
    Candidate cand;
    cand.lambda = 1 / a;
    cand.kappa = c / a;
    cand.sigma = b / a - cand.kappa;
    if (cand.kappa < -kEps || cand.sigma < -kEps) return std::nullopt;
    cand.kappa = std::max(0.0, cand.kappa);
    cand.sigma = std::max(0.0, cand.sigma);
    cand.sse = sse(a, b, c);
    cand.pinned = pinned;
    return cand;
  };

  std::optional<Candidate> best;
  if (auto c = LeastSquares(xs, ys, {one, lin, sq})) best = make((*c)[0], (*c)[1], (*c)[2], nullptr);
  if (!best) {
    std::vector<Candidate> options;
    if (auto c = LeastSquares(xs, ys, {one, lin}))
      if (auto m = make((*c)[0], (*c)[1], 0, "κ")) options.push_back(*m);
    if (auto c = LeastSquares(xs, ys, {one, nn1}))
      if (auto m = make((*c)[0], (*c)[1], (*c)[1], "σ")) options.push_back(*m);
    if (auto c = LeastSquares(xs, ys, {one}))
      if (auto m = make((*c)[0], 0, 0, "σ and κ")) options.push_back(*m);
    for (const auto& o : options)
      if (!best || o.sse < best->sse) best = o;
  }
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

  // R² of the throughput itself, not of the linearised form.
  double mean = 0;
  for (const auto& p : points)
    if (p.workers >= 1 && p.throughput > 0) mean += p.throughput;
  mean /= static_cast<double>(xs.size());
  double ss_res = 0, ss_tot = 0;
  for (const auto& p : points) {
    if (p.workers < 1 || !(p.throughput > 0)) continue;
    double e = p.throughput - fit.Predict(p.workers);
    ss_res += e * e;
    ss_tot += (p.throughput - mean) * (p.throughput - mean);
  }
  fit.r_squared = ss_tot > 0 ? 1 - ss_res / ss_tot : (ss_res < 1e-12 ? 1 : 0);

  bool poor = false;
  if (fit.points < 4) {
    poor = true;
    fit.notes.push_back(fmt::format("only {} worker counts for 3 parameters: nothing is left to test the fit", fit.points));
  }
  if (fit.r_squared < 0.9) {
    poor = true;
    fit.notes.push_back(fmt::format("R² {:.3f} is below 0.9", fit.r_squared));
  }
  if (best->pinned) {
    poor = true;
    fit.notes.push_back(fmt::format("the free fit made {} negative; pinned at 0", best->pinned));
  }
  if (!fit.peak_workers) fit.notes.push_back("κ = 0: no peak predicted, throughput approaches λ/σ");
  fit.poor = poor;
  return fit;
}


}  // namespace ledgerdiff::verify
