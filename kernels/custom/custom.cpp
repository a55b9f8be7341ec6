// kernel=custom's answers and the program it compiles; see custom.h. The
// NVRTC compile, the load and the launch are in custom.cu.
#include "kernels/custom/custom.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "kernels/chain/fused_pixels.h"
#include "kernels/custom/runtime_compiler.h"
#include "kernels/error.h"
#include "kernels/pixel_stage.h"

namespace cudaoverlap {
namespace {

bool is_identifier(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

const char* c_type(CustomParam::Type type) {
  switch (type) {
    case CustomParam::Type::kInt:
      return "int";
    case CustomParam::Type::kUInt:
      return "unsigned";
    case CustomParam::Type::kFloat:
      return "float";
    case CustomParam::Type::kDouble:
      return "double";
    case CustomParam::Type::kBool:
      return "bool";
  }
  return "int";
}

// Whether the format has component c: a colour one, or alpha, or RGBx's
// padding byte (which the header treats as the fourth component).
bool component_present(const FormatInfo& info, int c) {
  return c < info.n_components || (c == 3 && info.alpha_byte >= 0);
}

// co::Component<plane, offset, step, depth, shift, x_sub, y_sub>.
std::string component_type(const FormatInfo& info, int c) {
  if (!component_present(info, c)) return "co::NoComponent";
  const Component& k = info.comp[c];
  std::ostringstream s;
  s << "co::Component<" << k.plane << ", " << k.offset << ", " << k.pixel_stride << ", " << k.depth
    << ", " << k.shift << ", " << k.x_sub << ", " << k.y_sub << ">";
  return s.str();
}

// The per-pixel form's kernel: one thread per tile (co::detail::map_tile),
// chroma block by chroma block where a tile is cut by the picture's edge or
// a plane is not on 16 bytes.
constexpr char kPixelKernelText[] = R"(
extern "C" __global__ void cudaoverlap_pixel_kernel(InFrame in, OutFrame out, Params params) {
  constexpr int tx = co::detail::tile_width<Format>();
  constexpr int bx = 1 << Format::block_x_sub, by = 1 << Format::block_y_sub;
  // Packed 4:2:2 stores a last pair's second luma past an odd width.
  constexpr bool one_plane = Format::colours == 3 && Format::Comp0::plane == Format::Comp1::plane;
  const int width = one_plane ? (in.width + bx - 1) / bx * bx : in.width;
  const int x0 = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x) * tx;
  const int y0 = static_cast<int>(blockIdx.y * blockDim.y + threadIdx.y) * by;
  if (x0 >= width || y0 >= in.height) return;
  using View = decltype(co::detail::view_of(&CUDAOVERLAP_ENTRY));
  auto result = [&](const View& v, int x, int y) {
    return out.as_pixel(CUDAOVERLAP_ENTRY(v, x, y, params));
  };
  if (x0 + tx <= width && y0 + by <= in.height && co::detail::aligned16(in) &&
      co::detail::aligned16(out)) {
    co::detail::map_tile<View>(in, out, x0, y0, result);
    return;
  }
  for (int xb = x0; xb < x0 + tx && xb < width; xb += bx) {
    if constexpr (bx == 1 && by == 1) {
      View v;
      in.view(in.pixel(xb, y0), &v);
      out.set_pixel(xb, y0, result(v, xb, y0));
    } else {
      float u = 0.f, w = 0.f;
      int n = 0;
      for (int dy = 0; dy < by; ++dy) {
        for (int dx = 0; dx < bx; ++dx) {
          const int x = xb + dx, y = y0 + dy;
          if (x >= width || y >= in.height) continue;
          View v;
          in.view(in.pixel(x, y), &v);
          const co::Pixel p = result(v, x, y);
          out.set_sample<0>(x, y, p.c[0]);
          out.set_sample<3>(x, y, p.a);
          u += p.c[1];
          w += p.c[2];
          ++n;
        }
      }
      out.set_sample<1>(xb, y0, u / n);
      out.set_sample<2>(xb, y0, w / n);
    }
  }
}
)";
constexpr char kPixelKernelName[] = "cudaoverlap_pixel_kernel";

// The per-pixel form inside a chain's fused launch (fused_pixels.cuh): the
// stages before it give it each pixel as a word of the stream's packed RGB,
// which it reads and writes as the per-pixel kernel above does (the same
// normalising and rounding), for the stages after it.
constexpr char kFusedKernelText[] = R"(
#include "kernels/chain/fused_pixels.cuh"
namespace cudaoverlap_fused_detail {
// The per-pixel kernel's own conversions (co::Frame::pixel, set_pixel),
// without the int/float conversion instructions, which run at a quarter of
// the float rate: 2^23 + b, less 2^23, is b exactly; 1.5 * 2^23 + s, for s
// in [0, 255], holds s rounded to the nearest, ties to even, as
// __float2int_rn rounds, in its low byte (the _rn operations are not fused
// into one rounding). Bytes move with byte permutes.
template <class C>
__device__ float from_byte(unsigned w) {
  if constexpr (!C::present)
    return 1.f;
  else
    return (__uint_as_float(__byte_perm(w, 0x4b000000u, 0x7540u | C::offset)) - 8388608.f) *
           (1.f / 255.f);
}
// v quantised to 8 bits in the low byte.
__device__ unsigned to_byte(float v) {
  return __float_as_uint(__fadd_rn(__fmul_rn(__saturatef(v), 255.f), 12582912.f));
}
// The pixel of `q`: each component's byte at its offset (a 3-byte pixel's
// fourth byte, 0).
template <class F>
__device__ unsigned to_pixel(const co::Pixel& q) {
  constexpr int o3 = F::Comp3::present ? F::Comp3::offset : 3;
  constexpr unsigned selector = (0u << (4 * F::Comp0::offset)) | (1u << (4 * F::Comp1::offset)) |
                                (4u << (4 * F::Comp2::offset)) | (5u << (4 * o3));
  const unsigned lo = __byte_perm(to_byte(q.c[0]), to_byte(q.c[1]), 0x0040);
  const unsigned hi =
      __byte_perm(to_byte(q.c[2]), F::Comp3::present ? to_byte(q.a) : 0u, 0x0040);
  return __byte_perm(lo, hi, selector);
}
}  // namespace cudaoverlap_fused_detail
extern "C" __global__ void __launch_bounds__(cudaoverlap::kFusedThreads)
    cudaoverlap_fused_kernel(const __grid_constant__ cudaoverlap::FusedArgs a, bool in_words,
                             bool out_words, InFrame frame, Params params) {
  namespace d = cudaoverlap_fused_detail;
  using View = decltype(co::detail::view_of(&CUDAOVERLAP_ENTRY));
  const auto user = [&](unsigned w, int x, int y) {
    co::Pixel p;
    p.c[0] = d::from_byte<Format::Comp0>(w);
    p.c[1] = d::from_byte<Format::Comp1>(w);
    p.c[2] = d::from_byte<Format::Comp2>(w);
    p.a = d::from_byte<Format::Comp3>(w);
    View v;
    frame.view(p, &v);
    return d::to_pixel<Format>(frame.as_pixel(CUDAOVERLAP_ENTRY(v, x, y, params)));
  };
  cudaoverlap::fused::fused_pixels<CUDAOVERLAP_IN_BYTES, CUDAOVERLAP_OUT_BYTES>(a, in_words,
                                                                               out_words, user);
}
)";
constexpr char kFusedKernelName[] = "cudaoverlap_fused_kernel";

}  // namespace

