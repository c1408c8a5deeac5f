/*
 * replay: replays RMM allocation logs against rmm::mr::pool_memory_resource, written once against
 * the rmm:: C++ API and built twice like alloc_bench.cu -- against the rmm-rs headers + librmm_cpp.a
 * and against RMM 26.10's wheel -- so that "peak bytes taken from the upstream" can be compared
 * for the same log. `benches/run_side_by_side.sh` builds and runs both.
 *
 *   replay [--initial-pool BYTES] [--runs N] [--check] LOG...
 *
 * The pool's upstream is `counting_upstream`: a CCCL resource forwarding to
 * rmm::mr::cuda_memory_resource and counting the bytes it holds (current and peak).
 *
 * Log format (the same reader as the Rust `rmm_replay`, benches/replay/src/log.rs): a header
 * naming the columns Thread,Time,Action,Pointer,Size,Stream (any order, any case; Thread and Time
 * optional and not interpreted), then one row per event; spaces around fields, blank lines and
 * '\r' are ignored. Pointer and Stream are hexadecimal with or without 0x; null may be written
 * (nil), nil, null or nullptr. Size is decimal. Action is allocate, free or "allocate failure"
 * (skipped). A free of null is skipped. Errors name the line: unknown action, bad number, wrong
 * field count, a free of a pointer that is not live, an allocation returning a live pointer, a
 * free whose size differs from the allocation's.
 *
 * Replay: in file order on one thread (also for logs of several threads); every logged pointer is
 * mapped to the pointer the pool returns; each distinct logged stream gets its own rmm::cuda_stream
 * except 0x0 (default), 0x1 (legacy) and 0x2 (per-thread default), which stay themselves; every
 * request is aligned to 256 bytes. Each log gets a fresh pool: a cold replay (growth included),
 * then --runs warm ones (default 5) on the same pool. Blocks the log leaves live are freed after
 * each replay, untimed; the streams are synchronised before the clock stops.
 *
 * Output: '#' comment lines and CSV rows impl,resource,workload,param,value,unit with resource
 * "pool", workload "replay", param the log's file name without .csv, and the unit naming the
 * quantity: ops, ns_per_op (median of the warm replays), cold_ns_per_op, peak_upstream_bytes
 * (during the cold replay), peak_live_bytes (from the log), fragmentation (upstream / live).
 * --check only reads the logs (no GPU needed) and prints ops and peak_live_bytes.
 *
 * Exit status: 0 on success (also "skipped: no CUDA device"), 1 when a log is malformed or a
 * replay failed, 2 for a usage error.
 */

#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#ifndef RMM_BENCH_IMPL
#error "define RMM_BENCH_IMPL as a string literal naming the implementation, e.g. \"rmm-rs\""
#endif

// Named, not anonymous: nvcc warns (#177) about friend functions in an anonymous namespace.
namespace replay {

constexpr std::size_t alignment = 256;

// ------------------------------------------------------------------------------------------------
// The log
// ------------------------------------------------------------------------------------------------

struct op {
  bool allocate;
  std::uint32_t slot;    ///< index into the replay's pointer table
  std::uint32_t stream;  ///< index into parsed_log::streams
  std::size_t size;
};

struct parsed_log {
  std::vector<op> ops;
  std::vector<std::size_t> lines;     ///< source line of each op (1-based)
  std::vector<std::uintptr_t> streams;  ///< distinct logged stream handles, first appearance first
  std::size_t slots{0};
  std::vector<op> live_at_end;  ///< freed after each replay, untimed
  std::size_t peak_live{0};
  std::size_t rows{0};
  std::size_t failures{0};
  std::size_t null_frees{0};
  std::size_t threads{0};
};

struct log_error : std::runtime_error {
  log_error(std::size_t line, std::string const& msg)
    : std::runtime_error{line == 0 ? msg : "line " + std::to_string(line) + ": " + msg}
  {
  }
};

std::string trim(std::string const& s)
{
  auto const b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) { return {}; }
  auto const e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

std::string lower(std::string s)
{
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> split_fields(std::string const& line)
{
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    auto const comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) { return out; }
    start = comma + 1;
  }
}

std::string hex(std::uintptr_t v)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

/// Hexadecimal with or without 0x, or a spelling of null.
std::optional<std::uintptr_t> parse_handle(std::string const& field)
{
  auto const l = lower(field);
  if (l == "(nil)" || l == "nil" || l == "null" || l == "nullptr") { return 0; }
  std::string digits = l.rfind("0x", 0) == 0 ? l.substr(2) : l;
  if (digits.empty() || digits.size() > 16 ||
      !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isxdigit(c) != 0; })) {
    return std::nullopt;
  }
  return static_cast<std::uintptr_t>(std::stoull(digits, nullptr, 16));
}

