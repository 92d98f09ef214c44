// Models by the names users write: HuggingFace repo ids and aliases, model
// directories, and a fake HuggingFace cache in a temporary directory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../testing/catalog.h"
#include "scalemodel/ingest/hf_config.h"

namespace scalemodel::ingest {
namespace {

namespace fs = std::filesystem;
using scalemodel::testing::BuiltinCatalog;

std::string IdOf(const std::string& name) {
  auto m = FindModel(BuiltinCatalog(), name);
  return m ? m->spec.id : "error: " + m.error().ToString();
}

TEST(ModelNamesTest, HuggingFaceIdsAndAliases) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"meta-llama/Llama-3.1-70B", "llama3-70b"},
      {"meta-llama/Llama-3.1-70B-Instruct", "llama3-70b"},
      {"meta-llama/Meta-Llama-3-70B", "llama3-70b"},
      {"meta-llama/Meta-Llama-3-70B-Instruct", "llama3-70b"},
      {"llama3.1-70b", "llama3-70b"},
      {"LLAMA-3-70B", "llama3-70b"},
      {"Llama-3.1-70B-Instruct", "llama3-70b"},
      {"meta-llama/Llama-3.1-8B", "llama3-8b"},
      {"meta-llama/Llama-3.1-405B-Instruct", "llama3-405b"},
      {"deepseek-ai/DeepSeek-V3", "deepseek-v3"},
      {"deepseek-ai/DeepSeek-R1", "deepseek-v3"},
      {"Qwen/Qwen3-235B-A22B", "qwen3-235b-a22b"},
      {"qwen/qwen3-8b", "qwen3-8b"},
      {"mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b"},
      {"mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"},
      {"google/gemma-2-27b", "gemma2-27b"},
      {"google/gemma-2-27b-it", "gemma2-27b"},
      {"meta-llama/Llama-2-7b-chat-hf", "llama2-7b"},
      {"deepseek3-671b", "deepseek-v3"},  // MaxText's name
  };
  for (const auto& [name, id] : cases) EXPECT_EQ(IdOf(name), id) << name;
}

TEST(ModelNamesTest, AliasNotesSayHowTheModelDiffers) {
  auto llama3 = FindModel(BuiltinCatalog(), "meta-llama/Meta-Llama-3-70B");
  ASSERT_TRUE(llama3.has_value());
  EXPECT_NE(llama3->resolution.find("is the catalog's llama3-70b"),
            std::string::npos);
  EXPECT_NE(llama3->resolution.find("except the rope scaling and context"),
            std::string::npos)
      << llama3->resolution;
  auto plain = FindModel(BuiltinCatalog(), "llama3-70b");
  ASSERT_TRUE(plain.has_value());
  EXPECT_TRUE(plain->resolution.empty());
  // A catalog name without a difference says only what it resolved to.
  auto repo = FindModel(BuiltinCatalog(), "meta-llama/Llama-3.1-70B");
  ASSERT_TRUE(repo.has_value());
  EXPECT_EQ(repo->resolution,
            "meta-llama/Llama-3.1-70B is the catalog's llama3-70b (Llama 3.1 "
            "70B)");
}

// Another organisation's model of the same name is not the catalog's.
TEST(ModelNamesTest, OrganisationMustMatch) {
  EXPECT_NE(IdOf("someone/Llama-3.1-70B").rfind("error:", 0),
            std::string::npos);
}

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sm_names_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

const char* kTinyConfig = R"({"model_type": "llama", "hidden_size": 2048,
  "intermediate_size": 8192, "num_hidden_layers": 16,
  "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
  "tie_word_embeddings": true})";

// Sets an environment variable for the test's scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(ModelNamesTest, DirectoryWithConfig) {
  TempDir tmp;
  Write(tmp.path() / "Llama-3.2-1B" / "config.json", kTinyConfig);
  auto m = FindModel(BuiltinCatalog(), (tmp.path() / "Llama-3.2-1B").string());
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(m->spec.id, "Llama-3.2-1B");
  EXPECT_EQ(m->spec.num_layers, 16);
  auto empty = FindModel(BuiltinCatalog(), tmp.path().string());
  ASSERT_FALSE(empty.has_value());
  EXPECT_NE(empty.error().message.find("has no config.json"),
            std::string::npos);
}

