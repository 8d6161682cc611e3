// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::jobs: Overloaded{lambdas...}, one visitor for std::visit over a request
// variant from a lambda per alternative (the beanstalkd dispatchers).
#pragma once

namespace wheel {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace wheel
