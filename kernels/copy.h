// The `copy` kernel: output equals input byte for byte, plane by plane.
#pragma once

#include "video_format.h"

struct CUstream_st;

namespace cudaoverlap {

void copy_reference(const ImageRef& in, const ImageRef& out);
void copy_cuda(const ImageRef& in, const ImageRef& out, bool inject_launch_failure,
               CUstream_st* stream);

}  // namespace cudaoverlap
