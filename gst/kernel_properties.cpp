// See kernel_properties.h.
#include "kernel_properties.h"

#include "blur.h"

namespace cudaoverlap {
namespace {

// Offsets from first_id.
enum {
  OFFSET_VIDEO_DIRECTION,
  OFFSET_BRIGHTNESS,
  OFFSET_CONTRAST,
  OFFSET_SATURATION,
  OFFSET_HUE,
  OFFSET_SIGMA,
  N_OFFSETS,
};

}  // namespace

void KernelProperties::apply(KernelParams* params) const {
  params->flip = flip_direction_from_gst(video_direction);
  params->balance = balance;
  params->blur_sigma = sigma;
}

void install_kernel_properties(GObjectClass* klass, guint first_id, GParamFlags flags) {
  const BalanceParams defaults;
  g_object_class_install_property(
      klass, first_id + OFFSET_VIDEO_DIRECTION,
      g_param_spec_enum("video-direction", "Video direction",
                        "kernel=flip: rotation or mirror, with videoflip's values (auto and "
                        "custom are not taken); 90r, 90l, ul-lr and ur-ll swap width and height",
                        GST_TYPE_CUDA_OVERLAP_VIDEO_DIRECTION,
                        GST_CUDA_OVERLAP_VIDEO_DIRECTION_IDENTITY, flags));
  g_object_class_install_property(
      klass, first_id + OFFSET_BRIGHTNESS,
      g_param_spec_double("brightness", "Brightness",
                          "kernel=balance: added to luma as brightness * 255 (as videobalance)",
                          -1.0, 1.0, defaults.brightness, flags));
  g_object_class_install_property(
      klass, first_id + OFFSET_CONTRAST,
      g_param_spec_double("contrast", "Contrast",
                          "kernel=balance: luma gain around 16 (as videobalance)", 0.0, 2.0,
                          defaults.contrast, flags));
  g_object_class_install_property(
      klass, first_id + OFFSET_SATURATION,
      g_param_spec_double("saturation", "Saturation",
                          "kernel=balance: chroma gain around 128; 0 makes grey (as videobalance)",
                          0.0, 2.0, defaults.saturation, flags));
  g_object_class_install_property(
      klass, first_id + OFFSET_HUE,
      g_param_spec_double("hue", "Hue",
                          "kernel=balance: chroma rotation by hue * 180 degrees (as videobalance)",
                          -1.0, 1.0, defaults.hue, flags));
  g_object_class_install_property(
      klass, first_id + OFFSET_SIGMA,
      g_param_spec_double("sigma", "Sigma",
                          "kernel=blur: standard deviation of the Gaussian in pixels (the "
                          "kernel reaches 3 sigma each way; subsampled chroma is blurred by the "
                          "same extent on the picture)",
                          kBlurMinSigma, kBlurMaxSigma, KernelParams().blur_sigma, flags));
}

bool set_kernel_property(KernelProperties* props, guint first_id, guint prop_id,
                         const GValue* value) {
  if (prop_id < first_id || prop_id >= first_id + N_OFFSETS) return false;
  switch (prop_id - first_id) {
    case OFFSET_VIDEO_DIRECTION:
      props->video_direction = static_cast<GstCudaOverlapVideoDirection>(g_value_get_enum(value));
      break;
    case OFFSET_BRIGHTNESS:
      props->balance.brightness = g_value_get_double(value);
      break;
    case OFFSET_CONTRAST:
      props->balance.contrast = g_value_get_double(value);
      break;
    case OFFSET_SATURATION:
      props->balance.saturation = g_value_get_double(value);
      break;
    case OFFSET_HUE:
      props->balance.hue = g_value_get_double(value);
      break;
    case OFFSET_SIGMA:
      props->sigma = g_value_get_double(value);
      break;
  }
  return true;
}

bool get_kernel_property(const KernelProperties& props, guint first_id, guint prop_id,
                         GValue* value) {
  if (prop_id < first_id || prop_id >= first_id + N_OFFSETS) return false;
  switch (prop_id - first_id) {
    case OFFSET_VIDEO_DIRECTION:
      g_value_set_enum(value, props.video_direction);
      break;
    case OFFSET_BRIGHTNESS:
      g_value_set_double(value, props.balance.brightness);
      break;
    case OFFSET_CONTRAST:
      g_value_set_double(value, props.balance.contrast);
      break;
    case OFFSET_SATURATION:
      g_value_set_double(value, props.balance.saturation);
      break;
    case OFFSET_HUE:
      g_value_set_double(value, props.balance.hue);
      break;
    case OFFSET_SIGMA:
      g_value_set_double(value, props.sigma);
      break;
  }
  return true;
}

}  // namespace cudaoverlap
