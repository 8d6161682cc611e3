// SPDX-License-Identifier: Apache-2.0
// The bucket bounds of wheel-server's histograms. The histogram itself is wheel::MetricsHistogram
// (wheel/metrics_histogram.h), shared with wheel::jobs; named here too for the server's code.
#pragma once

#include <array>

#include "wheel/metrics_histogram.h"

namespace wheel::server {

// Upper bounds (seconds) of wheel_idle_close_lateness_seconds: ms-scale, as idle closes come
// within about one tick of their due time (1 ms default tick, up to 100 ms ticks and stalls).
inline constexpr std::array<double, 13> kIdleCloseLatenessBounds = {
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10};
// Upper bounds (seconds) of wheel_timer_tick_lag_seconds: sub-millisecond (a prompt worker)
// to seconds (a starved machine).
inline constexpr std::array<double, 15> kTickLagBounds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

using wheel::HistogramCounts;
using wheel::MetricsHistogram;

}  // namespace wheel::server