std::optional<std::size_t> parse_size(std::string const& field)
{
  if (field.empty() || field.size() > 19 ||
      !std::all_of(field.begin(), field.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
    return std::nullopt;
  }
  return static_cast<std::size_t>(std::stoull(field));
}

constexpr char const* header_text = "Thread,Time,Action,Pointer,Size,Stream";

parsed_log parse_log(std::string const& path)
{
  std::ifstream in{path};
  if (!in) { throw log_error{0, "cannot open"}; }
  parsed_log log;
  struct live_block {
    std::uint32_t slot;
    std::size_t size;
    std::uint32_t stream;
    std::size_t line;
  };
  std::unordered_map<std::uintptr_t, live_block> live;
  std::vector<std::uint32_t> free_slots;
  std::unordered_map<std::uintptr_t, std::uint32_t> stream_index;
  std::unordered_set<std::string> threads;
  std::size_t live_bytes = 0;
  bool have_header       = false;
  std::size_t ncols = 0, c_thread = ~std::size_t{0}, c_action = 0, c_pointer = 0, c_size = 0, c_stream = 0;

  std::string raw;
  std::size_t line = 0;
  while (std::getline(in, raw)) {
    ++line;
    auto const text = trim(raw);
    if (text.empty()) { continue; }
    auto const fields = split_fields(text);
    if (!have_header) {
      have_header = true;
      ncols       = fields.size();
      auto find   = [&](char const* name, char const* shown, bool required) {
        for (std::size_t i = 0; i < fields.size(); ++i) {
          if (lower(fields[i]) == name) { return i; }
        }
        if (required) {
          throw log_error{line, "the header '" + text + "' lacks the column " + shown + " (expected " + header_text + ")"};
        }
        return ~std::size_t{0};
      };
      c_thread  = find("thread", "Thread", false);
      c_action  = find("action", "Action", true);
      c_pointer = find("pointer", "Pointer", true);
      c_size    = find("size", "Size", true);
      c_stream  = find("stream", "Stream", true);
      continue;
    }
    ++log.rows;
    if (fields.size() != ncols) {
      throw log_error{line, "expected " + std::to_string(ncols) + " fields as in the header, found " +
                              std::to_string(fields.size()) + ": '" + text + "'"};
    }
    if (c_thread != ~std::size_t{0}) { threads.insert(fields[c_thread]); }
    auto const action = lower(fields[c_action]);
    bool allocate     = false;
    if (action == "allocate") {
      allocate = true;
    } else if (action == "free") {
      allocate = false;
    } else if (action == "allocate failure") {
      ++log.failures;
      continue;
    } else {
      throw log_error{line, "unknown action '" + fields[c_action] + "' (expected allocate, free or allocate failure)"};
    }
    auto const ptr = parse_handle(fields[c_pointer]);
    if (!ptr) { throw log_error{line, "bad Pointer '" + fields[c_pointer] + "' (expected hexadecimal, e.g. 0x7f2a40000000)"}; }
    auto const size = parse_size(fields[c_size]);
    if (!size) { throw log_error{line, "bad Size '" + fields[c_size] + "' (expected a decimal number of bytes)"}; }
    auto const handle = parse_handle(fields[c_stream]);
    if (!handle) { throw log_error{line, "bad Stream '" + fields[c_stream] + "' (expected hexadecimal, e.g. 0x0)"}; }
    auto [it, inserted] = stream_index.emplace(*handle, static_cast<std::uint32_t>(log.streams.size()));
    if (inserted) { log.streams.push_back(*handle); }
    auto const stream = it->second;

    if (allocate) {
      if (*ptr == 0 && *size > 0) {
        throw log_error{line, "allocate of " + std::to_string(*size) + " bytes logged with a null pointer"};
      }
      if (auto const old = live.find(*ptr); old != live.end()) {
        throw log_error{line, "allocate returned " + hex(*ptr) + ", which is still live (allocated at line " +
                                std::to_string(old->second.line) + ", not freed)"};
      }
      std::uint32_t slot{};
      if (free_slots.empty()) {
        slot = static_cast<std::uint32_t>(log.slots++);
      } else {
        slot = free_slots.back();
        free_slots.pop_back();
      }
      log.ops.push_back({true, slot, stream, *size});
      log.lines.push_back(line);
      if (*ptr != 0) {
        live.emplace(*ptr, live_block{slot, *size, stream, line});
        live_bytes += *size;
        log.peak_live = std::max(log.peak_live, live_bytes);
      } else {
        free_slots.push_back(slot);  // zero bytes, null: nothing to free later
      }
    } else {
      if (*ptr == 0) {
        ++log.null_frees;
        continue;
      }
      auto const b = live.find(*ptr);
      if (b == live.end()) {
        throw log_error{line, "free of unknown pointer " + hex(*ptr) + ": not allocated earlier in the log, or already freed"};
      }
      if (b->second.size != *size) {
        throw log_error{line, "free of " + hex(*ptr) + " with " + std::to_string(*size) + " bytes, but it was allocated with " +
                                std::to_string(b->second.size) + " bytes at line " + std::to_string(b->second.line)};
      }
      live_bytes -= *size;
      free_slots.push_back(b->second.slot);
      log.ops.push_back({false, b->second.slot, stream, *size});
      log.lines.push_back(line);
      live.erase(b);
    }
  }
  if (!have_header) { throw log_error{0, std::string{"empty log: no header line (expected "} + header_text + ")"}; }
  std::vector<live_block> rest;
  rest.reserve(live.size());
  for (auto const& kv : live) { rest.push_back(kv.second); }
  std::sort(rest.begin(), rest.end(), [](auto const& a, auto const& b) { return a.line < b.line; });
  for (auto const& b : rest) { log.live_at_end.push_back({false, b.slot, b.stream, b.size}); }
  log.threads = threads.size();
  return log;
}

// ------------------------------------------------------------------------------------------------
// The counting upstream
// ------------------------------------------------------------------------------------------------

/// Forwards to cuda_memory_resource and counts the bytes it holds. Copies share the counts (the
/// pool keeps its own copy of its upstream).
///
/// The copy and move operations are written out: defaulted ones would be inferred
/// __host__ __device__ when any_resource copies the resource, and nvcc warns (#20011) that they
/// call shared_ptr's host-only copy.
class counting_upstream {
 public:
  struct counts {
    std::mutex lock;
    std::size_t current{0};
    std::size_t peak{0};
    std::size_t allocations{0};
  };

  counting_upstream() {}
  counting_upstream(counting_upstream const& other) : upstream_{other.upstream_}, counts_{other.counts_} {}
  counting_upstream(counting_upstream&& other) noexcept : upstream_{other.upstream_}, counts_{std::move(other.counts_)} {}
  counting_upstream& operator=(counting_upstream const& other)
  {
    upstream_ = other.upstream_;
    counts_   = other.counts_;
    return *this;
  }
  counting_upstream& operator=(counting_upstream&& other) noexcept
  {
    upstream_ = other.upstream_;
    counts_   = std::move(other.counts_);
    return *this;
  }
  ~counting_upstream() {}

  void* allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t align = alignment)
  {
    void* p = upstream_.allocate(stream, bytes, align);
    add(bytes);
    return p;
  }
  void deallocate(cuda::stream_ref stream, void* p, std::size_t bytes, std::size_t align = alignment) noexcept
  {
    upstream_.deallocate(stream, p, bytes, align);
    sub(bytes);
  }
  void* allocate_sync(std::size_t bytes, std::size_t align = alignment)
  {
    void* p = upstream_.allocate_sync(bytes, align);
    add(bytes);
    return p;
  }
  void deallocate_sync(void* p, std::size_t bytes, std::size_t align = alignment) noexcept
  {
    upstream_.deallocate_sync(p, bytes, align);
    sub(bytes);
  }

  [[nodiscard]] std::shared_ptr<counts> const& state() const noexcept { return counts_; }

  bool operator==(counting_upstream const& other) const noexcept { return counts_ == other.counts_; }
  bool operator!=(counting_upstream const& other) const noexcept { return !(*this == other); }
  friend void get_property(counting_upstream const&, cuda::mr::device_accessible) noexcept {}

 private:
  void add(std::size_t bytes)
  {
    std::lock_guard<std::mutex> guard{counts_->lock};
    counts_->current += bytes;
    counts_->peak = std::max(counts_->peak, counts_->current);
    ++counts_->allocations;
  }
  void sub(std::size_t bytes) noexcept
  {
    std::lock_guard<std::mutex> guard{counts_->lock};
    counts_->current -= bytes;
  }

  rmm::mr::cuda_memory_resource upstream_{};
  std::shared_ptr<counts> counts_ = std::make_shared<counts>();
};

