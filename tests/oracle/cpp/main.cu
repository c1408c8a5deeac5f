// The runner of the C++ oracle scenarios.
//
//   oracle_cpp_<side>                  every scenario, each group in a child process, JSON lines
//   oracle_cpp_<side> --filter TEXT    only the scenarios whose name contains TEXT
//   oracle_cpp_<side> --only NAME      one scenario, in this process
//   oracle_cpp_<side> --list           the scenario names
//   oracle_cpp_<side> --probe          the number of CUDA devices
//
// The parent never touches CUDA (a CUDA context does not survive fork): it re-executes itself
// with --group G --from K for each group and reads the children's lines. A child killed by a
// signal (or exiting early) leaves its running scenario recorded as {"crash": signal}; the rest of
// the group goes on in a new child.
#include "harness.hpp"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oracle {

void register_resources();
void register_adaptors();
void register_containers();
void register_misc();
void register_api();
void register_more();

std::string quote(std::string const& s)
{
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

json obj(std::vector<std::pair<std::string, json>> const& kv)
{
  std::string s = "{";
  for (std::size_t i = 0; i < kv.size(); ++i) {
    if (i) { s += ", "; }
    s += quote(kv[i].first) + ": " + kv[i].second.text;
  }
  return json{s + "}"};
}

std::string strip_location(std::string const& what)
{
  // "<text> at: [ ]<file>:<line>: <rest>" becomes "<text> at <loc>: <rest>", for every location.
  std::string out;
  std::size_t from = 0;
  for (;;) {
    auto at = what.find(" at:", from);
    if (at == std::string::npos) { break; }
    std::size_t end = std::string::npos;
    for (auto i = what.find(':', at + 4); i != std::string::npos; i = what.find(':', i + 1)) {
      auto k = i + 1;
      while (k < what.size() && what[k] >= '0' && what[k] <= '9') { ++k; }
      if (k > i + 1 && what.compare(k, 2, ": ") == 0) {
        end = k + 2;
        break;
      }
    }
    if (end == std::string::npos) { break; }
    out += what.substr(from, at - from) + " at <loc>: ";
    from = end;
  }
  return out + what.substr(from);
}

json describe_current_exception(bool api)
{
  std::string type, what;
  try {
    throw;
  } catch (rmm::out_of_memory const& e) {
    type = "rmm::out_of_memory", what = e.what();
  } catch (rmm::bad_alloc const& e) {
    type = "rmm::bad_alloc", what = e.what();
  } catch (rmm::logic_error const& e) {
    type = "rmm::logic_error", what = e.what();
  } catch (rmm::cuda_error const& e) {
    type = "rmm::cuda_error", what = e.what();
  } catch (std::invalid_argument const& e) {
    type = "std::invalid_argument", what = e.what();
  } catch (std::out_of_range const& e) {
    type = "std::out_of_range", what = e.what();
  } catch (std::length_error const& e) {
    type = "std::length_error", what = e.what();
  } catch (std::logic_error const& e) {
    type = "std::logic_error", what = e.what();
  } catch (std::bad_alloc const& e) {
    type = "std::bad_alloc", what = e.what();
  } catch (std::overflow_error const& e) {
    type = "std::overflow_error", what = e.what();
  } catch (std::runtime_error const& e) {
    type = "std::runtime_error", what = e.what();
  } catch (std::exception const& e) {
    type = "std::exception", what = e.what();
  } catch (int v) {
    type = "int", what = std::to_string(v);
  } catch (...) {
    type = "unknown";
  }
  std::vector<std::pair<std::string, json>> kv{{"raises", j(type)}};
  if (api) { kv.emplace_back("message", j(strip_location(what))); }
  return obj(kv);
}

std::string trace::serialise() const
{
  std::string s = "[";
  for (std::size_t i = 0; i < items_.size(); ++i) {
    if (i) { s += ", "; }
    s += "[" + quote(items_[i].first) + ", " + items_[i].second.text + "]";
  }
  return s + "]";
}

std::vector<scenario>& registry()
{
  static std::vector<scenario> r;
  return r;
}

void add(std::string const& area, std::string const& name, scenario_fn fn)
{
  registry().push_back(scenario{area, "cpp/" + area + "/" + name, std::move(fn)});
}

int device_count()
{
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

void need_devices(int n)
{
  int have = device_count();
  if (have < n) {
    throw skip{"needs " + std::to_string(n) + " GPUs, found " + std::to_string(have)};
  }
}

namespace {

std::string line(std::string const& name,
                 char const* status,
                 std::string const& reason,
                 std::string const& trace_json,
                 std::string const& extra = "")
{
  std::string s = "{\"scenario\": " + quote(name) + ", \"status\": " + quote(status);
  if (!reason.empty()) { s += ", \"reason\": " + quote(reason); }
  s += ", \"trace\": " + trace_json;
  if (!extra.empty()) { s += ", " + extra; }
  return s + "}";
}

/// Runs one scenario here and prints its line.
void run_here(scenario const& sc)
{
  trace t;
  char const* status = "ok";
  std::string reason;
  try {
    sc.fn(t);
  } catch (skip const& s) {
    status = "skipped";
    reason = s.reason;
  } catch (...) {
    t.add("uncaught", describe_current_exception(false));
  }
  // Leave the device as the next scenario expects it.
  int n = 0;
  if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0) { cudaSetDevice(0); }
  cudaGetLastError();
  std::string out = line(sc.name, status, reason, t.serialise()) + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

std::vector<std::string> groups()
{
  std::vector<std::string> g;
  for (auto const& sc : registry()) {
    if (g.empty() || g.back() != sc.group) {
      bool seen = false;
      for (auto const& x : g) { seen = seen || x == sc.group; }
      if (!seen) { g.push_back(sc.group); }
    }
  }
  return g;
}

std::vector<scenario const*> members(std::string const& group, std::string const& filter)
{
  std::vector<scenario const*> m;
  for (auto const& sc : registry()) {
    if (sc.group == group && sc.name.find(filter) != std::string::npos) { m.push_back(&sc); }
  }
  return m;
}

/// Seconds one scenario may run (ORACLE_TIMEOUT_S, default 30).
unsigned timeout_s()
{
  char const* v = std::getenv("ORACLE_TIMEOUT_S");
  return v != nullptr ? static_cast<unsigned>(std::strtoul(v, nullptr, 10)) : 30U;
}

/// The harness's own check: with ORACLE_SELFTEST_CRASH set, this scenario dies of SIGSEGV, and
/// the runner must record {"crash": 11} and go on with the next scenario of its group.
void register_selftest()
{
  add("harness", "crash_selftest", [](trace& t) {
    if (std::getenv("ORACLE_SELFTEST_CRASH") != nullptr) { std::raise(SIGSEGV); }
    t.add("crash", "not requested");
  });
  add("harness", "after_crash", [](trace& t) { t.add("side_independent", true); });
}

int run_parent(char const* self, std::string const& filter)
{
  for (auto const& g : groups()) {
    auto const m = members(g, filter);
    std::size_t pos = 0;
    while (pos < m.size()) {
      int fds[2];
      if (pipe(fds) != 0) { std::perror("pipe"); return 2; }
      pid_t pid = fork();
      if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        std::string from = std::to_string(pos);
        execl("/proc/self/exe", self, "--group", g.c_str(), "--from", from.c_str(), "--filter",
              filter.c_str(), static_cast<char*>(nullptr));
        _exit(127);
      }
      close(fds[1]);
      FILE* in = fdopen(fds[0], "r");
      std::size_t done = 0;
      char* buf    = nullptr;
      std::size_t cap = 0;
      ssize_t len;
      while ((len = getline(&buf, &cap, in)) > 0) {
        if (buf[0] != '{') { continue; }
        std::fwrite(buf, 1, static_cast<std::size_t>(len), stdout);
        ++done;
      }
      std::free(buf);
      std::fclose(in);
      int st = 0;
      waitpid(pid, &st, 0);
      std::fflush(stdout);
      pos += done;
      if (pos >= m.size()) { break; }
      // The child stopped before the end: the scenario at pos crashed it.
      std::string extra;
      if (WIFSIGNALED(st)) {
        extra = "\"crash\": " + std::to_string(WTERMSIG(st));
      } else {
        extra = "\"crash\": \"exit " + std::to_string(WEXITSTATUS(st)) + "\"";
      }
      std::string crash_trace =
        "[[\"crash\", " + (WIFSIGNALED(st) ? std::to_string(WTERMSIG(st))
                                           : quote("exit " + std::to_string(WEXITSTATUS(st)))) +
        "]]";
      std::string out = line(m[pos]->name, "ok", "", crash_trace, extra) + "\n";
      std::fwrite(out.data(), 1, out.size(), stdout);
      std::fflush(stdout);
      std::fprintf(stderr, "oracle: %s crashed (%s)\n", m[pos]->name.c_str(), extra.c_str());
      ++pos;
    }
  }
  return 0;
}

}  // namespace
}  // namespace oracle

