#include "transport/launch_environment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "core/common/check.hpp"
#include "core/common/error.hpp"

namespace taihu::transport {
namespace {

// The text of a variable as an integer in [min, max]; ConfigError naming it otherwise.
long long parse_integer(std::string_view name, const std::string& text, long long min, long long max) {
  long long value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end || value < min || value > max)
    raise<ConfigError>("launcher environment: {}='{}' is not an integer in [{}, {}]", name, text, min, max);
  return value;
}

// No launch has more ranks (nor nodes, nor hosts) than this. The launcher
// fuzz target compiles this file with a smaller limit (tests/fuzz/CMakeLists.txt):
// valid host lists expand to up to this many names, and at 2^20 each such
// input took a second, so a million would have taken days.
#ifndef TAIHU_LAUNCH_MAX_RANKS
#define TAIHU_LAUNCH_MAX_RANKS (1 << 20)
#endif
constexpr long long max_ranks = TAIHU_LAUNCH_MAX_RANKS;

// Whether a family's size variable alone says that its launcher started this
// process (Family::present).
enum class SizeAlone { marks_launch, says_nothing };

// One launcher's variables. Its rank variable decides whether it started this
// process at all, and so does its size variable where the launcher never sets
// it alone (Open MPI's, PMI's: a size without a rank is a partial set, not a
// single process); every other variable it always sets is then required.
class Family {
 public:
  Family(const EnvironmentLookup& env, std::string_view launcher, std::string_view rank_variable,
         std::string_view size_variable, SizeAlone size_alone = SizeAlone::says_nothing)
      : env_(env), launcher_(launcher), rank_variable_(rank_variable), size_variable_(size_variable) {
    if (env_(rank_variable_))
      marker_ = rank_variable_;
    else if (size_alone == SizeAlone::marks_launch && env_(size_variable_))
      marker_ = size_variable_;
  }

  bool present() const { return !marker_.empty(); }
  std::optional<std::string> get(std::string_view name) const { return env_(name); }

  // A variable this launcher always sets alongside the one that marked it.
  std::string required(std::string_view name) const {
    auto value = env_(name);
    if (!value)
      raise<ConfigError>("launcher environment: {} is set but {} is not ({} sets both; unset {} to run one process)",
                         marker_, name, launcher_, marker_);
    return *value;
  }
  int integer(std::string_view name, long long min, long long max) const {
    return static_cast<int>(parse_integer(name, required(name), min, max));
  }
  // An optional integer variable, `fallback` when unset.
  int optional_integer(std::string_view name, int fallback, long long min, long long max) const {
    auto value = env_(name);
    return value ? static_cast<int>(parse_integer(name, *value, min, max)) : fallback;
  }

  // The launcher, rank and size; the caller fills in the rest, then check()s.
  LaunchEnvironment ranks() const {
    LaunchEnvironment l;
    l.launcher = std::string(launcher_);
    l.size = integer(size_variable_, 1, max_ranks);
    l.rank = integer(rank_variable_, 0, max_ranks);
    return l;
  }
  LaunchEnvironment check(LaunchEnvironment l) const {
    if (l.rank >= l.size)
      raise<ConfigError>("launcher environment: {}={} is not below {}={}", rank_variable_, l.rank, size_variable_,
                         l.size);
    if (l.local_rank >= l.local_size)
      raise<ConfigError>("launcher environment: local rank {} is not below the local size {} ({})", l.local_rank,
                         l.local_size, launcher_);
    return l;
  }

