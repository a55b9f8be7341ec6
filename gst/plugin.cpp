// The cudaoverlap plugin: registers the one element it holds.
#include <gst/gst.h>

#include "gstcudaoverlap.h"

static gboolean plugin_init(GstPlugin* plugin) { return GST_ELEMENT_REGISTER(cudaoverlap, plugin); }

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, cudaoverlap,
                  "Raw video processed on an NVIDIA GPU with upload, kernel and download "
                  "overlapped across frames",
                  plugin_init, VERSION, "LGPL", PACKAGE, ORIGIN)
