#!/usr/bin/env python3
"""Generates validation/suites/published-runs/ from validation/data/published_runs.json.

Every run in the file becomes either a case (a scenario file plus the reported figure
and its FLOP convention in suite.json) or an entry of "not_expressible" with the reason. The
reported figures are written to suite.json only, for `clustersim validate` to compare against;
nothing in a scenario is derived from a case's own reported throughput.

usage: tools/gen_validation_suite.py [PUBLISHED_RUNS_JSON] [--out validation/suites/published-runs]
"""
import argparse
import glob
import json
import os
import re
import sys

import completion_rules
import megatron_core_guide

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Cluster preset per GPU type (topologies/clusters/). Interconnect facts for these runs are in
# the presets' own "sources".
CLUSTERS = [
    (re.compile(r"^A100-SXM 80GB$|^A100 80GB"), "dgx-a100-sc21"),
    (re.compile(r"^H100"), "h100-2048x8-rail"),
    # DGX B200: eight B200 on NVLink 5 and eight 400 Gb/s rails (docs/hardware.md, "HGX H200
    # and HGX B200 nodes"); its kernel efficiencies are Blackwell's
    # (docs/microbenchmarks.md#blackwell)
    (re.compile(r"^B200$"), "hgx-b200-2048x8-rail"),
    # DGX GB200: NVL72 racks, 72 GB200 in one NVLink domain, one 400 Gb/s rail per GPU
    # (docs/hardware.md#gb200-and-the-nvl72-rack); Blackwell's kernel efficiencies
    (re.compile(r"^GB200$"), "gb200-nvl72-128x72-rail"),
    # GB300 NVL72: the GB200 rack with Blackwell Ultra GPUs (the GB200's BF16 and FP8 peaks) and
    # one 800 Gb/s rail per GPU (docs/hardware.md#gb300-and-the-nvl72-rack)
    (re.compile(r"^GB300$"), "gb300-nvl72-128x72-rail"),
]

# How each source counts FLOPs (see validation/flop_conventions.hpp for the formulas).
def convention_for(run):
    rid = run["id"]
    if rid.startswith("sc21_"):
        return "megatron_eq3"          # SC'21 eq. (3): counts the recompute forward pass
    if rid.startswith("korthikanti_"):
        return "korthikanti_model"     # Korthikanti et al. eq. (7): model FLOPs
    if rid.startswith(("nemo2407_", "megatron_bridge_", "megatron_readme_h100_")):
        return "megatron_core"         # Megatron-LM num_floating_point_operations
    return None


# NeMo 24.07 performance runs: what the performance table leaves out, from the NeMo Framework
# Launcher training configs of that release (NVIDIA/NeMo-Framework-Launcher commit 24c3d6b,
# 2024-09-06, the last before the table's 2024-09-09 revision), launcher_scripts/conf/training/
# <config>.yaml. The table's own layout (tp, pp, vpp, cp, batch sizes) always wins; only
# fields the table does not give are taken from the config:
#   sequence_parallel       the config's model.sequence_parallel (it is True in every tp > 1 config)
#   optim.name              distributed_fused_adam: Apex DistributedFusedAdam, whose docstring
#                           says it "implements the ZeRO-2 algorithm" -> zero_stage 2
#   optim.bucket_cap_mb     -> grad_bucket_MiB
#   ub_tp_comm_overlap      TP communication overlapped with GEMMs (userbuffers); the simulator
#                           does not model it, so the case says so in its assumptions
NEMO_LAUNCHER_COMMIT = "24c3d6b"
NEMO_2407_CONFIGS = {
    # run id prefix: (config file, sequence_parallel, bucket_cap_mb, ub_tp_comm_overlap,
    #                 dropout: hidden_dropout / attention_dropout > 0)
    "nemo2407_gpt3-5b_": ("gpt3/5b.yaml", False, 400, False, True),
    "nemo2407_gpt3-20b_": ("gpt3/20b.yaml", True, 220, True, True),
    "nemo2407_gpt3-175b_": ("gpt3/175b.yaml", True, 220, False, True),
    "nemo2407_llama2-7b_": ("llama/llama2_7b.yaml", False, 125, False, False),
    "nemo2407_llama2-13b_": ("llama/llama2_13b.yaml", False, 125, False, False),
    "nemo2407_llama2-70b_": ("llama/llama2_70b.yaml", True, 125, True, False),
    "nemo2407_llama3-8b_": ("llama/llama3_8b.yaml", False, 125, False, False),
    "nemo2407_llama3-70b_": ("llama/llama3_70b.yaml", True, 125, True, False),
    "nemo2407_nemotron-8b_": ("nemotron/nemotron_8b.yaml", True, 100, True, False),
    "nemo2407_nemotron-22b_": ("nemotron/nemotron_22b.yaml", True, 100, True, False),
    "nemo2407_nemotron-340b_": ("nemotron/nemotron_340b.yaml", True, 50, False, False),
}
# The vocab-parallel cross entropy each stack ran (training.cross_entropy "unfused": PyTorch ops
# over the FP32 logits). Megatron-LM 2021-22 casts the logits with output.float() and runs
# _VocabParallelCrossEntropy (megatron/model/gpt_model.py and megatron/mpu/cross_entropy.py,
# NVIDIA/Megatron-LM de7dc40f; bigscience Megatron-DeepSpeed's gpt_model.py does the same):
# SC'21, Korthikanti, BLOOM. Megatron-Core's cross_entropy_loss_fusion defaults to False
# (model_parallel_config.py, f2e5db402c) and the README's example script does not set it. NeMo
# 24.07 passes it from the launcher config: true in the Llama and Nemotron 4-22B configs, absent
# (False) in the GPT-3 and Nemotron-340B ones (NeMo-Framework-Launcher 24c3d6b). Megatron-Bridge
# 25.11's GPTProvider sets it true.
UNFUSED_CROSS_ENTROPY_PREFIXES = ("sc21_", "korthikanti_", "bloom_", "megatron_readme_h100_")
NEMO_2407_UNFUSED_CROSS_ENTROPY = ("gpt3/5b.yaml", "gpt3/20b.yaml", "gpt3/175b.yaml",
                                   "nemotron/nemotron_340b.yaml")
# Stacks whose column-parallel linears launch their backward TP collectives asynchronously beside
# their GEMMs (training.tp_async_backward): Megatron-LM from cf7efd4f (2021-08-30,
# LinearWithGradAccumulationAndAsyncCommunication in megatron/mpu/layers.py; on unless
# --no-async-tensor-model-parallel-allreduce, and always with sequence parallelism, eec218d8,
# 2022-03) for Korthikanti's runs; Transformer Engine's Linear and LayerNormLinear (v1.7 and 2.9)
# under Megatron-Core for the README, NeMo 24.07 and Megatron-Bridge runs. SC'21's scripts
# (de7dc40f) predate it; bigscience's Megatron-DeepSpeed fork has no async launch; PyTorch's
# DTensor tensor parallelism (torchtitan) runs its collectives in order.
ASYNC_TP_BACKWARD_PREFIXES = ("korthikanti_", "megatron_readme_h100_", "nemo2407_",
                              "megatron_bridge_")
