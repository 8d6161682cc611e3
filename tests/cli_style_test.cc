// SPDX-License-Identifier: Apache-2.0
// The shared command-line style (apps/common/cli_style.h): plain messages naming the option,
// ranges in plain numbers, plain type names in --help, exit 2 on errors.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "cli_style.h"

namespace {

struct Parsed {
  std::optional<int> exit_status;
  std::string message;  // plain_message of the error, if any
};

// Parses `args` (after the program name) into `app`: the exit status and plain message of an
// error, if any.
Parsed parse_args(CLI::App& app, std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  Parsed p;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    p.message = wheel::cli::plain_message(app, e);
    p.exit_status = 2;
  }
  return p;
}

// A small program in the style: --port N in 1..65535, --ratio NUMBER in 0..1, --rate above 0,
// --level one of a, b, --name TEXT, a flag.
class CliStyle : public testing::Test {
 protected:
  CliStyle() {
    wheel::cli::apply_style(app_);
    app_.add_option("--port", port_, "port")->check(wheel::cli::integer_range(1, 65535));
    app_.add_option("--ratio", ratio_, "ratio")->check(wheel::cli::number_range(0, 1));
    app_.add_option("--rate", rate_, "rate")->check(wheel::cli::positive_number(1000));
    app_.add_option("--level", level_, "level")->check(wheel::cli::one_of({"a", "b"}));
    app_.add_option("--name", name_, "name")->capture_default_str();
    app_.add_flag("--verbose", verbose_, "talk more");
  }

  Parsed parse(std::vector<std::string> args) { return parse_args(app_, std::move(args)); }

  CLI::App app_{"test program"};
  int port_ = 7000;
  double ratio_ = 0.5, rate_ = 10;
  std::string level_ = "a", name_ = "x";
  bool verbose_ = false;
};

}  // namespace

TEST_F(CliStyle, GoodValuesParse) {
  EXPECT_EQ(parse({"--port", "65535", "--ratio", "0", "--rate", "0.5", "--level", "b"}).message,
            "");
  EXPECT_EQ(port_, 65535);
  EXPECT_EQ(level_, "b");
}

TEST_F(CliStyle, IntegerRangeNamesOptionAndPlainRange) {
  EXPECT_EQ(parse({"--port", "0"}).message,
            "--port: must be a whole number from 1 to 65535, got '0'");
  EXPECT_EQ(parse({"--port", "abc"}).message,
            "--port: must be a whole number from 1 to 65535, got 'abc'");
  EXPECT_EQ(parse({"--port", "99999999999999999999999"}).exit_status, 2);
}

TEST_F(CliStyle, NumberRangesArePlainNumbers) {
  EXPECT_EQ(parse({"--ratio", "1.5"}).message, "--ratio: must be a number from 0 to 1, got '1.5'");
  EXPECT_EQ(parse({"--rate", "0"}).message,
            "--rate: must be a number above 0 and at most 1000, got '0'");
}

TEST_F(CliStyle, OneOfListsTheChoices) {
  EXPECT_EQ(parse({"--level", "c"}).message, "--level: must be one of a, b, got 'c'");
}

TEST_F(CliStyle, RepeatedOptionIsSaidInPlainWords) {
  const Parsed p = parse({"--port", "1", "--port", "2"});
  EXPECT_EQ(p.exit_status, 2);
  EXPECT_EQ(p.message, "--port: given 2 times; give it once");
}

TEST_F(CliStyle, MissingValueAndStrayArgumentsAreSaidInPlainWords) {
  EXPECT_EQ(parse({"--port"}).message, "--port: needs a value");
  EXPECT_EQ(parse({"extra"}).message, "unexpected argument(s): extra");
}

TEST_F(CliStyle, StrayWordsAreListedInTheOrderGiven) {
  EXPECT_EQ(parse({"one", "two", "three"}).message, "unexpected argument(s): one two three");
}

TEST_F(CliStyle, MistypedOptionSuggestsTheClosestOne) {
  const Parsed p = parse({"--prot", "11300"});
  EXPECT_EQ(p.exit_status, 2);
  EXPECT_EQ(p.message, "unexpected argument(s): --prot 11300; did you mean --port?");
  EXPECT_EQ(parse({"--prot=11300"}).message,
            "unexpected argument(s): --prot=11300; did you mean --port?");
  EXPECT_EQ(parse({"--port", "1", "--verbsoe"}).message,
            "unexpected argument(s): --verbsoe; did you mean --verbose?");
  EXPECT_EQ(parse({"--prot", "1", "--nmae", "x"}).message,
            "unexpected argument(s): --prot 1 --nmae x; did you mean --port for --prot, --name for "
            "--nmae?");
}

TEST_F(CliStyle, NothingCloseMeansNoSuggestion) {
  EXPECT_EQ(parse({"--frobnicate", "3"}).message, "unexpected argument(s): --frobnicate 3");
  EXPECT_EQ(parse({"-q"}).message, "unexpected argument(s): -q");
}

TEST(CliStyleSuggest, ClosestNameCountsSlipsAndRefusesFarOnes) {
  const std::vector<std::string> names = {"--port", "--ports", "--log-level", "--log-format", "-p"};
  EXPECT_EQ(wheel::cli::closest_name("--prot", names), "--port");
  EXPECT_EQ(wheel::cli::closest_name("--por", names), "--port");
  EXPECT_EQ(wheel::cli::closest_name("--log-levle", names), "--log-level");
  EXPECT_EQ(wheel::cli::closest_name("--log-formt", names), "--log-format");
  EXPECT_EQ(wheel::cli::closest_name("--port", names), "--ports");  // itself is no suggestion
  EXPECT_EQ(wheel::cli::closest_name("--x", names), "");
  EXPECT_EQ(wheel::cli::closest_name("--listen", names), "");
  EXPECT_EQ(wheel::cli::closest_name("--prot", {}), "");
}

