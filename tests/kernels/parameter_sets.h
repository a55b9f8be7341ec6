// The parameter sets the kernel suites run every operation with: each
// built-in operation with its defaults, then more values of those that
// take parameters.
#pragma once

#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/balance/balance.h"

namespace cudaoverlap::test {

struct NamedParams {
  const char* name;
  const char* kernel;
  KernelParams params;
};

// Every operation of the registry with its default parameters (so a kernel
// added there is run here without a line of this file), then more
// parameters of those that take some.
inline std::vector<NamedParams> parameter_sets(long pixels) {
  std::vector<NamedParams> sets;
  // Every built-in kernel but chain, which runs a chain property's steps
  // (test_chain.cpp).
  for (const OperationEntry& entry : operation_registry())
    if (!entry.user_code && std::string(entry.name) != "chain")
      sets.push_back({"defaults", entry.name, {}});
  for (FlipDirection d : kAllDirections) {
    NamedParams n{direction_name(d), "flip", {}};
    n.params.set("video-direction", d);
    sets.push_back(n);
  }
  const BalanceParams balances[] = {
      {0.0, 1.0, 1.0, 0.0},    // defaults: a copy
      {0.2, 1.3, 1.5, 0.3},    // everything at once
      {-0.5, 0.4, 0.0, -1.0},  // grey, dark, hue at its end
      {1.0, 2.0, 2.0, 0.77},   // clamping everywhere
  };
  for (const BalanceParams& b : balances) {
    NamedParams n{"balance", "balance", {}};
    n.params.set("brightness", b.brightness)
        .set("contrast", b.contrast)
        .set("saturation", b.saturation)
        .set("hue", b.hue);
    sets.push_back(n);
  }
  // sigma 20 (121 taps) only up to 1080p: its CPU reference at 4K would
  // take most of a minute per format.
  // scale's other methods (its default, bilinear, is above) up to 1080p:
  // its references at 4K take seconds a format.
  for (int method : {0, 2, 3}) {
    if (method != 0 && pixels > 1920 * 1080) continue;
    NamedParams n{"method", "scale", {}};
    n.params.set("method", method);
    sets.push_back(n);
  }
  for (double sigma : {0.5, 2.0, 7.3, 20.0}) {
    if (sigma > 10 && pixels > 1920 * 1080) continue;
    NamedParams n{"blur", "blur", {}};
    n.params.set("sigma", sigma);
    sets.push_back(n);
  }
  return sets;
}

}  // namespace cudaoverlap::test
