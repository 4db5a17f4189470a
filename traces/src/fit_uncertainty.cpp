#include "fit_uncertainty.hpp"

#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

namespace spyre_dma::traces::detail {
namespace {

using Matrix = std::vector<std::vector<double>>;

// The inverse of a small symmetric matrix by Gauss-Jordan elimination with partial pivoting; empty
// when a pivot vanishes against the matrix's scale (a parameter the copies cannot tell apart from
// the others).
Matrix inverse(Matrix a) {
  const std::size_t n = a.size();
  double scale = 0;
  for (const auto& row : a)
    for (double v : row) scale = std::max(scale, std::abs(v));
  if (scale == 0) return {};
  Matrix inv(n, std::vector<double>(n, 0));
  for (std::size_t i = 0; i < n; ++i) inv[i][i] = 1;
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[pivot][c])) pivot = r;
    if (std::abs(a[pivot][c]) < 1e-12 * scale) return {};
    std::swap(a[c], a[pivot]);
    std::swap(inv[c], inv[pivot]);
    const double d = a[c][c];
    for (std::size_t k = 0; k < n; ++k) a[c][k] /= d, inv[c][k] /= d;
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c || a[r][c] == 0) continue;
      const double f = a[r][c];
      for (std::size_t k = 0; k < n; ++k) a[r][k] -= f * a[c][k], inv[r][k] -= f * inv[c][k];
    }
  }
  return inv;
}

}  // namespace

void Scatter::add(const std::string& path, bool small, double residual) {
  const double sq = residual * residual;
  for (Sum* s : {&by_kind_[kind(path, small)], &by_path_[path], &all_}) s->ss += sq, ++s->n;
}

double Scatter::variance(const std::string& path, bool small) const {
  if (const auto k = by_kind_.find(kind(path, small)); k != by_kind_.end() && k->second.n >= 2)
    return k->second.ss / static_cast<double>(k->second.n);
  if (const auto p = by_path_.find(path); p != by_path_.end() && p->second.n >= 2)
    return p->second.ss / static_cast<double>(p->second.n);
  return all_.n ? all_.ss / static_cast<double>(all_.n) : 0;
}

std::size_t Scatter::copies(const std::string& path, bool small) const {
  if (const auto k = by_kind_.find(kind(path, small)); k != by_kind_.end() && k->second.n >= 2) return k->second.n;
  if (const auto p = by_path_.find(path); p != by_path_.end() && p->second.n >= 2) return p->second.n;
  return all_.n;
}

double t90(std::size_t df) {
  // Student's t, 0.95 quantile, at these degrees of freedom; between them, linear in 1/df.
  static const std::pair<double, double> kTable[] = {{1, 6.314}, {2, 2.920}, {3, 2.353}, {4, 2.132}, {5, 2.015},
                                                     {6, 1.943}, {7, 1.895}, {8, 1.860}, {9, 1.833}, {10, 1.812},
                                                     {12, 1.782}, {15, 1.753}, {20, 1.725}, {30, 1.697},
                                                     {60, 1.671}, {120, 1.658}};
  const double d = static_cast<double>(std::max<std::size_t>(df, 1));
  if (d >= 120) return 1.658 + (1.6448536269514722 - 1.658) * (1 - 120 / d);
  for (std::size_t i = 1; i < std::size(kTable); ++i) {
    if (d > kTable[i].first) continue;
    const auto [d0, t0] = kTable[i - 1];
    const auto [d1, t1] = kTable[i];
    const double f = (1 / d0 - 1 / d) / (1 / d0 - 1 / d1);
    return t0 + f * (t1 - t0);
  }
  return kTable[0].second;
}

double Uncertainty::se_log(std::size_t i) const {
  if (!determined()) return std::numeric_limits<double>::infinity();
  return std::sqrt(std::max(0.0, covariance[i][i]));
}

double Uncertainty::prediction_variance(const std::vector<double>& s, double scatter) const {
  if (!determined()) return std::numeric_limits<double>::infinity();
  double v = scatter;
  for (std::size_t i = 0; i < s.size(); ++i)
    for (std::size_t k = 0; k < s.size(); ++k) v += s[i] * covariance[i][k] * s[k];
  return v;
}

Uncertainty estimate(const Linearised& fit, std::size_t p) {
  Uncertainty u;
  if (p == 0) return u;
  // J^T W J, each copy weighted by the inverse of its kind's variance (a floor keeps a copy the
  // model fits exactly from weighing without bound).
  Matrix jtwj(p, std::vector<double>(p, 0));
  for (std::size_t r = 0; r < fit.sensitivity.size(); ++r) {
    const std::vector<double>& row = fit.sensitivity[r];
    const double w = 1.0 / std::max(fit.variance[r], 1e-6);
    for (std::size_t i = 0; i < p; ++i)
      for (std::size_t k = 0; k < p; ++k) jtwj[i][k] += w * row[i] * row[k];
  }
  u.covariance = inverse(jtwj);
  return u;
}

}  // namespace spyre_dma::traces::detail
