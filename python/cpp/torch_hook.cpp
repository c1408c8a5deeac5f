// The C++ exceptions by which the PyTorch allocate hook (src/torch_allocator.rs) reports a failed
// allocation. PyTorch's pluggable allocator does not test the hook's result for null, so a failure
// must leave the hook as a C++ exception, which PyTorch's C++ code unwinds and its Python bindings
// translate: `c10::OutOfMemoryError` becomes `torch.OutOfMemoryError` (`torch.cuda.OutOfMemoryError`),
// another `c10::Error` a `RuntimeError`, each with the exception's message; any other
// `std::exception` a `RuntimeError` with its `what()`. Rust cannot throw a C++ exception.
//
// PyTorch's types are made by PyTorch's own code, found in its loaded libraries, so nothing here
// depends on PyTorch's headers: `c10::Error`'s constructor from libc10 builds the object (in room
// larger than the type), whose virtual table is then set to that of the error type (both classes
// have the same members: c10's error types only inherit `c10::Error`'s constructors), and the
// type's own `type_info` is thrown with it. Each symbol's mangled name spells its signature, so a
// PyTorch whose types differ is not found, and then the hook throws `rmm_rs::allocation_error`, a
// `std::bad_alloc` with the message (a `RuntimeError` with the message in Python, as RMM's hook).
#include <cxxabi.h>
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <new>
#include <string>
#include <typeinfo>
#include <utility>

namespace rmm_rs {

// The hook's exception where PyTorch's error types are not found.
class allocation_error : public std::bad_alloc {
 public:
  explicit allocation_error(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace rmm_rs

namespace {

// c10::SourceLocation (c10/util/StringUtil.h): where the error was raised.
struct SourceLocation {
  const char* function;
  const char* file;
  std::uint32_t line;
};

// c10::Error::Error(SourceLocation, std::string), called as a function whose first argument is
// the object (the Itanium C++ ABI's convention for constructors).
using ErrorConstructor = void (*)(void*, SourceLocation, std::string);

// Room for the thrown object: c10::Error holds a virtual table pointer, three strings, a vector,
// a shared pointer and two pointers (about 130 bytes in PyTorch 2.x).
constexpr std::size_t kErrorRoom = 512;

// The address of `symbol` in the first of `libraries` that is loaded and defines it (none is
// loaded here: RTLD_NOLOAD only finds those PyTorch loaded).
void* find(std::initializer_list<const char*> libraries, const char* symbol) {
  for (const char* library : libraries) {
    void* handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* address = dlsym(handle, symbol);
    dlclose(handle);  // PyTorch keeps the library loaded
    if (address != nullptr) return address;
  }
  return nullptr;
}

struct ErrorType {
  void* vtable;
  void* type_info;
};

struct TorchErrors {
  ErrorConstructor construct = nullptr;
  ErrorType error{};
  ErrorType out_of_memory{};

  TorchErrors() {
    // libc10_cuda.so and libtorch_python.so both define c10::OutOfMemoryError's virtual table and
    // type_info (the type has no key function); libc10.so defines c10::Error's.
    auto const libraries = {"libc10.so", "libc10_cuda.so", "libtorch_python.so"};
    construct = reinterpret_cast<ErrorConstructor>(
        find(libraries, "_ZN3c105ErrorC1ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"));
    error = {find(libraries, "_ZTVN3c105ErrorE"), find(libraries, "_ZTIN3c105ErrorE")};
    out_of_memory = {find(libraries, "_ZTVN3c1016OutOfMemoryErrorE"), find(libraries, "_ZTIN3c1016OutOfMemoryErrorE")};
  }

  const ErrorType* type(bool is_out_of_memory) const {
    const ErrorType& t = is_out_of_memory ? out_of_memory : error;
    return construct != nullptr && t.vtable != nullptr && t.type_info != nullptr ? &t : nullptr;
  }
};

// Looked up at the first failure, when PyTorch (which calls the hook) is loaded.
const TorchErrors& torch_errors() {
  static const TorchErrors errors;
  return errors;
}

// Destroys the thrown object through its virtual destructor (c10::Error derives from
// std::exception, its primary base).
void destroy(void* object) { static_cast<std::exception*>(object)->~exception(); }

[[noreturn]] void throw_torch_error(const ErrorType& type, const TorchErrors& errors, std::string message) {
  void* object = __cxxabiv1::__cxa_allocate_exception(kErrorRoom);
  try {
    errors.construct(object, SourceLocation{"rmm_rs_torch_allocate", "torch_hook.cpp", __LINE__}, std::move(message));
  } catch (...) {
    __cxxabiv1::__cxa_free_exception(object);
    throw;
  }
  // The virtual table's address point follows its offset-to-top and type_info entries.
  *static_cast<void**>(object) = static_cast<char*>(type.vtable) + 2 * sizeof(void*);
  __cxxabiv1::__cxa_throw(object, static_cast<std::type_info*>(type.type_info), destroy);
}

}  // namespace

// Throws the exception for a failed allocation with `message` (`len` bytes of UTF-8): PyTorch's
// c10::OutOfMemoryError when `out_of_memory`, else c10::Error, where PyTorch is loaded; else
// rmm_rs::allocation_error.
extern "C" [[noreturn]] void rmm_rs_throw_allocation_error(const char* message, std::size_t len, bool out_of_memory) {
  std::string text(message, len);
  const TorchErrors& errors = torch_errors();
  if (const ErrorType* type = errors.type(out_of_memory)) throw_torch_error(*type, errors, std::move(text));
  throw rmm_rs::allocation_error(std::move(text));
}
