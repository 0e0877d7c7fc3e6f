// ONNX import (taihu-convert onnx): a shipped net exported to ONNX and
// imported again is the same net, with the same weights and the same outputs
// bit for bit; what cannot be imported is refused, naming the node and why.
// (torchvision's models through torch.onnx.export: tests/interop/test_onnx_import.py.)

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "core/common/error.hpp"
#include "core/common/random.hpp"
#include "core/net/net.hpp"
#include "interop/onnx/onnx_export.hpp"
#include "interop/onnx/onnx_import.hpp"
#include "tests/support/error_message.hpp"

using namespace taihu;
using interop::ImportedOnnx;

namespace {

ImportedOnnx import_model(const onnx::ModelProto& model, const interop::OnnxImportOptions& options = {}) {
  // Through bytes, as a file would come.
  std::string bytes;
  REQUIRE(model.SerializeToString(&bytes));
  onnx::ModelProto parsed;
  REQUIRE(parsed.ParseFromString(bytes));
  return interop::import_onnx(parsed, "test.onnx", options);
}

void fill(Net& net, uint64_t seed) {
  Rng rng(seed);
  for (const auto& name : net.input_names()) {
    Tensor& t = net.blob(name).data();
    const bool label = t.shape().rank() == 1;
    for (int64_t i = 0; i < t.count(); ++i) t.ptr()[i] = label ? 0.0f : rng.uniform(-1.0f, 1.0f);
  }
}

void check_round_trip(const std::string& name) {
  CAPTURE(name);
  const auto description = std::make_shared<config::Document>(
      config::Document::parse_file(std::string(TAIHU_SOURCE_DIR) + "/config/nets/" + name + ".ini"));
  Net original(description, 2, 7);
  // Statistics that are not the fillers' 0 and 1, so that BatchNorm's mean
  // and variance must arrive in their places.
  Rng stats(3);
  for (Param* p : original.params())
    if (p->name.ends_with("/mean") || p->name.ends_with("/variance")) {
      Tensor& t = p->blob->data();
      for (int64_t i = 0; i < t.count(); ++i) t.ptr()[i] = stats.uniform(0.5f, 1.5f);
    }
  original.set_phase(Phase::test);
  const ImportedOnnx imported = import_model(interop::export_onnx(original));
  Net converted(std::make_shared<config::Document>(imported.description), 2, 99);  // other fillers: overwritten
  const Checkpoint checkpoint = interop::onnx_checkpoint(imported, converted, 99);
  converted.set_phase(Phase::test);
  CHECK(checkpoint.params.size() == converted.params().size());

  // The same weights, by name: layer names survive, but for the characters a
  // config name cannot hold ('/' in GoogLeNet's), which become '_'.
  CHECK(converted.num_learnable_parameters() == original.num_learnable_parameters());
  for (const Param* p : std::as_const(original).params()) {
    CAPTURE(p->name);
    std::string name = p->name;
    const auto slash = name.rfind('/');
    std::replace(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(slash), '/', '_');
    const Tensor* found = nullptr;
    for (const Param* q : std::as_const(converted).params())
      if (q->name == name) found = &q->blob->data();
    REQUIRE(found != nullptr);
    REQUIRE(found->shape() == p->blob->data().shape());
    CHECK(std::equal(found->ptr(), found->ptr() + found->count(), p->blob->data().ptr()));
  }
  // The same outputs, bit for bit.
  fill(original, 11);
  fill(converted, 11);
  const auto outputs = interop::inference_outputs(original);
  REQUIRE(!outputs.empty());
  original.keep_values(outputs);  // a loss reads them: their storage would take turns
  original.forward();
  converted.forward();
  for (const auto& out : outputs) {
    CAPTURE(out);
    const Tensor& a = original.blob(out).data();
    std::string imported_name = out;
    std::replace(imported_name.begin(), imported_name.end(), '/', '_');
    const Tensor& b = converted.blob(imported_name).data();
    REQUIRE(a.shape() == b.shape());
    CHECK(std::equal(a.ptr(), a.ptr() + a.count(), b.ptr()));
  }
}

// A model of one node on input "x" (N x 3 x 8 x 8), the node's output "y" the graph's.
struct OneNode {
  onnx::ModelProto model;
  onnx::NodeProto* node;
  explicit OneNode(const std::string& op) {
    model.set_ir_version(7);
    auto* opset = model.add_opset_import();
    opset->set_version(13);
    auto* g = model.mutable_graph();
    g->set_name("one");
    auto* in = g->add_input();
    in->set_name("x");
    auto* type = in->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    type->mutable_shape()->add_dim()->set_dim_param("N");
    for (int d : {3, 8, 8}) type->mutable_shape()->add_dim()->set_dim_value(d);
    node = g->add_node();
    node->set_op_type(op);
    node->set_name("n1");
    node->add_input("x");
    node->add_output("y");
    g->add_output()->set_name("y");
  }
  void ints(const std::string& name, std::vector<int64_t> values) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }
  onnx::TensorProto& initializer(const std::string& name, std::vector<int64_t> dims, std::size_t floats) {
    auto* t = model.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(floats * 4, '\0'));
    return *t;
  }
};

std::string refusal(const onnx::ModelProto& model) {
  return taihu::testing::error_message<ConfigError>([&] { import_model(model, {.training_head = false, .input_shapes = {}}); });
}

}  // namespace

