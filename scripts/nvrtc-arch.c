// A stand-in for libnvrtc, for the benchmarks' GPU peers only: GStreamer
// 1.22's CUDA converters (cudaconvert, cudascale, cudaconvertscale) compile
// their kernels with --gpu-architecture=compute_52 (compute_30 before CUDA
// 11), which CUDA 13's NVRTC refuses, so nvcodec leaves them out. This
// library forwards every call nvcodec makes to the toolkit's NVRTC and
// raises an architecture below compute_75, the oldest CUDA 13 compiles
// for, to compute_75; the driver compiles that PTX for the GPU at hand.
//
//   gcc -shared -fPIC -O2 -o libnvrtc-arch.so scripts/nvrtc-arch.c -ldl
//   GST_CUDA_NVRTC_LIBNAME=$PWD/libnvrtc-arch.so gst-inspect-1.0 cudaconvertscale
//
// CUDAOVERLAP_NVRTC names the NVRTC it forwards to (default
// libnvrtc.so.13, as the dynamic loader finds it).
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvrtcResult;
typedef struct _nvrtcProgram* nvrtcProgram;

enum { kNvrtcInternalError = 11, kOldest = 75 };

static void* forward(const char* name) {
  static void* library;
  if (!library) {
    const char* path = getenv("CUDAOVERLAP_NVRTC");
    library = dlopen(path ? path : "libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!library) fprintf(stderr, "nvrtc-arch: %s\n", dlerror());
  }
  return library ? dlsym(library, name) : NULL;
}

#define FORWARD(name, params, args)                          \
  nvrtcResult name params {                                  \
    nvrtcResult(*real) params = (nvrtcResult(*) params)forward(#name); \
    return real ? real args : kNvrtcInternalError;           \
  }

FORWARD(nvrtcCreateProgram,
        (nvrtcProgram * program, const char* source, const char* name, int headers,
         const char* const* header_sources, const char* const* header_names),
        (program, source, name, headers, header_sources, header_names))
FORWARD(nvrtcDestroyProgram, (nvrtcProgram * program), (program))
FORWARD(nvrtcGetPTXSize, (nvrtcProgram program, size_t* size), (program, size))
FORWARD(nvrtcGetPTX, (nvrtcProgram program, char* ptx), (program, ptx))
FORWARD(nvrtcGetProgramLogSize, (nvrtcProgram program, size_t* size), (program, size))
FORWARD(nvrtcGetProgramLog, (nvrtcProgram program, char* log), (program, log))

nvrtcResult nvrtcCompileProgram(nvrtcProgram program, int count, const char* const* options) {
  static const char kPrefix[] = "--gpu-architecture=compute_";
  static char raised[sizeof kPrefix + 8];
  nvrtcResult (*real)(nvrtcProgram, int, const char* const*) =
      (nvrtcResult(*)(nvrtcProgram, int, const char* const*))forward("nvrtcCompileProgram");
  if (!real) return kNvrtcInternalError;
  const char** changed = malloc(sizeof *changed * (count > 0 ? count : 1));
  if (!changed) return kNvrtcInternalError;
  snprintf(raised, sizeof raised, "%s%d", kPrefix, kOldest);
  for (int i = 0; i < count; ++i) {
    const char* o = options[i];
    const int old = strncmp(o, kPrefix, sizeof kPrefix - 1) == 0 &&
                    atoi(o + sizeof kPrefix - 1) < kOldest;
    changed[i] = old ? raised : o;
  }
  const nvrtcResult result = real(program, count, changed);
  free(changed);
  return result;
}
