// Damaged data files end in a DataError that says what is wrong, never in a
// signal: the fault guard (core/common/fault_guard.hpp).

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>

#include "core/common/error.hpp"
#include "core/common/fault_guard.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/temp_dir.hpp"

using namespace taihu;
using taihu::testing::error_message;
using taihu::testing::TempDir;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const size_t page_size = static_cast<size_t>(sysconf(_SC_PAGESIZE));

// Runs `body` in a child process and returns its wait status.
template <class Body>
int in_child(Body body) {
  const pid_t child = ::fork();
  if (child == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

extern "C" void exit_42(int) { _exit(42); }

}  // namespace

TEST_SUITE("damaged data") {
  TEST_CASE("the fault guard turns a memory fault of the guarded call into a result, and only that") {
    // An unreadable page: SIGSEGV, at its address.
    void* page = mmap(nullptr, page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(page != MAP_FAILED);
    const auto* bytes = static_cast<const volatile char*>(page);
    for (int again = 0; again < 2; ++again) {
      const auto fault = run_guarded([&] { (void)bytes[100]; });
      REQUIRE(fault.has_value());
      CHECK(fault->signal == SIGSEGV);
      CHECK(fault->address == static_cast<const char*>(page) + 100);
    }
    munmap(page, page_size);

    // A mapped file's page past its end: SIGBUS.
    TempDir dir;
    const auto file = dir.write("short", std::string(100, 'x'));
    const int fd = ::open(file.c_str(), O_RDONLY);
    REQUIRE(fd >= 0);
    void* map = mmap(nullptr, 2 * page_size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    REQUIRE(map != MAP_FAILED);
    const auto* mapped = static_cast<const volatile char*>(map);
    char first = 0;
    CHECK(!run_guarded([&] { first = mapped[0]; }).has_value());
    CHECK(first == 'x');
    const auto bus = run_guarded([&] { (void)mapped[page_size + 1]; });
    REQUIRE(bus.has_value());
    CHECK(bus->signal == SIGBUS);
    munmap(map, 2 * page_size);

    // Nested calls: the inner fault is the inner call's; the outer one goes on.
    int after_inner = 0;
    const auto outer = run_guarded([&] {
      const auto inner = run_guarded([] { leave_guarded_call("inner check failed"); });
      after_inner = inner && inner->signal == 0 && inner->message == "inner check failed" ? 1 : -1;
    });
    CHECK(!outer.has_value());
    CHECK(after_inner == 1);
    leave_guarded_call("no guarded call: returns");

    // Exceptions pass through, and leave the guard disarmed.
    CHECK(error_message<DataError>([] { run_guarded([] { throw DataError("thrown inside"); }); }) == "thrown inside");

    // A fault outside a guarded call reaches the handler installed before the
    // guard's, or takes the default action, as without the guard.
    const int chained = in_child([] {
      struct sigaction action {};
      action.sa_handler = exit_42;
      sigemptyset(&action.sa_mask);
      sigaction(SIGSEGV, &action, nullptr);
      run_guarded([] {});
      std::raise(SIGSEGV);
    });
    CHECK((WIFEXITED(chained) && WEXITSTATUS(chained) == 42));
    const int dies = in_child([] {
      std::signal(SIGSEGV, SIG_DFL);
      run_guarded([] {});
      *static_cast<volatile int*>(mmap(nullptr, page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) = 1;
    });
    CHECK((WIFSIGNALED(dies) && WTERMSIG(dies) == SIGSEGV));
  }
}
