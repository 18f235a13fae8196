// --reference ROW COL (MintPy's REF_Y/REF_X convention): u = 0 at the reference pixel, the same
// constant subtracted everywhere, k = 0 there; the attributes name it. Checked from the files.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/cli.h"

namespace tessera {
namespace {

using testing::read_dataset;
using testing::run_tessera;

using testing::root_attribute;

TEST(Reference, UnwrappedPhaseIsZeroThereAndShiftedByOneConstant) {
    testing::TempDir dir("reference");
    ASSERT_EQ(run_tessera("synth --case topo --size 160x150 --seed 4 " + dir.path().string()).exit_code, 0);
    const std::string in = dir / "topo_wrapped.tif", plain = dir / "plain.h5", ref = dir / "ref.h5";
    ASSERT_EQ(run_tessera("unwrap -q --tile-size 32 --save-cycles " + in + " " + plain).exit_code, 0);
    const int64_t R = 97, C = 41, W = 150;
    const auto r = run_tessera("unwrap -q --tile-size 32 --save-cycles --reference 97 41 " + in + " " + ref);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto u0 = read_dataset<float>(plain, "unwrapped_phase"), u1 = read_dataset<float>(ref, "unwrapped_phase");
    const auto k1 = read_dataset<int32_t>(ref, "cycles"), k0 = read_dataset<int32_t>(plain, "cycles");
    const auto l1 = read_dataset<uint32_t>(ref, "connected_components");
    const size_t at = static_cast<size_t>(R * W + C);
    EXPECT_EQ(u1[at], 0.0f);
    EXPECT_EQ(k1[at], 0);
    EXPECT_EQ(root_attribute<int64_t>(ref, "REF_Y", H5T_NATIVE_INT64), R);
    EXPECT_EQ(root_attribute<int64_t>(ref, "REF_X", H5T_NATIVE_INT64), C);
    EXPECT_EQ(root_attribute<int64_t>(plain, "REF_Y", H5T_NATIVE_INT64), -1);
    const double shift = root_attribute<double>(ref, "reference_phase", H5T_NATIVE_DOUBLE);
    // Within the reference's component the differences between pixels are the plain run's.
    int64_t same_component = 0;
    for (size_t i = 0; i < u1.size(); ++i) {
        if (l1[i] != l1[at] || l1[at] == 0) continue;
        ++same_component;
        ASSERT_NEAR(static_cast<double>(u1[i]) - u1[at], static_cast<double>(u0[i]) - u0[at], 1e-3) << i;
        ASSERT_NEAR(static_cast<double>(u1[i]) + shift, u0[i] + 2 * M_PI * (k1[i] - k0[i]),
                    1e-3) << i;
        if (same_component > 200) break;
    }
    EXPECT_GT(same_component, 100);
    // NaN stays NaN where the plain run has it.
    for (size_t i = 0; i < u1.size(); ++i) ASSERT_EQ(std::isnan(u0[i]), std::isnan(u1[i])) << i;
}

}  // namespace
}  // namespace tessera
