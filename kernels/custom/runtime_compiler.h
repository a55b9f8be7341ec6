// Compiling CUDA C at run time (NVRTC), with a cache on disk, for kernels
// whose source the element only learns when it starts (kernel=custom).
//
// A program is compiled for one GPU architecture to a cubin, or to PTX when
// the device is newer than NVRTC knows (the driver then finishes it). The
// result is cached under a key made of everything that shapes it: the
// program text, the headers, the options, the names asked for and NVRTC's
// version; the next process to ask for the same key reads it back instead
// of compiling. Nothing here needs a GPU: a program compiles on any
// machine with the toolkit.
//
// This header holds no CUDA syntax; runtime_compiler.cu is built only with
// CUDA (without it, compile_program throws).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cudaoverlap {

struct ProgramSource {
  std::string text;  // the whole translation unit
  std::string name;  // NVRTC's name for it, in its messages
  // Headers the text may #include, by the name it includes them with.
  std::vector<std::pair<std::string, std::string>> headers;
  // Names of __global__ functions whose symbols the caller needs
  // ("process", "ns::kernel<int>"); their lowered names come back in order.
  std::vector<std::string> kernels;
  int arch = 90;  // compute capability major * 10 + minor
};

struct CompiledProgram {
  std::vector<char> image;  // cubin or PTX (NUL-terminated)
  bool ptx = false;
  std::vector<std::string> kernel_symbols;  // ProgramSource::kernels, lowered
  std::string log;                          // NVRTC's warnings, if any
  bool from_cache = false;
  double milliseconds = 0;  // compiling, or reading the cache
  std::string target;       // "sm_90", or "compute_120" (PTX)
};

// Compiles `source`, or reads it back from `cache_dir` (empty: no disk
// cache). Throws Error whose message is NVRTC's log, with file names and
// line numbers, when it does not compile. Any thread; compiles run one at
// a time.
CompiledProgram compile_program(const ProgramSource& source, const std::string& cache_dir);

// Removes `source`'s entry for `target` from `cache_dir`: one that read back
// but would not load, so the next compile_program makes it again.
void forget_program(const ProgramSource& source, const std::string& target,
                    const std::string& cache_dir);

// Where compiled programs are kept: $CUDAOVERLAP_KERNEL_CACHE when set
// (empty: nowhere), else $XDG_CACHE_HOME/cudaoverlap/kernels, else
// ~/.cache/cudaoverlap/kernels.
std::string kernel_cache_dir();

// "13.0": NVRTC's version, for messages and benchmarks; "" without CUDA.
std::string runtime_compiler_version();

}  // namespace cudaoverlap
