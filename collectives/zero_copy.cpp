#include "collectives/zero_copy.hpp"

#include <algorithm>
#include <unordered_map>

#include "core/common/check.hpp"

namespace taihu::collectives {
namespace {

bool overlap(Range a, Range b) { return a.offset < b.end() && b.offset < a.end(); }

}  // namespace

ZeroCopyReport analyse_zero_copy(const Schedule& schedule) {
  const auto p = static_cast<std::size_t>(schedule.ranks);
  // clock[r][k][q]: how many of rank q's steps have completed in the causal
  // past of the completion of rank r's step k (vector clocks).
  std::vector<std::vector<std::vector<std::uint32_t>>> clock(p);
  for (std::size_t r = 0; r < p; ++r) clock[r].resize(schedule.steps[r].size());
  // (from, to, seq) → (sender step, sender's clock at send time)
  struct Sent {
    std::size_t step;
    std::vector<std::uint32_t> clock;
  };
  std::unordered_map<std::uint64_t, Sent> sent;
  // (from, to, seq) → receiver step
  std::unordered_map<std::uint64_t, std::size_t> consumed_at;
  auto key = [&](int from, int to, std::uint32_t seq) {
    return (static_cast<std::uint64_t>(from) * p + static_cast<std::uint64_t>(to)) << 32 | seq;
  };

  std::vector<std::size_t> next(p, 0);
  std::vector<bool> send_posted(p, false);
  std::size_t remaining = 0;
  for (const auto& steps : schedule.steps) remaining += steps.size();
  while (remaining > 0) {
    bool progressed = false;
    for (std::size_t r = 0; r < p; ++r) {
      const auto& steps = schedule.steps[r];
      while (next[r] < steps.size()) {
        const std::size_t k = next[r];
        const Step& s = steps[k];
        std::vector<std::uint32_t> before = k == 0 ? std::vector<std::uint32_t>(p, 0) : clock[r][k - 1];
        if (s.sends() && !send_posted[r]) {
          sent[key(static_cast<int>(r), s.send_to, s.send_seq)] = {k, before};
          send_posted[r] = true;
        }
        if (s.receives()) {
          const auto message = key(s.recv_from, static_cast<int>(r), s.recv_seq);
          auto it = sent.find(message);
          if (it == sent.end()) break;
          for (std::size_t q = 0; q < p; ++q) before[q] = std::max(before[q], it->second.clock[q]);
          consumed_at[message] = k;
        }
        before[r] = static_cast<std::uint32_t>(k + 1);
        clock[r][k] = std::move(before);
        send_posted[r] = false;
        ++next[r];
        --remaining;
        progressed = true;
      }
    }
    require(progressed, "{} {} on {} ranks deadlocks", name(schedule.algorithm), name(schedule.collective),
            schedule.ranks);
  }

  ZeroCopyReport report;
  for (std::size_t a = 0; a < p; ++a) {
    const auto& steps = schedule.steps[a];
    for (std::size_t j = 0; j < steps.size(); ++j) {
      const Step& s = steps[j];
      if (!s.sends()) continue;
      const auto b = static_cast<std::size_t>(s.send_to);
      const std::size_t done = consumed_at.at(key(static_cast<int>(a), s.send_to, s.send_seq)) + 1;
      // The first later write (a receive, including this step's) to the range.
      std::size_t w = j;
      while (w < steps.size() && !(steps[w].receives() && overlap(steps[w].recv, s.send))) ++w;
      if (w < steps.size() && clock[a][w][b] < done) report.overwritten.push_back({static_cast<int>(a), j});
      if (clock[a].back()[b] < done) report.outlive_sender.push_back({static_cast<int>(a), j});
    }
  }
  return report;
}

}  // namespace taihu::collectives
