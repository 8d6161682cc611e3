// SPDX-License-Identifier: Apache-2.0
// Test support: a strict parser of the Prometheus text exposition format 0.0.4, written from
// the format's rules (not from our writer), so that a test can check what a scrape returns.
// parse_exposition() throws std::runtime_error naming the line and the broken rule:
//   - lines end with '\n'; "# HELP name text" and "# TYPE name type" at most once per family,
//     TYPE before the family's first sample; other '#' lines are comments; empty lines ignored;
//   - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* (not
//     starting "__"), label values are double-quoted with only \\, \" and \n escapes; no label
//     name twice in a sample; values are Go floats (+Inf, -Inf, NaN included); an optional
//     integer timestamp;
//   - a family's samples are contiguous, and no series (name + labels) appears twice;
//   - a histogram family has, per label set, _bucket samples with strictly increasing "le"
//     ending with "+Inf", cumulative (non-decreasing) counts, the +Inf count equal to _count,
//     and a _sum; counters are not negative.
#pragma once

#include <cmath>
#include <cstddef>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace wheel::testing {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromFamily {
  std::string type = "untyped";
  std::string help;
  bool has_help = false;
  std::vector<PromSample> samples;
};

struct Exposition {
  std::map<std::string, PromFamily> families;
  // The value of the series `name` with exactly `labels`; throws when absent.
  double value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const {
    for (const auto& [family_name, family] : families) {
      for (const PromSample& s : family.samples) {
        if (s.name == name && s.labels == labels) return s.value;
      }
    }
    throw std::runtime_error("no series " + name);
  }
};

namespace detail {

// The format's own regular expression, written independently of the writer under test.
inline bool metric_name_ok(std::string_view n) {
  static const std::regex name("[a-zA-Z_:][a-zA-Z0-9_:]*");
  return std::regex_match(n.begin(), n.end(), name);
}

inline bool label_name_ok(std::string_view n) {
  return metric_name_ok(n) && n.find(':') == std::string_view::npos && n.rfind("__", 0) != 0;
}

inline double parse_float(const std::string& text) {
  if (text == "+Inf" || text == "Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  if (text == "NaN") return NAN;
  if (text.empty()) throw std::runtime_error("empty value");
  std::size_t used = 0;
  const double v = std::stod(text, &used);
  if (used != text.size()) throw std::runtime_error("bad value '" + text + "'");
  return v;
}

[[noreturn]] inline void fail(std::size_t line, const std::string& why) {
  throw std::runtime_error("line " + std::to_string(line) + ": " + why);
}

// The family a sample name belongs to, given the families announced so far.
inline std::string family_of(const std::string& name, const std::map<std::string, PromFamily>& f) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string_view s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      const auto it = f.find(base);
      if (it != f.end() && (it->second.type == "histogram" || it->second.type == "summary")) {
        return base;
      }
    }
  }
  return name;
}

}  // namespace detail

