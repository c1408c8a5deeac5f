// Process exit with resources alive: runs exit_child/rmm_exit_child.cu (built next to this test
// binary) in each of its modes and asserts that it exits with status 0 within a time limit, having
// reached its end. RMM itself crashed here (a pool in the per-device table destroyed after the
// CUDA runtime shut down).

#include "test_utils.hpp"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

/// The child program: $RMM_EXIT_CHILD, else rmm_exit_child next to this executable.
std::string child_path()
{
  if (char const* path = std::getenv("RMM_EXIT_CHILD")) { return path; }
  std::vector<char> buf(4096);
  auto const n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) { return "rmm_exit_child"; }
  std::string self{buf.data(), static_cast<std::size_t>(n)};
  return self.substr(0, self.rfind('/') + 1) + "rmm_exit_child";
}

struct child_result {
  bool finished{false};  ///< false: still running at the time limit, and killed
  int status{0};         ///< waitpid's status
  std::string output;    ///< stdout and stderr together
};

/// Runs the child with `where` and `how`, killing it after `limit_s` seconds.
child_result run_child(std::string const& where, std::string const& how, int limit_s = 60)
{
  child_result result;
  std::string const path = child_path();
  std::string const log  = testing::TempDir() + "rmm_exit_child_" + std::to_string(getpid()) + ".log";
  pid_t const pid        = fork();
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    int const fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    char* const argv[] = {const_cast<char*>(path.c_str()),
                          const_cast<char*>(where.c_str()),
                          const_cast<char*>(how.c_str()),
                          nullptr};
    execv(path.c_str(), argv);
    _exit(127);
  }
  if (pid < 0) {
    result.output = "fork failed";
    return result;
  }
  for (int waited_ms = 0; waited_ms < limit_s * 1000; waited_ms += 10) {
    if (waitpid(pid, &result.status, WNOHANG) == pid) {
      result.finished = true;
      break;
    }
    usleep(10'000);
  }
  if (!result.finished) {
    kill(pid, SIGKILL);
    waitpid(pid, &result.status, 0);
  }
  std::ifstream in{log};
  std::stringstream text;
  text << in.rdbuf();
  result.output = text.str();
  std::remove(log.c_str());
  return result;
}

/// Asserts a clean exit: finished in time, status 0, and the end of the program reached.
void expect_clean_exit(std::string const& where, std::string const& how)
{
  auto const r = run_child(where, how);
  std::string const what = where + " " + how + ":\n" + r.output;
  ASSERT_TRUE(r.finished) << "hang at exit: " << what;
  ASSERT_TRUE(WIFEXITED(r.status)) << "killed by signal " << (WIFSIGNALED(r.status) ? WTERMSIG(r.status) : 0)
                                   << ": " << what;
  EXPECT_EQ(WEXITSTATUS(r.status), 0) << what;
  EXPECT_NE(r.output.find("exit child: reached the end"), std::string::npos) << what;
}

TEST(ProcessExit, HostPoolsAliveAtExit) { expect_clean_exit("host", "exit"); }

TEST(ProcessExit, HostPoolsAliveWhenMainReturns) { expect_clean_exit("host", "return"); }

// RMM's crash was intermittent (it depends on teardown order), so each GPU mode runs a few times.
TEST(ProcessExit, DevicePoolsAliveAtExit)
{
  RMM_SKIP_WITHOUT_GPU();
  for (int i = 0; i < 3; ++i) {
    expect_clean_exit("gpu", "exit");
    expect_clean_exit("gpu", "return");
  }
}

TEST(ProcessExit, DevicePoolsAliveAtExitWhenTheRuntimeMadeTheContext)
{
  RMM_SKIP_WITHOUT_GPU();
  for (int i = 0; i < 3; ++i) {
    expect_clean_exit("gpu-cudart-first", "exit");
    expect_clean_exit("gpu-cudart-first", "return");
  }
}

TEST(ProcessExit, TheChildFailsLoudlyOnBadArguments)
{
  // The harness itself: a child that does not reach its end is reported, not passed.
  auto const r = run_child("host", "");
  ASSERT_TRUE(r.finished);
  EXPECT_TRUE(WIFEXITED(r.status));
  EXPECT_NE(WEXITSTATUS(r.status), 0) << r.output;
}

}  // namespace
