// The op x backend support table (docs/ops-support.md) the conformance suite writes and checks:
// for each op, whether a backend's supports_op accepts the suite's cases of it, and the reasons
// it gives for the ones it rejects. Each backend's test executable owns its own column and its
// own section of the file, so a machine that builds only some backends rewrites or checks only
// those and keeps the others as they are.
#pragma once

#include <map>
#include <set>
#include <string>

#include "tessera/ir/schema.h"

namespace tessera::backend_testing {

/// What the suite saw of one op on one backend.
struct OpSupport {
  int accepted = 0;
  int rejected = 0;
  std::set<std::string> reasons;
};

/// Answers by backend, then by op name.
using SupportAnswers = std::map<std::string, std::map<std::string, OpSupport>>;

/// The mode the process runs the suite in, from the environment.
enum class MatrixMode { Off, Write, Check };
MatrixMode matrix_mode();

/// Records supports_op's answer for one node (support-matrix mode only).
void record_support(const char* backend, fb::OpType op, const std::string& reason);

/// The answers recorded so far.
const SupportAnswers& recorded_support();

/// `file` (the text of docs/ops-support.md, "" when it does not exist) with the columns and
/// sections of the backends in `answers` replaced; the other backends' are kept.
std::string update_support_doc(const std::string& file, const SupportAnswers& answers);

/// "" when `file` holds exactly `answers` for their backends; otherwise what differs.
std::string compare_support_doc(const std::string& file, const SupportAnswers& answers);

}  // namespace tessera::backend_testing