# How each micro-batch's weight gradients join the step's (training.grad_accumulation) where the
# run's stack did not accumulate them inside the weight-gradient GEMM (Megatron-LM's
# gradient_accumulation_fusion, from 83b1e42f, 2022-02-13: Korthikanti's runs and later;
# Transformer Engine's fuse_wgrad_accumulation under Megatron-Core, NeMo and Megatron-Bridge):
#   SC'21's Megatron-LM runs (NVIDIA/Megatron-LM de7dc40f, examples/sc21: --fp16, --DDP-impl
#     local or torch): FP16 leaves --use-contiguous-buffers-in-ddp off (megatron/arguments.py
#     turns it on only with BF16's FP32 accumulation), so no main_grad buffer exists and PyTorch's
#     autograd adds each micro-batch's gradient into .grad. Their ZeRO-3 rows ran DeepSpeed.
#   BLOOM (DeepSpeed's BigScience branch 5ea1c60f8): the pipeline engine calls
#     BF16_Optimizer.update_hp_grads after every micro-batch's backward
#     (deepspeed/runtime/pipe/engine.py _exec_backward_pass; the last stage through
#     BF16_Optimizer.backward).
GRAD_ACCUMULATION = (
    (("sc21_t1_", "sc21_t2_ptdp_"), "autograd", "FP16 without contiguous DDP buffers in "
     "Megatron-LM de7dc40f: autograd adds each micro-batch's gradient into .grad; gradient "
     "accumulation fusion came in 83b1e42f (2022-02)"),
    (("bloom_",), "deepspeed-bf16", "DeepSpeed's pipeline engine calls BF16_Optimizer."
     "update_hp_grads after every micro-batch's backward: each BF16 gradient cast to FP32 and "
     "added (BigScience branch 5ea1c60f8)"),
)
# Interleaved runs whose stack posts each pipeline receive when the pass before it ends
# (training.overlap_p2p_comm, Megatron-Core's overlap_p2p_comm in
# forward_backward_pipelining_with_interleaving): the NeMo 24.07 launcher configs that set
# overlap_p2p_comm: True (NeMo-Framework-Launcher 24c3d6b; nemotron_340b.yaml sets False and
# batch_p2p_comm True), and every Megatron-Bridge 25.11 run with vp > 1 (CommOverlapConfig's
# _get_model_comm_overlap_cfgs, src/megatron/bridge/training/comm_overlap.py, 00b7660b, sets it
# whenever pp > 1 and vp > 1; the performance configs all pass a CommOverlapConfig). The
# Megatron-LM README's runs are not interleaved (Megatron-LM turns it off there); torchtitan's
# interleaved row runs PyTorch's pipelining schedules, not read for this.
NEMO_2407_OVERLAP_P2P = ("gpt3/175b.yaml", "llama/llama2_13b.yaml", "llama/llama2_70b.yaml",
                         "llama/llama3_70b.yaml", "nemotron/nemotron_22b.yaml")
# Launcher configs with ub_tp_comm_overlap on that name no ub_cfg take Transformer Engine's
# defaults (initialize_ub, TE v1.8 transformer_engine/pytorch/module/base.py): set_sm_margin 0,
# so the overlapped GEMMs keep every SM.
NEMO_2407_UB_DEFAULT = ("nemotron/nemotron_8b.yaml", "nemotron/nemotron_22b.yaml")
# activations_checkpoint_granularity where a launcher config sets one (every other config above
# has null: no recomputation).
NEMO_2407_RECOMPUTE = {"nemotron/nemotron_340b.yaml": "selective"}
# optim.dtype where a launcher config sets the optimizer state's dtype (the others leave Apex
# DistributedFusedAdam's default, FP32).
NEMO_2407_OPTIM_DTYPE = {"nemotron/nemotron_340b.yaml": "bf16"}
# SMs that the pipelined reduce-scatter of the forward output projection (proj_fprop) and
# second MLP linear (fc2_fprop) take from their GEMMs (userbuffers method pipeline, num_sm, with
# set_sm_margin 1), from the ub_cfg file each NeMo launcher config names
# (launcher_scripts/conf/training/tp_overlap/, NeMo-Framework-Launcher 24c3d6b).
NEMO_2407_UB_SMS = {
    "gpt3/20b.yaml": ("ub_cfg_h100_h6144_tp2_mbs2_seqlen2048", 16, 24),
    "llama/llama2_70b.yaml": ("ub_cfg_h100_h8192_tp4_mbs1_seqlen4096", 24, 16),
    "llama/llama3_70b.yaml": ("ub_cfg_h100_h8192_tp4_mbs1_seqlen8192", 24, 16),
}


def nemo_2407_config(run):
    for prefix, cfg in NEMO_2407_CONFIGS.items():
        if run["id"].startswith(prefix):
            return cfg
    return None


# Megatron-Bridge 25.11 performance runs: what the table leaves out, from the performance recipes
# of the commit that published the table (NVIDIA-NeMo/Megatron-Bridge 00b7660b, 2025-12-09,
# "Update with latest perf for ... Llama3 models"). The table's layout always wins.
#   scripts/performance/utils/utils.py        WorkloadBaseConfig.sequence_parallel = tp > 1
#   scripts/performance/utils/overrides.py    recompute_num_layers N -> recompute_granularity
#                                             "full", recompute_method "block", N layers
#   scripts/performance/configs/llama/llama3_workload_base_configs.py
#                                             LLAMA3_8B_PRETRAIN_CONFIG_H100_FP8_CS_BASE_CONFIG:
#                                             recompute_num_layers=5
#   src/megatron/bridge/recipes/llama/llama3.py llama3_70b_pretrain_config:
#                                             CommOverlapConfig(tp_comm_overlap=True)
#   src/megatron/bridge/models/llama/llama_provider.py Llama3ModelProvider: hidden_dropout =
#                                             attention_dropout = 0.0 (no dropout)
#   src/megatron/bridge/models/qwen/qwen_provider.py Qwen3MoEModelProvider: hidden_dropout =
#                                             attention_dropout = 0.0
BRIDGE_COMMIT = completion_rules.BRIDGE_COMMIT  # the commit that published the 25.11 table
BRIDGE_2511_CONFIGS = {
    # run id prefix: (recipe, tp_comm_overlap, recompute_layers or None, model provider); the
    # first prefix that matches wins
    # scripts/performance/configs/llama/llama31_llm_pretrain.py llama31_405b_pretrain_config_b200:
    # the same recipe as the H100's with LLAMA31_405B_PRETRAIN_CONFIG_B200_FP8_CS_BASE_CONFIG
    # (TP 4, PP 8, CP 2, VP 8, GBS 64) and userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192
    "megatron_bridge_2511_llama31_405b_b200_": ("llama31_405b B200 FP8-CS", True, None,
                                                "Llama3ModelProvider"),
    # scripts/performance/configs/llama/llama3_llm_pretrain.py llama3_8b_pretrain_config_b200 and
    # _gb200: LLAMA3_8B_PRETRAIN_CONFIG_{B200,GB200}_FP8_CS_BASE_CONFIG (micro-batch 2,
    # cuda_graph_impl "local", cuda_graph_scope "full_iteration"), TP overlap only with tp > 1
    "megatron_bridge_2511_llama3_8b_b200_": ("llama3_8b B200 FP8-CS", False, None,
                                             "Llama3ModelProvider"),
    "megatron_bridge_2511_llama3_8b_gb200_": ("llama3_8b GB200 FP8-CS", False, None,
                                              "Llama3ModelProvider"),
    # llama3_8b_pretrain_config_gb300: LLAMA3_8B_PRETRAIN_CONFIG_GB300_FP8_CS_BASE_CONFIG (its
    # FP8_MX one is the same object; cuda_graph_scope "full_iteration"; micro-batch 4, where the
    # table prints 2: rule BRIDGE_2511_GB300_RECIPE_MBS)
    "megatron_bridge_2511_llama3_8b_gb300_": ("llama3_8b GB300 FP8-CS", False, None,
                                              "Llama3ModelProvider"),
    "megatron_bridge_2511_llama3_8b_": ("llama3_8b H100 FP8-CS", False, 5,
                                        "Llama3ModelProvider"),
    "megatron_bridge_2511_llama3_70b_": ("llama3_70b H100 FP8-CS", True, None,
                                         "Llama3ModelProvider"),
    "megatron_bridge_2511_llama31_405b_": ("llama31_405b H100 FP8-CS", True, None,
                                           "Llama3ModelProvider"),
    "megatron_bridge_2511_qwen3_30b_a3b_16gpu": ("qwen3_30b_a3b H100 FP8-CS", False, None,
                                            "Qwen3MoEModelProvider"),
    # scripts/performance/configs/qwen/qwen3_llm_pretrain.py qwen3_30b_a3b_pretrain_config_b200
    # and _gb200 with QWEN3_30B_A3B_PRETRAIN_CONFIG_{B200_FP8_CS,GB200_FP8_MX}_BASE_CONFIG (the
    # B200's FP8_MX_BASE_CONFIG is its FP8_CS one; the GB200's differs from its FP8_CS one only
    # in leaving "attn" out of the CUDA graph scope)
    "megatron_bridge_2511_qwen3_30b_a3b_b200_": ("qwen3_30b_a3b B200 FP8-CS", False, None,
                                                 "Qwen3MoEModelProvider"),
    "megatron_bridge_2511_qwen3_30b_a3b_gb200_": ("qwen3_30b_a3b GB200 FP8-MX", False, None,
                                                  "Qwen3MoEModelProvider"),
    # qwen3_30b_a3b_pretrain_config_gb300 with QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_CS_BASE_CONFIG
    # (its FP8_MX one is the same object; micro-batch 8, where the table prints 4: rule
    # BRIDGE_2511_GB300_RECIPE_MBS)
    "megatron_bridge_2511_qwen3_30b_a3b_gb300_": ("qwen3_30b_a3b GB300 FP8-CS", False, None,
                                                  "Qwen3MoEModelProvider"),
    # scripts/performance/configs/deepseek/deepseek_llm_pretrain.py
    # deepseek_v3_pretrain_config_b200 with DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_CS_BASE_CONFIG
    # (its FP8_MX one is the same object: PP 16, EP 8, global batch 2048, the table's layout)
    "megatron_bridge_2511_deepseekv3_b200_": ("deepseek_v3 B200 FP8-CS", False, None,
                                              "DeepSeekV3ModelProvider"),
}

