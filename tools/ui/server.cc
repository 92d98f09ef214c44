// The ui's HTTP server (server.h): POST /api/<command> through RunCli with
// a time limit, the page's files from the binary.
#include "server.h"

#include <sys/socket.h>  // listen, shutdown (POSIX)

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>  // mkdtemp (POSIX)
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "httplib.h"
#include "run.h"
#include "scalemodel/base/strings.h"

namespace scalemodel::ui {
namespace {

// What one RunCli call printed.
struct RunOutput {
  int code = 0;
  std::string out;
  std::string err;
};

// A command running on its own thread: the handler waits for it up to the
// time limit, then asks it to stop (plan train polls) and answers 503; the
// thread finishes on its own and frees this.
struct RunState {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  std::atomic<bool> cancel{false};
  RunOutput result;
};

// The count of command threads still running, and a flag that asks each of
// them to stop (the server is going away).
struct Running {
  std::mutex mu;
  std::condition_variable cv;
  int count = 0;
  std::atomic<bool> stop{false};

  int Count() {
    std::lock_guard<std::mutex> lock(mu);
    return count;
  }
  void Add() {
    std::lock_guard<std::mutex> lock(mu);
    ++count;
  }
  void Done() {
    std::lock_guard<std::mutex> lock(mu);
    --count;
    cv.notify_all();
  }
  // Asks every command to stop and waits until none runs. plan train stops
  // within its polling interval; other commands finish within the time
  // limit's order of magnitude, since they are quick.
  void StopAndWait() {
    stop = true;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [this] { return count == 0; });
  }
};

// The page served when the binary was built without web/dist.
constexpr const char* kNoPage =
    "<!doctype html><html><head><meta charset=\"utf-8\"><title>scalemodel "
    "ui</title></head><body style=\"font-family:sans-serif;max-width:40em;"
    "margin:3em auto\"><h1>scalemodel ui</h1><p>The API is up (POST "
    "<code>/api/&lt;command&gt;</code>, docs/ui.md), but this binary was "
    "built without the page. Build it with npm, then rebuild "
    "scalemodel:</p><pre>cd web &amp;&amp; npm ci &amp;&amp; npm run build\n"
    "cd .. &amp;&amp; cmake --build build</pre></body></html>";

// {"error": sentence} without the CLI's "error: " prefix and newline.
std::string ErrorBody(std::string sentence) {
  while (!sentence.empty() &&
         (sentence.back() == '\n' || sentence.back() == ' ')) {
    sentence.pop_back();
  }
  for (const char* prefix : {"error: ", "internal error: "}) {
    if (sentence.rfind(prefix, 0) == 0) {
      sentence = sentence.substr(std::string(prefix).size());
    }
  }
  // A sentence may quote a request's bytes (a Host header) that are not
  // UTF-8: written as U+FFFD rather than thrown (see report::Dump).
  return nlohmann::json{{"error", sentence}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void SetError(httplib::Response& res, int status, const std::string& sentence) {
  res.status = status;
  res.set_content(ErrorBody(sentence), "application/json");
}

// True for a Host header naming this machine's loopback (DNS rebinding:
// a page elsewhere must not reach a loopback server through its own name).
bool LoopbackHost(const std::string& host_header) {
  std::string host = host_header;
  if (!host.empty() && host[0] == '[') {
    host = host.substr(0, host.find(']') + 1);
  } else {
    host = host.substr(0, host.find(':'));
  }
  return host == "127.0.0.1" || host == "localhost" || host == "[::1]";
}

bool IsLoopback(const std::string& bind_host) {
  return bind_host == "127.0.0.1" || bind_host == "localhost" ||
         bind_host == "::1";
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  httplib::Server http;
  std::filesystem::path private_dir;  // uploaded configs, mode 0700
  // The commands' threads, counted so that the server can wait for them:
  // a thread left running when the process exits reads the catalog's
  // statics as they are destroyed (a use-after-free seen under ASan, as a
  // hung ServerTest.TimeLimitStopsASearch in CI).
  std::shared_ptr<Running> running = std::make_shared<Running>();
  std::atomic<unsigned> uploads{0};
  int port = 0;
  // The listening socket, seen by the socket-options hook before bind.
  socket_t listen_sock = INVALID_SOCKET;

  explicit Impl(ServerOptions o) : options(std::move(o)) {}
  ~Impl() {
    running->StopAndWait();
    std::error_code ec;
    if (!private_dir.empty()) std::filesystem::remove_all(private_dir, ec);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  void Api(const httplib::Request& req, httplib::Response& res);
  bool RunLimited(const std::vector<std::string>& args, RunOutput& result);
  void Static(const httplib::Request& req, httplib::Response& res) const;
  void Routes();
};

// Runs `args` on a thread of its own, waiting up to the time limit; false
// (with `result` unset) when it ran past it.
bool Server::Impl::RunLimited(const std::vector<std::string>& args,
                              RunOutput& result) {
  auto state = std::make_shared<RunState>();
  auto runs = running;
  runs->Add();
  std::thread([state, args, runs] {
    {  // Everything the command made is gone before Done() lets exit begin.
      cli::RunHooks hooks;
      hooks.interrupted = [state, runs] {
        return state->cancel.load() || runs->stop.load();
      };
      std::ostringstream out;
      std::ostringstream err;
      const int code = cli::RunCli(args, out, err, hooks);
      std::lock_guard<std::mutex> lock(state->mu);
      state->result = {code, out.str(), err.str()};
      state->done = true;
    }
    // Uncounted before the handler wakes, as the running-commands cap
    // (503) expects; nothing after this touches the process's statics.
    runs->Done();
    state->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->mu);
  const auto limit = std::chrono::duration<double>(options.time_limit_s);
  if (!state->done_cv.wait_for(lock, limit, [&] { return state->done; })) {
    state->cancel = true;
    return false;
  }
  result = std::move(state->result);
  return true;
}

void Server::Impl::Api(const httplib::Request& req, httplib::Response& res) {
  const std::string command = req.matches[1];
  if (req.get_header_value("Content-Type").rfind("application/json", 0) != 0) {
    SetError(res, 415,
             "request: expected Content-Type: application/json, got '" +
                 Excerpt(req.get_header_value("Content-Type")) + "'");
    return;
  }
  // A folder for this request's uploaded config, removed when it ends.
  const std::filesystem::path dir =
      private_dir / ("r" + std::to_string(uploads++));
  auto args =
      ApiRequestArgs(command, req.body, [&](const nlohmann::json& config) {
        return WriteUploadedConfig(config, dir);
      });
  if (args && !options.catalog_dir.empty()) {
    args->insert(args->begin(), {"--catalog", options.catalog_dir});
  }
  RunOutput run;
  const auto start = std::chrono::steady_clock::now();
  if (!args) {
    SetError(res, args.error().code == ErrorCode::kNotFound ? 404 : 400,
             args.error().ToString());
  } else if (running->Count() >= options.max_running) {
    SetError(res, 503,
             "server: " + std::to_string(options.max_running) +
                 " commands are running; try again when one has finished");
  } else if (!RunLimited(*args, run)) {
    SetError(res, 503,
             "server: the command ran past the time limit of " +
                 FormatNumber(options.time_limit_s) +
                 " s (scalemodel ui --time-limit); ask for a smaller search");
  } else if (run.code != 0) {
    std::string err = run.err;
    const std::string d = dir.string();
    for (size_t at = err.find(d); at != std::string::npos; at = err.find(d)) {
      err.replace(at, d.size(), "(uploaded)");
    }
    SetError(res, run.code == 2 ? 400 : 500, err);
  } else {
    res.set_content(run.out, "application/json");
  }
  // How long the command ran here (the page shows it beside its own time).
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  res.set_header("Server-Timing", "cli;dur=" + FormatNumber(ms));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

void Server::Impl::Static(const httplib::Request& req,
                          httplib::Response& res) const {
  const std::string path = req.path == "/" ? "/index.html" : req.path;
  const std::vector<Asset>& assets = BuiltAssets();
  if (assets.empty() && path == "/index.html") {
    res.set_content(kNoPage, "text/html; charset=utf-8");
    return;
  }
  for (const Asset& a : assets) {
    if (a.path != path) continue;
    res.set_content(std::string(a.bytes), std::string(a.content_type));
    res.set_header("Cache-Control", path.rfind("/assets/", 0) == 0
                                        ? "public, max-age=31536000, immutable"
                                        : "no-cache");
    return;
  }
  SetError(res, 404, "request: no page file '" + Excerpt(req.path) + "'");
}

void Server::Impl::Routes() {
  // SO_REUSEADDR only: httplib's default SO_REUSEPORT would let a second
  // server bind a port already in use and share its connections.
  // The hook also records the socket, so that Bind can widen its backlog.
  http.set_socket_options([this](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_sock = sock;
  });
  http.set_payload_max_length(options.max_body_bytes);
  http.new_task_queue = [] { return new httplib::ThreadPool(32); };
  // Responses go out as headers then body; without TCP_NODELAY the body
  // waits on the browser's delayed ACK (tens of ms on a kept-alive
  // connection), which the page would add to every API call.
  http.set_tcp_nodelay(true);
  http.set_keep_alive_timeout(30);
  http.set_read_timeout(30);
  http.set_write_timeout(10);
  const bool loopback = IsLoopback(options.host);
  http.set_pre_routing_handler(
      [loopback](const httplib::Request& req, httplib::Response& res) {
        if (loopback && !LoopbackHost(req.get_header_value("Host"))) {
          SetError(res, 403,
                   "request: Host '" + Excerpt(req.get_header_value("Host")) +
                       "' is not this machine's loopback address");
          return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
      });
  http.set_error_handler([max = options.max_body_bytes](
                             const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413) {
      SetError(res, 413,
               "request body: expected at most " + std::to_string(max) +
                   " bytes; upload a smaller config.json");
    } else {
      SetError(res, res.status, "request: HTTP " + std::to_string(res.status));
    }
  });
  http.Post(R"(/api/([A-Za-z0-9_-]+))",
            [this](const httplib::Request& req, httplib::Response& res) {
              Api(req, res);
            });
  http.Get(R"(/api/.*)", [](const httplib::Request&, httplib::Response& res) {
    SetError(res, 405, "request: the API takes POST with a JSON object");
  });
  http.Get(R"(/.*)", [this](const httplib::Request& req,
                            httplib::Response& res) { Static(req, res); });
}

Server::Server(ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->Routes();
}

Server::~Server() = default;

bool Server::Bind(std::string& error) {
  std::string templ =
      (std::filesystem::temp_directory_path() / "scalemodel-ui-XXXXXX")
          .string();
  if (mkdtemp(templ.data()) == nullptr) {
    error = "ui: cannot create a private folder under " +
            std::filesystem::temp_directory_path().string();
    return false;
  }
  impl_->private_dir = templ;
  const ServerOptions& o = impl_->options;
  if (o.port == 0) {
    impl_->port = impl_->http.bind_to_any_port(o.host);
  } else if (impl_->http.bind_to_port(o.host, o.port)) {
    impl_->port = o.port;
  }
  if (impl_->port <= 0) {
    impl_->listen_sock = INVALID_SOCKET;  // closed by httplib
    error = "--port: cannot listen on " + o.host + ":" +
            std::to_string(o.port) +
            " (in use, or not an address of this machine); pick another "
            "--port, or --port 0 for any free one";
    return false;
  }
  // Debian's cpp-httplib 0.11 listens with a backlog of 5
  // (CPPHTTPLIB_LISTEN_BACKLOG, compiled into the library). Sixteen clients
  // connecting at once overflow it, and a connection caught in the overflow
  // could fail its first request with a read error (seen in ui_load on a
  // loaded CI machine). Calling listen() again on a listening socket only
  // changes its backlog (Linux, POSIX).
  if (impl_->listen_sock != INVALID_SOCKET) {
    ::listen(impl_->listen_sock, SOMAXCONN);
  }
  return true;
}

int Server::port() const { return impl_->port; }

void Server::Listen() { impl_->http.listen_after_bind(); }

// httplib's stop() does nothing until listen has begun, so a Stop() that
// comes before the Listen() thread is scheduled left that thread blocked in
// accept() for good (seen as a hung ServerTest under load). Shutting the
// listening socket down first makes accept() fail at once, before or after.
void Server::Stop() {
  if (impl_->listen_sock != INVALID_SOCKET) {
    ::shutdown(impl_->listen_sock, SHUT_RDWR);
    impl_->listen_sock = INVALID_SOCKET;
  }
  impl_->http.stop();
}

}  // namespace scalemodel::ui
