#include "transport/mpi_transport.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <exception>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "core/common/check.hpp"
#include "core/common/error.hpp"

#if TAIHU_HAVE_MPI
#include <mpi.h>
#endif

namespace taihu::transport {
namespace {

std::atomic<MpiSession*> current_session{nullptr};

}  // namespace

MpiSession* MpiSession::current() { return current_session.load(); }

#if TAIHU_HAVE_MPI

namespace {

using Clock = std::chrono::steady_clock;

// What travels ahead of each payload (same layout on every rank: one build).
struct WireHeader {
  ChunkHeader chunk;
  std::uint64_t bytes = 0;
};
static_assert(std::is_trivially_copyable_v<WireHeader> && sizeof(WireHeader) == 40);

constexpr int header_tag = 0x7a1;
constexpr int payload_tag = 0x7a2;
// After its last traffic the progress thread keeps testing for this long
// (a collective's next message is usually microseconds away), then sleeps in
// steps of idle_sleep until a send wakes it or an incoming header is due.
constexpr auto busy_window = std::chrono::milliseconds(2);
constexpr auto idle_sleep = std::chrono::microseconds(250);
// At the end, sends still in flight get this long to complete before MPI_Finalize.
constexpr auto drain_limit = std::chrono::seconds(2);

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, static_cast<std::size_t>(length));
}

struct Outgoing {
  int to = 0;
  ChunkHeader header;
  const void* data = nullptr;
  std::size_t bytes = 0;
  std::shared_ptr<const void> keep_alive;
};

// One posted request and what its completion means.
struct Pending {
  enum class Kind : std::uint8_t { header_send, payload_send, payload_receive } kind;
  int peer = 0;
  std::unique_ptr<WireHeader> wire;      // a header in flight, or the header of a payload being received
  std::shared_ptr<const void> keep_alive;  // a payload being sent
  Landing landing;                        // where a payload is being received
};

}  // namespace

struct MpiSession::Engine {
  // Shared with the threads that send and with the transport's owner.
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<Outgoing> queue;
  std::vector<std::packaged_task<void()>> calls;  // MpiSession::call's, run between rounds
  bool stopping = false;
  bool abandon = false;  // this rank fails: leave without MPI_Finalize (see ~MpiSession)
  std::string broken;  // why MPI failed; then sends are refused
  std::mutex sink_mutex;  // held while the sink is called: detaching waits for it
  FrameSink* sink = nullptr;
  int rank = -1;
  int size = 0;
  std::thread thread;

  // The progress thread's own.
  MPI_Comm comm = MPI_COMM_NULL;
  std::vector<MPI_Request> requests;
  std::vector<Pending> pending;  // beside requests
  std::vector<int> completed_indices;       // MPI_Testsome's, kept between rounds (no allocation per poll)
  std::vector<MPI_Status> completed_statuses;

  void run(const std::shared_ptr<std::promise<void>>& started);
  void post(Outgoing out);
  bool receive_headers();
  bool test_requests();
  void drain();
  void fail(int peer, const std::string& what);
  Landing land(int from, const ChunkHeader& header, std::size_t bytes);
  void add(MPI_Request request, Pending p) {
    requests.push_back(request);
    pending.push_back(std::move(p));
  }
  bool failed() {
    std::lock_guard lock(mutex);
    return !broken.empty();
  }
};