TEST(ModelNamesTest, HuggingFaceCache) {
  TempDir tmp;
  const fs::path hub = tmp.path() / "hub";
  const fs::path repo = hub / "models--meta-llama--Llama-3.2-1B";
  Write(repo / "refs" / "main", "abc123\n");
  Write(repo / "snapshots" / "abc123" / "config.json", kTinyConfig);
  // An older snapshot that refs/main does not name is not read.
  Write(repo / "snapshots" / "old999" / "config.json", "{}");
  ScopedEnv no_hub("HF_HUB_CACHE", "");
  ScopedEnv home("HF_HOME", tmp.path().string());
  ASSERT_EQ(HfCacheDirs(), std::vector<std::string>{hub.string()});
  auto m = FindModel(BuiltinCatalog(), "meta-llama/Llama-3.2-1B");
  ASSERT_TRUE(m.has_value()) << m.error().ToString();
  EXPECT_EQ(m->spec.num_layers, 16);
  EXPECT_NE(m->resolution.find("from the HuggingFace cache"),
            std::string::npos);
  // Case-insensitive, as the Hub is.
  EXPECT_TRUE(FindModel(BuiltinCatalog(), "META-LLAMA/llama-3.2-1b"));
  // Catalog ids come first, even when cached.
  Write(hub / "models--meta-llama--Llama-3.1-70B" / "snapshots" / "x" /
            "config.json",
        kTinyConfig);
  EXPECT_EQ(IdOf("meta-llama/Llama-3.1-70B"), "llama3-70b");
  // Not cached: where it looked and how to get the file.
  auto missing = FindModel(BuiltinCatalog(), "acme/Nonexistent-7B");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().ToString(),
            "model: model 'acme/Nonexistent-7B' is not in the catalog nor in "
            "the HuggingFace cache (searched " +
                hub.string() +
                "); nothing is downloaded: fetch its config.json "
                "(`huggingface-cli download acme/Nonexistent-7B config.json`) "
                "and pass the file or its directory");
}

TEST(ModelNamesTest, CatalogNamesListAliases) {
  bool found = false;
  for (const CatalogModelNames& n : CatalogNames(BuiltinCatalog())) {
    if (n.id != "llama3-70b") continue;
    found = true;
    EXPECT_EQ(n.hf_repo, "meta-llama/Llama-3.1-70B");
    EXPECT_GE(n.aliases.size(), 5u);
  }
  EXPECT_TRUE(found);
}

// The names are kept per catalog (by its fingerprint): a catalog that adds
// or replaces a model file after the built-in catalog's names were read
// finds the new name, and the built-in catalog does not.
TEST(ModelNamesTest, NamesFollowTheCatalog) {
  EXPECT_EQ(IdOf("acme/Tiny-1B"), IdOf("acme/Tiny-1B"));  // read twice
  catalog::Catalog custom = BuiltinCatalog();
  std::string tiny;
  for (const catalog::DataFile& f : custom.model_files()) {
    if (f.path.find("llama3-8b.json") != std::string::npos) tiny = f.contents;
  }
  ASSERT_FALSE(tiny.empty());
  const std::string repo = "\"meta-llama/Llama-3.1-8B\"";
  const size_t at = tiny.find(repo);
  ASSERT_NE(at, std::string::npos);
  tiny.replace(at, repo.size(), "\"acme/Tiny-1B\"");
  ASSERT_TRUE(custom.AddFiles({{"models/tiny-1b.json", tiny}}).has_value());
  auto found = FindModel(custom, "acme/Tiny-1B");
  ASSERT_TRUE(found.has_value()) << found.error().ToString();
  EXPECT_NE(found->resolution.find("is the catalog's tiny-1b"),
            std::string::npos)
      << found->resolution;
  EXPECT_FALSE(FindModel(BuiltinCatalog(), "acme/Tiny-1B").has_value());
}

}  // namespace
}  // namespace scalemodel::ingest
