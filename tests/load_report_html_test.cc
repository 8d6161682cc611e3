// SPDX-License-Identifier: Apache-2.0
// wheel-load's HTML report (load/report_html.h): escaping, the three figures, the verdict, and
// the bounded progress timeline.
#include <gtest/gtest.h>

#include <wheel/load/load_config.h>
#include <wheel/load/load_result.h>
#include <wheel/load/report.h>
#include <wheel/load/report_html.h>
#include <nlohmann/json.hpp>
#include <string>

namespace wheel::load {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

LoadResult sample_result() {
  LoadResult r;
  r.connections_requested = r.connections_established = 10;
  r.active_count = r.active_survived = 4;
  r.idle_count = r.idle_closed_on_time = 6;
  r.idle_lateness_ms = {1.5, 1.6, 2, 30, 30.5, 400};
  r.rtt_ms = {0.2, 0.21};
  r.duration_s = 4;
  return r;
}

std::vector<Progress> sample_timeline() {
  std::vector<Progress> t;
  for (int s = 0; s <= 4; ++s) {
    Progress p;
    p.elapsed_s = s;
    p.active_open = 4;
    p.idle_open = s < 3 ? 6 : 0;
    t.push_back(p);
  }
  return t;
}

TEST(LoadReportHtml, EscapesEveryMarkupCharacter) {
  EXPECT_EQ(html_escape("<img src=x onerror='a()'> & \"q\""),
            "&lt;img src=x onerror=&#39;a()&#39;&gt; &amp; &quot;q&quot;");
  EXPECT_EQ(html_escape("plain"), "plain");
}

TEST(LoadReportHtml, TextFromTheRunIsShownAsText) {
  nlohmann::json report = {
      {"ok", false}, {"failures", {"<script>alert(1)</script> broke"}}, {"host", "</pre><b>x"}};
  const std::string html =
      format_html_report(report, "summary <i>line</i>\n", sample_result(), sample_timeline());
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<i>line"), std::string::npos);
  EXPECT_EQ(html.find("<b>x"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; broke"), std::string::npos);
  EXPECT_NE(html.find("summary &lt;i&gt;line&lt;/i&gt;"), std::string::npos);
  EXPECT_NE(html.find("class=\"verdict failed\">FAILED<"), std::string::npos);
}

TEST(LoadReportHtml, HasTheThreeFiguresAndTheVerdict) {
  LoadConfig config;
  config.expect_idle_close = std::chrono::milliseconds(1000);
  const LoadResult r = sample_result();
  const nlohmann::json report = make_report(r, config);
  ASSERT_TRUE(report["ok"].get<bool>()) << report.dump();
  const std::string html = format_html_report(report, format_summary(report), r, sample_timeline());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("class=\"verdict ok\">OK<"), std::string::npos);
  EXPECT_EQ(count(html, "<svg "), 3u);
  EXPECT_NE(html.find("<figure id=\"close-time\">"), std::string::npos);
  EXPECT_NE(html.find("<figure id=\"round-trip\">"), std::string::npos);
  EXPECT_NE(html.find("<figure id=\"connections\">"), std::string::npos);
  // Self-contained: nothing fetched.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);

  // The close-time histogram: 5 bins per decade from the bin of 1.5 ms (1.0 to 1.58) to that of
  // 400 ms (398 to 631): 14 bars, empty ones too; 1.6 and 2 share one, as 30 and 30.5 do.
  const std::size_t close_at = html.find("id=\"close-time\"");
  const std::size_t rtt_at = html.find("id=\"round-trip\"");
  const std::string close = html.substr(close_at, rtt_at - close_at);
  EXPECT_NE(close.find("(n=6)"), std::string::npos);
  EXPECT_EQ(count(close, "<rect class=\"bar\""), 14u);
  EXPECT_EQ(count(close, " ms: 2</title>"), 2u);
  EXPECT_EQ(count(close, " ms: 1</title>"), 2u);
  std::uint64_t total = 0;
  for (auto at = close.find(" ms: "); at != std::string::npos; at = close.find(" ms: ", at + 1))
    total += std::stoull(close.substr(at + 5));
  EXPECT_EQ(total, 6u);
  const std::string rtt = html.substr(rtt_at, html.find("id=\"connections\"") - rtt_at);
  EXPECT_EQ(count(rtt, "<rect class=\"bar\""), 1u) << "0.2 and 0.21 in one bin";
  EXPECT_NE(rtt.find("ms: 2</title>"), std::string::npos);

  // Connections: three lines of five points each, the idle line dropping to 0 at 3 s.
  const std::string conn = html.substr(html.find("id=\"connections\""));
  EXPECT_EQ(count(conn, "<polyline "), 3u);
  EXPECT_NE(conn.find(">10</text>"), std::string::npos) << "the peak labels the y axis";
  EXPECT_NE(conn.find(">4 s</text>"), std::string::npos);
}

TEST(LoadReportHtml, NoSamplesSayNoSamples) {
  LoadResult r;
  const std::string html = format_html_report({{"ok", true}}, "", r, {});
  EXPECT_EQ(count(html, "no samples"), 2u);
  EXPECT_EQ(count(html, "no progress recorded"), 1u);
  EXPECT_EQ(count(html, "<svg "), 0u);
}

TEST(LoadReportHtml, TimelineStaysBoundedAndEvenlySpread) {
  ProgressTimeline t(8);
  for (int s = 0; s < 1000; ++s) {
    Progress p;
    p.elapsed_s = s;
    t.add(p);
  }
  ASSERT_LE(t.points().size(), 8u);
  ASSERT_GE(t.points().size(), 4u);
  EXPECT_EQ(t.points().front().elapsed_s, 0);
  const double step = t.points()[1].elapsed_s - t.points()[0].elapsed_s;
  for (std::size_t i = 1; i < t.points().size(); ++i)
    EXPECT_EQ(t.points()[i].elapsed_s - t.points()[i - 1].elapsed_s, step);
}

}  // namespace
}  // namespace wheel::load