 private:
  const EnvironmentLookup& env_;
  std::string_view launcher_, rank_variable_, size_variable_;
  std::string_view marker_;  // the variable that says this launcher started the process; empty: none
};

std::optional<LaunchEnvironment> torchrun(const EnvironmentLookup& env) {
  const Family f(env, "torchrun", "RANK", "WORLD_SIZE");
  if (!f.present()) return std::nullopt;
  LaunchEnvironment l = f.ranks();
  l.local_rank = f.optional_integer("LOCAL_RANK", 0, 0, max_ranks);
  l.local_size = f.optional_integer("LOCAL_WORLD_SIZE", l.local_rank + 1, 1, max_ranks);
  if (l.size > 1) {
    l.head_address = f.required("MASTER_ADDR");
    if (l.head_address.empty()) raise<ConfigError>("launcher environment: MASTER_ADDR is empty");
    l.head_port = static_cast<std::uint16_t>(f.integer("MASTER_PORT", 1, 65535));
  }
  l.job_id = f.get("TORCHELASTIC_RUN_ID").value_or("");
  return f.check(std::move(l));
}

std::optional<LaunchEnvironment> open_mpi(const EnvironmentLookup& env) {
  const Family f(env, "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", SizeAlone::marks_launch);
  if (!f.present()) return std::nullopt;
  LaunchEnvironment l = f.ranks();
  l.local_rank = f.integer("OMPI_COMM_WORLD_LOCAL_RANK", 0, max_ranks);
  l.local_size = f.integer("OMPI_COMM_WORLD_LOCAL_SIZE", 1, max_ranks);
  l.job_id = f.get("OMPI_MCA_ess_base_jobid").value_or(f.get("PMIX_NAMESPACE").value_or(""));
  return f.check(std::move(l));
}

std::optional<LaunchEnvironment> slurm(const EnvironmentLookup& env) {
  // A batch script has SLURM_PROCID=0 too, but it is not one of srun's tasks:
  // only a job step (SLURM_STEP_ID) has ranks that run together. Outside any
  // job (no SLURM_JOB_ID) a SLURM_PROCID is a partial set.
  const Family f(env, "Slurm", "SLURM_PROCID", env("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS");
  if (!f.present() || (!env("SLURM_STEP_ID") && env("SLURM_JOB_ID"))) return std::nullopt;
  const std::string step = f.required("SLURM_STEP_ID");
  LaunchEnvironment l = f.ranks();
  l.local_rank = f.optional_integer("SLURM_LOCALID", 0, 0, max_ranks);
  // The step's tasks per node ("2(x3),1"), at this node's index, are this host's ranks.
  l.local_size = l.local_rank + 1;
  const char* per_node_variable =
      f.get("SLURM_STEP_TASKS_PER_NODE") ? "SLURM_STEP_TASKS_PER_NODE" : "SLURM_TASKS_PER_NODE";
  if (auto per_node = f.get(per_node_variable)) {
    const std::vector<int> counts = expand_tasks_per_node(*per_node, per_node_variable);
    const int node = f.optional_integer("SLURM_NODEID", 0, 0, max_ranks);
    if (static_cast<std::size_t>(node) < counts.size()) l.local_size = counts[static_cast<std::size_t>(node)];
  }
  const char* nodes_variable = f.get("SLURM_STEP_NODELIST") ? "SLURM_STEP_NODELIST" : "SLURM_JOB_NODELIST";
  if (auto nodes = f.get(nodes_variable)) {
    l.hosts = expand_host_list(*nodes, nodes_variable);
    if (!l.hosts.empty()) l.head_address = l.hosts.front();  // srun places task 0 on the first node
  }
  // A job's steps run one after another: each is a launch of its own.
  if (auto job = f.get("SLURM_JOB_ID")) l.job_id = *job + "." + step;
  return f.check(std::move(l));
}

std::optional<LaunchEnvironment> pmi(const EnvironmentLookup& env) {
  const Family f(env, "PMI", "PMI_RANK", "PMI_SIZE", SizeAlone::marks_launch);
  if (f.present()) {
    LaunchEnvironment l = f.ranks();
    l.local_rank = f.optional_integer("MPI_LOCALRANKID", 0, 0, max_ranks);
    l.local_size = f.optional_integer("MPI_LOCALNRANKS", l.local_rank + 1, 1, max_ranks);
    return f.check(std::move(l));
  }
  if (env("PMIX_RANK"))
    raise<ConfigError>(
        "launcher environment: PMIX_RANK is set but no variable names the number of ranks; "
        "start taihu-train with mpirun (Open MPI) or srun, or set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT");
  return std::nullopt;
}

}  // namespace

std::string LaunchEnvironment::describe() const {
  return fmt::format("rank {} of {} ({}, local rank {} of {})", rank, size, launcher, local_rank, local_size);
}

EnvironmentLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<LaunchEnvironment> detect_launch(const EnvironmentLookup& env) {
  for (auto* family : {torchrun, open_mpi, slurm, pmi})
    if (auto launch = family(env)) return launch->size > 1 ? launch : std::nullopt;
  return std::nullopt;
}

std::vector<int> expand_tasks_per_node(std::string_view list, std::string_view variable) {
  std::vector<int> counts;
  std::size_t from = 0;
  while (from <= list.size()) {
    std::size_t comma = list.find(',', from);
    if (comma == std::string_view::npos) comma = list.size();
    const std::string entry(list.substr(from, comma - from));
    // "N" or "N(xR)": N tasks on each of R nodes.
    const std::size_t paren = entry.find('(');
    const int tasks = static_cast<int>(parse_integer(variable, entry.substr(0, paren), 0, max_ranks));
    int repeat = 1;
    if (paren != std::string::npos) {
      if (entry.size() < paren + 4 || entry.compare(paren, 2, "(x") != 0 || entry.back() != ')')
        raise<ConfigError>("launcher environment: {}='{}': '{}' is not N(xR)", variable, list, entry);
      repeat = static_cast<int>(parse_integer(variable, entry.substr(paren + 2, entry.size() - paren - 3), 1, max_ranks));
    }
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), tasks);
    if (counts.size() > static_cast<std::size_t>(max_ranks))
      raise<ConfigError>("launcher environment: {}='{}' names more than {} nodes", variable, list, max_ranks);
    from = comma + 1;
  }
  return counts;
}

