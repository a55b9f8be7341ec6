/* Compiled by installed.sh against the installed header: a process
 * handler's signature, as an application outside this repository writes it. */
#include <cudaoverlap/cudaoverlap.h>

int handler(void* element, const CudaOverlapImage* in, const CudaOverlapImage* out, void* stream,
            void* user_data);

int handler(void* element, const CudaOverlapImage* in, const CudaOverlapImage* out, void* stream,
            void* user_data) {
  (void)element;
  (void)stream;
  (void)user_data;
  return in->width == out->width && in->n_planes <= 4;
}
