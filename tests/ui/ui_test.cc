// `scalemodel ui`: the API's arguments, and the server over loopback
// answering exactly what the CLI prints (tools/ui/server.h).
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "httplib.h"
#include "run.h"
#include "server.h"

namespace scalemodel::ui {
namespace {

using nlohmann::json;

Result<std::vector<std::string>> Args(const std::string& command,
                                      const json& body) {
  return ApiArgs(command, body, [](const json&) -> Result<std::string> {
    return std::string("/private/llama/config.json");
  });
}

TEST(ApiArgs, OptionsBecomeTheCommandLine) {
  auto args = Args("plan-train", json{{"model", "llama3-8b"},
                                      {"batch-tokens", "1Mi"},
                                      {"seq", 8192},
                                      {"top", 5},
                                      {"ep_dedup", true},
                                      {"offload-optimizer", false},
                                      {"remat", nullptr},
                                      {"dp-overlap", 0.5}});
  ASSERT_TRUE(args) << args.error().ToString();
  // nlohmann::json keeps keys sorted.
  EXPECT_EQ(*args, (std::vector<std::string>{
                       "plan", "train", "--batch-tokens=1Mi",
                       "--dp-overlap=0.5", "--ep-dedup", "--model=llama3-8b",
                       "--seq=8192", "--top=5", "--json"}));
}

TEST(ApiArgs, PositionalListsAndUploads) {
  auto c = Args("collective", json{{"kind", "all-gather"},
                                   {"axes", json::array({"x", "y"})},
                                   {"system", "tpu-v5p:4x4x4"}});
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, (std::vector<std::string>{"collective", "--axes=x,y",
                                          "--system=tpu-v5p:4x4x4",
                                          "all-gather", "--json"}));
  auto m = Args("model", json{{"name", json{{"model_type", "llama"}}}});
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, (std::vector<std::string>{"model", "/private/llama/config.json",
                                          "--json"}));
}

TEST(ApiArgs, RefusesFilesAndUnknownInput) {
  auto expect_error = [](const std::string& command, const json& body,
                         const std::string& part) {
    auto a = Args(command, body);
    ASSERT_FALSE(a) << body.dump();
    EXPECT_NE(a.error().ToString().find(part), std::string::npos)
        << a.error().ToString();
  };
  expect_error("train", json{{"catalog", "/etc"}}, "catalog: this option");
  expect_error("serve", json{{"trace-file", "t.csv"}}, "trace-file");
  expect_error("serve", json{{"trace", "/tmp/t.json"}},
               "trace: this option names a file to write");
  expect_error("train", json{{"trace", "t.json.gz"}}, "the ui writes no files");
  expect_error("train", json{{"model", "/etc/passwd"}},
               "the ui reads no files");
  expect_error("model", json{{"name", "x/config.json"}}, "reads no files");
  expect_error("train", json{{"model", "a.json"}}, "reads no files");
  expect_error("train", json{{"json", true}}, "is implied");
  expect_error("train", json{{"--seq", 1}}, "without dashes");
  expect_error("train", json{{"system", json{{"a", 1}}}}, "only the model");
  expect_error("train", json{{"seq", json::array({json::object()})}},
               "expected a string, a number");
  expect_error("chip", json{{"name", "-h"}}, "expected a value");
  expect_error("trian", json::object(), "did you mean 'train'");
  expect_error("train", json::array(), "expected a JSON object");
}

