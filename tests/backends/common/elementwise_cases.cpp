#include "tests/backends/common/elementwise_cases.h"

#include <algorithm>

namespace tessera::backend_testing {

GraphCase binary_case(fb::OpType op, std::vector<int64_t> a, std::vector<int64_t> b,
                      bool b_constant, uint32_t seed, fb::Activation act) {
  GraphCase c;
  c.seed = seed;
  int x = c.input(std::vector<ir::Dim>(a.begin(), a.end()));
  int y = b_constant ? c.constant(b) : c.input(std::vector<ir::Dim>(b.begin(), b.end()));
  if (op == fb::OpType::Div && b_constant) {
    for (float& f : c.constants.back()) f = f < 0 ? f - 0.5f : f + 0.5f;  // away from 0
  }
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t da = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
    const int64_t db = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
    out[d] = std::max(da, db);
  }
  int z = c.tensor(std::vector<ir::Dim>(out.begin(), out.end()));
  c.node(op, {x, y}, z).activation = act;
  c.output(z);
  return c;
}

GraphCase unary_case(fb::OpType op, std::vector<int64_t> dims, std::vector<ir::Attr> attrs) {
  GraphCase c = GraphCase::single(op, {dims}, dims);
  c.graph.nodes[0].attrs = std::move(attrs);
  return c;
}

GraphCase prelu_case(std::vector<int64_t> x, std::vector<int64_t> slope, bool slope_constant,
                     uint32_t seed) {
  GraphCase c;
  c.seed = seed;
  int in = c.input(std::vector<ir::Dim>(x.begin(), x.end()));
  int s = slope_constant ? c.constant(slope)
                         : c.input(std::vector<ir::Dim>(slope.begin(), slope.end()));
  int y = c.tensor(std::vector<ir::Dim>(x.begin(), x.end()));
  c.node(fb::OpType::PRelu, {in, s}, y);
  c.output(y);
  return c;
}

}  // namespace tessera::backend_testing
