#include "tools/common/json_output.h"

#include <string>

namespace tessera::tools {

void print_json(const Json& value, FILE* out) {
  const std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::fprintf(out, "%s\n", text.c_str());
  std::fflush(out);
}

Json error_json(std::string_view code, std::string_view message) {
  Json error = Json::object();
  error["code"] = code;
  error["message"] = message;
  Json out = Json::object();
  out["error"] = std::move(error);
  return out;
}

Json error_json(const Status& status, std::string_view context) {
  std::string message = context.empty() ? std::string() : std::string(context) + ": ";
  message += status.message()[0] != '\0' ? status.message() : error_name(status.code());
  return error_json(error_name(status.code()), message);
}

Result<Json> parse_json(std::string_view text) {
  Json value = Json::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    return Status::error(Error::Internal, "not valid JSON: '%.*s'",
                         static_cast<int>(text.size() > 80 ? 80 : text.size()), text.data());
  }
  return value;
}

}  // namespace tessera::tools
