#include "tessera/compiler/partitioner.h"

#include <algorithm>
#include <numeric>
#include <queue>
#include <set>

namespace tessera::compiler {
namespace {

struct UnionFind {
  std::vector<int> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
};

}  // namespace

Result<std::vector<Partition>> partition_graph(const ir::Graph& graph,
                                               const std::vector<BackendCandidate>& backends,
                                               const PartitionOptions& options) {
  const int n = static_cast<int>(graph.nodes.size());
  std::vector<int> producer(graph.values.size(), -1);
  for (int i = 0; i < n; ++i) {
    for (int v : graph.nodes[i].outputs) {
      if (v < 0 || v >= static_cast<int>(graph.values.size())) {
        return Status::error(Error::InvalidArgument, "node %d writes value %d out of range", i, v);
      }
      if (producer[v] >= 0) {
        return Status::error(Error::InvalidArgument, "value '%s' is written twice", graph.values[v].name.c_str());
      }
      producer[v] = i;
    }
  }
  // Node-level data edges; the graph order must be topological.
  std::vector<std::vector<int>> succ(n), pred(n);
  for (int i = 0; i < n; ++i) {
    for (int v : graph.nodes[i].inputs) {
      if (v < -1 || v >= static_cast<int>(graph.values.size())) {
        return Status::error(Error::InvalidArgument, "node %d reads value %d out of range", i, v);
      }
      if (v < 0 || producer[v] < 0) continue;
      const int p = producer[v];
      if (p >= i) {
        return Status::error(Error::InvalidArgument, "nodes are not in topological order (node %d reads '%s')",
                             i, graph.values[v].name.c_str());
      }
      if (std::find(pred[i].begin(), pred[i].end(), p) == pred[i].end()) {
        pred[i].push_back(p);
        succ[p].push_back(i);
      }
    }
  }
  std::vector<int> assign(n, -1);
  // supported[i][b]: backend b takes node i (asked only when follow_producers needs it).
  std::vector<std::vector<char>> supported(n);
  for (int i = 0; i < n; ++i) {
    for (size_t b = 0; b < backends.size(); ++b) {
      const bool yes = backends[b].supports_op && backends[b].supports_op(graph, graph.nodes[i]);
      if (yes && assign[i] < 0) assign[i] = static_cast<int>(b);
      if (!options.follow_producers && assign[i] >= 0) break;
      if (options.follow_producers) supported[i].push_back(yes ? 1 : 0);
    }
  }
  if (options.follow_producers) {
    // In graph (topological) order, so a producer's final backend is known.
    for (int i = 0; i < n; ++i) {
      if (assign[i] < 0) continue;
      int follow = -1;
      bool same = false;
      for (int p : pred[i]) {
        const int b = assign[p];
        if (b < 0) continue;
        same = same || b == assign[i];
        if (supported[i][static_cast<size_t>(b)] && (follow < 0 || b < follow)) follow = b;
      }
      if (!same && follow >= 0) assign[i] = follow;
    }
    // Then backwards, so that a run of ops at the start that two backends take does not become a
    // delegate of its own before the ops only the second takes (ShuffleNetV2's stem on xnnpack,
    // then everything after its first channel shuffle on onednn): a node whose consumers all
    // run on one other backend that also takes it joins them.
    for (int i = n - 1; i >= 0; --i) {
      if (assign[i] < 0 || succ[i].empty()) continue;
      const int b = assign[succ[i][0]];
      if (b < 0 || b == assign[i] || !supported[i][static_cast<size_t>(b)]) continue;
      bool all = true;
      for (int s : succ[i]) all = all && assign[s] == b;
      bool output = false;
      for (int v : graph.nodes[i].outputs) {
        for (int o : graph.outputs) output = output || o == v;
      }
      if (all && !output) assign[i] = b;
    }
  }

  // Greedy merging along edges. Merging clusters A -> B is safe unless some path leaves A and
  // re-enters B through another cluster.
  UnionFind uf(n);
  std::vector<std::vector<int>> members(n);
  for (int i = 0; i < n; ++i) members[i] = {i};
  auto creates_cycle = [&](int a, int b) {
    // Search from A's successor clusters other than A and B; reaching B means a detour.
    std::vector<char> seen(n, 0);
    std::vector<int> stack;
    auto push_succ = [&](int cluster) {
      for (int m : members[cluster]) {
        for (int s : succ[m]) {
          const int c = uf.find(s);
          if (c == a || seen[c]) continue;
          if (cluster == a && c == b) continue;  // direct edges are fine
          seen[c] = 1;
          stack.push_back(c);
        }
      }
    };
    push_succ(a);
    while (!stack.empty()) {
      const int c = stack.back();
      stack.pop_back();
      if (c == b) return true;
      push_succ(c);
    }
    return false;
  };
  bool changed = true;
  while (changed) {
    changed = false;
    for (int c = 0; c < n; ++c) {
      if (assign[c] < 0) continue;
      for (int p : pred[c]) {
        if (assign[p] != assign[c]) continue;
        int a = uf.find(p), b = uf.find(c);
        if (a == b) continue;
        // Orient so that A precedes B (some edge goes A -> B); both orders are checked.
        if (creates_cycle(a, b) || creates_cycle(b, a)) continue;
        const int root = std::min(a, b), other = std::max(a, b);
        uf.parent[other] = root;
        members[root].insert(members[root].end(), members[other].begin(), members[other].end());
        members[other].clear();
        changed = true;
      }
    }
  }

  if (options.demote_layout_only_delegates) {
    auto layout_only = [](fb::OpType op) {
      return op == fb::OpType::Reshape || op == fb::OpType::Flatten || op == fb::OpType::Squeeze ||
             op == fb::OpType::Unsqueeze || op == fb::OpType::Identity;
    };
    for (int c = 0; c < n; ++c) {
      if (uf.find(c) != c || assign[c] < 0) continue;
      const std::vector<int> group = members[c];
      bool demote = true;
      for (int m : group) demote = demote && layout_only(graph.nodes[m].op);
      if (!demote) continue;
      for (int m : group) {
        assign[m] = -1;
        uf.parent[m] = m;
        members[m] = {m};
      }
    }
  }

  if (options.max_delegates > 0) {
    std::vector<int> delegates;
    for (int c = 0; c < n; ++c) {
      if (uf.find(c) == c && assign[c] >= 0) delegates.push_back(c);
    }
    if (static_cast<int>(delegates.size()) > options.max_delegates) {
      // Smallest first (ties: later first, keeping the early, usually heavier, layers delegated).
      std::stable_sort(delegates.begin(), delegates.end(), [&](int a, int b) {
        return members[a].size() != members[b].size() ? members[a].size() < members[b].size() : a > b;
      });
      const size_t excess = delegates.size() - static_cast<size_t>(options.max_delegates);
      for (size_t k = 0; k < excess; ++k) {
        const std::vector<int> group = members[delegates[k]];
        for (int m : group) {
          assign[m] = -1;
          uf.parent[m] = m;
          members[m] = {m};
        }
      }
    }
  }

  // Order the clusters topologically, earliest first node first.
  std::vector<std::set<int>> csucc(n);
  std::vector<int> indeg(n, 0);
  for (int i = 0; i < n; ++i) {
    for (int s : succ[i]) {
      const int a = uf.find(i), b = uf.find(s);
      if (a != b && csucc[a].insert(b).second) ++indeg[b];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i) {
    if (uf.find(i) == i && indeg[i] == 0) ready.push(i);
  }
  std::vector<Partition> out;
  while (!ready.empty()) {
    const int c = ready.top();
    ready.pop();
    Partition p;
    if (assign[c] >= 0) p.backend = backends[assign[c]].name;
    p.nodes = members[c];
    std::sort(p.nodes.begin(), p.nodes.end());
    out.push_back(std::move(p));
    for (int s : csucc[c]) {
      if (--indeg[s] == 0) ready.push(s);
    }
  }
  size_t placed = 0;
  for (const Partition& p : out) placed += p.nodes.size();
  if (placed != static_cast<size_t>(n)) {
    return Status(Error::Internal, "partitioner produced a cycle between partitions");
  }
  return out;
}

Subgraph extract_subgraph(const ir::Graph& graph, const std::vector<int>& nodes) {
  Subgraph sub;
  sub.graph.symbols = graph.symbols;
  std::vector<bool> inside(graph.nodes.size(), false);
  for (int i : nodes) inside[i] = true;
  std::vector<bool> produced(graph.values.size(), false);
  for (int i : nodes) {
    for (int v : graph.nodes[i].outputs) {
      if (v >= 0) produced[v] = true;
    }
  }
  std::vector<bool> read_outside(graph.values.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (inside[i]) continue;
    for (int v : graph.nodes[i].inputs) {
      if (v >= 0) read_outside[v] = true;
    }
  }
  for (int v : graph.outputs) read_outside[v] = true;

  std::vector<int> local(graph.values.size(), -1);
  auto map = [&](int v) {
    if (v < 0) return -1;
    if (local[v] < 0) {
      ir::Value val = graph.values[v];
      val.arena_offset = -1;
      sub.graph.values.push_back(std::move(val));
      local[v] = static_cast<int>(sub.graph.values.size()) - 1;
    }
    return local[v];
  };
  for (int i : nodes) {
    ir::Node node = graph.nodes[i];
    for (int& v : node.inputs) {
      if (v >= 0 && !produced[v] && graph.values[v].constant < 0 && local[v] < 0) {
        sub.inputs.push_back(v);
        sub.graph.inputs.push_back(map(v));
      }
      v = map(v);
    }
    for (int& v : node.outputs) {
      const int orig = v;
      v = map(v);
      if (orig >= 0 && read_outside[orig]) {
        sub.outputs.push_back(orig);
        sub.graph.outputs.push_back(v);
      }
    }
    sub.graph.nodes.push_back(std::move(node));
  }
  return sub;
}

}  // namespace tessera::compiler
