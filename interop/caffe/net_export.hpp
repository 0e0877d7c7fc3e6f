#pragma once
// A taihu net config as a Caffe net description: the inverse of
// net_import.hpp, for handing a taihu net to Caffe tools (and for the tests'
// round trips). Inputs become Input layers (batch axis 1), `phase` an
// include rule, taihu's fillers and multipliers Caffe's. A key the exporter
// does not know is a ConfigError ("unknown option"), as in the net itself.

#include <string>

#include "core/config/config.hpp"
#include "interop/caffe/caffe.pb.h"

namespace taihu::caffe {

CaffeNet export_net(const config::Document& description);
// Protobuf text format, as Caffe's own prototxt files are written.
std::string prototxt_of(const CaffeNet& net);

}  // namespace taihu::caffe
