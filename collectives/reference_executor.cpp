#include "collectives/reference_executor.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <utility>

#include "core/common/check.hpp"

namespace taihu::collectives {
namespace {

struct Message {
  int from = 0, to = 0;
  std::uint32_t seq = 0;
  Range range;
  std::vector<float> data;
};

}  // namespace

ExecutionStats execute(const Schedule& schedule, std::span<std::vector<float>> buffers, std::uint64_t seed,
                       Payload payload) {
  const int p = schedule.ranks;
  require(static_cast<int>(buffers.size()) == p, "execute: {} buffers for {} ranks", buffers.size(), p);
  for (const auto& b : buffers) {
    require(b.size() == schedule.elements, "execute: buffer of {} floats, schedule needs {}", b.size(),
            schedule.elements);
  }
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<bool> sent(static_cast<std::size_t>(p), false);
  std::vector<Message> in_flight;
  std::vector<std::map<std::pair<int, std::uint32_t>, Message>> mailbox(static_cast<std::size_t>(p));
  ExecutionStats stats;

  auto current = [&](int r) -> const Step* {
    const auto& steps = schedule.steps[static_cast<std::size_t>(r)];
    return next[static_cast<std::size_t>(r)] < steps.size() ? &steps[next[static_cast<std::size_t>(r)]] : nullptr;
  };
  auto can_move = [&](int r) {
    const Step* s = current(r);
    if (s == nullptr) return false;
    if (s->sends() && !sent[static_cast<std::size_t>(r)]) return true;
    return !s->receives() || mailbox[static_cast<std::size_t>(r)].contains({s->recv_from, s->recv_seq});
  };
  // Sends if it has not yet, then completes the step if its message is here.
  auto move = [&](int r) {
    const auto ri = static_cast<std::size_t>(r);
    const Step& s = *current(r);
    auto& buffer = buffers[ri];
    if (s.sends() && !sent[ri]) {
      const auto first = buffer.begin() + static_cast<std::ptrdiff_t>(s.send.offset);
      Message m{r, s.send_to, s.send_seq, s.send, {}};
      if (payload == Payload::copy) m.data.assign(first, first + static_cast<std::ptrdiff_t>(s.send.length));
      in_flight.push_back(std::move(m));
      ++stats.messages;
      sent[ri] = true;
    }
    if (s.receives()) {
      auto it = mailbox[ri].find({s.recv_from, s.recv_seq});
      if (it == mailbox[ri].end()) return;
      const Message& m = it->second;
      require(m.range == s.recv, "execute: rank {} got range [{}, +{}) for step expecting [{}, +{})", r,
              m.range.offset, m.range.length, s.recv.offset, s.recv.length);
      float* out = buffer.data() + s.recv.offset;
      const float* in = payload == Payload::copy
                            ? m.data.data()
                            : buffers[static_cast<std::size_t>(m.from)].data() + m.range.offset;
      if (s.combine == Combine::reduce) {
        for (std::size_t i = 0; i < s.recv.length; ++i) out[i] += in[i];
      } else {
        std::copy(in, in + s.recv.length, out);
      }
      mailbox[ri].erase(it);
    }
    sent[ri] = false;
    ++next[ri];
  };

  std::vector<int> candidates;  // >= 0: a rank that can move; < 0: deliver in_flight[-1 - c]
  for (;;) {
    candidates.clear();
    for (int r = 0; r < p; ++r) {
      if (can_move(r)) candidates.push_back(r);
    }
    for (std::size_t i = 0; i < in_flight.size(); ++i) candidates.push_back(-1 - static_cast<int>(i));
    if (candidates.empty()) break;
    const int pick = candidates[std::uniform_int_distribution<std::size_t>(0, candidates.size() - 1)(rng)];
    if (pick >= 0) {
      move(pick);
    } else {
      const auto i = static_cast<std::size_t>(-1 - pick);
      Message m = std::move(in_flight[i]);
      in_flight[i] = std::move(in_flight.back());
      in_flight.pop_back();
      const Step* waiting = current(m.to);
      if (waiting == nullptr || waiting->recv_from != m.from || waiting->recv_seq != m.seq) ++stats.early;
      mailbox[static_cast<std::size_t>(m.to)].emplace(std::pair{m.from, m.seq}, std::move(m));
    }
    std::size_t pending = in_flight.size();
    for (const auto& box : mailbox) pending += box.size();
    stats.max_in_flight = std::max(stats.max_in_flight, pending);
  }
  for (int r = 0; r < p; ++r) {
    require(current(r) == nullptr, "{} {} on {} ranks deadlocked: rank {} stuck at step {}",
            name(schedule.algorithm), name(schedule.collective), p, r, next[static_cast<std::size_t>(r)]);
  }
  return stats;
}

}  // namespace taihu::collectives
