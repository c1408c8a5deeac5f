// rmm-rs: out-of-line parts of the C++ objects Rust calls (see include/rmm/detail/rust_bridge.hpp).
// Compiled by build.rs with the system C++ compiler; no CUDA headers.

#include "rmm-rs/src/bridge.rs.h"

#include <rmm/error.hpp>

#include <cstdint>
#include <exception>
#include <iostream>
#include <new>
#include <stdexcept>

namespace rmm_rs {

namespace {
// Classifies the exception in flight. Must be called inside a catch block.
void set_from_current_exception(Outcome& out)
{
  try {
    throw;
  } catch (rmm::out_of_memory const& e) {
    out.kind    = ErrorKind::OutOfMemory;
    out.message = rust::String::lossy(e.what());
  } catch (std::bad_alloc const& e) {
    out.kind    = ErrorKind::BadAlloc;
    out.message = rust::String::lossy(e.what());
  } catch (rmm::cuda_error const& e) {
    out.kind    = ErrorKind::Cuda;
    out.message = rust::String::lossy(e.what());
  } catch (std::out_of_range const& e) {
    out.kind    = ErrorKind::OutOfRange;
    out.message = rust::String::lossy(e.what());
  } catch (std::logic_error const& e) {
    out.kind    = ErrorKind::Logic;
    out.message = rust::String::lossy(e.what());
  } catch (std::exception const& e) {
    out.kind    = ErrorKind::BadAlloc;
    out.message = rust::String::lossy(e.what());
  } catch (...) {
    out.kind    = ErrorKind::BadAlloc;
    out.message = "unknown C++ exception";
  }
  out.ptr = 0;
}
}  // namespace

void CppResource::allocate(std::size_t bytes,
                           std::size_t alignment,
                           std::size_t stream,
                           Outcome& out) const noexcept
{
  try {
    out.ptr  = reinterpret_cast<std::uintptr_t>(do_allocate(bytes, alignment, stream));
    out.kind = ErrorKind::Ok;
  } catch (...) {
    set_from_current_exception(out);
  }
}

void CppResource::deallocate(std::size_t ptr,
                             std::size_t bytes,
                             std::size_t alignment,
                             std::size_t stream) const noexcept
{
  do_deallocate(reinterpret_cast<void*>(ptr), bytes, alignment, stream);
}

void CppAllocationCallbacks::allocate(std::size_t bytes, std::size_t stream, Outcome& out) const noexcept
{
  try {
    out.ptr  = reinterpret_cast<std::uintptr_t>(do_allocate(bytes, stream));
    out.kind = ErrorKind::Ok;
  } catch (...) {
    set_from_current_exception(out);
  }
}

void CppAllocationCallbacks::deallocate(std::size_t ptr, std::size_t bytes, std::size_t stream) const noexcept
{
  try {
    do_deallocate(reinterpret_cast<void*>(ptr), bytes, stream);
  } catch (std::exception const& e) {
    std::cerr << "rmm: deallocate callback threw: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "rmm: deallocate callback threw an unknown exception\n";
  }
}

}  // namespace rmm_rs