TEST_SUITE("onnx") {
  TEST_CASE("onnx round trip: LeNet and LeNet-BN exported and imported are the same nets, outputs bit for bit") {
    for (const char* name : {"lenet", "lenet-bn"}) check_round_trip(name);
  }

  TEST_CASE("onnx round trip: AlexNet, AlexNet-BN, GoogLeNet and ResNet-50 too" * doctest::test_suite("slow")) {
    for (const char* name : {"alexnet", "alexnet-bn", "googlenet", "resnet50"}) check_round_trip(name);
  }

  TEST_CASE("onnx import: the training head, the input's name and a symbolic shape") {
    OneNode m("GlobalAveragePool");
    m.model.mutable_graph()->mutable_node(0)->set_output(0, "pooled");
    auto* flatten = m.model.mutable_graph()->add_node();
    flatten->set_op_type("Flatten");
    flatten->add_input("pooled");
    flatten->add_output("y");
    const ImportedOnnx imported = import_model(m.model);
    const auto& d = imported.description;
    CHECK(d.section("input", "data").get_list<int64_t>("shape") == std::vector<int64_t>{3, 8, 8});
    CHECK(d.find("input", "label") != nullptr);
    CHECK(d.section("layer", "loss").get<std::string>("type") == "SoftmaxWithLoss");
    CHECK(d.section("layer", "accuracy").get<std::string>("phase") == "test");
    Net net(std::make_shared<config::Document>(imported.description), 2, 1);  // it builds
    CHECK(net.blob("y").shape() == Shape{2, 3});

    OneNode symbolic("Relu");
    symbolic.model.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
        ->mutable_dim(2)->set_dim_param("H");
    CHECK(refusal(symbolic.model).find("--input-shape=x=C,H,W") != std::string::npos);
    const auto shaped = import_model(symbolic.model, {.training_head = false, .input_shapes = {{"x", {3, 5, 5}}}});
    CHECK(shaped.description.section("input", "data").get_list<int64_t>("shape") == std::vector<int64_t>{3, 5, 5});
  }

  TEST_CASE("onnx import refuses, naming the node: operators, attributes, cycles, sizes, files") {
    CHECK(refusal(OneNode("Erf").model).find("node 'n1' (Erf): taihu has no layer for this operator") !=
          std::string::npos);

    OneNode pads("MaxPool");
    pads.ints("kernel_shape", {3, 3});
    pads.ints("pads", {0, 0, 1, 1});
    CHECK(refusal(pads.model).find("node 'n1' (MaxPool): asymmetric pads [0, 0, 1, 1]") != std::string::npos);

    OneNode average("AveragePool");
    average.ints("kernel_shape", {3, 3});
    average.ints("pads", {1, 1, 1, 1});  // count_include_pad defaults to 0
    CHECK(refusal(average.model).find("count_include_pad = 0") != std::string::npos);

    OneNode conv("Conv");
    conv.node->add_input("w");
    conv.initializer("w", {4, 3, 3, 3}, 4 * 27);
    auto* auto_pad = conv.node->add_attribute();
    auto_pad->set_name("auto_pad");
    auto_pad->set_s("SAME_UPPER");
    CHECK(refusal(conv.model).find("auto_pad = SAME_UPPER") != std::string::npos);

    OneNode matmul("MatMul");  // on N x 3 x 8 x 8: ONNX multiplies the last axis, InnerProduct would flatten
    matmul.node->add_input("b");
    matmul.initializer("b", {8, 4}, 32);
    CHECK(refusal(matmul.model).find("a rank-4 input: MatMul multiplies its last axis") != std::string::npos);

    // A weight that claims 10^12 values and holds 4 bytes: refused before anything that size is made.
    OneNode huge("Conv");
    huge.node->add_input("w");
    huge.initializer("w", {1000000, 1000000, 1, 1}, 1);
    CHECK(refusal(huge.model).find("need 1000000000000 values, the file holds 1") != std::string::npos);
    OneNode short_weight("Conv");
    short_weight.node->add_input("w");
    short_weight.initializer("w", {4, 3, 3, 3}, 100);
    CHECK(refusal(short_weight.model).find("need 108 values, the file holds 100") != std::string::npos);

    // Two nodes reading each other's outputs.
    OneNode cycle("Add");
    cycle.node->add_input("z");
    auto* second = cycle.model.mutable_graph()->add_node();
    second->set_op_type("Relu");
    second->set_name("n2");
    second->add_input("y");
    second->add_output("z");
    CHECK(refusal(cycle.model).find("reads 'z', which no earlier node computes") != std::string::npos);

    OneNode external("Conv");
    external.node->add_input("w");
    auto& w = external.initializer("w", {4, 3, 3, 3}, 0);
    w.clear_raw_data();
    w.set_data_location(1);
    CHECK(refusal(external.model).find("external file") != std::string::npos);

    OneNode control("If");
    auto* branch = control.node->add_attribute();
    branch->set_name("then_branch");
    branch->mutable_g()->set_name("b");
    CHECK(refusal(control.model).find("control flow") != std::string::npos);

    OneNode two_inputs("Add");
    two_inputs.node->add_input("x2");
    *two_inputs.model.mutable_graph()->add_input() = two_inputs.model.graph().input(0);
    two_inputs.model.mutable_graph()->mutable_input(1)->set_name("x2");
    CHECK(refusal(two_inputs.model).find("takes 2 inputs") != std::string::npos);
  }
}
