#include "interop/onnx/onnx_graph.hpp"

#include <cstring>

namespace taihu::onnx_out {

namespace {

using taihu::onnx::AttributeProto;
using taihu::onnx::TensorProto;
using taihu::onnx::ValueInfoProto;

void describe(ValueInfoProto* value, const std::string& name, const std::vector<int64_t>& dims) {
  value->set_name(name);
  auto* tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(TensorProto::FLOAT);
  auto* shape = tensor->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* dim = shape->add_dim();
    if (i == 0)
      dim->set_dim_param("N");
    else
      dim->set_dim_value(dims[i]);
  }
}

template <class T>
std::string raw_bytes(const T* values, size_t count) {
  std::string bytes(count * sizeof(T), '\0');  // little-endian hosts only, as the .npy writer
  if (count) std::memcpy(bytes.data(), values, bytes.size());
  return bytes;
}

}  // namespace

NodeProto& GraphWriter::node(const std::string& op_type, const std::string& name,
                             const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  NodeProto* n = graph_->add_node();
  n->set_op_type(op_type);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

void GraphWriter::attribute(NodeProto& node, const std::string& name, int64_t value) {
  AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::INT);
  a->set_i(value);
}

void GraphWriter::attribute(NodeProto& node, const std::string& name, float value) {
  AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::FLOAT);
  a->set_f(value);
}

void GraphWriter::attribute(NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

std::string GraphWriter::floats(const std::string& name, const std::vector<int64_t>& dims, const float* values) {
  TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(TensorProto::FLOAT);
  int64_t count = 1;
  for (int64_t d : dims) t->add_dims(d), count *= d;
  t->set_raw_data(raw_bytes(values, static_cast<size_t>(count)));
  return name;
}

std::string GraphWriter::int64s(const std::string& name, const std::vector<int64_t>& values) {
  TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  t->set_raw_data(raw_bytes(values.data(), values.size()));
  return name;
}

void GraphWriter::input(const std::string& name, const std::vector<int64_t>& dims) {
  describe(graph_->add_input(), name, dims);
}

void GraphWriter::output(const std::string& name, const std::vector<int64_t>& dims) {
  describe(graph_->add_output(), name, dims);
}

}  // namespace taihu::onnx_out
