#include "tessera/compiler/partitioner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "tessera/ir/op.h"

namespace tessera::compiler {
namespace {

using fb::OpType;

// A graph whose value 0 is the input and node i writes value i + 1. `inputs[i]` lists the nodes
// (or -1 for the graph input) node i reads.
ir::Graph make_graph(const std::vector<OpType>& ops, const std::vector<std::vector<int>>& inputs) {
  ir::Graph g;
  g.values.resize(ops.size() + 1);
  for (size_t v = 0; v < g.values.size(); ++v) {
    g.values[v].name = std::string(1, 'v') + std::to_string(v);
    g.values[v].dims = {ir::Dim(4)};
  }
  g.inputs = {0};
  for (size_t i = 0; i < ops.size(); ++i) {
    ir::Node n;
    n.op = ops[i];
    n.name = std::string(1, 'n') + std::to_string(i);
    for (int p : inputs[i]) n.inputs.push_back(p + 1);
    n.outputs = {static_cast<int>(i) + 1};
    g.nodes.push_back(n);
  }
  g.outputs = {static_cast<int>(ops.size())};
  return g;
}

BackendCandidate supporting(std::string name, std::set<OpType> ops) {
  return {std::move(name), [ops](const ir::Graph&, const ir::Node& n) { return ops.count(n.op) > 0; }};
}

// Every node once; every partition runs after the partitions it reads from; partitions are
// connected; and no edge joins two partitions of one backend that could merge without a cycle.
void check_partitions(const ir::Graph& g, const std::vector<Partition>& parts) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<int> part_of(n, -1);
  for (size_t p = 0; p < parts.size(); ++p) {
    ASSERT_FALSE(parts[p].nodes.empty());
    for (int i : parts[p].nodes) {
      ASSERT_EQ(part_of[i], -1) << "node " << i << " in two partitions";
      part_of[i] = static_cast<int>(p);
    }
    if (parts[p].backend.empty()) {
      EXPECT_EQ(parts[p].nodes.size(), 1u);
    }
  }
  for (int i = 0; i < n; ++i) ASSERT_GE(part_of[i], 0) << "node " << i << " not placed";
  std::vector<int> producer(g.values.size(), -1);
  for (int i = 0; i < n; ++i) producer[g.nodes[i].outputs[0]] = i;
  // Partition-level edges.
  std::vector<std::set<int>> succ(parts.size());
  for (int i = 0; i < n; ++i) {
    for (int v : g.nodes[i].inputs) {
      const int p = producer[v];
      if (p < 0 || part_of[p] == part_of[i]) continue;
      EXPECT_LT(part_of[p], part_of[i]) << "partition order breaks the dependency " << p << " -> " << i;
      succ[part_of[p]].insert(part_of[i]);
    }
  }
  // Connectedness of each delegate partition (undirected, through its own nodes).
  for (size_t p = 0; p < parts.size(); ++p) {
    const auto& nodes = parts[p].nodes;
    std::set<int> seen = {nodes[0]};
    bool grew = true;
    while (grew) {
      grew = false;
      for (int i : nodes) {
        for (int v : g.nodes[i].inputs) {
          const int q = producer[v];
          if (q < 0 || part_of[q] != static_cast<int>(p)) continue;
          if (seen.count(i) != seen.count(q)) {
            seen.insert(i);
            seen.insert(q);
            grew = true;
          }
        }
      }
    }
    EXPECT_EQ(seen.size(), nodes.size()) << "partition " << p << " is not connected";
  }
  // Maximality: merging two same-backend partitions joined by an edge must create a cycle.
  auto reaches_via_other = [&](int a, int b) {
    std::vector<int> stack;
    std::vector<bool> seen(parts.size(), false);
    for (int s : succ[a]) {
      if (s != b) {
        stack.push_back(s);
        seen[s] = true;
      }
    }
    while (!stack.empty()) {
      int c = stack.back();
      stack.pop_back();
      if (c == b) return true;
      for (int s : succ[c]) {
        if (!seen[s]) {
          seen[s] = true;
          stack.push_back(s);
        }
      }
    }
    return false;
  };
  for (int i = 0; i < n; ++i) {
    for (int v : g.nodes[i].inputs) {
      const int p = producer[v];
      if (p < 0) continue;
      const int a = part_of[p], b = part_of[i];
      if (a == b || parts[a].backend.empty() || parts[a].backend != parts[b].backend) continue;
      EXPECT_TRUE(reaches_via_other(a, b)) << "partitions " << a << " and " << b << " could merge";
    }
  }
}

TEST(Partitioner, PortableOnlyIsOneKernelPerNode) {
  ir::Graph g = make_graph({OpType::Conv, OpType::Relu, OpType::Add}, {{-1}, {0}, {1, 0}});
  auto parts = partition_graph(g, {});
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE((*parts)[i].backend.empty());
    EXPECT_EQ((*parts)[i].nodes, std::vector<int>{static_cast<int>(i)});
  }
}

