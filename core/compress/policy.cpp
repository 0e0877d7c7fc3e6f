#include "core/compress/policy.hpp"

#include <cmath>

namespace taihu::compress {
namespace {

Method parse_method(const std::string& text) {
  if (text == "fp16") return Method::fp16;
  if (text == "topk") return Method::topk;
  if (text == "trimmed") return Method::trimmed;
  if (text == "bsearch") return Method::bsearch;
  if (text == "dgc") return Method::dgc;
  if (text == "randomk") return Method::randomk;
  return Method::dense;  // "dense" and "none"
}

}  // namespace

Options read_options(const config::Section& s, const Options& defaults, bool& enabled) {
  Options o = defaults;
  if (s.has("method")) {
    const std::string m = s.get_choice("method", {"none", "dense", "fp16", "topk", "trimmed", "bsearch", "dgc", "randomk"},
                                       "bsearch");
    enabled = m != "none";
    o.method = parse_method(m);
  }
  o.schedule.density = s.get_or("density", o.schedule.density);
  if (!(o.schedule.density > 0 && o.schedule.density <= 1))
    throw s.error("density", "must be in (0, 1]");
  o.schedule.dense_iterations = s.get_or<std::uint64_t>("warmup_iterations", o.schedule.dense_iterations);
  o.schedule.ramp_stages = s.get_or("ramp_stages", o.schedule.ramp_stages);
  if (o.schedule.ramp_stages < 0) throw s.error("ramp_stages", "must be >= 0");
  o.schedule.stage_iterations = s.get_or<std::uint64_t>("ramp_iterations", o.schedule.stage_iterations);
  if (o.schedule.ramp_stages > 0 && o.schedule.stage_iterations == 0)
    throw s.error(s.has("ramp_iterations") ? "ramp_iterations" : "ramp_stages",
                  "a density ramp needs ramp_iterations > 0");
  // A per-layer method that cannot quantize drops an inherited quantize = true.
  if (s.has("method") && !s.has("quantize") && (!is_sparse(o.method) || o.method == Method::randomk))
    o.quantize = false;
  o.quantize = s.get_or("quantize", o.quantize);
  o.reuse_interval = s.get_or("reuse_interval", o.reuse_interval);
  if (o.reuse_interval < 0) throw s.error("reuse_interval", "must be >= 0");
  o.bsearch_eps = s.get_or("bsearch_eps", o.bsearch_eps);
  if (!(o.bsearch_eps > 0 && o.bsearch_eps < 1)) throw s.error("bsearch_eps", "must be in (0, 1)");
  o.error_feedback = s.get_or("error_feedback", o.error_feedback);
  o.momentum = s.get_or("momentum", o.momentum);
  if (!(o.momentum >= 0 && o.momentum < 1)) throw s.error("momentum", "must be in [0, 1)");
  o.nesterov = s.get_or("nesterov", o.nesterov);
  o.momentum_masking = s.get_or("momentum_masking", o.momentum_masking);
  o.clip_norm = s.get_or("clip_norm", o.clip_norm);
  if (o.clip_norm < 0) throw s.error("clip_norm", "must be >= 0");
  o.seed = s.get_or("seed", o.seed);
  if (o.quantize && o.reuse_interval > 1)
    throw s.error(s.has("quantize") ? "quantize" : "reuse_interval",
                  "sign-alternating quantization cannot reuse thresholds (RedSync)");
  if (o.quantize && (!is_sparse(o.method) || o.method == Method::randomk))
    throw s.error("quantize", "needs method topk, trimmed, bsearch or dgc");
  return o;
}

Policy Policy::from_sections(const config::Section& base, std::vector<const config::Section*> overrides) {
  Policy p;
  p.enabled_ = true;
  p.base_ = read_options(base, Options{}, p.enabled_);
  const long long min_elements = base.get_or<long long>("min_elements", static_cast<long long>(p.min_elements_));
  if (min_elements < 0) throw base.error("min_elements", "must be >= 0");
  p.min_elements_ = static_cast<std::size_t>(min_elements);
  p.bandwidth_rule_ = base.get_choice("rule", {"size", "bandwidth"}, "size") == "bandwidth";
  base.reject_unused("compression options");
  for (const auto* s : overrides) {
    bool ignored = true;
    p.overrides_[s->name()] = read_options(*s, p.base_, ignored);
    s->reject_unused("per-layer compression options");
  }
  return p;
}

Policy Policy::from_config(const config::Document& doc) {
  const config::Section* base = doc.find("compress");
  if (base == nullptr) return Policy{};
  std::vector<const config::Section*> named;
  for (const auto* s : doc.sections("compress"))
    if (!s->name().empty()) named.push_back(s);
  Policy p = from_sections(*base, named);
  return p;
}

Options Policy::choose(const LayerInfo& layer, int workers) const {
  Options o = base_;
  bool overridden = false;
  if (auto it = overrides_.find(layer.name); it != overrides_.end()) {
    o = it->second;
    overridden = true;
  } else if (auto slash = layer.name.find('/'); slash != std::string::npos) {
    // A layer's section sets its parameters' options; the size rule still applies.
    if (auto it2 = overrides_.find(std::string_view(layer.name).substr(0, slash)); it2 != overrides_.end())
      o = it2->second;
  }
  o.workers = workers;
  if (!enabled_) {
    o.method = Method::dense;
    o.quantize = false;
    return o;
  }
  if (layer.output) o.quantize = false;
  if (!is_sparse(o.method)) return o;
  bool sparse = true;
  if (hook_) {
    sparse = hook_(layer, o, workers);
  } else if (!overridden) {  // a parameter's own section wins over the size rule
    sparse = layer.elements >= min_elements_ && layer.dims > 1;
    if (sparse && bandwidth_rule_) {
      const double bytes_per_entry = o.quantize ? 4.0 : 8.0;
      // bsearch may send up to 2k: count it at its worst.
      const double d = o.schedule.density * (o.method == Method::bsearch ? 2.0 : 1.0);
      sparse = d * workers * bytes_per_entry / 8.0 < 1.0;
    }
  }
  if (!sparse) {
    o.method = Method::dense;
    o.quantize = false;
  }
  return o;
}

std::vector<Segment> plan_segments(const Policy& policy, std::span<const LayerInfo> layers, int workers) {
  std::vector<Segment> out;
  std::size_t at = 0;
  for (const auto& layer : layers) {
    Options o = policy.choose(layer, workers);
    const bool dense = o.method == Method::dense;
    const auto& prev = out.empty() ? o : out.back().options;
    const bool same_state = prev.momentum == o.momentum && prev.nesterov == o.nesterov && prev.clip_norm == 0 &&
                            o.clip_norm == 0;  // clipping is per segment, so those stay apart
    if (dense && !out.empty() && prev.method == Method::dense && same_state) {
      out.back().count += layer.elements;
      out.back().name += "+" + layer.name;
    } else {
      out.push_back(Segment{layer.name, at, layer.elements, o});
    }
    at += layer.elements;
  }
  return out;
}

double ring_allreduce_bytes(double elements, int workers) {
  return workers <= 1 ? 0.0 : 2.0 * (workers - 1) / workers * 4.0 * elements;
}

double sparse_allgather_bytes(double entries, double bytes_per_entry, int workers) {
  return workers <= 1 ? 0.0 : (workers - 1) * entries * bytes_per_entry;
}

}  // namespace taihu::compress
