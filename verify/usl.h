#pragma once
// The Universal Scalability Law (Gunther): throughput with N workers
//
//   X(N) = λ N / (1 + σ (N − 1) + κ N (N − 1))
//
// σ is contention (the serial fraction), κ coherency (crosstalk between workers), λ the
// throughput of one worker. With κ > 0 the curve peaks at N* = sqrt((1 − σ) / κ) and falls after.
//
// FitUsl fits σ, κ, λ by least squares on the linearised form N / X(N) = a + b x + c x² with
// x = N − 1 (a = 1/λ, b = (σ + κ)/λ, c = κ/λ), under σ >= 0, κ >= 0: when the free fit breaks a
// bound, the best fit with that coefficient pinned at 0 is taken. Pure code, no I/O.

#include <optional>
#include <string>
#include <vector>

namespace ledgerdiff::verify {

struct UslPoint {
  double workers = 0;     // N >= 1
  double throughput = 0;  // X(N) > 0, e.g. ledgers/s
};

struct UslFit {
  bool fitted = false;       // false: too few usable points (see `notes`)
  double sigma = 0, kappa = 0, lambda = 0;
  double r_squared = 0;      // of X(N) predicted against measured, over the fitted points
  size_t points = 0;         // usable points (distinct N)
  std::optional<double> peak_workers;  // N*; nullopt: no peak (κ = 0: throughput keeps rising)
  bool poor = true;          // the fit should not be trusted (reasons in `notes`)
  std::vector<std::string> notes;

  double Predict(double workers) const;
};

// INVARIANT of the result: fitted implies sigma >= 0, kappa >= 0, lambda > 0.
// Poor when: fewer than 4 distinct N (3 parameters through 3 points always fit exactly),
// R² < 0.9, or a coefficient had to be pinned at 0 because the free fit made it negative.
UslFit FitUsl(const std::vector<UslPoint>& points);

}  // namespace ledgerdiff::verify
