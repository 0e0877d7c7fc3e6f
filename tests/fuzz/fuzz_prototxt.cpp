// The Caffe net importer (taihu-convert caffe): any prototxt parses and
// translates to a taihu net description, or is a ConfigError naming the
// place. A translation, written as taihu-convert writes it (the notes as
// comments, then the description), reads back as the same description, and
// builds as taihu-convert builds it (parameters only) unless it holds a
// number above 16 (large nets are valid: fuzz_support.hpp). A line
// "# input-shape: NAME=DIMS" (a comment to protobuf) gives an --input-shape.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>

#include "core/net/net.hpp"
#include "interop/caffe/net_import.hpp"
#include "fuzz_support.hpp"

namespace {

// A translation as taihu-convert writes it must read back as the same
// description: a ConfigError here is a finding too.
void check_read_back(const taihu::caffe::ImportedNet& imported) {
  const std::string dumped = imported.description.dump();
  std::string file;
  for (const auto& note : imported.notes) file += "# " + note + "\n";
  file += "\n" + dumped;
  std::string again;
  try {
    again = taihu::config::Document::parse(file, "imported.ini").dump();
  } catch (const taihu::Error& e) {
    again = std::string("(an error) ") + e.what();
  }
  if (again != dumped) {
    std::fprintf(stderr, "fuzz_prototxt: the translation reads back differently:\n%s\n--- as written:\n%s\n",
                 again.c_str(), file.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  const std::string text(fuzz::text_of(data, size));
  std::optional<caffe::ImportedNet> imported;
  fuzz::expect_clean([&] {
    caffe::ImportOptions options;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      if (line.starts_with("# input-shape: ")) options.input_shapes.insert(caffe::parse_input_shape(line.substr(15)));
    imported = caffe::import_net(caffe::parse_net(text, "fuzz.prototxt"), options);
  });
  if (!imported) return 0;
  check_read_back(*imported);
  if (!fuzz::small_numbers_only(imported->description.dump(), 16)) return 0;
  fuzz::expect_clean([&] {
    const Net net(std::make_shared<config::Document>(imported->description), 1, 1, Net::Storage::parameters_only);
  });
  return 0;
}