// The fused launch's headers, built into the library (embed_header.py).
extern const char kFusedPixelsText[];
extern const char kPixelStageText[];
extern const char kBalancePixelText[];
extern const char kRgb24WordsText[];

int custom_tile_width(PixelFormat format) {
  // co::detail::tile_width: the fewest pixels, a multiple of the chroma
  // block, that make every component's run a multiple of 4 bytes and the
  // longest at least 16.
  const FormatInfo& info = format_info(format);
  int tx = 1;
  for (int c = 1; c < colour_components(format); ++c) tx = std::max(tx, 1 << info.comp[c].x_sub);
  for (;; tx *= 2) {
    bool whole = true;
    int longest = 0;
    for (int c = 0; c < kMaxComponents; ++c) {
      if (!component_present(info, c)) continue;
      const int bytes = (tx >> info.comp[c].x_sub) * info.comp[c].pixel_stride;
      whole = whole && bytes % 4 == 0;
      longest = std::max(longest, bytes);
    }
    if (whole && longest >= 16) return tx;
  }
}

std::string check_custom_params(const CustomKernelParams& params) {
  if (params.source.empty())
    return "kernel=custom needs a source: set kernel-file or kernel-source";
  if (!is_identifier(params.entry))
    return "kernel-entry '" + params.entry + "' is not the name of a C function";
  for (const CustomParam& p : params.params)
    if (!is_identifier(p.name)) return "kernel-params field '" + p.name + "' is not a C identifier";
  if (params.block_x < 0 || params.block_y < 0 || (params.block_x > 0) != (params.block_y > 0))
    return "kernel-launch needs a block of at least 1x1 threads";
  if (params.block_x > 0 &&
      (params.block_x > 1024 || params.block_y > 1024 || params.block_x * params.block_y > 1024))
    return "kernel-launch's block of " + std::to_string(params.block_x) + "x" +
           std::to_string(params.block_y) + " threads is more than CUDA's 1024 a block";
  if (params.pixels_x < 1 || params.pixels_y < 1 || params.pixels_x > 4096 ||
      params.pixels_y > 4096)
    return "kernel-launch's pixels per thread must be 1 to 4096 each way";
  return {};
}

