/* The GPU halves of the process example (process_thrust.cu,
 * process_kernel.cu), callable from C: each enqueues its work on `stream`
 * and returns 0, or prints why not and returns -1. */
#ifndef PROCESS_EXAMPLE_H
#define PROCESS_EXAMPLE_H

#include <cudaoverlap/cudaoverlap.h>

#ifdef __cplusplus
extern "C" {
#endif

int example_have_cuda_device(void);
/* 255 - v on every byte of every plane (Thrust, on the stream). */
int example_invert_with_thrust(const CudaOverlapImage* in, const CudaOverlapImage* out,
                               void* stream);
/* Each row of an RGBA frame mirrored left to right (a kernel of its own). */
int example_mirror_with_kernel(const CudaOverlapImage* in, const CudaOverlapImage* out,
                               void* stream);

#ifdef __cplusplus
}
#endif

#endif