# Megatron-Bridge 25.11 MoE performance runs: how the recipe of the commit that published the
# table moves tokens (scripts/performance/configs/qwen/qwen3_llm_pretrain.py and
# qwen3_workload_base_configs.py, 00b7660b):
#   moe_token_dispatcher_type "alltoall"        -> moe_dispatcher alltoall (the model provider's,
#                                                  unless apply_flex_dispatcher_backend switches
#                                                  to "flex": DeepEP on Ampere, Hopper, B200 and
#                                                  B300, HybridEP on GB200 and GB300 only)
#   moe_a2a_overlap True (H100 only; the        -> moe_comm_overlap (the exchanges of one
#   WorkloadBaseConfig default is False):          micro-batch hidden behind another's compute)
#   overlap_moe_expert_parallel_comm with
#   delay_wgrad_compute
#   moe_router_force_load_balancing True        -> routing_imbalance 1 (the model default)
#   moe_grouped_gemm True                       -> Transformer Engine's GroupedLinear
#                                                  (TEGroupedMLP): one GEMM per local expert,
#                                                  moe_expert_gemm's default per_expert (TE 2.9
#                                                  uses its CUTLASS grouped GEMM on Hopper only,
#                                                  and only when asked: cublaslt_gemm.cu)
# The recipes set no SM count for the overlapped all-to-all; NCCL's channels for it are not
# modelled (moe_comm_sms 0), which the case says. Each value: the scenario's MoE settings, how
# the recipe dispatches, and whether it captures the router's and the dispatch preprocessing's
# kernels in CUDA graphs (cuda_graph_impl "transformer_engine", scope moe_router and
# moe_preprocess), which the simulator does not model (only whole-step graphs): those kernels are
# priced as launched one by one.
def _bridge_hybridep(gpu):
    """A GB200 or GB300 recipe's MoE settings: HybridEP with 32 SMs."""
    return ({"moe_dispatcher": "hybridep", "moe_comm_sms": 32, "moe_comm_overlap": False},
            "HybridEP, the flex dispatcher the base config selects on a %s "
            "(moe_flex_dispatcher_backend hybridep), with the 32 SMs "
            "scripts/performance/utils/overrides.py gives it (with a note to adjust them once it "
            "overlaps computation), the EP group inside one NVLink domain: each token sent once to "
            "each GPU holding one of its experts at the bandwidth Megatron-Core's GB200 guide "
            "measured for HybridEP (docs/moe.md#hybridep); the exchanges not overlapped "
            "(moe_a2a_overlap False)" % gpu, True)


BRIDGE_2511_MOE = {
    "qwen3_30b_a3b H100 FP8-CS": (
        {"moe_dispatcher": "alltoall", "moe_comm_overlap": True},
        "the all-to-all dispatcher, the expert-parallel exchanges overlapped with another "
        "micro-batch's compute (overlap_moe_expert_parallel_comm with delay_wgrad_compute)",
        False),
    "qwen3_30b_a3b B200 FP8-CS": (
        {"moe_dispatcher": "alltoall", "moe_comm_overlap": False},
        "the all-to-all dispatcher (the base config names no flex backend), the exchanges not "
        "overlapped (moe_a2a_overlap left at WorkloadBaseConfig's False)", True),
    "qwen3_30b_a3b GB200 FP8-MX": _bridge_hybridep("GB200"),
    "qwen3_30b_a3b GB300 FP8-CS": _bridge_hybridep("GB300"),
    # deepseek_v3_pretrain_config_b200: no flex backend (moe_flex_dispatcher_backend None), so
    # DeepSeekV3ModelProvider's moe_token_dispatcher_type "alltoall"; no CUDA graph settings
    "deepseek_v3 B200 FP8-CS": (
        {"moe_dispatcher": "alltoall", "moe_comm_overlap": False},
        "the all-to-all dispatcher (DeepSeekV3ModelProvider's; the base config names no flex "
        "backend), the exchanges not overlapped (moe_a2a_overlap False), the shared expert not "
        "overlapped with them either (the provider's moe_shared_expert_overlap True is not "
        "modelled: the shared expert's GEMMs run in turn with the exchanges)", False),
}
# What else a recipe sets that the table does not print (src/megatron/bridge/recipes/deepseek/
# deepseek_v3.py _deepseek_v3_common and scripts/performance/configs/deepseek, 00b7660b): the
# scenario's parallelism and training settings, and the assumption that says where they come
# from. These replace the generic "no activation recomputation" reading of the recipe.
BRIDGE_2511_RECIPE_EXTRA = {
    "deepseek_v3 B200 FP8-CS": (
        {"layers_per_stage": [4] + [4] * 14 + [1]},
        {"recompute": "none", "recompute_modules": ["mla_up_proj"],
         "optimizer_moments_dtype": "bf16"},
        "the recipe's pipeline layout for PP 16 (deepseek_v3.py layout_map[(16, 1)]: the "
        "embedding and 4 layers on the first stage, 4 on each of the next 14, 1 with the MTP "
        "module and the loss on the last); its one MTP module (mtp_num_layers 1, the table's "
        "'w/ MTP'); selective recomputation of the MLA up-projections only (recompute_"
        "granularity selective, recompute_modules ['mla_up_proj'] in DEEPSEEK_V3_PRETRAIN_CONFIG_"
        "B200_BASE_CONFIG: recompute none with recompute_modules mla_up_proj); Adam's moments "
        "in BF16 beside FP32 master weights (use_precision_aware_optimizer, exp_avg_dtype and "
        "exp_avg_sq_dtype bfloat16: optimizer_moments_dtype bf16)"),
}
# Recipes that replay the whole step from a CUDA graph (set_workload_base_configs ->
# _set_cuda_graph_overrides: model.cuda_graph_impl "local", cuda_graph_scope "full_iteration").
BRIDGE_2511_CUDA_GRAPHS = {"llama3_8b B200 FP8-CS", "llama3_8b GB200 FP8-CS",
                           "llama3_8b GB300 FP8-CS"}