namespace {

// What both programs begin with: the header, Params, the stream's format,
// and the user's source after a #line.
std::string program_prelude(const CustomKernelParams& params, PixelFormat format) {
  const FormatInfo& info = format_info(format);
  std::ostringstream text;
  text << "#include <cudaoverlap/pixel.cuh>\n";
  text << "struct Params {\n";
  for (const CustomParam& p : params.params)
    text << "  " << c_type(p.type) << " " << p.name << ";\n";
  text << "};\n";
  text << "// " << info.name << "\n";
  text << "using Format = co::Format<" << (info.is_yuv ? "true" : "false") << ", "
       << colour_components(format) << ", " << info.sample_bytes << ",\n    "
       << component_type(info, 0) << ",\n    " << component_type(info, 1) << ",\n    "
       << component_type(info, 2) << ",\n    " << component_type(info, 3) << ">;\n";
  text << "using InFrame = co::Frame<Format>;\nusing OutFrame = co::Frame<Format>;\n";
  text << "#line 1 \"" << params.source_name << "\"\n";
  text << params.source;
  if (!params.source.empty() && params.source.back() != '\n') text << "\n";
  return text.str();
}

}  // namespace

ProgramSource custom_program(const CustomKernelParams& params, PixelFormat format, int arch) {
  std::ostringstream text;
  text << program_prelude(params, format);
  ProgramSource source;
  if (params.block_x == 0) {
    text << "#line 1 \"cudaoverlap-pixel-kernel\"\n";
    text << "#define CUDAOVERLAP_ENTRY " << params.entry << "\n";
    text << kPixelKernelText;
    source.kernels.push_back(kPixelKernelName);
  } else {
    // The element launches it with (InFrame, OutFrame, Params): another
    // signature is a compile error, not a launch that reads garbage.
    text << "#line 1 \"cudaoverlap-kernel-check\"\n"
         << "static void (*const cudaoverlap_entry_check)(InFrame, OutFrame, Params) = "
         << params.entry << ";\n";
    source.kernels.push_back(params.entry);
  }
  source.text = text.str();
  source.name = params.source_name;
  source.headers.emplace_back("cudaoverlap/pixel.cuh", kPixelHeaderText);
  source.arch = arch;
  return source;
}

ProgramSource fused_custom_program(const CustomKernelParams& params, PixelFormat format,
                                   int in_bytes, int out_bytes, int arch) {
  std::ostringstream text;
  text << program_prelude(params, format);
  text << "#line 1 \"cudaoverlap-fused-kernel\"\n";
  text << "#define CUDAOVERLAP_ENTRY " << params.entry << "\n";
  text << "#define CUDAOVERLAP_IN_BYTES " << in_bytes << "\n";
  text << "#define CUDAOVERLAP_OUT_BYTES " << out_bytes << "\n";
  text << kFusedKernelText;
  ProgramSource source;
  source.text = text.str();
  source.name = params.source_name;
  source.headers = {{"cudaoverlap/pixel.cuh", kPixelHeaderText},
                    {"kernels/chain/fused_pixels.cuh", kFusedPixelsText},
                    {"kernels/pixel_stage.h", kPixelStageText},
                    {"kernels/balance/balance_pixel.cuh", kBalancePixelText},
                    {"kernels/rgb24_words.cuh", kRgb24WordsText}};
  source.kernels.push_back(kFusedKernelName);
  source.arch = arch;
  return source;
}

CustomColorimetry custom_colorimetry(const Colorimetry& c) {
  // co::Matrix numbers the matrices as YuvMatrix does.
  return CustomColorimetry{static_cast<int>(c.matrix()), c.full_range ? 1 : 0,
                           c.rgb_limited ? 1 : 0, static_cast<float>(c.kr()),
                           static_cast<float>(c.kb())};
}

CustomOperation::CustomOperation(CustomKernelParams params, Colorimetry colorimetry)
    : params_(std::move(params)), colorimetry_(colorimetry) {}

