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

// One run of a schedule: every rank's position in its steps, the messages
// on the way and those that arrived, and a random choice among what may
// happen next (a rank moves, or a message arrives).
class Run {
 public:
  Run(const Schedule& schedule, std::span<std::vector<float>> buffers, std::uint64_t seed, Payload payload)
      : schedule_(schedule),
        buffers_(buffers),
        payload_(payload),
        rng_(seed),
        next_(static_cast<std::size_t>(schedule.ranks), 0),
        sent_(static_cast<std::size_t>(schedule.ranks), false),
        mailbox_(static_cast<std::size_t>(schedule.ranks)) {}

  ExecutionStats run() {
    const int p = schedule_.ranks;
    std::vector<int> candidates;  // >= 0: a rank that can move; < 0: deliver in_flight_[-1 - c]
    for (;;) {
      candidates.clear();
      for (int r = 0; r < p; ++r) {
        if (can_move(r)) candidates.push_back(r);
      }
      for (std::size_t i = 0; i < in_flight_.size(); ++i) candidates.push_back(-1 - static_cast<int>(i));
      if (candidates.empty()) break;
      const int pick = candidates[std::uniform_int_distribution<std::size_t>(0, candidates.size() - 1)(rng_)];
      if (pick >= 0)
        move(pick);
      else
        deliver(static_cast<std::size_t>(-1 - pick));
      std::size_t pending = in_flight_.size();
      for (const auto& box : mailbox_) pending += box.size();
      stats_.max_in_flight = std::max(stats_.max_in_flight, pending);
    }
    for (int r = 0; r < p; ++r) {
      require(current(r) == nullptr, "{} {} on {} ranks deadlocked: rank {} stuck at step {}",
              name(schedule_.algorithm), name(schedule_.collective), p, r, next_[static_cast<std::size_t>(r)]);
    }
    return stats_;
  }

 private:
  const Step* current(int r) const {
    const auto& steps = schedule_.steps[static_cast<std::size_t>(r)];
    return next_[static_cast<std::size_t>(r)] < steps.size() ? &steps[next_[static_cast<std::size_t>(r)]] : nullptr;
  }

  bool can_move(int r) const {
    const Step* s = current(r);
    if (s == nullptr) return false;
    if (s->sends() && !sent_[static_cast<std::size_t>(r)]) return true;
    return !s->receives() || mailbox_[static_cast<std::size_t>(r)].contains({s->recv_from, s->recv_seq});
  }

  // Sends if it has not yet, then completes the step if its message is here.
  void move(int r) {
    const auto ri = static_cast<std::size_t>(r);
    const Step& s = *current(r);
    auto& buffer = buffers_[ri];
    if (s.sends() && !sent_[ri]) {
      const auto first = buffer.begin() + static_cast<std::ptrdiff_t>(s.send.offset);
      Message m{r, s.send_to, s.send_seq, s.send, {}};
      if (payload_ == Payload::copy) m.data.assign(first, first + static_cast<std::ptrdiff_t>(s.send.length));
      in_flight_.push_back(std::move(m));
      ++stats_.messages;
      sent_[ri] = true;
    }
    if (s.receives()) {
      auto it = mailbox_[ri].find({s.recv_from, s.recv_seq});
      if (it == mailbox_[ri].end()) return;
      const Message& m = it->second;
      require(m.range == s.recv, "execute: rank {} got range [{}, +{}) for step expecting [{}, +{})", r, m.range.offset,
              m.range.length, s.recv.offset, s.recv.length);
      float* out = buffer.data() + s.recv.offset;
      const float* in = payload_ == Payload::copy ? m.data.data()
                                                  : buffers_[static_cast<std::size_t>(m.from)].data() + m.range.offset;
      if (s.combine == Combine::reduce) {
        for (std::size_t i = 0; i < s.recv.length; ++i) out[i] += in[i];
      } else {
        std::copy(in, in + s.recv.length, out);
      }
      mailbox_[ri].erase(it);
    }
    sent_[ri] = false;
    ++next_[ri];
  }

  // Message in_flight_[i] arrives (early: before its receiver's step wants it).
  void deliver(std::size_t i) {
    Message m = std::move(in_flight_[i]);
    in_flight_[i] = std::move(in_flight_.back());
    in_flight_.pop_back();
    const Step* waiting = current(m.to);
    if (waiting == nullptr || waiting->recv_from != m.from || waiting->recv_seq != m.seq) ++stats_.early;
    mailbox_[static_cast<std::size_t>(m.to)].emplace(std::pair{m.from, m.seq}, std::move(m));
  }

  const Schedule& schedule_;
  std::span<std::vector<float>> buffers_;
  Payload payload_;
  std::mt19937_64 rng_;
  std::vector<std::size_t> next_;
  std::vector<bool> sent_;
  std::vector<Message> in_flight_;
  std::vector<std::map<std::pair<int, std::uint32_t>, Message>> mailbox_;
  ExecutionStats stats_;
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
  return Run(schedule, buffers, seed, payload).run();
}

}  // namespace taihu::collectives
