#include "core/data/lmdb_database.hpp"

#include <lmdb.h>

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <vector>

#include "core/common/check.hpp"
#include "core/common/fault_guard.hpp"

namespace taihu {

namespace fs = std::filesystem;

namespace {

void check(int rc, const char* what, const fs::path& path) {
  if (rc != MDB_SUCCESS) raise<DataError>("LMDB database '{}': {} failed: {}", path.string(), what, mdb_strerror(rc));
}

}  // namespace

struct LmdbReader::Impl {
  fs::path path;
  fs::path data_file;  // data.mdb
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
  // The data file in the map: every key and value must lie inside it (LMDB
  // has no checksums; a damaged page may point anywhere).
  const char* map = nullptr;
  uint64_t file_size = 0;
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

  bool inside(const MDB_val& v) const {
    const auto at = reinterpret_cast<uintptr_t>(v.mv_data);
    const auto base = reinterpret_cast<uintptr_t>(map);
    return map != nullptr && at >= base && at - base <= file_size && v.mv_size <= file_size - (at - base);
  }

  // The constructor's steps: open the environment (read-only, without a lock
  // file where none can be made), check the file holds every page its header
  // counts, list and check the keys.
  void open_environment();
  uint64_t check_extent();
  void list_keys(uint64_t map_size);

  [[noreturn]] void damaged(const std::string& what) const {
    raise<DataError>("LMDB database '{}' is damaged: {}; rebuild it (taihu-convert imageset)", path.string(), what);
  }

  // What a guarded LMDB call ran into, for the message.
  std::string describe(const GuardedFault& fault) const {
    if (fault.signal == 0) return fmt::format("LMDB's own check failed ({})", fault.message);
    const char* name = fault.signal == SIGBUS ? "SIGBUS" : "SIGSEGV";
    const auto at = reinterpret_cast<uintptr_t>(fault.address);
    const auto base = reinterpret_cast<uintptr_t>(map);
    if (map != nullptr && at >= base && at - base < file_size)
      return fmt::format("a memory fault ({}) reading byte {} of {}", name, at - base, data_file.string());
    if (map != nullptr && at >= base && at - base < (uint64_t{1} << 40))
      return fmt::format("a memory fault ({}): a page points {} bytes into {}, which holds {}", name, at - base,
                         data_file.string(), file_size);
    return fmt::format("a memory fault ({}) following a damaged page's pointer", name);
  }
};

namespace {

// Where LMDB mapped its data file: the start of the mapping that holds
// `inside`, a pointer into a page LMDB read, as /proc/self/maps lists it
// (LMDB's API does not say: mdb_env_info's me_mapaddr is only the address
// MDB_FIXEDMAP asks for). Null unless that mapping is LMDB's, `map_size`
// bytes of a file from its start.
const char* find_map(const void* inside, uint64_t map_size) {
  const auto address = reinterpret_cast<uintptr_t>(inside);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long start = 0, end = 0, offset = 0, inode = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %*s %llx %*s %llu", &start, &end, &offset, &inode) != 4) continue;
    if (address < start || address >= end) continue;
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const bool lmdb = offset == 0 && inode != 0 && end - start == (map_size + page - 1) / page * page;
    return lmdb ? reinterpret_cast<const char*>(start) : nullptr;
  }
  return nullptr;
}

// LMDB takes its page size from the file's meta pages unchecked and divides
// by it as it opens (a page size of 0 killed the process with SIGFPE, in
// mdb_env_open, before any guarded call); a small or odd one makes its page
// arithmetic wrap. The meta pages LMDB reads (the first at 0, the second one
// page on) must give a page size LMDB writes: a power of two up to its 32 KB
// (the machine's page size). A file that is not LMDB's is left to LMDB to refuse.
void check_page_sizes(const fs::path& path, const fs::path& data_file) {
  std::ifstream in(data_file, std::ios::binary);
  uint64_t offset = 0;
  for (int meta = 0; meta < 2; ++meta) {
    // The page header (16 bytes), then MDB_meta: magic, version, address,
    // map size, and the first database record, whose first field is the page size.
    char header[44] = {};
    if (!in.seekg(static_cast<std::streamoff>(offset)) || !in.read(header, sizeof header)) return;
    uint32_t magic = 0, page_size = 0;
    std::memcpy(&magic, header + 16, sizeof magic);
    std::memcpy(&page_size, header + 40, sizeof page_size);
    if (magic != 0xBEEFC0DE) return;
    if (page_size < 512 || page_size > 32768 || (page_size & (page_size - 1)) != 0)
      raise<DataError>("LMDB database '{}' is damaged: meta page {} gives a page size of {} bytes; rebuild it "
                       "(taihu-convert imageset)",
                       path.string(), meta, page_size);
    offset = page_size;
  }
}

// LMDB aborts the process when one of its own checks fails (a page of the
// wrong kind where a tree expects a leaf): inside a guarded call, that call
// is left instead.
void on_lmdb_assert(MDB_env*, const char* message) { leave_guarded_call(message); }

}  // namespace

