#include "scalemodel/catalog/catalog.h"

#include <gtest/gtest.h>

#include "../testing/catalog.h"

namespace scalemodel::catalog {
namespace {

using scalemodel::testing::BuiltinCatalog;

TEST(CatalogTest, BuiltinHasTheChipsCliMdNames) {
  for (const char* id : {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-7x",
                         "a100", "h100", "h200", "h800", "b200", "gb200"}) {
    EXPECT_TRUE(BuiltinCatalog().FindChip(id).has_value()) << id;
  }
  // Aliases, case-insensitively.
  EXPECT_EQ((*BuiltinCatalog().FindChip("V5E"))->id, "tpu-v5e");
  EXPECT_EQ((*BuiltinCatalog().FindChip("h100-sxm"))->id, "h100");
}

// Sanity bounds on every chip (XLA's per-device config test does the same):
// a catalog typo of 1000x shows up here.
TEST(CatalogTest, EveryChipIsSaneAndSourced) {
  for (const hw::Chip& c : BuiltinCatalog().chips()) {
    SCOPED_TRACE(c.id);
    double bf16 = c.Peak(hw::Dtype::kBf16).si();
    EXPECT_GT(bf16, 1e14);
    EXPECT_LT(bf16, 1e16);
    EXPECT_GT(c.hbm_capacity.si(), 8e9);
    EXPECT_LT(c.hbm_capacity.si(), 1e12);
    EXPECT_GT(c.hbm_bandwidth.si(), 5e11);
    EXPECT_LT(c.hbm_bandwidth.si(), 2e13);
    // Critical intensity of real chips: 100..1000 FLOP/byte.
    EXPECT_GT(bf16 / c.hbm_bandwidth.si(), 100);
    EXPECT_LT(bf16 / c.hbm_bandwidth.si(), 1000);
    EXPECT_GT(c.pcie_bandwidth.si(), 1e9);
    if (c.is_tpu()) {
      ASSERT_TRUE(c.ici.has_value());
      EXPECT_GT(c.ici->link_bandwidth.si(), 1e10);
      EXPECT_GT(c.ici->hop_latency.si(), 0);
    } else {
      ASSERT_TRUE(c.nvlink.has_value());
      EXPECT_GT(c.nvlink->bandwidth.si(), 1e11);
      EXPECT_GE(c.nvlink->domain_size, 8);
    }
    // Every number carries a source with a date.
    for (const auto& [key, src] : c.sources) {
      EXPECT_FALSE(src.empty()) << key;
      EXPECT_NE(src.find("("), std::string::npos) << key << ": " << src;
    }
    EXPECT_TRUE(c.sources.count("compute.bf16"));
    EXPECT_TRUE(c.sources.count("memory.hbm_bandwidth"));
  }
}

TEST(CatalogTest, EverySystemResolves) {
  for (const SystemEntry& e : BuiltinCatalog().systems()) {
    auto s = BuiltinCatalog().FindSystem(e.id);
    ASSERT_TRUE(s.has_value()) << e.id << ": " << s.error().ToString();
    EXPECT_GT(s->num_chips(), 1);
  }
}

TEST(CatalogTest, SystemShapeResizesACatalogSystemAndKeepsItsFabric) {
  // gcp-a3-high: 4 x 200 Gb/s GPU NICs per 8 GPUs = 12.5 GB/s per GPU.
  auto a3 = BuiltinCatalog().FindSystem("gcp-a3-high:8x4");
  ASSERT_TRUE(a3.has_value()) << a3.error().ToString();
  EXPECT_EQ(a3->num_chips(), 32);
  EXPECT_EQ(a3->id, "gcp-a3-high:8x4");
  auto plain = BuiltinCatalog().FindSystem("h100:8x4");
  ASSERT_TRUE(plain.has_value());
  ASSERT_EQ(a3->axes.size(), plain->axes.size());
  EXPECT_NEAR(a3->axes.back().bandwidth.si(), 12.5e9, 1e6);
  EXPECT_NEAR(plain->axes.back().bandwidth.si(), 50e9, 1e6);
  EXPECT_EQ(a3->axes.front().bandwidth, plain->axes.front().bandwidth);
  // Tiers and oversubscription travel with the fabric.
  auto meta = BuiltinCatalog().FindSystem("llama3-cluster:8x512");
  ASSERT_TRUE(meta.has_value()) << meta.error().ToString();
  EXPECT_EQ(meta->num_chips(), 4096);
  ASSERT_FALSE(meta->axes.back().tiers.empty());
  EXPECT_DOUBLE_EQ(meta->axes.back().tiers[0].oversubscription, 7.0);
  // A bad shape for the system's chip is still an error.
  EXPECT_FALSE(BuiltinCatalog().FindSystem("gcp-a3-high:8x").has_value());
}

TEST(CatalogTest, UnknownNamesSuggest) {
  EXPECT_EQ(BuiltinCatalog().FindChip("h10").error().message,
            "unknown chip 'h10' (did you mean 'h100'?); `scalemodel chips` "
            "lists all 11");
  EXPECT_EQ(BuiltinCatalog().FindChip("tpu-v5").error().message,
            "unknown chip 'tpu-v5' (did you mean 'tpu-v5e'?); `scalemodel "
            "chips` lists all 11");
  EXPECT_EQ(BuiltinCatalog().FindSystem("tpu-v5p-pdo").error().message,
            "unknown system 'tpu-v5p-pdo' (did you mean 'tpu-v5p-pod'?); use "
            "a catalog system (`scalemodel systems`) or CHIP:SHAPE such as "
            "'tpu-v5e:16x16'");
  EXPECT_EQ(BuiltinCatalog().FindSystem("h100").error().message,
            "'h100' is a chip, not a system; give a shape such as "
            "'h100:8x16' or a catalog system (`scalemodel systems`)");
}

constexpr char kGoodChip[] = R"(id = "x1"
name = "Test chip"
family = "gpu"
[compute]
source = "test"
date = "2025"
bf16 = "100 TFLOP/s"
[memory]
source = "test"
date = "2025"
hbm_capacity = "10 GB"
hbm_bandwidth = { value = "1 TB/s", source = "own sheet", date = "2024" }
[nvlink]
source = "test"
date = "2025"
bandwidth = "100 GB/s"
domain_size = 8
hop_latency = "1 us"
[host]
source = "test"
date = "2025"
pcie_bandwidth = "32 GB/s"
)";

TEST(CatalogTest, ParsesAChipFileWithPerValueSources) {
  auto chip = Catalog::ParseChip(kGoodChip, "chips/x1.toml");
  ASSERT_TRUE(chip.has_value()) << chip.error().ToString();
  EXPECT_DOUBLE_EQ(chip->Peak(hw::Dtype::kBf16).si(), 100e12);
  EXPECT_EQ(chip->sources.at("memory.hbm_bandwidth"), "own sheet (2024)");
  EXPECT_EQ(chip->sources.at("memory.hbm_capacity"), "test (2025)");
}

TEST(CatalogTest, ChipFileErrorsNameFileLineKeyAndForm) {
  std::string bad_unit = kGoodChip;
  bad_unit.replace(bad_unit.find("\"1 TB/s\""), 8, "\"fast\"");
  EXPECT_EQ(Catalog::ParseChip(bad_unit, "chips/x1.toml").error().ToString(),
            "chips/x1.toml:12: memory.hbm_bandwidth: expected a bandwidth "
            "such as \"3.35 TB/s\", got \"fast\"");

  std::string typo = kGoodChip;
  typo.replace(typo.find("hbm_bandwidth"), 13, "hbm_bandwdith");
  EXPECT_EQ(Catalog::ParseChip(typo, "chips/x1.toml").error().ToString(),
            "chips/x1.toml:12: memory.hbm_bandwdith: unknown key (did you "
            "mean 'hbm_bandwidth'?); expected one of: date, hbm_bandwidth, "
            "hbm_capacity, source");

  std::string missing = kGoodChip;
  missing.erase(missing.find("hbm_capacity"),
                missing.find("hbm_bandwidth") - missing.find("hbm_capacity"));
  missing.erase(missing.find("domain_size = 8\n"), 16);
  EXPECT_EQ(Catalog::ParseChip(missing, "chips/x1.toml").error().ToString(),
            "chips/x1.toml: missing required key: memory.hbm_capacity");

  EXPECT_EQ(Catalog::ParseChip("id = \"x\"\nfamily = \"npu\"\n", "chips/x.toml")
                .error()
                .ToString(),
            "chips/x.toml:2: family: expected \"tpu\" or \"gpu\", got "
            "\"npu\"");
  EXPECT_EQ(Catalog::ParseChip("id = \"x\"\n[compute\n", "chips/x.toml")
                .error()
                .ToString()
                .substr(0, 15),
            "chips/x.toml:2:");
}

TEST(CatalogTest, CatalogDirectoryErrors) {
  Catalog c = BuiltinCatalog();
  EXPECT_EQ(c.AddDirectory("/nonexistent/dir").error().ToString(),
            "catalog: catalog directory '/nonexistent/dir' does not exist "
            "or is not a directory");
  EXPECT_EQ(c.AddFiles({{"misc/x.toml", ""}}).error().ToString(),
            "misc/x.toml: catalog files must live under chips/, systems/, "
            "models/ or validation/");
  // A user file overrides a built-in chip by id.
  std::string faster = kGoodChip;
  faster.replace(faster.find("\"x1\""), 4, "\"h100\"");
  ASSERT_TRUE(c.AddFiles({{"chips/h100.toml", faster}}).has_value());
  EXPECT_DOUBLE_EQ((*c.FindChip("h100"))->Peak(hw::Dtype::kBf16).si(), 100e12);
}

}  // namespace
}  // namespace scalemodel::catalog