// A server on a free loopback port, listening on a thread of its own.
class ServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions o = {}) {
    o.port = 0;
    server_ = std::make_unique<Server>(o);
    std::string error;
    ASSERT_TRUE(server_->Bind(error)) << error;
    thread_ = std::thread([this] { server_->Listen(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    // The tests check answers, not speed: under the sanitizers on a loaded
    // CI machine a first request (the catalog's first load, an estimate)
    // has run past httplib's 5 s read timeout.
    client_->set_read_timeout(300, 0);
    client_->set_write_timeout(300, 0);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
  }
  httplib::Result Post(const std::string& path, const std::string& body) {
    return client_->Post(path, body, "application/json");
  }
  static std::string Cli(const std::vector<std::string>& args, int& code,
                         std::string& err) {
    std::ostringstream out, e;
    code = cli::RunCli(args, out, e);
    err = e.str();
    return out.str();
  }

  std::unique_ptr<Server> server_;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ServerTest, AnswersExactlyTheCliJson) {
  Start();
  auto r = Post("/api/train",
                R"({"model": "llama3-8b", "system": "h100:8x1", "plan":
                   "fsdp=8", "batch-tokens": "1Mi", "seq": 8192})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  int code = 0;
  std::string err;
  const std::string cli =
      Cli({"train", "--model", "llama3-8b", "--system", "h100:8x1", "--plan",
           "fsdp=8", "--batch-tokens", "1Mi", "--seq", "8192", "--json"},
          code, err);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(r->body, cli);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
}

TEST_F(ServerTest, BadInputIsTheCliSentenceWith400) {
  Start();
  auto r = Post("/api/train", R"({"model": "llama3-8b", "system": "h100:8x1",
                "plan": "fsdp=7", "batch-tokens": "1Mi"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  int code = 0;
  std::string err;
  Cli({"train", "--model=llama3-8b", "--system=h100:8x1", "--plan=fsdp=7",
       "--batch-tokens=1Mi", "--json"},
      code, err);
  EXPECT_EQ(code, 2);
  ASSERT_EQ(err.rfind("error: ", 0), 0u);
  const std::string sentence = err.substr(7, err.size() - 8);
  EXPECT_EQ(json::parse(r->body)["error"], sentence);
}

TEST_F(ServerTest, MalformedOversizeAndWrongRequests) {
  ServerOptions o;
  o.max_body_bytes = 4096;
  Start(o);
  auto bad = Post("/api/train", "{\"model\": ");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(
      json::parse(bad->body)["error"].get<std::string>().find("malformed JSON"),
      std::string::npos);
  auto big =
      Post("/api/train", "{\"model\": \"" + std::string(10000, 'x') + "\"}");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_NE(big->body.find("at most 4096 bytes"), std::string::npos);
  auto text = client_->Post("/api/chips", "{}", "text/plain");
  ASSERT_TRUE(text);
  EXPECT_EQ(text->status, 415);
  auto get = client_->Get("/api/chips");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  auto unknown = Post("/api/trian", "{}");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  auto file = Post("/api/model", R"({"name": "/etc/hostname"})");
  ASSERT_TRUE(file);
  EXPECT_EQ(file->status, 400);
  // An uploaded config nested 400,000 deep crashed the server (it is
  // written out by a recursive dump); past 64 levels (config.json's limit)
  // a body is refused.
  auto deep =
      Post("/api/model", "{\"name\": {\"a\": " + std::string(2000, '[') +
                             std::string(2000, ']') + "}}");
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->status, 400);
  EXPECT_NE(deep->body.find("nested at most 64 levels deep"), std::string::npos)
      << deep->body;
  // A key given twice was read as its last value ("seq": 3 here).
  auto twice = Post("/api/train", R"({"model": "llama3-8b", "seq": 2048,
                    "seq": 3})");
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->status, 400);
  EXPECT_EQ(json::parse(twice->body)["error"],
            "request body: expected each key once in a request body, got "
            "'seq' twice");
  auto config_twice = Post("/api/model", R"({"name": {"num_hidden_layers": 32,
                             "num_hidden_layers": 8}})");
  ASSERT_TRUE(config_twice);
  EXPECT_EQ(config_twice->status, 400);
  EXPECT_EQ(json::parse(config_twice->body)["error"],
            "request body: expected each key once in each object of a "
            "request body, got 'num_hidden_layers' twice in /name");
  httplib::Headers rebinding = {{"Host", "evil.example:80"}};
  auto host = client_->Post("/api/chips", rebinding, "{}", "application/json");
  ASSERT_TRUE(host);
  EXPECT_EQ(host->status, 403);
}

TEST_F(ServerTest, UploadedConfigIsTheCatalogModel) {
  Start();
  std::ifstream in(std::string(SCALEMODEL_SOURCE_DIR) +
                   "/data/models/llama3-8b.json");
  std::stringstream config;
  config << in.rdbuf();
  auto r =
      Post("/api/model", R"({"name": )" + config.str() + R"(, "seq": 8192})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json m = json::parse(r->body);
  int code = 0;
  std::string err;
  json cli = json::parse(
      Cli({"model", "llama3-8b", "--seq", "8192", "--json"}, code, err));
  EXPECT_EQ(m["params"], cli["params"]);
  EXPECT_EQ(m["train_flops_per_token"], cli["train_flops_per_token"]);
}

TEST_F(ServerTest, TimeLimitStopsASearch) {
  ServerOptions o;
  o.time_limit_s = 0.05;
  Start(o);
  auto r = Post("/api/plan-train",
                R"({"model": "llama3-405b", "system": "tpu-v5p:16x16x16",
                    "batch-tokens": "16Mi", "seq": 8192})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("time limit"), std::string::npos);
}

TEST_F(ServerTest, APortInUseIsASentence) {
  Start();
  ServerOptions o;
  o.port = server_->port();
  Server second(o);
  std::string error;
  EXPECT_FALSE(second.Bind(error));
  EXPECT_NE(error.find("--port: cannot listen on 127.0.0.1:"),
            std::string::npos)
      << error;
}

TEST_F(ServerTest, ServesThePageOrSaysHowToBuildIt) {
  Start();
  auto r = client_->Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  if (BuiltAssets().empty()) {
    EXPECT_NE(r->body.find("npm run build"), std::string::npos);
  } else {
    EXPECT_NE(r->body.find("<script"), std::string::npos);
  }
  auto missing = client_->Get("/no-such-file.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

}  // namespace
}  // namespace scalemodel::ui
