// One screen per result file for `tessera info` (app/result_info.h).
#include "app/result_info.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "io/hdf5_writer.h"

namespace tessera {

namespace {

std::string percent(int64_t part, int64_t whole) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f %%", whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0);
    return b;
}

// "name = value" items packed into lines of at most `width` characters; long values (the
// projection's WKT, the algorithm's description) cut, so that the whole fits one screen.
std::string packed(const std::vector<std::pair<std::string, std::string>>& items, size_t width) {
    constexpr size_t kMaxValue = 40;
    std::string out, line;
    for (const auto& [name, value] : items) {
        std::string v = value.empty() ? "\"\"" : value;
        if (v.size() > kMaxValue) v = v.substr(0, kMaxValue - 3) + "...";
        const std::string item = name + " = " + v;
        if (!line.empty() && line.size() + 3 + item.size() > width) out += "  " + line + "\n", line.clear();
        line += (line.empty() ? "" : "   ") + item;
    }
    if (!line.empty()) out += "  " + line + "\n";
    return out;
}

}  // namespace

std::string result_info(const std::string& path, const std::function<void()>& progress) {
    const ResultSummary s = summarize_result(path, 5, 100, progress);
    std::string out = "datasets:";
    for (const std::string& d : s.datasets) out += (&d == &s.datasets.front() ? " " : ", ") + d;
    out += "\nlabelled " + std::to_string(s.labelled) + " of " + std::to_string(s.finite) +
           " pixels with a finite unwrapped phase (" + percent(s.labelled, s.finite) + ") in " +
           std::to_string(s.components) + " component" + (s.components == 1 ? "" : "s");
    for (const auto& [name, value] : s.attributes)  // below --min-coherence: valid input, but no phase
        if (name == "valid_pixels") out += "; " + value + " valid input pixels";
    out += "\n";
    if (!s.largest.empty()) {
        out += "largest components (label: pixels, share of the labelled):";
        for (const auto& [label, pixels] : s.largest)
            out += " " + std::to_string(label) + ": " + std::to_string(pixels) + " (" + percent(pixels, s.labelled) + ")";
        out += s.components > static_cast<int64_t>(s.largest.size()) ? ", ...\n" : "\n";
    }
    // The root attributes in groups (README "Output (HDF5)"); any others after them.
    static const std::vector<std::pair<const char*, std::vector<std::string>>> groups = {
        {"run", {"software", "input", "band", "coherence", "coherence_band", "mask", "mask_band", "tile_size",
                 "cut_radius", "far_reach", "cycle_correction", "guide_window", "guide_auto", "min_component_size", "min_coherence", "REF_Y", "REF_X", "reference_phase",
                 "compress_phase", "backend", "ranks", "rank_grid", "threads_per_rank"}},
        {"counts", {"rows", "cols", "valid_pixels", "tiles", "residues", "pair_cuts", "ground_cuts", "lake_joins", "lake_steps",
                    "census_plaquettes", "census_residues", "shared_residues", "components", "labelled_components", "largest_component", "conflicts",
                    "bytes_sent_max_rank", "bytes_sent_total"}},
        {"georeferencing", {"geotransform", "has_geotransform", "projection", "nodata"}},
    };
    std::vector<bool> shown(s.attributes.size(), false);
    auto section = [&](const std::string& title, const std::function<bool(const std::string&)>& wanted,
                       const std::vector<std::string>& order) {
        std::vector<std::pair<std::string, std::string>> items;
        for (const std::string& name : order)
            for (size_t i = 0; i < s.attributes.size(); ++i)
                if (!shown[i] && s.attributes[i].first == name) items.push_back(s.attributes[i]), shown[i] = true;
        const size_t listed = items.size();
        for (size_t i = 0; i < s.attributes.size(); ++i)
            if (!shown[i] && wanted(s.attributes[i].first)) items.push_back(s.attributes[i]), shown[i] = true;
        std::sort(items.begin() + static_cast<std::ptrdiff_t>(listed), items.end());  // stored order is a hash's
        if (!items.empty()) out += title + ":\n" + packed(items, 110);
    };
    for (const auto& [title, names] : groups) section(title, [](const std::string&) { return false; }, names);
    section("times (s)", [](const std::string& n) { return n.rfind("time_", 0) == 0; }, {});
    section("other attributes", [](const std::string&) { return true; }, {});
    if (s.more_attributes > 0) out += "  ... and " + std::to_string(s.more_attributes) + " more attributes\n";
    return out;
}

}  // namespace tessera
