// SPDX-License-Identifier: Apache-2.0
// Given to every compile of the project with -include (CMakeLists.txt): fmt 9 (Debian 12's
// libfmt, which spdlog uses) declares no extern template for detail::vformat_to<char>, so each
// file that logs instantiated the whole formatter (integers, floats, dragonbox: ~80 KB of code)
// and compiled it again: 3 s of CPU per file at -O2, 7 s under ASan+UBSan. libfmt.so already
// holds that instantiation (fmt's format.cc makes it), so declaring it extern here lets every
// file call that one. Only when fmt is a compiled library (spdlog with SPDLOG_FMT_EXTERNAL, fmt
// not header-only) and is version 9, whose declaration this repeats; otherwise it does nothing.
#pragma once

#if defined(SPDLOG_FMT_EXTERNAL) && !defined(FMT_HEADER_ONLY) && __has_include(<fmt/core.h>)
#include <fmt/core.h>
#if FMT_VERSION >= 90000 && FMT_VERSION < 100000
namespace fmt {
inline namespace v9 {
namespace detail {
extern template void vformat_to<char>(buffer<char>&, basic_string_view<char>,
                                      basic_format_args<buffer_context<char>>, locale_ref);
}  // namespace detail
}  // namespace v9
}  // namespace fmt
#endif
#endif
