#pragma once
// The stacks the CPE model's fibers run on, and how control moves between
// them: a hand-written x86-64 switch (ucontext's swapcontext also saves the
// signal mask with a system call on every switch, which dominated the
// simulation's host time), and what AddressSanitizer and ThreadSanitizer must
// be told about each switch, since they keep one stack per thread otherwise.
// The scheduling itself (which fiber runs next) is the core group's
// (core_group.cpp).

#include <cstddef>

namespace taihu::sw26010::fiber {

// A fiber's entry: called on its own stack with the argument given to
// first_frame. It must never return: there is no frame to return to.
using Entry = void (*)(void* arg);

// Prepares `stack` (`bytes` long) so that the first switch_stack to the
// returned stack pointer calls entry(arg) on it. A stack used before is
// reused: what a failed run left there is forgotten.
void* first_frame(void* stack, std::size_t bytes, Entry entry, void* arg);

// Saves the running side's stack pointer in *save_sp and goes on at load_sp,
// whose stack starts at to_bottom and is to_size long. Returns when some side
// switches back. `tsan_to`: ThreadSanitizer's fiber of the side that runs next
// (TsanFiber); the switch orders what one side did before it with what the
// other does after. `from_bottom`, `from_size`: where to keep the stack that
// switches back here, when the caller does not know it (a thread's own).
void switch_stack(void** save_sp, void* load_sp, const void* to_bottom, std::size_t to_size, void* tsan_to,
                  const void** from_bottom = nullptr, std::size_t* from_size = nullptr);

// The first thing an entry does: the switch into a fresh fiber did not return
// through switch_stack, so AddressSanitizer hears here that it is over, and
// where the stack it came from lies.
void finish_first_switch(const void** from_bottom, std::size_t* from_size);

// ThreadSanitizer keeps a call stack per thread; a hand-made context switch
// must say which fiber runs next, or every fiber's calls pile onto the
// thread's stack until it overflows (a CHECK failure in the runtime). A fiber
// started afresh gets a new one: the frames it was left in are never returned
// from. Without ThreadSanitizer it holds nothing.
class TsanFiber {
 public:
  TsanFiber() = default;
  TsanFiber(const TsanFiber&) = delete;
  TsanFiber& operator=(const TsanFiber&) = delete;
  ~TsanFiber() { reset(nullptr); }

  void renew();
  void* get() const { return fiber_; }

 private:
  void reset(void* fiber);
  void* fiber_ = nullptr;
};

// ThreadSanitizer's fiber of the running thread (null without it).
void* current_tsan_fiber();

}  // namespace taihu::sw26010::fiber
