#include "core/train/train_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/train/metrics_log.hpp"

namespace taihu {

std::string bucket_json(const BucketReport& bucket) {
  return taihu::to_json({{"elements", bucket.elements},
                         {"algorithm", bucket.algorithm},
                         {"predicted_seconds", bucket.predicted_seconds},
                         {"ready_seconds", bucket.ready_seconds},
                         {"done_seconds", bucket.done_seconds},
                         {"compress_seconds", bucket.compress_seconds},
                         {"decompress_seconds", bucket.decompress_seconds},
                         {"unpack_seconds", bucket.unpack_seconds}});
}

std::string TrainReport::to_json() const {
  const std::string data_json = taihu::to_json({{"source", data.source},
                                                {"decoders", int64_t{data.decoders}},
                                                {"prefetch", int64_t{data.prefetch}},
                                                {"wait_seconds", data.wait_seconds},
                                                {"wait_share", seconds > 0 ? data.wait_seconds / seconds : 0.0},
                                                {"skipped", data.skipped},
                                                {"left_out", data.left_out}});
  return fmt::format(
      "{{\n  \"net\": {},\n  \"parameters\": {},\n  \"epochs\": {},\n  \"iterations\": {},\n  \"stopped\": {},\n"
      "  \"batch_size\": {},\n  \"train_loss\": {:.9g},\n  \"test_loss\": {:.9g},\n"
      "  \"test_accuracy\": {:.9g},\n  \"images_per_second\": {:.6g},\n  \"seconds\": {:.6g},\n"
      "  \"blas_kernel\": {},{}\n  \"data\": {},\n  \"workers\": {},{}{}\n  \"history\": [\n    {}\n  ]\n}}\n",
      json_quote(net), parameters, epochs, iterations, stopped, batch_size, train_loss, test_loss, test_accuracy,
      images_per_second, seconds, json_quote(blas_kernel), kernels_json(), data_json, workers, communication_json(),
      device_json(), history_json());
}

std::string TrainReport::history_json() const {
  std::string epochs_json;
  for (size_t i = 0; i < history.size(); ++i) {
    const auto& e = history[i];
    epochs_json += (i ? ",\n    " : "") +
                   taihu::to_json({{"epoch", e.epoch},
                                   {"train_loss", e.train_loss},
                                   {"test_loss", e.test_loss},
                                   {"test_accuracy", e.test_accuracy},
                                   {"seconds", e.seconds},
                                   {"images_per_second", e.images_per_second}});
  }
  return epochs_json;
}

std::string TrainReport::communication_json() const {
  if (buckets.empty()) return "";
  std::string buckets_json = "\n  \"buckets\": [";
  for (size_t i = 0; i < buckets.size(); ++i) {
    buckets_json += (i ? ",\n    " : "\n    ") + bucket_json(buckets[i]);
  }
  buckets_json += fmt::format(
      "\n  ],\n  \"exposed_comm_seconds\": {:.6g},\n  \"comm_hidden_fraction\": {:.4f},\n"
      "  \"bytes_sent_per_iteration\": {:.9g},\n  \"dense_bytes_per_iteration\": {:.9g},\n"
      "  \"iteration_seconds\": {:.6g},\n  \"compute_seconds\": {:.6g},\n  \"update_seconds\": {:.6g},\n"
      "  \"step_await_seconds\": {:.6g},\n  \"reduced_during_step\": {:.4g},",
      exposed_comm_seconds, comm_hidden_fraction, bytes_sent_per_iteration, dense_bytes_per_iteration,
      iteration_seconds, compute_seconds, update_seconds, step_await_seconds, reduced_during_step);
  return buckets_json;
}

std::string TrainReport::device_json() const {
  if (device == "cpu") return "";
  const DeviceReport& d = device_report;
  std::string layers_json;
  for (size_t i = 0; i < d.layers.size(); ++i) {
    const auto& l = d.layers[i];
    layers_json += (i ? ",\n    " : "\n    ") +
                   taihu::to_json({{"name", l.name},
                                   {"type", l.type},
                                   {"method", l.method},
                                   {"simulated", std::string(l.simulated ? "true" : "false")},
                                   {"forward_seconds", l.forward_seconds},
                                   {"backward_seconds", l.backward_seconds()},
                                   {"data_gradient_seconds", l.data_gradient_seconds},
                                   {"weight_gradient_seconds", l.weight_gradient_seconds}});
  }
  // "simulated" is a JSON boolean, not a string
  for (const char* b : {"true", "false"}) {
    const std::string quoted = fmt::format("\"simulated\": \"{}\"", b);
    const std::string plain = fmt::format("\"simulated\": {}", b);
    for (size_t at = layers_json.find(quoted); at != std::string::npos; at = layers_json.find(quoted, at))
      layers_json.replace(at, quoted.size(), plain);
  }
  std::string device_json;
  if (!chip_iteration_seconds.empty()) {
    std::string chips;
    for (std::size_t r = 0; r < chip_iteration_seconds.size(); ++r)
      chips += fmt::format("{}{:.6g}", r ? ", " : "", chip_iteration_seconds[r]);
    device_json += fmt::format(
        "\n  \"chip_iteration_seconds\": [{}],\n  \"simulated_allreduce_seconds\": {:.6g},"
        "\n  \"simulated_allreduce_share\": {:.4f},\n  \"simulated_system_images_per_second\": {:.6g},",
        chips, simulated_allreduce_seconds, simulated_allreduce_share(), simulated_system_images_per_second());
  }
  if (d.simulated_iteration_high > 0)
    device_json += fmt::format(
        "\n  \"simulated_iteration_seconds_range\": [{:.6g}, {:.6g}],"
        "\n  \"simulated_images_per_second_range\": [{:.6g}, {:.6g}],",
        d.simulated_iteration_low, d.simulated_iteration_high,
        d.iterations ? double(d.images) / double(d.iterations) / d.simulated_iteration_high : 0.0,
        d.iterations ? double(d.images) / double(d.iterations) / d.simulated_iteration_low : 0.0);
  device_json += fmt::format(
      "\n  \"device\": {},\n  \"simulated_iterations\": {},\n  \"simulated_iteration_seconds\": {:.6g},"
      "\n  \"simulated_solver_step_seconds\": {:.6g},"
      "\n  \"simulated_images_per_second\": {:.6g},\n  \"host_seconds_per_simulated_iteration\": {:.6g},"
      "\n  \"host_cpu_seconds_per_simulated_iteration\": {:.6g},\n  \"layers\": [{}\n  ],",
      json_quote(device), d.iterations, d.simulated_iteration_seconds(), d.per_iteration(d.update_seconds),
      d.simulated_images_per_second(), d.per_iteration(d.host_seconds), d.per_iteration(d.host_cpu_seconds),
      layers_json);
  return device_json;
}

std::string TrainReport::kernels_json() const {
  if (fused_runs.empty() && convolutions.empty()) return "";
  std::string layers;
  for (size_t i = 0; i < convolutions.size(); ++i) {
    const LayerKernels& k = convolutions[i];
    layers += (i ? ",\n    " : "\n    ") + taihu::to_json({{"layer", k.layer},
                                                          {"forward", k.forward},
                                                          {"data_gradient", k.data_gradient},
                                                          {"weight_gradient", k.weight_gradient}});
  }
  return fmt::format("\n  \"fused_runs\": {},\n  \"convolutions\": [{}\n  ],", json_quote(fused_runs), layers);
}

double TrainReport::simulated_allreduce_share() const {
  if (chip_iteration_seconds.empty()) return 0.0;
  const double compute = *std::max_element(chip_iteration_seconds.begin(), chip_iteration_seconds.end());
  const double total = compute + simulated_allreduce_seconds;
  return total > 0 ? simulated_allreduce_seconds / total : 0.0;
}

double TrainReport::simulated_system_images_per_second() const {
  if (chip_iteration_seconds.empty()) return 0.0;
  const double compute = *std::max_element(chip_iteration_seconds.begin(), chip_iteration_seconds.end());
  const double total = compute + simulated_allreduce_seconds;
  return total > 0 ? static_cast<double>(batch_size) / total : 0.0;
}

std::string device_report_table(const DeviceReport& r, int64_t batch) {
  std::string out = fmt::format("{}: simulated time per iteration (batch {}), ms\n  {:<24} {:<16} {:<10} {:>10} {:>10} {:>10}\n",
                                r.device, batch, "layer", "type", "method", "forward", "data grad", "weight grad");
  double forward = 0, backward = 0;
  for (const auto& l : r.layers) {
    if (!l.simulated) {
      out += fmt::format("  {:<24} {:<16} {:<10} {:>10} {:>10} {:>10}\n", l.name, l.type, l.method, "host", "-", "-");
      continue;
    }
    out += fmt::format("  {:<24} {:<16} {:<10} {:>10.3f} {:>10.3f} {:>10.3f}\n", l.name, l.type, l.method,
                       1e3 * l.forward_seconds, 1e3 * l.data_gradient_seconds, 1e3 * l.weight_gradient_seconds);
    forward += l.forward_seconds;
    backward += l.backward_seconds();
  }
  out += fmt::format(
      "  simulated: forward {:.1f} ms, backward {:.1f} ms (+ solver step {:.1f} ms), iteration {:.1f} ms, {:.1f} "
      "images/s; host {:.1f} s ({:.1f} s of CPU) per simulated iteration",
      1e3 * forward, 1e3 * backward, 1e3 * r.per_iteration(r.update_seconds), 1e3 * r.simulated_iteration_seconds(),
      r.simulated_images_per_second(), r.per_iteration(r.host_seconds), r.per_iteration(r.host_cpu_seconds));
  return out;
}

}  // namespace taihu
