#include "apps/sim_output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace taihu::sim_app {

void print_tables(const std::vector<Row>& rows, bool training) {
  std::vector<int> nodes;
  std::vector<std::string> algorithms;
  for (const auto& r : rows) {
    if (std::find(nodes.begin(), nodes.end(), r.nodes) == nodes.end()) nodes.push_back(r.nodes);
    if (std::find(algorithms.begin(), algorithms.end(), r.algorithm) == algorithms.end()) algorithms.push_back(r.algorithm);
  }
  auto find = [&](int n, const std::string& a) -> const Row* {
    for (const auto& r : rows) {
      if (r.nodes == n && r.algorithm == a) return &r;
    }
    return nullptr;
  };
  auto table = [&](const std::string& title, auto value) {
    std::string out = fmt::format("\n{}\n{:>7}", title, "nodes");
    for (const auto& a : algorithms) out += fmt::format(" {:>17}", a);
    out += "\n";
    for (int n : nodes) {
      out += fmt::format("{:>7}", n);
      for (const auto& a : algorithms) {
        const Row* r = find(n, a);
        out += r ? fmt::format(" {:>17}", value(*r)) : fmt::format(" {:>17}", "-");
      }
      out += "\n";
    }
    std::fputs(out.c_str(), stdout);
  };
  table(training ? "synchronisation time per iteration (simulated seconds)" : "collective time (simulated seconds)",
        [](const Row& r) { return fmt::format("{:.6g}", r.comm); });
  table("effective bandwidth (gradient GB / simulated second)",
        [](const Row& r) { return fmt::format("{:.3f}", r.bandwidth / 1e9); });
  table(training ? "speedup (P x one-node compute / iteration time)" : "speedup over ring",
        [](const Row& r) { return fmt::format("{:.2f}", r.speedup); });
  if (std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.speedup_high > 0; }))
    table("speedup, one-node compute across the SW26010 model's lock-step range (low-high)",
          [](const Row& r) { return fmt::format("{:.2f}-{:.2f}", r.speedup_low, r.speedup_high); });
  if (training) {
    table("communication share of the iteration", [](const Row& r) { return fmt::format("{:.1f}%", 100 * r.comm_share); });
  }
  table("host seconds (simulation cost)", [](const Row& r) { return fmt::format("{:.3f}", r.host_seconds); });
}

std::string rows_json(const std::vector<Row>& rows) {
  std::string out = "[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    out += fmt::format(
        "  {{\"algorithm\": \"{}\", \"nodes\": {}, \"seconds\": {:.9g}, \"comm_seconds\": {:.9g}, \"speedup\": {:.6g}, "
        "{}\"comm_share\": {:.6g}, \"bandwidth\": {:.6g}, \"messages\": {}, \"bytes\": {:.9g}, "
        "\"host_seconds\": {:.4f}}}{}\n",
        r.algorithm, r.nodes, r.seconds, r.comm, r.speedup,
        r.speedup_high > 0
            ? fmt::format("\"speedup_low\": {:.6g}, \"speedup_high\": {:.6g}, ", r.speedup_low, r.speedup_high)
            : "",
        r.comm_share, r.bandwidth, r.messages, r.bytes, r.host_seconds, i + 1 < rows.size() ? "," : "");
  }
  return out + "]\n";
}

namespace {

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string speedup_svg(const std::vector<Row>& rows, bool training, const std::string& title) {
  const double W = 760, H = 480, left = 70, right = 190, top = 40, bottom = 50;
  const double pw = W - left - right, ph = H - top - bottom;
  std::vector<std::string> algorithms;
  int max_nodes = 1, min_nodes = 1 << 30;
  double max_speedup = 1;
  for (const auto& r : rows) {
    if (std::find(algorithms.begin(), algorithms.end(), r.algorithm) == algorithms.end()) algorithms.push_back(r.algorithm);
    max_nodes = std::max(max_nodes, r.nodes);
    min_nodes = std::min(min_nodes, r.nodes);
    max_speedup = std::max(max_speedup, r.speedup);
  }
  if (training) max_speedup = std::max(max_speedup, static_cast<double>(max_nodes));
  const double x0 = std::log2(std::max(1, min_nodes)), x1 = std::max(x0 + 1, std::log2(max_nodes));
  auto X = [&](double n) { return left + (std::log2(n) - x0) / (x1 - x0) * pw; };
  auto Y = [&](double v) { return top + ph - v / (max_speedup * 1.05) * ph; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"14\">{}</text>\n",
      W, H, left, xml_escape(title));
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n", left, top,
                     pw, ph);
  for (double e = std::ceil(x0); e <= x1 + 1e-9; e += 1) {
    const double x = X(std::exp2(e));
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#eee\"/>"
                       "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       x, top, top + ph, top + ph + 16, static_cast<long>(std::exp2(e)));
  }
  const double step = std::pow(10.0, std::floor(std::log10(max_speedup))) / (max_speedup / std::pow(10.0, std::floor(std::log10(max_speedup))) < 3 ? 4 : 1);
  for (double v = 0; v <= max_speedup * 1.05; v += step) {
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#eee\"/>"
                       "<text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5:g}</text>\n",
                       left, Y(v), left + pw, left - 6, Y(v) + 4, v);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">nodes</text>\n", left + pw / 2, H - 12);
  svg += fmt::format("<text transform=\"translate(18 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", top + ph / 2,
                     training ? "speedup" : "speedup over ring");
  if (training) {
    svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#bbb\" stroke-dasharray=\"4 4\"/>\n",
                       X(min_nodes), Y(min_nodes), X(max_nodes), Y(max_nodes));
  }
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};
  for (std::size_t i = 0; i < algorithms.size(); ++i) {
    const char* color = colors[i % 7];
    std::string points;
    for (const auto& r : rows) {
      if (r.algorithm != algorithms[i]) continue;
      points += fmt::format("{:.1f},{:.1f} ", X(r.nodes), Y(r.speedup));
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", X(r.nodes), Y(r.speedup), color);
    }
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", points, color);
    const double ly = top + 16 + 20 * static_cast<double>(i);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"/>"
                       "<text x=\"{4}\" y=\"{5}\">{6}</text>\n",
                       left + pw + 12, ly, left + pw + 36, color, left + pw + 42, ly + 4, algorithms[i]);
  }
  return svg + "</svg>\n";
}

}  // namespace taihu::sim_app
