#include "transport/launcher_store.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/common/check.hpp"
#include "core/common/error.hpp"

#if TAIHU_HAVE_PMIX
#include <pmix.h>
#endif

namespace taihu::transport {

#if TAIHU_HAVE_PMIX

namespace {
constexpr const char* key = "taihu.rendezvous";
}  // namespace

bool launcher_store_available() { return std::getenv("PMIX_RANK") != nullptr; }

std::string launcher_store_version() {
  std::string version = PMIx_Get_version();  // "OpenPMIx 4.2.2rc2 (PMIx Standard: 4.2, ...)"
  return version.substr(0, std::min(version.find(" ("), version.find(',')));
}

std::string share_from_rank0(const std::optional<std::string>& rank0_text, double timeout_seconds) {
  pmix_proc_t me;
  pmix_status_t rc = PMIx_Init(&me, nullptr, 0);
  require<ConfigError>(rc == PMIX_SUCCESS, "cluster launch: cannot reach the launcher's PMIx server: {}",
                       PMIx_Error_string(rc));
  // Finalized on every path out.
  struct Finalize {
    ~Finalize() { PMIx_Finalize(nullptr, 0); }
  } finalize;
  if (rank0_text) {
    pmix_value_t value;
    PMIX_VALUE_LOAD(&value, rank0_text->c_str(), PMIX_STRING);
    rc = PMIx_Put(PMIX_GLOBAL, key, &value);
    PMIX_VALUE_DESTRUCT(&value);
    if (rc == PMIX_SUCCESS) rc = PMIx_Commit();
    require<ConfigError>(rc == PMIX_SUCCESS, "cluster launch: PMIx refused rank 0's address: {}",
                         PMIx_Error_string(rc));
  }
  pmix_info_t info[2];
  bool collect = true;
  int timeout = std::max(1, static_cast<int>(timeout_seconds));
  PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &timeout, PMIX_INT);
  pmix_proc_t all;
  PMIX_PROC_LOAD(&all, me.nspace, PMIX_RANK_WILDCARD);
  rc = PMIx_Fence(&all, 1, info, 2);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
  require<ConfigError>(rc == PMIX_SUCCESS,
                       "cluster launch: the ranks did not meet in the launcher's PMIx store within {} s ({}): "
                       "did rank 0 fail before its coordinator listened?",
                       timeout, PMIx_Error_string(rc));
  pmix_proc_t zero;
  PMIX_PROC_LOAD(&zero, me.nspace, 0);
  pmix_value_t* got = nullptr;
  rc = PMIx_Get(&zero, key, nullptr, 0, &got);
  require<ConfigError>(rc == PMIX_SUCCESS && got != nullptr && got->type == PMIX_STRING,
                       "cluster launch: rank 0's address is not in the launcher's PMIx store: {}",
                       PMIx_Error_string(rc));
  std::string text = got->data.string;
  PMIX_VALUE_RELEASE(got);
  return text;
}

#else

bool launcher_store_available() { return false; }

std::string launcher_store_version() { return "no PMIx"; }

std::string share_from_rank0(const std::optional<std::string>&, double) {
  raise<ConfigError>("cluster launch: this build has no PMIx (install libpmix-dev and rebuild)");
}

#endif

}  // namespace taihu::transport
