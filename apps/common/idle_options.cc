// SPDX-License-Identifier: Apache-2.0
#include "idle_options.h"

#include "duration.h"

namespace wheel::apps {

IdleCheck check_idle_options(std::chrono::milliseconds reader, std::chrono::milliseconds writer,
                             std::chrono::milliseconds all) {
  using namespace std::chrono_literals;
  IdleCheck check;
  if (all == 0ms) return check;
  const std::string all_text = "--all-idle " + format_duration(all);
  if (writer > 0ms && all >= writer) {
    const std::string why = all_text + " never fires with --writer-idle " +
                            format_duration(writer) + ": the PING sent after " +
                            format_duration(writer) +
                            " without output is output and restarts the all-idle time";
    if (reader == 0ms) {
      check.error = why +
                    ", so silent clients are never closed; close them with --reader-idle, "
                    "or set --all-idle below --writer-idle";
    } else {
      check.warning = why + "; --reader-idle " + format_duration(reader) + " closes silent clients";
    }
  } else if (reader > 0ms && all >= reader) {
    check.warning = all_text + " never fires with --reader-idle " + format_duration(reader) +
                    ": reader-idle closes a silent client first";
  }
  return check;
}

}  // namespace wheel::apps
