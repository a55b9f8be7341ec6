// kernel=custom's CUDA half: the program compiled for the device (NVRTC,
// runtime_compiler.h), loaded as a CUDA library, and launched with the
// frames and parameters laid out as <cudaoverlap/pixel.cuh> declares them.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/chain/fused_pixels.h"
#include "kernels/cuda_check.h"
#include "kernels/custom/custom.h"
#include "kernels/custom/runtime_compiler.h"

namespace cudaoverlap {

// co::FrameData, as the kernel receives it.
struct CustomFrameData {
  int width;
  int height;
  unsigned char* plane[4];
  unsigned long long stride[4];
  CustomColorimetry colorimetry;
};
static_assert(offsetof(CustomFrameData, plane) == 8 && offsetof(CustomFrameData, stride) == 40 &&
                  offsetof(CustomFrameData, colorimetry) == 72 && sizeof(CustomFrameData) == 96,
              "co::FrameData's layout");

namespace {

// A loaded program; unloaded when the last kernel made from it goes.
class CudaLibrary {
 public:
  explicit CudaLibrary(const std::vector<char>& image) {
    CO_CUDA_CHECK(
        cudaLibraryLoadData(&library_, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  }
  ~CudaLibrary() { CO_CUDA_CHECK_NOEXCEPT(cudaLibraryUnload(library_)); }
  CudaLibrary(const CudaLibrary&) = delete;
  CudaLibrary& operator=(const CudaLibrary&) = delete;

  cudaKernel_t kernel(const std::string& symbol) const {
    cudaKernel_t kernel = nullptr;
    CO_CUDA_CHECK(cudaLibraryGetKernel(&kernel, library_, symbol.c_str()));
    return kernel;
  }

 private:
  cudaLibrary_t library_ = nullptr;
};

int device_arch(int device) {
  if (device < 0) CO_CUDA_CHECK(cudaGetDevice(&device));
  int major = 0, minor = 0;
  CO_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CO_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

CustomFrameData frame_data(const ImageRef& image, const CustomColorimetry& colorimetry) {
  CustomFrameData f{};
  f.width = image.width;
  f.height = image.height;
  for (int p = 0; p < kMaxPlanes; ++p) {
    f.plane[p] = image.planes[p].data;
    f.stride[p] = image.planes[p].stride;
  }
  f.colorimetry = colorimetry;
  return f;
}

// The Params struct's bytes: each field at its C alignment, in order.
std::vector<uint64_t> pack_params(const std::vector<CustomParam>& params) {
  std::vector<unsigned char> bytes;
  for (const CustomParam& p : params) {
    size_t size = 4;
    if (p.type == CustomParam::Type::kDouble) size = 8;
    if (p.type == CustomParam::Type::kBool) size = 1;
    bytes.resize((bytes.size() + size - 1) / size * size + size);
    unsigned char* at = bytes.data() + bytes.size() - size;
    switch (p.type) {
      case CustomParam::Type::kInt: {
        const int32_t v = static_cast<int32_t>(p.value);
        std::memcpy(at, &v, size);
        break;
      }
      case CustomParam::Type::kUInt: {
        const uint32_t v = static_cast<uint32_t>(p.value);
        std::memcpy(at, &v, size);
        break;
      }
      case CustomParam::Type::kFloat: {
        const float v = static_cast<float>(p.value);
        std::memcpy(at, &v, size);
        break;
      }
      case CustomParam::Type::kDouble:
        std::memcpy(at, &p.value, size);
        break;
      case CustomParam::Type::kBool:
        *at = p.value != 0 ? 1 : 0;
        break;
    }
  }
  std::vector<uint64_t> words((bytes.size() + 7) / 8 + 1, 0);  // an empty struct is 1 byte
  if (!bytes.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

}  // namespace

class CustomKernel {
 public:
  std::shared_ptr<const CudaLibrary> library;
  cudaKernel_t kernel = nullptr;
  std::vector<uint64_t> params;  // the Params struct's bytes
  dim3 block;
  // Pixels one block covers across and down: the grid covers the picture.
  long long block_pixels_x = 0;
  long long block_pixels_y = 0;
};

std::shared_ptr<const CustomKernel> build_custom_kernel(const CustomKernelParams& params,
                                                        PixelFormat format, int in_bytes,
                                                        int out_bytes) {
  const int arch = device_arch(params.device);
  // The library loads into the device current on this thread (it may be
  // the session's compile thread): the one the program is made for.
  if (params.device >= 0) CO_CUDA_CHECK(cudaSetDevice(params.device));
  const ProgramSource source = in_bytes > 0
                                   ? fused_custom_program(params, format, in_bytes, out_bytes, arch)
                                   : custom_program(params, format, arch);
  const std::string cache = kernel_cache_dir();
  auto compile = [&] {
    try {
      return compile_program(source, cache);
    } catch (const Error& e) {
      throw Error("kernel=custom: " + params.source_name + " did not compile for compute " +
                  std::to_string(arch / 10) + "." + std::to_string(arch % 10) + " (" +
                  format_info(format).name + "):\n" + e.what());
    }
  };
  CompiledProgram program = compile();
  std::shared_ptr<const CudaLibrary> library;
  try {
    library = std::make_shared<const CudaLibrary>(program.image);
  } catch (const Error&) {
    if (!program.from_cache) throw;
    // A cached entry that reads back whole but does not load (a driver
    // that changed under it, a file written by something else): made again.
    forget_program(source, program.target, cache);
    program = compile();
    library = std::make_shared<const CudaLibrary>(program.image);
  }
  auto made = std::make_shared<CustomKernel>();
  made->kernel = library->kernel(program.kernel_symbols[0]);
  made->library = std::move(library);
  made->params = pack_params(params.params);
  if (in_bytes > 0) return made;  // shaped by its FusedLaunch
  if (params.block_x == 0) {
    // A thread per tile, as the kernel's co::detail::tile_width picks it.
    made->block = dim3(32, 8);
    const FormatInfo& info = format_info(format);
    int tile_rows = 1;
    for (int c = 1; c < colour_components(format); ++c)
      tile_rows = std::max(tile_rows, 1 << info.comp[c].y_sub);
    made->block_pixels_x = 32LL * custom_tile_width(format);
    made->block_pixels_y = 8LL * tile_rows;
  } else {
    made->block =
        dim3(static_cast<unsigned>(params.block_x), static_cast<unsigned>(params.block_y));
    made->block_pixels_x = static_cast<long long>(params.block_x) * params.pixels_x;
    made->block_pixels_y = static_cast<long long>(params.block_y) * params.pixels_y;
  }
  return made;
}

void launch_custom_kernel(const CustomKernel& kernel, const Colorimetry& colorimetry,
                          const ImageRef& in, const ImageRef& out, CUstream_st* stream) {
  const CustomColorimetry c = custom_colorimetry(colorimetry);
  CustomFrameData in_frame = frame_data(in, c);
  CustomFrameData out_frame = frame_data(out, c);
  void* args[] = {&in_frame, &out_frame, const_cast<uint64_t*>(kernel.params.data())};
  const dim3 grid(
      static_cast<unsigned>((in.width + kernel.block_pixels_x - 1) / kernel.block_pixels_x),
      static_cast<unsigned>((in.height + kernel.block_pixels_y - 1) / kernel.block_pixels_y));
  if (grid.x == 0 || grid.y == 0) return;
  CO_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel.kernel), grid, kernel.block,
                                 args, 0, stream));
}

void launch_fused_custom_kernel(const CustomKernel& kernel, const Colorimetry& colorimetry,
                                const FusedLaunch& launch, CUstream_st* stream) {
  if (launch.grid_x == 0 || launch.grid_y == 0) return;
  // The frame is the views' colorimetry (co::Frame's conversions); its
  // planes are not read.
  CustomFrameData frame{};
  frame.colorimetry = custom_colorimetry(colorimetry);
  bool in_words = launch.in_words, out_words = launch.out_words;
  void* args[] = {const_cast<FusedArgs*>(&launch.args), &in_words, &out_words, &frame,
                  const_cast<uint64_t*>(kernel.params.data())};
  CO_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel.kernel),
                                 dim3(launch.grid_x, launch.grid_y), dim3(kFusedThreads), args, 0,
                                 stream));
}

}  // namespace cudaoverlap
