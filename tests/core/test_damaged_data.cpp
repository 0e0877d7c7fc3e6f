// Damaged data files end in a DataError that says what is wrong, never in a
// signal: the fault guard (core/common/fault_guard.hpp) on its own, and LMDB
// databases cut short or overwritten in the middle, before they are opened
// and while they are read.

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/fault_guard.hpp"
#include "core/data/lmdb_database.hpp"
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

std::vector<char> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// 900 records in one transaction (so no page of the file is a freed one):
// every fifth value on overflow pages, the others on leaf pages; about 2.5 MB.
fs::path write_database(const fs::path& path) {
  std::mt19937 random(5);
  LmdbWriter writer(path);
  for (int i = 0; i < 900; ++i) {
    std::vector<uint8_t> value(i % 5 == 0 ? 5000 + random() % 7000 : 200 + random() % 1800);
    for (auto& byte : value) byte = static_cast<uint8_t>(random());
    writer.put(fmt::format("{:08d}_{}.jpg", i * 7 % 900, i), value);
  }
  writer.finish();
  return path;
}

// Opens the database and reads every record; throws DataError.
void read_all(const fs::path& path) {
  const LmdbReader reader(path);
  uint64_t sum = 0;
  for (int64_t i = 0; i < reader.size(); ++i)
    reader.read(i, [&](std::span<const uint8_t> bytes) {
      for (uint8_t byte : bytes) sum += byte;
    });
  CHECK(sum > 0);
}

// LMDB 0.9's page header: the page number (8 bytes), 2 bytes of padding, the
// flags; an overflow run's first page then counts its pages.
enum PageKind : uint16_t { branch = 0x01, leaf = 0x02, overflow = 0x04, meta = 0x08 };

std::vector<size_t> pages_of_kind(const std::vector<char>& file, uint16_t kind) {
  std::vector<size_t> pages;
  for (size_t page = 2; (page + 1) * page_size <= file.size();) {
    uint16_t flags = 0;
    uint32_t count = 1;
    std::memcpy(&flags, file.data() + page * page_size + 10, 2);
    if (flags & kind) pages.push_back(page);
    if (flags & overflow) std::memcpy(&count, file.data() + page * page_size + 12, 4);
    page += std::max<uint32_t>(count, 1);
  }
  return pages;
}

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

  TEST_CASE("an LMDB database cut short is a DataError saying so, before any page is read") {
    TempDir dir;
    const fs::path db = write_database(dir / "db");
    const std::vector<char> whole = read_file(db / "data.mdb");
    REQUIRE(whole.size() > 1000 * 1000);
    for (size_t size : {whole.size() / 2, size_t{300 * 1024}, whole.size() - page_size}) {
      CAPTURE(size);
      const fs::path cut = dir / fmt::format("cut_{}", size);
      fs::create_directories(cut);
      write_file(cut / "data.mdb", std::vector<char>(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(size)));
      const std::string error = error_message<DataError>([&] { read_all(cut); });
      CHECK(contains(error, fmt::format("LMDB database '{}' is truncated: {} holds {} bytes of the {}", cut.string(),
                                        (cut / "data.mdb").string(), size, whole.size())));
      CHECK(contains(error, "taihu-convert imageset"));
    }
    CHECK(error_message<DataError>([&] { read_all(db); }) == "<no error>");
  }

  TEST_CASE("an LMDB database overwritten in the middle is a DataError, never a signal") {
    TempDir dir;
    const fs::path db = write_database(dir / "db");
    const std::vector<char> whole = read_file(db / "data.mdb");
    uint16_t flags = 0;
    std::memcpy(&flags, whole.data() + 10, 2);
    REQUIRE(flags == meta);  // the page layout as assumed
    // 8 KB of random bytes from the start of a branch, leaf or overflow page
    // (several pages of each kind, several seeds), and anywhere in the middle.
    int errors = 0, trials = 0, tree_errors = 0, faults = 0, assertions = 0;
    for (uint16_t kind : {uint16_t{branch}, uint16_t{leaf}, uint16_t{overflow}, uint16_t{0}}) {
      const std::vector<size_t> pages = pages_of_kind(whole, kind);
      REQUIRE((kind == 0 || pages.size() >= 1));
      for (uint32_t seed = 1; seed <= (kind == 0 ? 40u : 8u); ++seed) {
        std::mt19937 random(seed);
        // kind 0: anywhere in the middle half of the file.
        const size_t start = kind == 0 ? whole.size() / 4 + random() % (whole.size() / 2)
                                       : pages[random() % pages.size()] * page_size;
        const size_t page = start / page_size;
        std::vector<char> damaged = whole;
        for (size_t i = 0; i < 8192 && start + i < damaged.size(); ++i)
          damaged[start + i] = static_cast<char>(random());
        const fs::path copy = dir / fmt::format("damaged_{}_{}", kind, seed);
        fs::create_directories(copy);
        write_file(copy / "data.mdb", damaged);
        CAPTURE(kind);
        CAPTURE(page);
        CAPTURE(seed);
        const std::string error = error_message<DataError>([&] { read_all(copy); });
        ++trials;
        if (error == "<no error>") {
          // Only a value's own bytes were hit: LMDB has no checksums, so the
          // record decodes as a bad image and is skipped later.
          CHECK((kind == overflow || kind == 0));
          continue;
        }
        ++errors;
        CHECK(contains(error, fmt::format("LMDB database '{}' is damaged: ", copy.string())));
        if (kind == branch || kind == leaf) ++tree_errors;
        faults += contains(error, "memory fault (SIGSEGV)");
        assertions += contains(error, "LMDB's own check failed");
      }
    }
    INFO(fmt::format("{} of {} damaged databases refused; {} SIGSEGVs and {} LMDB assertions caught", errors, trials,
                     faults, assertions));
    CHECK(tree_errors == 16);  // every branch and leaf page
    // Without the guard these had killed the process (about one in five of
    // the damages anywhere in the middle faults; its addresses vary).
    CHECK(faults >= 1);
    CHECK(assertions >= 1);
  }

  TEST_CASE("an LMDB database damaged or cut short while open: the read is a DataError, never a signal") {
    TempDir dir;
    const fs::path db = write_database(dir / "db");
    const fs::path data = db / "data.mdb";
    const LmdbReader reader(db);
    const auto size = fs::file_size(data);
    // Cut to a third: the pages past the end are mapped but gone (SIGBUS).
    fs::resize_file(data, size / 3);
    int failed = 0;
    std::string error;
    for (int64_t i = 0; i < reader.size(); ++i) {
      try {
        reader.read(i, [](std::span<const uint8_t>) {});
      } catch (const DataError& e) {
        if (failed++ == 0) error = e.what();
      }
    }
    CHECK(failed > 0);
    CHECK(contains(error,
                   fmt::format("LMDB database '{}' is damaged: a memory fault (SIGBUS) reading byte", db.string())));
  }
}