inline Exposition parse_exposition(const std::string& text) {
  using detail::fail;
  Exposition out;
  if (!text.empty() && text.back() != '\n') fail(0, "the text does not end with a newline");
  std::set<std::string> finished;  // families whose samples ended (another family began)
  std::set<std::string> series;
  std::set<std::string> typed, helped;
  std::string current;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    const auto switch_to = [&](const std::string& family) {
      if (family == current) return;
      if (finished.count(family) != 0) fail(line_no, "family " + family + " is not contiguous");
      if (!current.empty()) finished.insert(current);
      current = family;
    };
    if (line[0] == '#') {
      const bool help = line.rfind("# HELP ", 0) == 0;
      const bool type = line.rfind("# TYPE ", 0) == 0;
      if (!help && !type) continue;  // a comment
      const std::string rest = line.substr(7);
      const std::size_t sp = rest.find(' ');
      const std::string name = rest.substr(0, sp);
      const std::string arg = sp == std::string::npos ? "" : rest.substr(sp + 1);
      if (!detail::metric_name_ok(name)) fail(line_no, "bad metric name '" + name + "'");
      switch_to(name);
      PromFamily& f = out.families[name];
      if (help) {
        if (!helped.insert(name).second) fail(line_no, "second HELP for " + name);
        for (std::size_t i = 0; i < arg.size(); ++i) {
          if (arg[i] == '\\' && (i + 1 >= arg.size() || (arg[i + 1] != '\\' && arg[i + 1] != 'n')))
            fail(line_no, "bad escape in HELP");
          if (arg[i] == '\\') ++i;
        }
        f.help = arg;
        f.has_help = true;
      } else {
        if (!typed.insert(name).second) fail(line_no, "second TYPE for " + name);
        if (!f.samples.empty()) fail(line_no, "TYPE after samples of " + name);
        if (arg != "counter" && arg != "gauge" && arg != "histogram" && arg != "summary" &&
            arg != "untyped")
          fail(line_no, "bad type '" + arg + "'");
        f.type = arg;
      }
      continue;
    }
    // name{labels} value [timestamp]
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    PromSample s;
    s.name = line.substr(0, i);
    if (!detail::metric_name_ok(s.name)) fail(line_no, "bad metric name '" + s.name + "'");
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        std::size_t eq = line.find('=', i);
        if (eq == std::string::npos) fail(line_no, "label without '='");
        const std::string key = line.substr(i, eq - i);
        if (!detail::label_name_ok(key)) fail(line_no, "bad label name '" + key + "'");
        if (eq + 1 >= line.size() || line[eq + 1] != '"') fail(line_no, "unquoted label value");
        std::string value;
        std::size_t j = eq + 2;
        for (;; ++j) {
          if (j >= line.size()) fail(line_no, "unterminated label value");
          const char c = line[j];
          if (c == '"') break;
          if (c == '\\') {
            if (j + 1 >= line.size()) fail(line_no, "dangling backslash");
            const char e = line[++j];
            if (e == '\\')
              value += '\\';
            else if (e == '"')
              value += '"';
            else if (e == 'n')
              value += '\n';
            else
              fail(line_no, std::string("bad escape \\") + e);
          } else {
            value += c;
          }
        }
        if (!s.labels.emplace(key, value).second) fail(line_no, "label " + key + " twice");
        i = j + 1;
        if (i < line.size() && line[i] == ',')
          ++i;
        else if (i >= line.size() || line[i] != '}')
          fail(line_no, "expected ',' or '}'");
      }
      if (i >= line.size()) fail(line_no, "unterminated label set");
      ++i;  // '}'
    }
    if (i >= line.size() || line[i] != ' ') fail(line_no, "no space before the value");
    const std::string rest = line.substr(i + 1);
    const std::size_t sp = rest.find(' ');
    s.value = detail::parse_float(rest.substr(0, sp));
    if (sp != std::string::npos) {
      const std::string ts = rest.substr(sp + 1);
      if (ts.empty() || ts.find_first_not_of("-0123456789") != std::string::npos)
        fail(line_no, "bad timestamp '" + ts + "'");
    }
    const std::string family = detail::family_of(s.name, out.families);
    switch_to(family);
    PromFamily& f = out.families[family];
    if (f.type == "counter" && s.value < 0) fail(line_no, "negative counter");
    std::string key = s.name + "{";
    for (const auto& [k, v] : s.labels) key += k + "=\"" + v + "\",";
    if (!series.insert(key).second) fail(line_no, "series twice: " + key + "}");
    f.samples.push_back(std::move(s));
  }
  // Histograms: per label set (without "le").
  for (const auto& [name, f] : out.families) {
    if (f.type != "histogram") continue;
    struct Series {
      std::vector<std::pair<double, double>> buckets;
      bool has_sum = false, has_count = false;
      double count = 0;
    };
    std::map<std::map<std::string, std::string>, Series> by_labels;
    for (const PromSample& s : f.samples) {
      std::map<std::string, std::string> labels = s.labels;
      if (s.name == name + "_bucket") {
        const auto le = labels.find("le");
        if (le == labels.end()) fail(0, name + "_bucket without le");
        const double bound = detail::parse_float(le->second);
        labels.erase(le);
        by_labels[labels].buckets.emplace_back(bound, s.value);
      } else if (s.name == name + "_sum") {
        by_labels[labels].has_sum = true;
      } else if (s.name == name + "_count") {
        by_labels[labels].has_count = true;
        by_labels[labels].count = s.value;
      } else {
        fail(0, "histogram " + name + " has a sample " + s.name);
      }
    }
    if (by_labels.empty()) fail(0, "histogram " + name + " without samples");
    for (const auto& [labels, h] : by_labels) {
      if (h.buckets.empty() || !std::isinf(h.buckets.back().first))
        fail(0, name + ": the last bucket is not +Inf");
      for (std::size_t k = 1; k < h.buckets.size(); ++k) {
        if (!(h.buckets[k].first > h.buckets[k - 1].first)) fail(0, name + ": le not increasing");
        if (h.buckets[k].second < h.buckets[k - 1].second)
          fail(0, name + ": buckets not cumulative");
      }
      if (!h.has_sum || !h.has_count) fail(0, name + ": no _sum or _count");
      if (h.buckets.back().second != h.count) fail(0, name + ": +Inf bucket != _count");
    }
  }
  return out;
}

}  // namespace wheel::testing