std::vector<std::string> expand_host_list(std::string_view list, std::string_view variable) {
  auto fail = [&](std::string_view why) -> std::vector<std::string> {
    raise<ConfigError>("launcher environment: {}='{}': {}", variable, list, why);
  };
  // Split at commas outside brackets.
  std::vector<std::string_view> entries;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '[') ++depth;
    if (list[i] == ']' && --depth < 0) return fail("']' without '['");
    if (list[i] == ',' && depth == 0) {
      entries.push_back(list.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return fail("'[' without ']'");
  entries.push_back(list.substr(start));

  std::vector<std::string> hosts;
  for (std::string_view entry : entries) {
    if (entry.empty()) continue;
    const std::size_t open = entry.find('[');
    if (open == std::string_view::npos) {
      hosts.emplace_back(entry);
      continue;
    }
    const std::size_t close = entry.find(']', open);
    const std::string_view prefix = entry.substr(0, open);
    const std::string_view ranges = entry.substr(open + 1, close - open - 1);
    // The rest may hold further brackets ("rack[1-2]-n[1-4]"): expanded on its own.
    const std::string_view rest = entry.substr(close + 1);
    const std::vector<std::string> tails =
        rest.empty() ? std::vector<std::string>{""} : expand_host_list(rest, variable);
    std::size_t from = 0;
    while (from <= ranges.size()) {
      std::size_t comma = ranges.find(',', from);
      if (comma == std::string_view::npos) comma = ranges.size();
      const std::string_view range = ranges.substr(from, comma - from);
      const std::size_t dash = range.find('-');
      const std::string_view low = range.substr(0, dash);
      const std::string_view high = dash == std::string_view::npos ? low : range.substr(dash + 1);
      unsigned long first = 0, last = 0;
      auto parse = [&](std::string_view digits, unsigned long& out) {
        const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
        return !digits.empty() && ec == std::errc{} && ptr == digits.data() + digits.size();
      };
      if (!parse(low, first) || !parse(high, last) || last < first) return fail(fmt::format("bad range '{}'", range));
      if (last - first > 1000000) return fail(fmt::format("range '{}' is too large", range));
      // Counted before any name is made: ranges nested ("a[0-999]b[0-999]c[0-999]")
      // multiply, and once asked for 10^9 names. No launch has more hosts than ranks.
      if ((last - first + 1) * tails.size() > static_cast<unsigned long>(max_ranks) - hosts.size())
        return fail(fmt::format("it names more than {} hosts", max_ranks));
      // And no name is longer than a host name can be (255, DNS's limit): a
      // long prefix times a million numbers would be gigabytes.
      std::size_t longest_tail = 0;
      for (const auto& tail : tails) longest_tail = std::max(longest_tail, tail.size());
      if (prefix.size() + std::max(low.size(), high.size()) + longest_tail > 255)
        return fail(fmt::format("range '{}' makes host names longer than 255 characters", range));
      // (counted to `last` inclusive without `n <= last`, which never ends when last is the largest number)
      for (unsigned long n = first, count = last - first + 1; count > 0; ++n, --count)
        for (const auto& tail : tails) hosts.push_back(fmt::format("{}{:0{}}{}", prefix, n, low.size(), tail));
      from = comma + 1;
    }
  }
  if (hosts.empty()) return fail("no hosts");
  return hosts;
}

}  // namespace taihu::transport
