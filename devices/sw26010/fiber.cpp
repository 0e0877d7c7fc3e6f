#include "devices/sw26010/fiber.hpp"

#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#define TAIHU_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TAIHU_ASAN_FIBERS 1
#endif
#endif
#ifndef TAIHU_ASAN_FIBERS
#define TAIHU_ASAN_FIBERS 0
#endif
#if TAIHU_ASAN_FIBERS
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define TAIHU_TSAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TAIHU_TSAN_FIBERS 1
#endif
#endif
#ifndef TAIHU_TSAN_FIBERS
#define TAIHU_TSAN_FIBERS 0
#endif
#if TAIHU_TSAN_FIBERS
#include <sanitizer/tsan_interface.h>
#endif

// The switch saves the callee-saved registers on the running stack, swaps
// stack pointers and restores them from the other stack. A fresh fiber's first
// frame (first_frame) holds registers too: rbx = the entry's argument, r12 =
// the entry, and fiber_start as the return address, which calls the entry
// with the stack aligned as a call expects.
extern "C" void taihu_sw26010_switch(void** save_sp, void* load_sp);
extern "C" void taihu_sw26010_fiber_start();
asm(R"(
  .text
  .globl taihu_sw26010_switch
  .type taihu_sw26010_switch,@function
taihu_sw26010_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size taihu_sw26010_switch,.-taihu_sw26010_switch

  .globl taihu_sw26010_fiber_start
  .type taihu_sw26010_fiber_start,@function
taihu_sw26010_fiber_start:
  movq %rbx, %rdi
  callq *%r12
  ud2
  .size taihu_sw26010_fiber_start,.-taihu_sw26010_fiber_start
)");

namespace taihu::sw26010::fiber {

void* first_frame(void* stack, std::size_t bytes, Entry entry, void* arg) {
#if TAIHU_ASAN_FIBERS
  // The frames a failed run left on this stack keep their redzones poisoned.
  // The sanitizer's own uninstrumented code writes there (__asan_handle_no_return,
  // which the compiler calls first thing in an entry that never returns).
  __asan_unpoison_memory_region(stack, bytes);
#endif
  auto top = (reinterpret_cast<std::uintptr_t>(stack) + bytes) & ~std::uintptr_t(15);
  auto* words = reinterpret_cast<void**>(top) - 7;
  words[0] = words[1] = words[2] = nullptr;   // r15 r14 r13
  words[3] = reinterpret_cast<void*>(entry);  // r12
  words[4] = arg;                             // rbx
  words[5] = nullptr;                         // rbp
  words[6] = reinterpret_cast<void*>(&taihu_sw26010_fiber_start);
  return words;
}

void switch_stack(void** save_sp, void* load_sp, const void* to_bottom, std::size_t to_size,
                  [[maybe_unused]] void* tsan_to, const void** from_bottom, std::size_t* from_size) {
#if TAIHU_ASAN_FIBERS
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, to_bottom, to_size);
#else
  (void)to_bottom, (void)to_size, (void)from_bottom, (void)from_size;
#endif
#if TAIHU_TSAN_FIBERS
  __tsan_switch_to_fiber(tsan_to, 0);
#endif
  taihu_sw26010_switch(save_sp, load_sp);
#if TAIHU_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(fake_stack, from_bottom, from_size);
#endif
}

void finish_first_switch([[maybe_unused]] const void** from_bottom, [[maybe_unused]] std::size_t* from_size) {
#if TAIHU_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(nullptr, from_bottom, from_size);
#endif
}

void TsanFiber::renew() {
#if TAIHU_TSAN_FIBERS
  reset(__tsan_create_fiber(0));
#endif
}

void TsanFiber::reset([[maybe_unused]] void* fiber) {
#if TAIHU_TSAN_FIBERS
  if (fiber_ != nullptr) __tsan_destroy_fiber(fiber_);
  fiber_ = fiber;
#endif
}

void* current_tsan_fiber() {
#if TAIHU_TSAN_FIBERS
  return __tsan_get_current_fiber();
#else
  return nullptr;
#endif
}

}  // namespace taihu::sw26010::fiber
