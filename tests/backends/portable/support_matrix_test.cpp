// docs/ops-support.md's columns: a backend rewrites and checks only its own, so a machine that
// does not build a backend keeps that backend's column and section as they are.
#include "tests/backends/common/support_matrix.h"

#include <gtest/gtest.h>

namespace tessera::backend_testing {
namespace {

SupportAnswers answers(const std::string& backend, int accepted, int rejected,
                       const std::string& reason) {
  SupportAnswers a;
  OpSupport& s = a[backend]["Conv"];
  s.accepted = accepted;
  s.rejected = rejected;
  if (!reason.empty()) s.reasons.insert(reason);
  return a;
}

TEST(SupportMatrix, CellsSayAllNoneOrHowMany) {
  const std::string doc = update_support_doc("", answers("onednn", 3, 1, "onednn: too big"));
  EXPECT_NE(doc.find("| Conv | 3/4 |"), std::string::npos) << doc;
  EXPECT_NE(doc.find("| Relu | - |"), std::string::npos) << doc;  // no case of it
  EXPECT_NE(doc.find("- Conv: onednn: too big"), std::string::npos) << doc;
  EXPECT_NE(update_support_doc("", answers("onednn", 2, 0, "")).find("| Conv | yes |"),
            std::string::npos);
  EXPECT_NE(update_support_doc("", answers("onednn", 0, 2, "x")).find("| Conv | no |"),
            std::string::npos);
}

TEST(SupportMatrix, OtherBackendsColumnsAreKept) {
  const std::string with_onednn = update_support_doc("", answers("onednn", 1, 1, "why"));
  const std::string both = update_support_doc(with_onednn, answers("portable", 2, 0, ""));
  // Columns in a fixed order, whatever order they were written in.
  EXPECT_NE(both.find("| Op | portable | onednn |"), std::string::npos) << both;
  EXPECT_NE(both.find("| Conv | yes | 1/2 |"), std::string::npos) << both;
  EXPECT_NE(both.find("## onednn"), std::string::npos);
  // Rewriting a column again changes only that column.
  const std::string again = update_support_doc(both, answers("portable", 0, 2, "gone"));
  EXPECT_NE(again.find("| Conv | no | 1/2 |"), std::string::npos) << again;
  EXPECT_EQ(update_support_doc(again, answers("portable", 0, 2, "gone")), again);
}

TEST(SupportMatrix, CheckComparesOnlyTheBackendsGiven) {
  const std::string doc = update_support_doc(update_support_doc("", answers("onednn", 1, 1, "why")),
                                             answers("portable", 2, 0, ""));
  // onednn's column would be stale against other answers, but only portable's is checked.
  EXPECT_EQ(compare_support_doc(doc, answers("portable", 2, 0, "")), "");
  EXPECT_NE(compare_support_doc(doc, answers("onednn", 2, 0, "")), "");
  EXPECT_NE(compare_support_doc(doc, answers("onednn", 1, 1, "another reason")), "");
  EXPECT_NE(compare_support_doc(doc, answers("xnnpack", 1, 0, "")).find("no column for xnnpack"),
            std::string::npos);
  EXPECT_NE(compare_support_doc("", answers("portable", 2, 0, "")), "");
}

}  // namespace
}  // namespace tessera::backend_testing
