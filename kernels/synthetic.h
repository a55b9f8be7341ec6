// The `synthetic` kernel, for measuring overlap: a copy followed by a fixed
// busy time on the GPU (KernelParams::synthetic_us, timed on the GPU's own
// global timer), so compute can be set to match the transfer time of a
// frame. The CPU reference is the copy; the cpu backend does not emulate the
// busy time.
#pragma once

#include <cstdint>

#include "video_format.h"

struct CUstream_st;

namespace cudaoverlap {

void synthetic_reference(const ImageRef& in, const ImageRef& out);
void synthetic_cuda(const ImageRef& in, const ImageRef& out, uint32_t busy_us,
                    bool inject_launch_failure, CUstream_st* stream);

}  // namespace cudaoverlap
