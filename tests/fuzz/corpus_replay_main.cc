// Replays fuzz inputs through a fuzz target's LLVMFuzzerTestOneInput without libFuzzer, so the
// normal (GCC) test build runs the seed corpora: each argument is a file or a directory of files.
// Exits 0 when every input ran (a finding aborts), 2 on an unreadable argument.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// Sized read rather than istreambuf_iterator, which GCC 12 at -O2 flags with a false
// -Wnull-dereference (the release preset builds this file too).
bool Replay(const std::filesystem::path& file) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  std::ifstream in(file, std::ios::binary);
  if (ec || !in) return false;
  std::string bytes(size, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) return false;
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int replayed = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(argv[i], ec)) {
      for (const auto& entry : std::filesystem::directory_iterator(argv[i], ec)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      files.push_back(argv[i]);
    }
    if (ec || files.empty()) {
      std::fprintf(stderr, "corpus replay: nothing to read in '%s'\n", argv[i]);
      return 2;
    }
    for (const auto& f : files) {
      if (!Replay(f)) {
        std::fprintf(stderr, "corpus replay: cannot read '%s'\n", f.c_str());
        return 2;
      }
      ++replayed;
    }
  }
  std::printf("replayed %d inputs\n", replayed);
  return replayed > 0 ? 0 : 2;
}