static_assert(cuda::mr::resource_with<counting_upstream, cuda::mr::device_accessible>);

// ------------------------------------------------------------------------------------------------
// Replay
// ------------------------------------------------------------------------------------------------

using bench_clock = std::chrono::steady_clock;

struct options {
  std::size_t initial_pool{0};
  int runs{5};
  bool check{false};
  std::vector<std::string> logs;
};

/// The logged streams mapped to streams of this process.
struct stream_map {
  std::vector<rmm::cuda_stream> owned;
  std::vector<cuda::stream_ref> refs;

  explicit stream_map(std::vector<std::uintptr_t> const& logged)
  {
    owned.reserve(logged.size());
    for (auto const h : logged) {
      if (h <= 2) {  // default (0), cudaStreamLegacy (1), cudaStreamPerThread (2)
        refs.emplace_back(reinterpret_cast<cudaStream_t>(h));
      } else {
        owned.emplace_back();
        refs.emplace_back(owned.back().value());
      }
    }
  }
  void synchronize() const
  {
    for (auto const s : refs) { RMM_CUDA_TRY(cudaStreamSynchronize(s.get())); }
  }
};

std::string op_error(parsed_log const& log, std::size_t i, char const* what)
{
  auto const& o = log.ops[i];
  return "line " + std::to_string(log.lines[i]) + ": " + (o.allocate ? "allocate" : "free") + " of " +
         std::to_string(o.size) + " bytes on logged stream " + hex(log.streams[o.stream]) + " failed: " + what;
}

