// Loopback load test of `scalemodel ui` (docs/ui.md): REQUESTS API calls
// (roofline, model, collective, system in turn)
// from CLIENTS concurrent keep-alive clients against a server in this
// process; every answer must be HTTP 200 and byte-identical to the CLI's
// --json, and the resident memory may grow by at most MAX_GROWTH_MIB after
// a warm-up. Prints the throughput and the RSS before and after.
//   ui_load_test [REQUESTS=10000] [CLIENTS=16] [MAX_GROWTH_MIB=64]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "httplib.h"
#include "run.h"
#include "server.h"

namespace {

// VmRSS of this process in MiB (Linux).
double RssMib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stod(line.substr(6)) / 1024.0;
    }
  }
  return -1;
}

struct Call {
  std::string path;
  std::string body;
  std::string expected;  // the CLI's --json
};

std::vector<Call> Calls() {
  std::vector<Call> calls = {
      {"/api/roofline", R"({"chip": "h100", "matmul": "4096x8192x8192"})", ""},
      {"/api/model", R"({"name": "llama3-8b", "seq": 8192})", ""},
      {"/api/collective",
       R"({"kind": "all-gather", "system": "tpu-v5p:4x4x4", "axes": "x",
           "bytes": "8MiB"})",
       ""},
      {"/api/system", R"({"name": "h100:8x4"})", ""},
  };
  const std::vector<std::vector<std::string>> args = {
      {"roofline", "--chip", "h100", "--matmul", "4096x8192x8192", "--json"},
      {"model", "llama3-8b", "--seq", "8192", "--json"},
      {"collective", "all-gather", "--system", "tpu-v5p:4x4x4", "--axes", "x",
       "--bytes", "8MiB", "--json"},
      {"system", "h100:8x4", "--json"},
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    std::ostringstream out, err;
    if (scalemodel::cli::RunCli(args[i], out, err) != 0) {
      std::cerr << "CLI failed: " << err.str();
      std::exit(1);
    }
    calls[i].expected = out.str();
  }
  return calls;
}

// `count` requests from `clients` threads; returns the failures.
int Hammer(int port, const std::vector<Call>& calls, int count, int clients) {
  std::atomic<int> next{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      httplib::Client client("127.0.0.1", port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(60);
      for (int i = next++; i < count; i = next++) {
        const Call& call = calls[static_cast<size_t>(i) % calls.size()];
        auto r = client.Post(call.path, call.body, "application/json");
        if (!r || r->status != 200 || r->body != call.expected) {
          if (failures++ < 5) {
            std::cerr << "request " << i << " " << call.path << ": "
                      << (r ? std::to_string(r->status) + " " +
                                  r->body.substr(0, 200)
                            : httplib::to_string(r.error()))
                      << "\n";
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return failures;
}

}  // namespace

int main(int argc, char** argv) {
  const int requests = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int clients = argc > 2 ? std::atoi(argv[2]) : 16;
  const double max_growth = argc > 3 ? std::atof(argv[3]) : 64;
  const std::vector<Call> calls = Calls();
  scalemodel::ui::ServerOptions options;
  options.port = 0;
  scalemodel::ui::Server server(options);
  std::string error;
  if (!server.Bind(error)) {
    std::cerr << error << "\n";
    return 1;
  }
  std::thread listener([&] { server.Listen(); });
  const int warmup = std::min(200, requests);
  int failures = Hammer(server.port(), calls, warmup, clients);
  const double rss_before = RssMib();
  const auto t0 = std::chrono::steady_clock::now();
  failures += Hammer(server.port(), calls, requests, clients);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  const double rss_after = RssMib();
  server.Stop();
  listener.join();
  std::printf(
      "%d requests from %d clients in %.2f s (%.0f requests/s), %d failed; "
      "RSS %.1f MiB before, %.1f MiB after (growth %.1f MiB, bound %.0f)\n",
      requests, clients, seconds, requests / seconds, failures, rss_before,
      rss_after, rss_after - rss_before, max_growth);
  return failures == 0 && rss_after - rss_before <= max_growth ? 0 : 1;
}
