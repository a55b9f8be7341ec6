// The instruction sets the cpu backend's fast paths may use beyond the
// build's baseline (x86-64: SSE2): what the processor has, less what a
// test turned off to run the narrower paths on a machine that has more.
#pragma once

namespace cudaoverlap {

// True where the fast paths may run their AVX2 code.
bool cpu_avx2();

// Tests: false keeps the fast paths on their baseline code, true gives
// them back what the processor has.
void cpu_allow_avx2(bool allow);

}  // namespace cudaoverlap
