// How well a calibration's parameters are known, and how far its predictions may be off, from
// the fit linearised around its result: each compared copy's log duration against each
// parameter's log value (a column of sensitivities per parameter, from one replay with that
// parameter moved a step), and the fit copies' log errors as the noise.
//
// The noise is not the same for every copy: a model whose shape differs from the device's for
// small copies scatters them far more than the large ones it fits well. So each fit copy's
// variance is that of its kind (Scatter: the copies of its path and size), the parameters'
// covariance is weighted least squares' (J^T W J)^-1 with W the inverse variances, and a
// prediction's variance is j^T C j plus its own kind's scatter.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace spyre_dma::traces::detail {

// The scatter of the fit copies' log errors by kind: a copy's path ("h2d registered") and
// whether it is small (below 64 KiB, where fixed costs rule) or not.
class Scatter {
 public:
  void add(const std::string& path, bool small, double residual);
  // The variance of a copy of this kind about the model: its kind's if two fit copies or more
  // are of it, else its path's, else every fit copy's.
  double variance(const std::string& path, bool small) const;
  // How many fit copies that variance was estimated from.
  std::size_t copies(const std::string& path, bool small) const;

 private:
  struct Sum {
    double ss = 0;
    std::size_t n = 0;
  };
  static std::string kind(const std::string& path, bool small) { return path + (small ? " small" : " large"); }
  std::map<std::string, Sum> by_kind_, by_path_;
  Sum all_;
};

struct Linearised {
  std::vector<std::vector<double>> sensitivity;  // per fit copy: d ln(time) / d ln(parameter), per parameter
  std::vector<double> variance;                  // per fit copy: of its log error (Scatter)
};

struct Uncertainty {
  std::vector<std::vector<double>> covariance;  // of the parameters' logs; empty when not invertible
  bool determined() const noexcept { return !covariance.empty(); }
  // Standard error of parameter i's log (infinity when undetermined).
  double se_log(std::size_t i) const;
  // Variance of a prediction's log, for a copy with these sensitivities and its kind's scatter.
  double prediction_variance(const std::vector<double>& sensitivity, double scatter) const;
};

// From the fit copies' sensitivities and variances, with `parameters` columns.
Uncertainty estimate(const Linearised& fit, std::size_t parameters);

// The two-sided 90% quantile of Student's t with `df` degrees of freedom (1.645 for many): the
// multiplier of a standard deviation estimated from df + 1 copies, so that a kind the fit saw
// only a few copies of gets an interval as wide as that few allows.
double t90(std::size_t df);

}  // namespace spyre_dma::traces::detail