void MpiSession::Engine::run(const std::shared_ptr<std::promise<void>>& started) {
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_rank(comm, &rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(comm, &size);
  if (rc != MPI_SUCCESS) {
    started->set_exception(std::make_exception_ptr(ConfigError("MPI did not start: " + mpi_error(rc))));
    return;
  }
  started->set_value();
  auto last_traffic = Clock::now();
  for (;;) {
    std::vector<Outgoing> outgoing;
    std::vector<std::packaged_task<void()>> due;
    {
      std::lock_guard lock(mutex);
      if (stopping) break;
      outgoing.swap(queue);
      due.swap(calls);
    }
    bool traffic = !outgoing.empty() || !due.empty();
    for (auto& out : outgoing) post(std::move(out));
    // After the sends queued before them: a call that blocks in a collective
    // must not hold back a chunk that another rank needs to reach it.
    for (auto& task : due) task();
    traffic |= receive_headers();
    traffic |= test_requests();
    const auto now = Clock::now();
    if (traffic) {
      last_traffic = now;
    } else if (now - last_traffic < busy_window) {
      std::this_thread::yield();
    } else {
      std::unique_lock lock(mutex);
      wake.wait_for(lock, idle_sleep, [this] { return stopping || !queue.empty() || !calls.empty(); });
    }
  }
  bool leave_quietly = false;
  {
    std::lock_guard lock(mutex);
    leave_quietly = abandon;
  }
  if (leave_quietly) return;
  drain();
  MPI_Comm_free(&comm);
  MPI_Finalize();
}

void MpiSession::Engine::fail(int peer, const std::string& what) {
  {
    std::lock_guard lock(mutex);
    if (!broken.empty()) return;  // told once
    broken = what;
  }
  spdlog::error("MPI transport, rank {}: {}", rank, what);
  std::lock_guard lock(sink_mutex);
  if (sink != nullptr) sink->peer_lost(peer, what);
}

Landing MpiSession::Engine::land(int from, const ChunkHeader& header, std::size_t bytes) {
  {
    std::lock_guard lock(sink_mutex);
    if (sink != nullptr) return sink->land(from, header, bytes);
  }
  // No transport attached (a run that ended): the bytes are received and dropped.
  auto scratch = std::make_shared<std::vector<std::byte>>(bytes);
  return {scratch->data(), scratch};
}

void MpiSession::Engine::post(Outgoing out) {
  if (failed()) return;  // the sink heard why already
  auto wire = std::make_unique<WireHeader>(WireHeader{out.header, out.bytes});
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_Isend(wire.get(), sizeof(WireHeader), MPI_BYTE, out.to, header_tag, comm, &request);
  if (rc != MPI_SUCCESS) return fail(out.to, fmt::format("sending to rank {} failed: {}", out.to, mpi_error(rc)));
  add(request, {Pending::Kind::header_send, out.to, std::move(wire), {}, {}});
  if (out.bytes > 0) {
    rc = MPI_Isend(out.data, static_cast<int>(out.bytes / sizeof(float)), MPI_FLOAT, out.to, payload_tag, comm,
                   &request);
    if (rc != MPI_SUCCESS) return fail(out.to, fmt::format("sending to rank {} failed: {}", out.to, mpi_error(rc)));
    add(request, {Pending::Kind::payload_send, out.to, nullptr, std::move(out.keep_alive), {}});
  }
}

bool MpiSession::Engine::receive_headers() {
  bool any = false;
  while (!failed()) {
    int flag = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, header_tag, comm, &flag, &message, &status);
    if (rc != MPI_SUCCESS) {
      fail(-1, "probing for messages failed: " + mpi_error(rc));
      break;
    }
    if (flag == 0) break;
    any = true;
    const int from = status.MPI_SOURCE;
    auto wire = std::make_unique<WireHeader>();
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    rc = MPI_Mrecv(wire.get(), sizeof(WireHeader), MPI_BYTE, &message, &status);
    if (rc != MPI_SUCCESS || count != static_cast<int>(sizeof(WireHeader))) {
      fail(from, fmt::format("a malformed message from rank {} ({} bytes{})", from, count,
                             rc != MPI_SUCCESS ? ", " + mpi_error(rc) : std::string()));
      break;
    }
    const std::uint64_t bytes = wire->bytes;
    if (bytes % sizeof(float) != 0 || bytes / sizeof(float) > static_cast<std::uint64_t>(INT_MAX)) {
      fail(from, fmt::format("rank {} announced a chunk of {} bytes, which no shard sends", from, bytes));
      break;
    }
    Landing landing = land(from, wire->chunk, bytes);
    if (landing.data == nullptr && bytes > 0) {
      fail(from, fmt::format("rank {} sent a chunk that no local shard takes (bucket {}, {} bytes)", from,
                             wire->chunk.bucket, bytes));
      break;
    }
    if (bytes == 0) {
      std::lock_guard lock(sink_mutex);
      if (sink != nullptr) sink->deliver(from, wire->chunk, std::move(landing));
      continue;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    rc = MPI_Irecv(landing.data, static_cast<int>(bytes / sizeof(float)), MPI_FLOAT, from, payload_tag, comm,
                   &request);
    if (rc != MPI_SUCCESS) {
      fail(from, fmt::format("receiving from rank {} failed: {}", from, mpi_error(rc)));
      break;
    }
    add(request, {Pending::Kind::payload_receive, from, std::move(wire), {}, std::move(landing)});
  }
  return any;
}

bool MpiSession::Engine::test_requests() {
  if (requests.empty()) return false;
  const int n = static_cast<int>(requests.size());
  completed_indices.resize(requests.size());
  completed_statuses.resize(requests.size());
  std::vector<int>& done = completed_indices;
  std::vector<MPI_Status>& statuses = completed_statuses;
  int completed = 0;
  const int rc = MPI_Testsome(n, requests.data(), &completed, done.data(), statuses.data());
  if (rc != MPI_SUCCESS) {
    // Name the peer of the first request that failed.
    int peer = -1;
    for (int k = 0; rc == MPI_ERR_IN_STATUS && k < completed && peer < 0; ++k)
      if (statuses[static_cast<std::size_t>(k)].MPI_ERROR != MPI_SUCCESS)
        peer = pending[static_cast<std::size_t>(done[static_cast<std::size_t>(k)])].peer;
    fail(peer, peer >= 0 ? fmt::format("a transfer with rank {} failed: {}", peer, mpi_error(rc))
                         : "a transfer failed: " + mpi_error(rc));
    return false;
  }
  if (completed == MPI_UNDEFINED || completed == 0) return false;
  for (int k = 0; k < completed; ++k) {
    Pending& p = pending[static_cast<std::size_t>(done[static_cast<std::size_t>(k)])];
    if (p.kind == Pending::Kind::payload_receive) {
      std::lock_guard lock(sink_mutex);
      if (sink != nullptr) sink->deliver(p.peer, p.wire->chunk, std::move(p.landing));
    }
  }
  // Completed requests are MPI_REQUEST_NULL now: drop them (and what they held).
  std::size_t kept = 0;
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (requests[i] != MPI_REQUEST_NULL) {
      if (kept != i) {
        requests[kept] = requests[i];
        pending[kept] = std::move(pending[i]);
      }
      ++kept;
    }
  requests.resize(kept);
  pending.resize(kept);
  return true;
}

void MpiSession::Engine::drain() {
  // Sends still in flight get a moment to complete (a peer may still be
  // receiving the run's last chunks); receives nobody waits for are cancelled.
  const auto deadline = Clock::now() + drain_limit;
  auto sending = [this] {
    for (const auto& p : pending)
      if (p.kind != Pending::Kind::payload_receive) return true;
    return false;
  };
  while (!failed() && sending() && Clock::now() < deadline) {
    receive_headers();
    test_requests();
    std::this_thread::yield();
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&requests[i]);
    MPI_Request_free(&requests[i]);
  }
  requests.clear();
  pending.clear();
}