TEST(CliStyleSuggest, SubcommandOptionsAreSuggestedAfterTheSubcommand) {
  CLI::App app{"t"};
  wheel::cli::apply_style(app);
  app.require_subcommand(1);
  int rate = 0, port = 0;
  app.add_subcommand("run", "run")->add_option("--rate", rate, "rate");
  app.add_subcommand("compare", "compare")->add_option("--port", port, "port");
  EXPECT_EQ(parse_args(app, {"run", "--rtae", "5"}).message,
            "unexpected argument(s): --rtae 5; did you mean --rate?");
  // No subcommand given: the missing one is a mistyped word, and the message says so.
  EXPECT_EQ(parse_args(app, {"rnu", "--rate", "5"}).message,
            "unexpected argument(s): rnu --rate 5; did you mean run?");
}

TEST(CliStyleSuggest, AMistypedRequiredOptionIsNamedNotCalledMissing) {
  CLI::App app{"t"};
  wheel::cli::apply_style(app);
  std::string path;
  wheel::cli::add_existing_file(app, "--server", path, "the server program");
  const Parsed p = parse_args(app, {"--sever", "/bin/sh"});
  EXPECT_EQ(p.exit_status, 2);
  EXPECT_EQ(p.message, "unexpected argument(s): --sever /bin/sh; did you mean --server?");
  EXPECT_NE(parse_args(app, {}).message.find("--server"), std::string::npos);  // still required
}

TEST(CliStyleSuggest, TheProgramExitsTwoWithTheSuggestion) {
  CLI::App app{"t"};
  wheel::cli::apply_style(app);
  int port = 0;
  app.add_option("--port", port, "port");
  std::vector<std::string> args = {"prog", "--prot", "11300"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  testing::internal::CaptureStderr();
  EXPECT_EQ(wheel::cli::parse_command_line(app, 3, argv.data(), "prog"), 2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "prog: unexpected argument(s): --prot 11300; did you mean --port?\n"
            "Run with --help for more information.\n");
}

TEST_F(CliStyle, HelpShowsPlainTypeNamesAndDefaults) {
  const std::string help = app_.help();
  EXPECT_NE(help.find("--port N "), std::string::npos) << help;
  EXPECT_NE(help.find("--ratio NUMBER "), std::string::npos) << help;
  EXPECT_NE(help.find("--name TEXT "), std::string::npos) << help;
  EXPECT_NE(help.find("name (default x)"), std::string::npos) << help;
  EXPECT_EQ(help.find("--verbose TEXT"), std::string::npos) << help;
  EXPECT_EQ(help.find("INT"), std::string::npos) << help;
  EXPECT_EQ(help.find("FLOAT"), std::string::npos) << help;
  EXPECT_EQ(help.find("in ["), std::string::npos) << help;
}

TEST(CliStyleParse, ExistingFileIsRequiredAndMustExist) {
  CLI::App app{"t"};
  wheel::cli::apply_style(app);
  std::string path;
  wheel::cli::add_existing_file(app, "--server", path, "the server program");
  EXPECT_NE(app.help().find("--server FILE "), std::string::npos) << app.help();
  EXPECT_EQ(parse_args(app, {}).exit_status, 2);
  const Parsed missing = parse_args(app, {"--server", "/nonexistent/wheel-server"});
  EXPECT_EQ(missing.exit_status, 2);
  EXPECT_NE(missing.message.find("--server"), std::string::npos) << missing.message;
  CLI::App again{"t"};
  wheel::cli::apply_style(again);
  wheel::cli::add_existing_file(again, "--server", path, "the server program");
  EXPECT_EQ(parse_args(again, {"--server", "/bin/sh"}).exit_status, std::nullopt);
  EXPECT_EQ(path, "/bin/sh");
}

TEST(CliStyleParse, HelpExitsZeroErrorsExitTwo) {
  CLI::App app{"t"};
  wheel::cli::apply_style(app);
  int n = 0;
  app.add_option("--n", n, "n")->check(wheel::cli::integer_range(1, 2));
  std::vector<std::string> bad = {"prog", "--n", "3"};
  std::vector<char*> argv;
  for (auto& a : bad) argv.push_back(a.data());
  testing::internal::CaptureStderr();
  EXPECT_EQ(wheel::cli::parse_command_line(app, 3, argv.data(), "prog"), 2);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("prog: --n: must be a whole number from 1 to 2, got '3'"), std::string::npos)
      << err;

  CLI::App ok{"t"};
  wheel::cli::apply_style(ok);
  std::vector<std::string> none = {"prog"};
  char* argv0[] = {none[0].data()};
  EXPECT_EQ(wheel::cli::parse_command_line(ok, 1, argv0, "prog"), std::nullopt);
}

TEST(CliStyleParse, VersionFlagPrintsProgramAndVersionAndExitsZero) {
  CLI::App app{"t"};
  wheel::cli::apply_style(app, "prog", "1.2.3");
  std::vector<std::string> args = {"prog", "--version"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  EXPECT_EQ(wheel::cli::parse_command_line(app, 2, argv.data(), "prog"), 0);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "prog 1.2.3\n");
  const std::string help = app.help();
  EXPECT_NE(help.find("--version"), std::string::npos) << help;
  EXPECT_NE(help.find("print the version and exit"), std::string::npos) << help;
}
