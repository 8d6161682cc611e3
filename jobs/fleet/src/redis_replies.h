// SPDX-License-Identifier: Apache-2.0
// Internal to wheel::jobs. Reading the store's script replies (redis_store.cc and
// redis_batches.cc): numbers, elements, the error and found conventions.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "wheel/jobs/fleet/redis_store_results.h"
#include "wheel/redis/redis_client.h"

namespace wheel::jobs::redis_replies {

inline std::int64_t as_int(const RedisValue& v) {
  if (v.type == RedisValue::Type::kInteger) return v.integer;
  std::int64_t out = 0;
  if (v.type == RedisValue::Type::kString || v.type == RedisValue::Type::kStatus) {
    std::from_chars(v.str.data(), v.str.data() + v.str.size(), out);
  }
  return out;
}

// Element i of an array reply, or nil past its end.
inline const RedisValue& at(const RedisValue& v, std::size_t i) {
  static const RedisValue kNil;
  return i < v.elements.size() ? v.elements[i] : kNil;
}

// Element i of a reply as a count.
inline std::uint64_t count_at(const RedisValue& v, std::size_t i) {
  return static_cast<std::uint64_t>(as_int(at(v, i)));
}

// Fills status/error from an error reply or a malformed one; true when `v` is a usable array
// of at least `min_elements`.
inline bool check(const RedisValue& v, StoreResult& r, std::size_t min_elements) {
  if (v.is_error()) {
    r.status = v.str.starts_with("OOM") ? StoreStatus::kOutOfMemory : StoreStatus::kError;
    r.error = v.str;
    return false;
  }
  if (v.type != RedisValue::Type::kArray || v.elements.size() < min_elements) {
    r.status = StoreStatus::kError;
    r.error = "ERR unexpected reply from Redis";
    return false;
  }
  return true;
}

// The claims of a reserve or reserve-job script, {now, more, tube, next known (0|1), next,
// claims, (id, token, body, lease, delay due)...}, dealt to `wanted` results in order: the first
// `claims` get a job, the rest kNotFound. Every result gets the error of a failed reply.
inline std::vector<ClaimResult> read_claims(const RedisValue& v, std::size_t wanted) {
  std::vector<ClaimResult> out(wanted);
  ClaimResult base;
  if (!check(v, base, 6)) {
    for (auto& r : out) r = base;
    return out;
  }
  base.now = as_int(at(v, 0));
  base.more = count_at(v, 1);
  base.tube = at(v, 2).str;
  base.next_known = as_int(at(v, 3)) == 1;
  base.next_due = as_int(at(v, 4));
  const std::size_t claims = count_at(v, 5);
  if (v.elements.size() < 6 + 5 * claims) {
    base.status = StoreStatus::kError;
    base.error = "ERR unexpected reply from Redis";
  }
  for (std::size_t i = 0; i < wanted; ++i) {
    ClaimResult& r = out[i];
    r = base;
    if (base.status != StoreStatus::kOk) continue;
    if (i >= claims) {
      r.status = StoreStatus::kNotFound;
      r.more = 0;
      r.tube.clear();
      continue;
    }
    const std::size_t e = 6 + 5 * i;
    r.id = count_at(v, e);
    r.token = count_at(v, e + 1);
    r.body = at(v, e + 2).str;
    r.lease_end = as_int(at(v, e + 3));
    r.delay_due = as_int(at(v, e + 4));
  }
  return out;
}

}  // namespace wheel::jobs::redis_replies
