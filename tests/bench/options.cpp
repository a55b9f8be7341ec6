// cudaoverlap-bench's command line: its forms (usage()) and the options
// read into Options.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "bench.h"

namespace cudaoverlap::bench {
namespace {

// The format GStreamer calls `name` (format_info's names).
bool format_named(const std::string& name, PixelFormat* format) {
  for (PixelFormat f : all_pixel_formats())
    if (name == format_info(f).name) {
      *format = f;
      return true;
    }
  return false;
}

}  // namespace

int usage(const char* why) {
  std::fprintf(
      stderr,
      "cudaoverlap-bench: %s\nusage: cudaoverlap-bench [--backend auto|cuda|cpu] "
      "[--frames N] [--warmup N] [--runs N] [--ring N] [--rings 2,3,4,6] "
      "[--sizes 720p,1080p,4k] [--synthetic-us N] [--no-pageable]\n"
      "       cudaoverlap-bench --live [--live-fps N] [--live-frames N] [--sizes ...]\n"
      "       cudaoverlap-bench --calls [--sizes ...] [--frames N] [--warmup N] [--ring N] "
      "[--live-fps N] [--live-frames N]\n"
      "       cudaoverlap-bench --kernels [--iterations N] "
      "[--hbm-gbps G] [--no-hold] [--all-pairs | --pairs FROM:TO,... | --only KERNEL:FORMAT,...]\n       "
      "cudaoverlap-bench --staging "
      "[--backend auto|cuda|cpu] "
      "[--repeats N] [--register-runs N]\n"
      "       cudaoverlap-bench --devices all|0,1,... (cpu backend: a count) "
      "[--backend auto|cuda|cpu] [--sizes ...] [--frames N] [--warmup N] [--runs N] "
      "[--ring N] [--synthetic-us N] [--stand-in-link-us N (cpu)]\n",
      why);
  return 2;
}

std::vector<std::string> split_commas(const std::string& value) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= value.size()) {
    const size_t comma = value.find(',', at);
    parts.push_back(value.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return parts;
}

int parse_options(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") return usage("measures the engine alone");
    if (arg == "--kernels") {
      opt->kernels = true;
      continue;
    }
    if (arg == "--staging") {
      opt->staging = true;
      continue;
    }
    if (arg == "--live") {
      opt->live = true;
      continue;
    }
    if (arg == "--calls") {
      opt->calls = true;
      continue;
    }
    if (arg == "--no-pageable") {
      opt->pageable = false;
      continue;
    }
    if (arg == "--no-hold") {
      opt->hold = false;
      continue;
    }
    if (arg == "--all-pairs") {
      opt->all_pairs = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("missing value for " + arg).c_str());
    const std::string value = argv[++i];
    if (arg == "--backend") {
      opt->backend = value;
    } else if (arg == "--frames") {
      opt->frames = std::atoi(value.c_str());
    } else if (arg == "--warmup") {
      opt->warmup = std::atoi(value.c_str());
    } else if (arg == "--ring") {
      opt->ring = std::atoi(value.c_str());
    } else if (arg == "--stand-in-link-us") {
      opt->stand_in_link_us = std::atoi(value.c_str());
    } else if (arg == "--synthetic-us") {
      opt->synthetic_us = std::atoi(value.c_str());
    } else if (arg == "--iterations") {
      opt->iterations = std::atoi(value.c_str());
    } else if (arg == "--hbm-gbps") {
      opt->hbm_gbps = std::atof(value.c_str());
    } else if (arg == "--repeats") {
      opt->repeats = std::atoi(value.c_str());
    } else if (arg == "--register-runs") {
      opt->register_runs = std::atoi(value.c_str());
    } else if (arg == "--pairs") {
      for (const std::string& pair : split_commas(value)) {
        const size_t colon = pair.find(':');
        PixelFormat from, to;
        if (colon == std::string::npos || !format_named(pair.substr(0, colon), &from) ||
            !format_named(pair.substr(colon + 1), &to))
          return usage(("--pairs takes FROM:TO format names, not " + pair).c_str());
        opt->pairs.push_back({from, to});
      }
    } else if (arg == "--only") {
      for (const std::string& row : split_commas(value)) {
        const size_t colon = row.rfind(':');
        PixelFormat format;
        if (colon == std::string::npos || !format_named(row.substr(colon + 1), &format))
          return usage(("--only takes KERNEL:FORMAT, not " + row).c_str());
        opt->only.push_back({row.substr(0, colon), format});
      }
    } else if (arg == "--sizes") {
      opt->sizes = split_commas(value);
    } else if (arg == "--runs") {
      opt->runs = std::atoi(value.c_str());
    } else if (arg == "--rings") {
      opt->rings.clear();
      for (const std::string& r : split_commas(value)) opt->rings.push_back(std::atoi(r.c_str()));
    } else if (arg == "--live-fps") {
      opt->live_fps = std::atoi(value.c_str());
    } else if (arg == "--live-frames") {
      opt->live_frames = std::atoi(value.c_str());
    } else if (arg == "--devices") {
      opt->devices = value;
      if (opt->devices.empty()) return usage("--devices takes all or a list such as 0,1");
    } else {
      return usage(("unknown option " + arg).c_str());
    }
  }
  if (opt->frames <= 0 || opt->warmup < 0) return usage("--frames must be positive");
  if (opt->runs <= 0 || opt->live_frames < 4 || opt->live_fps < 0 || opt->rings.empty())
    return usage("--runs and --rings must be positive, --live-frames at least 4");
  for (int r : opt->rings)
    if (r < 1 || r > 16) return usage("--rings takes ring sizes from 1 to 16");
  if (opt->iterations <= 0 || opt->hbm_gbps < 0)
    return usage("--iterations must be positive and --hbm-gbps not negative");
  if (opt->repeats <= 0 || opt->register_runs <= 0)
    return usage("--repeats and --register-runs must be positive");
  if (!opt->devices.empty() && (opt->kernels || opt->staging || opt->live))
    return usage("--devices is a table of its own: not with --kernels, --staging or --live");
  return -1;
}

}  // namespace cudaoverlap::bench
