// SPDX-License-Identifier: Apache-2.0
// BeanstalkFront's per-connection state (BeanstalkFront::Conn), shared by its two source files:
// beanstalk_front.cc (input, requests, slots, close) and beanstalk_front_output.cc (replies out,
// the output bound). Internal to jobs/server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "reply_order.h"
#include "wheel/jobs/beanstalk/beanstalk_protocol.h"
#include "wheel/jobs/server/session_tubes.h"

namespace wheel::jobs {

struct BeanstalkFrontConn {
  BeanstalkFrontConn(std::uint64_t i, std::uint32_t max_job_size, std::size_t max_watched)
      : id(i), parser(max_job_size), tubes(max_watched) {}
  std::uint64_t id;
  beanstalk::RequestParser parser;
  SessionTubes tubes;    // the backend reads them (BeanstalkBackend::open)
  std::string input;     // bytes not parsed yet
  std::string gathered;  // written on write_gathered() (BeanstalkBackend::gathering())
  ReplyOrder replies;    // a slot per request started, written in request order
  std::optional<beanstalk::Request> held;  // parsed, not admitted yet
  bool parked = false;                     // held is Admit::kLater: input paused until resume()
  std::optional<std::uint64_t> barrier;    // the started barrier's slot, until it completes
  bool waits = false;                      // that barrier is a waiting reserve
  bool blocked = false;  // output over max_queued_output: input paused until it drains
  bool quit = false;
  bool input_ended = false;  // EOF: close once nothing more is owed
  bool pumping = false;      // pump() is on the stack: completions meanwhile do not re-enter
  bool listed = false;       // in gathered_: write_gathered() writes and looks at it again
};

}  // namespace wheel::jobs
