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
#include <sstream>

#include "core/net/net.hpp"
#include "interop/caffe/net_import.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  const std::string text(fuzz::text_of(data, size));
  fuzz::expect_clean([&] {
    caffe::ImportOptions options;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      if (line.starts_with("# input-shape: ")) options.input_shapes.insert(caffe::parse_input_shape(line.substr(15)));
    const caffe::ImportedNet imported = caffe::import_net(caffe::parse_net(text, "fuzz.prototxt"), options);
    const std::string dumped = imported.description.dump();
    std::string file;
    for (const auto& note : imported.notes) file += "# " + note + "\n";
    file += "\n" + dumped;
    const std::string again = config::Document::parse(file, "imported.ini").dump();
    if (again != dumped) {
      std::fprintf(stderr, "fuzz_prototxt: the translation reads back differently:\n%s\n--- as written:\n%s\n",
                   again.c_str(), file.c_str());
      std::abort();
    }
    if (!fuzz::small_numbers_only(dumped, 16)) return;
    const Net net(std::make_shared<config::Document>(imported.description), 1, 1, Net::Storage::parameters_only);
  });
  return 0;
}
