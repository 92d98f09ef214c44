#include "scalemodel/report/json.h"

#include <cmath>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

namespace scalemodel::report {

Json NumberOrNull(double v) {
  if (v == 0 || !std::isfinite(v)) return nullptr;
  return v;
}

namespace {

// What each [efficiency] key is a fraction or count of, or what its time
// is per (docs/catalog-format.md).
std::string EfficiencyUnit(std::string_view key) {
  static const std::pair<std::string_view, std::string_view> kUnits[] = {
      {"gemm_max", "of the bf16 peak"},
      {"gemm_max_fp8", "of the fp8 peak"},
      {"gemm_max_fp4", "of the fp4 peak"},
      {"tile_m", "rows per tile"},
      {"tile_n", "columns per tile"},
      {"wave_units", "tiles per wave"},
      {"op_overhead", "per GEMM"},
      {"attention", "of the bf16 peak"},
      {"attention_fa2", "of the bf16 peak"},
      {"attention_ramp", "by sequence length"},
      {"hbm", "of the HBM peak"},
      {"collective_launch", "per collective"},
      {"gemm_stream", "of the HBM peak"},
      {"gather", "of the hbm rate"},
      {"kernel_launch", "per small kernel"},
      {"attention_decode_head", "per sequence and KV head"},
      {"mla_fp8_kv_token", "per cached token and layer"},
      {"block_fp8_k_step", "per 128-wide K step of an untuned block-fp8 tile"},
      {"moe_floor", "per MoE layer"},
      {"moe_stream", "of the HBM peak"},
      {"moe_floor_fp8", "per MoE layer"},
      {"moe_stream_fp8", "of the HBM peak"},
      {"moe_prefill", "of the bf16 peak"},
      {"moe_prefill_act", "of the HBM peak"},
      {"moe_prefill_fp8", "of the fp8 peak"},
      {"moe_prefill_act_fp8", "of the HBM peak"},
  };
  for (const auto& [k, u] : kUnits) {
    if (k == key) return std::string(u);
  }
  return "";
}

}  // namespace

std::vector<EfficiencyEntry> EfficiencyEntries(const hw::Chip& chip) {
  const hw::ChipEfficiencyData& d = chip.efficiency;
  std::vector<EfficiencyEntry> out;
  auto add = [&](const char* key, const auto& field) {
    if (!field) return;
    EfficiencyEntry e;
    e.key = key;
    e.unit = EfficiencyUnit(key);
    using T = typename std::decay_t<decltype(field)>::value_type;
    if constexpr (std::is_same_v<T, units::Seconds>) {
      e.value = field->si();
      e.is_time = true;
    } else if constexpr (std::is_same_v<T, bool>) {
      e.value = *field ? 1 : 0;
      e.is_flag = true;
    } else {
      e.value = static_cast<double>(*field);
    }
    auto s = d.sources.find(key);
    if (s != d.sources.end()) e.source = s->second;
    out.push_back(std::move(e));
  };
  hw::ForEachEfficiencyField(d, add);
  hw::ForEachOptionalEfficiencyField(d, add);
  return out;
}

Json ToJson(const hw::Chip& chip) {
  Json j;
  j["id"] = chip.id;
  j["name"] = chip.name;
  j["family"] = chip.is_tpu() ? "tpu" : "gpu";
  j["aliases"] = chip.aliases;
  j["bf16_flops_per_s"] = NumberOrNull(chip.Peak(hw::Dtype::kBf16).si());
  j["int8_ops_per_s"] = NumberOrNull(chip.Peak(hw::Dtype::kInt8).si());
  j["fp8_flops_per_s"] = NumberOrNull(chip.Peak(hw::Dtype::kFp8).si());
  Json peaks = Json::object();
  for (hw::Dtype d : hw::kAllDtypes) {
    peaks[std::string(hw::DtypeName(d))] = NumberOrNull(chip.Peak(d).si());
  }
  j["peak_flops_per_s"] = peaks;
  j["hbm_bytes"] = chip.hbm_capacity.si();
  // The driver's total (the engines' memory fractions multiply it); the
  // datasheet capacity where none is catalogued.
  j["device_memory_bytes"] = chip.DeviceMemory().si();
  j["hbm_bytes_per_s"] = chip.hbm_bandwidth.si();
  Json on_chip = Json::array();
  for (const hw::OnChipMemory& m : chip.on_chip) {
    on_chip.push_back({{"name", m.name},
                       {"bytes", m.capacity.si()},
                       {"bytes_per_s", NumberOrNull(m.bandwidth.si())}});
  }
  j["on_chip_memory"] = on_chip;
  Json links = Json::array();
  if (chip.ici) {
    const hw::IciLinks& ici = *chip.ici;
    links.push_back(
        {{"kind", "ici"},
         {"bytes_per_s", ici.link_bandwidth.si()},
         {"convention",
          "one-way per link; a bidirectional ring on one axis moves 2x"},
         {"links_per_chip", ici.links_per_chip},
         {"hop_latency_s", ici.hop_latency.si()},
         {"torus_dims", ici.torus_dims},
         {"max_slice", ici.max_slice},
         {"chips_per_host", ici.chips_per_host}});
  }
  if (chip.nvlink) {
    links.push_back(
        {{"kind", "nvlink"},
         {"name", chip.nvlink->name},
         {"bytes_per_s", chip.nvlink->bandwidth.si()},
         {"convention", "per GPU, per direction"},
         {"domain_size", chip.nvlink->domain_size},
         {"hop_latency_s", chip.nvlink->hop_latency.si()},
         {"in_network_reduction", chip.nvlink->in_network_reduction}});
  }
  if (chip.scale_out) {
    links.push_back({{"kind", chip.is_tpu() ? "dcn" : "scale-out"},
                     {"bytes_per_s", chip.scale_out->bandwidth.si()},
                     {"convention", "per chip, per direction"},
                     {"fabric", chip.scale_out->fabric},
                     {"latency_s", chip.scale_out->latency.si()}});
  }
  links.push_back({{"kind", "pcie"},
                   {"bytes_per_s", chip.pcie_bandwidth.si()},
                   {"convention", "host link, per direction"}});
  j["host_memory_bytes_per_s"] = NumberOrNull(chip.host_memory_bandwidth.si());
  j["links"] = links;
  j["power_w"] = NumberOrNull(chip.power_watts);
  if (chip.price) {
    j["price_usd_per_chip_hour"] = chip.price->usd_per_chip_hour;
    j["price"] = {{"usd_per_chip_hour", chip.price->usd_per_chip_hour},
                  {"kind", "list on-demand"},
                  {"cloud", chip.price->cloud},
                  {"date", chip.price->date}};
  } else {
    j["price_usd_per_chip_hour"] = nullptr;
    j["price"] = nullptr;
  }
  Json sources = Json::object();
  for (const auto& [k, v] : chip.sources) sources[k] = v;
  j["sources"] = sources;
  // The realistic mode's data: each constant with its unit and source, and
  // the measured curves and fits (docs/catalog-format.md).
  Json eff = Json::object();
  for (const EfficiencyEntry& e : EfficiencyEntries(chip)) {
    Json v;
    if (e.is_flag) {
      v["value"] = e.value != 0;
    } else {
      v["value"] = e.value;
    }
    v["unit"] = e.is_time ? "s " + e.unit : e.unit;
    v["source"] = e.source;
    eff[e.key] = v;
  }
  j["efficiency"] = eff;
  Json graphs = Json::array();
  for (const hw::AllReduceInGraph& c : chip.allreduce_in_graph) {
    graphs.push_back({{"engine", c.engine},
                      {"version", c.version},
                      {"gpus", c.gpus},
                      {"bytes", c.bytes},
                      {"time_s", c.time_s}});
  }
  j["allreduce_in_graph"] = graphs;
  Json measured = Json::array();
  for (const hw::AllReducePoint& p : chip.allreduce_measured) {
    measured.push_back({{"bytes", p.bytes.si()},
                        {"busbw_bytes_per_s", p.busbw.si()},
                        {"gpus", p.gpus}});
  }
  j["allreduce_measured"] = measured;
  Json moe = Json::array();
  for (const hw::MoeEngineFit& f : chip.moe_engine) {
    // `kernel`: the runner a fit is for (SGLang --moe-runner-backend); null
    // for the engine's default kernel.
    moe.push_back({{"engine", f.engine},
                   {"kernel", f.kernel.empty() ? Json() : Json(f.kernel)},
                   {"dtype", f.dtype},
                   {"floor_s", f.floor.si()},
                   {"stream_fraction_of_hbm_peak", f.stream}});
  }
  j["moe_engine"] = moe;
  return j;
}

Json ToJson(const hw::PhysicalAxis& a) {
  Json j;
  j["name"] = a.name;
  j["kind"] = std::string(hw::AxisKindName(a.kind));
  j["size"] = a.size;
  if (a.kind == hw::AxisKind::kIci) j["wraparound"] = a.wraparound;
  j["bytes_per_s"] = a.bandwidth.si();
  j["hop_latency_s"] = a.hop_latency.si();
  j["in_network_reduction"] = a.in_network_reduction;
  if (!a.tiers.empty()) {
    Json tiers = Json::array();
    for (const hw::SwitchTier& t : a.tiers) {
      tiers.push_back({{"name", t.name},
                       {"group_size", t.group_size},
                       {"oversubscription", t.oversubscription}});
    }
    j["tiers"] = tiers;
  }
  return j;
}

Json ToJson(const hw::System& s) {
  Json j;
  j["id"] = s.id;
  j["name"] = s.name;
  j["chip"] = s.chip.id;
  j["num_chips"] = s.num_chips();
  Json axes = Json::array();
  for (const hw::PhysicalAxis& a : s.axes) axes.push_back(ToJson(a));
  j["axes"] = axes;
  j["peak_bf16_flops_per_s"] =
      s.num_chips() * s.chip.Peak(hw::Dtype::kBf16).si();
  j["hbm_bytes"] = s.num_chips() * s.chip.hbm_capacity.si();
  if (!s.source.empty()) j["source"] = s.source;
  return j;
}

Json ToJson(const catalog::SystemEntry& e) {
  return Json{{"id", e.id},
              {"name", e.name},
              {"chip", e.chip},
              {"shape", e.shape},
              {"source", e.source}};
}

Json ToJson(const roofline::Roofline& r) {
  Json j;
  j["flops"] = r.flops.si();
  j["bytes"] = r.bytes.si();
  j["intensity"] = r.intensity;
  j["critical_intensity"] = r.critical_intensity;
  j["peak_flops_per_s"] = r.peak.si();
  j["bandwidth_bytes_per_s"] = r.bandwidth.si();
  j["t_math_s"] = r.t_math.si();
  j["t_mem_s"] = r.t_mem.si();
  j["t_lower_s"] = r.t_lower.si();
  j["t_upper_s"] = r.t_upper.si();
  j["achieved_flops_per_s"] = r.achieved.si();
  j["bound"] = r.compute_bound ? "compute" : "memory";
  return j;
}

Json ToJson(const roofline::MatmulRoofline& m) {
  Json j = ToJson(m.roofline);
  j["compute_dtype"] = std::string(hw::DtypeName(m.compute_dtype));
  j["memory_level"] = m.level_name;
  // critical_batch is an object in every command, its keys naming the
  // unit (docs/cli.md).
  j["critical_batch"] = {
      {"tokens", m.critical_batch},
      {"tokens_exact", NumberOrNull(m.critical_batch_exact)}};
  return j;
}

Json ToJson(const net::CollectiveCost& c) {
  Json j;
  j["kind"] = std::string(net::CollectiveName(c.op));
  j["bytes"] = c.bytes.si();
  j["group_size"] = c.group_size;
  j["time_s"] = c.time.si();
  j["bandwidth_time_s"] = c.bandwidth_time.si();
  j["latency_time_s"] = c.latency_time.si();
  j["bound"] = c.latency_bound ? "latency" : "bandwidth";
  j["algorithm"] = c.algorithm;
  Json axes = Json::array();
  for (const net::AxisCost& a : c.per_axis) {
    axes.push_back({{"axis", a.axis},
                    {"size", a.size},
                    {"bytes", a.bytes.si()},
                    {"time_s", a.time.si()},
                    {"bandwidth_time_s", a.bandwidth_time.si()},
                    {"latency_time_s", a.latency_time.si()},
                    {"algorithm", a.algorithm}});
  }
  j["per_axis"] = axes;
  return j;
}

Json ToJson(const estimate::TrainingEstimate& e) {
  Json j;
  j["feasible"] = e.feasible;
  j["reason"] = e.reason;
  j["step_time_s"] = e.step_time.si();
  j["breakdown"] = {{"compute_s", e.compute.si()},
                    {"exposed_comm_s", e.exposed_comm.si()},
                    {"bubble_s", e.bubble.si()},
                    {"other_s", e.other.si()},
                    {"optimizer_s", e.other.si()}};
  Json comms = Json::array();
  for (const estimate::CommItem& c : e.comms) {
    comms.push_back({{"kind", c.kind},
                     {"parallelism", c.parallelism},
                     {"axes", c.axes},
                     {"bytes", c.bytes.si()},
                     {"calls", c.calls},
                     {"time_s", c.time.si()},
                     {"exposed_s", c.exposed.si()}});
  }
  j["comms"] = comms;
  j["per_layer"] = {{"matmul_s", e.per_layer.matmul.si()},
                    {"attention_s", e.per_layer.attention.si()},
                    {"elementwise_s", e.per_layer.elementwise.si()},
                    {"recompute_s", e.per_layer.recompute.si()},
                    {"total_s", e.per_layer.total.si()},
                    {"output_and_loss_s", e.per_layer.output_and_loss.si()},
                    {"layers_per_stage", e.per_layer.layers_per_stage},
                    {"last_stage_layers", e.per_layer.last_stage_layers},
                    {"mtp_modules", e.per_layer.mtp_modules}};
  j["memory_per_chip"] = {{"params_bytes", e.memory.params.si()},
                          {"grads_bytes", e.memory.grads.si()},
                          {"optimizer_bytes", e.memory.optimizer.si()},
                          {"activations_bytes", e.memory.activations.si()},
                          {"other_bytes", e.memory.other.si()},
                          {"total_bytes", e.memory.total.si()},
                          {"capacity_bytes", e.memory.capacity.si()}};
  j["mfu"] = e.mfu;
  j["hfu"] = e.hfu;
  j["tokens_per_s"] = e.tokens_per_s;
  j["tokens_per_s_per_chip"] = e.tokens_per_s_per_chip;
  j["model_flops_per_s_per_chip"] = e.model_flops_per_s_per_chip;
  j["model_flops_per_step"] = e.model_flops_per_step;
  j["hardware_flops_per_step"] = e.hardware_flops_per_step;
  j["microbatches"] = e.microbatches;
  j["bottleneck"] = e.bottleneck;
  Json layout = Json::object();
  for (const auto& [k, v] : e.layout) layout[k] = v;
  j["layout"] = layout;
  j["critical_batch"] = {
      {"data_parallel_tokens_per_chip", NumberOrNull(e.critical.data_parallel)},
      {"fsdp_tokens_per_chip", NumberOrNull(e.critical.fsdp)},
      {"tensor_parallel_max_degree",
       NumberOrNull(e.critical.tensor_parallel_max)},
      {"fsdp_tp_tokens_per_chip", NumberOrNull(e.critical.fsdp_tp)},
      {"fsdp_tp_best_fsdp_degree", NumberOrNull(e.critical.fsdp_tp_x_opt)},
      {"dcn_tokens_per_slice", NumberOrNull(e.critical.dcn_per_slice)}};
  j["memory_floor"] = {{"state_bytes", e.memory_floor.state_bytes},
                       {"activation_bytes", e.memory_floor.activation_bytes},
                       {"min_chips", e.memory_floor.min_chips}};
  j["notes"] = e.notes;
  if (e.time_to_train_s > 0) {
    j["time_to_train_s"] = e.time_to_train_s;
    j["chip_hours"] = e.chip_hours;
    j["cost_usd"] = NumberOrNull(e.cost_usd);
  }
  return j;
}

namespace {

// Whole numbers as JSON integers ("batch": 32, not 32.0): counts are
// computed in doubles, and a whole value below 2^53 is exact either way.
// NOLINTNEXTLINE(misc-no-recursion)
Json WholeAsIntegers(const Json& j) {
  if (j.is_number_float()) {
    const double v = j.get<double>();
    constexpr double kExact = 9007199254740992.0;  // 2^53
    if (std::isfinite(v) && std::floor(v) == v && std::fabs(v) < kExact) {
      return static_cast<int64_t>(v);
    }
    return j;
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (auto it = j.begin(); it != j.end(); ++it) {
      out[it.key()] = WholeAsIntegers(it.value());
    }
    return out;
  }
  if (j.is_array()) {
    Json out = Json::array();
    for (const Json& v : j) out.push_back(WholeAsIntegers(v));
    return out;
  }
  return j;
}

}  // namespace

// Invalid UTF-8 (a command-line argument echoed under "inputs") becomes
// U+FFFD instead of an exception (cli_fuzz, sixth run).
std::string Dump(const Json& j) {
  return WholeAsIntegers(j).dump(2, ' ', false,
                                 Json::error_handler_t::replace) +
         "\n";
}

Json ToJson(const model::ModelSpec& m, double seq, hw::Dtype kv,
            model::AttentionFlops conv) {
  model::ParamCounts p = model::CountParams(m);
  Json j;
  j["id"] = m.id;
  j["name"] = m.name;
  j["params"] = p.total;
  j["active_params"] = p.active;
  j["params_by_component"] = {
      {"embedding", p.embedding}, {"unembedding", p.unembedding},
      {"attention", p.attention}, {"mlp", p.mlp},
      {"experts", p.experts},     {"shared_experts", p.shared_experts},
      {"router", p.router},       {"norms", p.norms}};
  j["matmul_params_active"] = p.matmul_active;
  j["train_flops_per_token"] = model::TrainFlopsPerToken(m, seq, conv);
  j["forward_flops_per_token"] = model::ForwardFlopsPerToken(m, seq, conv);
  j["attention_flops_per_token"] = model::AttentionFlopsPerToken(m, seq, conv);
  j["attention_flops_convention"] =
      conv == model::AttentionFlops::kCausal ? "causal (halved)" : "full";
  j["kv_cache_bytes_per_token"] = model::KvCacheBytes(m, seq, kv) / seq;
  j["kv_cache_bytes_per_sequence"] = model::KvCacheBytes(m, seq, kv);
  j["weight_bytes"] = p.total * hw::BytesPerElement(m.weight_dtype);
  Json acts = Json::object();
  for (model::Remat r : model::kAllRemats) {
    model::ActivationCost a = model::Activations(m, r, seq);
    acts[std::string(model::RematName(r))] = {
        {"bytes_per_token_per_layer", a.bytes_per_token_per_layer},
        {"recompute_flops_per_token", a.recompute_flops_per_token}};
  }
  j["activations_bf16"] = acts;
  Json arch;
  arch["num_layers"] = m.num_layers;
  arch["d_model"] = m.d_model;
  arch["ffn"] = m.ffn;
  arch["num_heads"] = m.num_heads;
  arch["num_kv_heads"] = m.num_kv_heads;
  arch["head_dim"] = m.head_dim;
  arch["vocab"] = m.vocab;
  arch["tied_embeddings"] = m.tied_embeddings;
  arch["gated_mlp"] = m.gated_mlp;
  arch["positions"] = m.learned_positions ? "learned" : "rotary";
  arch["weight_dtype"] = std::string(hw::DtypeName(m.weight_dtype));
  if (m.is_moe()) {
    arch["moe"] = {{"num_experts", m.moe.num_experts},
                   {"top_k", m.moe.top_k},
                   {"num_shared_experts", m.moe.num_shared_experts},
                   {"expert_ffn", m.moe.expert_ffn},
                   {"first_dense_layers", m.moe.first_dense_layers},
                   {"layer_freq", m.moe.layer_freq},
                   {"topk_group", m.moe.topk_group},
                   {"expert_groups", m.moe.expert_groups},
                   {"router_bias", m.moe.router_bias}};
  } else {
    arch["moe"] = nullptr;
  }
  if (m.mla) {
    arch["mla"] = {{"q_lora_rank", m.mla->q_lora_rank},
                   {"kv_lora_rank", m.mla->kv_lora_rank},
                   {"qk_nope_head_dim", m.mla->qk_nope_head_dim},
                   {"qk_rope_head_dim", m.mla->qk_rope_head_dim},
                   {"v_head_dim", m.mla->v_head_dim}};
  } else {
    arch["mla"] = nullptr;
  }
  int sliding = 0;
  for (int l = 0; l < m.num_layers; ++l) sliding += m.IsSlidingLayer(l);
  arch["sliding_window"] = m.sliding_window;
  arch["sliding_layers"] = sliding;
  j["architecture"] = arch;
  j["source"] = m.source;
  return j;
}

static Json ToJson(const estimate::Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}};
}