/// One replay; returns seconds for the logged operations (streams synchronised).
double replay_once(rmm::device_async_resource_ref mr, parsed_log const& log, stream_map const& streams, std::vector<void*>& table)
{
  auto const t0 = bench_clock::now();
  for (std::size_t i = 0; i < log.ops.size(); ++i) {
    auto const& o = log.ops[i];
    auto const s  = streams.refs[o.stream];
    if (o.allocate) {
      try {
        table[o.slot] = mr.allocate(s, o.size, alignment);
      } catch (std::exception const& e) {
        throw std::runtime_error{op_error(log, i, e.what())};
      }
    } else {
      mr.deallocate(s, table[o.slot], o.size, alignment);
    }
  }
  streams.synchronize();
  double const seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
  for (auto const& o : log.live_at_end) { mr.deallocate(streams.refs[o.stream], table[o.slot], o.size, alignment); }
  streams.synchronize();
  return seconds;
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  auto const n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string log_name(std::string const& path)
{
  auto const slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.size() > 4 && base.compare(base.size() - 4, 4, ".csv") == 0) { base.resize(base.size() - 4); }
  return base;
}

/// Returns false when the log could not be read or replayed (the message is on stderr).
bool run_log(options const& opts, std::string const& path)
{
  parsed_log log;
  try {
    log = parse_log(path);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "replay: %s: %s\n", path.c_str(), e.what());
    return false;
  }
  std::string const name     = log_name(path);
  char const* const resource = opts.check ? "none" : "pool";
  std::size_t const allocs   = static_cast<std::size_t>(std::count_if(log.ops.begin(), log.ops.end(), [](op const& o) { return o.allocate; }));
  std::size_t live_end_bytes = 0;
  for (auto const& o : log.live_at_end) { live_end_bytes += o.size; }
  std::printf(
    "# %s: %zu rows: %zu allocate, %zu free, %zu allocate failure (skipped), %zu free of null (skipped); "
    "%zu threads, %zu streams; %zu blocks (%zu bytes) live at the end\n",
    name.c_str(), log.rows, allocs, log.ops.size() - allocs, log.failures, log.null_frees, log.threads,
    log.streams.size(), log.live_at_end.size(), live_end_bytes);
  auto row = [&](std::string const& value, char const* unit) {
    std::printf("%s,%s,replay,%s,%s,%s\n", RMM_BENCH_IMPL, resource, name.c_str(), value.c_str(), unit);
  };
  auto fixed = [](double v, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return std::string{buf};
  };
  row(std::to_string(log.ops.size()), "ops");
  if (opts.check) {
    row(std::to_string(log.peak_live), "peak_live_bytes");
    return true;
  }
  try {
    // Declared before the pool, so destroyed after it.
    stream_map const streams{log.streams};
    counting_upstream upstream;
    auto const counts = upstream.state();
    rmm::mr::pool_memory_resource pool{upstream, opts.initial_pool};
    rmm::device_async_resource_ref const mr{pool};
    std::vector<void*> table(log.slots, nullptr);

    double const ops     = static_cast<double>(std::max<std::size_t>(log.ops.size(), 1));
    double const cold    = replay_once(mr, log, streams, table) * 1e9 / ops;
    std::size_t peak_up  = 0;
    {
      std::lock_guard<std::mutex> guard{counts->lock};
      peak_up = counts->peak;
    }
    std::vector<double> warm;
    for (int r = 0; r < opts.runs; ++r) { warm.push_back(replay_once(mr, log, streams, table) * 1e9 / ops); }
    double const ns    = warm.empty() ? cold : median(warm);
    double const ratio = static_cast<double>(peak_up) / static_cast<double>(std::max<std::size_t>(log.peak_live, 1));
    row(fixed(ns, 1), "ns_per_op");
    row(fixed(cold, 1), "cold_ns_per_op");
    row(std::to_string(peak_up), "peak_upstream_bytes");
    row(std::to_string(log.peak_live), "peak_live_bytes");
    row(fixed(ratio, 3), "fragmentation");
    std::printf("# %s: %.1f ns/op (cold %.1f), peak upstream %.2f MiB, peak live %.2f MiB, upstream/live %.2f\n",
                name.c_str(), ns, cold, static_cast<double>(peak_up) / (1 << 20),
                static_cast<double>(log.peak_live) / (1 << 20), ratio);
  } catch (std::exception const& e) {
    std::fprintf(stderr, "replay: %s: %s\n", path.c_str(), e.what());
    return false;
  }
  return true;
}

