// Writes the Cavs benchmark workloads (../shared/reference/cavs.md §8.3) in
// the format of core/graph/tree_workload_io.hpp, for taihu's bench_cavs and
// the PyTorch baselines in bench/pytorch/ to read the same trees:
//
//   make_tree_workload [--out=DIR] [--data=DIR] [--seed=N] [--sets=a,b,...]
//
//   sst-like      8,544 SST-like synthetic trees, vocabulary 20,000 (the default workload)
//   sst-train     the real SST train trees from DATA/sst/train.txt (skipped if absent)
//   complete-128  --fc-trees complete binary trees with 128 leaves (Tree-FC)
//   ptb-valid     one chain per sentence of DATA/ptb/valid.txt, vocabulary 10,000 (skipped if absent)
//   ptb-test      the same for DATA/ptb/test.txt
//   comb-52       --comb-trees left combs with 52 leaves (stress test)
//
// Files go to DIR/<set>.txt (default build/workloads); shared data is read
// where it lies and never copied into the repository.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "bench/bench_args.hpp"
#include "core/graph/bracket_tree_reader.hpp"
#include "core/graph/text_reader.hpp"
#include "core/graph/tree_workload_io.hpp"
#include "core/graph/tree_workloads.hpp"

using namespace taihu;
namespace fs = std::filesystem;

namespace {

fs::path default_data_dir() {
  if (const char* env = std::getenv("TAIHU_DATA_DIR")) return env;
  for (const fs::path candidate : {"../shared/data", "../../shared/data", "/work/shared/data"})
    if (fs::exists(candidate)) return candidate;
  return "../shared/data";
}

void save(TreeWorkload w, const fs::path& dir, const std::string& command) {
  w.comments.insert(w.comments.begin(), "written by: " + command);
  const fs::path path = dir / (w.name + ".txt");
  const auto start = std::chrono::steady_clock::now();
  write_tree_workload(path, w);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int32_t max_vertices = 0, max_height = 0;
  double height_sum = 0;
  for (const auto& t : w.trees) {
    max_vertices = std::max(max_vertices, t.num_vertices());
    const int32_t h = t.height();
    max_height = std::max(max_height, h);
    height_sum += h;
  }
  const double n = static_cast<double>(std::max<size_t>(w.trees.size(), 1));
  std::printf("%-14s %6zu trees  %8lld vertices (mean %.2f, max %d)  height mean %.2f max %d  vocab %d  "
              "classes %d  -> %s (%.0f ms)\n",
              w.name.c_str(), w.trees.size(), static_cast<long long>(w.num_vertices()),
              static_cast<double>(w.num_vertices()) / n, max_vertices, height_sum / n, max_height,
              w.vocabulary_size, w.num_classes, path.string().c_str(), s * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  using bench::arg_value;
  try {
    const fs::path out = arg_value(argc, argv, "out", "build/workloads");
    const fs::path data = arg_value(argc, argv, "data", default_data_dir().string());
    const uint64_t seed = std::stoull(arg_value(argc, argv, "seed", "1"));
    const int32_t sst_like_trees = std::stoi(arg_value(argc, argv, "sst-like-trees", "8544"));
    const int32_t vocabulary = std::stoi(arg_value(argc, argv, "vocabulary", "20000"));
    const int32_t fc_trees = std::stoi(arg_value(argc, argv, "fc-trees", "1024"));
    const int32_t comb_trees = std::stoi(arg_value(argc, argv, "comb-trees", "256"));
    std::set<std::string> sets;
    std::stringstream list(arg_value(argc, argv, "sets", "sst-like,sst-train,complete-128,ptb-valid,ptb-test"));
    for (std::string s; std::getline(list, s, ',');) sets.insert(s);
    for (const auto& s : sets) {
      if (s != "sst-like" && s != "sst-train" && s != "complete-128" && s != "ptb-valid" && s != "ptb-test" &&
          s != "comb-52") {
        std::fprintf(stderr, "make_tree_workload: unknown set '%s'\n", s.c_str());
        return 2;
      }
    }
    std::string command = "make_tree_workload";
    for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
    fs::create_directories(out);

    if (sets.contains("sst-like")) save(sst_like_workload(sst_like_trees, seed, vocabulary), out, command);
    if (sets.contains("sst-train")) {
      const fs::path path = data / "sst" / "train.txt";
      if (fs::exists(path))
        save(treebank_workload(read_bracket_trees(path, VocabularyOptions{}), "sst-train"), out, command);
      else
        std::printf("sst-train: %s not found; skipped (pass --data=DIR or set TAIHU_DATA_DIR)\n",
                    path.string().c_str());
    }
    if (sets.contains("complete-128"))
      save(complete_tree_workload(fc_trees, 7, seed, vocabulary), out, command);
    for (const std::string split : {"valid", "test"}) {
      if (!sets.contains("ptb-" + split)) continue;
      // Both splits share one vocabulary (built from valid + test), so ids agree.
      const fs::path path = data / "ptb" / (split + ".txt");
      const fs::path other = data / "ptb" / (split == "valid" ? "test.txt" : "valid.txt");
      if (!fs::exists(path)) {
        std::printf("ptb-%s: %s not found; skipped (pass --data=DIR or set TAIHU_DATA_DIR)\n", split.c_str(),
                    path.string().c_str());
        continue;
      }
      TextCorpus both = read_text_corpus(path, VocabularyOptions{});
      if (fs::exists(other)) {
        VocabularyBuilder builder;
        for (const fs::path& p : {data / "ptb" / "valid.txt", data / "ptb" / "test.txt"}) {
          const TextCorpus part = read_text_corpus(p, VocabularyOptions{});
          for (const auto& sentence : part.sentences)
            for (int32_t id : sentence) builder.add(part.vocabulary.token(id));
        }
        both = read_text_corpus(path, builder.build());
      }
      save(chain_workload(both, "ptb-" + split), out, command);
    }
    if (sets.contains("comb-52")) save(comb_workload(comb_trees, 52, seed, vocabulary), out, command);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_tree_workload: %s\n", e.what());
    return 1;
  }
  return 0;
}
