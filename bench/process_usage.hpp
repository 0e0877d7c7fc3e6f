#pragma once
// What this whole process has used so far, every thread counted: CPU time,
// user and system (the kernel's share: page faults, socket calls), and minor
// page faults. Benchmarks take two readings and subtract.

#include <sys/resource.h>

namespace taihu::bench {

struct ProcessUsage {
  double user = 0, system = 0, faults = 0;

  static ProcessUsage now() {
    rusage r{};
    ::getrusage(RUSAGE_SELF, &r);
    auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
    return {seconds(r.ru_utime), seconds(r.ru_stime), static_cast<double>(r.ru_minflt)};
  }
  double cpu_seconds() const { return user + system; }
  ProcessUsage operator-(const ProcessUsage& o) const { return {user - o.user, system - o.system, faults - o.faults}; }
};

}  // namespace taihu::bench
