// SPDX-License-Identifier: Apache-2.0
// One command-line style for the wheeltimer programs, on top of CLI11: plain type names in
// --help ("N", "NUMBER", "DURATION", "TEXT"; defaults as "(default X)"), range errors that name
// the option and the range in plain numbers, and CLI11's own errors ("At Most 1 required but
// received 2", "1 required INT missing") rewritten in plain words. Errors exit 2.
//
// Adopting it: call apply_style(app, program, version) before adding options, check ranges with
// integer_range / number_range / one_of instead of CLI::Range / CLI::PositiveNumber /
// CLI::IsMember, and parse with parse_command_line.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wheel::cli {

// Type names for option values, the same in every program.
inline constexpr const char* kTypeCount = "N";            // a whole number
inline constexpr const char* kTypeNumber = "NUMBER";      // a decimal number
inline constexpr const char* kTypeDuration = "DURATION";  // 500ms, 30s, 5m, 1h or 0
inline constexpr const char* kTypeText = "TEXT";
inline constexpr const char* kTypeAddress = "ADDRESS";  // a host name or numeric address
inline constexpr const char* kTypeFile = "FILE";
inline constexpr const char* kTypeLevel = "LEVEL";

// Installs the formatter on `app` and makes a repeated single-value option an error.
void apply_style(CLI::App& app);
// The same, and a --version flag that prints "<program> <version>" and exits 0: how every program
// of the project starts its command line.
void apply_style(CLI::App& app, std::string_view program, std::string_view version);

// A whole number from lo to hi (inclusive): "must be a whole number from 1 to 65535, got '0'".
CLI::Validator integer_range(std::int64_t lo, std::int64_t hi);
// A decimal number from lo to hi (inclusive), the bounds printed as plain numbers ("0 to 1").
CLI::Validator number_range(double lo, double hi);
// A decimal number above 0 and at most hi: "must be a number above 0 and at most 100000".
CLI::Validator positive_number(double hi);
// One of `choices`: "must be one of trace, debug, info, got 'x'".
CLI::Validator one_of(std::vector<std::string> choices);

// A required option naming a file that must exist, such as a program to run ("--server FILE"):
// its value goes into `path`; a missing or non-existent one exits 2 naming the option.
CLI::Option* add_existing_file(CLI::App& app, const std::string& name, std::string& path,
                               const std::string& help);

// --log-level (trace ... off) into `level` and --log-format (text or json) into `format`, with
// the same text and checks in every program; their defaults are the strings' values.
void add_logging_options(CLI::App& app, std::string& level, std::string& format);

// The message a user sees for `error`, in plain words, naming the option ("--port: ..."); stray
// words in the order given, with the closest option for a mistyped one ("unexpected
// argument(s): --prot 11300; did you mean --port?").
// `app` is the parsed app (to find which option was repeated).
std::string plain_message(const CLI::App& app, const CLI::ParseError& error);

// The name in `names` closest to the mistyped `word` ("--prot" -> "--port"), counting a swap of
// two neighbouring letters as one slip; empty when none is within two slips and a third of the
// word's letters, or `word` is itself one of `names`. Safe from any thread.
std::string closest_name(std::string_view word, const std::vector<std::string>& names);

// Parses argv into `app`. Returns std::nullopt when the program should go on; otherwise the
// exit status: 0 after printing --help, 2 after printing "<program>: <plain message>" and a
// pointer to --help on stderr.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv,
                                      std::string_view program);

}  // namespace wheel::cli
