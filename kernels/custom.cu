// kernel=custom's CUDA half: the program compiled for the device (NVRTC,
// runtime_compiler.h), loaded as a CUDA library, and launched with the
// frames and parameters laid out as <cudaoverlap/pixel.cuh> declares them.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>

#include "cuda_check.h"
#include "custom.h"
#include "runtime_compiler.h"

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
                  offsetof(CustomFrameData, colorimetry) == 72 && sizeof(CustomFrameData) == 88,
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
  CustomKernel(std::shared_ptr<const CudaLibrary> library, cudaKernel_t kernel,
               CustomOperation::BuildInfo info)
      : library_(std::move(library)), kernel_(kernel), info_(std::move(info)) {}
  cudaKernel_t kernel() const { return kernel_; }
  const CustomOperation::BuildInfo& info() const { return info_; }

 private:
  std::shared_ptr<const CudaLibrary> library_;
  cudaKernel_t kernel_;
  CustomOperation::BuildInfo info_;
};

std::shared_ptr<const CustomKernel> build_custom_kernel(const CustomKernelParams& params,
                                                        PixelFormat format) {
  const int arch = device_arch(params.device);
  // The library loads into the device current on this thread (it may be
  // the session's compile thread): the one the program is made for.
  if (params.device >= 0) CO_CUDA_CHECK(cudaSetDevice(params.device));
  const ProgramSource source = custom_program(params, format, arch);
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
  CustomOperation::BuildInfo info;
  info.from_cache = program.from_cache;
  info.milliseconds = program.milliseconds;
  info.target = program.target;
  return std::make_shared<const CustomKernel>(library, library->kernel(program.kernel_symbols[0]),
                                              info);
}

CustomOperation::BuildInfo custom_kernel_build_info(const CustomKernel& kernel) {
  return kernel.info();
}

void launch_custom_kernel(const CustomKernel& kernel, const CustomKernelParams& params,
                          const Colorimetry& colorimetry, const ImageRef& in, const ImageRef& out,
                          CUstream_st* stream) {
  const CustomColorimetry c = custom_colorimetry(colorimetry);
  CustomFrameData in_frame = frame_data(in, c);
  CustomFrameData out_frame = frame_data(out, c);
  std::vector<uint64_t> values = pack_params(params.params);
  void* args[] = {&in_frame, &out_frame, values.data()};
  dim3 block, grid;
  if (params.block_x == 0) {
    // A thread per tile, as the kernel's co::detail::tile_width picks it.
    const FormatInfo& info = format_info(in.format);
    int bx = 1, by = 1;
    for (int c = 1; c < colour_components(in.format); ++c) {
      bx = std::max(bx, 1 << info.comp[c].x_sub);
      by = std::max(by, 1 << info.comp[c].y_sub);
    }
    int tx = bx;
    for (;;) {
      bool whole = true;
      int longest = 0;
      for (int c = 0; c < 4; ++c) {
        if (!(c < info.n_components || (c == 3 && info.alpha_byte >= 0))) continue;
        const int bytes = (tx >> info.comp[c].x_sub) * info.comp[c].pixel_stride;
        if (bytes % 4 != 0) whole = false;
        longest = std::max(longest, bytes);
      }
      if (whole && longest >= 16) break;
      tx *= 2;
    }
    block = dim3(32, 8);
    const unsigned across = static_cast<unsigned>((in.width + tx - 1) / tx);
    const unsigned down = static_cast<unsigned>((in.height + by - 1) / by);
    grid = dim3((across + block.x - 1) / block.x, (down + block.y - 1) / block.y);
  } else {
    block = dim3(static_cast<unsigned>(params.block_x), static_cast<unsigned>(params.block_y));
    const long long per_x = static_cast<long long>(params.block_x) * params.pixels_x;
    const long long per_y = static_cast<long long>(params.block_y) * params.pixels_y;
    grid = dim3(static_cast<unsigned>((in.width + per_x - 1) / per_x),
                static_cast<unsigned>((in.height + per_y - 1) / per_y));
  }
  if (grid.x == 0 || grid.y == 0) return;
  CO_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel.kernel()), grid, block, args,
                                 0, stream));
}

}  // namespace cudaoverlap