# Recipes that count the input embedding and the loss as pipeline layers
# (src/megatron/bridge/recipes/llama/llama3.py llama31_405b_pretrain_config:
# account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split True).
BRIDGE_2511_PIPELINE_SPLIT = {"llama31_405b H100 FP8-CS", "llama31_405b B200 FP8-CS"}
# Recipes whose fp8_mx runs turn the overlapped parameter all-gather off
# (scripts/performance/configs/llama/llama31_llm_pretrain.py llama31_405b_pretrain_config_b200:
# "if precision == 'fp8_mx'" sets comm_overlap, ddp and optimizer overlap_param_gather False;
# llama3_8b_pretrain_config_b200 and _gb200 do not).
BRIDGE_2511_MX_SERIAL_PARAM_GATHER = {"llama31_405b B200 FP8-CS"}


# The same for the Megatron-Bridge recipe: userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192 in
# src/megatron/bridge/training/comm_overlap.py (00b7660b) overlaps both reduce-scatters by ring
# exchange with num_sm=1, set_sm_margin=True.
BRIDGE_2511_UB_SMS = {
    "llama3_70b H100 FP8-CS": ("userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192", 1, 1),
    "llama31_405b H100 FP8-CS": ("userbuffers_fp8_h100_h16384_tp8_cp2_mbs1_seqlen8192", 1, 1),
    "llama31_405b B200 FP8-CS": ("userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192", 1, 1),
}


def bridge_2511_config(run):
    for prefix, cfg in BRIDGE_2511_CONFIGS.items():
        if run["id"].startswith(prefix):
            return cfg
    return None


def bridge_2511_extra(bridge):
    """The recipe's extra (parallelism, training, assumption) for a Bridge config, or None."""
    return BRIDGE_2511_RECIPE_EXTRA.get(bridge[0]) if bridge else None


# The dtype of the data-parallel gradient reduction where a run's framework did not do what the
# simulator's default does (Megatron-LM's: FP32 for BF16 and FP8 training, FP16 for FP16):
#   Megatron-Bridge 00b7660b scripts/performance/configs/llama/llama3_llm_pretrain.py and
#     llama31_llm_pretrain.py (set_llama3_common_configs, set_llama31_common_configs):
#     cfg.ddp.grad_reduce_in_fp32 = False, so the gradient buffer takes the parameters' dtype,
#     BF16, also in the FP8 runs
#   NeMo-Framework-Launcher 24c3d6b nemotron/nemotron_340b.yaml: optim.grad_sync_dtype: bf16;
#     the other 24.07 configs set neither grad_sync_dtype nor dtype, and Apex
#     DistributedFusedAdam reduces in its dtype, FP32 by default
#   BLOOM (bigscience train/tr11-176B-ml): DeepSpeed's BF16_Optimizer with ZeRO stage 0 sums
#     gradients in FP32 and all-reduces them cast to communication_data_type, BF16
#     (deepspeed/runtime/engine.py allreduce_bucket, the BigScience branch 5ea1c60f8)
BRIDGE_2511_GRAD_DTYPE = ("bf16", "cfg.ddp.grad_reduce_in_fp32 = False in the Megatron-Bridge %s "
                          "performance configs" % BRIDGE_COMMIT)
NEMO_2407_GRAD_DTYPE = {"nemotron/nemotron_340b.yaml": "bf16"}
BLOOM_GRAD_DTYPE = ("bf16", "DeepSpeed BF16_Optimizer with ZeRO stage 0: FP32 accumulation, "
                    "all-reduce cast to BF16 (communication_data_type)")


def grad_dtype_for(run, nemo, bridge):
    """(dtype, reason) where the framework's own setting is known, else None (the default)."""
    if bridge:
        return BRIDGE_2511_GRAD_DTYPE
    if nemo:
        dtype = NEMO_2407_GRAD_DTYPE.get(nemo[0], "fp32")
        how = ("optim.grad_sync_dtype: %s" % dtype if nemo[0] in NEMO_2407_GRAD_DTYPE else
               "no optim.grad_sync_dtype: Apex DistributedFusedAdam reduces in its dtype, FP32")
        return dtype, "%s in the NeMo launcher config %s" % (how, nemo[0])
    if run["id"].startswith("bloom_"):
        return BLOOM_GRAD_DTYPE
    return None


# Megatron-LM before Megatron-Core (megatron/p2p_communication.py, 2021-2022): with
# scatter_gather_tensors_in_pipeline, on unless --no-scatter-gather-tensors-in-pipeline, and no
# sequence parallelism, each TP rank sends 1/tp of a pipeline message and the receiver
# all-gathers it over TP (Narayanan et al. SC'21 section 4.1). The runs of SC'21 (Megatron-LM
# 2021) and of Korthikanti et al. (2022) used it; Megatron-Core's p2p_communication.py sends the
# whole tensor.
SCATTER_GATHER_FAMILIES = ("sc21_t1_", "sc21_t2_ptdp_", "korthikanti_")
SCATTER_GATHER_REASON = ("Megatron-LM's pipeline scatter/gather (megatron/p2p_communication.py of "
                         "2021-2022, on by default; SC'21 section 4.1): without sequence "
                         "parallelism each TP rank sends 1/tp of a pipeline message and the "
                         "receiver all-gathers it over TP")


# DeepSpeed's default gradient bucket: reduce_bucket_size = 5e8 elements
# (deepspeed/runtime/zero/config.py, "Number of elements reduced/allreduced at a time"), 16-bit
# gradients. Used where a DeepSpeed run does not state its ZeRO configuration.
DEEPSPEED_REDUCE_BUCKET_ELEMENTS = 5e8
DEEPSPEED_GRAD_BYTES = 2


# Facts a source states in its text rather than in the fields validation/data/published_runs.json has columns
# for; each names where it is stated.
STATED_IN_TEXT = {
    # Korthikanti et al. section 6.3 (validation/data/published_runs.json notes of this row): "no overlap of
    # gradient all-reduce with backprop".
    "korthikanti_530B_dp8_2240gpu": {"training": {"overlap_grad_reduce": False}},
}