MpiSession::MpiSession() {
  static std::atomic<bool> started_once{false};
  require<ConfigError>(!started_once.exchange(true),
                       "[cluster] transport = mpi: MPI can be started once per process, and was already");
  engine_ = std::make_unique<Engine>();
  auto started = std::make_shared<std::promise<void>>();
  auto ready = started->get_future();
  engine_->thread = std::thread([engine = engine_.get(), started] { engine->run(started); });
  try {
    ready.get();
  } catch (...) {
    engine_->thread.join();
    throw;
  }
  current_session = this;
}

MpiSession::~MpiSession() {
  current_session = nullptr;
  {
    std::lock_guard lock(engine_->mutex);
    engine_->stopping = true;
    // Destroyed by an exception: this rank fails alone. MPI_Finalize would
    // wait for the other ranks, which may be waiting for this one; without
    // it, the process exits with its error and the launcher ends the job.
    engine_->abandon = std::uncaught_exceptions() > 0;
  }
  engine_->wake.notify_one();
  engine_->thread.join();
}

int MpiSession::rank() const { return engine_->rank; }
int MpiSession::size() const { return engine_->size; }

void MpiSession::call(const std::function<void()>& f) {
  std::packaged_task<void()> task(f);
  auto done = task.get_future();
  {
    std::lock_guard lock(engine_->mutex);
    engine_->calls.push_back(std::move(task));
  }
  engine_->wake.notify_one();
  done.get();
}

