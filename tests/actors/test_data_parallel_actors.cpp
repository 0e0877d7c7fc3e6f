// Data-parallel training as message flow (actors/compute): N workers at
// batch b follow the trajectory of one worker at batch N·b, for every
// allreduce algorithm and several bucket layouts; failing workers are named
// and never hang the run.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "actors/compute/coordinator.hpp"
#include "core/net/net.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/compressor_checkpoint.hpp"
#include "support/finishes_within.hpp"
#include "support/mlp_net.hpp"
#include "support/temp_dir.hpp"
#include "support/training.hpp"

using namespace taihu;
using taihu::testing::finishes_within;
using taihu::testing::net_report;
using taihu::testing::run_training;
using taihu::testing::TempDir;
using taihu::testing::Training;

namespace {

const std::string mlp_text = taihu::testing::mlp_net({.dropout = false, .accuracy = true});

// 48 training samples: 6, 4 and 3 iterations at global batches 8, 12, 16.
std::string app_config(const TempDir& dir, int workers, int batch, const std::string& sync = "") {
  return "net = mlp.ini\nepochs = 1\nbatch_size = " + std::to_string(batch) + "\nworkers = " +
         std::to_string(workers) +
         "\ntest_batch_size = 20\nseed = 3\ndisplay = 0\n"
         "[data]\nsource = synthetic\nshape = 1 6 6\nclasses = 4\ntrain_size = 48\ntest_size = 40\nprefetch = 1\n"
         "[solver]\ntype = sgd\nbase_lr = 0.1\nmomentum = 0.9\nweight_decay = 0.001\n"
         "[sync]\n" +
         sync + "\n[output]\ndir = " + dir.path().string() + "/out\nmetrics = \ncheckpoint = \n";
}

config::Document load(const TempDir& dir, const std::string& text, const std::string& net = mlp_text) {
  dir.write("mlp.ini", net);
  return config::Document::parse_file(dir.write("app.ini", text));
}

// One replica at the global batch: the same loop with workers = 1.
std::vector<float> single_worker_params(const TempDir& dir, int global_batch) {
  return run_training(load(dir, app_config(dir, 1, global_batch))).final_parameters.at(0);
}

std::vector<float> initial_params(const TempDir& dir) {
  return taihu::testing::initial_parameters(load(dir, app_config(dir, 1, 4)));
}

// Three workers, `fault` injected: the run must fail with a WorkerFailure of
// the fault's rank whose text has each of `phrases`, within 10 s.
void check_named_failure(const compute::WorkerFault& fault, const std::string& sync,
                         std::initializer_list<std::string_view> phrases) {
  TempDir dir;
  auto doc = load(dir, app_config(dir, 3, 4, sync));
  const auto start = std::chrono::steady_clock::now();
  try {
    run_training(std::move(doc), Training{{}, fault});
    FAIL("training should have failed");
  } catch (const compute::WorkerFailure& e) {
    CHECK(e.rank() == fault.rank);
    const std::string what = e.what();
    for (const auto phrase : phrases) CHECK_MESSAGE(what.find(phrase) != std::string::npos, what);
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

}  // namespace

TEST_SUITE("data_parallel") {
  TEST_CASE("N workers at batch b follow one worker at batch N*b, for every algorithm") {
    TempDir dir;
    const int b = 4;
    const auto start = initial_params(dir);
    for (int n : {2, 3, 4}) {
      const auto reference = single_worker_params(dir, n * b);
      double moved = 0;
      for (std::size_t i = 0; i < start.size(); ++i) moved = std::max(moved, double(std::abs(reference[i] - start[i])));
      REQUIRE(moved > 1e-2);  // training really moved the weights
      for (const char* algorithm : {"ring", "rabenseifner", "topology_aware", "hierarchical", "auto"}) {
        // 0.0005 MB: two buckets (ip2, then ip1).
        for (const char* bucket_mb : {"0", "0.0005"}) {
          CAPTURE(n);
          CAPTURE(algorithm);
          CAPTURE(bucket_mb);
          const auto run = run_training(load(dir, app_config(dir, n, b,
                                                             std::string("algorithm = ") + algorithm +
                                                                 "\nbucket_mb = " + bucket_mb + "\nstep_timeout = 20\n")));
          const TrainReport report = net_report(run);
          CHECK(report.workers == n);
          CHECK(report.iterations == 48 / (n * b));
          CHECK(report.buckets.size() == (std::string(bucket_mb) == "0" ? 1u : 2u));
          const auto& params = run.final_parameters;
          REQUIRE(params.size() == static_cast<std::size_t>(n));
          for (int r = 0; r < n; ++r) {
            const auto& p = params[static_cast<std::size_t>(r)];
            REQUIRE(p.size() == reference.size());
            // Replicas agree bit for bit (deterministic reductions, same updates).
            CHECK(p == params[0]);
            double worst = 0;
            for (std::size_t i = 0; i < p.size(); ++i)
              worst = std::max(worst, std::abs(double(p[i]) - reference[i]) / (1e-3 + std::abs(reference[i])));
            CHECK(worst < 1e-4);
          }
        }
      }
    }
  }

  TEST_CASE("the report has the single-replica keys plus workers and an algorithm per bucket") {
    TempDir dir;
    const TrainReport report =
        net_report(run_training(load(dir, app_config(dir, 2, 4, "algorithm = auto\nbucket_mb = 0.0005\n"))));
    const std::string json = report.to_json();
    for (const char* key : {"\"net\"", "\"test_accuracy\"", "\"images_per_second\"", "\"history\"", "\"workers\": 2",
                            "\"buckets\"", "\"algorithm\"", "\"predicted_seconds\"", "\"ready_seconds\"",
                            "\"done_seconds\"", "\"compress_seconds\"", "\"decompress_seconds\"",
                            "\"unpack_seconds\"",
                            "\"exposed_comm_seconds\"", "\"comm_hidden_fraction\"", "\"step_await_seconds\"",
                            "\"reduced_during_step\""})
      CHECK_MESSAGE(json.find(key) != std::string::npos, key);
    // Each bucket is handed over during backward: after forward began, no later than the
    // slowest worker's forward + backward (a median of maxima under one of maxima); its sum
    // is there after that.
    REQUIRE(report.buckets.size() >= 2);
    for (const auto& b : report.buckets) {
      CHECK(b.ready_seconds > 0.0);
      CHECK(b.ready_seconds <= report.compute_seconds);
      CHECK(b.done_seconds > b.ready_seconds);
      CHECK(b.compress_seconds >= 0.0);
      CHECK(b.unpack_seconds > 0.0);
    }
    CHECK(report.batch_size == 8);
    CHECK(report.test_accuracy > 0.0);
  }

  TEST_CASE("a worker that throws is named, and the run stops without hanging") {
    check_named_failure({compute::WorkerFault::Kind::throw_in_step, 1, 2}, "step_timeout = 20\nbucket_mb = 0.0005\n",
                        {"worker 1 failed at iteration 2", "injected failure"});
  }

  TEST_CASE("a shard that fails is named by its rank and bucket") {
    // The run's node hosts the shards, and the coordinator monitors each one
    // NodeStarted names: the failure is its own, named once (without it, the
    // run would wait for step_timeout and blame the reductions).
    check_named_failure({compute::WorkerFault::Kind::shard_fails, 2, 1}, "step_timeout = 20\nbucket_mb = 0.0005\n",
                        {"worker 2 failed at iteration 1 (its shard of bucket 0)", "injected shard failure"});
  }

  TEST_CASE("a wrong-sized gradient is rejected and its worker named") {
    check_named_failure({compute::WorkerFault::Kind::wrong_gradient_size, 2, 1}, "step_timeout = 20\n",
                        {"worker 2 failed at iteration 1", "expected 988"});
  }

  TEST_CASE("a worker that stalls past step_timeout is named") {
    TempDir dir;
    compute::WorkerFault fault;
    fault.kind = compute::WorkerFault::Kind::stall;
    fault.rank = 1;
    fault.iteration = 1;
    fault.stall_seconds = 1.5;
    auto doc = load(dir, app_config(dir, 3, 4, "step_timeout = 0.3\n"));
    const auto start = std::chrono::steady_clock::now();
    try {
      run_training(std::move(doc), Training{{}, fault});
      FAIL("training should have failed");
    } catch (const compute::WorkerFailure& e) {
      CHECK(e.rank() == 1);
      const std::string what = e.what();
      CHECK_MESSAGE(what.find("worker 1 stalled: iteration 1") != std::string::npos, what);
    }
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  }

  TEST_CASE("a run that stops while workers wait for a compute slot ends") {
    // Worker 1 takes the only slot for good at iteration 1, as a lost wake-up
    // of the slots did: the iteration never ends and step_timeout stops the
    // run. The workers' steps waiting for the slot must give up, or the
    // actor system's destructor, which waits for the workers, never returns.
    // A step waiting for a slot leaves its worker free to answer the probe,
    // which says what it waits for.
    TempDir dir;
    const compute::WorkerFault fault{compute::WorkerFault::Kind::lose_slot, 1, 1};
    auto doc = load(dir, app_config(dir, 3, 4, "step_timeout = 0.3\ncompute_slots = 1\n"));
    auto what = std::make_shared<std::string>();
    CHECK(finishes_within(std::chrono::seconds(20), [doc = std::move(doc), fault, what]() mutable {
      try {
        run_training(std::move(doc), Training{{}, fault});
      } catch (const compute::WorkerFailure& e) {
        *what = e.what();
      }
    }));
    CHECK_MESSAGE(what->find("stalled: iteration 1 not done within step_timeout = 0.3 s: its step waits for a compute "
                             "slot") != std::string::npos,
                  *what);
  }

  TEST_CASE("workers and topology must agree") {
    TempDir dir;
    CHECK_THROWS_WITH_AS(run_training(load(dir, app_config(dir, 2, 4) + "[topology]\nranks = 3\n")),
                         doctest::Contains("workers = 2"), ConfigError);
    CHECK_THROWS_WITH_AS(run_training(load(dir, app_config(dir, 0, 4))), doctest::Contains("at least 1"), ConfigError);
  }
}

TEST_SUITE("data_parallel") {
  TEST_CASE("checkpoints: resuming N workers continues their trajectory; a failure keeps the last checkpoint") {
    TempDir dir;
    // With dropout: every replica's random draws must continue exactly too.
    const std::string dropout_net = taihu::testing::mlp_net({.dropout = true, .accuracy = true});
    auto config = [&](int epochs, const std::string& checkpoint) {
      std::string text = app_config(dir, 2, 4, "algorithm = ring\nbucket_mb = 0.0005\nstep_timeout = 20\n");
      text.replace(text.find("epochs = 1"), 10, "epochs = " + std::to_string(epochs));
      text.replace(text.find("checkpoint = "), 13, "checkpoint_every = 4\ncheckpoint = " + checkpoint);
      return load(dir, text, dropout_net);
    };
    const auto straight = run_training(config(2, "straight.ckpt"));
    // 6 iterations per epoch: checkpoints at iteration 4 (epoch 1, batch 4) and after each epoch.
    run_training(config(1, "first.ckpt"));
    const Checkpoint c = load_checkpoint(dir / "out/first.ckpt");
    CHECK(c.epoch == 1);
    CHECK(c.iteration == 6);
    const auto resumed = run_training(config(2, "resumed.ckpt"), Training{dir / "out/first.ckpt", {}});
    CHECK(net_report(resumed).history.size() == 1);
    REQUIRE(resumed.final_parameters.size() == 2);
    CHECK(resumed.final_parameters[0] == straight.final_parameters[0]);
    CHECK(resumed.final_parameters[1] == straight.final_parameters[1]);

    compute::WorkerFault fault;
    fault.kind = compute::WorkerFault::Kind::throw_in_step;
    fault.rank = 1;
    fault.iteration = 5;
    try {
      run_training(config(1, "failing.ckpt"), Training{{}, fault});
      FAIL("training should have failed");
    } catch (const compute::WorkerFailure& e) {
      CHECK(e.rank() == 1);
      CHECK_MESSAGE(std::string(e.what()).find("failing.ckpt' is intact") != std::string::npos, e.what());
    }
    const Checkpoint kept = load_checkpoint(dir / "out/failing.ckpt");
    CHECK(kept.iteration == 4);
    CHECK(kept.batch == 4);
  }

  TEST_CASE("checkpoints with compression: every rank's residuals and compressor momentum resume too") {
    TempDir dir;
    auto config = [&](int epochs, const std::string& checkpoint) {
      std::string text = app_config(dir, 2, 4,
                                    "algorithm = ring\nbucket_mb = 0.0005\nstep_timeout = 20\n"
                                    "[compress]\nmethod = bsearch\ndensity = 0.05\nmin_elements = 0\n"
                                    "momentum = 0.9\nreuse_interval = 3\n");
      text.replace(text.find("momentum = 0.9\nweight"), 14, "momentum = 0.0");
      text.replace(text.find("epochs = 1"), 10, "epochs = " + std::to_string(epochs));
      text.replace(text.find("checkpoint = "), 13, "checkpoint = " + checkpoint);
      return load(dir, text);
    };
    const auto straight = run_training(config(2, "straight.ckpt"));
    run_training(config(1, "first.ckpt"));
    for (int r = 0; r < 2; ++r) {
      const auto file = load_compressor_checkpoint(compressor_checkpoint_path(dir / "out/first.ckpt", r));
      CHECK(file.rank == r);
      CHECK(file.ranks == 2);
      CHECK(file.iteration == 6);  // 48 samples / (2 x 4) per epoch
      REQUIRE(!file.buckets.empty());
      bool residual_kept = false;
      for (const auto& bucket : file.buckets) {
        const auto states = decode_states(bucket);
        REQUIRE(!states.empty());
        for (const auto& st : states) {
          CHECK(st.iteration == 6);
          CHECK(st.velocity.size() == st.residual.size());
          // Sparse segments keep what they did not send (dense ones send it all).
          residual_kept = residual_kept || std::any_of(st.residual.begin(), st.residual.end(),
                                                       [](float v) { return v != 0.0f; });
        }
      }
      CHECK(residual_kept);
    }
    const auto resumed = run_training(config(2, "resumed.ckpt"), Training{dir / "out/first.ckpt", {}});
    REQUIRE(resumed.final_parameters.size() == 2);
    CHECK(resumed.final_parameters[0] == straight.final_parameters[0]);
    CHECK(resumed.final_parameters[1] == straight.final_parameters[1]);

    // Without the compressor files the residuals restart at zero: another trajectory.
    for (int r = 0; r < 2; ++r) std::filesystem::remove(compressor_checkpoint_path(dir / "out/first.ckpt", r));
    const auto forgetful = run_training(config(2, "forgetful.ckpt"), Training{dir / "out/first.ckpt", {}});
    CHECK(forgetful.final_parameters[0] != straight.final_parameters[0]);
  }
}
