// The backend registry: names, duplicates, lookups with suggestions, ownership and static
// self-registration.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "tessera/backend/registry.h"
#include "tests/backend/test_support.h"

namespace tessera::test {
namespace {

// Registered by a static object when this test binary loads, like a backend library does.
class SelfRegistered : public testing::StubBackend {};
TESSERA_REGISTER_BACKEND("self_registered", SelfRegistered);

TEST(Registry, StaticSelfRegistration) {
  Result<BackendInterface*> b = get_backend("self_registered");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_NE(dynamic_cast<SelfRegistered*>(*b), nullptr);
}

TEST(Registry, RegisterLookUpUnregister) {
  testing::StubBackend stub(kTestSchema);
  ASSERT_OK(register_backend("reg_a", &stub));
  Result<BackendInterface*> b = get_backend("reg_a");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, &stub);
  EXPECT_EQ((*b)->option_schema().size(), std::size(kTestSchema));
  ASSERT_OK(unregister_backend("reg_a"));
  EXPECT_EQ(get_backend("reg_a").error(), Error::NotFound);
  EXPECT_EQ(unregister_backend("reg_a").code(), Error::NotFound);
}

TEST(Registry, RejectsDuplicates) {
  ScopedStub first("reg_dup");
  testing::StubBackend other;
  Status s = register_backend("reg_dup", &other);
  EXPECT_EQ(s.code(), Error::AlreadyExists);
  EXPECT_STREQ(s.message(), "backend 'reg_dup' is already registered");
  EXPECT_EQ(*get_backend("reg_dup"), &first.backend());
}

TEST(Registry, RejectsBadNames) {
  testing::StubBackend stub;
  Status empty = register_backend("", &stub);
  EXPECT_EQ(empty.code(), Error::InvalidArgument);
  EXPECT_STREQ(empty.message(), "backend name is empty");
  Status too_long = register_backend(std::string(32, 'b'), &stub);
  EXPECT_EQ(too_long.code(), Error::InvalidArgument);
  EXPECT_NE(std::string(too_long.message()).find("32 characters; at most 31 allowed"),
            std::string::npos);
  EXPECT_OK(register_backend(std::string(31, 'b'), &stub));
  EXPECT_OK(unregister_backend(std::string(31, 'b')));
  Status dot = register_backend("xnn.pack", &stub);
  EXPECT_EQ(dot.code(), Error::InvalidArgument);
  EXPECT_STREQ(dot.message(),
               "backend name 'xnn.pack' has character '.'; use letters, digits, '_' and '-'");
  EXPECT_EQ(register_backend("a#0", &stub).code(), Error::InvalidArgument);
  EXPECT_EQ(register_backend("ok", static_cast<BackendInterface*>(nullptr)).code(),
            Error::InvalidArgument);
}

TEST(Registry, RejectsABackendWithAMalformedSchema) {
  static constexpr OptionSpec kBad[] = {
      OptionSpec::integer(OptionKey<int64_t>{"n"}, 9, 0, 1, kInitScopes, "")};
  testing::StubBackend stub(kBad);
  Status s = register_backend("reg_bad_schema", &stub);
  EXPECT_EQ(s.code(), Error::InvalidArgument);
  EXPECT_EQ(get_backend("reg_bad_schema").error(), Error::NotFound);
}

TEST(Registry, UnknownNameSuggestsAndListsRegistered) {
  ScopedStub xnnpack("xnnpack");
  ScopedStub opencl("opencl");
  Result<BackendInterface*> b = get_backend("xnnpak");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error(), Error::NotFound);
  std::string message = b.status().message();
  EXPECT_EQ(message.rfind("unknown backend 'xnnpak' (did you mean 'xnnpack'?; registered: ", 0), 0u)
      << message;
  EXPECT_NE(message.find("opencl"), std::string::npos);
  Result<BackendInterface*> far = get_backend("tpu");
  EXPECT_EQ(std::string(far.status().message()).find("did you mean"), std::string::npos);
}

TEST(Registry, ListsNamesSorted) {
  ScopedStub b("reg_list_b");
  ScopedStub a("reg_list_a");
  std::vector<std::string> names = registered_backends();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "reg_list_a"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "reg_list_b"), names.end());
}

TEST(Registry, OwnsAUniquePtrBackendUntilUnregistered) {
  static bool destroyed = false;
  struct Tracked : testing::StubBackend {
    ~Tracked() override { destroyed = true; }
  };
  destroyed = false;
  ASSERT_OK(register_backend("reg_owned", std::make_unique<Tracked>()));
  EXPECT_FALSE(destroyed);
  ASSERT_OK(unregister_backend("reg_owned"));
  EXPECT_TRUE(destroyed);
}

TEST(Registry, AFailedRegistrationDestroysAnOwnedBackend) {
  static bool destroyed = false;
  struct Tracked : testing::StubBackend {
    ~Tracked() override { destroyed = true; }
  };
  ScopedStub taken("reg_taken");
  destroyed = false;
  EXPECT_EQ(register_backend("reg_taken", std::make_unique<Tracked>()).code(),
            Error::AlreadyExists);
  EXPECT_TRUE(destroyed);
}

TEST(Registry, ApplicationRegistersItsOwnConfiguredInstance) {
  // An application may construct a backend with its own settings and register that instance.
  testing::StubBackend configured(kTestSchema);
  configured.available = false;
  ASSERT_OK(register_backend("app_instance", &configured));
  EXPECT_FALSE((*get_backend("app_instance"))->is_available());
  ASSERT_OK(unregister_backend("app_instance"));
}

TEST(BackendInterface, DefaultsOfOptionalHooks) {
  struct Minimal : BackendInterface {
    bool is_available() const override { return true; }
    Result<DelegateHandle*> init(BackendInitContext&, FreeableBuffer*,
                                 Span<const CompileSpec>) const override {
      return Status(Error::NotImplemented);
    }
    Status execute(BackendExecutionContext&, DelegateHandle*, Span<EValue*>) const override {
      return Status::ok();
    }
  } minimal;
  EXPECT_TRUE(minimal.option_schema().empty());
  EXPECT_FALSE(minimal.supports_op(OpView{0, nullptr, nullptr}));
  Result<Payload> payload = minimal.preprocess(SubgraphView{nullptr, {}}, {});
  EXPECT_EQ(payload.error(), Error::NotSupported);
  minimal.destroy(nullptr);
}

TEST(FreeableBuffer, FreesOnceAndMoves) {
  static int frees = 0;
  frees = 0;
  static const char kData[] = "payload";
  auto free_fn = [](void*, const void* data, size_t size) {
    EXPECT_EQ(data, kData);
    EXPECT_EQ(size, sizeof kData);
    ++frees;
  };
  {
    FreeableBuffer a(kData, sizeof kData, free_fn);
    FreeableBuffer b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(b.size(), sizeof kData);
    b.free();
    b.free();
    EXPECT_EQ(b.data(), nullptr);
  }
  EXPECT_EQ(frees, 1);
  { FreeableBuffer c(kData, sizeof kData, free_fn); }
  EXPECT_EQ(frees, 2);
}

}  // namespace
}  // namespace tessera::test
