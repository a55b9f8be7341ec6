// The chain operation (see chain.h): its parser, and the steps run one after
// another through frames in its workspace.
#include "kernels/chain/chain.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "kernels/chain/fused_pixels.h"
#include "kernels/custom/custom.h"
#include "kernels/error.h"
#include "kernels/operation_registry.h"

namespace cudaoverlap {
namespace {

// Rows of the frames between steps start on this, as the engine's slots'
// do, so the kernels' wide loads and stores apply.
constexpr size_t kAlign = 256;

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// A frame of `format` and size, its planes one after another from `base`
// (null: only its geometry), rows on kAlign; its bytes in *bytes.
ImageRef frame_at(uint8_t* base, PixelFormat format, int width, int height, size_t* bytes) {
  ImageRef image;
  image.format = format;
  image.width = width;
  image.height = height;
  size_t at = 0;
  for (int p = 0; p < format_info(format).n_planes; ++p) {
    const size_t stride = align_up(plane_row_bytes(format, p, width));
    image.planes[p].data = base != nullptr ? base + at : nullptr;
    image.planes[p].stride = stride;
    at += stride * plane_rows(format, p, height);
  }
  if (bytes) *bytes = at;
  return image;
}

std::string trim(const std::string& text) {
  size_t a = 0, b = text.size();
  while (a < b && std::isspace(static_cast<unsigned char>(text[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(text[b - 1]))) --b;
  return text.substr(a, b - a);
}

// `text` cut where `is_cut` holds outside double quotes; the quotes go,
// or stay where `keep_quotes` (for a second cut of each part).
template <typename IsCut>
std::vector<std::string> cut(const std::string& text, IsCut is_cut, bool keep_quotes = false) {
  std::vector<std::string> parts(1);
  bool quoted = false;
  for (char c : text) {
    if (c == '"') {
      quoted = !quoted;
      if (keep_quotes) parts.back() += c;
    } else if (!quoted && is_cut(c)) {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  if (quoted) throw Error("a quote is not closed");
  return parts;
}

// `text` as a value of `spec`, as gst-launch-1.0 reads a property's.
bool parse_value(const ParamSpec& spec, const std::string& text, double* value) {
  if (text.empty()) return false;
  char* end = nullptr;
  switch (spec.type) {
    case ParamSpec::Type::kBool:
      for (const char* yes : {"true", "yes", "1", "TRUE"})
        if (text == yes) return *value = 1, true;
      for (const char* no : {"false", "no", "0", "FALSE"})
        if (text == no) return *value = 0, true;
      return false;
    case ParamSpec::Type::kEnum:
      for (const ParamChoice& choice : spec.choices)
        if (text == choice.nick) return *value = choice.value, true;
      *value = static_cast<double>(std::strtol(text.c_str(), &end, 10));
      if (*end != '\0') return false;
      return std::any_of(spec.choices.begin(), spec.choices.end(),
                         [&](const ParamChoice& c) { return c.value == *value; });
    case ParamSpec::Type::kInt:
    case ParamSpec::Type::kUInt:
      *value = static_cast<double>(std::strtoll(text.c_str(), &end, 10));
      return *end == '\0';
    case ParamSpec::Type::kDouble:
      *value = std::strtod(text.c_str(), &end);
      return *end == '\0';
  }
  return false;
}

std::string names_of(const std::vector<ParamSpec>& specs) {
  std::string names;
  for (const ParamSpec& s : specs) names += std::string(names.empty() ? "" : ", ") + s.name;
  return names.empty() ? "none" : names;
}

// A flip or rotation as the 2x2 matrix that takes a pixel's offset from
// the centre in the input to its offset in the output (y down).
struct Turn {
  int a, b, c, d;  // (x, y) -> (a x + b y, c x + d y)
};

Turn turn_of(FlipDirection f) {
  switch (f) {
    case FlipDirection::k90R:
      return {0, -1, 1, 0};
    case FlipDirection::k180:
      return {-1, 0, 0, -1};
    case FlipDirection::k90L:
      return {0, 1, -1, 0};
    case FlipDirection::kHoriz:
      return {-1, 0, 0, 1};
    case FlipDirection::kVert:
      return {1, 0, 0, -1};
    case FlipDirection::kUlLr:
      return {0, 1, 1, 0};
    case FlipDirection::kUrLl:
      return {0, -1, -1, 0};
    case FlipDirection::kIdentity:
      break;
  }
  return {1, 0, 0, 1};
}

}  // namespace

std::shared_ptr<const ChainSpec> parse_chain(const std::string& text) {
  auto spec = std::make_shared<ChainSpec>();
  spec->text = text;
  std::vector<std::string> parts;
  try {
    parts = cut(text, [](char c) { return c == '!'; }, true);
  } catch (const Error& e) {
    throw Error(std::string("chain \"") + text + "\": " + e.what());
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    const std::string where = "chain step " + std::to_string(k + 1);
    std::vector<std::string> words;
    const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
    for (const std::string& w : cut(parts[k], space))
      if (!trim(w).empty()) words.push_back(trim(w));
    if (words.empty()) throw Error(where + " is empty: write steps as \"blur sigma=2 ! invert\"");
    ChainStep step;
    step.name = words[0];
    const OperationEntry* entry = nullptr;
    bool taken = false;
    std::string built_in;
    for (const OperationEntry& e : operation_registry()) {
      const bool takes = e.offered;
      if (takes) built_in += std::string(built_in.empty() ? "" : ", ") + e.name;
      if (step.name == e.name) entry = &e, taken = takes;
    }
    if (entry == nullptr)
      throw Error(where + ": there is no kernel '" + step.name + "': a step is one of " + built_in);
    if (!taken)
      throw Error(where + " (" + step.name + "): a chain's steps are " + built_in);
    for (size_t i = 1; i < words.size(); ++i) {
      const size_t eq = words[i].find('=');
      const std::string name = words[i].substr(0, eq);
      if (step.name == "custom") {
        const std::vector<std::string>& allowed = custom_step_words();
        if (std::find(allowed.begin(), allowed.end(), name) == allowed.end() ||
            eq == std::string::npos) {
          std::string list;
          for (const std::string& w : allowed) list += (list.empty() ? "" : ", ") + w;
          throw Error(where + " (custom): " + words[i] + " is not one of its words; it takes " +
                      list + "=VALUE, as the element's properties of those names");
        }
        step.texts.emplace_back(name, words[i].substr(eq + 1));
        continue;
      }
      const ParamSpec* spec_of = nullptr;
      for (const ParamSpec& s : entry->params)
        if (name == s.name) spec_of = &s;
      if (spec_of == nullptr)
        throw Error(where + " (" + step.name + "): " + step.name + " has no parameter '" + name +
                    "'; it takes " + names_of(entry->params));
      double value = 0;
      if (eq == std::string::npos || !parse_value(*spec_of, words[i].substr(eq + 1), &value))
        throw Error(where + " (" + step.name + "): " + name + "=" +
                    (eq == std::string::npos ? std::string() : words[i].substr(eq + 1)) +
                    " is not a value it takes");
      step.values.set(name, value);
    }
    try {
      (void)step.values.resolve(entry->params);  // ranges, named in the error
    } catch (const Error& e) {
      throw Error(where + " (" + step.name + "): " + e.what());
    }
    spec->steps.push_back(std::move(step));
  }
  return spec;
}

const std::vector<std::string>& custom_step_words() {
  static const std::vector<std::string> words{"kernel-file", "kernel-source", "kernel-params",
                                              "kernel-entry", "kernel-launch"};
  return words;
}

bool chain_has_custom(const ChainSpec& spec) {
  return std::any_of(spec.steps.begin(), spec.steps.end(),
                     [](const ChainStep& step) { return step.name == "custom"; });
}

bool same_chain(const std::shared_ptr<const ChainSpec>& a,
                const std::shared_ptr<const ChainSpec>& b) {
  if (!a || !b) return a == b;
  if (a->text != b->text || a->steps.size() != b->steps.size()) return false;
  // Custom steps: the kernels loaded from their words (a file may change).
  for (size_t k = 0; k < a->steps.size(); ++k) {
    const auto& x = a->steps[k].custom;
    const auto& y = b->steps[k].custom;
    if (x != y && (!x || !y || !(*x == *y))) return false;
  }
  return true;
}

ChainOperation::ChainOperation(std::shared_ptr<const ChainSpec> spec, const KernelParams& params,
                               bool fuse)
    : spec_(std::move(spec)), fuse_(fuse) {
  if (!spec_ || spec_->steps.empty()) throw Error("a chain needs at least one step");
  bool swapped = false;
  for (size_t k = 0; k < spec_->steps.size(); ++k) {
    KernelParams own = params;
    own.values = spec_->steps[k].values;
    own.chain = nullptr;
    if (spec_->steps[k].name == "custom") {
      if (!spec_->steps[k].custom)
        throw Error(step_name(k) +
                    ": its kernel was not loaded (give kernel-file or kernel-source)");
      const int device = own.custom.device;
      own.custom = *spec_->steps[k].custom;
      own.custom.device = device;
    }
    // The last step's input is the frame the others made: turned where
    // they turned it.
    if (swapped) {
      std::swap(own.sizes.in_width, own.sizes.in_height);
    }
    try {
      steps_.push_back(make_operation(spec_->steps[k].name, own));
    } catch (const Error& e) {
      throw Error("chain " + std::string("step ") + std::to_string(k + 1) + " (" +
                  spec_->steps[k].name + "): " + e.what());
    }
    swapped = swapped != steps_.back()->swaps_axes();
  }
  in_width_ = params.sizes.in_width;
  in_height_ = params.sizes.in_height;
  if (in_width_ > 0 && in_height_ > 0 && steps_.size() > 1) {
    // Whatever format a step makes, either way round.
    for (PixelFormat f : all_pixel_formats()) {
      if (is_bayer(f)) continue;
      size_t bytes = 0;
      frame_at(nullptr, f, in_width_, in_height_, &bytes);
      frame_bytes_ = std::max(frame_bytes_, bytes);
      frame_at(nullptr, f, in_height_, in_width_, &bytes);
      frame_bytes_ = std::max(frame_bytes_, bytes);
    }
  }
  size_t at = align_up(frame_bytes_) * std::min<size_t>(steps_.size() - 1, 2);
  for (const auto& step : steps_) {
    step_offsets_.push_back(at);
    at += align_up(step->workspace_bytes());
  }
  step_offsets_.push_back(at);
}

const CustomOperation& ChainOperation::user_step(const Launch& launch) const {
  const auto* custom =
      dynamic_cast<const CustomOperation*>(steps_.at(static_cast<size_t>(launch.user)).get());
  if (custom == nullptr)
    throw Error(step_name(static_cast<size_t>(launch.user)) + " is not custom");
  return *custom;
}

std::string ChainOperation::step_name(size_t k) const {
  return "chain step " + std::to_string(k + 1) + " (" + spec_->steps[k].name + ")";
}

std::vector<ImageRef> ChainOperation::between(const ImageRef& in, const Workspace* workspace,
                                              std::string* problem, bool problem_only_last) const {
  std::vector<ImageRef> frames;
  PixelFormat format = in.format;
  int width = in.width, height = in.height;
  for (size_t k = 0; k + 1 < steps_.size(); ++k) {
    const Operation& step = *steps_[k];
    const std::vector<PixelFormat> made = step.output_formats(format);
    if (made.empty()) {
      *problem = step_name(k) + " does not take " + format_info(format).name +
                 (k == 0 ? std::string() : ", which " + step_name(k - 1) + " makes") +
                 "; it takes " + format_list(step.input_formats());
      return {};
    }
    if (problem_only_last && (step.format_from_downstream() || step.size_from_downstream())) {
      *problem = step_name(k) +
                 " takes its output's format or size from downstream's caps, so it can only be "
                 "the chain's last step";
      return {};
    }
    if (step.swaps_axes()) std::swap(width, height);
    uint8_t* base = workspace != nullptr ? workspace->data + (k % 2) * align_up(frame_bytes_)
                                         : nullptr;
    format = made.front();
    frames.push_back(frame_at(base, format, width, height, nullptr));
  }
  return frames;
}

std::vector<PixelFormat> ChainOperation::output_formats(PixelFormat in) const {
  std::string problem;
  ImageRef image;
  image.format = in;
  const std::vector<ImageRef> frames = between(image, nullptr, &problem, false);
  if (!problem.empty()) return {};
  return steps_.back()->output_formats(frames.empty() ? in : frames.back().format);
}

bool ChainOperation::turns_before_last() const {
  bool swapped = false;
  for (size_t k = 0; k + 1 < steps_.size(); ++k) swapped = swapped != steps_[k]->swaps_axes();
  return swapped;
}

bool ChainOperation::swaps_axes() const {
  bool swapped = false;
  for (const auto& step : steps_) swapped = swapped != step->swaps_axes();
  return swapped;
}

Crop ChainOperation::crop() const { return steps_.back()->crop(); }

FlipDirection ChainOperation::orientation() const {
  Turn t{1, 0, 0, 1};
  for (const auto& step : steps_) {
    const Turn s = turn_of(step->orientation());
    t = Turn{s.a * t.a + s.b * t.c, s.a * t.b + s.b * t.d, s.c * t.a + s.d * t.c,
             s.c * t.b + s.d * t.d};
  }
  for (FlipDirection f :
       {FlipDirection::kIdentity, FlipDirection::k90R, FlipDirection::k180, FlipDirection::k90L,
        FlipDirection::kHoriz, FlipDirection::kVert, FlipDirection::kUlLr, FlipDirection::kUrLl}) {
    const Turn u = turn_of(f);
    if (u.a == t.a && u.b == t.b && u.c == t.c && u.d == t.d) return f;
  }
  return FlipDirection::kIdentity;  // not reached: the eight form a group
}

bool ChainOperation::passes_through_same_caps() const {
  return std::all_of(steps_.begin(), steps_.end(),
                     [](const auto& step) { return step->passes_through_same_caps(); });
}

std::vector<PixelFormat> ChainOperation::formats(PixelFormat in, PixelFormat out) const {
  ImageRef image;
  image.format = in;
  std::string problem;
  const std::vector<ImageRef> frames = between(image, nullptr, &problem, false);
  if (!problem.empty()) return {};
  std::vector<PixelFormat> all{in};
  for (const ImageRef& frame : frames) all.push_back(frame.format);
  all.push_back(out);
  return all;
}

bool ChainOperation::mixes_rows(PixelFormat in, PixelFormat out) const {
  const std::vector<PixelFormat> f = formats(in, out);
  if (f.empty()) return true;
  for (size_t k = 0; k < steps_.size(); ++k)
    if (steps_[k]->mixes_rows(f[k], f[k + 1])) return true;
  return false;
}

bool ChainOperation::uses_matrix(PixelFormat in, PixelFormat out) const {
  const std::vector<PixelFormat> f = formats(in, out);
  for (size_t k = 0; k + 1 < f.size(); ++k)
    if (steps_[k]->uses_matrix(f[k], f[k + 1])) return true;
  return false;
}

std::string ChainOperation::check(const ImageRef& in, const ImageRef& out) const {
  std::string problem;
  const std::vector<ImageRef> frames = between(in, nullptr, &problem);
  if (!problem.empty()) return problem;
  bool moved = false;
  for (size_t k = 0; k + 1 < steps_.size(); ++k)
    moved = moved || steps_[k]->orientation() != FlipDirection::kIdentity;
  if (moved && steps_.back()->crop().any())
    return step_name(steps_.size() - 1) +
           " crops a frame an earlier step flipped or turned; crop in an element before the "
           "chain";
  if (steps_.size() > 1 && (in.width > std::max(in_width_, in_height_) ||
                            in.height > std::max(in_width_, in_height_) ||
                            static_cast<int64_t>(in.width) * in.height >
                                static_cast<int64_t>(in_width_) * in_height_))
    return "the chain was made for frames of " + std::to_string(in_width_) + "x" +
           std::to_string(in_height_) + ", not " + std::to_string(in.width) + "x" +
           std::to_string(in.height);
  Planned p;
  p.frames = frames;
  p.launches = plan(in, frames, out, nullptr, &p.stages);
  for (size_t k = 0; k < steps_.size(); ++k) {
    const ImageRef& a = k == 0 ? in : frames[k - 1];
    const ImageRef& b = k + 1 == steps_.size() ? out : frames[k];
    // A user's step in a fused launch: that launch's program, not its own.
    const auto fused = std::find_if(p.launches.begin(), p.launches.end(),
                                    [&](const Launch& l) { return l.user == static_cast<int>(k); });
    const bool in_fused = fused != p.launches.end();
    std::string refused = in_fused ? steps_[k]->Operation::check(a, b) : steps_[k]->check(a, b);
    if (refused.empty() && in_fused)
      refused = user_step(*fused).check_fused(
          a.format, pixel_stage_bytes(p.in_of(*fused, in).format),
          pixel_stage_bytes(p.out_of(*fused, out, steps_.size()).format));
    if (!refused.empty()) return step_name(k) + ": " + refused;
  }
  return {};
}

bool ChainOperation::same_as(const Operation& other) const {
  const auto* chain = dynamic_cast<const ChainOperation*>(&other);
  if (chain == nullptr || chain->steps_.size() != steps_.size() || chain->fuse_ != fuse_ ||
      chain->in_width_ != in_width_ || chain->in_height_ != in_height_)
    return false;
  for (size_t k = 0; k < steps_.size(); ++k)
    if (!steps_[k]->same_as(*chain->steps_[k])) return false;
  return true;
}

bool ChainOperation::capturable() const {
  return std::all_of(steps_.begin(), steps_.end(),
                     [](const auto& step) { return step->capturable(); });
}

bool ChainOperation::cpu_rows_at_once(PixelFormat in, PixelFormat out) const {
  return steps_.size() == 1 && Operation::cpu_rows_at_once(in, out);
}

int ChainOperation::band_halo(PixelFormat in, PixelFormat out) const {
  if (steps_.back()->size_from_downstream() || steps_.back()->crop().any()) return -1;
  const std::vector<PixelFormat> f = formats(in, out);
  if (f.empty()) return -1;
  int halo = 0;
  for (size_t k = 0; k < steps_.size(); ++k) {
    const int own = steps_[k]->band_halo(f[k], f[k + 1]);
    if (own < 0 || steps_[k]->swaps_axes() || steps_[k]->bands_by_view(f[k], f[k + 1])) return -1;
    // band_rows rounds what each earlier step makes out to its row step.
    halo += own + (k > 0 ? band_row_step(f[k - 1], f[k]) - 1 : 0);
  }
  return halo;
}

std::vector<RowRange> ChainOperation::band_rows(const ImageRef& in,
                                                const std::vector<ImageRef>& frames,
                                                const ImageRef& out, int y0, int y1) const {
  const size_t n = steps_.size();
  std::vector<RowRange> rows(n);
  rows[n - 1] = RowRange{y0, y1};
  for (size_t k = n - 1; k > 0; --k) {
    // Step k reads what step k - 1 makes: its rows and its halo.
    const PixelFormat a = frames[k - 1].format;
    const PixelFormat b = k + 1 == n ? out.format : frames[k].format;
    const int halo = steps_[k]->band_halo(a, b);
    const int step = band_row_step(k >= 2 ? frames[k - 2].format : in.format, a);
    const int first = std::max(rows[k].first - halo, 0) / step * step;
    int last = std::min(rows[k].last + halo, in.height);
    if (last < in.height) last = std::min((last + step - 1) / step * step, in.height);
    rows[k - 1] = RowRange{first, last};
  }
  return rows;
}

size_t ChainOperation::workspace_bytes() const { return step_offsets_.back(); }

Workspace ChainOperation::step_workspace(const Workspace& workspace, size_t k) const {
  const size_t bytes = steps_[k]->workspace_bytes();
  return Workspace{bytes > 0 ? workspace.data + step_offsets_[k] : nullptr, bytes};
}

void ChainOperation::prepare_cuda(const Workspace& workspace, CUstream_st* stream) const {
  for (size_t k = 0; k < steps_.size(); ++k)
    steps_[k]->prepare_cuda(step_workspace(workspace, k), stream);
}

void ChainOperation::prepare_reference(const Workspace& workspace) const {
  for (size_t k = 0; k < steps_.size(); ++k)
    steps_[k]->prepare_reference(step_workspace(workspace, k));
}

std::vector<ChainOperation::Launch> ChainOperation::plan(
    const ImageRef& in, const std::vector<ImageRef>& frames, const ImageRef& out,
    const Workspace* workspace, std::vector<std::vector<PixelStage>>* stages) const {
  const size_t n = steps_.size();
  const auto format = [&](size_t k) { return k == 0 ? in.format : frames[k - 1].format; };
  const auto made = [&](size_t k) { return k + 1 == n ? out.format : frames[k].format; };
  std::vector<Launch> launches;
  stages->clear();
  for (size_t k = 0; k < n;) {
    // The longest run of steps from k that each give a stage.
    // A launch is compiled with one user's function at most.
    std::vector<PixelStage> run;
    int user = -1;
    for (size_t m = k; fuse_ && n > 1 && m < n && run.size() < kMaxFusedStages; ++m) {
      PixelStage stage;
      const Workspace own = workspace != nullptr ? step_workspace(*workspace, m) : Workspace{};
      if (!steps_[m]->pixel_stage(format(m), made(m), own, &stage)) break;
      if (stage.kind == PixelStage::Kind::kUser) {
        if (user >= 0) break;
        user = static_cast<int>(m);
      }
      run.push_back(stage);
    }
    const size_t last = run.size() >= 2 ? k + run.size() - 1 : k;
    Launch launch{k, last};
    if (last > k && user >= 0) {
      launch.user = user;
      launch.user_format = format(static_cast<size_t>(user));
    }
    launches.push_back(launch);
    // Shuffles in a row are one (invert then convert: a byte move with a mask).
    std::vector<PixelStage> merged;
    for (const PixelStage& stage : last > k ? run : std::vector<PixelStage>{}) {
      if (!merged.empty() && merged.back().kind == PixelStage::Kind::kShuffle &&
          stage.kind == PixelStage::Kind::kShuffle)
        merged.back() = compose_shuffles(merged.back(), stage);
      else
        merged.push_back(stage);
    }
    stages->push_back(std::move(merged));
    k = last + 1;
  }
  return launches;
}

std::vector<ChainOperation::Launch> ChainOperation::launches(PixelFormat in,
                                                             PixelFormat out) const {
  ImageRef first, last;
  first.format = in;
  last.format = out;
  std::string problem;
  const std::vector<ImageRef> frames = between(first, nullptr, &problem);
  if (!problem.empty()) return {};
  std::vector<std::vector<PixelStage>> stages;
  return plan(first, frames, last, nullptr, &stages);
}

ChainOperation::Planned ChainOperation::planned(const ImageRef& in, const ImageRef& out,
                                                const Workspace& workspace) const {
  Planned p;
  std::string problem;
  p.frames = between(in, &workspace, &problem);
  if (!problem.empty()) throw OperationError(problem);
  p.launches = plan(in, p.frames, out, &workspace, &p.stages);
  return p;
}

void ChainOperation::enqueue_launch(const Launch& launch, const std::vector<PixelStage>& stages,
                                    const ImageRef& in, const ImageRef& out,
                                    const Workspace& workspace, int y0, int y1, bool rows,
                                    CUstream_st* stream) const {
  if (launch.first == launch.last) {
    const Workspace own = step_workspace(workspace, launch.first);
    if (rows)
      steps_[launch.first]->enqueue_cuda_rows(in, out, own, y0, y1, stream);
    else
      steps_[launch.first]->enqueue_cuda(in, out, own, stream);
    return;
  }
  // Per pixel, every output row from its own input row.
  const ImageRef a = rows ? image_rows(in, y0, y1) : in;
  const ImageRef b = rows ? image_rows(out, y0, y1) : out;
  const int n = static_cast<int>(stages.size());
  if (launch.user >= 0) {
    // A user's function sees the picture's own rows: its step takes no bands.
    if (rows && (y0 != 0 || y1 != out.height))
      throw OperationError(step_name(static_cast<size_t>(launch.user)) + " runs on whole frames");
    user_step(launch).enqueue_fused_cuda(a, b, launch.user_format, stages.data(), n, stream);
    return;
  }
  CO_CUDA_ONLY(fused_pixels_cuda(a, b, stages.data(), n, stream));
}

std::vector<std::string> ChainOperation::parts(PixelFormat in, PixelFormat out) const {
  std::vector<std::string> names;
  if (steps_.size() < 2) return names;
  for (const Launch& l : launches(in, out)) {
    std::string name = l.first == l.last ? "step " + std::to_string(l.first + 1)
                                         : "steps " + std::to_string(l.first + 1) + "-" +
                                               std::to_string(l.last + 1);
    for (size_t k = l.first; k <= l.last; ++k)
      name += (k == l.first ? " (" : ", ") + spec_->steps[k].name;
    names.push_back(name + ")");
  }
  return names;
}

void ChainOperation::enqueue_cuda_part(size_t part, const ImageRef& in, const ImageRef& out,
                                       const Workspace& workspace, CUstream_st* stream) const {
  const Planned p = planned(in, out, workspace);
  if (part >= p.launches.size())
    throw OperationError("the chain has no part " + std::to_string(part));
  const Launch& l = p.launches[part];
  enqueue_launch(l, p.stages[part], p.in_of(l, in), p.out_of(l, out, steps_.size()), workspace,
                 0, out.height, false, stream);
}

void ChainOperation::run_reference_part(size_t part, const ImageRef& in, const ImageRef& out,
                                        const Workspace& workspace) const {
  run_host(in, out, workspace, 0, -1, static_cast<long>(part), false);
}

void ChainOperation::run_cpu_part(size_t part, const ImageRef& in, const ImageRef& out,
                                  const Workspace& workspace) const {
  run_host(in, out, workspace, 0, -1, static_cast<long>(part), true);
}

void ChainOperation::enqueue_cuda(const ImageRef& in, const ImageRef& out,
                                  const Workspace& workspace, CUstream_st* stream) const {
  const Planned p = planned(in, out, workspace);
  for (size_t i = 0; i < p.launches.size(); ++i) {
    const Launch& l = p.launches[i];
    enqueue_launch(l, p.stages[i], p.in_of(l, in), p.out_of(l, out, steps_.size()), workspace,
                   0, out.height, false, stream);
  }
}

void ChainOperation::run_reference(const ImageRef& in, const ImageRef& out,
                                   const Workspace& workspace) const {
  run_host(in, out, workspace, 0, -1, -1, false);
}

void ChainOperation::run_cpu(const ImageRef& in, const ImageRef& out,
                             const Workspace& workspace) const {
  run_host(in, out, workspace, 0, -1, -1, true);
}

void ChainOperation::enqueue_cuda_rows(const ImageRef& in, const ImageRef& out,
                                       const Workspace& workspace, int y0, int y1,
                                       CUstream_st* stream) const {
  const Planned p = planned(in, out, workspace);
  const std::vector<RowRange> rows = band_rows(in, p.frames, out, y0, y1);
  for (size_t i = 0; i < p.launches.size(); ++i) {
    // A fused launch makes the rows its last step would.
    const Launch& l = p.launches[i];
    enqueue_launch(l, p.stages[i], p.in_of(l, in), p.out_of(l, out, steps_.size()), workspace,
                   rows[l.last].first, rows[l.last].last, true, stream);
  }
}

void ChainOperation::run_reference_rows(const ImageRef& in, const ImageRef& out,
                                        const Workspace& workspace, int y0, int y1) const {
  run_host(in, out, workspace, y0, y1, -1, false);
}

void ChainOperation::run_cpu_rows(const ImageRef& in, const ImageRef& out,
                                  const Workspace& workspace, int y0, int y1) const {
  run_host(in, out, workspace, y0, y1, -1, true);
}

void ChainOperation::run_host(const ImageRef& in, const ImageRef& out, const Workspace& workspace,
                              int y0, int y1, long part, bool fast) const {
  const size_t n = steps_.size();
  size_t first = 0, last = n - 1;
  std::vector<ImageRef> frames;
  if (part >= 0) {
    // The steps of launch `part`, one by one.
    Planned p = planned(in, out, workspace);
    if (static_cast<size_t>(part) >= p.launches.size())
      throw OperationError("the chain has no part " + std::to_string(part));
    first = p.launches[part].first;
    last = p.launches[part].last;
    frames = std::move(p.frames);
  } else {
    std::string problem;
    frames = between(in, &workspace, &problem);
    if (!problem.empty()) throw OperationError(problem);
  }
  std::vector<RowRange> rows;
  if (y1 >= 0) rows = band_rows(in, frames, out, y0, y1);
  for (size_t k = first; k <= last; ++k) {
    const ImageRef& from = k == 0 ? in : frames[k - 1];
    const ImageRef& to = k + 1 == n ? out : frames[k];
    const Workspace step = step_workspace(workspace, k);
    const Operation& op = *steps_[k];
    if (y1 >= 0 && fast)
      op.run_cpu_rows(from, to, step, rows[k].first, rows[k].last);
    else if (y1 >= 0)
      op.run_reference_rows(from, to, step, rows[k].first, rows[k].last);
    else if (fast)
      op.run_cpu(from, to, step);
    else
      op.run_reference(from, to, step);
  }
}

const OperationEntry& chain_entry() {
  static const OperationEntry entry{
      "chain",
      "Several kernels run back to back on the device, one PCIe round trip a frame (the chain "
      "property)",
      false,
      {},
      [](const KernelParams& params) -> std::shared_ptr<const Operation> {
        if (!params.chain) throw Error("kernel 'chain' runs the steps of the chain property");
        return std::make_shared<ChainOperation>(params.chain, params);
      }};
  return entry;
}

}  // namespace cudaoverlap
