#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "core/common/excerpt.hpp"
#include "core/config/config.hpp"
#include "core/net/net.hpp"
#include "core/train/train_setup.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/temp_dir.hpp"

using namespace taihu;
using namespace taihu::config;

namespace {
std::string error_of(auto&& f) { return taihu::testing::error_message<ConfigError>(f); }
}  // namespace

TEST_CASE("config parses root keys, sections, named sections, lists and comments") {
  auto doc = Document::parse(
      "epochs = 3  # trailing comment\n"
      "; full-line comment\n"
      "[solver]\n"
      "base_lr = 0.05\n"
      "nesterov = yes\n"
      "[layer conv1]\n"
      "bottom = data, label  extra\n"
      "url = http://x#y\n",
      "t.ini");
  CHECK(doc.root().get<int>("epochs") == 3);
  CHECK(doc.section("solver").get<double>("base_lr") == doctest::Approx(0.05));
  CHECK(doc.section("solver").get<bool>("nesterov"));
  const auto* conv = doc.find("layer", "conv1");
  REQUIRE(conv != nullptr);
  CHECK(conv->get_list<std::string>("bottom") == std::vector<std::string>{"data", "label", "extra"});
  CHECK(conv->get<std::string>("url") == "http://x#y");
  CHECK(doc.section("missing").get_or<int>("x", 5) == 5);
}

TEST_CASE("config errors name the file, line and key") {
  auto doc = Document::parse("[solver]\nbase_lr = fast\n", "app.ini");
  const auto msg = error_of([&] { doc.section("solver").get<float>("base_lr"); });
  CHECK(msg.find("app.ini:2") != std::string::npos);
  CHECK(msg.find("base_lr") != std::string::npos);
  CHECK(msg.find("fast") != std::string::npos);

  CHECK(error_of([] { Document::parse("a = 1\nthis line is wrong\n", "x.ini"); }).find("x.ini:2") !=
        std::string::npos);
  CHECK(error_of([] { Document::parse("[solver\n", "x.ini"); }).find("x.ini:1") != std::string::npos);
  CHECK(error_of([] { Document::parse("a = 1\na = 2\n", "x.ini"); }).find("set twice") != std::string::npos);
  CHECK(error_of([] { Document::parse("[s]\n[s]\n", "x.ini"); }).find("already defined") != std::string::npos);
  CHECK(error_of([] { Document::parse("[a b c]\n", "x.ini"); }).find("malformed") != std::string::npos);
  CHECK(error_of([] { Document::parse_file("/nonexistent/file.ini"); }).find("cannot open") !=
        std::string::npos);
}

TEST_CASE("a control character in config text is an error at its line and column") {
  // Before: a NUL inside a value cut every message and --dump-config at the NUL.
  using namespace std::string_literals;
  const std::string nul = error_of([] { Document::parse("epochs = 1\nnet = nets/le\0net.ini\n"s, "n.ini"); });
  CHECK(nul.find("n.ini:2, column 14") != std::string::npos);
  CHECK(nul.find("byte 0x00") != std::string::npos);
  CHECK(nul.find('\0') == std::string::npos);
  CHECK(error_of([] { Document::parse("[solver]\ntype = s\x1bgd\n", "e.ini"); }).find("e.ini:2, column 9") !=
        std::string::npos);
  // Tabs, and CRLF line ends, are text.
  auto doc = Document::parse("epochs =\t4\r\n[solver]\r\ntype = sgd\r\n", "w.ini");
  CHECK(doc.root().get<int>("epochs") == 4);
  CHECK(doc.section("solver").get<std::string>("type") == "sgd");
  Document overridden = Document::parse("", "x.ini");
  CHECK(error_of([&] { overridden.apply_override("epochs=1\x07"); }).find("command line, column 9") !=
        std::string::npos);
}

TEST_CASE("missing keys, bad choices and unknown options are reported") {
  auto doc = Document::parse("[solver]\ntype = sgdx\ntypo_key = 1\n", "s.ini");
  const auto& solver = doc.section("solver");
  CHECK(error_of([&] { solver.get<int>("max_iter"); }).find("required") != std::string::npos);
  const auto choice = error_of([&] { solver.get_choice("type", {"sgd", "adam"}, "sgd"); });
  CHECK(choice.find("s.ini:2") != std::string::npos);
  CHECK(choice.find("sgd, adam") != std::string::npos);
  const auto unknown = error_of([&] { solver.reject_unused(); });
  CHECK(unknown.find("s.ini:3") != std::string::npos);
  CHECK(unknown.find("typo_key") != std::string::npos);
  CHECK(unknown.find("unknown option") != std::string::npos);
}

TEST_CASE("command-line overrides replace and add keys; dump round-trips") {
  auto doc = Document::parse("epochs = 3\n[solver]\nbase_lr = 0.1\n", "a.ini");
  doc.apply_override("--epochs=5");
  doc.apply_override("solver.base_lr=0.2");
  doc.apply_override("--data.batch_size=32");
  doc.apply_override("workers=4");
  doc.apply_override("layer.conv1.num_output=8");
  CHECK(doc.root().get<int>("epochs") == 5);
  CHECK(doc.root().get<int>("workers") == 4);
  CHECK(doc.section("solver").get<float>("base_lr") == doctest::Approx(0.2f));
  CHECK(doc.section("data").get<int>("batch_size") == 32);
  CHECK(doc.section("layer", "conv1").get<int>("num_output") == 8);
  CHECK(error_of([&] { doc.apply_override("--novalue"); }).find("key=value") != std::string::npos);
  auto again = Document::parse(doc.dump(), "dump");
  CHECK(again.section("solver").get<float>("base_lr") == doctest::Approx(0.2f));
  CHECK(again.section("layer", "conv1").get<int>("num_output") == 8);
}

