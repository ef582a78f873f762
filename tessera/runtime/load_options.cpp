#include "tessera/runtime/load_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace tessera {
namespace {

Status copy_name(std::string_view name, char (&out)[LoadOptions::kMaxName], const char* what) {
  if (name.empty() || name.size() >= LoadOptions::kMaxName) {
    return Status::error(Error::InvalidArgument, "%s name '%.*s' must be 1 to %zu characters",
                         what, static_cast<int>(name.size() > 64 ? 64 : name.size()), name.data(),
                         LoadOptions::kMaxName - 1);
  }
  std::memcpy(out, name.data(), name.size());
  out[name.size()] = '\0';
  return Status::ok();
}

// Checks `shape` for set_input_shape; `what` names the input ("input 'x'", "input 0").
Status check_shape(Span<const int64_t> shape, const char* what) {
  if (shape.size() > static_cast<size_t>(kMaxDims)) {
    return Status::error(Error::InvalidArgument, "%s: shape has rank %zu; at most %d", what,
                         shape.size(), kMaxDims);
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0) {
      char sizes[160];
      return Status::error(Error::InvalidArgument, "%s: shape %s has a negative size at dim %zu",
                           what, format_sizes(shape, sizes, sizeof sizes), d);
    }
  }
  return Status::ok();
}

}  // namespace

Status LoadOptions::set_input_shape(std::string_view name, Span<const int64_t> shape) {
  char what[kMaxName + 16];
  std::snprintf(what, sizeof what, "input '%.*s'",
                static_cast<int>(std::min<size_t>(name.size(), kMaxName)), name.data());
  InputShape entry{};
  TESSERA_RETURN_IF_ERROR(copy_name(name, entry.name, "input"));
  TESSERA_RETURN_IF_ERROR(check_shape(shape, what));
  for (size_t i = 0; i < num_input_shapes_; ++i) {
    if (name == input_shapes_[i].name) {
      return Status::error(Error::InvalidArgument, "the shape of %s is given twice", what);
    }
  }
  if (num_input_shapes_ == kMaxInputShapes) {
    return Status::error(Error::InvalidArgument, "more than %zu input shapes given",
                         kMaxInputShapes);
  }
  entry.index = -1;
  entry.rank = shape.size();
  std::copy(shape.begin(), shape.end(), entry.sizes);
  input_shapes_[num_input_shapes_++] = entry;
  return Status::ok();
}

Status LoadOptions::set_input_shape(size_t index, Span<const int64_t> shape) {
  char what[48];
  std::snprintf(what, sizeof what, "input %zu", index);
  TESSERA_RETURN_IF_ERROR(check_shape(shape, what));
  for (size_t i = 0; i < num_input_shapes_; ++i) {
    if (input_shapes_[i].index == static_cast<int64_t>(index)) {
      return Status::error(Error::InvalidArgument, "the shape of %s is given twice", what);
    }
  }
  if (num_input_shapes_ == kMaxInputShapes) {
    return Status::error(Error::InvalidArgument, "more than %zu input shapes given",
                         kMaxInputShapes);
  }
  InputShape entry{};
  entry.index = static_cast<int64_t>(index);
  entry.rank = shape.size();
  std::copy(shape.begin(), shape.end(), entry.sizes);
  input_shapes_[num_input_shapes_++] = entry;
  return Status::ok();
}

Status LoadOptions::set_dim(std::string_view name, int64_t value) {
  for (size_t i = 0; i < num_dims_; ++i) {
    if (name == dims_[i].name) {
      return Status::error(Error::InvalidArgument, "dim '%s' given twice", dims_[i].name);
    }
  }
  if (num_dims_ == kMaxDims) {
    return Status::error(Error::InvalidArgument, "more than %zu dims given", kMaxDims);
  }
  TESSERA_RETURN_IF_ERROR(copy_name(name, dims_[num_dims_].name, "dim"));
  dims_[num_dims_++].value = value;
  return Status::ok();
}

Status LoadOptions::add_retarget(std::string_view from, std::string_view to) {
  for (size_t i = 0; i < num_retargets_; ++i) {
    if (from == retargets_[i].from) {
      return Status::error(Error::InvalidArgument, "backend '%s' retargeted twice",
                           retargets_[i].from);
    }
  }
  if (num_retargets_ == kMaxRetargets) {
    return Status::error(Error::InvalidArgument, "more than %zu retargets", kMaxRetargets);
  }
  Retarget r;
  TESSERA_RETURN_IF_ERROR(copy_name(from, r.from, "backend"));
  TESSERA_RETURN_IF_ERROR(copy_name(to, r.to, "backend"));
  retargets_[num_retargets_++] = r;
  return Status::ok();
}

