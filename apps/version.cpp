#include "apps/version.hpp"

#include <asio/version.hpp>
#include <caf/config.hpp>
#include <fmt/format.h>
#include <spdlog/version.h>

#include "actors/compute/cluster.hpp"
#include "core/common/cpu_features.hpp"
#include "core/blas/kernel_selection.hpp"
#include "taihu_version.hpp"  // generated: cmake/WriteVersion.cmake
#include "transport/launcher_store.hpp"
#include "transport/mpi_transport.hpp"
#include "transport/tls.hpp"
#include "transport/wire.hpp"

namespace taihu::app {

std::string version_text(std::string_view app) {
  return fmt::format(
      "{} {} (git {})\n"
      "built with GCC {}, C++{}; {}; vector kernels here: {}\n"
      "libraries: {} (kernel here: {}); {}; CAF {}.{}.{}; Asio {}.{}.{}; spdlog {}.{}.{}; {}; {}\n"
      "protocols: cluster {}, data plane {}\n",
      app, TAIHU_VERSION, TAIHU_REVISION, __VERSION__, __cplusplus / 100 % 100, TAIHU_BUILD_FLAGS, cpu::simd_name(cpu::simd()),
      blas::library_config(), blas::kernel_name(), transport::tls_library_version(), CAF_MAJOR_VERSION, CAF_MINOR_VERSION,
      CAF_PATCH_VERSION, ASIO_VERSION / 100000, ASIO_VERSION / 100 % 1000, ASIO_VERSION % 100, SPDLOG_VER_MAJOR,
      SPDLOG_VER_MINOR, SPDLOG_VER_PATCH, transport::launcher_store_version(), transport::mpi_library_version(),
      compute::cluster_protocol_version, transport::protocol_version);
}

std::string build_id() { return fmt::format("{} (git {})", TAIHU_VERSION, TAIHU_REVISION); }

}  // namespace taihu::app
