// The CF grid of a result (io/cf_grid.h) from the georeferencing of its input.
#include <gtest/gtest.h>

#include <variant>

#include "io/cf_grid.h"
#include "io/geotiff_writer.h"

namespace tessera {
namespace {

std::string text_attribute(const std::vector<Attribute>& attrs, const std::string& name) {
    for (const Attribute& a : attrs)
        if (a.name == name) return std::get<std::string>(a.value);
    return "<none>";
}

TEST(CfGrid, ProjectedCrsGivesXYAtPixelCentresAndAGridMapping) {
    const GeoRef geo{true, {350000.0, 30.0, 0.0, 3900000.0, 0.0, -30.0}, epsg_wkt(32611)};
    const CfGrid g = cf_grid(geo, 3, 4);
    EXPECT_EQ(g.y.name, "y");
    EXPECT_EQ(g.x.name, "x");
    EXPECT_EQ(g.x.values, (std::vector<double>{350015.0, 350045.0, 350075.0, 350105.0}));
    EXPECT_EQ(g.y.values, (std::vector<double>{3899985.0, 3899955.0, 3899925.0}));
    EXPECT_EQ(text_attribute(g.x.attributes, "standard_name"), "projection_x_coordinate");
    EXPECT_EQ(text_attribute(g.y.attributes, "units"), "m");
    EXPECT_EQ(g.grid_mapping, "spatial_ref");
    EXPECT_EQ(text_attribute(g.grid_mapping_attributes, "crs_wkt"), geo.projection_wkt);
    EXPECT_EQ(text_attribute(g.grid_mapping_attributes, "GeoTransform"), "350000 30 0 3900000 0 -30");
}

TEST(CfGrid, GeographicCrsGivesLatLonInDegrees) {
    const GeoRef geo{true, {-118.5, 0.001, 0.0, 35.3, 0.0, -0.001}, epsg_wkt(4326)};
    const CfGrid g = cf_grid(geo, 2, 2);
    EXPECT_EQ(g.y.name, "lat");
    EXPECT_EQ(g.x.name, "lon");
    EXPECT_EQ(text_attribute(g.y.attributes, "units"), "degrees_north");
    EXPECT_EQ(text_attribute(g.x.attributes, "units"), "degrees_east");
    EXPECT_DOUBLE_EQ(g.x.values[1], -118.5 + 0.0015);
    EXPECT_DOUBLE_EQ(g.y.values[0], 35.3 - 0.0005);
}

TEST(CfGrid, ProjectedCrsInFeetSaysSo) {
    const CfGrid g = cf_grid(GeoRef{true, {0, 100, 0, 0, 0, -100}, epsg_wkt(2227)}, 2, 2);  // California III, US ft
    EXPECT_NE(text_attribute(g.x.attributes, "units"), "m");
}

TEST(CfGrid, NoGeoreferencingGivesPixelCentresAndNoGridMapping) {
    const CfGrid g = cf_grid(GeoRef{}, 2, 3);
    EXPECT_EQ(g.y.name, "y");
    EXPECT_EQ(g.y.values, (std::vector<double>{0.5, 1.5}));
    EXPECT_EQ(g.x.values, (std::vector<double>{0.5, 1.5, 2.5}));
    EXPECT_TRUE(g.grid_mapping.empty());
}

TEST(CfGrid, RotatedGeotransformKeepsPixelCentresAndGdalsGeoTransform) {
    const GeoRef geo{true, {1000.0, 10.0, 2.0, 5000.0, 2.0, -10.0}, epsg_wkt(32611)};
    const CfGrid g = cf_grid(geo, 2, 2);
    EXPECT_EQ(g.x.values, (std::vector<double>{0.5, 1.5}));
    EXPECT_EQ(text_attribute(g.grid_mapping_attributes, "GeoTransform"), "1000 10 2 5000 2 -10");
}

TEST(CfGrid, GeoreferencingOfRootAttributes) {
    const GeoRef geo = georef_of_attributes({{"geotransform", std::vector<double>{1, 2, 0, 4, 0, -6}},
                                             {"has_geotransform", int64_t{1}},
                                             {"projection", std::string("WKT")}});
    EXPECT_TRUE(geo.has_geotransform);
    EXPECT_EQ(geo.geotransform, (std::array<double, 6>{1, 2, 0, 4, 0, -6}));
    EXPECT_EQ(geo.projection_wkt, "WKT");
    EXPECT_FALSE(georef_of_attributes({{"geotransform", std::vector<double>{0, 1, 0, 0, 0, 1}},
                                       {"has_geotransform", int64_t{0}}})
                     .has_geotransform);
}

TEST(GeoTiffOverviews, HalveUntilTheLongerSideIsAtMost256) {
    EXPECT_TRUE(overview_factors(256, 200).empty());
    EXPECT_EQ(overview_factors(300, 100), (std::vector<int>{2}));
    EXPECT_EQ(overview_factors(100, 2048), (std::vector<int>{2, 4, 8}));
}

}  // namespace
}  // namespace tessera
