"""Megatron-Core's DeepSeek-V3 GB200 guide as published-runs cases.

The guide (validation/data/megatron_core_deepseek_v3_gb200.json) measures one layout on 256 GB200
through thirteen software states, from 494 to 970 TFLOP/s per GPU, and publishes the launch
script of the last one only (its reproduction guide). That row is a case: every setting below is
read from the script. The other twelve are earlier states of the same layout whose flags and
kernels are not published (the baseline's permute kernel, by the authors' account, ran ten
times longer than the fused one the simulator prices), so they are listed as not expressible.
"""

import json
import os

DATA = os.path.join("validation", "data", "megatron_core_deepseek_v3_gb200.json")
CASE_ID = "megatron_core_guide_deepseekv3_gb200_mxfp8_256gpu"
FAMILY = "megatron_core_guide"

# Megatron-Core's FLOP count of the script's model (megatron/training/training.py
# num_floating_point_operations at effebd81, the same as core_v0.14's): the suite's
# megatron_core_v014 convention (validation/suite.hpp).
CONVENTION = "megatron_core_v014"

# The script's pipeline layout "Et|(tt|)*30L": 32 virtual stages (PP 8 x 4), the first the
# embedding and one layer, thirty of two layers, the last the loss alone.
LAYOUT = [1] + [2] * 30 + [0]

# The reproduction guide: "Every 32 GB200 GPUs (8 nodes) are in the same NVL domain (or rack)",
# with Slurm's --segment 8. A domain of 32 GPUs is all it asks for; whether two segments share
# a rack is not published, so the cluster's NVLink domain (clustersim's node) is 32 GPUs.
DOMAIN_GPUS = 32

ASSUMPTIONS = [
    "the reproduction guide's launch script (Megatron-LM effebd81, Transformer Engine 2.9 with "
    "the authors' patches, HybridEP): TP 1, PP 8 with the layout Et|(tt|)*30L (32 virtual "
    "stages: the embedding and 1 layer, 30 of 2 layers, the loss alone), EP 32, expert TP 1, "
    "micro-batch 1, global batch 2048, sequence 4096, the distributed optimizer (ZeRO-1) with "
    "overlapped gradient reduce and parameter gather, MXFP8 with FP8 parameters (fp8_param_gather), "
    "BF16 Adam moments, FP32 main gradients reduced in FP32 (no --grad-reduce-in-bf16), no "
    "multi-token prediction (the script passes no --mtp-num-layers); --sequence-parallel has "
    "no effect at TP 1",
    "the reported TFLOP/s are Megatron-Core's count (num_floating_point_operations of "
    "effebd81: MLA, MoE and logit terms, half the causal score matrix), the suite's "
    "megatron_core_v014 convention: 249.8 GFLOP per token for this model, so 970.01 TFLOP/s "
    "per GPU is a step of 8.44 s",
    "every 32 GPUs in one NVLink domain, as the reproduction guide requires (Slurm --segment 8): "
    "the GB200 NVL72 preset with NVLink domains of 32 GPUs, so each EP group lies in one "
    "domain and the data-parallel and pipeline traffic crosses the InfiniBand rails; whether "
    "two segments shared a rack is not published",
    "HybridEP as the script runs it (--moe-token-dispatcher-type flex "
    "--moe-flex-dispatcher-backend hybridep --moe-hybridep-num-sms 32): each token sent once "
    "to each GPU holding one of its experts, in BF16, at the algorithm bandwidth the same "
    "guide measured for HybridEP with 32 SMs on GB200 NVL36 (section 2.5's figure: dispatch "
    "714.66, combine 657.72 GB/s), the exchanges not overlapped; the SMs it holds are not "
    "taken; its own buffers are not counted in memory",
    "partial CUDA graphs (--cuda-graph-modules attn moe_router moe_preprocess: attention, "
    "router, dispatch preprocessing and shared expert replayed from graphs) not modelled: every "
    "kernel is issued one by one at the host cost per kernel; the routed experts, which stay "
    "eager behind the MoE layer's device-to-host read of the token counts, are where the "
    "authors still see host overhead",
    "recomputation as the script sets it (--recompute-modules moe_act mlp): the routed "
    "experts' activation and the whole MLP of the three dense layers recomputed in the "
    "backward (Megatron-Core applies mlp to dense layers only)",
    "tokens force-balanced over the experts (--moe-router-force-load-balancing): routing "
    "imbalance 1; grouped GEMMs one per local expert (8 per GPU), as Transformer Engine 2.9 "
    "runs them on Blackwell",
    "the interleaved schedule's send and receive overlapped with compute (Megatron-LM's "
    "default, --overlap-p2p-communication unless --no-overlap-p2p-communication)",
    "the process bound to its GPU's NUMA node (bindpcie) is not modelled: the host's time per "
    "kernel is the calibration's",
]


def _load(root, rel):
    with open(os.path.join(root, rel)) as f:
        return json.load(f)