namespace {

constexpr const char* tiny_net = R"([net]
name = tiny
[input data]
shape = 1 8 8
[input label]
shape =
[layer conv1]
type = Convolution
bottom = data
top = conv1
num_output = 4
kernel_size = 3
[layer ip]
type = InnerProduct
bottom = conv1
top = ip
num_output = 3
[layer loss]
type = SoftmaxWithLoss
bottom = ip label
top = loss
)";

}  // namespace

TEST_CASE("net keys on the command line (layer.conv1.num_output=8) apply to the net the config names") {
  // docs/config.md's own example was "unknown option": the override stayed in
  // the application config, and the net file was read without it.
  taihu::testing::TempDir dir;
  dir.write("tiny.ini", tiny_net);
  const auto app = dir.write("app.ini", "net = tiny.ini\n");
  auto build = [&](std::initializer_list<const char*> overrides) {
    auto doc = Document::parse_file(app);
    for (const char* o : overrides) doc.apply_override(o);
    auto net = build_net(doc, TrainSettings::read(doc.root()), 2, 1);
    doc.reject_unused();  // nothing left over in the application config
    return net;
  };
  auto net = build({"layer.conv1.num_output=8", "--input.data.shape=1 10 10", "net.fuse=false"});
  CHECK(net->layer(0).params()[0].blob->shape() == Shape{8, 1, 3, 3});
  CHECK(net->blob("conv1").shape() == Shape{2, 8, 8, 8});
  CHECK(net->description().section("layer", "conv1").find("num_output")->where.str() == "command line");
  CHECK(net->fused_runs().empty());
  CHECK(build({})->layer(0).params()[0].blob->shape() == Shape{4, 1, 3, 3});

  // Typos are errors naming the command line and the key, as in a file.
  CHECK(error_of([&] { build({"layer.conv1.num_outptu=8"}); }) ==
        "command line: key 'num_outptu' in [layer conv1]: unknown option for this layer type");
  CHECK(error_of([&] { build({"layer.conv9.num_output=8"}); }) ==
        "command line: key 'num_output' in [layer conv9]: the net '" + (dir / "tiny.ini").string() +
            "' has no [layer conv9]");
  CHECK(error_of([&] { build({"input.image.shape=3"}); }).find("has no [input image]") != std::string::npos);
}

TEST_CASE("apply_net_overrides: [layer] sections of the application config, from its file too") {
  auto app = Document::parse("net = n.ini\n[layer c]\nnum_output = 7\n", "app.ini");
  auto net = Document::parse("[layer c]\ntype = Convolution\nnum_output = 2\n[layer d]\ntype = ReLU\n", "n.ini");
  apply_net_overrides(app, net);
  CHECK(net.section("layer", "c").get<int>("num_output") == 7);
  CHECK(net.section("layer", "c").find("num_output")->where.str() == "app.ini:3");
  CHECK(net.section("layer", "d").get<std::string>("type") == "ReLU");
  app.root().get<std::string>("net");
  CHECK_NOTHROW(app.reject_unused());
}

TEST_CASE("errors quote a long name or value by its first 100 bytes and its size") {
  // A 50 MB layer name was echoed whole in its error message.
  const std::string name(1'000'000, 'n');
  auto doc = Document::parse("[layer " + name + "]\nkernal = 3\n[solver]\nbase_lr = " + name + "\n", "t.ini");
  const std::string unknown = error_of([&] { doc.reject_unused(); });
  CHECK(unknown == "t.ini:2: key 'kernal' in [layer " + std::string(100, 'n') + "… (1000000 bytes)]: unknown option");
  const std::string value = error_of([&] { doc.section("solver").get<double>("base_lr"); });
  CHECK(value.size() < 200);
  CHECK(value.find("got '" + std::string(100, 'n') + "… (1000000 bytes)'") != std::string::npos);
  CHECK(error_of([&] { Document::parse(name + "\n", "t.ini"); }).size() < 200);
  CHECK(error_of([&] { Document().apply_override(name); }).size() < 200);
  // A net's layer of an unknown type.
  auto net_doc = std::make_shared<Document>(Document::parse("[layer " + name + "]\ntype = Nope\n", "n.ini"));
  const std::string type = error_of([&] { Net(net_doc, 1, 1); });
  CHECK(type.find("n.ini:1: layer '" + std::string(100, 'n') + "… (1000000 bytes)' has unknown type 'Nope'") == 0);
  CHECK(type.size() < 1000);
  // Cut at a character boundary: 'a' and 60 two-byte characters.
  std::string accents = "a";
  for (int i = 0; i < 60; ++i) accents += "é";
  CHECK(excerpt(accents) == accents.substr(0, 99) + "… (121 bytes)");
  CHECK(excerpt("short") == "short");
}
