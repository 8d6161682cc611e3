// SPDX-License-Identifier: Apache-2.0
#include "cli_style.h"

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

}  // namespace

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
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    return "unexpected argument(s):" + what.substr(what.rfind(':') + 1);
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
