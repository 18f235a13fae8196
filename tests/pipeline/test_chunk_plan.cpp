// The run's layout before it starts (pipeline/chunk_plan.h): chunk heights from the limits.
#include <gtest/gtest.h>

#include <string>

#include "io/input_error.h"
#include "pipeline/chunk_plan.h"

namespace tessera {
namespace {

TEST(ChunkPlan, WithoutLimitsOneChunkOnePass) {
    PlanRequest q;
    q.H = 5000, q.W = 3000, q.tile = 512, q.ranks = 2;
    const Plan p = make_plan(q, "in.tif");
    EXPECT_TRUE(p.in_core());
    EXPECT_EQ(p.passes, 1);
    EXPECT_EQ(p.grid.size(), 2);
    EXPECT_EQ(p.read_bytes, 5000LL * 3000 * 4);
}

TEST(ChunkPlan, HostLimitGivesChunksThatFitIt) {
    PlanRequest q;
    q.H = q.W = 4096, q.tile = 512;
    q.host_limit = int64_t{128} << 20;
    const Plan p = make_plan(q, "in.tif");
    const int64_t per = chunk_bytes_per_pixel(false, false).host;
    EXPECT_EQ(per, 36);
    // The largest tile-row count whose buffer (rows + halo) fits 3/4 of the limit.
    EXPECT_LE((p.tile_rows * 512 + 1) * 4096 * per, q.host_limit * 3 / 4);
    EXPECT_GT(((p.tile_rows + 1) * 512 + 1) * 4096 * per, q.host_limit * 3 / 4);
    EXPECT_EQ(p.chunks, (8 + p.tile_rows - 1) / p.tile_rows);
    EXPECT_GT(p.chunks, 1);
    EXPECT_EQ(p.passes, 3);
    EXPECT_LE(p.host_bytes, q.host_limit);
    q.cycles = true;  // k kept: 4 B more a pixel, never a taller chunk
    EXPECT_LE(make_plan(q, "in.tif").tile_rows, p.tile_rows);
}

TEST(ChunkPlan, StreamedRunsTakeAtLeastFourChunks) {
    // A NISAR-size frame on one GPU without limits: the device window's 2^32 pixels alone would
    // give 2 chunks (59 and 10 tile rows); a pass overlaps its reads and writes only across chunks.
    PlanRequest q;
    q.H = 69696, q.W = 70560, q.tile = 1024, q.cuda = true;
    const Plan p = make_plan(q, "in.tif");
    EXPECT_TRUE(p.streamed);
    EXPECT_EQ(p.tile_rows, 18);  // ceil(69 tile rows / 4)
    EXPECT_EQ(p.chunks, 4);
    q.chunk_rows = 59 * 1024;  // asked for: as asked
    EXPECT_EQ(make_plan(q, "in.tif").chunks, 2);
}

TEST(ChunkPlan, ScratchReplacesTheThirdReadAndCountsItsBytes) {
    PlanRequest q;
    q.H = 5000, q.W = 3000, q.tile = 512, q.chunk_rows = 1024, q.input_bytes_per_pixel = 8;
    q.keep_inputs = false;  // the inputs read in pass 2 (InputsKeptWhereTheyFit has the kept form)
    const Plan plain = make_plan(q, "in.tif");
    q.scratch = true;
    const Plan p = make_plan(q, "in.tif");
    ASSERT_EQ(p.chunks, 5);  // 1024, 1024, 1024, 1024, 904 rows
    EXPECT_EQ(p.tile_rows, plain.tile_rows);
    // Phase and flags over each chunk's rows plus the halo row below (all chunks but the last),
    // a union-find word over its own rows: counted here from the chunks, not from the plan's code.
    const int64_t expect = (5000 + 4) * 3000 * 5 + 5000LL * 3000 * 8;
    EXPECT_EQ(p.scratch_bytes, expect);
    EXPECT_EQ(p.scratch_total, expect);
    EXPECT_EQ(p.read_bytes, 2 * 5000LL * 3000 * 8 + expect);
    EXPECT_EQ(p.write_bytes, plain.write_bytes + expect);
    EXPECT_EQ(plain.scratch_bytes, 0);
    q.ranks = 2, q.rank_grid = "1x2";  // two windows of 1536 and 1464 columns (whole tiles), the first with a halo column
    const Plan two = make_plan(q, "in.tif");
    EXPECT_EQ(two.scratch_total, (5000 + 4) * (1537 + 1464) * 5 + 5000LL * 3000 * 8);
}

TEST(ChunkPlan, InputsKeptWhereTheyFit) {
    // No host limit: a streamed run (chunks of 1024 rows) keeps its inputs and reads them once.
    PlanRequest q;
    q.H = 5000, q.W = 3000, q.tile = 512, q.chunk_rows = 1024, q.input_bytes_per_pixel = 8;
    const Plan p = make_plan(q, "in.tif");
    ASSERT_EQ(p.chunks, 5);
    EXPECT_TRUE(p.inputs_kept);
    EXPECT_EQ(p.reads, 1);
    EXPECT_EQ(p.read_bytes, 5000LL * 3000 * 8);
    // Phase and flags over each chunk's buffer: its rows plus the halo row below, all chunks but the last.
    EXPECT_EQ(p.kept_bytes, (5000 + 4) * 3000 * 5);
    EXPECT_EQ(p.host_bytes, (1024 + 1) * 3000 * chunk_bytes_per_pixel(false, false).host + p.kept_bytes);
    q.keep_inputs = false;
    const Plan reread = make_plan(q, "in.tif");
    EXPECT_FALSE(reread.inputs_kept);
    EXPECT_EQ(reread.reads, 3);
    EXPECT_EQ(reread.read_bytes, 3 * 5000LL * 3000 * 8);
    EXPECT_EQ(reread.kept_bytes, 0);
    q.keep_inputs = true, q.scratch = true;  // pass 2 from the kept inputs, pass 3 from the scratch
    const Plan both = make_plan(q, "in.tif");
    EXPECT_TRUE(both.inputs_kept);
    EXPECT_EQ(both.read_bytes, 5000LL * 3000 * 8 + both.scratch_total);

    // A host limit: the chunks give up room for the inputs when these take at most half the
    // stages' share, and the whole stays within that share.
    PlanRequest h;
    h.H = h.W = 4096, h.tile = 512;
    const int64_t kept = (4096 + 7) * 4096 * 5;  // 8 chunks of one tile row at the smallest
    for (const int64_t limit : {int64_t{256} << 20, int64_t{384} << 20}) {
        h.host_limit = limit;
        const Plan k = make_plan(h, "in.tif");
        EXPECT_FALSE(k.in_core()) << limit;
        EXPECT_TRUE(k.inputs_kept) << limit;
        EXPECT_LE(k.host_bytes, limit * 3 / 4) << limit;
        EXPECT_LE(k.kept_bytes, kept) << limit;
        EXPECT_GE(k.kept_bytes, 4096LL * 4096 * 5) << limit;
        h.keep_inputs = false;
        const Plan r = make_plan(h, "in.tif");
        h.keep_inputs = true;
        EXPECT_FALSE(r.inputs_kept);
        EXPECT_GE(r.tile_rows, k.tile_rows) << limit;  // the kept inputs never give taller chunks
    }
    h.host_limit = int64_t{128} << 20;  // the inputs (84 MB) would take most of the share (96 MB)
    EXPECT_FALSE(make_plan(h, "in.tif").inputs_kept);
}

TEST(ChunkPlan, OutputPagesReadyEarlyWhereTheShareHoldsThemToo) {
    // The phase's 4 B a pixel beside what the plan holds (chunks and kept inputs) within the
    // stages' share (3/4 of the limit), counted here from the plan's host bytes.
    PlanRequest h;
    h.H = h.W = 4096, h.tile = 512;
    const int64_t phase = 4096LL * 4096 * 4;  // 64 MiB
    auto check = [&](bool want) {
        const Plan k = make_plan(h, "in.tif");
        ASSERT_TRUE(k.streamed);
        ASSERT_TRUE(k.inputs_kept);
        EXPECT_EQ(k.output_ready_early, k.host_bytes + phase <= h.host_limit * 3 / 4);
        EXPECT_EQ(k.output_ready_early, want);
    };
    h.host_limit = int64_t{256} << 20;  // the chunks grow to fill the share: no room left
    check(false);
    h.cuda = true, h.device_limit = int64_t{128} << 20, h.host_limit = int64_t{1} << 30;  // chunks the device's size
    check(true);
    h.writeback_from = phase;  // the kernel writes back past the phase's bytes only: still early
    check(true);
    h.writeback_from = phase - 1;  // past them: made in pass 3's windows, as their data comes
    EXPECT_FALSE(make_plan(h, "in.tif").output_ready_early);
    h.writeback_from = -1;
    h.cuda = false, h.device_limit = -1, h.host_limit = -1, h.chunk_rows = 1024;  // no limit: room for them
    EXPECT_TRUE(make_plan(h, "in.tif").output_ready_early);
    h.keep_inputs = false;  // a run that rereads its inputs has no room to spare
    EXPECT_FALSE(make_plan(h, "in.tif").output_ready_early);
    h.keep_inputs = true, h.chunk_rows = 0;  // in one piece: not a streamed run's plan
    EXPECT_FALSE(make_plan(h, "in.tif").output_ready_early);
}

TEST(ChunkPlan, DeviceLimitAndTheDeviceWindowBound) {
    PlanRequest q;
    q.H = 69696, q.W = 70560, q.tile = 512, q.cuda = true;
    const Plan p = make_plan(q, "nisar.tif");
    EXPECT_GT(p.chunks, 1);  // 4.9 Gpx: no cuda::Region holds it in one window
    EXPECT_LT((p.tile_rows * 512 + 1) * 70560, kDeviceWindowPixels);
    q.device_limit = int64_t{8} << 30;
    const Plan small = make_plan(q, "nisar.tif");
    EXPECT_LE(small.device_bytes, q.device_limit);
    EXPECT_GT(small.chunks, p.chunks);
}

TEST(ChunkPlan, TooSmallALimitIsOneLineNamingIt) {
    PlanRequest q;
    q.H = q.W = 4096, q.tile = 512;
    q.host_limit = int64_t{1} << 20;
    try {
        make_plan(q, "in.tif");
        FAIL() << "no error";
    } catch (const InputError& e) {
        const std::string m = e.what();
        EXPECT_EQ(m.rfind("in.tif: --memory-limit 1.0 MiB holds no row of tiles", 0), 0u) << m;
        EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
}

TEST(ChunkPlan, ParseBytes) {
    EXPECT_EQ(parse_bytes("4G", "--memory-limit"), int64_t{4} << 30);
    EXPECT_EQ(parse_bytes("512M", "--memory-limit"), int64_t{512} << 20);
    EXPECT_EQ(parse_bytes("1.5T", "--memory-limit"), int64_t{3} << 39);
    EXPECT_EQ(parse_bytes("1000000", "--memory-limit"), 1000000);
    for (const char* bad : {"", "abc", "0", "-4G", "4Q", "1e30"}) EXPECT_THROW(parse_bytes(bad, "--memory-limit"), InputError) << bad;
    EXPECT_EQ(format_bytes(int64_t{3} << 30), "3.0 GiB");
}

}  // namespace
}  // namespace tessera
