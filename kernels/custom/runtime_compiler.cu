// NVRTC and the disk cache behind compile_program; see runtime_compiler.h.
#include <cuda_runtime_api.h>  // CUDART_VERSION: the toolkit's NVRTC soname
#include <dlfcn.h>
#include <nvrtc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>

#include "kernels/custom/runtime_compiler.h"
#include "kernels/error.h"

namespace cudaoverlap {
namespace {

// NVRTC, opened when the first program is compiled rather than linked: a
// machine without it (a CUDA runtime image, a driver-only host) still loads
// the plugin and runs every other kernel; kernel=custom then says what is
// missing.
struct Nvrtc {
#define CO_NVRTC_FUNCTION(name) decltype(&::name) name = nullptr;
  CO_NVRTC_FUNCTION(nvrtcVersion)
  CO_NVRTC_FUNCTION(nvrtcGetErrorString)
  CO_NVRTC_FUNCTION(nvrtcCreateProgram)
  CO_NVRTC_FUNCTION(nvrtcDestroyProgram)
  CO_NVRTC_FUNCTION(nvrtcCompileProgram)
  CO_NVRTC_FUNCTION(nvrtcGetProgramLogSize)
  CO_NVRTC_FUNCTION(nvrtcGetProgramLog)
  CO_NVRTC_FUNCTION(nvrtcGetNumSupportedArchs)
  CO_NVRTC_FUNCTION(nvrtcGetSupportedArchs)
  CO_NVRTC_FUNCTION(nvrtcAddNameExpression)
  CO_NVRTC_FUNCTION(nvrtcGetLoweredName)
  CO_NVRTC_FUNCTION(nvrtcGetPTXSize)
  CO_NVRTC_FUNCTION(nvrtcGetPTX)
  CO_NVRTC_FUNCTION(nvrtcGetCUBINSize)
  CO_NVRTC_FUNCTION(nvrtcGetCUBIN)
#undef CO_NVRTC_FUNCTION
  std::string problem;  // why NVRTC cannot be used; empty when it can
};

const Nvrtc& nvrtc() {
  static const Nvrtc loaded = [] {
    Nvrtc n;
    const std::string soname = "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000);
    void* library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) library = dlopen("libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char* why = dlerror();
      n.problem =
          "kernel=custom compiles with NVRTC (" + soname +
          ", from the CUDA toolkit), which cannot be loaded here: " + (why ? why : "not found");
      return n;
    }
    // Never closed: programs and their names live as long as the process.
#define CO_NVRTC_LOAD(name)                                           \
  n.name = reinterpret_cast<decltype(n.name)>(dlsym(library, #name)); \
  if (!n.name && n.problem.empty())                                   \
    n.problem = soname + " has no " #name ": an NVRTC older than this build";
    CO_NVRTC_LOAD(nvrtcVersion)
    CO_NVRTC_LOAD(nvrtcGetErrorString)
    CO_NVRTC_LOAD(nvrtcCreateProgram)
    CO_NVRTC_LOAD(nvrtcDestroyProgram)
    CO_NVRTC_LOAD(nvrtcCompileProgram)
    CO_NVRTC_LOAD(nvrtcGetProgramLogSize)
    CO_NVRTC_LOAD(nvrtcGetProgramLog)
    CO_NVRTC_LOAD(nvrtcGetNumSupportedArchs)
    CO_NVRTC_LOAD(nvrtcGetSupportedArchs)
    CO_NVRTC_LOAD(nvrtcAddNameExpression)
    CO_NVRTC_LOAD(nvrtcGetLoweredName)
    CO_NVRTC_LOAD(nvrtcGetPTXSize)
    CO_NVRTC_LOAD(nvrtcGetPTX)
    CO_NVRTC_LOAD(nvrtcGetCUBINSize)
    CO_NVRTC_LOAD(nvrtcGetCUBIN)
#undef CO_NVRTC_LOAD
    return n;
  }();
  return loaded;
}

// NVRTC's functions; throws Error saying why when it cannot be loaded.
const Nvrtc& api() {
  const Nvrtc& n = nvrtc();
  if (!n.problem.empty()) throw Error(n.problem);
  return n;
}

// One NVRTC program, destroyed however the compile ends.
class NvrtcProgram {
 public:
  explicit NvrtcProgram(const ProgramSource& source) {
    std::vector<const char*> texts, names;
    for (const auto& header : source.headers) {
      names.push_back(header.first.c_str());
      texts.push_back(header.second.c_str());
    }
    check(api().nvrtcCreateProgram(&program_, source.text.c_str(), source.name.c_str(),
                                   static_cast<int>(texts.size()), texts.data(), names.data()),
          "nvrtcCreateProgram");
  }
  ~NvrtcProgram() {
    if (program_) nvrtc().nvrtcDestroyProgram(&program_);  // loaded: there is a program
  }
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;
  nvrtcProgram get() const { return program_; }

  static void check(nvrtcResult result, const char* call) {
    if (result != NVRTC_SUCCESS)
      throw Error(std::string(call) + " failed: " + api().nvrtcGetErrorString(result));
  }

 private:
  nvrtcProgram program_ = nullptr;
};

std::string program_log(nvrtcProgram program) {
  size_t size = 0;
  if (api().nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return {};
  std::string log(size, '\0');
  if (api().nvrtcGetProgramLog(program, &log[0]) != NVRTC_SUCCESS) return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// The cubin target for `arch` where NVRTC can make one, else PTX for the
// newest architecture it knows (which the driver compiles for a newer GPU).
std::string target_for(int arch, bool* ptx) {
  int n = 0;
  NvrtcProgram::check(api().nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<size_t>(n));
  if (n > 0)
    NvrtcProgram::check(api().nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  if (std::find(archs.begin(), archs.end(), arch) != archs.end()) {
    *ptx = false;
    return "sm_" + std::to_string(arch);
  }
  int best = 0;
  for (int a : archs)
    if (a <= arch) best = std::max(best, a);
  if (best == 0)
    throw Error("NVRTC " + runtime_compiler_version() + " cannot compile for compute capability " +
                std::to_string(arch / 10) + "." + std::to_string(arch % 10));
  *ptx = true;
  return "compute_" + std::to_string(best);
}

// FNV-1a, 64 bits: names a cache file; the file holds the whole key, so a
// collision reads as a miss.
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// -default-device: helper functions without __device__ are device code,
// as a kernel author expects in a file that holds nothing else.
const char* const kOptions[] = {"-std=c++17", "-default-device"};

std::string cache_key(const ProgramSource& source, const std::string& target) {
  std::ostringstream key;
  key << "nvrtc " << runtime_compiler_version() << "\ntarget " << target << "\n";
  for (const char* option : kOptions) key << "option " << option << "\n";
  for (const auto& k : source.kernels) key << "kernel " << k << "\n";
  for (const auto& h : source.headers)
    key << "header " << h.first << " " << h.second.size() << "\n" << h.second << "\n";
  key << "program " << source.name << " " << source.text.size() << "\n" << source.text;
  return key.str();
}

constexpr char kMagic[] = "cudaoverlap compiled program 1\n";

// Cache file: magic, then length-prefixed key, kernel symbols and image.
void put_blob(std::string& out, const std::string& blob) {
  out += std::to_string(blob.size()) + "\n" + blob;
}
bool get_blob(const std::string& in, size_t* pos, std::string* blob) {
  const size_t nl = in.find('\n', *pos);
  if (nl == std::string::npos) return false;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(in.c_str() + *pos, &end, 10);
  if (end != in.c_str() + nl || nl + 1 + n > in.size()) return false;
  *blob = in.substr(nl + 1, n);
  *pos = nl + 1 + n;
  return true;
}

std::string cache_path(const std::string& dir, const std::string& key) {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(fnv1a(key)));
  return dir + "/" + name;
}

bool read_cache(const std::string& dir, const std::string& key, CompiledProgram* out) {
  std::ifstream file(cache_path(dir, key), std::ios::binary);
  if (!file) return false;
  const std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (data.compare(0, sizeof kMagic - 1, kMagic) != 0) return false;
  size_t pos = sizeof kMagic - 1;
  std::string stored_key, symbols, image;
  if (!get_blob(data, &pos, &stored_key) || stored_key != key) return false;
  if (!get_blob(data, &pos, &symbols) || !get_blob(data, &pos, &image)) return false;
  out->kernel_symbols.clear();
  std::istringstream lines(symbols);
  for (std::string line; std::getline(lines, line);) out->kernel_symbols.push_back(line);
  out->image.assign(image.begin(), image.end());
  return true;
}

// mkdir -p, owner only (the programs run as the user's code).
void make_dirs(const std::string& dir) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    mkdir(dir.substr(0, slash).c_str(), 0700);
    if (slash == std::string::npos) break;
  }
}

// Best effort: a cache that cannot be written costs the next start a
// compile, nothing else. Written to a file of its own and renamed, so a
// reader never sees half of one.
void write_cache(const std::string& dir, const std::string& key, const CompiledProgram& program) {
  make_dirs(dir);
  std::string symbols;
  for (const auto& s : program.kernel_symbols) symbols += s + "\n";
  std::string data = kMagic;
  put_blob(data, key);
  put_blob(data, symbols);
  put_blob(data, std::string(program.image.begin(), program.image.end()));
  const std::string path = cache_path(dir, key);
  // Other processes (other containers sharing the directory too) may write
  // the same entry at once: a name of this writer's own.
  std::ostringstream temporary_name;
  temporary_name << path << "." << getpid() << "." << std::this_thread::get_id() << "."
                 << std::chrono::steady_clock::now().time_since_epoch().count() << ".tmp";
  const std::string temporary = temporary_name.str();
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file.write(data.data(), static_cast<std::streamsize>(data.size()))) {
      std::remove(temporary.c_str());
      return;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) std::remove(temporary.c_str());
}

std::mutex& compile_mutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

std::string runtime_compiler_version() {
  int major = 0, minor = 0;
  const Nvrtc& n = nvrtc();
  if (!n.problem.empty()) return "unavailable";
  if (n.nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

void forget_program(const ProgramSource& source, const std::string& target,
                    const std::string& cache_dir) {
  if (!cache_dir.empty()) std::remove(cache_path(cache_dir, cache_key(source, target)).c_str());
}

std::string kernel_cache_dir() {
  if (const char* dir = std::getenv("CUDAOVERLAP_KERNEL_CACHE")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/cudaoverlap/kernels";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/cudaoverlap/kernels";
  return {};
}

CompiledProgram compile_program(const ProgramSource& source, const std::string& cache_dir) {
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
        .count();
  };
  CompiledProgram result;
  result.target = target_for(source.arch, &result.ptx);
  const std::string key = cache_key(source, result.target);
  std::lock_guard<std::mutex> lock(compile_mutex());
  if (!cache_dir.empty() && read_cache(cache_dir, key, &result) &&
      result.kernel_symbols.size() == source.kernels.size()) {
    result.from_cache = true;
    result.milliseconds = elapsed_ms();
    return result;
  }

  NvrtcProgram program(source);
  for (const auto& k : source.kernels)
    NvrtcProgram::check(api().nvrtcAddNameExpression(program.get(), k.c_str()),
                        "nvrtcAddNameExpression");
  const std::string arch_option = "--gpu-architecture=" + result.target;
  std::vector<const char*> options = {arch_option.c_str()};
  for (const char* option : kOptions) options.push_back(option);
  const nvrtcResult compiled =
      api().nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());
  result.log = program_log(program.get());
  if (compiled != NVRTC_SUCCESS)
    throw Error(result.log.empty() ? std::string(api().nvrtcGetErrorString(compiled)) : result.log);

  size_t size = 0;
  if (result.ptx) {
    NvrtcProgram::check(api().nvrtcGetPTXSize(program.get(), &size), "nvrtcGetPTXSize");
    result.image.resize(size);
    NvrtcProgram::check(api().nvrtcGetPTX(program.get(), result.image.data()), "nvrtcGetPTX");
  } else {
    NvrtcProgram::check(api().nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize");
    result.image.resize(size);
    NvrtcProgram::check(api().nvrtcGetCUBIN(program.get(), result.image.data()), "nvrtcGetCUBIN");
  }
  for (const auto& k : source.kernels) {
    const char* lowered = nullptr;
    NvrtcProgram::check(api().nvrtcGetLoweredName(program.get(), k.c_str(), &lowered),
                        "nvrtcGetLoweredName");
    result.kernel_symbols.push_back(lowered);
  }
  if (!cache_dir.empty()) write_cache(cache_dir, key, result);
  result.milliseconds = elapsed_ms();
  return result;
}

}  // namespace cudaoverlap