def zero_stage(text):
    if not text:
        return 0, "ZeRO/FSDP not stated: none assumed"
    t = text.lower()
    if "zero-3" in t or "zero stage 3" in t or "megatron fsdp" in t:
        return 3, None
    if "zero-2" in t or "zero stage 2" in t:
        return 2, None
    if "zero stage 1" in t or "zero-1" in t or "distributed optimizer" in t:
        return 1, None
    if "fsdp" in t and "optimizer states + gradients" in t:
        return 2, None
    return 0, None


def recompute(text):
    if not text:
        return "none", "activation recomputation not stated: none assumed"
    t = text.lower()
    if t.startswith("full"):
        return "full", None
    if t.startswith("selective") and "op-level" in t:
        # PyTorch's op-level selective checkpointing with torchtitan's policy.
        return "selective_op", None
    if t.startswith("selective"):
        return "selective", None
    if t.startswith("none"):
        return "none", None
    return "none", "activation recomputation '%s' not understood: none assumed" % text


def precision(run):
    p = (run.get("precision") or "").lower()
    if "fp8" in p:
        return "fp8", None
    if "bf16" in p:
        return "bf16", None
    if "fp16" in p or "16-bit" in p:
        # A100 mixed precision in Megatron-LM 2021 is FP16 (same 312 TFLOP/s dense peak as BF16).
        return "fp16", None
    return "bf16", "precision not stated: BF16 assumed"


def load_presets():
    presets = []
    for path in sorted(glob.glob(os.path.join(ROOT, "models", "presets", "*.json"))):
        with open(path) as f:
            p = json.load(f)
        presets.append(p)
    return presets


def family(rid):
    for key, hint in (("sc21", "sc21"), ("korthikanti", "korthikanti"), ("nemo", "nemo"),
                      ("megatron_readme_h100", "megatron-h100")):
        if rid.startswith(key):
            return hint
    return None


def match_model(run, presets):
    keys = [("num_layers", "num_layers"), ("hidden_size", "hidden_size"),
            ("num_attention_heads", "num_attention_heads"), ("num_kv_heads", "num_kv_heads"),
            ("ffn_hidden_size", "ffn_hidden_size"), ("vocab_size", "vocab_size")]
    found = []
    for p in presets:
        ok = True
        for rk, pk in keys:
            if run.get(rk) is None:
                if rk == "vocab_size":
                    continue
                ok = False
                break
            if p.get(pk, p.get("num_attention_heads") if pk == "num_kv_heads" else None) != run[rk]:
                ok = False
                break
        if ok and (run.get("seq_length") or 0) <= p.get("max_seq_len", 0):
            found.append(p["name"])
    if len(found) > 1:
        hint = family(run["id"])
        preferred = [n for n in found if hint and hint in n]
        if preferred:
            return preferred[0]
    return found[0] if found else None


def peak_of(run, fills):
    named = [f.peak_tflops for f in fills if f.peak_tflops]
    return named[-1] if named else run.get("peak_tflops_used_for_utilization")


def convention_of(run, fills):
    named = [f.convention for f in fills if f.convention]
    return named[-1] if named else convention_for(run)


def metric_for(run, conv, fills=()):
    if run.get("reported_step_time_s") is not None:
        return "step_time_s", run["reported_step_time_s"]
    if run.get("reported_tokens_per_sec_per_gpu") is not None:
        return "tokens_per_s_per_gpu", run["reported_tokens_per_sec_per_gpu"]
    if run.get("reported_tflops_per_gpu") is not None and conv:
        return "tflops_per_gpu", run["reported_tflops_per_gpu"]
    if run.get("reported_mfu") is not None and conv and peak_of(run, fills):
        return "mfu", run["reported_mfu"]
    return None, None


def cluster_for(run):
    for rx, name in CLUSTERS:
        if rx.search(run.get("gpu_type") or ""):
            return name
    return None


def preset_of(fills, what):
    """The model or cluster preset a completion rule names, or None."""
    named = [getattr(f, what) for f in fills if getattr(f, what)]
    return named[-1] if named else None


def moe_why_not(run, presets):
    """The reason a mixture-of-experts run cannot be expressed, or None."""
    bridge = bridge_2511_config(run)
    if not (bridge and bridge[0] in BRIDGE_2511_MOE):
        return ("mixture-of-experts run without a recipe this generator reads: the simulator "
                "models MoE layers (docs/moe.md), but how this run dispatched its tokens, "
                "overlapped its exchanges and recomputed its MoE layers is not taken from its "
                "recipe yet")
    model = match_model(run, presets)
    moe = next((p.get("moe") for p in presets if p["name"] == model), None)
    if not moe or run.get("ep") is None or (
            moe["num_experts"], moe["experts_per_token"],
            moe["expert_ffn_hidden_size"]) != (run.get("num_experts"),
                                               run.get("experts_per_token"),
                                               run.get("expert_ffn_hidden_size")):
        return ("no MoE model preset with this run's experts (%s, top-%s, expert FFN %s) and "
                "an expert-parallel size" % (run.get("num_experts"), run.get("experts_per_token"),
                                             run.get("expert_ffn_hidden_size")))
    return None


def why_not(run, presets, fills):
    """The reason a run cannot be expressed as a scenario, or None."""
    if not run.get("usable_for_validation"):
        return "marked not usable for validation in validation/data/published_runs.json: " + (run.get("notes") or "")
    reason = completion_rules.left_out(run)
    if reason:
        return reason
    if run.get("model_type") != "dense":
        reason = moe_why_not(run, presets)
        if reason:
            return reason
    if not (preset_of(fills, "cluster") or cluster_for(run)):
        return "no cluster preset for GPU type '%s'" % run.get("gpu_type")
    for k in ("tp", "pp", "dp"):
        if run.get(k) is None:
            return "parallel layout not published (%s is null; model-parallel size %s)" % (
                k, run.get("model_parallel_size"))
    if run.get("micro_batch_size") is None:
        return "micro-batch size not published; it sets the GEMM shapes and the pipeline bubble"
    chunks = run["pp"] * (run.get("virtual_pipeline_stages") or 1)
    bridge = bridge_2511_config(run)
    in_split = 2 if bridge and bridge[0] in BRIDGE_2511_PIPELINE_SPLIT else 0
    in_split += sum(1 for f in fills for k in ("account_for_embedding_in_pipeline_split",
                                                "account_for_loss_in_pipeline_split")
                    if f.parallelism.get(k))
    extra = bridge_2511_extra(bridge)
    uneven = (any("layers_per_stage" in f.parallelism for f in fills) or
              bool(extra and "layers_per_stage" in extra[0]))
    if run.get("num_layers") and not uneven and (run["num_layers"] + in_split) % chunks:
        return ("%d layers do not split evenly into pp x virtual stages = %d chunks, and the "
                "source does not say how they were split" % (run["num_layers"], chunks))
    if not (preset_of(fills, "model") or match_model(run, presets)):
        return "no model preset with this architecture (layers %s, hidden %s, heads %s/%s, ffn %s)" % (
            run.get("num_layers"), run.get("hidden_size"), run.get("num_attention_heads"),
            run.get("num_kv_heads"), run.get("ffn_hidden_size"))
    conv = convention_of(run, fills)
    metric, _ = metric_for(run, conv, fills)
    if not metric:
        return "no reported figure whose FLOP convention is known (flops_definition: %s)" % (
            run.get("flops_definition"))
    return None


