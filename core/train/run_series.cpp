#include "core/train/run_series.hpp"

namespace taihu {

void RunSeries::add(const MetricRecord& record) {
  bool train = false;
  for (const auto& [key, value] : record)
    if (key == "type") train = std::holds_alternative<std::string>(value) && std::get<std::string>(value) == "train";
  std::string json = to_json(record);
  std::lock_guard lock(mutex_);
  if (!train) {
    if (evaluations_.size() < capacity_) evaluations_.push_back(std::move(json));
    return;
  }
  if (seen_++ % stride_ != 0) return;
  if (train_.size() == capacity_) {  // keep every other one, and take half as many from now on
    for (std::size_t i = 1; 2 * i < train_.size(); ++i) train_[i] = std::move(train_[2 * i]);
    train_.resize((train_.size() + 1) / 2);
    stride_ *= 2;
    if ((seen_ - 1) % stride_ != 0) return;
  }
  train_.push_back(std::move(json));
}

std::string RunSeries::json() const {
  std::lock_guard lock(mutex_);
  std::string out = "{\"train\": [";
  for (std::size_t i = 0; i < train_.size(); ++i) out += (i ? ",\n" : "\n") + train_[i];
  out += "],\n\"evaluations\": [";
  for (std::size_t i = 0; i < evaluations_.size(); ++i) out += (i ? ",\n" : "\n") + evaluations_[i];
  return out + "]}\n";
}

}  // namespace taihu
