// One process of the chaos soak: runs the workload against the given port and writes its
// history to a file for the parent to merge and check.
// Usage: chaos_worker PORT PREFIX PROCESS SECONDS SEED OUT
#include "chaos/scenario.hpp"
#include "chaos/workload.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: chaos_worker PORT PREFIX PROCESS SECONDS SEED OUT\n");
    return 2;
  }
  try {
    using namespace rlock::chaos;
    const auto port = static_cast<std::uint16_t>(std::stoi(argv[1]));
    workload_options o;
    o.cfg = chaos_config(port, argv[2], std::string("chaos-") + argv[3]);
    o.process = argv[3];
    o.names = {"n0", "n1", "n2", "n3", "n4"};
    o.coroutines = 8;
    o.threads = 2;
    o.duration = std::chrono::seconds(std::stoi(argv[4]));
    o.seed = std::stoull(argv[5]);
    recorder rec;
    const auto h = run_workload(o, rec);
    std::ofstream out(argv[6], std::ios::binary);
    out << h.serialize();
    return out ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "chaos_worker: %s\n", e.what());
    return 1;
  }
}
