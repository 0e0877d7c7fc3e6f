// The launcher environment (taihu-train's ranks from torchrun, Open MPI,
// Slurm or PMI variables): any set of variables, the input's KEY=VALUE lines
// given to detect_launch through its lookup (the process's own environment is
// never read or changed), is a launch, none, or a ConfigError naming the
// variable; a launch is consistent (several ranks, rank below size, local
// rank below local size, the head its first host). The Slurm list expanders
// also get the input's first line whole.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "transport/launch_environment.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  const std::string_view text = fuzz::text_of(data, size);
  std::map<std::string, std::string, std::less<>> variables;
  for (std::size_t from = 0; from < text.size();) {
    const std::size_t end = std::min(text.find('\n', from), text.size());
    const std::string_view line = text.substr(from, end - from);
    if (const std::size_t eq = line.find('='); eq != std::string_view::npos)
      variables.insert_or_assign(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
    from = end + 1;
  }
  const transport::EnvironmentLookup lookup = [&](std::string_view name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    return it == variables.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  fuzz::expect_clean([&] {
    const auto launch = transport::detect_launch(lookup);
    if (launch && (launch->size < 2 || launch->rank < 0 || launch->rank >= launch->size || launch->local_rank < 0 ||
                   launch->local_rank >= launch->local_size ||
                   (!launch->hosts.empty() && launch->head_address != launch->hosts.front()) ||
                   launch->describe().empty())) {
      std::fprintf(stderr, "fuzz_launch_env: an inconsistent launch: %s\n", launch->describe().c_str());
      std::abort();
    }
  });
  const std::string_view first = text.substr(0, text.find('\n'));
  fuzz::expect_clean([&] { (void)transport::expand_host_list(first, "FUZZ_NODELIST"); });
  fuzz::expect_clean([&] { (void)transport::expand_tasks_per_node(first, "FUZZ_TASKS_PER_NODE"); });
  return 0;
}
