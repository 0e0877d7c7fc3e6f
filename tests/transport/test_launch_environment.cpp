#include <doctest/doctest.h>

#include <map>
#include <string>

#include "core/common/error.hpp"
#include "transport/addresses.hpp"
#include "transport/launch_environment.hpp"

using namespace taihu;
using namespace taihu::transport;

namespace {

// A fixed environment, as a launcher would have left it.
EnvironmentLookup fixed(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

// The ConfigError's text, or "" when detection does not throw.
std::string error_of(std::map<std::string, std::string> vars) {
  try {
    detect_launch(fixed(std::move(vars)));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, std::string_view part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("net") {
  TEST_CASE("launcher environment: none, or one rank, is a single process") {
    CHECK_FALSE(detect_launch(fixed({})).has_value());
    CHECK_FALSE(detect_launch(fixed({{"HOME", "/root"}, {"SLURM_JOB_ID", "77"}})).has_value());
    CHECK_FALSE(detect_launch(fixed({{"RANK", "0"}, {"WORLD_SIZE", "1"}})).has_value());
    CHECK_FALSE(detect_launch(fixed({{"OMPI_COMM_WORLD_RANK", "0"},
                                     {"OMPI_COMM_WORLD_SIZE", "1"},
                                     {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                     {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}}))
                    .has_value());
    // An sbatch script is task 0 of its job but not part of a step: no ranks run beside it.
    CHECK_FALSE(detect_launch(fixed({{"SLURM_JOB_ID", "77"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}})).has_value());
  }

  TEST_CASE("launcher environment: torchrun style") {
    const auto l = detect_launch(fixed({{"RANK", "3"},
                                        {"WORLD_SIZE", "4"},
                                        {"LOCAL_RANK", "1"},
                                        {"LOCAL_WORLD_SIZE", "2"},
                                        {"MASTER_ADDR", "node07"},
                                        {"MASTER_PORT", "29500"},
                                        {"TORCHELASTIC_RUN_ID", "run-5"}}));
    REQUIRE(l.has_value());
    CHECK(l->launcher == "torchrun");
    CHECK(l->rank == 3);
    CHECK(l->size == 4);
    CHECK(l->local_rank == 1);
    CHECK(l->local_size == 2);
    CHECK(l->head_address == "node07");
    CHECK(l->head_port == 29500);
    CHECK(l->job_id == "run-5");
    CHECK(l->describe() == "rank 3 of 4 (torchrun, local rank 1 of 2)");
  }

  TEST_CASE("launcher environment: Open MPI's mpirun, also inside a Slurm allocation") {
    std::map<std::string, std::string> vars = {{"OMPI_COMM_WORLD_RANK", "2"},
                                               {"OMPI_COMM_WORLD_SIZE", "4"},
                                               {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"},
                                               {"PMIX_RANK", "2"},
                                               {"OMPI_MCA_ess_base_jobid", "1234"}};
    auto l = detect_launch(fixed(vars));
    REQUIRE(l.has_value());
    CHECK(l->launcher == "Open MPI");
    CHECK(l->rank == 2);
    CHECK(l->size == 4);
    CHECK(l->local_size == 1);
    CHECK(l->head_address.empty());  // mpirun names no host: the ranks exchange it
    CHECK(l->job_id == "1234");
    // mpirun in an salloc shell: the allocation's Slurm variables are there too; mpirun's ranks win.
    vars.insert({{"SLURM_JOB_ID", "99"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}});
    l = detect_launch(fixed(vars));
    REQUIRE(l.has_value());
    CHECK(l->launcher == "Open MPI");
    CHECK(l->rank == 2);
  }

  TEST_CASE("launcher environment: Slurm's srun, with its compressed node list") {
    const auto l = detect_launch(fixed({{"SLURM_JOB_ID", "4242"},
                                        {"SLURM_STEP_ID", "0"},
                                        {"SLURM_PROCID", "5"},
                                        {"SLURM_NTASKS", "16"},
                                        {"SLURM_STEP_NUM_TASKS", "8"},
                                        {"SLURM_LOCALID", "1"},
                                        {"SLURM_NODEID", "1"},
                                        {"SLURM_TASKS_PER_NODE", "4(x4)"},
                                        {"SLURM_STEP_TASKS_PER_NODE", "3(x2),1,1"},
                                        {"SLURM_JOB_NODELIST", "cn[001-008]"},
                                        {"SLURM_STEP_NODELIST", "cn[003-004,010],gpu7"}}));
    REQUIRE(l.has_value());
    CHECK(l->launcher == "Slurm");
    CHECK(l->rank == 5);
    CHECK(l->size == 8);  // the step's tasks, not the allocation's
    CHECK(l->local_rank == 1);
    CHECK(l->local_size == 3);  // the step's count on node 1 (of 3, 3, 1, 1), not the allocation's
    CHECK(l->hosts == std::vector<std::string>{"cn003", "cn004", "cn010", "gpu7"});
    CHECK(l->head_address == "cn003");
    CHECK(l->job_id == "4242.0");
  }

  TEST_CASE("launcher environment: MPICH's Hydra (PMI)") {
    const auto l = detect_launch(fixed({{"PMI_RANK", "1"}, {"PMI_SIZE", "3"}, {"MPI_LOCALRANKID", "1"},
                                        {"MPI_LOCALNRANKS", "3"}}));
    REQUIRE(l.has_value());
    CHECK(l->launcher == "PMI");
    CHECK(l->rank == 1);
    CHECK(l->size == 3);
    CHECK(l->local_size == 3);
  }

  TEST_CASE("launcher environment: a partial or malformed one is an error naming the variable") {
    CHECK(contains(error_of({{"RANK", "1"}}), "RANK is set but WORLD_SIZE is not"));
    CHECK(contains(error_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}}), "MASTER_ADDR"));
    CHECK(contains(error_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}), "MASTER_PORT"));
    CHECK(contains(error_of({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "99999"}}),
                   "MASTER_PORT='99999'"));
    CHECK(contains(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), "RANK='x' is not an integer"));
    CHECK(contains(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}}),
                   "RANK=2 is not below WORLD_SIZE=2"));
    CHECK(contains(error_of({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "2"}}),
                   "OMPI_COMM_WORLD_LOCAL_RANK"));
    CHECK(contains(error_of({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}}), "SLURM_NTASKS"));
    CHECK(contains(error_of({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                             {"SLURM_JOB_NODELIST", "cn[1-"}}),
                   "SLURM_JOB_NODELIST='cn[1-'"));
    CHECK(contains(error_of({{"PMIX_RANK", "0"}}), "PMIX_RANK is set but no variable names the number of ranks"));
    CHECK(contains(error_of({{"PMI_RANK", "0"}}), "PMI_SIZE"));
    // One variable alone is a partial set too, not a single process (issue 50): Slurm's task id
    // outside any job or step, Open MPI's or PMI's size without the rank.
    CHECK(contains(error_of({{"SLURM_PROCID", "1"}}), "SLURM_PROCID is set but SLURM_STEP_ID is not"));
    CHECK(contains(error_of({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}), "SLURM_STEP_ID is not"));
    CHECK(contains(error_of({{"OMPI_COMM_WORLD_SIZE", "2"}}),
                   "OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not (Open MPI sets both"));
    CHECK(contains(error_of({{"PMI_SIZE", "2"}}), "PMI_SIZE is set but PMI_RANK is not"));
  }

  TEST_CASE("launcher environment: Slurm's local size is its node's share of the step (found under srun)") {
    // srun -N 1 -n 4 on one host: each task's local size is 4, not its local id + 1.
    for (int task = 0; task < 4; ++task) {
      const auto l = detect_launch(fixed({{"SLURM_JOB_ID", "10"}, {"SLURM_STEP_ID", "0"},
                                          {"SLURM_PROCID", std::to_string(task)}, {"SLURM_NTASKS", "4"},
                                          {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_LOCALID", std::to_string(task)},
                                          {"SLURM_NODEID", "0"}, {"SLURM_STEP_TASKS_PER_NODE", "4"}}));
      REQUIRE(l.has_value());
      CHECK(l->local_size == 4);
    }
    CHECK(expand_tasks_per_node("2(x3),1", "T") == std::vector<int>{2, 2, 2, 1});
    CHECK(expand_tasks_per_node("16", "T") == std::vector<int>{16});
    CHECK_THROWS_AS(expand_tasks_per_node("2(3)", "T"), ConfigError);
    CHECK_THROWS_AS(expand_tasks_per_node("2(x)", "T"), ConfigError);
    CHECK_THROWS_AS(expand_tasks_per_node("a,1", "T"), ConfigError);
    CHECK(contains(error_of({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"},
                             {"SLURM_STEP_TASKS_PER_NODE", "2(y2)"}}),
                   "SLURM_STEP_TASKS_PER_NODE='2(y2)'"));
  }

  TEST_CASE("Slurm host lists expand in order, with their zero padding") {
    CHECK(expand_host_list("login1", "L") == std::vector<std::string>{"login1"});
    CHECK(expand_host_list("n[1-3],x", "L") == std::vector<std::string>{"n1", "n2", "n3", "x"});
    CHECK(expand_host_list("n[08-11]", "L") == std::vector<std::string>{"n08", "n09", "n10", "n11"});
    CHECK(expand_host_list("r[1-2]-n[1,3]", "L") == std::vector<std::string>{"r1-n1", "r1-n3", "r2-n1", "r2-n3"});
    CHECK_THROWS_AS(expand_host_list("n[3-1]", "L"), ConfigError);
    CHECK_THROWS_AS(expand_host_list("n]1[", "L"), ConfigError);
    CHECK_THROWS_AS(expand_host_list("", "L"), ConfigError);
    // the largest number there is, alone and at a range's end: one name, not a loop that wraps
    // around (found by fuzz_launch_env)
    CHECK(expand_host_list("n[18446744073709551615]", "L") == std::vector<std::string>{"n18446744073709551615"});
    CHECK(expand_host_list("n[18446744073709551614-18446744073709551615]", "L") ==
          std::vector<std::string>{"n18446744073709551614", "n18446744073709551615"});
    CHECK_THROWS_AS(expand_host_list("n[18446744073709551616]", "L"), ConfigError);
  }

  TEST_CASE("addresses: wildcards are not advertised; an interface's address, or an error naming the ones there are") {
    CHECK(is_wildcard_address("0.0.0.0"));
    CHECK(is_wildcard_address("::"));
    CHECK(is_wildcard_address(""));
    CHECK_FALSE(is_wildcard_address("127.0.0.1"));
    CHECK_FALSE(is_wildcard_address("node07"));
    CHECK(interface_address("lo") == "127.0.0.1");
    try {
      interface_address("no-such-nic0");
      FAIL("an unknown interface was accepted");
    } catch (const ConfigError& e) {
      const std::string what = e.what();
      CHECK(contains(what, "network interface 'no-such-nic0' does not exist"));
      CHECK(contains(what, "lo"));  // the interfaces there are
    }
  }
}