def _model(root):
    model = _load(root, os.path.join("models", "presets", "deepseek-v3.json"))
    model["name"] = "deepseek-v3-no-mtp"
    model["mtp_layers"] = 0
    model["source"] += ("; without its multi-token prediction module, as Megatron-Core's "
                        "DeepSeek-V3 GB200 launch script trains it (no --mtp-num-layers)")
    return model


def _cluster(root):
    cluster = _load(root, os.path.join("topologies", "clusters", "gb200-nvl72-128x72-rail.json"))
    cluster["name"] = "gb200-nvl72-segments-of-32"
    cluster["nodes"] = 8
    cluster["gpus_per_node"] = DOMAIN_GPUS
    cluster["nics_per_node"] = DOMAIN_GPUS
    cluster["description"] = (
        "The gb200-nvl72-128x72-rail preset as Megatron-Core's DeepSeek-V3 GB200 reproduction "
        "guide schedules it: 256 GB200 in segments of 8 compute trays (32 GPUs), each segment in "
        "one NVLink domain; one 400 Gb/s rail per GPU.")
    cluster["sources"]["gpus_per_node"] = (
        "NVIDIA/Megatron-LM deepseek-v3-gb200-reproduce-guide.md 'Cluster Configuration': every "
        "32 GB200 GPUs (8 nodes) in the same NVL domain, Slurm --segment 8 "
        "(docs/published-runs.md#megatron-cores-deepseek-v3-gb200-guide)")
    cluster["sources"]["nodes"] = "256 GPUs in segments of 32 (the same guide)"
    return cluster


def _scenario(root, data):
    lay = data["layout"]
    dp = lay["gpus"] // (lay["tp"] * lay["pp"] * lay["cp"])
    return {
        "name": CASE_ID,
        "description": ("DeepSeek-V3 (no MTP) on 256 GB200, MXFP8, the final row of Megatron-Core's "
                        "GB200 optimization guide (%s); generated by tools/gen_validation_suite.py "
                        "from %s; assumptions: %s" % (data["source"], DATA, "; ".join(ASSUMPTIONS))),
        "model": _model(root),
        "cluster": _cluster(root),
        "gpus": lay["gpus"],
        "parallelism": {
            "dp": dp, "tp": lay["tp"], "pp": lay["pp"], "cp": lay["cp"],
            "vpp": len(LAYOUT) // lay["pp"],
            "sequence_parallel": False, "zero_stage": 1, "schedule": "interleaved",
            "ep": lay["ep"], "etp": lay["etp"], "layers_per_stage": LAYOUT,
        },
        "training": {
            "global_batch": lay["global_batch"], "micro_batch": lay["micro_batch"],
            "seq_len": lay["seq_len"], "precision": "fp8", "fp8_recipe": "mxfp8",
            "fp8_param_gather": True, "recompute": "none", "recompute_modules": ["moe_act", "mlp"],
            "attention": "flash", "moe_dispatcher": "hybridep", "moe_comm_sms": 32,
            "moe_comm_overlap": False,
            "optimizer_moments_dtype": "bf16", "overlap_p2p_comm": True, "dropout": False,
        },
        "comm": {"grad_dtype": "fp32"},
    }


def cases(root, out_dir):
    """Writes the final row's scenario into out_dir; returns (cases, not expressible)."""
    data = _load(root, DATA)
    # The guide: "a total of 32 stages" over PP 8, and DeepSeek-V3's 61 layers.
    assert len(LAYOUT) == 32 and len(LAYOUT) % data["layout"]["pp"] == 0 and sum(LAYOUT) == 61
    done, left_out = [], []
    for index, row in enumerate(data["rows"]):
        if not row.get("launch_script"):
            left_out.append({
                "id": "megatron_core_guide_deepseekv3_gb200_step%02d" % index,
                "source": data["source"],
                "reason": ("the guide's step '%s' (%.2f TFLOP/s per GPU, %s dispatcher): the "
                           "same layout in an earlier software state whose launch flags are not "
                           "published (only the last row's script is), with kernels the "
                           "simulator does not price as they ran then (unfused permutes and "
                           "scaling-factor allocations, a 72-kernel router)"
                           % (row["step"], row["tflops_per_gpu"], row["dispatcher"]))})
            continue
        name = CASE_ID + ".scenario.json"
        with open(os.path.join(out_dir, name), "w") as f:
            json.dump(_scenario(root, data), f, indent=2)
            f.write("\n")
        done.append({
            "id": CASE_ID, "family": FAMILY, "source": data["source"],
            "source_table": data["source_table"], "scenario": name,
            "metric": "tflops_per_gpu", "reported": row["tflops_per_gpu"],
            "flop_convention": CONVENTION, "completion": "specified",
            "assumptions": list(ASSUMPTIONS),
            "also_reported": {"reported_tflops_per_gpu": row["tflops_per_gpu"]},
        })
    return done, left_out
