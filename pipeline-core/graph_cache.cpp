#include "graph_cache.h"

#include <algorithm>
#include <utility>

#include "engine.h"

namespace cudaoverlap {
namespace {

// A slot keeps up to kGraphsPerSlot graphs (engine.h), one per input memory
// it met (with the current operation). When it has that many, a new input
// takes the place of the one least recently run only if that one has not
// run for kStaleFrames frames (a buffer upstream freed); otherwise the new
// one goes call by call. So a pool of more buffers than that, taken in
// turn, has its first kGraphsPerSlot run as graphs and the others by
// calls, rather than every frame's graph captured anew for one launch.
constexpr uint64_t kStaleFrames = 4 * kGraphsPerSlot;  // times the ring size

}  // namespace

std::unique_ptr<Graph> capture_pass(const SlotPass& pass, const SlotEvents& events,
                                    const PassImages& images, const Operation& op,
                                    BandReading reading, Stage* stage) {
  Stream& upload = *pass.streams().upload;
  if (!upload.begin_capture()) return nullptr;
  bool complete = false;
  try {
    pass.enqueue(events, images, op, reading, false, stage);
    if (stage) *stage = Stage::kUpload;  // the launch after a capture
    // Joins the compute and download streams back into the upload stream.
    upload.wait(*events.computed[pass.bands() - 1]);
    upload.wait(*events.downloaded);
    complete = true;
  } catch (const Error&) {
    // A call that cannot be captured (or a real failure, which the frame's
    // enqueueing call by call then meets and reports).
  } catch (...) {
    (void)upload.end_capture();  // the streams back to normal
    throw;
  }
  std::unique_ptr<Graph> graph = upload.end_capture();
  if (!complete) return nullptr;
  return graph;
}

bool GraphCache::launch(int slot, uint64_t sequence, uint64_t memory_id, const SlotPass& pass,
                        const SlotEvents& events, const PassImages& images,
                        const std::shared_ptr<const Operation>& op, BandReading reading,
                        Stage* stage) {
  if (!op->capturable() || op == not_capturable_) return false;
  std::vector<CapturedFrame>& captured = slots_[slot];
  // Graphs of a replaced operation are of no more use.
  captured.erase(std::remove_if(captured.begin(), captured.end(),
                                [&](const CapturedFrame& f) { return f.operation != op; }),
                 captured.end());
  const ImageRef& source = images.source;
  auto same_source = [&](const CapturedFrame& f) {
    if (f.memory_id != memory_id) return false;
    for (int p = 0; p < planes_; ++p)
      if (f.source[p] != source.planes[p].data || f.stride[p] != source.planes[p].stride)
        return false;
    return true;
  };
  auto found = std::find_if(captured.begin(), captured.end(), same_source);
  if (found == captured.end()) {
    auto oldest = captured.end();
    if (captured.size() >= kGraphsPerSlot) {
      oldest = std::min_element(captured.begin(), captured.end(), [](const auto& a, const auto& b) {
        return a.last_used < b.last_used;
      });
      const uint64_t stale = kStaleFrames * static_cast<uint64_t>(ring_size_);
      if (sequence - oldest->last_used < stale) return false;
    }
    std::unique_ptr<Graph> graph = capture_pass(pass, events, images, *op, reading, stage);
    if (!graph) {
      not_capturable_ = op;
      return false;
    }
    if (oldest != captured.end()) captured.erase(oldest);
    captures_.fetch_add(1, std::memory_order_relaxed);
    CapturedFrame made;
    made.operation = op;
    made.memory_id = memory_id;
    for (int p = 0; p < planes_; ++p) {
      made.source[p] = source.planes[p].data;
      made.stride[p] = source.planes[p].stride;
    }
    made.graph = std::move(graph);
    captured.push_back(std::move(made));
    found = captured.end() - 1;
  }
  Stream& upload = *pass.streams().upload;
  upload.launch_graph(*found->graph);
  upload.record(*events.downloaded);
  found->last_used = sequence;
  frames_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace cudaoverlap
