// The tools' JSON output: every report and every error a tool prints with --json goes through
// here (nlohmann-json), so all of them share one format: one compact object per line.
#pragma once

#include <cstdio>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tessera/core/result.h"
#include "tessera/core/status.h"

namespace tessera::tools {

/// A JSON value whose objects keep their keys in the order they were added.
using Json = nlohmann::ordered_json;

/// The code of a command-line usage error (exit status 2) in error_json.
inline constexpr std::string_view kUsageErrorCode = "UsageError";

/// Writes `value` compactly and a newline to `out`. Bytes that are not valid UTF-8 in strings
/// (a file name, say) are replaced with U+FFFD rather than failing.
void print_json(const Json& value, FILE* out = stdout);

/// `{"error": {"code": CODE, "message": MESSAGE}}`.
Json error_json(std::string_view code, std::string_view message);
/// As above with the status's error name ("InvalidArgument", ...) as the code and the message
/// prefixed with `context` ("--input: ...") unless `context` is empty.
Json error_json(const Status& status, std::string_view context = {});

/// Parses JSON text a library function produced (DeviceInfo::to_json, the compile report), to
/// print it with print_json. Internal if the text is not JSON.
Result<Json> parse_json(std::string_view text);

}  // namespace tessera::tools