namespace {

// Parses "a, b,c" into `parsed` (at most kMaxFallback distinct names); `what` names the list in
// errors ("fallback chain", "selection candidates").
Status parse_backend_list(std::string_view list, const char* what,
                          char (&parsed)[LoadOptions::kMaxFallback][LoadOptions::kMaxName],
                          size_t* count) {
  size_t n = 0;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (n == LoadOptions::kMaxFallback) {
      return Status::error(Error::InvalidArgument, "%s longer than %zu", what,
                           LoadOptions::kMaxFallback);
    }
    TESSERA_RETURN_IF_ERROR(copy_name(item, parsed[n], "backend"));
    for (size_t i = 0; i < n; ++i) {
      if (item == parsed[i]) {
        return Status::error(Error::InvalidArgument, "backend '%s' appears twice in the %s",
                             parsed[i], what);
      }
    }
    ++n;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
    if (list.empty()) return Status::error(Error::InvalidArgument, "%s ends with a comma", what);
  }
  *count = n;
  return Status::ok();
}

// parse_backend_list into `dest` and `*count`, which change only when the whole list is valid.
Status assign_backend_list(std::string_view list, const char* what,
                           char (&dest)[LoadOptions::kMaxFallback][LoadOptions::kMaxName],
                           size_t* count) {
  char parsed[LoadOptions::kMaxFallback][LoadOptions::kMaxName] = {};
  size_t n = 0;
  TESSERA_RETURN_IF_ERROR(parse_backend_list(list, what, parsed, &n));
  std::memcpy(dest, parsed, sizeof parsed);
  *count = n;
  return Status::ok();
}

}  // namespace

Status LoadOptions::set_fallback(std::string_view list) {
  return assign_backend_list(list, "fallback chain", fallback_, &num_fallback_);
}

Status LoadOptions::set_selection_candidates(std::string_view list) {
  return assign_backend_list(list, "selection candidates", selection_candidates_,
                             &num_selection_candidates_);
}

Status LoadOptions::set_startup_backend(std::string_view name) {
  if (name.empty()) {
    startup_backend_[0] = '\0';
    return Status::ok();
  }
  return copy_name(name, startup_backend_, "startup backend");
}

const char* selection_name(Selection selection) {
  switch (selection) {
    case Selection::Auto:
      return "auto";
    case Selection::Fixed:
      return "fixed";
    case Selection::Measure:
      return "measure";
  }
  return "?";
}

Result<Selection> parse_selection(std::string_view name) {
  for (Selection s : {Selection::Auto, Selection::Fixed, Selection::Measure}) {
    if (name == selection_name(s)) return s;
  }
  return Status::error(Error::InvalidArgument,
                       "unknown selection '%.*s' (expected auto, fixed or measure)",
                       static_cast<int>(name.size() > 64 ? 64 : name.size()), name.data());
}

Status LoadOptions::check_selection_tolerance(double tolerance) {
  if (!(tolerance >= 0) || std::isinf(tolerance)) {
    return Status::error(Error::InvalidArgument,
                         "selection tolerance %g must be a finite number >= 0", tolerance);
  }
  return Status::ok();
}

Status LoadOptions::check_selection_budget_ms(double ms) {
  if (ms == kSelectionBudgetAuto) return Status::ok();
  if (!(ms >= 0) || std::isinf(ms)) {
    return Status::error(Error::InvalidArgument,
                         "selection budget %g ms must be a finite number >= 0, or auto (%g)", ms,
                         kSelectionBudgetAuto);
  }
  return Status::ok();
}

Status LoadOptions::check_selection_runs_per_load(int64_t runs) {
  if (runs < 1 || runs > kSelectionRunsPerLoadLimit) {
    return Status::error(Error::InvalidArgument, "selection runs per load %lld must be 1 to %lld",
                         static_cast<long long>(runs),
                         static_cast<long long>(kSelectionRunsPerLoadLimit));
  }
  return Status::ok();
}

Status LoadOptions::check_selection_cache_max_kb(int64_t kb) {
  if (kb < 0 || kb > kSelectionCacheMaxKbLimit) {
    return Status::error(
        Error::InvalidArgument, "selection cache bound %lld KiB must be 0 (none) to %lld KiB",
        static_cast<long long>(kb), static_cast<long long>(kSelectionCacheMaxKbLimit));
  }
  return Status::ok();
}

bool LoadOptions::find_dim(std::string_view name, int64_t* value) const {
  for (size_t i = 0; i < num_dims_; ++i) {
    if (name == dims_[i].name) {
      *value = dims_[i].value;
      return true;
    }
  }
  return false;
}

std::string_view LoadOptions::retarget_of(std::string_view backend) const {
  for (size_t i = 0; i < num_retargets_; ++i) {
    if (backend == retargets_[i].from) return retargets_[i].to;
  }
  return backend;
}

}  // namespace tessera