int main(int argc, char** argv)
{
  using namespace oracle;
  register_resources();
  register_adaptors();
  register_containers();
  register_misc();
  register_api();
  register_more();
  register_selftest();

  std::string group, filter, only;
  std::size_t from = 0;
  bool list = false, probe = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next     = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--group") { group = next(); }
    else if (a == "--from") { from = std::stoul(next()); }
    else if (a == "--filter") { filter = next(); }
    else if (a == "--only") { only = next(); }
    else if (a == "--list") { list = true; }
    else if (a == "--probe") { probe = true; }
    else { std::fprintf(stderr, "unknown argument %s\n", a.c_str()); return 2; }
  }
  if (list) {
    for (auto const& sc : registry()) { std::printf("%s\n", sc.name.c_str()); }
    return 0;
  }
  if (probe) {
    std::printf("%d\n", device_count());
    return 0;
  }
  if (!only.empty()) {
    for (auto const& sc : registry()) {
      if (sc.name == only) { run_here(sc); return 0; }
    }
    std::fprintf(stderr, "no scenario %s\n", only.c_str());
    return 2;
  }
  if (!group.empty()) {
    auto const m = members(group, filter);
    for (std::size_t k = from; k < m.size(); ++k) {
      alarm(timeout_s());  // a hung scenario is recorded as a crash (SIGALRM)
      run_here(*m[k]);
    }
    return 0;
  }
  return run_parent(argv[0], filter);
}
