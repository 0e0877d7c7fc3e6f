#include "interop/caffe/proto_files.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <climits>
#include <fstream>
#include <iterator>
#include <regex>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/excerpt.hpp"

namespace taihu::caffe {

namespace {

constexpr std::size_t long_message = 400;

// protobuf's wording for a field the schema lacks. Such a field exists in
// real Caffe (or is a typo): say so in taihu's terms, since the schema here is
// deliberately a subset.
std::string explain(const std::string& message) {
  static const std::regex unknown_field(R"re(Message type "(?:taihu\.caffe\.)?([^"]+)" has no field named "([^"]+)")re");
  // A message that quotes a long token (a field name of megabytes) is shown
  // shortened, and never matched: std::regex recurses once per character.
  if (message.size() > long_message) return excerpt(message, long_message);
  std::smatch m;
  if (!std::regex_search(message, m, unknown_field)) return message;
  const std::string type = m[1], field = m[2];
  if (type == "CaffeNet" && field == "layers")
    return "the net uses the legacy V1 form 'layers { ... }', which taihu does not read; convert it with "
           "Caffe's tool first: upgrade_net_proto_text OLD.prototxt NEW.prototxt";
  return fmt::format("field '{}' of {} is not supported by taihu-convert (it reads the subset of Caffe's fields "
                     "declared in interop/caffe/caffe.proto; a field that changes the net's meaning is never "
                     "dropped silently)",
                     field, type);
}

// Collects the parser's errors with their positions (protobuf counts lines
// and columns from 0; editors count from 1).
class Errors final : public google::protobuf::io::ErrorCollector {
 public:
  Errors(std::string source, const std::string& text) : source_(std::move(source)), text_(text) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    messages_.push_back(
        fmt::format("{}:{}:{}: {}", source_, line + 1, field_start(line, column, message) + 1, explain(message)));
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    messages_.push_back(fmt::format("{}:{}:{}: {}", source_, line + 1, column + 1, message));
  }
  std::string joined() const { return fmt::format("{}", fmt::join(messages_, "\n")); }

 private:
  // protobuf places an unknown field's error after its name; the name's own
  // column is where an editor should jump.
  int field_start(int line, int column, const std::string& message) const {
    static const std::regex named(R"re(has no field named "([^"]+)")re");
    std::smatch m;
    if (message.size() > long_message || !std::regex_search(message, m, named)) return column;
    size_t begin = 0;  // of the line
    for (int l = 0; l < line; ++l) {
      begin = text_.find('\n', begin);
      if (begin == std::string::npos) return column;
      ++begin;
    }
    const std::string before = text_.substr(begin, static_cast<size_t>(column));
    const size_t at = before.rfind(m[1].str());
    return at == std::string::npos ? column : static_cast<int>(at);
  }

  std::string source_;
  const std::string& text_;
  std::vector<std::string> messages_;
};

}  // namespace

std::string read_file_bytes(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(fmt::format("{} '{}' is a folder, not a file", what, path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("cannot open {} '{}': no such file or not readable", what, path.string()));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

CaffeNet parse_net_text(const std::string& text, const std::string& source, std::vector<int>* layer_lines) {
  CaffeNet net;
  Errors errors(source, text);
  google::protobuf::TextFormat::Parser parser;
  google::protobuf::TextFormat::ParseInfoTree locations;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&locations);
  if (!parser.ParseFromString(text, &net))
    throw ConfigError(fmt::format("cannot read Caffe net {}:\n{}", source, errors.joined()));
  if (layer_lines) {
    const auto* field = CaffeNet::descriptor()->FindFieldByName("layer");
    layer_lines->clear();
    for (int i = 0; i < net.layer_size(); ++i) layer_lines->push_back(locations.GetLocation(field, i).line + 1);
  }
  return net;
}

CaffeWeights parse_weights(const std::string& bytes, const std::string& source) {
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    throw ConfigError(fmt::format("Caffe weights '{}' are {} bytes; protobuf reads at most 2 GiB", source,
                                  bytes.size()));
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(INT_MAX);
  CaffeWeights weights;
  if (!weights.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    throw ConfigError(fmt::format("'{}' is not a Caffe weights file (.caffemodel), or it is truncated or "
                                  "corrupted: protobuf cannot decode its {} bytes",
                                  source, bytes.size()));
  if (weights.layer_size() == 0 && weights.layers_size() == 0)
    throw ConfigError(fmt::format("'{}' holds no layers: not a Caffe weights file (.caffemodel)?", source));
  return weights;
}

CaffeWeights read_weights(const std::filesystem::path& path) {
  return parse_weights(read_file_bytes(path, "Caffe weights"), path.string());
}

}  // namespace taihu::caffe
