#pragma once
// The data plane's wire format: a handshake, then frames.
//
// Handshake (the connecting side is the client; all integers little-endian,
// the host order of every supported node):
//   client -> Hello     {magic "TAIHU-DP", version, node, 0, TLS mode, client nonce[32]}
//   server -> Challenge {magic, version, server's node, 0, TLS mode, server nonce[32]}
//             or Refuse {magic, server's version, 0, 1, reason}, then it closes
//   client -> Proof     HMAC(secret, "taihu-dp client" | version | node | client nonce | server nonce)
//   server -> Welcome   HMAC(secret, "taihu-dp server" | version | node | server nonce | client nonce)
//             or Refuse, then it closes
//   client -> Probe     (see below) and its MAC
//   server -> Answer    one byte and its MAC
//   both:               a TLS 1.3 handshake, unless the TLS mode is off or the
//                       connection got a same-host channel (transport/tls.hpp)
// The client checks the server's Welcome in turn, so both sides prove they
// hold the cluster secret without sending it; fresh nonces on both sides make
// a recorded handshake useless for a replay. A server that sees anything but
// a Hello of its own version and TLS mode refuses, logs it and keeps
// listening. The MACs are transport/proofs.hpp's. Whether TLS follows is
// decided by the TLS mode, the same on both sides, and the Answer, which the
// server authenticates: a man in the middle cannot talk either side out of
// TLS.
//
// Frames: after the handshake the client sends messages, each as one or more
// parts; a part is a FrameHeader followed by part_bytes of payload, written
// with one gather write straight from the sender's tensor memory and read
// straight into the receiver's destination buffer. The parts of one message
// are consecutive on the connection. On a TLS connection every byte after
// the Answer, frames and acknowledgements alike, is TLS application data.
//
// Same-host single copy: right after the handshake the client sends a Probe
// frame (a RemoteSpan naming 32 random bytes in its memory, then those bytes,
// then their MAC); the server tries to read them with process_vm_readv (Linux
// cross-memory attach: same user, same host) and answers one byte, 1 if it
// could, then the answer's MAC. A client that does not offer same-host reads
// (or uses TLS mode always) sends a RemoteSpan with pid 0, and the server
// answers 0 without reading. If the answer is 1,
// large messages go as Remote frames: the header and a RemoteSpan, no
// payload; the server copies the bytes straight from the client's memory into
// its destination buffer (one copy, no socket), possibly later and out of
// order, and acknowledges each Remote frame with its number (a uint64: the
// n-th Remote frame on the connection is number n, from 0), after which the
// client may release that memory. Otherwise the server never writes after
// the handshake. A connection has one Probe, and the server reads only from
// the process it proved: a Remote frame (or a channel) naming another pid, or
// one on a connection whose probe failed, is a protocol error.
//
// Same-host channel (version 4): the Probe's RemoteSpan.reserved may name a
// shared memory segment of the client (its file descriptor + 1; 0 = none,
// transport/shm_channel.hpp). A server that can read the client's memory
// and open the segment answers 2. From then on every message goes as a
// MessageDescriptor in the segment's message ring (numbered like Remote
// frames) and every acknowledgement through its ack ring; the socket carries
// only doorbell bytes (value 1), each way, for a side that is not polling.
// The segment's header may name the client's shared arena
// (transport/shared_arena.hpp); the server maps it read-only and reads
// messages inside it with plain loads instead of process_vm_readv.
//
// Version 5: the TLS mode in Hello and Challenge, a Probe on every
// connection, authenticated Probe and Answer, and TLS after them.

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace taihu::transport {

inline constexpr std::uint32_t protocol_version = 5;
inline constexpr std::array<char, 8> hello_magic{'T', 'A', 'I', 'H', 'U', '-', 'D', 'P'};
inline constexpr std::uint32_t frame_magic = 0x46554854;         // "THUF": payload follows
inline constexpr std::uint32_t remote_frame_magic = 0x52554854;  // "THUR": a RemoteSpan follows
inline constexpr std::uint32_t probe_frame_magic = 0x50554854;   // "THUP": a RemoteSpan, 32 bytes, their MAC
inline constexpr std::size_t nonce_bytes = 32;

enum class RefuseReason : std::uint32_t { version = 1, authentication = 2, malformed = 3, tls_mode = 4, certificate = 5 };

struct Hello {
  std::array<char, 8> magic = hello_magic;
  std::uint32_t version = protocol_version;
  std::int32_t node = 0;     // the client's node index (covered by the proof)
  std::uint32_t kind = 0;    // 0 = Hello/Challenge, 1 = Refuse
  std::uint32_t detail = 0;  // kind 1: the RefuseReason; kind 0: the sender's TlsMode (tls.hpp)
  std::array<std::uint8_t, nonce_bytes> nonce{};
};
static_assert(std::is_trivially_copyable_v<Hello> && sizeof(Hello) == 56);

// What a message is about: a chunk of a collective, addressed to one rank.
struct ChunkHeader {
  std::uint32_t bucket = 0;
  std::int32_t sender = 0;    // rank
  std::int32_t receiver = 0;  // rank
  std::uint32_t seq = 0;
  std::uint64_t iteration = 0;
  std::uint64_t offset = 0;   // in floats, within the bucket
};

struct FrameHeader {
  std::uint32_t magic = frame_magic;
  std::uint32_t part_bytes = 0;
  std::uint64_t total_bytes = 0;  // of the whole message
  std::uint64_t part_offset = 0;  // where this part starts in the message
  ChunkHeader chunk;
};
static_assert(std::is_trivially_copyable_v<FrameHeader> && sizeof(FrameHeader) == 56);

// Where a Remote frame's bytes are: in process `pid`, at `address`.
struct RemoteSpan {
  std::uint64_t address = 0;
  std::uint32_t pid = 0;
  std::uint32_t reserved = 0;
};
static_assert(std::is_trivially_copyable_v<RemoteSpan> && sizeof(RemoteSpan) == 16);

}  // namespace taihu::transport
