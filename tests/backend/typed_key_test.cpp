// Typed keys: the value type travels with the key, so misuse fails to compile. These checks run
// at compile time; compile_fail/typed_key_wrong_type.cpp shows the actual compiler error.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "tessera/backend/execute_options.h"
#include "tessera/backend/options.h"
#include "tessera/backend/options_map.h"

namespace tessera {
namespace {

template <typename Options, typename Key, typename Value>
concept CanSet = requires(Options options, Key key, Value value) {
  options.set(key, value);
};

template <typename Map, typename Key, typename Value>
concept CanSetNamed = requires(Map map, Key key, Value value) {
  map.set(std::string_view("x"), key, value);
};

using Opts = BackendOptions<4>;

// Ints: integers only.
static_assert(CanSet<Opts, OptionKey<int64_t>, int>);
static_assert(CanSet<Opts, OptionKey<int64_t>, int64_t>);
static_assert(CanSet<Opts, OptionKey<int64_t>, unsigned>);
static_assert(!CanSet<Opts, OptionKey<int64_t>, const char*>);
static_assert(!CanSet<Opts, OptionKey<int64_t>, std::string>);
static_assert(!CanSet<Opts, OptionKey<int64_t>, bool>);
static_assert(!CanSet<Opts, OptionKey<int64_t>, double>);
static_assert(!CanSet<Opts, OptionKey<int64_t>, char>);
// Bools: bool only.
static_assert(CanSet<Opts, OptionKey<bool>, bool>);
static_assert(!CanSet<Opts, OptionKey<bool>, int>);
static_assert(!CanSet<Opts, OptionKey<bool>, const char*>);
// Doubles: any non-bool number.
static_assert(CanSet<Opts, OptionKey<double>, double>);
static_assert(CanSet<Opts, OptionKey<double>, int>);
static_assert(!CanSet<Opts, OptionKey<double>, bool>);
static_assert(!CanSet<Opts, OptionKey<double>, std::string_view>);
// Strings: anything string-like.
static_assert(CanSet<Opts, OptionKey<std::string_view>, const char*>);
static_assert(CanSet<Opts, OptionKey<std::string_view>, std::string>);
static_assert(!CanSet<Opts, OptionKey<std::string_view>, int>);
static_assert(!CanSet<Opts, OptionKey<std::string_view>, std::nullptr_t>);
// Enums: EnumValue only, so a plain string is not silently taken as a choice.
static_assert(CanSet<Opts, OptionKey<EnumValue>, EnumValue>);
static_assert(!CanSet<Opts, OptionKey<EnumValue>, const char*>);
static_assert(!CanSet<Opts, OptionKey<EnumValue>, int>);

// The same rules hold for the load, delegate and execute scopes.
static_assert(CanSetNamed<LoadBackendOptionsMap, OptionKey<int64_t>, int>);
static_assert(!CanSetNamed<LoadBackendOptionsMap, OptionKey<int64_t>, const char*>);
static_assert(CanSetNamed<DelegateOptionsMap, OptionKey<bool>, bool>);
static_assert(!CanSetNamed<DelegateOptionsMap, OptionKey<bool>, const char*>);
static_assert(CanSetNamed<ExecuteOptions, OptionKey<EnumValue>, EnumValue>);
static_assert(!CanSetNamed<ExecuteOptions, OptionKey<EnumValue>, int>);

// Only the five value types can make a key.
template <typename T>
concept CanMakeKey = requires {
  typename OptionKey<T>;
}
&&OptionValueType<T>;
static_assert(CanMakeKey<int64_t> && CanMakeKey<bool> && CanMakeKey<double> &&
              CanMakeKey<std::string_view> && CanMakeKey<EnumValue>);
static_assert(!OptionValueType<int> && !OptionValueType<std::string> && !OptionValueType<float>);

TEST(TypedKey, ChecksAreCompileTime) {
  constexpr OptionKey<int64_t> key{"num_threads"};
  static_assert(key.length == 11);
  BackendOptions<1> opts;
  EXPECT_TRUE(opts.set(key, 3).is_ok());
}

}  // namespace
}  // namespace tessera
