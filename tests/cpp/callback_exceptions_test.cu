// callback_memory_resource: an exception of the allocate callback reaches the caller with its own
// type, whichever way the resource is called, and never leaks into a later, unrelated failure; one
// of the deallocate callback is reported and the process goes on. Host memory only (no GPU).
#include "mr_conformance.hpp"

#include <rmm/error.hpp>
#include <rmm/mr/callback_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <gtest/gtest.h>

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>

namespace rmm::test {
namespace {

/// An exception type RMM knows nothing of, carrying the requested size.
struct user_error {
  std::size_t bytes;
};

/// A std::bad_alloc of the user's own (not one of RMM's).
struct user_bad_alloc : std::bad_alloc {
  [[nodiscard]] char const* what() const noexcept override { return "user_bad_alloc"; }
};

void* throw_user_error(std::size_t bytes, cuda::stream_ref, void*) { throw user_error{bytes}; }
void* throw_user_bad_alloc(std::size_t, cuda::stream_ref, void*) { throw user_bad_alloc{}; }
void* throw_runtime_error(std::size_t, cuda::stream_ref, void*)
{
  throw std::runtime_error{"callback says no"};
}
void* return_null(std::size_t, cuda::stream_ref, void*) { return nullptr; }
void deallocate_nothing(void*, std::size_t, cuda::stream_ref, void*) {}

void* new_bytes(std::size_t bytes, cuda::stream_ref, void*) { return ::operator new(bytes); }
void delete_bytes(void* p, std::size_t, cuda::stream_ref, void*) { ::operator delete(p); }
void delete_then_throw(void* p, std::size_t, cuda::stream_ref, void*)
{
  ::operator delete(p);
  throw std::runtime_error{"the free callback says no"};
}

TEST(CallbackExceptions, ReachTheCallerWithTheirOwnType)
{
  rmm::mr::callback_memory_resource mr{throw_user_error, deallocate_nothing};
  try {
    (void)mr.allocate(default_stream(), 96);
    FAIL() << "allocate returned";
  } catch (user_error const& e) {
    EXPECT_EQ(e.bytes, 96U);
  }
  EXPECT_THROW((void)mr.allocate_sync(64), user_error);

  rmm::mr::callback_memory_resource bad{throw_user_bad_alloc, deallocate_nothing};
  try {
    (void)bad.allocate(default_stream(), 64);
    FAIL() << "allocate returned";
  } catch (user_bad_alloc const& e) {
    EXPECT_STREQ(e.what(), "user_bad_alloc");
  }

  rmm::mr::callback_memory_resource runtime{throw_runtime_error, deallocate_nothing};
  try {
    (void)runtime.allocate(default_stream(), 64);
    FAIL() << "allocate returned";
  } catch (std::runtime_error const& e) {
    EXPECT_EQ(std::string{e.what()}, "callback says no");
  }
}

TEST(CallbackExceptions, KeepTheirTypeThroughCopiesRefsAndAnyResource)
{
  rmm::mr::callback_memory_resource mr{throw_user_error, deallocate_nothing};
  auto copy = mr;
  EXPECT_THROW((void)copy.allocate(default_stream(), 64), user_error);
  rmm::device_async_resource_ref ref{mr};
  EXPECT_THROW((void)ref.allocate(default_stream(), 64, 256), user_error);
  EXPECT_THROW((void)ref.allocate_sync(64, 256), user_error);
  cuda::mr::any_resource<cuda::mr::device_accessible> any{mr};
  EXPECT_THROW((void)any.allocate(default_stream(), 64, 256), user_error);
}

TEST(CallbackExceptions, NullIsStillOutOfMemoryAndSuccessStillWorks)
{
  rmm::mr::callback_memory_resource null{return_null, deallocate_nothing};
  EXPECT_THROW((void)null.allocate(default_stream(), 64), rmm::out_of_memory);
  rmm::mr::callback_memory_resource ok{new_bytes, delete_bytes};
  void* p = ok.allocate(default_stream(), 64);
  ASSERT_NE(p, nullptr);
  ok.deallocate(default_stream(), p, 64);
}

TEST(CallbackExceptions, UnderAPoolBecomeThePoolsOwnFailureAndDoNotLinger)
{
  rmm::mr::callback_memory_resource throws{throw_user_error, deallocate_nothing};
  // The pool grows from its upstream on demand; the callback's failure is the pool's to report,
  // as an RMM exception (RMM's pool catches an upstream's exception and throws out_of_memory).
  rmm::mr::pool_memory_resource pool{throws, 0};
  EXPECT_THROW((void)pool.allocate(default_stream(), 1024), rmm::bad_alloc);
  // The exception the pool saw is not rethrown by a later, unrelated failure on this thread.
  rmm::mr::callback_memory_resource null{return_null, deallocate_nothing};
  EXPECT_THROW((void)null.allocate(default_stream(), 64), rmm::out_of_memory);
  // Nor by a later call of the same resource that fails another way.
  EXPECT_THROW((void)throws.allocate(default_stream(), 32), user_error);
}

/// Allocates through the callback_memory_resource passed as the argument.
void* allocate_through(std::size_t bytes, cuda::stream_ref stream, void* arg)
{
  return static_cast<rmm::mr::callback_memory_resource*>(arg)->allocate(stream, bytes);
}

TEST(CallbackExceptions, PassThroughANestedCallbackResource)
{
  rmm::mr::callback_memory_resource inner{throw_user_error, deallocate_nothing};
  rmm::mr::callback_memory_resource outer{allocate_through, deallocate_nothing, &inner};
  try {
    (void)outer.allocate(default_stream(), 48);
    FAIL() << "allocate returned";
  } catch (user_error const& e) {
    EXPECT_EQ(e.bytes, 48U);
  }
  rmm::mr::callback_memory_resource inner_null{return_null, deallocate_nothing};
  rmm::mr::callback_memory_resource outer_null{allocate_through, deallocate_nothing, &inner_null};
  EXPECT_THROW((void)outer_null.allocate(default_stream(), 48), rmm::out_of_memory);
}

// RMM's deallocate is noexcept: there the exception ends the process. Here it is caught, reported
// on stderr, and the resource goes on serving.
TEST(CallbackExceptions, AThrowingDeallocateCallbackIsReportedAndTheProcessGoesOn)
{
  rmm::mr::callback_memory_resource mr{new_bytes, delete_then_throw};
  void* p = mr.allocate(default_stream(), 256);
  testing::internal::CaptureStderr();
  mr.deallocate(default_stream(), p, 256);
  std::string const reported = testing::internal::GetCapturedStderr();
  EXPECT_NE(reported.find("the free callback says no"), std::string::npos) << reported;
  void* q = mr.allocate(default_stream(), 512);
  EXPECT_NE(q, nullptr);
  testing::internal::CaptureStderr();
  mr.deallocate(default_stream(), q, 512);
  EXPECT_NE(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace rmm::test
