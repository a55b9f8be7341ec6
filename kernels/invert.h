// The `invert` kernel: 255 - value on every colour, luma and chroma sample;
// alpha and padding bytes of packed formats are copied unchanged.
#pragma once

#include "video_format.h"

struct CUstream_st;

namespace cudaoverlap {

void invert_reference(const ImageRef& in, const ImageRef& out);
void invert_cuda(const ImageRef& in, const ImageRef& out, bool inject_launch_failure,
                 CUstream_st* stream);

}  // namespace cudaoverlap
