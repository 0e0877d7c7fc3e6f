#include "actors/compute/mailbox_resumer.hpp"

#include <caf/message.hpp>
#include <caf/message_id.hpp>

#include "messages/type_ids.hpp"

namespace taihu::compute {

void MailboxResumer::resume_later(std::coroutine_handle<> h) {
  {
    std::lock_guard lock(mutex_);
    ready_.push_back(h);
  }
  if (auto owner = owner_.lock())
    owner->enqueue(nullptr, caf::make_message_id(), caf::make_message(msg::resume_atom_v), nullptr);
}

std::coroutine_handle<> MailboxResumer::next() {
  std::lock_guard lock(mutex_);
  if (ready_.empty()) return {};
  const auto h = ready_.front();
  ready_.pop_front();
  return h;
}

}  // namespace taihu::compute
