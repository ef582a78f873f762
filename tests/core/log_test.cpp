#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/core/log.h"

namespace tessera {
namespace {

void capture(LogLevel level, const char* message, void* user) {
  static_cast<std::vector<std::string>*>(user)->push_back(std::string(log_level_name(level)) + ":" + message);
}

TEST(Log, PluggableSinkAndLevel) {
  std::vector<std::string> seen;
  set_log_sink(capture, &seen);
  set_min_log_level(LogLevel::Warning);
  TESSERA_LOG_INFO("hidden %d", 1);
  TESSERA_LOG_WARNING("shown %d", 2);
  TESSERA_LOG_ERROR("also %s", "shown");
  set_log_sink(nullptr);
  set_min_log_level(LogLevel::Info);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], "warning:shown 2");
  EXPECT_EQ(seen[1], "error:also shown");
}

}  // namespace
}  // namespace tessera