TEST(Partitioner, SupportedChainIsOneDelegate) {
  ir::Graph g = make_graph({OpType::Conv, OpType::Relu, OpType::Conv, OpType::Add}, {{-1}, {0}, {1}, {2, 1}});
  auto parts = partition_graph(g, {supporting("fake", {OpType::Conv, OpType::Relu, OpType::Add})});
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].backend, "fake");
  EXPECT_EQ((*parts)[0].nodes, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Partitioner, DetourThroughAnUnsupportedNodeKeepsPartitionsApart) {
  // n0 (Conv) -> n1 (Softmax, unsupported) -> n2 (Add reads n0 and n1). Merging n0 and n2 would
  // make the delegate both feed and wait for n1.
  ir::Graph g = make_graph({OpType::Conv, OpType::Softmax, OpType::Add}, {{-1}, {0}, {0, 1}});
  auto parts = partition_graph(g, {supporting("fake", {OpType::Conv, OpType::Add})});
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[0].nodes, std::vector<int>{0});
  EXPECT_EQ((*parts)[1].backend, "");
  EXPECT_EQ((*parts)[2].nodes, std::vector<int>{2});
  check_partitions(g, *parts);
}

TEST(Partitioner, IndependentBranchesAroundAnUnsupportedNodeStillMerge) {
  // n0 Conv -> n1 Relu -> n3 Add(n1, n2); n2 Softmax(x) is unsupported but on a side branch.
  ir::Graph g = make_graph({OpType::Conv, OpType::Relu, OpType::Softmax, OpType::Add}, {{-1}, {0}, {-1}, {1, 2}});
  auto parts = partition_graph(g, {supporting("fake", {OpType::Conv, OpType::Relu, OpType::Add})});
  ASSERT_TRUE(parts.ok());
  check_partitions(g, *parts);
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].backend, "");
  EXPECT_EQ((*parts)[1].nodes, (std::vector<int>{0, 1, 3}));
}

TEST(Partitioner, FirstBackendInOrderWins) {
  ir::Graph g = make_graph({OpType::Conv, OpType::Relu}, {{-1}, {0}});
  auto parts = partition_graph(g, {supporting("a", {OpType::Conv}), supporting("b", {OpType::Conv, OpType::Relu})});
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].backend, "a");
  EXPECT_EQ((*parts)[1].backend, "b");
}

TEST(Partitioner, FollowProducersKeepsAChainOnTheBackendThatHasEveryOp) {
  // Conv, Transpose, Conv, Transpose, Conv: "a" (preferred) lacks Transpose, "b" has all. By
  // preference the chain alternates a, b, a, b, a; following producers it is "b" after the
  // first Conv, and that Conv, whose consumer runs on "b", joins it: one delegate.
  ir::Graph g = make_graph({OpType::Conv, OpType::Transpose, OpType::Conv, OpType::Transpose, OpType::Conv},
                           {{-1}, {0}, {1}, {2}, {3}});
  const std::vector<BackendCandidate> backends = {supporting("a", {OpType::Conv}),
                                                  supporting("b", {OpType::Conv, OpType::Transpose})};
  auto fixed = partition_graph(g, backends);
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->size(), 5u);
  PartitionOptions follow;
  follow.follow_producers = true;
  auto parts = partition_graph(g, backends, follow);
  ASSERT_TRUE(parts.ok());
  check_partitions(g, *parts);
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].backend, "b");
  EXPECT_EQ((*parts)[0].nodes, (std::vector<int>{0, 1, 2, 3, 4}));

  // A node with a producer on its preferred backend keeps it (an Add joining both branches),
  // and the Conv before it, on "b" by its producer, joins the Add on "a".
  ir::Graph join = make_graph({OpType::Conv, OpType::Transpose, OpType::Conv, OpType::Add}, {{-1}, {-1}, {1}, {0, 2}});
  auto joined = partition_graph(join, {supporting("a", {OpType::Conv, OpType::Add}),
                                       supporting("b", {OpType::Conv, OpType::Transpose, OpType::Add})},
                                follow);
  ASSERT_TRUE(joined.ok());
  check_partitions(join, *joined);
  for (const Partition& p : *joined) {
    if (std::find(p.nodes.begin(), p.nodes.end(), 3) != p.nodes.end()) {
      EXPECT_EQ(p.backend, "a");
    }
    if (std::find(p.nodes.begin(), p.nodes.end(), 2) != p.nodes.end()) {
      EXPECT_EQ(p.backend, "a");
    }
    if (std::find(p.nodes.begin(), p.nodes.end(), 1) != p.nodes.end()) {
      EXPECT_EQ(p.backend, "b");  // only b takes the Transpose
    }
  }
}

