// The GPU tests' guard: without a visible CUDA device (CI, this build machine) a test skips and
// says why instead of failing.
#pragma once
#include <gtest/gtest.h>

#include "kernels/cuda/region.h"

#define SKIP_WITHOUT_GPU()                                                                                        \
    do {                                                                                                          \
        if (::tessera::cuda::device_count() == 0)                                                                 \
            GTEST_SKIP() << "no CUDA device visible: the CUDA backend tests need a GPU (cudaGetDeviceCount found " \
                            "none or no driver)";                                                                 \
    } while (0)
