#pragma once
// The training dashboard: one self-contained HTML page (no external scripts,
// styles or fonts: it works on a cluster without internet) with the run's
// curves (training loss, test accuracy, learning rate, throughput, the
// allreduce's share of the iteration, bytes sent against dense: RedSync's
// density) and the cluster's members with their state.
//
// Live, the status endpoint serves it at / and /dashboard, and it reads
// /status (core/train/run_status.hpp) and /series (core/train/run_series.hpp)
// every 2 s; at the end of a run the coordinator writes it beside the metrics
// with the data inside (dashboard.html), to open from the file system. Names
// are set as text, never as markup, so a net or node name cannot inject any.

#include <string>

namespace taihu {

// The live page.
std::string dashboard_page();

// The page with the run's /status and /series JSON inside.
std::string dashboard_page(const std::string& status_json, const std::string& series_json);

}  // namespace taihu
