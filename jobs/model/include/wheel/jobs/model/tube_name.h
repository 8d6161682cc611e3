// SPDX-License-Identifier: Apache-2.0
// The tube-name rule of beanstalkd 1.12, owned by the job model (the protocol's parser and the
// log's restore both check names against it): 1 to 200 bytes of A-Z a-z 0-9 - + / ; . $ _ ( ),
// not starting with '-'.
//
// Threads: pure, safe from any thread.
#pragma once

#include <cstddef>
#include <string_view>

namespace wheel::jobs {

// Longest tube name (beanstalkd's MAX_TUBE_NAME_LEN - 1).
inline constexpr std::size_t kMaxTubeNameBytes = 200;

// True if `name` is a tube name beanstalkd accepts (see above).
bool is_valid_tube_name(std::string_view name) noexcept;

}  // namespace wheel::jobs
