// What session.cpp and session_configure.cpp share: the element's debug
// category, the one-error-a-run macro and the sentences of its messages.
// Internal to Session.
#pragma once

#include <gst/gst.h>
#include <gst/video/video.h>

#include <string>

#include "session.h"

GST_DEBUG_CATEGORY_EXTERN(cudaoverlap_session_debug);
#define GST_CAT_DEFAULT cudaoverlap_session_debug

// In a Session member: posts `message` as the run's GST_ELEMENT_ERROR unless
// one was posted.
#define SESSION_ERROR(domain, code, message)                                                  \
  do {                                                                                        \
    const std::string session_message_ = (message);                                           \
    if (claim_error())                                                                        \
      GST_ELEMENT_ERROR(element_, domain, code, ("%s", session_message_.c_str()), (nullptr)); \
    else                                                                                      \
      GST_WARNING_OBJECT(element_, "further error: %s", session_message_.c_str());            \
  } while (0)

namespace cudaoverlap {
namespace session_text {

// "1920x1080 NV12".
std::string describe(const GstVideoInfo& info, PixelFormat format);
std::string caps_text(GstCaps* caps);
// What the element takes with `settings`' kernel, for messages.
std::string takes(const SessionSettings& settings);

}  // namespace session_text
}  // namespace cudaoverlap