MpiTransport::MpiTransport(int node, int nodes, FrameSink* sink) : nodes_(nodes) {
  MpiSession* session = MpiSession::current();
  require<ConfigError>(session != nullptr,
                       "[cluster] transport = mpi: this process did not start MPI (start every rank with mpirun "
                       "or srun --mpi=pmix running taihu-train; taihu-node's elastic mode has no MPI)");
  require<ConfigError>(session->rank() == node && session->size() == nodes,
                       "[cluster] transport = mpi needs node k to be MPI rank k: this is node {} of {}, but MPI "
                       "rank {} of {} (start every rank with mpirun or srun --mpi=pmix, one launch)",
                       node, nodes, session->rank(), session->size());
  engine_ = session->engine_.get();
  std::lock_guard lock(engine_->sink_mutex);
  require<ConfigError>(engine_->sink == nullptr, "MPI transport: this process has one already");
  engine_->sink = sink;
}

MpiTransport::~MpiTransport() {
  std::lock_guard lock(engine_->sink_mutex);
  engine_->sink = nullptr;
}

void MpiTransport::send(int node, const ChunkHeader& header, const void* data, std::size_t bytes,
                        std::shared_ptr<const void> keep_alive) {
  if (node < 0 || node >= nodes_) throw NetError(fmt::format("MPI transport: there is no rank {}", node));
  if (bytes % sizeof(float) != 0 || bytes / sizeof(float) > static_cast<std::size_t>(INT_MAX))
    throw NetError(fmt::format("MPI transport: a chunk of {} bytes is not a whole number of floats below 2^31", bytes));
  {
    std::lock_guard lock(engine_->mutex);
    if (!engine_->broken.empty()) throw NetError("MPI transport: " + engine_->broken);
    engine_->queue.push_back({node, header, data, bytes, std::move(keep_alive)});
  }
  engine_->wake.notify_one();
}

bool mpi_built() { return true; }

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, static_cast<std::size_t>(length));
  if (auto comma = s.find(','); comma != std::string::npos) s.resize(comma);  // "Open MPI v4.1.4"
  return s;
}

#else  // no MPI in this build

struct MpiSession::Engine {};

MpiSession::MpiSession() {
  raise<ConfigError>("[cluster] transport = mpi: this build has no MPI (install libopenmpi-dev and rebuild)");
}
MpiSession::~MpiSession() = default;
void MpiSession::call(const std::function<void()>&) {}
int MpiSession::rank() const { return -1; }
int MpiSession::size() const { return 0; }

MpiTransport::MpiTransport(int, int nodes, FrameSink*) : engine_(nullptr), nodes_(nodes) {
  raise<ConfigError>("[cluster] transport = mpi: this build has no MPI (install libopenmpi-dev and rebuild)");
}
MpiTransport::~MpiTransport() = default;
void MpiTransport::send(int, const ChunkHeader&, const void*, std::size_t, std::shared_ptr<const void>) {}

bool mpi_built() { return false; }
std::string mpi_library_version() { return "no MPI"; }

#endif

}  // namespace taihu::transport
