// The dashboard's series (core/train/run_series.hpp): bounded however long the
// run, evenly thinned, evaluations all kept; and the page embeds them safely.

#include <doctest/doctest.h>

#include <regex>
#include <string>

#include "core/train/dashboard_page.hpp"
#include "core/train/run_series.hpp"

using namespace taihu;

namespace {

MetricRecord train(int64_t iteration) {
  return {{"type", std::string("train")}, {"iteration", iteration}, {"loss", 1.0 / static_cast<double>(iteration)}};
}

std::vector<int64_t> iterations(const std::string& json, const std::string& part) {
  const auto from = json.find("\"" + part + "\"");
  const auto to = json.find(']', from);
  std::vector<int64_t> out;
  const std::string body = json.substr(from, to - from);
  const std::regex number("\"iteration\": ([0-9]+)");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), number); it != std::sregex_iterator(); ++it)
    out.push_back(std::stoll((*it)[1]));
  return out;
}

}  // namespace

TEST_SUITE("dashboard") {
  TEST_CASE("run series: at most `capacity` training records, evenly thinned, evaluations all kept") {
    RunSeries series(8);
    for (int64_t i = 1; i <= 5; ++i) series.add(train(i));
    CHECK(iterations(series.json(), "train") == std::vector<int64_t>{1, 2, 3, 4, 5});
    for (int64_t i = 6; i <= 100; ++i) series.add(train(i));
    series.add({{"type", std::string("test")}, {"iteration", int64_t{100}}, {"accuracy", 0.5}});
    const auto kept = iterations(series.json(), "train");
    CHECK(kept.size() <= 8);
    CHECK(kept.size() >= 4);
    REQUIRE(!kept.empty());
    CHECK(kept.front() == 1);
    for (std::size_t k = 1; k < kept.size(); ++k) CHECK(kept[k] - kept[k - 1] == kept[1] - kept[0]);  // even steps
    CHECK(iterations(series.json(), "evaluations") == std::vector<int64_t>{100});
  }

  TEST_CASE("dashboard page: self-contained, live or with the data inside, markup in names escaped") {
    const std::string live = dashboard_page();
    CHECK(live.find("<script src") == std::string::npos);  // nothing from elsewhere
    CHECK(live.find("<link") == std::string::npos);
    CHECK(live.find("fetch(\"series\")") != std::string::npos);
    const std::string saved =
        dashboard_page(R"({"state": "finished", "net": "</script><img src=x>", "members": []})", R"({"train": []})");
    CHECK(saved.find("</script><img") == std::string::npos);
    CHECK(saved.find("\\u003c/script>\\u003cimg src=x>") != std::string::npos);
  }
}
