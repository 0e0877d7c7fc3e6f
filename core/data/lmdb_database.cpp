#include "core/data/lmdb_database.hpp"

#include <lmdb.h>

#include <cerrno>
#include <fstream>
#include <mutex>
#include <vector>

#include "core/common/check.hpp"

namespace taihu {

namespace fs = std::filesystem;

namespace {

void check(int rc, const char* what, const fs::path& path) {
  if (rc != MDB_SUCCESS) raise<DataError>("LMDB database '{}': {} failed: {}", path.string(), what, mdb_strerror(rc));
}

}  // namespace

struct LmdbReader::Impl {
  fs::path path;
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
  // Every key, back to back; offsets[i]..offsets[i+1] is key i.
  std::string keys;
  std::vector<uint64_t> offsets{0};
  // Read transactions, reset while idle and renewed for a read: one per
  // concurrent reader, made on demand (LMDB's reader table has 126 slots).
  mutable std::mutex mutex;
  mutable std::vector<MDB_txn*> idle;

  ~Impl() {
    for (MDB_txn* txn : idle) mdb_txn_abort(txn);
    if (env) mdb_env_close(env);
  }

  MDB_txn* take() const {
    {
      std::lock_guard lock(mutex);
      if (!idle.empty()) {
        MDB_txn* txn = idle.back();
        idle.pop_back();
        check(mdb_txn_renew(txn), "renewing a read transaction", path);
        return txn;
      }
    }
    MDB_txn* txn = nullptr;
    check(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn), "beginning a read transaction", path);
    return txn;
  }

  void give_back(MDB_txn* txn) const {
    mdb_txn_reset(txn);
    std::lock_guard lock(mutex);
    idle.push_back(txn);
  }
};

LmdbReader::LmdbReader(const fs::path& path) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.path = path;
  std::error_code ec;
  require<DataError>(fs::exists(path, ec),
                     "LMDB database '{}' does not exist (convert a folder of images with `taihu-convert imageset "
                     "FOLDER --out={}`)",
                     path.string(), path.string());
  unsigned flags = MDB_RDONLY | MDB_NOTLS;
  if (fs::is_regular_file(path, ec)) flags |= MDB_NOSUBDIR;
  else
    require<DataError>(fs::is_regular_file(path / "data.mdb", ec),
                       "'{}' is not an LMDB database: it holds no data.mdb", path.string());
  check(mdb_env_create(&d.env), "creating an environment", path);
  check(mdb_env_set_maxreaders(d.env, 512), "setting the readers", path);
  int rc = mdb_env_open(d.env, path.c_str(), flags, 0664);
  if (rc == EACCES || rc == EROFS) {
    // No lock file can be made beside the data: read without one.
    mdb_env_close(d.env);
    check(mdb_env_create(&d.env), "creating an environment", path);
    rc = mdb_env_open(d.env, path.c_str(), flags | MDB_NOLOCK, 0664);
  }
  if (rc != MDB_SUCCESS) {
    mdb_env_close(d.env);
    d.env = nullptr;
    raise<DataError>("'{}' is not a readable LMDB database: {}", path.string(), mdb_strerror(rc));
  }
  MDB_txn* txn = d.take();
  MDB_cursor* cursor = nullptr;
  try {
    check(mdb_dbi_open(txn, nullptr, 0, &d.dbi), "opening the main database", path);
    check(mdb_cursor_open(txn, d.dbi, &cursor), "opening a cursor", path);
    MDB_val key, value;
    for (rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); rc == MDB_SUCCESS;
         rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
      d.keys.append(static_cast<const char*>(key.mv_data), key.mv_size);
      d.offsets.push_back(d.keys.size());
    }
    if (rc != MDB_NOTFOUND) check(rc, "listing the keys", path);
  } catch (...) {
    if (cursor) mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    throw;
  }
  mdb_cursor_close(cursor);
  d.give_back(txn);
}

LmdbReader::~LmdbReader() = default;

int64_t LmdbReader::size() const { return static_cast<int64_t>(impl_->offsets.size()) - 1; }

const fs::path& LmdbReader::path() const { return impl_->path; }

std::string_view LmdbReader::key(int64_t index) const {
  const auto i = static_cast<size_t>(index);
  return std::string_view(impl_->keys).substr(impl_->offsets[i], impl_->offsets[i + 1] - impl_->offsets[i]);
}