def scenario_for(run, presets, fills):
    assumptions = []
    model = preset_of(fills, "model") or match_model(run, presets)
    cluster = preset_of(fills, "cluster") or cluster_for(run)
    cp = run.get("cp") or 1
    vpp = run.get("virtual_pipeline_stages") or 1
    if run.get("cp") is None:
        assumptions.append("context parallelism not stated: cp = 1")
    nemo = nemo_2407_config(run)
    sp = run.get("sequence_parallel")
    bucket_mib = None
    if sp is None and nemo:
        sp = nemo[1] and run["tp"] > 1
        assumptions.append("sequence parallelism %s, as the NeMo launcher config %s says "
                           "(NeMo-Framework-Launcher %s)" % ("on" if sp else "off", nemo[0],
                                                             NEMO_LAUNCHER_COMMIT))
    bridge = bridge_2511_config(run)
    if sp is None and bridge:
        sp = run["tp"] > 1
        assumptions.append("sequence parallelism %s: Megatron-Bridge performance recipes set it "
                           "when tp > 1 (scripts/performance/utils/utils.py, Megatron-Bridge %s)"
                           % ("on" if sp else "off", BRIDGE_COMMIT))
    elif sp is None:
        sp = False
        assumptions.append("sequence parallelism not stated: off")
    if run.get("zero_or_fsdp") is None and nemo:
        zs = 2
        bucket_mib = nemo[2]
        assumptions.append("distributed optimizer (Apex DistributedFusedAdam, ZeRO-2) with %d MiB "
                           "buckets, as the NeMo launcher config %s says" % (nemo[2], nemo[0]))
    else:
        zs, note = zero_stage(run.get("zero_or_fsdp"))
        if note:
            assumptions.append(note)
    if zs == 3 and "deepspeed" in (run.get("zero_or_fsdp") or "").lower():
        bucket_mib = DEEPSPEED_REDUCE_BUCKET_ELEMENTS * DEEPSPEED_GRAD_BYTES / 2**20
        assumptions.append("ZeRO configuration not stated: DeepSpeed's default reduce_bucket_size "
                           "(5e8 elements, %.0f MiB of 16-bit gradients) assumed" % bucket_mib)
        assumptions.append("DeepSpeed version not stated: ZeRO-3 as DeepSpeed shipped it from its "
                           "first release (v0.3.13, 2021-03-16) until v0.5.5, the only ZeRO-3 "
                           "there was when the paper appeared (arXiv v1 2021-04-09): one "
                           "all-gather per weight matrix into a zero-filled buffer after a "
                           "device-wide synchronize, PyTorch copying each rank's piece out, "
                           "weights re-gathered for the recompute forward, gradients flattened "
                           "and all-reduced (zero3_implementation deepspeed-2021)")
    tp_overlap = bool(nemo and nemo[3] and run["tp"] > 1 and sp)
    if tp_overlap:
        assumptions.append("TP communication overlap on (ub_tp_comm_overlap in the NeMo launcher "
                           "config %s)" % nemo[0])
    if bridge and bridge[1] and run["tp"] > 1 and sp:
        tp_overlap = True
        assumptions.append("TP communication overlap on (CommOverlapConfig(tp_comm_overlap=True) "
                           "in the %s recipe, Megatron-Bridge %s)" % (bridge[0], BRIDGE_COMMIT))
    recompute_layers = None
    rc, note = recompute(run.get("activation_recomputation"))
    if run.get("activation_recomputation") is None and bridge:
        if bridge[2]:
            rc, recompute_layers = "full", bridge[2]
            note = ("full recomputation of the first %d layers of each chunk (recompute_num_layers"
                    "=%d, method block, in the %s recipe, Megatron-Bridge %s)" % (
                        bridge[2], bridge[2], bridge[0], BRIDGE_COMMIT))
        else:
            note = ("no activation recomputation (none set in the %s recipe, Megatron-Bridge %s)"
                    % (bridge[0], BRIDGE_COMMIT))
    extra = bridge_2511_extra(bridge)
    if extra:
        note = None
    if note and nemo and run.get("activation_recomputation") is None:
        granularity = NEMO_2407_RECOMPUTE.get(nemo[0])
        if granularity:
            rc = granularity
            note = ("%s recomputation (activations_checkpoint_granularity: %s in the NeMo launcher "
                    "config %s)" % (granularity, granularity, nemo[0]))
        else:
            note = ("no activation recomputation (activations_checkpoint_granularity: null in the "
                    "NeMo launcher config %s)" % nemo[0])
    if note:
        assumptions.append(note)
    prec, note = precision(run)
    if note:
        assumptions.append(note)
    if run.get("gpu_type", "").startswith("A100"):
        attention = "unfused"
        assumptions.append("attention not stated: Megatron-LM's unfused path (batched GEMMs around "
                           "the fused scale-mask-softmax kernel) assumed; FlashAttention was "
                           "published in May 2022, after these runs, and selective recomputation "
                           "(Korthikanti et al.) exists because the score tensors are stored")
    elif "megatron" in (run.get("framework") or "").lower() or nemo or bridge:
        attention = "flash"
        assumptions.append("attention not stated: Transformer Engine's fused attention, "
                           "Megatron-Core's default, which selects cuDNN's kernel on Hopper "
                           "and later GPUs")
    elif (run.get("framework") or "").lower().startswith("torchtitan"):
        if prec == "fp8" and run["tp"] > 1:
            assumptions.append("torchtitan's FP8 tensor parallelism uses torchao's "
                               "Float8RowwiseParallel, which casts a row-parallel linear's "
                               "output gradient to FP8 (NoopFwToFloat8BwDynamic, applied after "
                               "the output's redistribute) before the backward's sequence-"
                               "parallel all-gather (torchao eab345c float8_tensor_parallel.py): "
                               "gradients gathered in FP8 (fp8_gradient_gather, the default)")
        attention = "flash2"
        assumptions.append("attention: PyTorch's scaled_dot_product_attention (torchtitan's "
                           "Llama), which runs FlashAttention-2 on Hopper while PyTorch's cuDNN "
                           "backend is opt-in (from 2.5.1; pytorch/pytorch issues 138649, "
                           "142132; docs/microbenchmarks.md#attention)")
    else:
        attention = "flash"
        assumptions.append("attention not stated: a fused attention kernel, modelled as the "
                           "simulator's fused attention (calibrated on cuDNN's on Hopper)")
    parallelism = {"dp": run["dp"], "tp": run["tp"], "pp": run["pp"], "cp": cp,
                   "sequence_parallel": bool(sp), "zero_stage": zs,
                   "schedule": "interleaved" if vpp > 1 else "1f1b"}
    if zs == 3 and "deepspeed" in (run.get("zero_or_fsdp") or "").lower():
        parallelism["zero3_implementation"] = "deepspeed-2021"
    if vpp > 1:
        parallelism["vpp"] = vpp
    if (run.get("ep") or 1) > 1:
        parallelism["ep"] = run["ep"]
    if bridge and bridge[0] in BRIDGE_2511_PIPELINE_SPLIT:
        parallelism["account_for_embedding_in_pipeline_split"] = True
        parallelism["account_for_loss_in_pipeline_split"] = True
        assumptions.append("the embedding and the loss count as one layer each in the pipeline "
                           "split (account_for_embedding/loss_in_pipeline_split in the %s recipe, "
                           "Megatron-Bridge %s): %d + 2 layers over %d virtual stages" % (
                               bridge[0], BRIDGE_COMMIT, run["num_layers"],
                               run["pp"] * vpp))
    scenario = {
        "name": run["id"],
        "description": "%s, %s; %s (%s). Generated by tools/gen_validation_suite.py from "
                       "validation/data/published_runs.json; assumptions: %s" % (
                           run["model"], run["source_table"], run["source"],
                           run.get("framework") or "framework not stated",
                           "; ".join(assumptions) if assumptions else "none"),
        "model": model,
        "cluster": cluster,
        "gpus": run["num_gpus"],
        "parallelism": parallelism,
        "training": {
            "global_batch": run["global_batch_size"],
            "micro_batch": run["micro_batch_size"],
            "seq_len": run["seq_length"],
            "precision": prec,
            "recompute": rc,
            "attention": attention,
        },
    }
    if bucket_mib:
        scenario["training"]["grad_bucket_MiB"] = bucket_mib
    if tp_overlap:
        scenario["training"]["tp_comm_overlap"] = True
        ub = (NEMO_2407_UB_SMS.get(nemo[0]) if nemo else
              BRIDGE_2511_UB_SMS.get(bridge[0]) if bridge else None)
        if nemo and nemo[0] in NEMO_2407_UB_DEFAULT:
            assumptions.append("no ub_cfg named in %s: Transformer Engine's userbuffers defaults "
                               "(set_sm_margin 0, the overlapped GEMMs keep every SM; TE v1.8 "
                               "initialize_ub)" % nemo[0])
        if ub:
            scenario["training"]["tp_comm_overlap_sms"] = {"proj_fprop": ub[1],
                                                           "fc2_fprop": ub[2]}
            assumptions.append("the reduce-scatters overlapped with the forward output projection "
                               "and second MLP linear take %d and %d SMs from those GEMMs "
                               "(num_sm with set_sm_margin in %s, %s)" % (
                                   ub[1], ub[2], ub[0],
                                   "NeMo-Framework-Launcher " + NEMO_LAUNCHER_COMMIT if nemo
                                   else "Megatron-Bridge " + BRIDGE_COMMIT))
    if recompute_layers:
        scenario["training"]["recompute_layers"] = recompute_layers
    if run["id"].startswith(ASYNC_TP_BACKWARD_PREFIXES) and parallelism.get("tp", 1) > 1:
        scenario["training"]["tp_async_backward"] = True
        assumptions.append("the backward's tensor-parallel collectives launched beside the "
                           "column-parallel GEMMs (tp_async_backward: %s)" % (
                               "Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication, "
                               "2022" if run["id"].startswith("korthikanti_") else
                               "Transformer Engine's Linear and LayerNormLinear"))
    if parallelism.get("schedule") == "interleaved" and (
            (nemo and nemo[0] in NEMO_2407_OVERLAP_P2P) or bridge):
        scenario["training"]["overlap_p2p_comm"] = True
        assumptions.append("each pipeline receive posted when the pass before it ends "
                           "(overlap_p2p_comm: %s)" % (
                               "overlap_p2p_comm: True in NeMo-Framework-Launcher %s %s" % (
                                   NEMO_LAUNCHER_COMMIT, nemo[0]) if nemo else
                               "Megatron-Bridge %s CommOverlapConfig with vp > 1" % BRIDGE_COMMIT))
    if (run["id"].startswith(UNFUSED_CROSS_ENTROPY_PREFIXES) or
            (nemo and nemo[0] in NEMO_2407_UNFUSED_CROSS_ENTROPY)):
        scenario["training"]["cross_entropy"] = "unfused"
        assumptions.append("Megatron-LM's unfused vocab-parallel cross entropy over FP32 logits "
                           "(cross_entropy unfused: %s)" % (
                               "cross_entropy_loss_fusion not set in the NeMo launcher config "
                               + nemo[0] if nemo else
                               "Megatron-Core's default cross_entropy_loss_fusion False, not set "
                               "by the example script" if run["id"].startswith("megatron_readme")
                               else "output.float() and _VocabParallelCrossEntropy, as Megatron-LM "
                               "of the time ran it"))
    if prec == "fp8" and "fp8-cs" in (run.get("precision") or "").lower():
        # Megatron-Bridge's FP8-CS: Transformer Engine's Float8CurrentScaling recipe.
        scenario["training"]["fp8_recipe"] = "current"
        assumptions.append("FP8-CS: Transformer Engine's current scaling (fp8_recipe current: an "
                           "amax pass and a scale kernel before each cast, TE 2.9 "
                           "Float8CurrentScalingQuantizer)")
        if bridge:
            scenario["training"]["fp8_param_gather"] = True
            assumptions.append("FP8 parameters, gathered in FP8 (fp8_param_gather: "
                               "bf16_with_fp8_current_scaling_mixed sets fp8_param_gather = True, "
                               "src/megatron/bridge/training/mixed_precision.py, Megatron-Bridge "
                               "%s)" % BRIDGE_COMMIT)
    if prec == "fp8" and "fp8-mx" in (run.get("precision") or "").lower() and bridge:
        # Megatron-Bridge's FP8-MX: bf16_with_mxfp8_mixed on the FP8-CS row's base config.
        scenario["training"]["fp8_recipe"] = "mxfp8"
        scenario["training"]["fp8_param_gather"] = True
        assumptions.append("FP8-MX: Transformer Engine's MXFP8 block scaling (fp8_recipe mxfp8) "
                           "with MXFP8 parameters, all-gathered in BF16 through the gradient "
                           "buffer and quantized after (fp8_param_gather: bf16_with_mxfp8_mixed "
                           "sets fp8_param_gather and reuse_grad_buf_for_mxfp8_param_ag, "
                           "src/megatron/bridge/training/mixed_precision.py, Megatron-Bridge %s); "
                           "the run's base config is the %s recipe's (%s)" % (
                               BRIDGE_COMMIT, bridge[0],
                               "its own FP8_MX_BASE_CONFIG, scripts/performance/configs/qwen"
                               if bridge[0].endswith("FP8-MX") else
                               "its FP8_MX_BASE_CONFIG is the FP8_CS_BASE_CONFIG in "
                               "scripts/performance/configs/" + bridge[0].split("_")[0].rstrip(
                                   "0123456789")))
        if bridge[0] in BRIDGE_2511_MX_SERIAL_PARAM_GATHER:
            scenario["training"]["overlap_param_gather"] = False
            assumptions.append("parameter all-gather after the optimizer, not overlapped "
                               "(overlap_param_gather false: the %s recipe function turns it off "
                               "for fp8_mx, 'keeping this eanbled causes NaN grad norm', "
                               "scripts/performance/configs/llama/llama31_llm_pretrain.py, "
                               "Megatron-Bridge %s)" % (bridge[0], BRIDGE_COMMIT))
    if bridge and bridge[0] in BRIDGE_2511_CUDA_GRAPHS:
        scenario["training"]["cuda_graphs"] = "full_iteration"
        assumptions.append("the whole step replayed from a CUDA graph (cuda_graphs "
                           "full_iteration: cuda_graph_impl \"local\", cuda_graph_scope "
                           "\"full_iteration\" in the %s recipe, Megatron-Bridge %s)" % (
                               bridge[0], BRIDGE_COMMIT))
    moe = BRIDGE_2511_MOE.get(bridge[0]) if bridge else None
    if moe:
        settings, dispatch, router_graphs = moe
        scenario["training"].update(settings)
        assumptions.append("MoE as the %s recipe sets it (Megatron-Bridge %s): %s, tokens "
                           "force-balanced over the experts (moe_router_force_load_balancing: "
                           "routing imbalance 1), grouped GEMMs as Transformer Engine 2.9 runs "
                           "them, one per local expert (moe_expert_gemm per_expert); not "
                           "modelled: the SMs the exchanges hold (none taken)%s" % (
                               bridge[0], BRIDGE_COMMIT, dispatch,
                               ", and the CUDA graphs of the router and the dispatch "
                               "preprocessing (cuda_graph_scope moe_router, moe_preprocess: their "
                               "kernels priced as launched one by one)" if router_graphs else ""))
    if extra:
        scenario["parallelism"].update(extra[0])
        scenario["training"].update(extra[1])
        assumptions.append("as the %s recipe sets it (Megatron-Bridge %s): %s" % (
            bridge[0], BRIDGE_COMMIT, extra[2]))
    if nemo and nemo[0] in NEMO_2407_OPTIM_DTYPE:
        scenario["training"]["optimizer_state_dtype"] = NEMO_2407_OPTIM_DTYPE[nemo[0]]
        assumptions.append("Adam state in %s (optim.dtype in the NeMo launcher config %s: Apex "
                           "DistributedFusedAdam keeps its parameter copy, m and v in it)" % (
                               NEMO_2407_OPTIM_DTYPE[nemo[0]], nemo[0]))
    if (nemo and not nemo[4]) or bridge:
        scenario["training"]["dropout"] = False
        assumptions.append("no dropout (hidden_dropout = attention_dropout = 0.0 in %s)" % (
            "the NeMo launcher config " + nemo[0] if nemo else
            "Megatron-Bridge %s %s" % (BRIDGE_COMMIT, bridge[3])))
    for prefixes, mode, why in GRAD_ACCUMULATION:
        if run["id"].startswith(prefixes):
            scenario["training"]["grad_accumulation"] = mode
            assumptions.append("micro-batch gradients accumulated by %s (grad_accumulation %s)" % (
                why, mode))
    grad = grad_dtype_for(run, nemo, bridge)
    if grad:
        scenario.setdefault("comm", {})["grad_dtype"] = grad[0]
        assumptions.append("gradients reduced in %s (%s)" % (grad[0].upper(), grad[1]))
    for f in fills:
        scenario["parallelism"].update(f.parallelism)
        scenario["training"].update(f.training)
        if f.comm:
            scenario.setdefault("comm", {}).update(f.comm)
    par = scenario["parallelism"]
    if (run["id"].startswith(SCATTER_GATHER_FAMILIES) and par.get("tp", 1) > 1 and
            par.get("pp", 1) > 1 and not par.get("sequence_parallel", False)):
        par["pipeline_scatter_gather"] = True
        assumptions.append(SCATTER_GATHER_REASON)
    for section, values in STATED_IN_TEXT.get(run["id"], {}).items():
        scenario[section].update(values)
        assumptions.append("stated in the source's text: " + ", ".join(
            "%s = %s" % (k, json.dumps(v)) for k, v in values.items()))
    return scenario, assumptions


