#include "interop/npz/npz_writer.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <bit>
#include <cstring>
#include <limits>

#include "core/common/error.hpp"

namespace taihu::npz {

namespace {

static_assert(std::endian::native == std::endian::little, "the .npy data is written as the host's floats ('<f4')");

void put16(std::string& out, uint32_t v) {
  out.push_back(static_cast<char>(v & 0xff));
  out.push_back(static_cast<char>((v >> 8) & 0xff));
}

void put32(std::string& out, uint32_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}

std::string shape_tuple(const std::vector<int64_t>& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);  // a Python one-tuple
  return fmt::format("({})", fmt::join(shape, ", "));
}

uint32_t checked_u32(size_t value, const std::string& what) {
  if (value > std::numeric_limits<uint32_t>::max())
    throw Error(fmt::format("npz export: {} exceeds 4 GiB, which needs zip64 (not written by taihu)", what));
  return static_cast<uint32_t>(value);
}

// Zip's local header and central directory entry share these fields.
struct Entry {
  std::string name;
  uint32_t crc = 0;
  uint32_t size = 0;
  uint32_t offset = 0;
};

void put_common(std::string& out, const Entry& e) {
  put16(out, 20);  // version needed: 2.0
  put16(out, 0);   // flags
  put16(out, 0);   // method: stored
  put16(out, 0);   // time
  put16(out, 0x21);  // date: 1980-01-01
  put32(out, e.crc);
  put32(out, e.size);  // compressed
  put32(out, e.size);  // uncompressed
  put16(out, static_cast<uint32_t>(e.name.size()));
  put16(out, 0);  // extra field length
}

}  // namespace

std::string npy_bytes(const Array& array) {
  int64_t count = 1;
  for (int64_t d : array.shape) count *= d;
  if (count != static_cast<int64_t>(array.values.size()))
    throw Error(fmt::format("npz export: array '{}' has {} values for shape {}", array.name, array.values.size(),
                            shape_tuple(array.shape)));
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': {}, }}", shape_tuple(array.shape));
  // The data starts at a multiple of 64 bytes; the header ends with '\n'.
  const size_t preamble = 10;  // magic (6), version (2), header length (2)
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  put16(out, static_cast<uint32_t>(header.size()));
  out += header;
  const size_t data_at = out.size();
  out.resize(data_at + array.values.size() * sizeof(float));
  if (!array.values.empty()) std::memcpy(out.data() + data_at, array.values.data(), array.values.size() * sizeof(float));
  return out;
}

std::string npz_bytes(const std::vector<Array>& arrays) {
  std::string out;
  std::vector<Entry> entries;
  for (const Array& array : arrays) {
    const std::string npy = npy_bytes(array);
    Entry e;
    e.name = array.name + ".npy";
    e.size = checked_u32(npy.size(), "array '" + array.name + "'");
    e.crc = static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(npy.data()), e.size));
    e.offset = checked_u32(out.size(), "the archive");
    put32(out, 0x04034b50);  // local file header
    put_common(out, e);
    out += e.name;
    out += npy;
    entries.push_back(std::move(e));
  }
  const uint32_t directory_at = checked_u32(out.size(), "the archive");
  for (const Entry& e : entries) {
    put32(out, 0x02014b50);  // central directory entry
    put16(out, 20);          // made by: 2.0
    put_common(out, e);
    put16(out, 0);  // comment length
    put16(out, 0);  // disk
    put16(out, 0);  // internal attributes
    put32(out, 0);  // external attributes
    put32(out, e.offset);
    out += e.name;
  }
  const uint32_t directory_size = checked_u32(out.size() - directory_at, "the archive");
  if (entries.size() > 0xffff) throw Error("npz export: more than 65535 arrays need zip64 (not written by taihu)");
  put32(out, 0x06054b50);  // end of central directory
  put16(out, 0);
  put16(out, 0);
  put16(out, static_cast<uint32_t>(entries.size()));
  put16(out, static_cast<uint32_t>(entries.size()));
  put32(out, directory_size);
  put32(out, directory_at);
  put16(out, 0);
  return out;
}

}  // namespace taihu::npz