void LmdbReader::read(int64_t index, const std::function<void(std::span<const uint8_t>)>& use) const {
  const std::string_view k = key(index);
  MDB_txn* txn = impl_->take();
  struct Release {
    const Impl& d;
    MDB_txn* txn;
    ~Release() { d.give_back(txn); }
  } release{*impl_, txn};
  MDB_val key{k.size(), const_cast<char*>(k.data())};
  MDB_val value;
  const int rc = mdb_get(txn, impl_->dbi, &key, &value);
  if (rc == MDB_NOTFOUND)
    raise<DataError>("LMDB database '{}': record '{}' vanished (is another program writing the database?)",
                     impl_->path.string(), k);
  check(rc, "reading a record", impl_->path);
  use(std::span<const uint8_t>(static_cast<const uint8_t*>(value.mv_data), value.mv_size));
}

struct LmdbWriter::Impl {
  fs::path path, staging;
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
  MDB_txn* txn = nullptr;
  int64_t in_txn = 0;
  int64_t count = 0;
  bool finished = false;

  void begin() {
    check(mdb_txn_begin(env, nullptr, 0, &txn), "beginning a write transaction", staging);
    in_txn = 0;
  }
  void commit() {
    const int rc = mdb_txn_commit(txn);
    txn = nullptr;
    check(rc, "committing", staging);
  }
};

LmdbWriter::LmdbWriter(const fs::path& path) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.path = path;
  d.staging = fs::path(path.string() + ".tmp");
  std::error_code ec;
  require<DataError>(!fs::exists(path, ec), "'{}' exists already: give a new name for the database", path.string());
  fs::remove_all(d.staging, ec);
  fs::create_directories(d.staging, ec);
  require<DataError>(!ec, "cannot make the folder '{}': {}", d.staging.string(), ec.message());
  check(mdb_env_create(&d.env), "creating an environment", d.staging);
  // The map only reserves address space (the file grows as written); 1 TiB
  // as Caffe's tools use, or what a 32-bit address space allows.
  const size_t map = sizeof(void*) >= 8 ? (size_t{1} << 40) : (size_t{1} << 30);
  check(mdb_env_set_mapsize(d.env, map), "setting the map size", d.staging);
  check(mdb_env_open(d.env, d.staging.c_str(), MDB_NOSYNC, 0664), "opening", d.staging);
  d.begin();
  check(mdb_dbi_open(d.txn, nullptr, 0, &d.dbi), "opening the main database", d.staging);
}

LmdbWriter::~LmdbWriter() {
  Impl& d = *impl_;
  if (d.txn) mdb_txn_abort(d.txn);
  if (d.env) mdb_env_close(d.env);
  if (!d.finished) {
    std::error_code ec;
    fs::remove_all(d.staging, ec);
  }
}

void LmdbWriter::put(std::string_view key, std::span<const uint8_t> value) {
  Impl& d = *impl_;
  require<DataError>(!d.finished && d.txn, "LMDB database '{}' is finished", d.path.string());
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{value.size(), const_cast<uint8_t*>(value.data())};
  const int rc = mdb_put(d.txn, d.dbi, &k, &v, MDB_NOOVERWRITE);
  if (rc == MDB_KEYEXIST) raise<DataError>("LMDB database '{}': the key '{}' twice", d.path.string(), key);
  check(rc, "writing a record", d.staging);
  ++d.count;
  if (++d.in_txn == 1000) {
    d.commit();
    d.begin();
  }
}

void LmdbWriter::attach(const std::string& name, const std::string& text) {
  const fs::path file = impl_->staging / name;
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  require<DataError>(out.flush().good(), "cannot write '{}'", file.string());
}

void LmdbWriter::finish() {
  Impl& d = *impl_;
  require<DataError>(!d.finished, "LMDB database '{}' is finished", d.path.string());
  d.commit();
  check(mdb_env_sync(d.env, 1), "syncing", d.staging);
  mdb_env_close(d.env);
  d.env = nullptr;
  std::error_code ec;
  fs::rename(d.staging, d.path, ec);
  require<DataError>(!ec, "cannot rename '{}' to '{}': {}", d.staging.string(), d.path.string(), ec.message());
  d.finished = true;
}

int64_t LmdbWriter::size() const { return impl_->count; }

}  // namespace taihu
