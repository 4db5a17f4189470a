// Range checks for the command line's numbers. CLI11's own Range and PositiveNumber let NaN
// through (every comparison with it is false) and PositiveNumber lets infinity through; every
// floating-point option uses these instead.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>

namespace spyre_dma_cli {

// A finite number in [min, max]; the message names the value and the range.
CLI::Validator finite_range(double min, double max);

// A list of transfer sizes (size_spec.hpp's parse_size_list), checked as the command line is read.
CLI::Validator size_list();
// One size (parse_size), checked as the command line is read: a bad one is a usage error naming
// the option, not an exception out of the option's callback.
CLI::Validator size_value();

// Every option of `app` and its subcommands that holds an unsigned number (CLI11's type UINT)
// refuses a negative value as a usage error naming the option: converted, "-1" would wrap to the
// largest value (a seed, a count, a size) instead of being refused.
void refuse_negative_unsigned(CLI::App& app);

// A --timeout in seconds: finite, at least a millisecond, at most a week.
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600.0;
CLI::Validator timeout_seconds();

// A checked --timeout as a duration (exact: a week of nanoseconds fits with room to spare).
std::chrono::nanoseconds to_timeout(double seconds);

}  // namespace spyre_dma_cli
