#include "scalemodel/catalog/catalog.h"

#include <gtest/gtest.h>

#include "../testing/catalog.h"
#include "scalemodel/report/json.h"

namespace scalemodel::catalog {
namespace {

using scalemodel::testing::BuiltinCatalog;

TEST(CatalogTest, BuiltinHasTheChipsCliMdNames) {
  for (const char* id :
       {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-7x", "a100", "h100",
        "h200", "h800", "b200", "gb200", "a100-40gb", "h100-pcie", "h100-nvl",
        "l40s", "mi300x", "mi325x", "mi355x", "trn2"}) {
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
      // A PCIe card without NVLink (L40S) talks to its peers over PCIe.
      EXPECT_GT(c.nvlink->bandwidth.si(),
                c.nvlink->name == "PCIe" ? 1e10 : 1e11);
      // An HGX board or NVL rack (8, 72), or a bridged pair of PCIe cards.
      EXPECT_GE(c.nvlink->domain_size, 2);
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

// Issue #16: prices of one kind. Every built-in price is a list on-demand
// rate at one named cloud with a date, so "cheapest chip" compares chips.
TEST(CatalogTest, EveryBuiltinPriceNamesItsCloudAndDate) {
  int priced = 0;
  for (const hw::Chip& c : BuiltinCatalog().chips()) {
    if (!c.price) continue;
    SCOPED_TRACE(c.id);
    ++priced;
    EXPECT_GT(c.price->usd_per_chip_hour, 0.1);
    EXPECT_LT(c.price->usd_per_chip_hour, 50);
    EXPECT_NE(c.price->cloud, "unstated");
    EXPECT_FALSE(c.price->date.empty());
    const std::string& src = c.sources.at("price.usd_per_chip_hour");
    EXPECT_NE(src.find("on-demand"), std::string::npos) << src;
    for (const char* other : {"Capacity Block", "spot", "committed"}) {
      EXPECT_EQ(src.find(std::string(other) + " rate"), std::string::npos);
    }
  }
  EXPECT_GE(priced, 10);
  EXPECT_EQ((*BuiltinCatalog().FindChip("trainium2"))->id, "trn2");
  EXPECT_EQ((*BuiltinCatalog().FindChip("mi355x"))->nvlink->name,
            "Infinity Fabric");
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
            "lists all 20");
  EXPECT_EQ(BuiltinCatalog().FindChip("tpu-v5").error().message,
            "unknown chip 'tpu-v5' (did you mean 'tpu-v5e'?); `scalemodel "
            "chips` lists all 20");
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
            "hbm_capacity, hbm_device_total, source");

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

// ---- [efficiency]

std::string WithEfficiency(const std::string& table) {
  return std::string(kGoodChip) + "[efficiency]\nsource = \"test\"\n" +
         "date = \"2025\"\n" + table;
}

// Lines 26-30 of the file.
constexpr char kEfficiency[] = R"(gemm_max = 0.5
tile_m = 64
wave_units = { value = 0, source = "no SMs", date = "2024" }
op_overhead = "3 us"
attention_ramp = false
)";

TEST(CatalogEfficiency, ReadsTheTableWithSources) {
  auto chip = Catalog::ParseChip(WithEfficiency(kEfficiency), "chips/x1.toml");
  ASSERT_TRUE(chip.has_value()) << chip.error().ToString();
  const hw::ChipEfficiencyData& e = chip->efficiency;
  EXPECT_EQ(e.gemm_max, 0.5);
  EXPECT_EQ(e.tile_m, 64);
  EXPECT_EQ(e.wave_units, 0);
  EXPECT_DOUBLE_EQ(e.op_overhead->si(), 3e-6);
  EXPECT_EQ(e.attention_ramp, false);
  EXPECT_FALSE(e.hbm.has_value());     // left for the catalog to fill
  EXPECT_FALSE(e.gather.has_value());  // optional, never borrowed
  EXPECT_EQ(e.sources.at("gemm_max"), "test (2025)");
  EXPECT_EQ(e.sources.at("wave_units"), "no SMs (2024)");
  EXPECT_TRUE(e.borrowed.empty());
  // Not in chip.sources, which `chip --json` prints.
  EXPECT_EQ(chip->sources.count("efficiency.gemm_max"), 0u);
}

// [[moe_engine]]: one fit per engine and expert dtype, with its source;
// a bad engine, dtype, floor or stream, a missing term or a second fit for
// the same engine and dtype is one sentence at the key.
TEST(CatalogEfficiency, ReadsEngineMoeFits) {
  const std::string fit =
      "\n[[moe_engine]]\nengine = \"sglang\"\ndtype = \"bf16\"\n"
      "floor = \"35.5 us\"\nstream = 0.721\nsource = \"tables\"\n"
      "date = \"2026-08\"\n";
  auto parse = [&](const std::string& extra) {
    return Catalog::ParseChip(WithEfficiency(kEfficiency) + extra,
                              "chips/x1.toml");
  };
  auto chip = parse(fit);
  ASSERT_TRUE(chip.has_value()) << chip.error().ToString();
  ASSERT_EQ(chip->moe_engine.size(), 1u);
  EXPECT_EQ(chip->moe_engine[0].engine, "sglang");
  EXPECT_EQ(chip->moe_engine[0].dtype, "bf16");
  EXPECT_DOUBLE_EQ(chip->moe_engine[0].floor.si(), 35.5e-6);
  EXPECT_EQ(chip->moe_engine[0].stream, 0.721);
  EXPECT_EQ(chip->sources.at("moe_engine.sglang.bf16"), "tables (2026-08)");
  auto error = [&](const std::string& from, const std::string& to) {
    std::string t = fit;
    t.replace(t.find(from), from.size(), to);
    auto c = parse(t);
    return c ? std::string("parsed") : c.error().ToString();
  };
  const std::string base = WithEfficiency(kEfficiency);
  const int line = static_cast<int>(std::count(base.begin(), base.end(), '\n'));
  auto at = [&](int offset) {
    return "chips/x1.toml:" + std::to_string(line + offset) + ": ";
  };
  EXPECT_EQ(error("\"sglang\"", "\"sglng\""),
            at(3) +
                "moe_engine.engine: expected vllm or sglang, got 'sglng' "
                "(did you mean 'sglang'?)");
  EXPECT_EQ(error("\"bf16\"", "\"fp6\""),
            at(4) +
                "moe_engine.dtype: expected bf16, fp8, fp4, int4 or nvfp4, got "
                "'fp6' (did you mean 'fp8'?)");
  EXPECT_EQ(error("\"bf16\"", "\"nvfp4\""),
            at(4) +
                "moe_engine.dtype: an nvfp4 (W4A4) fit is a named runner's: "
                "expected a kernel such as \"flashinfer_trtllm\"");
  EXPECT_EQ(error("0.721", "1.2"),
            at(6) +
                "moe_engine.stream: expected a fraction of the HBM peak "
                "greater than 0 and at most 1, such as 0.5");
  EXPECT_EQ(error("floor = \"35.5 us\"\n", ""),
            at(2) +
                "moe_engine.floor: expected the op's fixed time, such as "
                "\"35 us\"");
  EXPECT_EQ(error("date = \"2026-08\"\n", "date = \"2026-08\"\n" + fit),
            at(12) +
                "moe_engine.dtype: a second sglang bf16 fit (expected "
                "one per engine, kernel and dtype)");
  // A named runner's fit of the same engine and dtype is another fit.
  std::string runner = fit;
  runner.replace(runner.find("dtype"), 0, "kernel = \"flashinfer_trtllm\"\n");
  EXPECT_EQ(error("date = \"2026-08\"\n", "date = \"2026-08\"\n" + runner),
            "parsed");
}

TEST(CatalogEfficiency, BadValuesNameFileLineKeyAndForm) {
  auto error = [](const std::string& from, const std::string& to) {
    std::string t = kEfficiency;
    t.replace(t.find(from), from.size(), to);
    auto c = Catalog::ParseChip(WithEfficiency(t), "chips/x1.toml");
    return c ? std::string("parsed") : c.error().ToString();
  };
  EXPECT_EQ(error("0.5", "1.5"),
            "chips/x1.toml:26: efficiency.gemm_max: expected a fraction of "
            "peak greater than 0 and at most 1, got 1.5");
  EXPECT_EQ(error("0.5", "0"),
            "chips/x1.toml:26: efficiency.gemm_max: expected a fraction of "
            "peak greater than 0 and at most 1, got 0");
  EXPECT_EQ(error("0.5", "\"80%\""),
            "chips/x1.toml:26: efficiency.gemm_max: expected a fraction of "
            "peak as a plain number such as 0.8");
  EXPECT_EQ(error("gemm_max = 0.5", "gemm_max = 0.5\ngather = 1.5"),
            "chips/x1.toml:27: efficiency.gather: expected a fraction of the "
            "streaming (hbm) rate greater than 0 and at most 1, such as 0.5");
  EXPECT_EQ(error("gemm_max = 0.5", "gemm_max = 0.5\ngemm_stream = 0"),
            "chips/x1.toml:27: efficiency.gemm_stream: expected a fraction of "
            "the HBM peak greater than 0 and at most 1, such as 0.5");
  EXPECT_EQ(error("attention_ramp = false",
                  "attention_ramp = false\nattention_decode_head = 25"),
            "chips/x1.toml:31: efficiency.attention_decode_head: expected a "
            "duration with its unit, greater than 0 and at most 1 s, such as "
            "\"2.4 us\"");
  // The fused-MoE fit's two terms come together.
  EXPECT_EQ(error("attention_ramp = false",
                  "attention_ramp = false\nmoe_floor = \"30 us\""),
            "chips/x1.toml:31: efficiency.moe_floor: expected together with "
            "moe_stream (the two terms of one fused-MoE fit)");
  EXPECT_EQ(error("attention_ramp = false",
                  "attention_ramp = false\nmoe_stream_fp8 = 1.5"),
            "chips/x1.toml:31: efficiency.moe_stream_fp8: expected a fraction "
            "of the HBM peak greater than 0 and at most 1, such as 0.5");
  EXPECT_EQ(error("attention_ramp = false",
                  "attention_ramp = false\nmoe_floor_fp8 = \"30 us\"\n"
                  "moe_stream_fp8 = 0.8"),
            "parsed");
  // So do the prefill fit's.
  EXPECT_EQ(error("attention_ramp = false",
                  "attention_ramp = false\nmoe_prefill_fp8 = 0.4"),
            "chips/x1.toml:31: efficiency.moe_prefill_fp8: expected together "
            "with moe_prefill_act_fp8 (the two terms of one fused-MoE prefill "
            "fit)");
  EXPECT_EQ(error("attention_ramp = false",
                  "attention_ramp = false\nmoe_prefill = 0.4\n"
                  "moe_prefill_act = 0.5"),
            "parsed");
  EXPECT_EQ(error("tile_m = 64", "tile_m = 0"),
            "chips/x1.toml:27: efficiency.tile_m: expected a positive whole "
            "number such as 128");
  EXPECT_EQ(error("value = 0,", "value = -1,"),
            "chips/x1.toml:28: efficiency.wave_units: expected a whole number "
            "such as 132, or 0 for no wave quantization");
  EXPECT_EQ(error("\"3 us\"", "3"),
            "chips/x1.toml:29: efficiency.op_overhead: expected a duration "
            "with its unit, such as \"5 us\"");
  EXPECT_EQ(error("\"3 us\"", "\"3 GB\""),
            "chips/x1.toml:29: efficiency.op_overhead: expected a duration "
            "such as \"50 ms\", got \"3 GB\" (unknown unit \"GB\")");
  // kernel_launch: optional, read apart from the borrowed keys.
  EXPECT_EQ(error("attention_ramp = false", "kernel_launch = \"0 us\""),
            "chips/x1.toml:30: efficiency.kernel_launch: expected a duration "
            "with its unit, greater than 0 and at most 1 s, such as "
            "\"2.4 us\"");
  EXPECT_EQ(error("attention_ramp = false", "kernel_launch = 4.5"),
            "chips/x1.toml:30: efficiency.kernel_launch: expected a duration "
            "with its unit, greater than 0 and at most 1 s, such as "
            "\"2.4 us\"");
  EXPECT_EQ(error("attention_ramp = false", "kernel_launch = \"4.5 us\""),
            "parsed");
  EXPECT_EQ(error("attention_ramp = false", "attention_ramp = 1"),
            "chips/x1.toml:30: efficiency.attention_ramp: expected true or "
            "false");
  EXPECT_EQ(
      error("gemm_max =", "gemm_maks ="),
      "chips/x1.toml:26: efficiency.gemm_maks: unknown key (did you "
      "mean 'gemm_max'?); expected one of: attention, "
      "attention_decode_head, attention_fa2, attention_ramp, "
      "block_fp8_k_step, "
      "collective_launch, date, "
      "defaults_from, "
      "gather, gemm_max, gemm_max_fp4, gemm_max_fp8, gemm_stream, hbm, "
      "kernel_launch, mla_fp8_kv_token, moe_floor, moe_floor_fp8, moe_prefill, "
      "moe_prefill_act, moe_prefill_act_fp8, moe_prefill_fp8, "
      "moe_stream, moe_stream_fp8, "
      "op_overhead, "
      "source, "
      "tile_m, "
      "tile_n, wave_units");
  EXPECT_EQ(
      error(", source = \"no SMs\"", ""),
      "chips/x1.toml: missing required key: efficiency.wave_units.source");
}

// Keys a file leaves out come from its family's reference chip (h100 for
// GPUs), or the chip named by defaults_from, and the chip records which.
TEST(CatalogEfficiency, UnsetKeysAreBorrowed) {
  Catalog c = BuiltinCatalog();
  ASSERT_TRUE(
      c.AddFiles({{"chips/x1.toml", WithEfficiency(kEfficiency)}}).has_value());
  const hw::ChipEfficiencyData& e = (*c.FindChip("x1"))->efficiency;
  EXPECT_EQ(e.gemm_max, 0.5);  // its own
  EXPECT_EQ(e.hbm, 0.87);      // h100's
  EXPECT_EQ(e.tile_n, 256);
  EXPECT_EQ(e.borrowed_from, "h100");
  EXPECT_EQ(e.borrowed, (std::vector<std::string>{"gemm_max_fp8", "tile_n",
                                                  "attention", "attention_fa2",
                                                  "hbm", "collective_launch"}));
  EXPECT_EQ(e.sources.at("gemm_max"), "test (2025)");
  EXPECT_EQ(e.sources.at("hbm").rfind("borrowed from h100: aigatech", 0), 0u);

  std::string from_a100 =
      WithEfficiency(std::string("defaults_from = \"a100\"\n") + kEfficiency);
  from_a100.replace(from_a100.find("\"x1\""), 4, "\"x2\"");
  ASSERT_TRUE(c.AddFiles({{"chips/x2.toml", from_a100}}).has_value());
  const hw::ChipEfficiencyData& e2 = (*c.FindChip("x2"))->efficiency;
  EXPECT_EQ(e2.borrowed_from, "a100");
  EXPECT_EQ(e2.hbm, 0.86);
  EXPECT_EQ(e2.tile_n, 128);

  // A user's h100.toml without the table borrows from the h100 it replaces.
  std::string h100 = kGoodChip;
  h100.replace(h100.find("\"x1\""), 4, "\"h100\"");
  ASSERT_TRUE(c.AddFiles({{"chips/h100.toml", h100}}).has_value());
  EXPECT_EQ((*c.FindChip("h100"))->efficiency.borrowed_from, "h100");
  EXPECT_EQ((*c.FindChip("h100"))->efficiency.gemm_max, 0.803);
}

TEST(CatalogEfficiency, BorrowingErrors) {
  Catalog c = BuiltinCatalog();
  auto error = [&c](const std::vector<DataFile>& files) {
    Catalog copy = c;
    auto r = copy.AddFiles(files);
    return r ? std::string("added") : r.error().ToString();
  };
  EXPECT_EQ(
      error({{"chips/x1.toml", WithEfficiency("defaults_from = \"a10\"\n")}}),
      "chips/x1.toml:26: efficiency.defaults_from: unknown chip 'a10' "
      "(did you mean 'a100'?); name a chip of the catalog to borrow "
      "the constants this file leaves out from");
  std::string x2 = WithEfficiency("defaults_from = \"x1\"\n");
  x2.replace(x2.find("\"x1\""), 4, "\"x2\"");
  EXPECT_EQ(
      error({{"chips/x1.toml", WithEfficiency("defaults_from = \"x2\"\n")},
             {"chips/x2.toml", x2}}),
      "chips/x1.toml:26: efficiency.defaults_from: chips borrow "
      "constants from each other in a cycle through 'x1'");
  // Without the built-in catalog there is no reference chip to borrow from.
  EXPECT_EQ(
      Catalog().AddFiles({{"chips/x1.toml", kGoodChip}}).error().ToString(),
      "chips/x1.toml: efficiency: the file sets no gemm_max, "
      "gemm_max_fp8, tile_m, tile_n, wave_units, op_overhead, "
      "attention, attention_fa2, attention_ramp, hbm, "
      "collective_launch, and the GPU reference chip 'h100' to borrow "
      "them from is not in the catalog; add them, or name a chip with "
      "defaults_from");
  std::string h100 = kGoodChip;
  h100.replace(h100.find("\"x1\""), 4, "\"h100\"");
  EXPECT_EQ(Catalog().AddFiles({{"chips/h100.toml", h100}}).error().ToString(),
            "chips/h100.toml: h100 is the reference chip other GPU chips "
            "borrow efficiency constants from, so its [efficiency] table "
            "must set every key; missing: gemm_max, gemm_max_fp8, tile_m, "
            "tile_n, wave_units, op_overhead, attention, attention_fa2, "
            "attention_ramp, hbm, collective_launch");
}

// `chip NAME` shows what the realistic mode reads (report::EfficiencyEntries
// and the chip's JSON): each constant with its unit and source, a borrowed
// one's source naming its lender, and the measured curves and fits.
TEST(CatalogEfficiency, ChipReportShowsTheRealisticModeData) {
  const scalemodel::hw::Chip& mi = **BuiltinCatalog().FindChip("mi300x");
  const std::vector<report::EfficiencyEntry> entries =
      report::EfficiencyEntries(mi);
  auto find = [&](const std::string& key) -> const report::EfficiencyEntry* {
    for (const report::EfficiencyEntry& e : entries) {
      if (e.key == key) return &e;
    }
    return nullptr;
  };
  const report::EfficiencyEntry* op = find("op_overhead");
  ASSERT_NE(op, nullptr);
  EXPECT_TRUE(op->is_time);
  EXPECT_NEAR(op->value, 8.2e-6, 1e-12);
  EXPECT_EQ(op->unit, "per GEMM");
  EXPECT_NE(op->source.find("aiter"), std::string::npos);
  ASSERT_NE(find("kernel_launch"), nullptr);  // optional, in its file
  EXPECT_EQ(find("moe_floor_fp8"), nullptr);  // optional, not in its file
  const report::EfficiencyEntry* ramp = find("attention_ramp");
  ASSERT_NE(ramp, nullptr);
  EXPECT_TRUE(ramp->is_flag);
  const report::Json j = report::ToJson(mi);
  EXPECT_EQ(j["efficiency"]["hbm"]["value"], 0.783);
  EXPECT_EQ(j["efficiency"]["hbm"]["unit"], "of the HBM peak");
  EXPECT_EQ(j["efficiency"]["op_overhead"]["unit"], "s per GEMM");
  ASSERT_EQ(j["allreduce_in_graph"].size(), 3u);
  EXPECT_EQ(j["allreduce_in_graph"][2]["gpus"], 8);
  EXPECT_EQ(j["allreduce_in_graph"][2]["time_s"][0], 14.81e-6);
  EXPECT_EQ(j["allreduce_measured"].size(), 24u);
  EXPECT_TRUE(j["moe_engine"].empty());
  EXPECT_EQ(
      report::ToJson(**BuiltinCatalog().FindChip("h200"))["moe_engine"].size(),
      8u);

  Catalog c = BuiltinCatalog();
  ASSERT_TRUE(
      c.AddFiles({{"chips/x1.toml", WithEfficiency(kEfficiency)}}).has_value());
  const report::Json x = report::ToJson(**c.FindChip("x1"));
  EXPECT_EQ(x["efficiency"]["gemm_max"]["source"], "test (2025)");
  EXPECT_EQ(std::string(x["efficiency"]["hbm"]["source"])
                .rfind("borrowed from h100", 0),
            0u);
}

}  // namespace
}  // namespace scalemodel::catalog
