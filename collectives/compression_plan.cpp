#include "collectives/compression_plan.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "collectives/buckets.hpp"

namespace taihu::collectives {

double BucketCompression::expected_entries() const {
  double entries = 0;
  for (const auto& s : segments) {
    const double n = static_cast<double>(s.count);
    entries += compress::is_sparse(s.options.method) ? n * s.options.schedule.density : n;
  }
  return entries;
}

bool BucketCompression::dense_only() const {
  for (const auto& s : segments)
    if (s.options.method != compress::Method::dense) return false;
  return true;
}

bool BucketCompression::needs_precompress() const {
  for (const auto& s : segments)
    if (s.options.momentum > 0 || s.options.clip_norm > 0) return true;
  return false;
}

std::string BucketCompression::describe() const {
  if (segments.empty()) return "allreduce";
  std::string out;
  for (const auto& s : segments) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", s.name, compress::method_name(s.options.method));
    if (compress::is_sparse(s.options.method)) out += fmt::format(" {:g}", s.options.schedule.density);
  }
  return out;
}

std::vector<compress::LayerInfo> bucket_layers(const Bucket& bucket, const std::string& output_layer) {
  std::vector<compress::LayerInfo> layers;
  for (const auto& slice : bucket.slices) {
    compress::LayerInfo info;
    info.name = slice.param->name;
    info.elements = slice.count;
    info.dims = static_cast<int>(slice.param->blob->shape().rank());
    info.output = info.name.substr(0, info.name.find('/')) == output_layer;
    layers.push_back(std::move(info));
  }
  return layers;
}

std::vector<BucketCompression> plan_compression(const compress::Policy& policy, const Buckets& buckets, int workers) {
  std::vector<BucketCompression> plan(buckets.size());
  if (!policy.enabled() || buckets.size() == 0) return plan;
  // Buckets run last layer first, so the first slice is the output layer's.
  const std::string& first = buckets[0].slices.front().param->name;
  const std::string output_layer = first.substr(0, first.find('/'));
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const auto layers = bucket_layers(buckets[b], output_layer);
    plan[b].segments = compress::plan_segments(policy, layers, workers);
  }
  return plan;
}

std::vector<BucketCompression> plan_compression(const config::Document& doc, const Buckets& buckets, int workers) {
  const compress::Policy policy = compress::Policy::from_config(doc);
  auto plan = plan_compression(policy, buckets, workers);
  if (!policy.enabled()) return plan;
  bool corrected = false;
  for (const auto& bucket : plan)
    for (const auto& s : bucket.segments) corrected = corrected || s.options.momentum > 0;
  if (corrected) {
    if (const config::Section* solver = doc.find("solver"); solver != nullptr) {
      const double momentum = solver->get_or<double>("momentum", 0.0);
      if (momentum != 0.0)
        throw solver->error("momentum", fmt::format("must be 0 when [compress] momentum > 0: the compressor applies "
                                                    "the momentum (DGC's momentum correction), so the solver takes "
                                                    "plain SGD steps; got {}",
                                                    momentum));
      if (solver->has("clip_gradients") && solver->get<double>("clip_gradients") > 0)
        spdlog::warn("[solver] clip_gradients = {} clips the summed update, which with [compress] momentum > 0 "
                     "already carries the momentum (up to 1/(1 - momentum) times a gradient), so it clips far "
                     "harder than on plain gradients; clip each worker's gradient before the momentum with "
                     "[compress] clip_norm instead (DGC's local clipping) and set clip_gradients = 0",
                     solver->get<double>("clip_gradients"));
    }
  }
  return plan;
}

double dense_ring_bytes_all_ranks(std::size_t elements, int workers) {
  return workers * compress::ring_allreduce_bytes(static_cast<double>(elements), workers);
}

}  // namespace taihu::collectives
