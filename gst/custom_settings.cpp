// See custom_settings.h.
#include "custom_settings.h"

#include <cstdio>

#include "kernels/custom/custom.h"

namespace cudaoverlap {
namespace {

struct FieldContext {
  std::vector<CustomParam>* params;
  std::string problem;
};

gboolean add_field(GQuark field, const GValue* value, gpointer user_data) {
  auto* context = static_cast<FieldContext*>(user_data);
  CustomParam p;
  p.name = g_quark_to_string(field);
  const GType type = G_VALUE_TYPE(value);
  if (type == G_TYPE_INT) {
    p.type = CustomParam::Type::kInt;
    p.value = g_value_get_int(value);
  } else if (type == G_TYPE_UINT) {
    p.type = CustomParam::Type::kUInt;
    p.value = g_value_get_uint(value);
  } else if (type == G_TYPE_FLOAT) {
    p.type = CustomParam::Type::kFloat;
    p.value = g_value_get_float(value);
  } else if (type == G_TYPE_DOUBLE) {
    p.type = CustomParam::Type::kDouble;
    p.value = g_value_get_double(value);
  } else if (type == G_TYPE_BOOLEAN) {
    p.type = CustomParam::Type::kBool;
    p.value = g_value_get_boolean(value) ? 1 : 0;
  } else {
    context->problem = "kernel-params field '" + p.name + "' is a " + g_type_name(type) +
                       "; a kernel takes (int), (uint), (float), (double) and (boolean) fields";
    return FALSE;
  }
  context->params->push_back(p);
  return TRUE;
}

}  // namespace

std::string custom_params_from_structure(const GstStructure* structure,
                                         std::vector<CustomParam>* params) {
  params->clear();
  if (!structure) return {};
  FieldContext context{params, {}};
  gst_structure_foreach(structure, add_field, &context);
  return context.problem;
}

namespace {

// A decimal number at `*p`, moved past it; false when there is none or it
// does not fit an int (sscanf's %d would be undefined there).
bool parse_count(const char** p, int* value) {
  long long v = 0;
  const char* s = *p;
  if (*s < '0' || *s > '9') return false;
  for (; *s >= '0' && *s <= '9'; ++s) {
    v = v * 10 + (*s - '0');
    if (v > G_MAXINT) return false;
  }
  *value = static_cast<int>(v);
  *p = s;
  return true;
}

// "AxB" at `*p`, moved past it.
bool parse_pair(const char** p, int* a, int* b) {
  if (!parse_count(p, a) || **p != 'x') return false;
  ++*p;
  return parse_count(p, b);
}

}  // namespace

std::string custom_launch_from_string(const std::string& text, CustomKernelParams* params) {
  params->block_x = params->block_y = 0;
  params->pixels_x = params->pixels_y = 1;
  if (text.empty()) return {};
  int bx = 0, by = 0, px = 1, py = 1;
  const char* p = text.c_str();
  bool ok = parse_pair(&p, &bx, &by);
  if (ok && *p == '/') {
    ++p;
    ok = parse_pair(&p, &px, &py);
  }
  if (!ok || *p != '\0' || bx < 1 || by < 1 || px < 1 || py < 1)
    return "kernel-launch '" + text +
           "' is not a launch shape: give the block as WxH (\"32x8\"), optionally with the pixels "
           "each thread covers (\"32x8/4x1\"), each a whole number from 1 to 2147483647";
  params->block_x = bx;
  params->block_y = by;
  params->pixels_x = px;
  params->pixels_y = py;
  return {};
}

std::string custom_source_from_file(const std::string& path, CustomKernelParams* params) {
  gchar* contents = nullptr;
  gsize length = 0;
  GError* error = nullptr;
  if (!g_file_get_contents(path.c_str(), &contents, &length, &error)) {
    std::string problem = "kernel-file '" + path + "' cannot be read: " + error->message;
    g_error_free(error);
    return problem;
  }
  params->source.assign(contents, length);
  g_free(contents);
  gchar* base = g_path_get_basename(path.c_str());
  params->source_name = base;
  g_free(base);
  return {};
}

std::shared_ptr<const ChainSpec> load_chain_kernels(const std::shared_ptr<const ChainSpec>& spec,
                                                    std::string* problem) {
  problem->clear();
  if (!spec || !chain_has_custom(*spec)) return spec;
  auto loaded = std::make_shared<ChainSpec>(*spec);
  for (size_t k = 0; k < loaded->steps.size(); ++k) {
    ChainStep& step = loaded->steps[k];
    if (step.name != "custom") continue;
    CustomKernelParams params;
    std::string file;
    for (const auto& [word, value] : step.texts) {
      if (!problem->empty()) break;
      if (word == "kernel-file") {
        file = value;
      } else if (word == "kernel-source") {
        params.source = value;
      } else if (word == "kernel-entry") {
        params.entry = value;
      } else if (word == "kernel-launch") {
        *problem = custom_launch_from_string(value, &params);
      } else if (word == "kernel-params") {
        GstStructure* structure = gst_structure_from_string(value.c_str(), nullptr);
        if (structure == nullptr)
          *problem = "kernel-params \"" + value +
                     "\" is not a GstStructure (\"params, amount=(float)0.8\")";
        else
          *problem = custom_params_from_structure(structure, &params.params);
        if (structure != nullptr) gst_structure_free(structure);
      }
    }
    if (problem->empty() && !file.empty()) {
      if (!params.source.empty())
        *problem = "kernel-file and kernel-source are both set: give the kernel's source once";
      else
        *problem = custom_source_from_file(file, &params);
    }
    if (problem->empty() && params.source.empty())
      *problem = "give the kernel as kernel-file=PATH or kernel-source=\"...\"";
    if (problem->empty()) *problem = check_custom_params(params);
    if (!problem->empty()) {
      *problem = "chain step " + std::to_string(k + 1) + " (custom): " + *problem;
      return nullptr;
    }
    step.custom = std::make_shared<const CustomKernelParams>(std::move(params));
  }
  return loaded;
}

}  // namespace cudaoverlap
