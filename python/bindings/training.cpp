// taihu.Trainer and taihu.train: the run of taihu-train (apps/training_run.hpp)
// on a thread of its own, driven from Python. The interpreter's thread waits
// for the run with the GIL released and, between waits, hands the records the
// run made (the metrics file's, and every iteration's) to the Python
// callbacks, so that callbacks run on the thread that asked for them and
// Ctrl-C reaches Python as usual; stop() asks the coordinator to stop after
// the iteration in flight, writing a checkpoint where the run stands.
#include <pybind11/stl.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "apps/app_support.hpp"
#include "apps/training_run.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/error.hpp"
#include "core/train/metrics_log.hpp"
#include "python/bindings/bindings.hpp"

namespace taihu::python {

namespace py = pybind11;

namespace {

class BackgroundRun {
 public:
  // `resume`: a checkpoint to continue from (or, evaluating, to score); empty: none.
  BackgroundRun(const std::string& config_file, const std::vector<std::string>& overrides,
                const std::string& progress, const std::string& resume, bool evaluate_only,
                const py::object& graphs) {
    // Read on the caller's thread: a bad config is an exception right here.
    config::Document doc = config::Document::parse_file(config_file);
    for (const auto& o : overrides) doc.apply_override(o);
    app::TrainingRunOptions options;
    options.progress = Progress::parse_mode(progress, "progress");
    options.resume = resume;
    options.evaluate_only = evaluate_only;
    options.graphs = graph_dataset(graphs);
    options.stop = stop_;
    options.observer = [this](const MetricRecord& record) {
      {
        const std::lock_guard lock(mutex_);
        records_.push_back(record);
      }
      changed_.notify_one();
    };
    thread_ = std::thread([this, doc = std::move(doc), options = std::move(options)]() mutable {
      std::string result;
      std::exception_ptr error;
      try {
        // On this thread, whose actor system's threads inherit its
        // floating-point mode (flush to zero): the interpreter's stays as
        // it was. Python cannot re-execute itself under another BLAS
        // kernel: set OPENBLAS_CORETYPE before importing taihu to choose one.
        app::setup_blas(doc, 0, nullptr);
        const bool evaluating = options.evaluate_only;
        const compute::TrainingResult r = app::run_training(std::move(doc), options);
        result = evaluating ? app::evaluation_json(r) : app::report_json(r);
      } catch (...) {
        error = std::current_exception();
      }
      {
        const std::lock_guard lock(mutex_);
        result_ = std::move(result);
        error_ = error;
        done_ = true;
      }
      changed_.notify_one();
    });
  }

  ~BackgroundRun() {
    stop();
    py::gil_scoped_release free_interpreter;
    if (thread_.joinable()) thread_.join();
  }
  BackgroundRun(const BackgroundRun&) = delete;
  BackgroundRun& operator=(const BackgroundRun&) = delete;

  // Waits up to `seconds` for records or the end (the interpreter free
  // meanwhile); returns the records made since the last call, as dicts.
  py::list poll(double seconds) {
    std::deque<MetricRecord> records;
    {
      py::gil_scoped_release free_interpreter;
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_ || !records_.empty(); });
      records.swap(records_);
    }
    py::list out;
    for (const MetricRecord& record : records) {
      py::dict d;
      for (const auto& [key, value] : record)
        std::visit([&d, &key = key](const auto& v) { d[py::str(key)] = v; }, value);
      out.append(std::move(d));
    }
    return out;
  }

  bool done() {
    const std::lock_guard lock(mutex_);
    return done_ && records_.empty();
  }

  void stop() { stop_->store(true, std::memory_order_relaxed); }

  // The report (or evaluation) as JSON once done; the run's error, raised.
  std::string result() {
    {
      py::gil_scoped_release free_interpreter;
      if (thread_.joinable()) thread_.join();
    }
    if (error_) std::rethrow_exception(error_);
    return result_;
  }

 private:
  std::shared_ptr<std::atomic<bool>> stop_ = std::make_shared<std::atomic<bool>>(false);
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<MetricRecord> records_;
  bool done_ = false;
  std::string result_;
  std::exception_ptr error_;
  std::thread thread_;  // last: it starts once the members it uses exist
};

}  // namespace

void bind_training(py::module_& m) {
  py::class_<BackgroundRun>(m, "_Run", "A training run on a thread of its own (taihu.Trainer drives it).")
      .def(py::init<const std::string&, const std::vector<std::string>&, const std::string&, const std::string&,
                    bool, const py::object&>(),
           py::arg("config_file"), py::arg("overrides"), py::arg("progress"), py::arg("resume"),
           py::arg("evaluate_only"), py::arg("graphs") = py::none())
      .def("poll", &BackgroundRun::poll, py::arg("seconds"),
           "Waits up to `seconds` for records or the end; returns the new records as dicts.")
      .def("done", &BackgroundRun::done, "Whether the run ended and every record was polled.")
      .def("stop", &BackgroundRun::stop, "Stops the run after the iteration in flight (thread-safe).")
      .def("result", &BackgroundRun::result, "Waits for the end: the report as JSON, or the run's error raised.");
  m.def(
      "_checkpoint_path",
      [](const std::string& config_file, const std::vector<std::string>& overrides) {
        config::Document doc = config::Document::parse_file(config_file);
        for (const auto& o : overrides) doc.apply_override(o);
        return compute::checkpoint_path(doc.section("output")).string();
      },
      py::arg("config_file"), py::arg("overrides"), "The checkpoint file the config's run writes.");
  m.def("blas_kernel", [] { return blas::kernel_name(); },
        "The OpenBLAS kernel this process computes with (OPENBLAS_CORETYPE chooses it at start).");
}

}  // namespace taihu::python