Json ToJson(const estimate::SimulationResult& r) {
  Json series = Json::array();
  for (const auto& [t, f] : r.kv_series) series.push_back({t, f});
  return {{"feasible", r.feasible},
          {"reason", r.reason},
          {"requests", r.requests},
          {"replicas", r.replicas},
          {"ttft_s", ToJson(r.ttft_s)},
          {"tpot_s", ToJson(r.tpot_s)},
          {"itl_s", ToJson(r.itl_s)},
          {"e2e_s", ToJson(r.e2e_s)},
          {"duration_s", r.duration_s},
          {"requests_per_s", r.requests_per_s},
          {"throughput_output_tokens_per_s", r.throughput_output_tokens_per_s},
          {"throughput_total_tokens_per_s", r.throughput_total_tokens_per_s},
          {"output_tokens_per_s_per_chip", r.output_tokens_per_s_per_chip},
          {"requests_per_s_per_chip", r.requests_per_s_per_chip},
          {"goodput_requests_per_s", r.goodput_requests_per_s},
          {"slo_attainment", r.slo_attainment},
          {"mean_requests_in_system", r.mean_requests_in_system},
          {"kv_cache",
           {{"capacity_tokens", r.kv_capacity_tokens},
            {"peak_fraction", r.kv_peak_fraction},
            {"mean_fraction", r.kv_mean_fraction},
            {"series_s_fraction", series}}},
          {"preemptions", r.preemptions},
          {"steps", r.steps},
          {"mean_decode_batch", r.mean_decode_batch},
          {"max_step_tokens", r.max_step_tokens},
          {"notes", r.notes}};
}

