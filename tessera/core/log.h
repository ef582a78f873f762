// Logging through a pluggable sink. The default sink writes to stderr at Info and above.
#pragma once

#include <cstdarg>

namespace tessera {

enum class LogLevel { Debug = 0, Info = 1, Warning = 2, Error = 3 };

/// Receives every message at or above the minimum level. Must be thread-safe.
using LogSink = void (*)(LogLevel level, const char* message, void* user_data);

/// Installs `sink` (nullptr restores the default). Returns nothing; thread-safe.
void set_log_sink(LogSink sink, void* user_data = nullptr);
void set_min_log_level(LogLevel level);
LogLevel min_log_level();

[[gnu::format(printf, 2, 3)]] void log(LogLevel level, const char* format, ...);

const char* log_level_name(LogLevel level);

}  // namespace tessera

#define TESSERA_LOG_DEBUG(...) ::tessera::log(::tessera::LogLevel::Debug, __VA_ARGS__)
#define TESSERA_LOG_INFO(...) ::tessera::log(::tessera::LogLevel::Info, __VA_ARGS__)
#define TESSERA_LOG_WARNING(...) ::tessera::log(::tessera::LogLevel::Warning, __VA_ARGS__)
#define TESSERA_LOG_ERROR(...) ::tessera::log(::tessera::LogLevel::Error, __VA_ARGS__)