CustomOperation::~CustomOperation() = default;

bool CustomOperation::mixes_rows(PixelFormat in, PixelFormat) const {
  return params_.block_x > 0 || format_info(in).comp[1].y_sub > 0;
}

bool CustomOperation::uses_matrix(PixelFormat in, PixelFormat) const {
  return format_info(in).is_yuv;
}

std::string CustomOperation::check(const ImageRef& in, const ImageRef& out) const {
  std::string problem = Operation::check(in, out);
  if (problem.empty()) problem = check_custom_params(params_);
  if (problem.empty()) kernel_for(in.format, &problem);
  return problem;
}

std::shared_ptr<const CustomKernel> CustomOperation::kernel_for(PixelFormat format,
                                                                std::string* problem, int in_bytes,
                                                                int out_bytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto key = std::make_tuple(format, in_bytes, out_bytes);
  auto found = kernels_.find(key);
  if (found != kernels_.end()) return found->second;
  try {
    auto kernel = build_custom_kernel(params_, format, in_bytes, out_bytes);
    kernels_.emplace(key, kernel);
    return kernel;
  } catch (const Error& e) {
    *problem = e.what();
    return nullptr;
  }
}

bool CustomOperation::pixel_stage(PixelFormat in, PixelFormat out, const Workspace&,
                                  PixelStage* stage) const {
  if (params_.block_x != 0 || in != out || !is_pixel_stage_format(in)) return false;
  *stage = PixelStage{};
  stage->kind = PixelStage::Kind::kUser;
  return true;
}

std::string CustomOperation::check_fused(PixelFormat format, int in_bytes, int out_bytes) const {
  std::string problem = check_custom_params(params_);
  if (problem.empty()) kernel_for(format, &problem, in_bytes, out_bytes);
  return problem;
}

void CustomOperation::enqueue_fused_cuda(const ImageRef& in, const ImageRef& out,
                                         PixelFormat format, const PixelStage* stages, int n,
                                         CUstream_st* stream) const {
  const FusedLaunch launch = fused_launch(in, out, stages, n);
  std::string problem;
  const auto kernel = kernel_for(format, &problem, launch.in_bytes, launch.out_bytes);
  if (!kernel) throw Error(problem);
  launch_fused_custom_kernel(*kernel, colorimetry_, launch, stream);
}

bool CustomOperation::same_as(const Operation& other) const {
  const auto* o = dynamic_cast<const CustomOperation*>(&other);
  return o && o->params_ == params_ && o->colorimetry_ == colorimetry_;
}

void CustomOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out, const Workspace&,
                                   CUstream_st* stream) const {
  std::string problem;
  const auto kernel = kernel_for(in.format, &problem);
  if (!kernel) throw Error(problem);
  launch_custom_kernel(*kernel, colorimetry_, in, out, stream);
}

void CustomOperation::run_reference(const ImageRef&, const ImageRef&, const Workspace&) const {
  throw Error(
      "kernel=custom runs CUDA source, which only the cuda backend can run; there is no cpu "
      "version of it");
}

#ifndef CUDAOVERLAP_HAVE_CUDA
std::shared_ptr<const CustomKernel> build_custom_kernel(const CustomKernelParams&, PixelFormat, int,
                                                        int) {
  throw Error("kernel=custom compiles CUDA source at run time, and this build has no CUDA");
}
void launch_custom_kernel(const CustomKernel&, const Colorimetry&, const ImageRef&, const ImageRef&,
                          CUstream_st*) {
  throw_built_without_cuda();
}
void launch_fused_custom_kernel(const CustomKernel&, const Colorimetry&, const FusedLaunch&,
                                CUstream_st*) {
  throw_built_without_cuda();
}
CompiledProgram compile_program(const ProgramSource&, const std::string&) {
  throw Error("compiling CUDA source at run time needs CUDA, and this build has none");
}
std::string kernel_cache_dir() { return {}; }
std::string runtime_compiler_version() { return {}; }
#endif

const OperationEntry& custom_entry() {
  static const OperationEntry entry{
      "custom",
      "Custom: your own CUDA C from kernel-file or kernel-source, compiled for the GPU when the "
      "element starts (cached on disk), with kernel-params' fields as its Params; cuda backend "
      "only",
      true,
      {},
      [](const KernelParams& p) -> std::shared_ptr<const Operation> {
        return std::make_shared<CustomOperation>(p.custom, p.convert.in);
      },
      true};
  return entry;
}

}  // namespace cudaoverlap
