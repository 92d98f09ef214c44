#!/usr/bin/env python3
"""Carries the training rows of shared/measured/runs.json into
data/validation/training_runs.json, normalised for the estimator.

Every row keeps its id, source and confidence; every value the source did not
give is filled by a rule written below and recorded in the row's
`assumptions`. Run from the repository root:
    python3 tools/dev/import_runs.py ../shared/measured/runs.json
"""
import json
import re
import sys

CHIPS = {
    "A100-SXM4-80GB": "a100", "H100-SXM5-80GB": "h100", "B200": "b200",
    "GB200": "gb200", "TPU v5e": "tpu-v5e", "TPU v4": "tpu-v4",
    "TPU v6e (Trillium)": "tpu-v6e", "TPU v5p": "tpu-v5p",
}
CATALOG_MODELS = [
    (r"DeepSeek-(V3|R1)", "deepseek-v3"), (r"Llama 3\.1 405B", "llama3-405b"),
    (r"Mixtral 8x7B", "mixtral-8x7b"), (r"Qwen3-235B-A22B", "qwen3-235b-a22b"),
    (r"Qwen3-30B-A3B", "qwen3-30b-a3b"),
]


def tpu_shape(chip, n):
    """A slice shape for n chips (one slice when it fits a pod)."""
    if chip in ("tpu-v5e", "tpu-v6e"):
        if n > 256:
            return "16x16/%d" % (n // 256) if n % 256 == 0 else None
        for a in (16, 8, 4, 2, 1):
            if n % a == 0 and n // a <= 16 and a >= n // a:
                return "%dx%d" % (n // a, a) if n // a <= a else "%dx%d" % (a, n // a)
        return None
    # 3D tori (v4, v5p): the most cubic shape of whole 4x4x4 cubes if possible.
    best = None
    for x in range(1, 33):
        for y in range(x, 33):
            if n % (x * y):
                continue
            z = n // (x * y)
            if z < y or z > 576:
                continue
            cand = (x, y, z)
            score = (all(d % 4 == 0 for d in cand), -(z - x))
            if best is None or score > best[0]:
                best = (score, cand)
    if best is None:
        return None
    x, y, z = best[1]
    return "%dx%dx%d" % (x, y, z)


def gpu_shape(chip, n):
    if chip == "gb200":
        for d in (72, 64, 36, 32, 16, 8, 4, 2, 1):
            if n % d == 0:
                return "%dx%d" % (d, n // d)
    if n < 8:
        return "%dx1" % n
    return "8x%d" % (n // 8) if n % 8 == 0 else None


# Megatron-Bridge performance presets (scripts/performance/configs/deepseek/
# deepseek_workload_base_configs.py, configs/qwen/
# qwen3_workload_base_configs.py, as of 2026) applied to a 26.x row only when
# the row's layout (tp, pp, vpp, ep, global batch) is the preset's:
# (id part, layout, DeepEP-style dedup, moe_a2a_overlap, preset name).
MBRIDGE_26_PRESETS = [
    ("b200-deepseekv3", (1, 8, 2, 32, 4096), True, True,
     "DeepSeek-V3 B200 FP8-MX V2"),  # moe_flex_dispatcher_backend "deepep"
    ("h100-qwen3_235b", (2, 8, 4, 32, 8192), False, True,
     "Qwen3-235B H100 FP8-CS V2"),  # moe_token_dispatcher_type "alltoall"
]


# Where each row comes from, for the per-source table of docs/accuracy.md:
# (id prefix, family), first match wins.
FAMILIES = [
    ("megatron2021-zero3", "DeepSpeed ZeRO-3, A100 (Narayanan et al. 2021)"),
    ("megatron2021", "Megatron-LM PTD-P, A100 (Narayanan et al. 2021)"),
    ("korthikanti2022", "Megatron-LM SP + selective, A100 (Korthikanti et al. 2022)"),
    ("megatron-core", "Megatron-Core README, H100"),
    ("nemo-longseq", "NeMo long context (CP), H100 / B200"),
    ("nemo2407", "NeMo 24.07, H100 FP8"),
    ("mbridge", "Megatron-Bridge, H100 / B200 / GB200"),
    ("maxtext-a3", "MaxText, A3 H100"),
    ("maxtext-tiering", "MaxText tiering, v5p / v6e"),
    ("maxtext-v5e", "MaxText, v5e (multislice)"),
    ("maxtext", "MaxText, v4 / v5p"),
    ("trtllm", "TensorRT-LLM, H100 / H200 / B200"),
    ("jetstream", "JetStream, v5e"),
]


def family_of(rid):
    for prefix, fam in FAMILIES:
        if rid.startswith(prefix):
            return fam
    return rid.split("-")[0]


def remat_of(text, assumptions, source):
    t = (text or "").lower()
    if not t:
        return "none"
    if "selective" in t:
        return "selective"
    if "minimal" in t or "offload" in t:
        return "save-matmul-outputs"
    if "full" in t or "recomputation" in t or "default remat" in t:
        return "full"
    assumptions.append("recompute '%s' read as none" % text)
    return "none"


def model_config(m):
    name = m.get("name", "")
    for pat, cid in CATALOG_MODELS:
        if re.search(pat, name):
            return {"catalog": cid}
    notes = (m.get("arch_notes") or "").lower() + " " + name.lower()
    gpt_style = any(k in notes for k in ("gpt-2", "gpt-3", "gelu", "gpt style",
                                         "learned position", "squared relu",
                                         "squared-relu", "relu^2", "gpt-j"))
    gated = any(k in notes for k in ("swiglu", "silu", "gated", "geglu"))
    if name.startswith("GPT") and not gated:
        gpt_style = True
    if "llama" in notes or "mixtral" in notes or "qwen" in notes or "maxtext" in notes:
        gpt_style = gpt_style and not gated
    cfg = {
        "model_type": "gpt2" if gpt_style else "llama",
        "hidden_size": m["d_model"], "num_hidden_layers": m["layers"],
        "num_attention_heads": m["n_heads"],
        "num_key_value_heads": m.get("n_kv_heads") or m["n_heads"],
        "head_dim": m.get("head_dim") or m["d_model"] // m["n_heads"],
        "vocab_size": m["vocab"], "intermediate_size": m["d_ff"],
        "tie_word_embeddings": gpt_style, "max_position_embeddings": m.get("seq_len") or 2048,
    }
    moe = m.get("moe")
    if moe:
        cfg["num_local_experts"] = moe["experts"]
        cfg["num_experts_per_tok"] = moe["active"]
        cfg["moe_intermediate_size"] = moe.get("expert_ffn") or m["d_ff"]
        if moe.get("shared_experts"):
            cfg["n_shared_experts"] = moe["shared_experts"]
        if moe.get("dense_layers"):
            cfg["first_k_dense_replace"] = moe["dense_layers"]
            cfg["intermediate_size"] = moe.get("dense_ffn") or m["d_ff"]
    return cfg


def num(v):
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        mm = re.match(r"\s*(\d+)", v)
        return int(mm.group(1)) if mm else None
    return None


def convert(r):
    a = []
    hw = r["hardware"]
    chip = CHIPS.get(hw["chip"])
    out = {"id": r["id"], "source": r["source"], "confidence": r.get("confidence"),
           "family": family_of(r["id"]),
           "model_name": r["model"]["name"], "chip": chip, "count": hw["count"]}
    if chip is None:
        out["skip"] = "chip %s is not in the catalog" % hw["chip"]
        return out
    n = hw["count"]
    shape = tpu_shape(chip, n) if chip.startswith("tpu") else gpu_shape(chip, n)
    # "K x v4-N" multislice rows: K slices of N/2 chips (v4-N counts
    # TensorCores), joined by DCN, not one big ICI torus.
    m_slices = re.match(r"(\d+) x v4-(\d+)", hw.get("interconnect") or "")
    if chip == "tpu-v4" and m_slices:
        k, per = int(m_slices.group(1)), int(m_slices.group(2)) // 2
        shape = tpu_shape(chip, per)
        if shape is not None and k > 1:
            shape += "/%d" % k
    if shape is None:
        out["skip"] = "no %s system shape for %d chips" % (chip, n)
        return out
    out["system"] = chip + ":" + shape
    if "configs/gpu/a3/" in r["source"]:
        # MaxText's a3 directory is for A3 High VMs (A3 Mega has its own):
        # GPUDirect-TCPX over 4 x 200 Gb/s NICs per 8 GPUs, not a DGX's
        # 8 x 400 Gb/s InfiniBand.
        out["system"] = "gcp-a3-high:" + shape
        a.append("A3 High VMs: 4 x 200 Gb/s GPU NICs per 8 GPUs "
                 "(gcp-a3-high), not one 400 Gb/s NIC per GPU")
    mdl = r["model"]
    if not any(re.search(pat, mdl.get("name", "")) for pat, _ in CATALOG_MODELS) and \
            not all(mdl.get(k) for k in ("d_model", "layers", "n_heads", "vocab", "d_ff")):
        out["skip"] = "the source does not give the model's shape"
        return out
    out["model"] = model_config(mdl)
    out["seq"] = r["model"].get("seq_len") or 2048
    p = r["parallelism"]
    other = p.get("other") or ""
    # A MaxText config's mesh quoted in 'other' ("ici_fsdp 64 x ici_tensor
    # 4, dcn_fsdp 2"): that layout, its slices and its chip count, which can
    # differ from a table's (then compared per chip, as the tables report).
    mesh = {k + "_" + a: int(v) for k, a, v in
            re.findall(r"\b(ici|dcn)_(fsdp|tensor|data)\D{0,3}(\d+)", other)}
    if chip.startswith("tpu") and mesh:
        g = lambda key: mesh.get(key, 1)
        slices = g("dcn_fsdp") * g("dcn_data")
        per_slice = g("ici_fsdp") * g("ici_tensor") * g("ici_data")
        total = per_slice * slices
        slice_shape = tpu_shape(chip, per_slice)
        if slice_shape is not None:
            if total != n:
                a.append("the linked config's mesh (%s) on %d chips, not the "
                         "table's %d: compared per chip" %
                         (", ".join("%s %d" % kv for kv in sorted(mesh.items())),
                          total, n))
            n = total
            out["count"] = n
            out["system"] = chip + ":" + slice_shape + ("/%d" % slices if slices > 1 else "")
            pdb = re.search(r"per_device_batch (\d+)", other)
            pdb = int(pdb.group(1)) if pdb else 1
            p = dict(p, tp=g("ici_tensor"),
                     dp=(g("ici_data") * g("dcn_data")),
                     zero_fsdp="FSDP %d" % (g("ici_fsdp") * g("dcn_fsdp")),
                     # MaxText's per_device_batch: sequences per chip, so a
                     # tensor-parallel group shares tp x that per replica.
                     micro_batch=p.get("micro_batch") or pdb * g("ici_tensor"),
                     global_batch=p.get("global_batch") or pdb * total)
    m_layout = re.search(r"TP(\d+)/PP(\d+)", other)
    if p.get("tp") is None and m_layout:
        p = dict(p, tp=int(m_layout.group(1)), pp=int(m_layout.group(2)))
        a.append("layout not stated; TP%s/PP%s as the source presumes" % m_layout.groups())
    tp = num(p.get("tp")) or 1
    pp = num(p.get("pp")) or 1
    cp = num(p.get("cp")) or 1
    ep = num(p.get("ep")) or 1
    dp = num(p.get("dp"))
    zf = (p.get("zero_fsdp") or "")
    fsdp = 1
    zero = 0
    if "FSDP" in zf and "FSDP=0" not in zf or "ZeRO-3" in zf:
        m = re.search(r"FSDP (\d+)", zf) or re.search(r"FSDP over (\d+)", zf) \
            or re.search(r"ici_fsdp=(\d+)", zf)
        if m:
            fsdp = int(m.group(1))
        elif "slice" in zf:
            fsdp = 256 if chip in ("tpu-v5e", "tpu-v6e") else min(n, 4096)
        else:
            fsdp = n // (tp * pp * cp * ep)
        fsdp = min(fsdp, n // (tp * pp * cp * ep))
    if "distributed optimizer" in zf or "ZeRO-1" in zf:
        zero = 1
    if "ZeRO-2" in zf:
        zero = 2
    megatron_family = any(k in r["source"] for k in ("NeMo", "Megatron-Bridge",
                                                     "Megatron-LM README",
                                                     "megatron-bridge", "Megatron-Core"))
    if zero == 0 and fsdp == 1 and megatron_family:
        zero = 1
        a.append("distributed optimizer (ZeRO-1) assumed: the Megatron/NeMo recipe default")
    if chip.startswith("tpu") and not zf and dp is None and tp * pp * cp * ep == 1:
        fsdp = min(n, 4096 if chip != "tpu-v5e" else 256)
        a.append("no layout given: FSDP over the slice (MaxText default ici_fsdp)")
    # ep is carved out of the data-parallel ranks in Megatron-style layouts.
    model_par = tp * pp * cp * fsdp
    rest = n // model_par if n % model_par == 0 else None
    if rest is None:
        out["skip"] = "tp*pp*cp*fsdp = %d does not divide %d chips" % (model_par, n)
        return out
    if ep > 1 and rest % ep and ep % tp == 0 and rest % (ep // tp) == 0:
        # Megatron's MoE parallel folding: the expert-parallel group spans
        # the tensor-parallel ranks too (expert TP 1). Modelled as ep / tp
        # with the experts split by tp: the same expert memory and FLOPs per
        # GPU, the dispatch among ep / tp ranks instead of ep.
        a.append("ep %d folded over tp %d (expert TP 1) modelled as ep %d "
                 "with experts split by tp" % (ep, tp, ep // tp))
        ep = ep // tp
    if ep > 1:
        if rest % ep:
            out["skip"] = "ep=%d does not divide the %d data ranks" % (ep, rest)
            return out
        dp_final = rest // ep
    else:
        dp_final = rest
    if dp is not None and dp * fsdp * ep != rest * ep and dp != dp_final:
        a.append("dp %s from the source changed to %d so the degrees multiply to %d chips"
                 % (dp, dp_final, n))
    out["plan"] = {"dp": dp_final, "fsdp": fsdp, "tp": tp, "pp": pp, "ep": ep,
                   "cp": cp, "zero": zero}
    mb = num(p.get("micro_batch"))
    # MaxText recipes quoted in 'other': per_device_batch is sequences per
    # chip, i.e. our micro batch per replica.
    m_pdb = re.search(r"per_device_batch (\d+)", other)
    if mb is None and m_pdb:
        mb = int(m_pdb.group(1))
        a.append("micro batch %d from the recipe's per_device_batch" % mb)
    if mb is None:
        mb = 1
        a.append("micro batch not stated: 1 sequence")
    gb = num(p.get("global_batch"))
    replicas = dp_final * fsdp * ep
    if gb is None:
        gb = replicas * mb
        a.append("global batch not stated: one micro batch per replica (%d sequences)" % gb)
    if gb % replicas or (gb // replicas) % mb:
        mb = 1
        if gb % replicas:
            gb = ((gb + replicas - 1) // replicas) * replicas
            a.append("global batch rounded up to %d to split over %d replicas" % (gb, replicas))
    out["micro_batch"] = mb
    out["global_batch"] = gb
    out["remat"] = remat_of(p.get("recompute"), a, r["source"])
    out["remat_stated"] = bool(p.get("recompute"))
    m_remat = re.search(r"remat (custom|save_dot_except_mlpwi|full|minimal)", other)
    if not p.get("recompute") and m_remat:
        # MaxText remat policies: save_dot_except_mlpwi is our
        # save-dot-except-mlp-in; custom recipes offload a few tensors and
        # recompute the rest (nearest: full).
        out["remat"] = {"custom": "full", "save_dot_except_mlpwi":
                        "save-dot-except-mlp-in", "full": "full",
                        "minimal": "save-matmul-outputs"}[m_remat.group(1)]
        out["remat_stated"] = True
        a.append("recipe remat_policy %s read as %s" % (m_remat.group(1), out["remat"]))
    # FlashAttention (Dao et al., May 2022) reached Megatron-LM later; the
    # 2021-2022 Megatron papers used kernels that materialise the scores.
    if "Narayanan" in r["source"] or "Korthikanti" in r["source"]:
        out["flash_attention"] = False
        a.append("attention materialises the S x S scores (pre-FlashAttention Megatron, 2021-2022)")
    prec = (p.get("precision") or "").lower()
    out["precision"] = "fp8" if "fp8" in prec else "bf16"
    if "fp8-cs" in prec:
        # Per-tensor current scaling: an amax pass before every cast.
        out["fp8_recipe"] = "tensorwise"
    elif "fp8-mx" in prec or "mxfp8" in prec:
        out["fp8_recipe"] = "mxfp8"
    elif "blockwise" in prec:
        out["fp8_recipe"] = "blockwise"
    elif "fp8" in prec and "Megatron-Bridge" in r["source"]:
        # Megatron-Bridge's performance scripts default to current scaling
        # (fp8_recipe="cs" in scripts/performance/configs/*).
        out["fp8_recipe"] = "tensorwise"
        a.append("fp8 recipe not stated: current scaling, the default of "
                 "Megatron-Bridge's performance scripts")
    vpp = p.get("vpp")
    if pp > 1:
        if isinstance(vpp, int) and vpp > 1:
            out["schedule"], out["vpp"] = "interleaved", vpp
        elif isinstance(vpp, str) and "interleaved" in vpp:
            out["schedule"], out["vpp"] = "interleaved", 2
            a.append("interleaved schedule without a stated depth: vpp=2")
        else:
            out["schedule"], out["vpp"] = "1f1b", 1
    sp = p.get("sp")
    out["sequence_parallel"] = bool(sp) if sp is not None else tp > 1
    if "tp-comm-overlap" in other or "async tp" in other.lower():
        out["tp_comm_overlap"] = True
    if "maxtext" in r["source"].lower():
        # The habits estimate::ApplyEnginePreset(Engine::kMaxText) sets
        # (src/estimate/presets.cc); rows carry them explicitly.
        # MaxText keeps weights in fp32 (base.yml weight_dtype: float32), so
        # its gradients and their reductions are fp32.
        out["grad_reduce"] = "fp32"
        # base.yml remat_policy: full; used when the row states no policy
        # and none fits our memory model.
        out["remat_default"] = "full"
        # Its cross-VM / cross-slice gradient reduction shows in full in the
        # step time (docs/model.md 5.3).
        out["dp_overlap"] = False
        a.append("MaxText: fp32 gradient reductions (weight_dtype float32), "
                 "data-parallel reduction after the backward pass")
    rid = r["id"]
    if rid.startswith(("megatron2021-weak", "megatron2021-ptdp",
                       "korthikanti2022", "megatron-core")):
        # Megatron-LM's own scripts: the vocabulary-parallel cross entropy
        # unfused (--cross-entropy-loss-fusion is off by default and did not
        # exist before 2024).
        out["cross_entropy"] = "unfused"
        a.append("Megatron-LM's unfused cross entropy (its default)")
    if rid.startswith("megatron2021-zero3"):
        # The paper (arXiv:2104.04473, April 2021) ran DeepSpeed before
        # v0.5.5, whose ZeRO-3 gathers each weight tensor after
        # torch.cuda.synchronize() (partition_parameters.py at v0.3.13;
        # removed by DeepSpeed PR #1188, 2021-10-31): no overlap
        # (EngineHabits::fsdp_sync_per_tensor).
        out["zero3_sync_per_tensor"] = True
        a.append("DeepSpeed of 2021 (before v0.5.5): ZeRO-3 gathers each "
                 "weight tensor after torch.cuda.synchronize(), one NCCL call "
                 "per tensor, nothing overlapped")
    if rid.startswith("mbridge-") and "deepseekv3" in rid:
        # Megatron-Bridge's DeepSeek-V3 recipes recompute the MLA
        # up-projections at least (recompute_granularity "selective",
        # recompute_modules ["mla_up_proj", ...] in every preset of
        # scripts/performance/configs/deepseek): selective is the nearest
        # policy, used where the row states none.
        out["remat_default"] = "selective"
    if "womtp" in rid:
        # "w/o MTP": trained without DeepSeek-V3's multi-token-prediction
        # module, which the other DeepSeek-V3 rows (and the model) have.
        out["mtp_layers"] = 0
        a.append("without the multi-token-prediction module (womtp)")
    preset = None
    if rid.startswith("mbridge-26."):
        src_layout = (num(p.get("tp")) or 1, num(p.get("pp")) or 1,
                      num(p.get("vpp")) or 1, num(p.get("ep")) or 1,
                      r["parallelism"].get("global_batch"))
        for part, layout, dedup, overlap, name in MBRIDGE_26_PRESETS:
            if part in rid and layout == src_layout:
                preset = (dedup, overlap, name)
        if preset:
            out["ep_dedup"] = preset[0]
            out["ep_overlap"] = preset[1]
            a.append("%s dispatch with all-to-all overlap (Megatron-Bridge's "
                     "%s preset, the row's layout)"
                     % ("DeepEP" if preset[0] else "plain all-to-all", preset[2]))
    qwen3_token_drop = rid.startswith("mbridge-25.") and "qwen3" in rid
    if qwen3_token_drop:
        # Megatron-Bridge's 25.x performance configs for Qwen3 MoE
        # (scripts/performance/configs/qwen3, set_qwen3_common_configs) apply
        # apply_moe_token_drop (capacity 1.0, padded), which requires the
        # plain all-to-all dispatcher: no DeepEP. Their H100 235B preset is
        # this table's layout (tp 2, pp 8, vpp 4, ep 32, batch 2048).
        a.append("all-to-all dispatch: Megatron-Bridge 25.x Qwen3 configs "
                 "drop tokens at capacity 1.0, which rules out DeepEP")
    elif (megatron_family and r["model"].get("moe") and chip in ("h100", "h800")
          and preset is None):
        # NeMo / Megatron-Bridge performance recipes dispatch with DeepEP on
        # Hopper (and the all-to-all dispatcher on Blackwell).
        out["ep_dedup"] = True
        a.append("DeepEP dispatch (Hopper recipes): one copy per destination node")
    if chip in ("h100", "h800") and re.search(r"NeMo ?24\.0[1-6]", r["source"]):
        # FlashAttention-3 (July 2024) and the cuDNN kernels that match it
        # came after these containers: Hopper attention at FA2's level.
        out["attention_kernel"] = "flash2"
        a.append("FlashAttention-2-level attention (container older than "
                 "FlashAttention-3, July 2024)")
    if "token dropping" in other:
        # MaxText's mixtral_8x7b_dropped benchmark config: megablox off
        # (one-hot dense dispatch), capacity_factor 1.25.
        out["capacity_factor"] = 1.25
        a.append("token dropping at capacity factor 1.25 with one-hot "
                 "dispatch (MaxText's mixtral_8x7b_dropped config)")
    if "LoRA fine-tuning" in (r.get("notes") or ""):
        # Rank 32 is NeMo's default adapter dimension; the adapters are
        # under 1% of the step either way.
        out["lora_rank"] = 32
        a.append("LoRA adapters of rank 32 (NeMo's default), base frozen")
    # What the source counts in TFLOP/s and MFU.
    # Narayanan et al. (2021), eq. 3: 96 B s l h^2 (1 + s/6h + V/16lh), the
    # recomputed forward included and attention counted in full. Megatron-LM's
    # num_floating_point_operations (2024), which the Megatron-Core README and
    # NeMo's 2024 performance pages report, has the same s/h term without a
    # causal factor; Megatron-Bridge's formulas (2025) halve it. MaxText's
    # v4/v5e tables predate its July-2025 halving.
    src = r["source"]
    if "Narayanan" in src:
        conv = "hfu"
    elif "maxtext" in src.lower() and (chip in ("tpu-v4", "tpu-v5e")
                                       or "configs/gpu/a3/" in src):
        # MaxText's v4, v5e and A3 tables date from 2023-24 (the A3 one sat
        # at MaxText/configs/a3/ before the 2025 move to src/), before its
        # July-2025 halving of causal attention.
        conv = "model_full"
    elif "Korthikanti" in src:
        # Their MFU is 72 B s l h^2 (1 + s/6h + V/12lh): full attention
        # (0.542 for the 39.15 s 530B run only with it; halved gives 0.537).
        conv = "model_full"
    elif "Megatron-LM README" in src or ("NeMo" in src and "Bridge" not in src
                                         and "bridge" not in src):
        conv = "model_full"
    else:
        conv = "model_causal"
    out["flops_convention"] = conv
    meas = r["measured"]
    picks = []
    for k in ("step_time_s", "tokens_per_s_per_chip", "tflops_per_chip", "mfu"):
        if isinstance(meas.get(k), (int, float)):
            picks.append((k, meas[k]))
    if not picks:
        out["skip"] = "no comparable measurement"
        return out
    out["measured"] = dict(picks)
    out["assumptions"] = a
    return out


def main():
    src = json.load(open(sys.argv[1]))
    rows = [convert(r) for r in src["entries"] if r["kind"] == "training"]
    doc = {"description": "Training rows of shared/measured/runs.json (published "
           "measurements), normalised by tools/dev/import_runs.py; each row "
           "keeps its source, and 'assumptions' lists every value filled in.",
           "runs": rows}
    with open("data/validation/training_runs.json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("%d rows, %d skipped" % (len(rows), sum(1 for r in rows if "skip" in r)))
    for r in rows:
        if "skip" in r:
            print("skip", r["id"], r["skip"])


if __name__ == "__main__":
    main()


INF_MODELS = [
    (r"Llama 3\.1 8B|Llama 3 8B", "llama3-8b"), (r"Llama 3\.3 70B", "llama3-70b"),
    (r"Llama 3\.1 405B", "llama3-405b"), (r"Qwen3-235B", "qwen3-235b-a22b"),
    (r"Llama 2 13B", "llama2-13b"), (r"Llama 2 70B", "llama2-70b"),
    (r"Llama 2 7B", "llama2-7b"), (r"DeepSeek-R1", "deepseek-v3"),
]
INF_CHIPS = dict(CHIPS, **{"H200-SXM-141GB": "h200"})


def convert_inference(r):
    hw = r["hardware"]
    notes = (r.get("notes") or "").lower()
    if "speculative" in notes or re.search(r"(?<!no )mtp", notes):
        return {"id": r["id"], "source": r["source"], "model_name": r["model"]["name"],
                "skip": "speculative decoding (MTP, 3 draft layers): the source states no acceptance rate (a real dataset), which the prediction needs (docs/model.md 7.4)"}
    chip = INF_CHIPS.get(hw["chip"])
    out = {"id": r["id"], "source": r["source"], "model_name": r["model"]["name"],
           "family": family_of(r["id"]), "confidence": r.get("confidence")}
    a = []
    if chip is None:
        out["skip"] = "chip %s is not in the catalog" % hw["chip"]
        return out
    n = hw["count"]
    shape = tpu_shape(chip, n) if chip.startswith("tpu") else "%dx1" % n
    out["system"] = chip + ":" + shape
    name = r["model"]["name"]
    cat = next((cid for pat, cid in INF_MODELS if re.search(pat, name)), None)
    if cat:
        out["model"] = {"catalog": cat}
    else:
        mdl = r["model"]
        if not all(mdl.get(k) for k in ("d_model", "layers", "n_heads", "vocab", "d_ff")):
            out["skip"] = "the source does not give the model's shape"
            return out
        out["model"] = model_config(mdl)
    p = r["parallelism"]
    prec = (p.get("precision") or "").lower()
    if "fp4" in prec:
        w, kv = "fp4", "fp8"
    elif "fp8" in prec:
        w, kv = "fp8", "fp8"
    elif "int8" in prec:
        w, kv = "int8", "int8"
    else:
        w, kv = "bf16", "bf16"
    if "fp16/bf16 kv" in prec:
        kv = "bf16"
    if w in ("fp8", "fp4") and "kv" not in prec:
        a.append("KV cache assumed fp8 with %s weights (TensorRT-LLM checkpoints)" % w)
    tp = p.get("tp") or 1
    ep = p.get("ep") or 1
    moe = cat in ("qwen3-235b-a22b", "deepseek-v3") or bool(r["model"].get("moe"))
    if moe and ("ep" in prec or "attention-dp" in prec or ep > 1):
        ep = n if ep == 1 else ep
        tp = max(1, n // ep)
        a.append("MoE served with ep=%d, tp=%d over the %d GPUs" % (ep, tp, n))
    else:
        tp, ep = n, 1
    out["plan"] = {"tp": tp, "ep": ep}
    # The engines' attention data parallelism (TensorRT-LLM
    # enable_attention_dp), where the source says it ran.
    if ep > 1 and ("attention-dp" in prec or "attention dp" in notes):
        out["plan"]["dp_attention"] = True
    out["weights"], out["kv"] = w, kv
    m = r["measured"]
    cases = []
    per_group = "whole tp group" in (m.get("metric") or "")
    if "points" in m:
        for pt in m["points"]:
            if pt.get("output_len") is None:
                if pt.get("ttft_ms") is not None and pt.get("batch"):
                    cases.append({"batch": pt["batch"], "prompt": pt["input_len"],
                                  "output": 1, "metric": "ttft_s",
                                  "value": pt["ttft_ms"] / 1000})
                continue
            c = {"batch": pt.get("batch"), "prompt": pt["input_len"],
                 "output": pt["output_len"]}
            if pt.get("output_tokens_per_s"):
                per_chip = pt["output_tokens_per_s"] / n if (per_group or "GPU" not in (m.get("metric") or "")) else pt["output_tokens_per_s"]
                if "output tokens/s/GPU" in (m.get("metric") or ""):
                    per_chip = pt["output_tokens_per_s"]
                cases.append(dict(c, metric="tokens_per_s_per_chip", value=per_chip))
            if pt.get("ttft_ms") is not None:
                cases.append(dict(c, metric="ttft_s", value=pt["ttft_ms"] / 1000))
    else:
        batch = m.get("batch") or m.get("concurrency")
        prompt = m.get("input_len") or m.get("max_input_len")
        output = m.get("output_len") or m.get("max_output_len")
        if prompt is None and m.get("requests"):
            prompt = m["input_tokens"] / m["requests"]
            output = m["output_tokens"] / m["requests"]
            a.append("mean prompt and output lengths of the request set")
        c = {"batch": batch, "prompt": prompt, "output": output}
        if m.get("output_tokens_per_s_per_user") and batch == 1:
            cases.append(dict(c, metric="tokens_per_s_per_user",
                              value=m["output_tokens_per_s_per_user"]))
        elif m.get("output_tokens_per_s_per_chip"):
            cases.append(dict(c, metric="tokens_per_s_per_chip",
                              value=m["output_tokens_per_s_per_chip"]))
        elif m.get("throughput_tokens_per_s"):
            a.append("JetStream throughput read as output tokens/s for the whole host")
            cases.append(dict(c, metric="tokens_per_s_per_chip",
                              value=m["throughput_tokens_per_s"] / n))
        elif m.get("output_tokens_per_s"):
            cases.append(dict(c, metric="tokens_per_s_per_chip",
                              value=m["output_tokens_per_s"] / n))
    if not cases:
        out["skip"] = "no comparable measurement"
        return out
    for c in cases:
        if c["batch"] is None:
            c["batch"] = "max"
    if any(c["batch"] == "max" for c in cases):
        a.append("batch not reported (chosen by the runtime): the largest that fits")
    out["cases"] = cases
    out["assumptions"] = a
    return out


def main_inference():
    src = json.load(open(sys.argv[1]))
    rows = [convert_inference(r) for r in src["entries"] if r["kind"] == "inference"]
    doc = {"description": "Inference rows of shared/measured/runs.json, normalised "
           "by tools/dev/import_runs.py; 'assumptions' lists every value filled in.",
           "runs": rows}
    with open("data/validation/inference_runs.json", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("%d inference rows, %d skipped" % (len(rows), sum(1 for r in rows if "skip" in r)))


main_inference()
