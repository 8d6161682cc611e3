// SPDX-License-Identifier: Apache-2.0
#include "cli_style.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace wheel::cli {
namespace {

// Shortest text that reads back as `v`: 1 not 1.000000, 0.25 not 2.5e-01 when it fits.
std::string plain_number(double v) {
  std::ostringstream out;
  out.precision(15);
  out << v;
  return out.str();
}

class PlainFormatter : public CLI::Formatter {
 public:
  PlainFormatter() { column_width(32); }

  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_type_size() == 0) return {};  // a flag
    std::string type = opt->get_type_name();
    if (type == "INT" || type == "UINT") type = kTypeCount;
    if (type == "FLOAT") type = kTypeNumber;
    return type.empty() ? std::string() : " " + type;
  }

  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string desc = opt->get_description();
    if (!opt->get_default_str().empty()) desc += " (default " + opt->get_default_str() + ")";
    return desc;
  }
};

// Edit distance with adjacent transpositions (optimal string alignment): "--prot" is one step
// from "--port", as a typist sees it.
std::size_t typo_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// Every name a user could have meant: the options of `app` and of the subcommands it parsed
// ("--port", "-p") into `options`, and while none was given, its subcommands' names.
void collect_names(const CLI::App& app, std::vector<std::string>& options,
                   std::vector<std::string>& subcommands) {
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& l : opt->get_lnames()) options.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) options.push_back("-" + s);
  }
  const bool none_given = app.get_subcommands().empty();
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name().empty() || sub->parsed()) collect_names(*sub, options, subcommands);
    if (!sub->get_name().empty() && none_given) subcommands.push_back(sub->get_name());
  }
}

// "unexpected argument(s): --prot 11300; did you mean --port?": the stray words in the order
// given (CLI11's own message lists them backwards), and the closest name for each mistyped one.
std::string unexpected_message(const CLI::App& app, const std::string& what) {
  std::vector<std::string> words = app.remaining(true);
  if (words.empty()) {  // not left in the app: CLI11's message holds them, last first
    std::istringstream in(what.substr(what.rfind(':') + 1));
    for (std::string w; in >> w;) words.insert(words.begin(), w);
  }
  std::vector<std::string> options, subcommands;
  collect_names(app, options, subcommands);
  std::string message = "unexpected argument(s):";
  std::vector<std::pair<std::string, std::string>> guesses;  // word, suggestion
  for (const std::string& w : words) {
    message += " " + w;
    const bool option = w.size() > 1 && w[0] == '-';
    // A bare word is a value, or a mistyped subcommand if it comes first.
    if (!option && (w != words.front() || subcommands.empty())) continue;
    const std::string name = option ? w.substr(0, w.find('=')) : w;
    if (std::string guess = closest_name(name, option ? options : subcommands); !guess.empty()) {
      guesses.emplace_back(name, std::move(guess));
    }
  }
  if (guesses.size() == 1) return message + "; did you mean " + guesses[0].second + "?";
  for (std::size_t i = 0; i < guesses.size(); ++i) {
    message += (i == 0 ? "; did you mean " : ", ") + guesses[i].second + " for " + guesses[i].first;
  }
  return guesses.empty() ? message : message + "?";
}

}  // namespace

std::string closest_name(std::string_view word, const std::vector<std::string>& names) {
  const std::size_t letters = word.size() - std::min(word.find_first_not_of('-'), word.size());
  std::string best;
  std::size_t best_distance = 0;
  for (const std::string& n : names) {
    const std::size_t d = typo_distance(word, n);
    if (d == 0 || (!best.empty() && d >= best_distance)) continue;
    best = n;
    best_distance = d;
  }
  // At most two slips, and fewer than a third of the letters: "--x" is no typo of "--n".
  if (best.empty() || best_distance > 2 || 3 * best_distance > letters + 1) return {};
  return best;
}

void apply_style(CLI::App& app) {
  app.formatter(std::make_shared<PlainFormatter>());
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
}

void apply_style(CLI::App& app, std::string_view program, std::string_view version) {
  apply_style(app);
  app.set_version_flag("--version", std::string(program) + " " + std::string(version),
                       "print the version and exit");
}

CLI::Validator integer_range(std::int64_t lo, std::int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        std::int64_t v = 0;
        const bool number = CLI::detail::lexical_cast(text, v);
        if (number && v >= lo && v <= hi) return {};
        return "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) +
               ", got '" + text + "'";
      },
      "");
}

CLI::Validator number_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0;
        const bool number = CLI::detail::lexical_cast(text, v);
        if (number && v >= lo && v <= hi) return {};
        return "must be a number from " + plain_number(lo) + " to " + plain_number(hi) + ", got '" +
               text + "'";
      },
      "");
}

CLI::Validator positive_number(double hi) {
  return CLI::Validator(
      [hi](std::string& text) -> std::string {
        double v = 0;
        const bool number = CLI::detail::lexical_cast(text, v);
        if (number && v > 0 && v <= hi) return {};
        return "must be a number above 0 and at most " + plain_number(hi) + ", got '" + text + "'";
      },
      "");
}

CLI::Validator one_of(std::vector<std::string> choices) {
  return CLI::Validator(
      [choices](std::string& text) -> std::string {
        std::string list;
        for (const auto& c : choices) {
          if (c == text) return {};
          list += (list.empty() ? "" : ", ") + c;
        }
        return "must be one of " + list + ", got '" + text + "'";
      },
      "");
}

std::string plain_message(const CLI::App& app, const CLI::ParseError& error) {
  const std::string what = error.what();
  const auto colon = what.find(": ");
  const std::string name = colon == std::string::npos ? std::string() : what.substr(0, colon);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    for (const CLI::Option* opt : app.get_options()) {
      if (opt->get_expected_max() == 1 && opt->count() > 1) {
        return opt->get_name() + ": given " + std::to_string(opt->count()) + " times; give it once";
      }
    }
    if (what.ends_with(" missing")) return name + ": needs a value";
  }
  // A stray word explains a missing one ("--sever x" leaves --server missing): it comes first.
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr ||
      (dynamic_cast<const CLI::RequiredError*>(&error) != nullptr &&
       !app.remaining(true).empty())) {
    return unexpected_message(app, what);
  }
  return what;
}

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv,
                                      std::string_view program) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%.*s: %s\nRun with --help for more information.\n",
                 static_cast<int>(program.size()), program.data(), plain_message(app, e).c_str());
    return 2;
  }
}

CLI::Option* add_existing_file(CLI::App& app, const std::string& name, std::string& path,
                               const std::string& help) {
  // Without its description, or --help would read "FILE:FILE".
  CLI::Validator exists = CLI::ExistingFile;
  exists.description("");
  return app.add_option(name, path, help)->type_name(kTypeFile)->required()->check(exists);
}

void add_logging_options(CLI::App& app, std::string& level, std::string& format) {
  app.add_option("--log-level", level, "trace, debug, info, warn, error, critical or off")
      ->type_name(kTypeLevel)
      ->check(one_of({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--log-format", format,
                 "text (human-readable) or json (one object per line: time, level, worker, "
                 "message, fields)")
      ->type_name(kTypeText)
      ->check(one_of({"text", "json"}))
      ->capture_default_str();
}

}  // namespace wheel::cli
