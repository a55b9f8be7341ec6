/* cudaoverlap's application interface: what a handler of the element's
 * `process` signal receives (kernel=application).
 *
 *   gboolean process (GstElement *cudaoverlap, const CudaOverlapImage *in,
 *                     const CudaOverlapImage *out, gpointer stream,
 *                     gpointer user_data);
 *
 * With kernel=application the element emits `process` for every frame where
 * a built-in kernel would run: after the frame's upload, before its
 * download, with the upload of the next frame and the download of the
 * previous one running meanwhile. The handler puts its work on `stream`
 * (a cudaStream_t: the element's compute stream) and returns TRUE; the
 * element's events order that work after the upload of `in` and before the
 * download of `out`, as they order the built-in kernels.
 *
 * Rules:
 * - Enqueue, do not wait: no cudaDeviceSynchronize, cudaStreamSynchronize
 *   or blocking copy, nothing on the default stream (each serialises the
 *   GPU and undoes the overlap).
 * - Allocate once (at start, or on the first frame), not per frame: device
 *   allocation and freeing synchronise the device too.
 * - It is called from the thread that submits frames (the streaming thread:
 *   one frame at a time, in order) on the cuda backend. On the cpu backend
 *   the planes are host memory, `stream` is NULL, and the work is done on
 *   the calling thread (the backend's compute thread) before returning.
 * - The planes of `in` are read-only; `out` has the same format and size
 *   and must be written whole. Both are valid for this call only.
 * - Return FALSE to fail the frame: the element then posts an error.
 *
 * The header includes nothing but <stddef.h>, for C and C++ alike.
 */
#ifndef CUDAOVERLAP_CUDAOVERLAP_H
#define CUDAOVERLAP_CUDAOVERLAP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One frame's planes, in device memory on the cuda backend. */
typedef struct {
  int format;             /* a GstVideoFormat (GST_VIDEO_FORMAT_RGBA, ...) */
  int width;              /* pixels */
  int height;             /* rows */
  int n_planes;           /* as GstVideoInfo counts them */
  unsigned char* data[4]; /* first byte of each plane; NULL past n_planes */
  size_t stride[4];       /* bytes from one row of a plane to the next */
  size_t row_bytes[4];    /* bytes of picture in one row of each plane */
  int rows[4];            /* rows of each plane (chroma planes may have fewer) */
} CudaOverlapImage;

#ifdef __cplusplus
}
#endif

#endif /* CUDAOVERLAP_CUDAOVERLAP_H */
