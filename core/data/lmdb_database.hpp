#pragma once
// LMDB databases, as Caffe's image sets are stored (convert_imageset), through
// Debian's liblmdb: reading in place from its memory map, and writing one.
//
// Records are addressed by their position in key order: opening scans the
// keys once (the key B-tree only; large values sit on overflow pages and are
// not touched), so a rank reads just the records of its share of an epoch.
//
// A damaged database is a DataError naming it, never a crash: LMDB reads the
// file in place and trusts it (no checksums), so a file cut short or a page
// overwritten would make it read past the file's end or follow a wild pointer
// (SIGBUS, SIGSEGV) or fail one of its assertions (abort). The reader checks
// the file's size against its header, checks every key and where every value
// lies while listing, and runs LMDB's calls under a fault guard
// (core/common/fault_guard.hpp). Damage inside a value's bytes is not seen
// here: the record then fails to decode and is skipped as any bad image is.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace taihu {

class LmdbReader {
 public:
  // `path`: an LMDB folder (holding data.mdb) or the data file itself. Opens
  // read-only; where no lock file can be made (a read-only file system) the
  // database is read without locking, which is safe while nobody writes it.
  // Throws DataError naming the path if it is not an LMDB database, or is
  // truncated or damaged (saying what is wrong).
  explicit LmdbReader(const std::filesystem::path& path);
  ~LmdbReader();
  LmdbReader(const LmdbReader&) = delete;
  LmdbReader& operator=(const LmdbReader&) = delete;

  int64_t size() const;
  const std::filesystem::path& path() const;
  std::string_view key(int64_t index) const;

  // Calls `use` with record `index`'s bytes, in place in the map and valid
  // only during the call. Safe from several threads at once. Throws
  // DataError if the record cannot be read (the database was damaged since
  // it was opened, or in a page the listing did not read).
  void read(int64_t index, const std::function<void(std::span<const uint8_t>)>& use) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class LmdbWriter {
 public:
  // Writes a new database at `path` (a folder, as Caffe makes), first under
  // `path`.tmp, which finish() renames: a failed conversion never leaves a
  // half-written database under the final name. Throws DataError if `path`
  // exists already.
  explicit LmdbWriter(const std::filesystem::path& path);
  ~LmdbWriter();  // without finish(): the partial database is removed
  LmdbWriter(const LmdbWriter&) = delete;
  LmdbWriter& operator=(const LmdbWriter&) = delete;

  // Keys must be unique; records are committed in transactions of a thousand.
  void put(std::string_view key, std::span<const uint8_t> value);
  // A file of its own in the database's folder (LMDB reads only data.mdb
  // and lock.mdb): e.g. the class names.
  void attach(const std::string& name, const std::string& text);
  void finish();
  int64_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace taihu
