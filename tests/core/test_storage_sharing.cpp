// Shared storage (core/net/storage_sharing.hpp): a net whose blobs take turns
// in buffers for their values and gradients trains bit for bit as one whose
// blobs each keep their own, through fused runs, splits, views,
// concatenations and batch changes, and it needs much less memory.

#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "core/common/random.hpp"
#include "core/net/net.hpp"

using namespace taihu;

namespace {

std::string with_net_key(std::string text, const std::string& line) {
  const auto at = text.find("[net]\n");
  REQUIRE(at != std::string::npos);
  return text.insert(at + 6, line + "\n");
}

std::string shipped(const std::string& file) {
  std::ifstream in(std::string(TAIHU_SOURCE_DIR "/config/nets/") + file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::unique_ptr<Net> build(const std::string& text, int64_t batch) {
  return std::make_unique<Net>(std::make_shared<config::Document>(config::Document::parse(text, "net.ini")), batch, 3);
}

void fill(Net& net, uint64_t seed, int classes) {
  Rng rng(seed);
  Tensor& data = net.blob("data").data();
  for (int64_t i = 0; i < data.count(); ++i) data[i] = rng.normal();
  Tensor& label = net.blob("label").data();
  for (int64_t i = 0; i < label.count(); ++i) label[i] = static_cast<float>(rng.below(classes));
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.count() == b.count() && std::memcmp(a.ptr(), b.ptr(), sizeof(float) * static_cast<size_t>(a.count())) == 0;
}

// Steps of plain SGD on both nets, the batch changing between them; every
// loss and parameter gradient must agree to the bit.
void train_alike(Net& shared, Net& own, int classes, std::initializer_list<int64_t> batches) {
  uint64_t seed = 11;
  for (const int64_t batch : batches) {
    for (Net* net : {&shared, &own}) {
      if (net->batch() != batch) net->set_batch(batch);
      fill(*net, seed, classes);
      net->zero_param_diffs();
    }
    ++seed;
    const float a = shared.forward_backward();
    const float b = own.forward_backward();
    CHECK(std::memcmp(&a, &b, sizeof a) == 0);
    const auto p = shared.params(), q = own.params();
    REQUIRE(p.size() == q.size());
    for (size_t k = 0; k < p.size(); ++k) {
      CAPTURE(p[k]->name);
      CHECK(same_bits(p[k]->blob->diff(), q[k]->blob->diff()));
      CHECK(same_bits(p[k]->blob->data(), q[k]->blob->data()));  // incl. running statistics
    }
    for (Net* net : {&shared, &own})
      for (Param* param : net->learnable_params())
        for (int64_t i = 0; i < param->blob->count(); ++i) param->blob->data()[i] -= 0.01f * param->blob->diff()[i];
  }
}

// Every layer kind that bends the lifetimes: a Split (two readers), Flatten's
// view of its bottom, Concat, Eltwise, in-place ReLU and Dropout, a fused run.
const char* branchy = R"(
[net]
name = branchy
[input data]
shape = 2 6 6
[input label]
shape =
[layer conv1]
type = Convolution
bottom = data
top = conv1
num_output = 4
kernel_size = 3
pad = 1
weight_filler = gaussian 0.3
[layer bn1]
type = BatchNorm
bottom = conv1
top = bn1
[layer scale1]
type = Scale
bottom = bn1
top = scale1
bias_term = true
[layer relu1]
type = ReLU
bottom = scale1
top = scale1
[layer left]
type = Convolution
bottom = scale1
top = left
num_output = 3
kernel_size = 1
weight_filler = gaussian 0.3
[layer right]
type = Convolution
bottom = scale1
top = right
num_output = 3
kernel_size = 3
pad = 1
weight_filler = gaussian 0.3
[layer join]
type = Concat
bottom = left right
top = join
[layer sum]
type = Eltwise
bottom = left right
top = sum
[layer pool]
type = Pooling
bottom = join
top = pool
pool = max
kernel_size = 2
stride = 2
[layer flat]
type = Flatten
bottom = pool
top = flat
[layer drop]
type = Dropout
bottom = flat
top = flat
dropout_ratio = 0.3
[layer ip]
type = InnerProduct
bottom = flat
top = ip
num_output = 3
weight_filler = gaussian 0.3
[layer sum_flat]
type = Flatten
bottom = sum
top = sum_flat
[layer ip_sum]
type = InnerProduct
bottom = sum_flat
top = ip_sum
num_output = 3
weight_filler = gaussian 0.3
[layer score]
type = Eltwise
bottom = ip ip_sum
top = score
[layer loss]
type = SoftmaxWithLoss
bottom = score label
top = loss
)";

}  // namespace

std::string own_storage(const std::string& text) {
  return with_net_key(with_net_key(text, "share_gradients = false"), "share_values = false");
}

TEST_SUITE("storage sharing") {
  TEST_CASE("shared buffers train bit for bit as a blob's own: splits, views, concat, batch changes") {
    for (const char* fuse : {"fuse = true", "fuse = false"})
      for (const char* what : {"", "share_values = false", "share_gradients = false"}) {
        CAPTURE(fuse);
        CAPTURE(what);
        const std::string text = with_net_key(with_net_key(branchy, fuse), what);
        auto shared = build(text, 4);
        auto own = build(own_storage(branchy), 4);
        const StorageSharing& s = shared->storage_sharing();
        CHECK(s.floats_after > 0);
        CHECK((s.values > 0) == (std::string(what) != "share_values = false"));
        CHECK((s.gradients > 0) == (std::string(what) != "share_gradients = false"));
        CHECK(own->storage_sharing().floats_after == 0);
        train_alike(*shared, *own, 3, {4, 4, 6, 3, 6});
      }
  }

  TEST_CASE("a value no backward reads lends its storage; a kept one stays defined after forward") {
    // `sum` (an Eltwise sum) is read by sum_flat's view alone, whose reader
    // (an InnerProduct) reads it in backward: it lives. `ip` and `ip_sum`
    // only feed `score`'s sum, which reads no value in backward.
    auto shared = build(branchy, 4);
    auto own = build(own_storage(branchy), 4);
    CHECK(shared->value_shared("ip"));
    CHECK_FALSE(shared->value_shared("loss"));
    CHECK_FALSE(shared->value_shared("data"));
    shared->keep_values({"ip"});
    CHECK_FALSE(shared->value_shared("ip"));
    for (Net* net : {shared.get(), own.get()}) {
      fill(*net, 5, 3);
      net->zero_param_diffs();
      net->forward_backward();
    }
    CHECK(same_bits(shared->blob("ip").data(), own->blob("ip").data()));
    CHECK(same_bits(shared->blob("loss").data(), own->blob("loss").data()));
  }

  TEST_CASE("the shipped nets: same bits, and ResNet-50's shared tensors in a fraction of their memory") {
    for (const char* file : {"lenet.ini", "googlenet.ini", "resnet50.ini"}) {
      CAPTURE(std::string(file));
      const std::string text = shipped(file);
      REQUIRE_FALSE(text.empty());
      const int64_t batch = std::string(file) == "lenet.ini" ? 8 : 2;
      auto shared = build(text, batch);
      auto own = build(own_storage(text), batch);
      const StorageSharing& s = shared->storage_sharing();
      MESSAGE(std::string(file) << ": " << s.values << " values and " << s.gradients << " gradients, "
                                << s.floats_before << " floats in an arena of " << s.floats_after << " (at least "
                                << s.floats_at_once << ")");
      CHECK(s.floats_after < s.floats_before);
      CHECK(s.values > 0);
      CHECK(s.floats_after >= s.floats_at_once);
      // Near the bound where it matters; LeNet's few small tensors leave gaps.
      if (std::string(file) != "lenet.ini") CHECK(s.floats_after <= 1.05 * s.floats_at_once);
      train_alike(*shared, *own, std::string(file) == "lenet.ini" ? 10 : 1000, {batch, batch});
    }
  }
}
