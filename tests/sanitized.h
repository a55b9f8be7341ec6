// True in the sanitizers' unoptimised, instrumented builds
// (scripts/sanitize.sh), where code runs tens of times slower: tests there
// run smaller frames and fewer rounds.
#pragma once

namespace cudaoverlap::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

}  // namespace cudaoverlap::test