void LmdbReader::Impl::open_environment() {
  std::error_code ec;
  require<DataError>(fs::exists(path, ec),
                     "LMDB database '{}' does not exist (convert a folder of images with `taihu-convert imageset "
                     "FOLDER --out={}`)",
                     path.string(), path.string());
  unsigned flags = MDB_RDONLY | MDB_NOTLS;
  if (fs::is_regular_file(path, ec)) {
    flags |= MDB_NOSUBDIR;
    data_file = path;
  } else {
    data_file = path / "data.mdb";
    require<DataError>(fs::is_regular_file(data_file, ec), "'{}' is not an LMDB database: it holds no data.mdb",
                       path.string());
  }
  check_page_sizes(path, data_file);
  auto open = [&](unsigned open_flags) {
    check(mdb_env_create(&env), "creating an environment", path);
    check(mdb_env_set_maxreaders(env, 512), "setting the readers", path);
    mdb_env_set_assert(env, on_lmdb_assert);
    return mdb_env_open(env, path.c_str(), open_flags, 0664);
  };
  int rc = open(flags);
  if (rc == EACCES || rc == EROFS) {
    // No lock file can be made beside the data: read without one.
    mdb_env_close(env);
    rc = open(flags | MDB_NOLOCK);
  }
  if (rc != MDB_SUCCESS) {
    mdb_env_close(env);
    env = nullptr;
    raise<DataError>("'{}' is not a readable LMDB database: {}", path.string(), mdb_strerror(rc));
  }
}

// A file cut short (a copy or download that stopped) maps pages past its
// end, whose reading kills the process with SIGBUS: its header says how far
// its pages go. Returns the size of LMDB's map.
uint64_t LmdbReader::Impl::check_extent() {
  std::error_code ec;
  MDB_envinfo info{};
  MDB_stat env_stat{};
  check(mdb_env_info(env, &info), "reading the header", path);
  check(mdb_env_stat(env, &env_stat), "reading the header", path);
  file_size = fs::file_size(data_file, ec);
  require<DataError>(!ec, "LMDB database '{}': cannot read the size of {}: {}", path.string(), data_file.string(),
                     ec.message());
  const uint64_t needed = (uint64_t{info.me_last_pgno} + 1) * env_stat.ms_psize;
  require<DataError>(file_size >= needed,
                     "LMDB database '{}' is truncated: {} holds {} bytes of the {} its last page needs; rebuild it "
                     "(taihu-convert imageset)",
                     path.string(), data_file.string(), file_size, needed);
  file_size = needed;  // what lies past the last page is no database's
  return info.me_mapsize;
}

