#pragma once
// The error of everything between processes: a peer that cannot be reached,
// a connection lost or refused, bytes that are not taihu's protocol, a
// handshake or certificate refused, a local resource (port, shared-memory
// segment, secret file) that cannot be had. Its message names the peer or
// the resource; callers tell it from the user's own mistakes (ConfigError) to
// decide between a retry and a clear exit.

#include "core/common/error.hpp"

namespace taihu::transport {

class NetError : public Error {
 public:
  using Error::Error;
};

}  // namespace taihu::transport
