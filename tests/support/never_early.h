// SPDX-License-Identifier: Apache-2.0
// Test support: "no deadline ends early", checked on a real server against the wall clock of the
// test itself (steady_clock). Each try starts the clock before sending the request that starts a
// deadline of `asked` and stops it once the answer that ends it has arrived, so the server's
// deadline lies inside the measured span: a span shorter than `asked` is a deadline that ended
// early. Only that is checked, never that anything is prompt (every read is bounded by the
// session's timeout, seconds). Four kinds, `tries` each, one after another on two connections:
// a put's delay (then a reserve gets it), pause-tube (then a reserve gets the tube's ready job),
// reserve-with-timeout (TIMED_OUT), and a TTR (another session's reserve gets the job back; in
// the first `ttr_tries` only).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "beanstalk_session.h"

namespace wheel_test {

// The tries that ended early or answered wrongly, one line each ("delay try 7: 4.81 ms"); empty
// when every deadline ended no earlier than `asked`. `asked` is written with three decimals
// (wheel-jobs' decimal durations), e.g. "0.005".
inline std::vector<std::string> early_deadlines(int port, int tries, const std::string& asked,
                                                int ttr_tries) {
  using Clock = std::chrono::steady_clock;
  const auto asked_span = std::chrono::milliseconds(std::stoi(asked.substr(2)));
  std::vector<std::string> bad;
  BeanstalkSession a(port), b(port);
  for (BeanstalkSession* s : {&a, &b}) {
    s->call("use never-early");
    s->call("watch never-early");
    s->call("ignore default");
  }
  auto check = [&](const char* kind, int i, Clock::time_point start, const std::string& reply,
                   const std::string& want) {
    const auto took = Clock::now() - start;
    if (reply.rfind(want, 0) != 0) {
      bad.push_back(std::string(kind) + " try " + std::to_string(i) + ": " + reply);
    } else if (took < asked_span) {
      bad.push_back(std::string(kind) + " try " + std::to_string(i) + ": " +
                    std::to_string(std::chrono::duration<double, std::milli>(took).count()) +
                    " ms");
    }
  };
  auto id_of = [](const std::string& reply) {  // "RESERVED 7 1"
    const std::size_t from = reply.find(' ') + 1;
    return reply.substr(from, reply.find(' ', from) - from);
  };
  for (int i = 0; i < tries; ++i) {
    auto start = Clock::now();
    a.put(0, asked, "60", "x");
    std::string r = b.call("reserve");
    check("delay", i, start, r, "RESERVED");
    b.call("delete " + id_of(r));

    a.put(0, "0", "60", "x");
    start = Clock::now();
    a.call("pause-tube never-early " + asked);
    r = b.call("reserve");
    check("pause-tube", i, start, r, "RESERVED");
    b.call("delete " + id_of(r));

    start = Clock::now();
    check("reserve-with-timeout", i, start, b.call("reserve-with-timeout " + asked), "TIMED_OUT");

    if (i >= ttr_tries) continue;
    a.put(0, "0", asked, "x");
    start = Clock::now();
    r = a.call("reserve");  // the TTR starts
    b.send_all("reserve\r\n");
    r = b.read_reply();
    check("ttr", i, start, r, "RESERVED");
    b.call("delete " + id_of(r));
  }
  return bad;
}

}  // namespace wheel_test
