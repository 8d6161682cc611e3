// SPDX-License-Identifier: Apache-2.0
#include "wheel/load/report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace wheel::load {
namespace {

constexpr int kWidth = 640;
constexpr int kHeight = 220;
constexpr int kLeft = 56;  // room for the y axis' labels
constexpr int kBottom = 36;
constexpr int kTop = 12;
constexpr int kPlotW = kWidth - kLeft - 12;
constexpr int kPlotH = kHeight - kTop - kBottom;
// Histogram bins: 5 per decade from 10 µs to 10^5 ms (a sample outside goes to the end bin).
constexpr int kPerDecade = 5;
constexpr double kLowestMs = 0.01;
constexpr int kBins = 7 * kPerDecade;

double bin_edge(int i) {
  return kLowestMs * std::pow(10.0, static_cast<double>(i) / kPerDecade);
}

int bin_of(double ms) {
  if (!(ms > kLowestMs)) return 0;  // also NaN
  const int i = static_cast<int>(std::floor(std::log10(ms / kLowestMs) * kPerDecade));
  return std::clamp(i, 0, kBins - 1);
}

std::string number(double v) {
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 1) return fmt::format("{:.3g}", v);
  return fmt::format("{:.2g}", v);
}

// An SVG histogram of `samples` (ms) on log-spaced bins, from the first bin with a sample to
// the last; `id` names the figure. "no samples" when there are none.
std::string histogram_svg(const std::string& id, const std::string& title,
                          const std::vector<double>& samples) {
  std::string out = fmt::format("<figure id=\"{}\"><figcaption>{} (n={})</figcaption>\n", id,
                                html_escape(title), samples.size());
  if (samples.empty()) return out + "<p class=\"none\">no samples</p></figure>\n";
  std::vector<std::uint64_t> bins(kBins, 0);
  for (const double s : samples) ++bins[static_cast<std::size_t>(bin_of(s))];
  int first = 0;
  while (bins[static_cast<std::size_t>(first)] == 0) ++first;
  int last = kBins - 1;
  while (bins[static_cast<std::size_t>(last)] == 0) --last;
  const std::uint64_t top = *std::max_element(bins.begin(), bins.end());
  const int shown = last - first + 1;
  const double w = static_cast<double>(kPlotW) / shown;
  out += fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">\n",
                     kWidth, kHeight, kWidth, kHeight);
  out += fmt::format("<text x=\"4\" y=\"{}\" class=\"axis\">{}</text>\n", kTop + 10, top);
  out += fmt::format("<text x=\"4\" y=\"{}\" class=\"axis\">0</text>\n", kTop + kPlotH);
  for (int i = first; i <= last; ++i) {
    const std::uint64_t n = bins[static_cast<std::size_t>(i)];
    const double h =
        static_cast<double>(kPlotH) * static_cast<double>(n) / static_cast<double>(top);
    const double x = kLeft + w * (i - first);
    out += fmt::format(
        "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\">"
        "<title>{} to {} ms: {}</title></rect>\n",
        x + 1, kTop + kPlotH - h, std::max(w - 2, 1.0), h, number(bin_edge(i)),
        number(bin_edge(i + 1)), n);
    if ((i - first) % 2 == 0 || shown < 12) {
      out += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"axis\">{}</text>\n", x,
                         kTop + kPlotH + 14, number(bin_edge(i)));
    }
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">ms (log bins, 5 per decade)</text>\n",
                     kLeft, kHeight - 4);
  return out + "</svg></figure>\n";
}

