#include "core/kernels/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "core/common/flush_to_zero.hpp"
#include "core/kernels/compute_threads.hpp"

namespace taihu {

namespace {

thread_local bool inside_pool = false;

// parallel_grain(): the floats one piece of streaming work is worth waking a thread for.
std::atomic<int64_t> grain{int64_t{1} << 16};

struct Job {
  void (*call)(void*, int64_t);
  void* context;
  int64_t pieces;
  unsigned float_mode;  // the caller's: every piece computes in it, on any thread
  std::atomic<int64_t> next{0};
  std::atomic<int> users{0};  // workers that may still touch this job

  void work() {
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < pieces;
         i = next.fetch_add(1, std::memory_order_relaxed))
      call(context, i);
  }
};

class Pool {
 public:
  static Pool& instance() {
    static Pool pool;
    return pool;
  }

  ~Pool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // False if the pool is busy (another thread's job): the caller runs inline.
  bool run(int64_t pieces, void (*call)(void*, int64_t), void* context, int threads) {
    std::unique_lock busy(run_mutex_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    Job job{call, context, pieces, float_mode()};
    {
      std::lock_guard lock(mutex_);
      while (static_cast<int>(workers_.size()) < threads - 1) workers_.emplace_back([this] { loop(); });
      current_ = &job;
      ++generation_;
    }
    wake_.notify_all();
    inside_pool = true;
    job.work();
    inside_pool = false;
    {
      std::lock_guard lock(mutex_);
      current_ = nullptr;  // no worker can pick the job up any more
    }
    while (job.users.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    return true;
  }

 private:
  void loop() {
    inside_pool = true;
    uint64_t seen = 0;
    for (;;) {
      Job* job = nullptr;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        job = current_;
        if (job == nullptr) continue;
        job->users.fetch_add(1, std::memory_order_relaxed);
      }
      const unsigned own_mode = float_mode();
      set_float_mode(job->float_mode);
      job->work();
      set_float_mode(own_mode);
      job->users.fetch_sub(1, std::memory_order_release);
    }
  }

  std::mutex run_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::thread> workers_;
  Job* current_ = nullptr;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace

int64_t parallel_grain() { return grain.load(std::memory_order_relaxed); }
void set_parallel_grain(int64_t floats) { grain.store(std::max<int64_t>(floats, 1), std::memory_order_relaxed); }

int parallel_threads() { return inside_pool ? 1 : compute_threads(); }  // BLAS calls use this pool too

namespace detail {

void run_pieces(int64_t pieces, void (*call)(void*, int64_t), void* context) {
  if (!Pool::instance().run(pieces, call, context, parallel_threads()))
    for (int64_t i = 0; i < pieces; ++i) call(context, i);
}

}  // namespace detail

}  // namespace taihu
