// kernel=custom's answers and the program it compiles; see custom.h. The
// NVRTC compile, the load and the launch are in custom.cu.
#include "kernels/custom/custom.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "kernels/custom/runtime_compiler.h"
#include "kernels/error.h"

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

}  // namespace

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

ProgramSource custom_program(const CustomKernelParams& params, PixelFormat format, int arch) {
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
                                                                std::string* problem) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = kernels_.find(format);
  if (found != kernels_.end()) return found->second;
  try {
    auto kernel = build_custom_kernel(params_, format);
    kernels_.emplace(format, kernel);
    return kernel;
  } catch (const Error& e) {
    *problem = e.what();
    return nullptr;
  }
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
std::shared_ptr<const CustomKernel> build_custom_kernel(const CustomKernelParams&, PixelFormat) {
  throw Error("kernel=custom compiles CUDA source at run time, and this build has no CUDA");
}
void launch_custom_kernel(const CustomKernel&, const Colorimetry&, const ImageRef&, const ImageRef&,
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