std::optional<std::size_t> parse_bytes(std::string s)
{
  if (s.size() > 3 && s.compare(s.size() - 2, 2, "iB") == 0) { s.resize(s.size() - 2); }
  if (s.size() > 1 && s.back() == 'B') { s.pop_back(); }
  int shift = 0;
  if (!s.empty()) {
    switch (s.back()) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      default: break;
    }
    if (shift != 0) { s.pop_back(); }
  }
  auto const v = parse_size(s);
  if (!v) { return std::nullopt; }
  return *v << shift;
}

constexpr char const* usage =
  "usage: replay [--initial-pool BYTES] [--runs N] [--check] LOG...\n"
  "  replays RMM allocation logs against pool_memory_resource over cuda_memory_resource\n"
  "  --initial-pool  bytes the pool takes at construction (default 0); may end in K, M, G\n"
  "  --runs          warm replays after the cold one (default 5)\n"
  "  --check         only read the logs (no GPU needed)";

}  // namespace replay

int main(int argc, char** argv)
{
  using namespace replay;  // NOLINT(google-build-using-namespace)
  options opts;
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "replay: %s needs a value\n%s\n", a.c_str(), usage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::puts(usage);
      return 0;
    } else if (a == "--check") {
      opts.check = true;
    } else if (a == "--initial-pool") {
      auto const v = parse_bytes(value());
      if (!v) {
        std::fprintf(stderr, "replay: bad --initial-pool\n%s\n", usage);
        return 2;
      }
      opts.initial_pool = *v;
    } else if (a == "--runs") {
      auto const v = parse_size(value());
      if (!v || *v > 1000) {
        std::fprintf(stderr, "replay: bad --runs\n%s\n", usage);
        return 2;
      }
      opts.runs = static_cast<int>(*v);
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "replay: unknown option %s\n%s\n", a.c_str(), usage);
      return 2;
    } else {
      opts.logs.push_back(a);
    }
  }
  if (opts.logs.empty()) {
    std::fprintf(stderr, "replay: no log given\n%s\n", usage);
    return 2;
  }

  if (!opts.check) {
    // Without a driver RMM 26.10 returns -1 (the failed cudaGetDeviceCount's untouched -1), rmm-rs 0.
    if (rmm::get_num_cuda_devices() <= 0) {
      std::puts("skipped: no CUDA device");
      return 0;
    }
    std::printf("# impl: %s\n", RMM_BENCH_IMPL);
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, rmm::get_current_cuda_device().value()) == cudaSuccess) {
      std::printf("# device: %s\n", prop.name);
    }
    std::printf("# replay: pool_memory_resource over a counting cuda_memory_resource, initial pool %zu bytes, "
                "alignment %zu, 1 cold + %d warm replays each, in file order on one thread\n",
                opts.initial_pool, alignment, opts.runs);
  } else {
    std::printf("# impl: %s (--check: reading the logs only)\n", RMM_BENCH_IMPL);
  }
  std::puts("impl,resource,workload,param,value,unit");
  bool ok = true;
  for (auto const& path : opts.logs) { ok = run_log(opts, path) && ok; }
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