// draft_s only when a draft costs time (speculative decoding with a draft
// model or head), so plans without one keep their keys.
Json ToJson(const estimate::StepParts& p) {
  Json j = {{"matmul_s", p.matmul.si()},
            {"attention_s", p.attention.si()},
            {"elementwise_s", p.elementwise.si()},
            {"communication_s", p.communication.si()},
            {"overhead_s", p.overhead.si()}};
  if (p.draft.si() > 0) j["draft_s"] = p.draft.si();
  return j;
}

Json ToJson(const estimate::ServeEstimate& e) {
  return {{"feasible", e.feasible},
          {"reason", e.reason},
          {"prefill_time_s", e.prefill_time.si()},
          {"ttft_s", e.ttft.si()},
          {"decode_step_time_s", e.decode_step.si()},
          {"request_latency_s", e.request_latency.si()},
          {"tokens_per_s", e.tokens_per_s},
          {"tokens_per_s_per_chip", e.tokens_per_s_per_chip},
          {"tokens_per_s_per_user", e.tokens_per_s_per_user},
          {"max_batch", e.max_batch},
          {"critical_batch", {{"decode_sequences", e.critical_batch}}},
          {"memory_per_chip",
           {{"weights_bytes", e.weights_bytes.si()},
            {"kv_cache_bytes", e.kv_cache_bytes.si()},
            {"total_bytes", e.total_bytes.si()},
            {"capacity_bytes", e.capacity_bytes.si()}}},
          {"decode_breakdown", ToJson(e.decode_parts)},
          {"prefill_breakdown", ToJson(e.prefill_parts)},
          {"decode_bounds",
           {{"weights_s", e.weight_time.si()},
            {"kv_cache_s", e.kv_time.si()},
            {"compute_s", e.compute_time.si()},
            {"comm_s", e.comm_time.si()}}},
          {"bound", e.bound},
          {"cost_per_million_tokens_usd",
           NumberOrNull(e.cost_per_million_tokens_usd)},
          {"notes", e.notes}};
}

}  // namespace scalemodel::report
