#include "io/cf_grid.h"

#include <ogr_spatialref.h>

#include <cstdio>
#include <variant>

#include "io/gdal_session.h"

namespace tessera {

namespace {

// GDAL's text form of a geotransform ("%.17g" six times): the netCDF driver and rioxarray read it.
std::string geotransform_text(const std::array<double, 6>& gt) {
    std::string out;
    char buf[32];
    for (double v : gt) {
        std::snprintf(buf, sizeof buf, "%.17g", v);
        out += (out.empty() ? "" : " ") + std::string(buf);
    }
    return out;
}

// What a reader needs of the CRS: geographic (lat/lon axes) or not, and the linear unit.
struct CrsKind {
    bool known = false, geographic = false;
    std::string linear_unit = "m";
};

CrsKind crs_kind(const std::string& wkt) {
    CrsKind k;
    if (wkt.empty()) return k;
    register_gdal_once();
    QuietGdal quiet;
    OGRSpatialReference srs;
    if (srs.importFromWkt(wkt.c_str()) != OGRERR_NONE) return k;
    k.known = true;
    k.geographic = srs.IsGeographic();
    const char* unit = nullptr;
    const double to_metre = srs.GetLinearUnits(&unit);
    if (to_metre != 1.0 && unit != nullptr) k.linear_unit = unit;
    return k;
}

CfAxis axis(const std::string& name, int64_t n, double origin, double step, const std::vector<Attribute>& attrs) {
    CfAxis a{name, std::vector<double>(static_cast<size_t>(n)), attrs};
    for (int64_t i = 0; i < n; ++i) a.values[static_cast<size_t>(i)] = origin + step * (static_cast<double>(i) + 0.5);
    return a;
}

}  // namespace

CfGrid cf_grid(const GeoRef& geo, int64_t rows, int64_t cols) {
    const auto& gt = geo.geotransform;
    // A rotated geotransform has no 1-D coordinates: pixel centres, GDAL's GeoTransform keeps it.
    const bool north_up = geo.has_geotransform && gt[2] == 0.0 && gt[4] == 0.0;
    const CrsKind crs = crs_kind(geo.projection_wkt);
    CfGrid g;
    if (!north_up) {
        // axis: GDAL's netCDF driver then knows them as the raster's axes (no warning).
        g.y = axis("y", rows, 0.0, 1.0,
                   {{"long_name", std::string("row (pixel centre)")}, {"units", std::string("1")}, {"axis", std::string("Y")}});
        g.x = axis("x", cols, 0.0, 1.0,
                   {{"long_name", std::string("column (pixel centre)")}, {"units", std::string("1")},
                    {"axis", std::string("X")}});
    } else if (crs.geographic) {
        g.y = axis("lat", rows, gt[3], gt[5],
                   {{"standard_name", std::string("latitude")}, {"long_name", std::string("latitude")},
                    {"units", std::string("degrees_north")}, {"axis", std::string("Y")}});
        g.x = axis("lon", cols, gt[0], gt[1],
                   {{"standard_name", std::string("longitude")}, {"long_name", std::string("longitude")},
                    {"units", std::string("degrees_east")}, {"axis", std::string("X")}});
    } else {
        g.y = axis("y", rows, gt[3], gt[5],
                   {{"standard_name", std::string("projection_y_coordinate")},
                    {"long_name", std::string("y coordinate of projection")}, {"units", crs.linear_unit},
                    {"axis", std::string("Y")}});
        g.x = axis("x", cols, gt[0], gt[1],
                   {{"standard_name", std::string("projection_x_coordinate")},
                    {"long_name", std::string("x coordinate of projection")}, {"units", crs.linear_unit},
                    {"axis", std::string("X")}});
    }
    if (crs.known) {
        g.grid_mapping = "spatial_ref";
        g.grid_mapping_attributes = {{"crs_wkt", geo.projection_wkt}, {"spatial_ref", geo.projection_wkt}};
        if (geo.has_geotransform) g.grid_mapping_attributes.push_back({"GeoTransform", geotransform_text(gt)});
    }
    return g;
}

GeoRef georef_of_attributes(const std::vector<Attribute>& root_attributes) {
    GeoRef geo;
    bool has = false, has_flag = false;
    for (const Attribute& a : root_attributes) {
        if (a.name == "geotransform") {
            if (const auto* v = std::get_if<std::vector<double>>(&a.value); v && v->size() == 6) {
                std::copy(v->begin(), v->end(), geo.geotransform.begin());
                has = true;
            }
        } else if (a.name == "has_geotransform") {
            if (const auto* v = std::get_if<int64_t>(&a.value)) geo.has_geotransform = *v != 0, has_flag = true;
        } else if (a.name == "projection") {
            if (const auto* v = std::get_if<std::string>(&a.value)) geo.projection_wkt = *v;
        }
    }
    if (!has_flag) geo.has_geotransform = has;
    geo.has_geotransform = geo.has_geotransform && has;
    return geo;
}

}  // namespace tessera