// Lines of connections open (active, idle, both) against the elapsed seconds.
std::string connections_svg(const std::vector<Progress>& timeline) {
  std::string out =
      "<figure id=\"connections\"><figcaption>Connections open over time</figcaption>\n";
  if (timeline.empty()) return out + "<p class=\"none\">no progress recorded</p></figure>\n";
  double end_s = 0;
  std::uint64_t top = 1;
  for (const Progress& p : timeline) {
    end_s = std::max(end_s, p.elapsed_s);
    top = std::max(top, p.active_open + p.idle_open);
  }
  if (end_s <= 0) end_s = 1;
  const auto x = [&](double s) { return kLeft + kPlotW * s / end_s; };
  const auto y = [&](std::uint64_t n) {
    return kTop + kPlotH - kPlotH * static_cast<double>(n) / static_cast<double>(top);
  };
  out += fmt::format("<svg viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">\n",
                     kWidth, kHeight, kWidth, kHeight);
  const struct {
    const char* cls;
    std::uint64_t (*of)(const Progress&);
  } lines[] = {
      {"open", [](const Progress& p) { return p.active_open + p.idle_open; }},
      {"active", [](const Progress& p) { return p.active_open; }},
      {"idle", [](const Progress& p) { return p.idle_open; }},
  };
  for (const auto& line : lines) {
    out += fmt::format("<polyline class=\"{}\" points=\"", line.cls);
    for (const Progress& p : timeline)
      out += fmt::format("{:.1f},{:.1f} ", x(p.elapsed_s), y(line.of(p)));
    out += "\"/>\n";
  }
  out += fmt::format("<text x=\"4\" y=\"{}\" class=\"axis\">{}</text>\n", kTop + 10, top);
  out += fmt::format("<text x=\"4\" y=\"{}\" class=\"axis\">0</text>\n", kTop + kPlotH);
  out +=
      fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\">0 s</text>\n", kLeft, kTop + kPlotH + 14);
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"end\">{} s</text>\n",
                     kLeft + kPlotW, kTop + kPlotH + 14, number(end_s));
  out += fmt::format(
      "<text x=\"{}\" y=\"{}\" class=\"axis\"><tspan class=\"open\">open</tspan> "
      "<tspan class=\"active\">active</tspan> <tspan class=\"idle\">idle</tspan></text>\n",
      kLeft, kHeight - 4);
  return out + "</svg></figure>\n";
}

constexpr const char* kStyle = R"(<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
.verdict { font-size: 1.4em; font-weight: bold; padding: .4em .8em; display: inline-block; }
.ok { background: #d9f2d9; color: #165c16; } .failed { background: #f8d7d7; color: #8a1111; }
pre { background: #f4f4f4; padding: 1em; overflow-x: auto; }
svg { max-width: 100%; height: auto; } .axis { font-size: 11px; fill: #555; }
rect.bar { fill: #3b75af; } polyline { fill: none; stroke-width: 2; }
polyline.open { stroke: #222; } polyline.active { stroke: #3b75af; } polyline.idle { stroke: #e08a2c; }
tspan.open { fill: #222; } tspan.active { fill: #3b75af; } tspan.idle { fill: #e08a2c; }
</style>)";

}  // namespace

ProgressTimeline::ProgressTimeline(std::size_t max_points)
    : max_points_(std::max<std::size_t>(max_points, 2)) {}

void ProgressTimeline::add(const Progress& p) {
  if (offered_++ % stride_ != 0) return;
  points_.push_back(p);
  if (points_.size() < max_points_) return;
  // Full: keep every other point, and from now on take every other offered one.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < points_.size(); i += 2) points_[kept++] = points_[i];
  points_.resize(kept);
  stride_ *= 2;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_html_report(const nlohmann::json& report, const std::string& summary,
                               const LoadResult& result, const std::vector<Progress>& timeline) {
  const bool ok = report.value("ok", false);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<title>wheel-load report</title>\n";
  out += kStyle;
  out += "\n</head><body>\n<h1>wheel-load report</h1>\n";
  out += fmt::format("<p id=\"verdict\" class=\"verdict {}\">{}</p>\n", ok ? "ok" : "failed",
                     ok ? "OK" : "FAILED");
  if (report.contains("failures") && report["failures"].is_array() && !report["failures"].empty()) {
    out += "<ul id=\"failures\">\n";
    for (const auto& f : report["failures"]) {
      out += "<li>" + html_escape(f.is_string() ? f.get<std::string>() : f.dump()) + "</li>\n";
    }
    out += "</ul>\n";
  }
  out += "<h2>Summary</h2>\n<pre id=\"summary\">" + html_escape(summary) + "</pre>\n";
  out += "<h2>Charts</h2>\n";
  out += histogram_svg("close-time", "Idle-close lateness, ms", result.idle_lateness_ms);
  out += histogram_svg("round-trip", "PING round trip, ms", result.rtt_ms);
  out += connections_svg(timeline);
  out += "<h2>The report as JSON</h2>\n<details><summary>show</summary><pre id=\"json\">" +
         html_escape(report.dump(2)) + "</pre></details>\n</body></html>\n";
  return out;
}

}  // namespace wheel::load