# Families of cases, for the report's per-family figures: the id up to its first '_', except
# where two sources share that prefix.
FAMILIES = (("megatron_bridge_", "megatron_bridge"), ("megatron_readme_h100_", "megatron_h100"))
# A step time or tokens/s needs no FLOP convention; suite.json still names one.
UNUSED_CONVENTION = "megatron_core"


def family_of(rid):
    for prefix, name in FAMILIES:
        if rid.startswith(prefix):
            return name
    return rid.split("_")[0]


def rule_notes(fills):
    """Each completion rule's notes, the first naming the rule and its source."""
    notes = []
    for f in fills:
        for i, note in enumerate(f.notes):
            notes.append("rule %s (%s): %s" % (f.rule.name, f.rule.source, note) if i == 0
                         else note)
    return notes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="?",
                    default=os.path.join(ROOT, "validation", "data", "published_runs.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "validation", "suites", "published-runs"))
    args = ap.parse_args()
    with open(args.runs) as f:
        runs = json.load(f)
    presets = load_presets()
    os.makedirs(args.out, exist_ok=True)
    for old in glob.glob(os.path.join(args.out, "*.json")):
        os.remove(old)
    cases, skipped = [], []
    for run in runs:
        run, fills = completion_rules.complete(run)
        reason = why_not(run, presets, fills)
        if reason:
            skipped.append({"id": run["id"], "source": run["source"], "reason": reason})
            continue
        scenario, assumptions = scenario_for(run, presets, fills)
        completion_notes = rule_notes(fills)
        if completion_notes:
            assumptions[:0] = completion_notes
            scenario["description"] = scenario["description"].replace(
                "assumptions: ", "assumptions: " + "; ".join(completion_notes) + "; ", 1)
        conv = convention_of(run, fills)
        metric, reported = metric_for(run, conv, fills)
        name = run["id"] + ".scenario.json"
        with open(os.path.join(args.out, name), "w") as f:
            json.dump(scenario, f, indent=2)
            f.write("\n")
        completing = [f.rule.name for f in fills if f.completes()]
        case = {"id": run["id"], "family": family_of(run["id"]), "source": run["source"],
                "source_table": run["source_table"], "scenario": name, "metric": metric,
                "reported": reported, "flop_convention": conv or UNUSED_CONVENTION,
                "completion": "rule" if completing else "specified",
                "assumptions": assumptions}
        if completing:
            case["completion_rules"] = completing
        if metric == "mfu":
            case["peak_tflops"] = peak_of(run, fills)
        # Other figures the source gives, for the report (never used by the simulation).
        others = {k: run[k] for k in ("reported_tflops_per_gpu", "reported_mfu", "reported_hfu",
                                      "reported_step_time_s", "reported_tokens_per_sec_per_gpu")
                  if run.get(k) is not None}
        case["also_reported"] = others
        # Peak memory per GPU the source reports (torchtitan's tables: the caching allocator's
        # peak reserved, the largest over GPUs), which `validate` sets beside the memory model's.
        memory = (run.get("reported_other") or {}).get("memory_GiB")
        if memory:
            case["reported_memory_GiB"] = memory
        cases.append(case)
    guide_cases, guide_left_out = megatron_core_guide.cases(ROOT, args.out)
    cases += guide_cases
    skipped += guide_left_out
    suite = {
        "name": "published-runs",
        "description": "Published training runs (Megatron-LM SC'21, Korthikanti et al., NeMo 24.07 "
                       "and Megatron-Bridge 25.11 performance tables, the rest of "
                       "validation/data/published_runs.json, and Megatron-Core's DeepSeek-V3 "
                       "GB200 guide) as scenarios; `clustersim validate` compares the "
                       "simulated figure with the reported one in the source's FLOP convention.",
        "generated_by": "tools/gen_validation_suite.py",
        "reference": "validation/data/published_runs.json (%d runs; docs/published-runs.md)" % len(runs),
        "threshold_pct": 10,
        "cases": cases,
        "not_expressible": skipped,
    }
    with open(os.path.join(args.out, "suite.json"), "w") as f:
        json.dump(suite, f, indent=2)
        f.write("\n")
    print("%d cases, %d not expressible -> %s" % (len(cases), len(skipped), args.out))


if __name__ == "__main__":
    sys.exit(main())