// The keys, checked as they come: a damaged tree must neither loop nor list
// a key twice, nor point outside the file. The values are not read (large
// ones sit on overflow pages), but where they lie is checked.
void LmdbReader::Impl::list_keys(uint64_t map_size) {
  MDB_txn* txn = take();
  MDB_cursor* cursor = nullptr;
  int rc = MDB_SUCCESS;
  std::string problem;
  try {
    check(mdb_dbi_open(txn, nullptr, 0, &dbi), "opening the main database", path);
    MDB_stat db_stat{};
    check(mdb_stat(txn, dbi, &db_stat), "reading the record count", path);
    check(mdb_cursor_open(txn, dbi, &cursor), "opening a cursor", path);
    const auto entries = static_cast<uint64_t>(db_stat.ms_entries);
    uint64_t listed = 0;
    MDB_val key{}, value{}, previous{};
    enum class Stop { end, too_many, outside, unordered } stop = Stop::end;
    auto fault = run_guarded([&] { rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); });
    if (!fault && rc == MDB_SUCCESS) {
      map = find_map(key.mv_data, map_size);
      if (map == nullptr) damaged("its first key lies outside its file");
    }
    if (!fault) fault = run_guarded([&] {
      for (; rc == MDB_SUCCESS; rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
        if (listed == entries) {
          stop = Stop::too_many;
          return;
        }
        if (!inside(key) || !inside(value)) {
          stop = Stop::outside;
          return;
        }
        if (listed > 0 && mdb_cmp(txn, dbi, &previous, &key) >= 0) {
          stop = Stop::unordered;
          return;
        }
        previous = key;
        keys.append(static_cast<const char*>(key.mv_data), key.mv_size);
        offsets.push_back(keys.size());
        ++listed;
      }
    });
    if (fault) problem = fmt::format("{} while listing its keys", describe(*fault));
    else if (stop == Stop::too_many)
      problem = fmt::format("its key tree lists more than the {} records its header counts", entries);
    else if (stop == Stop::outside)
      problem = fmt::format("record {} points outside the file ({} bytes)", listed, file_size);
    else if (stop == Stop::unordered)
      problem = fmt::format("its keys are out of order at record {}", listed);
    else if (rc != MDB_NOTFOUND)
      problem = fmt::format("listing its keys failed after {} records: {}", listed, mdb_strerror(rc));
    else if (listed != entries)
      problem = fmt::format("its key tree lists {} of the {} records its header counts", listed, entries);
  } catch (...) {
    if (cursor) mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    throw;
  }
  if (cursor) mdb_cursor_close(cursor);
  if (!problem.empty()) {
    mdb_txn_abort(txn);  // a transaction that faulted is not reused
    damaged(problem);
  }
  give_back(txn);
}

LmdbReader::LmdbReader(const fs::path& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->open_environment();
  impl_->list_keys(impl_->check_extent());
}

LmdbReader::~LmdbReader() = default;

int64_t LmdbReader::size() const { return static_cast<int64_t>(impl_->offsets.size()) - 1; }

const fs::path& LmdbReader::path() const { return impl_->path; }

std::string_view LmdbReader::key(int64_t index) const {
  const auto i = static_cast<size_t>(index);
  return std::string_view(impl_->keys).substr(impl_->offsets[i], impl_->offsets[i + 1] - impl_->offsets[i]);
}

void LmdbReader::read(int64_t index, const std::function<void(std::span<const uint8_t>)>& use) const {
  const Impl& d = *impl_;
  const std::string_view k = key(index);
  MDB_txn* txn = d.take();
  MDB_val key{k.size(), const_cast<char*>(k.data())};
  MDB_val value{};
  int rc = MDB_SUCCESS;
  bool outside = false;
  // The lookup, and a touch of each page of the value: a file damaged or cut
  // short since it was opened faults here, in the guard, rather than in `use`.
  const auto fault = run_guarded([&] {
    rc = mdb_get(txn, d.dbi, &key, &value);
    if (rc != MDB_SUCCESS) return;
    if (!d.inside(value)) {
      outside = true;
      return;
    }
    const auto* bytes = static_cast<const volatile char*>(value.mv_data);
    for (size_t i = 0; i < value.mv_size; i += 4096) (void)bytes[i];
    if (value.mv_size > 0) (void)bytes[value.mv_size - 1];
  });
  if (fault || outside || (rc != MDB_SUCCESS && rc != MDB_NOTFOUND)) {
    mdb_txn_abort(txn);  // a transaction that failed is not reused
    if (fault) d.damaged(fmt::format("{} while reading record '{}'", d.describe(*fault), k));
    if (outside) d.damaged(fmt::format("record '{}' points outside the file ({} bytes)", k, d.file_size));
    d.damaged(fmt::format("reading record '{}' failed: {}", k, mdb_strerror(rc)));
  }
  struct Release {
    const Impl& d;
    MDB_txn* txn;
    ~Release() { d.give_back(txn); }
  } release{d, txn};
  if (rc == MDB_NOTFOUND)
    raise<DataError>("LMDB database '{}': record '{}' vanished (is another program writing the database?)",
                     d.path.string(), k);
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