TEST(Partitioner, RandomGraphsGiveValidMaximalPartitions) {
  std::mt19937 rng(1234);
  const std::vector<OpType> palette = {OpType::Conv, OpType::Relu, OpType::Add, OpType::Softmax, OpType::MatMul};
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 40);
    std::vector<OpType> ops;
    std::vector<std::vector<int>> inputs;
    for (int i = 0; i < n; ++i) {
      ops.push_back(palette[rng() % palette.size()]);
      std::vector<int> in = {static_cast<int>(rng() % (i + 1)) - 1};
      if (i > 0 && rng() % 2) in.push_back(static_cast<int>(rng() % i));
      inputs.push_back(in);
    }
    ir::Graph g = make_graph(ops, inputs);
    std::vector<BackendCandidate> backends = {supporting("x", {OpType::Conv, OpType::Add, OpType::Relu}),
                                              supporting("y", {OpType::MatMul, OpType::Relu})};
    if (trial % 3 == 0) backends.pop_back();
    auto parts = partition_graph(g, backends);
    ASSERT_TRUE(parts.ok()) << parts.status().message();
    check_partitions(g, *parts);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "trial " << trial;
      return;
    }
  }
}

TEST(Partitioner, SubgraphHasItsOwnInputsOutputsAndSharedConstants) {
  ir::Graph g = make_graph({OpType::Conv, OpType::Relu, OpType::Softmax}, {{-1}, {0}, {1}});
  ir::Value w;
  w.name = "w";
  w.constant = 3;
  g.values.push_back(w);
  g.nodes[0].inputs.push_back(static_cast<int>(g.values.size()) - 1);
  g.values[1].arena_offset = 128;
  Subgraph sub = extract_subgraph(g, {0, 1});
  EXPECT_EQ(sub.inputs, std::vector<int>{0});
  EXPECT_EQ(sub.outputs, std::vector<int>{2});  // read by the Softmax outside
  ASSERT_EQ(sub.graph.nodes.size(), 2u);
  ASSERT_EQ(sub.graph.values.size(), 4u);  // x, w, v1, v2
  bool have_constant = false;
  for (const ir::Value& v : sub.graph.values) {
    EXPECT_EQ(v.arena_offset, -1);
    if (v.name == "w") {
      have_constant = true;
      EXPECT_EQ(v.constant, 3);
    }
  }
  EXPECT_TRUE(have_constant);
  EXPECT_EQ(sub.graph.inputs.size(), 1u);
  EXPECT_EQ(sub.graph.outputs.size(), 1u);
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

TEST(Partitioner, DelegatesOfOnlyReshapesRunOnPortableKernels) {
  // n0 Softmax (unsupported) -> n1 Reshape -> n2 Softmax -> n3 Reshape -> n4 Conv
  ir::Graph g = make_graph({OpType::Softmax, OpType::Reshape, OpType::Softmax, OpType::Reshape, OpType::Conv},
                           {{-1}, {0}, {1}, {2}, {3}});
  auto parts = partition_graph(g, {supporting("fake", {OpType::Reshape, OpType::Conv})});
  ASSERT_TRUE(parts.ok());
  check_partitions(g, *parts);
  ASSERT_EQ(parts->size(), 4u);
  EXPECT_EQ((*parts)[1].backend, "");  // the lone Reshape
  EXPECT_EQ((*parts)[3].backend, "fake");
  EXPECT_EQ((*parts)[3].nodes, (std::vector<int>{3, 4}));
  PartitionOptions keep;
  keep.demote_layout_only_delegates = false;
  auto kept = partition_graph(g, {supporting("fake", {OpType::Reshape, OpType::Conv})}, keep);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ((*kept)[1].backend, "fake");
}

}  // namespace
}  // namespace tessera::compiler

namespace tessera::compiler {
namespace {

TEST(Partitioner, AtMostMaxDelegatesTheSmallestGoToPortableKernels) {
  // Conv-Softmax-Conv-Conv-Softmax-Conv-Conv-Conv: delegates of 1, 2 and 3 nodes.
  ir::Graph g = make_graph({OpType::Conv, OpType::Softmax, OpType::Conv, OpType::Conv, OpType::Softmax, OpType::Conv,
                            OpType::Conv, OpType::Conv},
                           {{-1}, {0}, {1}, {2}, {3}, {4}, {5}, {6}});
  PartitionOptions options;
  options.max_delegates = 2;
  auto parts = partition_graph(g, {supporting("fake", {OpType::Conv})}, options);
  ASSERT_TRUE(parts.ok());
  check_partitions(g, *parts);
  int delegates = 0;
  for (const Partition& p : *parts) {
    if (p.backend.empty()) continue;
    ++delegates;
    EXPECT_GE(p.nodes.size(), 2u);
  }
  EXPECT_EQ(delegates, 2);
  EXPECT_TRUE((*parts)[0].backend.empty());  // the lone first Conv
}

}  // namespace
}  // namespace tessera::compiler
