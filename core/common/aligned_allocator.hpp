#pragma once
// Heap memory that starts on a fixed boundary, for tensors and the SW26010
// model's host buffers.
//
// Why 256 bytes: four cache lines (no two buffers share an adjacent-line
// prefetch pair), and a multiple of the SW26010 DMA transaction (128 bytes).
// The model charges a DMA by the transactions its blocks touch, so a buffer's
// simulated time would otherwise depend on where malloc happened to put it,
// which changes from run to run (glibc's mmap threshold moves with earlier
// frees, and the actors' allocations interleave differently).

#include <cstddef>
#include <new>
#include <vector>

namespace taihu {

inline constexpr std::size_t host_alignment = 256;

template <class T>
struct AlignedAllocator {
  using value_type = T;

  AlignedAllocator() noexcept = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit by contract

  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(host_alignment)));
  }
  void deallocate(T* p, std::size_t) noexcept {
    // Unsized: clang before 19 declares sized deallocation only with -fsized-deallocation,
    // and glibc's free needs no size.
    ::operator delete(p, std::align_val_t(host_alignment));
  }

  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept {
    return true;  // stateless: any instance frees what another allocated
  }
};

template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

}  // namespace taihu
