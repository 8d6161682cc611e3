// SPDX-License-Identifier: Apache-2.0
// Built by check_pkgconfig.sh with only `pkg-config --cflags --libs wheeljobs` (the layers
// without libuv): writes one job to a job log, reopens it and reads it back.
#include <cstdio>

#include <wheel/version.h>

#include "job_log_round_trip.h"

int main() {
  if (!log_round_trip()) return 1;
  std::printf("job log written and read back; wheeltimer %s\n", wheel::kVersion);
  return 0;
}
