// The DMA engine of a core group (sw26010.md §2, §8.2): each request is
// served by the group's shared memory path at its transaction cost and lands
// (its bytes copied between main memory and the LDMs, its reply word
// incremented) when the simulated clock reaches its completion.

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "core/common/check.hpp"
#include "devices/sw26010/core_group.hpp"

namespace taihu::sw26010 {

namespace {
constexpr std::size_t dma_word = 4;
}  // namespace

void Cpe::dma_get(void* ldm, const void* mem, std::size_t bytes, DmaReply& reply) {
  dma(DmaDesc{DmaOp::get, DmaMode::pe, bytes, 0, 0, 0xff}, const_cast<void*>(mem), ldm, reply);
}

void Cpe::dma_put(void* mem, const void* ldm, std::size_t bytes, DmaReply& reply) {
  dma(DmaDesc{DmaOp::put, DmaMode::pe, bytes, 0, 0, 0xff}, mem, const_cast<void*>(ldm), reply);
}

void Cpe::dma_get_strided(void* ldm, const void* mem, std::size_t blocks, std::size_t block, std::size_t pitch,
                          DmaReply& reply) {
  if (pitch < block) raise<SimulationError>("strided DMA with pitch {} < block {} at {}", pitch, block, where());
  const bool contiguous = pitch == block || blocks == 1;
  dma(DmaDesc{DmaOp::get, DmaMode::pe, blocks * block, contiguous ? 0 : block, contiguous ? 0 : pitch - block, 0xff},
      const_cast<void*>(mem), ldm, reply);
}

void Cpe::dma_put_strided(void* mem, const void* ldm, std::size_t blocks, std::size_t block, std::size_t pitch,
                          DmaReply& reply) {
  if (pitch < block) raise<SimulationError>("strided DMA with pitch {} < block {} at {}", pitch, block, where());
  const bool contiguous = pitch == block || blocks == 1;
  dma(DmaDesc{DmaOp::put, DmaMode::pe, blocks * block, contiguous ? 0 : block, contiguous ? 0 : pitch - block, 0xff},
      mem, const_cast<void*>(ldm), reply);
}

std::uint64_t CoreGroup::dma_targets(const Cpe& issuer, const DmaDesc& desc) const {
  std::uint64_t out = 0;
  switch (desc.mode) {
    case DmaMode::pe:
      out = std::uint64_t(1) << issuer.id();
      break;
    case DmaMode::bcast:
      for (int r = 0; r < mesh; ++r)
        if (desc.bcast_mask & (1u << r)) out |= std::uint64_t(0xff) << (r * mesh);
      break;
    case DmaMode::row:
    case DmaMode::brow:
      out = std::uint64_t(0xff) << (issuer.row() * mesh);
      break;
  }
  return out;
}

namespace {
// Calls f(cpe id) for each bit of mask, lowest first.
template <class F>
void for_each_bit(std::uint64_t mask, F&& f) {
  while (mask) {
    f(__builtin_ctzll(mask));
    mask &= mask - 1;
  }
}

// What a request costs the memory: the whole transactions (of `tx` bytes)
// that each of its blocks touches, and how many blocks it has.
std::pair<std::size_t, std::size_t> charged_bytes(const DmaDesc& desc, std::uintptr_t mem_addr, std::size_t tx) {
  const bool strided = desc.block != 0;
  std::size_t charged = 0, blocks = 1;
  if (!strided) {
    charged = tx * ((mem_addr + desc.size + tx - 1) / tx - mem_addr / tx);
  } else {
    blocks = desc.size / desc.block;
    const std::size_t pitch = desc.block + desc.stride;
    auto touched = [&](std::uintptr_t start) { return (start + desc.block + tx - 1) / tx - start / tx; };
    if (pitch % tx == 0) {
      charged = tx * blocks * touched(mem_addr);  // every block has the same alignment
    } else if ((tx & (tx - 1)) == 0) {
      const int shift = __builtin_ctzll(tx);
      for (std::size_t b = 0; b < blocks; ++b) {
        const auto start = mem_addr + b * pitch;
        charged += ((start + desc.block + tx - 1) >> shift) - (start >> shift);
      }
      charged *= tx;
    } else {
      for (std::size_t b = 0; b < blocks; ++b) charged += tx * touched(mem_addr + b * pitch);
    }
  }
  return {charged, blocks};
}

}  // namespace

std::size_t Cpe::check_dma(const DmaDesc& desc, const void* mem, const void* ldm) const {
  const auto& p = params();
  const bool strided = desc.block != 0;
  const auto misaligned = [](std::size_t v) { return v % dma_word != 0; };
  if (desc.size == 0 || misaligned(desc.size) || misaligned(reinterpret_cast<std::uintptr_t>(mem)) ||
      misaligned(reinterpret_cast<std::uintptr_t>(ldm)) || (strided && (misaligned(desc.block) ||
                                                                        misaligned(desc.stride) ||
                                                                        desc.size % desc.block != 0)))
    raise<SimulationError>(
        "misaligned DMA descriptor at {}: size {}, block {}, stride {}, memory address {:#x}, LDM address {:#x} "
        "(sizes and addresses must be multiples of {} bytes; size a multiple of the block)",
        where(), desc.size, desc.block, desc.stride, reinterpret_cast<std::uintptr_t>(mem),
        reinterpret_cast<std::uintptr_t>(ldm), dma_word);
  if (desc.mode == DmaMode::row && (desc.op != DmaOp::get || strided || desc.size % (mesh * dma_word) != 0))
    raise<SimulationError>("row-mode DMA at {} must be a contiguous GET of a multiple of {} bytes, got size {}",
                           where(), mesh * dma_word, desc.size);
  if (desc.op == DmaOp::put && desc.mode != DmaMode::pe)
    raise<SimulationError>("DMA PUT at {} must use PE mode", where());
  const auto* base = ldm_.get();
  const auto* at = static_cast<const std::byte*>(ldm);
  const std::size_t ldm_bytes = desc.mode == DmaMode::row ? desc.size / mesh : desc.size;
  if (at < base || at + ldm_bytes > base + p.ldm_bytes)
    raise<SimulationError>("DMA at {} addresses LDM outside the {}-byte local store (offset {}, {} bytes)", where(),
                           p.ldm_bytes, at - base, ldm_bytes);
  return ldm_bytes;
}

void Cpe::dma(const DmaDesc& desc, void* mem, void* ldm, DmaReply& reply) {
  auto& g = *group_;
  const auto& p = params();
  const std::size_t ldm_bytes = check_dma(desc, mem, ldm);
  const bool strided = desc.block != 0;
  const auto* base = ldm_.get();
  const auto* at = static_cast<const std::byte*>(ldm);

  clock_ += p.dma_issue_cycles;
  order();
  // The channel buffer holds dma_queue_depth requests not yet started.
  std::erase_if(dma_starts_, [&](double s) { return s <= double(clock_); });
  if (int(dma_starts_.size()) >= p.dma_queue_depth) {
    clock_ = std::max(clock_, ceil_cycles(dma_starts_.front()));
    std::erase_if(dma_starts_, [&](double s) { return s <= double(clock_); });
  }

  const auto [charged, blocks] = charged_bytes(desc, reinterpret_cast<std::uintptr_t>(mem), p.dma_transaction_bytes);
  double rate = desc.op == DmaOp::get ? p.dma_get_bytes_per_cycle() : p.dma_put_bytes_per_cycle();
  if (strided) rate = std::min(rate, p.dma_strided_bytes_per_cycle());
  rate = std::min(rate, p.dma_cap_bytes_per_cycle(g.active_cpes()));
  // Reads and writes mixed (Table D): a request issued while requests of the
  // other direction are still in flight shares the memory with them, at the
  // mixed read/write rate, and pays one bus turnaround (the memory interleaves
  // the concurrent streams' transactions).
  const double start = std::max(double(clock_), g.dma_free_);
  const bool mixed = (desc.op == DmaOp::get ? g.dma_put_busy_until_ : g.dma_get_busy_until_) > double(clock_);
  if (mixed) rate = std::min(rate, p.dma_mixed_bytes_per_cycle());
  const double service = double(charged) / rate + (strided ? double(blocks) * p.dma_block_overhead_cycles : 0.0) +
                         (mixed ? p.dma_turnaround_cycles : 0.0);
  g.dma_free_ = start + service;
  const double completion =
      g.dma_free_ + (desc.op == DmaOp::get ? p.dma_get_latency_cycles : p.dma_put_latency_cycles);
  double& busy_until = desc.op == DmaOp::get ? g.dma_get_busy_until_ : g.dma_put_busy_until_;
  busy_until = std::max(busy_until, completion);
  dma_starts_.push_back(start);

  CoreGroup::Pending pending{completion,          g.dma_seq_++, id_, desc, static_cast<std::byte*>(mem),
                             std::size_t(at - base), g.dma_targets(*this, desc), &reply};
  if (desc.op == DmaOp::get && g.numerics_) {
    // Poison the destination so that a read before the wait shows as NaN.
    for_each_bit(pending.targets,
                 [&](int t) { std::memset(g.cpes_[t].ldm_.get() + pending.ldm_offset, 0xff, ldm_bytes); });
  }
  issued_.emplace_back(&reply, completion);
  for_each_bit(pending.targets, [&](int t) { ++g.cpes_[std::size_t(t)].targeted_; });
  auto pos = std::upper_bound(g.pending_.begin(), g.pending_.end(), pending, [](const auto& a, const auto& b) {
    return a.completion < b.completion || (a.completion == b.completion && a.seq < b.seq);
  });
  g.pending_.insert(pos, std::move(pending));
  g.stats_.dma_requests += 1;
  g.stats_.dma_bytes += std::int64_t(desc.size);
  g.stats_.dma_charged_bytes += std::int64_t(charged);
}

double Cpe::dma_completion(const DmaReply& reply) const {
  double last = -1;
  for (const auto& [r, c] : issued_)
    if (r == &reply) last = std::max(last, c);
  return last;
}

void Cpe::dma_wait(DmaReply& reply, int count) {
  auto& g = *group_;
  while (reply.value < count) {
    double completion = -1;
    for (const auto& [r, c] : issued_)
      if (r == &reply && (completion < 0 || c < completion)) completion = c;
    if (completion < 0)
      raise<SimulationError>("dma_wait at {} for {} replies, but the reply word holds {} and no DMA to it is in flight",
                             where(), count, reply.value);
    clock_ = std::max(clock_, ceil_cycles(completion));
    order();
    g.land_until(double(clock_));
  }
}

void Cpe::check_ready(const void* ptr, std::size_t bytes) const {
  if (targeted_ == 0) return;
  const auto& g = *group_;
  const auto* p = static_cast<const std::byte*>(ptr);
  const std::size_t lo = p - ldm_.get(), hi = lo + bytes;
  for (const auto& pend : g.pending_) {
    if (!((pend.targets >> id_) & 1)) continue;
    const std::size_t len = pend.desc.mode == DmaMode::row ? pend.desc.size / mesh : pend.desc.size;
    if (pend.ldm_offset < hi && lo < pend.ldm_offset + len)
      raise<SimulationError>(
          "LDM access before dma_wait at {}: bytes [{}, {}) overlap a DMA {} (LDM [{}, {}), completes at cycle {:.0f}, "
          "now {}) that has not been waited for",
          where(), lo, hi, pend.desc.op == DmaOp::get ? "GET" : "PUT", pend.ldm_offset, pend.ldm_offset + len,
          pend.completion, clock_);
  }
}

void CoreGroup::land(Pending& p) {
  auto& issued = cpes_[std::size_t(p.issuer)].issued_;
  for (std::size_t k = 0; k < issued.size(); ++k)
    if (issued[k].first == p.reply && issued[k].second == p.completion) {
      issued.erase(issued.begin() + std::ptrdiff_t(k));
      break;
    }
  for_each_bit(p.targets, [&](int t) { --cpes_[std::size_t(t)].targeted_; });
  if (numerics_) {
    const bool strided = p.desc.block != 0;
    const std::size_t block = strided ? p.desc.block : p.desc.size;
    const std::size_t pitch = strided ? p.desc.block + p.desc.stride : block;
    const std::size_t blocks = p.desc.size / block;
    if (p.desc.op == DmaOp::get) {
      if (p.desc.mode == DmaMode::row) {
        const std::size_t part = p.desc.size / mesh;
        std::size_t c = 0;
        for_each_bit(p.targets,
                     [&](int t) { std::memcpy(cpes_[t].ldm_.get() + p.ldm_offset, p.mem + c++ * part, part); });
      } else {
        for_each_bit(p.targets, [&](int t) {
          std::byte* dst = cpes_[t].ldm_.get() + p.ldm_offset;
          for (std::size_t b = 0; b < blocks; ++b) std::memcpy(dst + b * block, p.mem + b * pitch, block);
        });
      }
    } else {
      const std::byte* src = cpes_[p.issuer].ldm_.get() + p.ldm_offset;
      for (std::size_t b = 0; b < blocks; ++b) std::memcpy(p.mem + b * pitch, src + b * block, block);
    }
  }
  p.reply->value += 1;
}

void CoreGroup::land_until(double time) {
  while (!pending_.empty() && pending_.front().completion <= time + 1e-9) {
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    land(p);
  }
}

}  // namespace taihu::sw26010
