#include "core/train/dashboard_page.hpp"

#include <fmt/format.h>

namespace taihu {

namespace {

// {"status": ..., "series": ...} as the text of a <script type="application/json">:
// '<' only occurs inside JSON strings, where \u003c means the same, so no
// "</script>" or "<!--" in a name can end the element early.
std::string embedded(const std::string& status_json, const std::string& series_json) {
  const std::string json = fmt::format("{{\"status\": {}, \"series\": {}}}", status_json, series_json);
  std::string out;
  out.reserve(json.size());
  for (const char c : json) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

// The page; EMBEDDED_DATA is replaced by the data (or nothing: live).
constexpr const char* page = R"PAGE(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>taihu</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 16px 24px; color: #1d2330; background: #fbfbfd; }
header { display: flex; gap: 16px; align-items: baseline; }
h1 { font-size: 20px; margin: 0 0 12px; } h2 { font-size: 15px; margin: 18px 0 6px; }
#state { color: #555; }
#charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); gap: 12px; }
.chart { background: #fff; border: 1px solid #dde; border-radius: 6px; padding: 8px 10px; }
.chart h3 { font-size: 13px; margin: 0 0 4px; font-weight: 600; }
.chart .last { float: right; font-weight: 400; color: #555; }
svg { width: 100%; height: 160px; display: block; }
polyline.series { fill: none; stroke: #2f6fde; stroke-width: 1.6; }
circle.series { fill: #d9482b; }
.axis { font-size: 10px; fill: #667; }
.frame { fill: none; stroke: #ccd; }
table { border-collapse: collapse; } td, th { padding: 3px 12px 3px 0; text-align: left; }
th { color: #556; font-weight: 600; }
.none { color: #889; font-style: italic; }
</style></head>
<body>
<header><h1 id="title">taihu</h1><span id="state">connecting...</span></header>
<section id="charts"></section>
<h2>Members</h2>
<table id="members"><thead><tr><th>member</th><th>state</th><th>ranks</th></tr></thead><tbody></tbody></table>
<script type="application/json" id="embedded">EMBEDDED_DATA</script>
<script>
"use strict";
// Each chart: a record key (or its alternatives) from the training records or the evaluations.
const CHARTS = [
  {keys: ["loss"], from: "train", title: "training loss"},
  {keys: ["accuracy", "test_accuracy", "root_accuracy"], from: "evaluations", title: "test accuracy"},
  {keys: ["lr"], from: "train", title: "learning rate"},
  {keys: ["images_per_second", "samples_per_second"], from: "train", title: "throughput (per second)"},
  {keys: ["allreduce_share"], from: "train", title: "allreduce share of the iteration"},
  {keys: ["density"], from: "train", title: "bytes sent / dense bytes (RedSync density)"},
];
const SVG = "http://www.w3.org/2000/svg";
function node(tag, attrs, text) {
  const e = tag === "svg" || ["polyline", "circle", "text", "rect"].includes(tag)
      ? document.createElementNS(SVG, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;  // text, never markup
  return e;
}
function format(v) {
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(2) : String(+v.toPrecision(4));
}
function points(records, keys) {
  const out = [];
  for (const r of records || []) {
    const key = keys.find(k => typeof r[k] === "number" && isFinite(r[k]));
    const x = typeof r.iteration === "number" ? r.iteration : out.length;
    if (key !== undefined) out.push([x, r[key]]);
  }
  return out;
}
function chart(spec, data) {
  const box = node("div", {class: "chart", "data-key": spec.keys[0]});
  const title = node("h3", {}, spec.title);
  box.appendChild(title);
  if (data.length === 0) { box.appendChild(node("p", {class: "none"}, "no data in this run")); return box; }
  title.appendChild(node("span", {class: "last"}, format(data[data.length - 1][1])));
  const W = 400, H = 160, L = 46, R = 8, T = 8, B = 18;
  let [x0, x1] = [data[0][0], data[data.length - 1][0]];
  let y0 = Math.min(...data.map(p => p[1])), y1 = Math.max(...data.map(p => p[1]));
  if (x1 === x0) x1 = x0 + 1;
  if (y1 === y0) { y0 -= Math.abs(y0) * 0.05 || 1; y1 += Math.abs(y1) * 0.05 || 1; }
  const sx = x => L + (x - x0) / (x1 - x0) * (W - L - R), sy = y => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  const svg = node("svg", {viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none"});
  svg.appendChild(node("rect", {class: "frame", x: L, y: T, width: W - L - R, height: H - T - B}));
  svg.appendChild(node("text", {class: "axis", x: 2, y: T + 8}, format(y1)));
  svg.appendChild(node("text", {class: "axis", x: 2, y: H - B}, format(y0)));
  svg.appendChild(node("text", {class: "axis", x: L, y: H - 4}, "iteration " + x0));
  svg.appendChild(node("text", {class: "axis", x: W - R - 90, y: H - 4}, "iteration " + data[data.length - 1][0]));
  const line = node("polyline", {class: "series", "data-key": spec.keys[0],
                                 "data-values": data.map(p => p[1]).join(" "),
                                 points: data.map(p => sx(p[0]).toFixed(1) + "," + sy(p[1]).toFixed(1)).join(" ")});
  svg.appendChild(line);
  if (data.length === 1) svg.appendChild(node("circle", {class: "series", cx: sx(data[0][0]), cy: sy(data[0][1]), r: 3}));
  box.appendChild(svg);
  return box;
}
function render(status, series) {
  document.getElementById("title").textContent = "taihu: " + (status.net || "training");
  document.title = "taihu: " + (status.net || "training");
  document.getElementById("state").textContent =
      `${status.state}, epoch ${status.epoch}, iteration ${status.iteration}`;
  const charts = document.getElementById("charts");
  charts.replaceChildren(...CHARTS.map(spec => chart(spec, points(series[spec.from], spec.keys))));
  const body = document.querySelector("#members tbody");
  body.replaceChildren(...(status.members || []).map(m => {
    const row = node("tr");
    for (const text of [m.name, m.state, (m.ranks || []).join(", ")]) row.appendChild(node("td", {}, text));
    return row;
  }));
}
async function poll() {
  try {
    const [status, series] = await Promise.all([fetch("status").then(r => r.json()), fetch("series").then(r => r.json())]);
    render(status, series);
  } catch (e) {
    document.getElementById("state").textContent = "the run's status endpoint does not answer (" + e + ")";
  }
  setTimeout(poll, 2000);
}
const data = document.getElementById("embedded").textContent.trim();
if (data) {
  const d = JSON.parse(data);
  render(d.status, d.series);
} else {
  poll();
}
</script>
</body></html>
)PAGE";

std::string with(const std::string& data) {
  std::string out = page;
  const std::string mark = "EMBEDDED_DATA";
  return out.replace(out.find(mark), mark.size(), data);
}

}  // namespace

std::string dashboard_page() { return with(""); }

std::string dashboard_page(const std::string& status_json, const std::string& series_json) {
  return with(embedded(status_json, series_json));
}

}  // namespace taihu
