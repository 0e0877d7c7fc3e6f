// The test runner: doctest's main, with logging quietened.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include "core/blas/kernel_selection.hpp"
#include "support/log_capture.hpp"

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  taihu::testing::LogCapture::install();  // before any thread logs
  taihu::blas::select_kernel({}, argc, argv);
  doctest::Context context(argc, argv);
  return context.run();
}
