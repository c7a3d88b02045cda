// Writes every malformed dataset of bad_datasets.hpp into a folder, one file per kind
// (<name>.h5), with the expected error part in <name>.expect, for the end-to-end CLI tests.
#include <cstdio>
#include <fstream>

#include "bad_datasets.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  for (const auto& c : ringtrain::test::bad_dataset_cases()) {
    const std::string base = std::string(argv[1]) + "/" + c.name;
    ringtrain::test::write_bad_dataset(base + ".h5", c.kind);
    std::ofstream(base + ".expect") << c.expected_message << "\n";
  }
  return 0;
}
