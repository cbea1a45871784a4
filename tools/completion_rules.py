"""Named rules that complete a published run with what its source leaves out.

A publication rarely prints every field a scenario needs: the micro-batch size, the parallel
layout, the virtual pipeline stages, how the layers are split. Each rule here fills such fields
for one family of runs, from a source named with the rule (the launch script or the defaults of
the framework version the publication used, or the publication's own text), and says so in the
case's assumptions. A rule is applied to every row of its family alike, and no rule reads a
reported figure: the rules were fixed before any of their cases was first simulated, except
BRIDGE_2511_LLAMA3_8B_RECIPE, written afterwards to read one case as another rule reads the same
recipe commit (its comment gives the case's error before and after), and the float8 scaling
setting of TORCHTITAN_9DEC370_DEFAULTS, changed from the delayed recipe to the current one at the
thirty-second revision to match torchtitan's default dynamic scaling (validation/REPORT.md gives
every run's error before and after).

A case completed by a rule (a model, layout, batch or metric field filled in) is marked
"completion": "rule" in suite.json; `clustersim validate` reports its MAPE apart from that of
the fully specified cases. Rules may also set framework settings (overlap, buckets) that a
scenario needs; those alone do not make a case "rule".

Used by tools/gen_validation_suite.py.
"""

# Fields of a published-run record that describe the model, the layout, the batch or the
# hardware; a rule that fills one of them completes the run.
COMPLETION_FIELDS = ("num_layers", "hidden_size", "num_attention_heads", "num_kv_heads",
                     "ffn_hidden_size", "tp", "pp", "dp", "cp", "virtual_pipeline_stages",
                     "micro_batch_size", "global_batch_size", "seq_length", "zero_or_fsdp",
                     "gpu_type")


class Fill:
    """What one rule adds to one run."""

    def __init__(self, rule):
        self.rule = rule
        self.run = {}           # published-run fields (read by the generator as if published)
        self.parallelism = {}   # scenario keys
        self.training = {}
        self.comm = {}
        self.model = None       # model preset name
        self.cluster = None     # cluster preset name
        self.convention = None  # FLOP convention of the reported figure
        self.peak_tflops = None  # peak behind a reported MFU
        self.completes_split = False  # the pipeline's layer split
        self.notes = []

    def completes(self):
        return (any(k in COMPLETION_FIELDS for k in self.run) or self.completes_split or
                self.peak_tflops is not None)


class Rule:
    def __init__(self, name, source, prefix, fill):
        self.name, self.source, self.prefix, self._fill = name, source, prefix, fill

    def applies(self, run):
        return run["id"].startswith(self.prefix)

    def fill(self, run):
        f = Fill(self)
        self._fill(run, f)
        return f


# ---- SC'21 Table 2 (PTD-P rows): only the model-parallel size is printed ---------------------

# The paper's Takeaway #1 (section 3.3): "tensor model parallelism should generally be used up to
# degree g when using g-GPU servers, and then pipeline model parallelism can be used to scale up
# to larger models across servers"; its Table 1 uses t = 8 for every model from 18.4B up
# (529.6B: t = 8, p = 35 = 280 / 8). Megatron-LM of the paper's time all-reduced the
# data-parallel gradients after the whole forward-backward pass (megatron/training.py
# train_step, "model_module.allreduce_gradients()" after forward_backward_func, NVIDIA/Megatron-LM
# a8d172b3 of 2021-04-28).
MEGATRON_2021_COMMIT = "a8d172b3"


def _sc21_t2_layout(run, f):
    if run.get("tp") is not None or run.get("pp") is not None or not run.get("model_parallel_size"):
        return
    g = run.get("gpus_per_node") or 8
    mps = run["model_parallel_size"]
    if mps % g:
        return
    f.run.update(tp=g, pp=mps // g)
    f.training["overlap_grad_reduce"] = False
    f.notes.append("layout not published, only the model-parallel size %d: t = %d (the GPUs of a "
                   "server) and p = %d, by the paper's Takeaway #1 (section 3.3) and as its Table 1 "
                   "does for every model from 18.4B up; schedule not stated: Megatron-LM's default "
                   "non-interleaved 1F1B" % (mps, g, mps // g))
    f.notes.append("gradients all-reduced after the backward pass, not overlapped with it "
                   "(Megatron-LM %s megatron/training.py train_step)" % MEGATRON_2021_COMMIT)


# ---- NeMo 24.07: the Nemotron-8B architecture -------------------------------------------------

# validation/data/published_runs.json leaves it null ("ambiguous which 8B config"); the launcher has one,
# nemotron/nemotron_8b.yaml at NeMo-Framework-Launcher 24c3d6b (the last commit before the
# table's 2024-09-09 revision).
NEMO_LAUNCHER_COMMIT = "24c3d6b"
NEMOTRON_8B_ARCH = {"num_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
                    "num_kv_heads": 32, "ffn_hidden_size": 16384}


def _nemotron_8b_arch(run, f):
    if any(run.get(k) is not None for k in NEMOTRON_8B_ARCH):
        return
    f.run.update(NEMOTRON_8B_ARCH)
    f.notes.append("architecture not in the table: %s from the NeMo launcher config "
                   "nemotron/nemotron_8b.yaml (NeMo-Framework-Launcher %s)" % (
                       ", ".join("%s %d" % (k, v) for k, v in NEMOTRON_8B_ARCH.items()),
                       NEMO_LAUNCHER_COMMIT))


# ---- SC'21 Table 1: the authors' own script ---------------------------------------------------

# NVIDIA/Megatron-LM examples/sc21/run_table_1.sh (added in de7dc40f, 2021-08-10, "scripts for
# sc21"; its README: "scripts that were used to produce the results in the Megatron paper", to be
# run at commit 6985e589), per model size: MICRO_BATCH_SIZE, --num-layers-per-virtual-pipeline-
# stage and DDP implementation. CONFIG.sh passes --fp16 and the script --activations-checkpoint-
# method uniform (full recomputation) to every size. Keyed by (layers, hidden size); its TP, PP
# and global batch equal the table's.
SC21_T1_SCRIPT = {
    # (layers, hidden): (micro-batch, layers per virtual stage or None, DDP implementation)
    (24, 2304): (16, None, "torch"),
    (30, 3072): (16, None, "torch"),
    (36, 4096): (16, None, "torch"),
    (40, 6144): (8, None, "torch"),
    (48, 8192): (4, None, "local"),
    (60, 10240): (2, 5, "local"),
    (80, 12288): (2, 5, "local"),
    (96, 16384): (1, 3, "local"),
    (105, 20480): (1, 1, "local"),
    (128, 25600): (1, None, "local"),
}
# PyTorch DistributedDataParallel's default bucket_cap_mb (torch/nn/parallel/distributed.py).
TORCH_DDP_BUCKET_MIB = 25


def _sc21_t1_script(run, f):
    mbs, per_vstage, ddp = SC21_T1_SCRIPT[(run["num_layers"], run["hidden_size"])]
    f.run["micro_batch_size"] = mbs
    vpp = run["num_layers"] // (run["pp"] * per_vstage) if per_vstage else None
    if vpp and vpp > 1:
        f.run["virtual_pipeline_stages"] = vpp
    f.notes.append(
        "micro-batch size not in the table: %d, and %s, from the authors' script for this model "
        "(NVIDIA/Megatron-LM examples/sc21/run_table_1.sh, de7dc40f)" % (
            mbs, "%d layers per virtual stage (--num-layers-per-virtual-pipeline-stage %d: %d "
                 "virtual stages per rank, interleaved 1F1B)" % (per_vstage, per_vstage, vpp)
            if vpp and vpp > 1 else "no virtual stages (non-interleaved 1F1B)"))
    if ddp == "torch":
        f.training["overlap_grad_reduce"] = True
        f.training["grad_bucket_MiB"] = TORCH_DDP_BUCKET_MIB
        f.notes.append("--DDP-impl torch in the script: PyTorch DistributedDataParallel overlaps "
                       "the gradient all-reduce with the backward pass in its default 25 MiB "
                       "buckets")
    else:
        f.training["overlap_grad_reduce"] = False
        f.notes.append("--DDP-impl local in the script: Megatron-LM's own DDP all-reduces the "
                       "gradients after the backward pass (megatron/training.py train_step)")
    f.notes.append("Megatron-LM 2021's scatter/gather of the activations sent between pipeline "
                   "stages (on by default) is not modelled: each tensor-parallel rank sends the "
                   "whole activation")


# ---- Megatron-LM README H100 tables (Megatron-Core r0.8.0) -----------------------------------

# The README's "Training Speed and Scalability" (NVIDIA/Megatron-LM f2e5db402c, 2024-07-15) names
# --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap; megatron/training/arguments.py of
# that commit requires the distributed optimizer for --overlap-param-gather and sequence
# parallelism for --tp-comm-overlap. The rest is the GPT-3 example of the same commit,
# examples/gpt3/train_gpt3_175b_distributed.sh: --micro-batch-size 1, --fp16, no virtual stages,
# no recomputation, dropout at Megatron-LM's default. No --tp-comm-overlap-cfg: Transformer
# Engine's userbuffers defaults (set_sm_margin off: the overlapped GEMMs keep every SM).
MEGATRON_H100_COMMIT = "f2e5db402c"
MEGATRON_H100_PRESETS = {  # (layers, hidden): model preset (the README's model table)
    (24, 2048): "gpt-1.7b-megatron-h100", (30, 4096): "gpt-7.1b-megatron-h100",
    (32, 6144): "gpt-16b-megatron-h100", (48, 7168): "gpt-32b-megatron-h100",
    (84, 8192): "gpt-70b-megatron-h100", (92, 10240): "gpt-119b-megatron-h100",
    (96, 12288): "gpt-177b-megatron-h100", (96, 16384): "gpt-314b-megatron-h100",
    (112, 18432): "gpt-462b-megatron-h100",
}
# Megatron-Core r0.8.0 DistributedDataParallel: bucket_size = max(40,000,000, 1,000,000 x dp)
# elements when none is given (megatron/core/distributed/distributed_data_parallel.py), of
# 16-bit gradients (grad_reduce_in_fp32 follows --accumulate-allreduce-grads-in-fp32, off).
MCORE_BUCKET_MIN_ELEMENTS = 40e6
MCORE_BUCKET_ELEMENTS_PER_DP_RANK = 1e6
# The strong-scaling rows report MFU without its peak; the weak-scaling table of the same README
# gives TFLOP/s and MFU, whose ratio (408.8 / 41% ... 459.9 / 47%) is 979-997 TFLOP/s: the H100
# SXM dense BF16 peak, 989.4, within the rounding of the MFU percentages.
H100_SXM_BF16_PEAK_TFLOPS = 989.4
# The strong-scaling text names the model ("the standard GPT-3 model ... slightly more than 175
# billion parameters due to larger vocabulary size") but not its layout; the same README's
# weak-scaling table runs that model (177B) at TP 8, PP 6.
MEGATRON_H100_STRONG_LAYOUT = (8, 6)


def _megatron_h100_strong(run, f):
    tp, pp = MEGATRON_H100_STRONG_LAYOUT
    f.run.update(tp=tp, pp=pp, dp=run["num_gpus"] // (tp * pp), model_parallel_size=tp * pp)
    f.peak_tflops = H100_SXM_BF16_PEAK_TFLOPS
    f.notes.append("layout not published for the strong-scaling runs: TP %d x PP %d, as the same "
                   "README's weak-scaling table runs this model (177B), DP %d" % (
                       tp, pp, run["num_gpus"] // (tp * pp)))
    f.notes.append("MFU's peak not stated: 989.4 TFLOP/s (H100 SXM dense BF16), the ratio of "
                   "TFLOP/s to MFU in the same README's weak-scaling table (979-997) within "
                   "rounding")


def _megatron_h100_example(run, f):
    f.model = MEGATRON_H100_PRESETS[(run["num_layers"], run["hidden_size"])]
    tp = run.get("tp") or f.run.get("tp")
    dp = run.get("dp") or f.run.get("dp")
    f.run.update(micro_batch_size=1, cp=1, sequence_parallel=tp > 1,
                 precision="fp16 (--fp16 in the GPT-3 example)",
                 activation_recomputation="none (the GPT-3 example sets none)",
                 zero_or_fsdp="distributed optimizer (required by --overlap-param-gather)")
    bucket = max(MCORE_BUCKET_MIN_ELEMENTS, MCORE_BUCKET_ELEMENTS_PER_DP_RANK * dp)
    f.training.update(overlap_grad_reduce=True, overlap_param_gather=True,
                      grad_bucket_MiB=bucket * 2 / 2**20)
    if tp > 1:
        f.training["tp_comm_overlap"] = True
    f.notes.append(
        "micro-batch size, precision, recomputation and virtual stages not in the README: "
        "micro-batch 1, --fp16, no recomputation, no virtual stages (non-interleaved 1F1B), as "
        "the GPT-3 example of the same commit (NVIDIA/Megatron-LM %s "
        "examples/gpt3/train_gpt3_175b_distributed.sh); cp = 1" % MEGATRON_H100_COMMIT)
    f.notes.append(
        "the README's --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap: "
        "distributed optimizer (ZeRO-1), which --overlap-param-gather requires, %s; gradient "
        "buckets of %.0f M elements, Megatron-Core r0.8.0's default max(40 M, 1 M x dp)" % (
            "sequence parallelism (which --tp-comm-overlap requires) with Transformer Engine's "
            "default userbuffers (no ub config: the overlapped GEMMs keep every SM)" if tp > 1
            else "no tensor parallelism to overlap", bucket / 1e6))
    f.notes.append("the README's model table gives no FFN size or KV heads: 4h and multi-head "
                   "attention, Megatron-LM's defaults (the preset's sources)")


# ---- Llama 3 Table 4: Meta's own framework, described in the paper's text ---------------------

# Llama Team, 'The Llama 3 Herd of Models' (arXiv:2407.21783) section 3.3.2: "we reduce one
# Transformer layer each from the first and the last stages ... the first model chunk on the
# first stage has only the embedding, and the last model chunk on the last stage has only output
# projection and loss calculation", with an interleaved schedule of V stages per rank. A first
# chunk left with only the embedding after one layer was taken from it held one layer: one
# layer per virtual stage, (126 + 2) / 16 = 8 virtual stages per rank, the embedding and the loss
# counted in the split (Megatron-Core's account_for_embedding/loss_in_pipeline_split do the
# same). The micro-batch size is not given: one sequence, the smallest; the interleaved schedule
# the paper uses is Narayanan et al.'s, whose own scripts run every model from 310B up with
# micro-batch 1 (Megatron-LM examples/sc21/run_table_1.sh).
LLAMA3_LAYERS_PER_VIRTUAL_STAGE = 1


def _llama3_t4_text(run, f):
    f.model = "llama31-405b"
    f.cluster = "h100-2048x8-roce-llama3"
    f.convention = "megatron_core"
    vpp = (run["num_layers"] + 2) // (run["pp"] * LLAMA3_LAYERS_PER_VIRTUAL_STAGE)
    f.run.update(micro_batch_size=1, virtual_pipeline_stages=vpp, sequence_parallel=True)
    f.parallelism.update(account_for_embedding_in_pipeline_split=True,
                         account_for_loss_in_pipeline_split=True)
    f.comm["grad_dtype"] = "fp32"
    f.training["dropout"] = False
    if (run.get("cp") or 1) > 1:
        f.parallelism["cp_implementation"] = "all_gather"
    f.completes_split = True
    f.notes.append(
        "virtual stages not in Table 4: one Transformer layer per virtual stage, %d per rank "
        "with the embedding and the loss counted as layers (section 3.3.2: after one layer is "
        "taken from the first and the last stage, their first and last chunks hold only the "
        "embedding and only the output and loss)" % vpp)
    f.notes.append("micro-batch size not stated: 1 sequence, the smallest (the interleaved "
                   "schedule the paper cites, Narayanan et al. 2021, runs every model from 310B "
                   "up with micro-batch 1 in its own scripts)")
    f.notes.append("sequence parallelism on: the paper's tensor parallelism cites Korthikanti et "
                   "al. 2023, which introduces it; its tunable-N pipeline schedule is modelled as "
                   "Megatron-LM's interleaved 1F1B (N = pp: up to 2(pp - 1) + (v - 1)pp + 1 "
                   "one-layer chunks in flight on the first rank; the paper does not give its N, "
                   "which sets how many it held)")
    f.notes.append("stated in section 3.3.2: gradients reduce-scattered in FP32; context "
                   "parallelism all-gathers K and V (cp_implementation all_gather, run as "
                   "Transformer Engine's AttnFuncWithCPAndKVAllGather, which cites that section: "
                   "K and V gathered again for the backward); Llama has no dropout")
    f.notes.append("Table 4's TFLOPs follow PaLM's MFU (6N + 12LHQT per token, the paper cites "
                   "Chowdhery et al.); compared in Megatron-Core's count, which is the same but "
                   "for the input embedding's 6Vh (0.5% of the 405B's FLOPs per token)")
    f.notes.append("Meta's Llama 3.1 405B configuration (128,256-token vocabulary; Table 3 gives "
                   "128,000 rounded) on the paper's RoCE cluster (preset h100-2048x8-roce-llama3: "
                   "cross-pod traffic optimistic, NCCLX not modelled)")


# ---- BLOOM 176B: the run's own slurm script and README ----------------------------------------

# bigscience-workshop/bigscience train/tr11-176B-ml: tr11-176B-ml.slurm as it ran on 48 nodes
# until July 2022 (ed196cd, 2022-06-19; the epoch ended at the logged iteration 85376 on June 28)
# and README.md "Replica setup". MICRO_BATCH_SIZE=2 ("was MBS=1 till GBS=784"; the logged
# iteration runs GBS 2048), --pp-partition-method 'type:transformer|embedding' (DeepSpeed's
# PipelineModule balances the 70 Transformer layers and the two tied embedding layers: 72 over
# 12 stages, the first and the last holding 5 Transformer layers), --pad-vocab-size-to 250880,
# --position-embedding-type alibi, no dropout arguments (Megatron-DeepSpeed's defaults).
BLOOM_SCRIPT_COMMIT = "ed196cd"


def _bloom_script(run, f):
    f.model = "bloom-176b"
    f.cluster = "jean-zay-a100-80gb-opa"
    f.convention = "megatron_core"
    f.run["micro_batch_size"] = 2
    f.parallelism.update(account_for_embedding_in_pipeline_split=True,
                         account_for_loss_in_pipeline_split=True)
    f.completes_split = True
    f.notes.append("micro-batch size not in the log line: 2, as the run's slurm script "
                   "(bigscience train/tr11-176B-ml/tr11-176B-ml.slurm, %s) and README 'Replica "
                   "setup' give it for GBS 2048 (MBS 1 only until GBS 784)" % BLOOM_SCRIPT_COMMIT)
    f.notes.append("--pp-partition-method 'type:transformer|embedding': the tied input and output "
                   "embeddings count as layers in the pipeline split, 70 + 2 over 12 stages")
    f.notes.append("ALiBi adds a bias to the attention scores and no parameters; the embedding "
                   "LayerNorm (2 x 14336 parameters) is not modelled; dropout at Megatron-"
                   "DeepSpeed's default (the script sets none); the 4 x 100 Gb/s Omni-Path links "
                   "per node are modelled as InfiniBand-like NICs (preset jean-zay-a100-80gb-opa)")


# ---- torchtitan (arXiv:2410.06511; the repository's docs/performance.md tables) ----------------

# pytorch/torchtitan docs/performance.md (d4c86e375, 2025-01-30) names the version it measured:
# torchtitan 9dec370. What its tables leave out is that version's default: train_configs/
# llama3_*.toml seq_len 8192; torchtitan/parallelisms/pipeline_llama.py: microbatches =
# pipeline_parallel_degree, split points from pipelining_utils.generate_split_points (126 layers
# over 8 stages: 15, 16 x 6, 15).
TORCHTITAN_COMMIT = "9dec370"
TORCHTITAN_SEQ_LEN = 8192
# Llama 3.1's context window (its config.json max_position_embeddings), the presets' max_seq_len.
LLAMA31_CONTEXT = 131072


def torchtitan_split(layers, stages):
    """torchtitan 9dec370 generate_split_points as layers per stage: the first stage gets
    layers // stages, the middle ones one more while the remainder lasts, the last the rest."""
    base, extra = divmod(layers, stages)
    out = [base]
    for _ in range(stages - 2):
        out.append(base + (1 if extra > 0 else 0))
        extra -= 1 if extra > 0 else 0
    out.append(layers - sum(out))
    return out


def _torchtitan_defaults(run, f):
    _torchtitan_fill(run, f, TORCHTITAN_COMMIT, "foreach", "not optimizer.fused (false by "
                     "default)", [], TORCHTITAN_HARDWARE)


def _torchtitan_fill(run, f, commit, optimizer, optimizer_why, approximations, hardware,
                     float8_scaling=None, float8_gather=None):
    """The defaults of torchtitan `commit` for a run of its Llama 3.1 on `hardware` (a note),
    with AdamW's `optimizer` kernels (`optimizer_why` says why), the rule's own `approximations`
    beside the common ones, and where a Float8 run's scaling and FSDP float8 all-gather come from
    when not from `commit`'s own defaults and configs."""
    size = run["model"].split()[-1].lower()  # "Llama 3.1 8B" -> "8b"
    f.model = "llama31-" + size
    f.cluster = "grand-teton-h100-hbm2e"
    f.convention = "megatron_core"
    if run.get("seq_length") is None:
        f.run["seq_length"] = TORCHTITAN_SEQ_LEN
        f.notes.append("sequence length not in the table: %d, the train_configs/llama3_%s.toml "
                       "default (torchtitan %s)" % (TORCHTITAN_SEQ_LEN, size, commit))
    local = run["global_batch_size"] // run["dp"]
    if run["pp"] > 1:
        # generate_split_points: two stages per rank for a multi-stage schedule (Interleaved1F1B),
        # placed round-robin over the ranks (stage_ids_this_rank style "loop"), which is the
        # scenario format's virtual-stage order.
        schedule = ((run.get("reported_other") or {}).get("pipeline_schedule") or "").lower()
        per_rank = 2 if "interleaved" in schedule else 1
        if per_rank > 1:
            f.run["virtual_pipeline_stages"] = per_rank
        f.run["micro_batch_size"] = local // run["pp"]
        split = torchtitan_split(run["num_layers"], run["pp"] * per_rank)
        f.parallelism["layers_per_stage"] = split
        f.completes_split = True
        f.notes.append("pipeline micro-batches and split not in the table: %d micro-batches of %d "
                       "(pipeline_parallel_microbatches defaults to the pipeline degree) and "
                       "layers per %s %s (generate_split_points%s), torchtitan %s defaults" % (
                           run["pp"], local // run["pp"],
                           "virtual stage" if per_rank > 1 else "stage", "/".join(map(str, split)),
                           ", two stages per rank for Interleaved1F1B, placed round-robin"
                           if per_rank > 1 else "", commit))
    f.comm["grad_dtype"] = "fp32"
    f.parallelism["zero3_implementation"] = "fsdp2"
    f.training["dropout"] = False
    f.training["repeat_kv"] = True
    f.training["optimizer_kernels"] = optimizer
    if run["cp"] > 1:
        f.parallelism["cp_implementation"] = "torch"
    if (run.get("seq_length") or 0) > LLAMA31_CONTEXT:
        f.notes.append("sequence of %d tokens, longer than Llama 3.1's %d-token context (the "
                       "preset's max_seq_len): torchtitan %s sets the model's max_seq_len to the "
                       "training sequence length (train.py), so the run is the same model on "
                       "longer sequences; each rank's attention covers %d query tokens, inside "
                       "the measured attention curves" % (
                           run["seq_length"], LLAMA31_CONTEXT, commit,
                           run["seq_length"] // run["cp"]))
    async_tp = "AsyncTP" in (run.get("reported_other") or {}).get("techniques", "")
    if async_tp:
        f.training["tp_comm_overlap"] = True
        f.training["tp_comm_overlap_implementation"] = "torch"
        f.notes.append("async TP: PyTorch's micro-pipelined TP (tp_comm_overlap_implementation "
                       "torch): torch.compile's micro_pipeline_tp pass fuses each sequence-"
                       "parallel all-gather with the matmuls that take it as first operand and a "
                       "reduce-scatter with the one matmul whose output it reduces; the "
                       "backward's reduce-scatters of the attention's and the MLP's input "
                       "gradients, sums over torchtitan's separate wq/wk/wv and w1/w3, run alone")
    f.notes.append("torchtitan %s: FSDP2 (ZeRO-3, one all-gather per layer, prefetched, each "
                   "copied out into the parameters and each reduce-scatter's gradients copied "
                   "in on the compute stream: zero3_implementation fsdp2; with pipeline "
                   "parallelism reshard_after_forward off and PyTorch's pipeline stage keep the "
                   "parameters gathered and the gradients unsharded to the step's last backward, "
                   "then reduce-scatter them all), "
                   "gradients reduce-scattered in FP32 (mixed_precision_reduce); Llama has no "
                   "dropout; K/V repeated to the query heads before attention (repeat_kv in "
                   "torchtitan/models/llama/model.py); AdamW with %s = %s and "
                   "clip_grad_norm_ with foreach=True "
                   "(build_optimizers, train.py: optimizer_kernels %s)%s" % (
                       commit, optimizer, optimizer_why, optimizer,
                       "; PyTorch's context_parallel with its default all-gather rotation "
                       "(cp_implementation torch: K/V gathered again for the backward, FP32 "
                       "merges and dK/dV ring)" if run["cp"] > 1 else ""))
    compiled = "torch.compile" in (run.get("reported_other") or {}).get("techniques", "")
    f.training["kernel_fusion"] = "compiled_blocks" if compiled else "eager"
    f.notes.append("%s (kernel_fusion %s)" % (
        "torch.compile of each TransformerBlock (apply_compile), the final norm and the loss "
        "left eager" if compiled else
        "no torch.compile (train_configs compile = false): PyTorch's eager kernels of the "
        "Llama code, RMSNorm in FP32, RoPE through complex FP32, SiLU and the product apart",
        f.training["kernel_fusion"]))
    float8 = "Float8" in (run.get("reported_other") or {}).get("techniques", "")
    if float8:
        # torchtitan 9dec370's float8 scaling is dynamic for the input, the weight and the output
        # gradient by default (config_manager.py --float8.scaling_type_*: "dynamic"), and
        # torchao's dynamic scaling takes each tensor's amax before its cast
        # (torchao/float8/float8_scaling_utils.py hp_tensor_to_float8_dynamic: tensor_to_scale,
        # then hp_tensor_and_scale_to_float8): current scaling, which fp8_recipe "current" prices
        # (an amax pass over the tensor, small scale kernels, the cast). Changed at the
        # thirty-second revision, after these runs had been simulated with the delayed recipe.
        f.training["fp8_recipe"] = "current"
        f.notes.append(float8_scaling or
                       "torchao Float8 with dynamic tensorwise scaling, torchtitan %s's default "
                       "for input, weight and output gradient (--float8.scaling_type_* "
                       "\"dynamic\"): each tensor's amax taken before its cast "
                       "(hp_tensor_to_float8_dynamic), priced as current scaling (fp8_recipe "
                       "current)" % commit)
        f.training["fp8_param_gather"] = True
        f.notes.append(float8_gather or
                       "FSDP2's float8 all-gather (fp8_param_gather: enable_fsdp_float8_all_gather "
                       "and precompute_float8_dynamic_scale_for_fsdp, set in torchtitan %s's "
                       "train_configs/llama3_405b.toml and in torchtitan's docs/float8.md "
                       "launch command)" % commit)
    approximations = [
        "torchao's casts under torch.compile priced as Transformer Engine's current scaling "
        "kernels (an amax pass, two small scale kernels and a cast-transpose per tensor)"
        if float8 else "",
        "the SMs async TP's transfers take (none)" if async_tp else "",
        "context parallelism's torch.cat of partly updated steps, and its exchanges' overlap "
        "with the ring steps (taken as exposed)" if run["cp"] > 1 else ""] + approximations
    approximations = [a for a in approximations if a]
    if approximations:
        f.notes.append("not modelled, nearest setting used: " + "; ".join(approximations))
    f.notes.append(hardware)


TORCHTITAN_HARDWARE = ("H100 with 96 GB HBM2e at a 500 W power limit: peak between the NVL and "
                       "SXM parts, exact value unknown to the authors; the midpoint of the two "
                       "and the Hopper kernel efficiencies are used, with the part's own fitted "
                       "system parameters (preset h100-hbm2e-96gb-500w)")


# ---- torchao's float8 training benchmarks (pytorch/ao torchao/float8/README.md) ---------------

# pytorch/ao 8c81863ba (2025-03-12) added two torchtitan runs of Llama 3 8B to torchao's float8
# README: 8 H100, batch 1, sequence 8192, torch.compile, FSDP2, per-op SAC, "torchtitan version
# 0.0.2", launched by benchmarks/float8/training/float8_training_benchmark.sh of the same commit:
# train_configs/llama3_8b.toml with --training.compile, and for tensorwise
# --model.converters float8 --float8.enable_fsdp_float8_all_gather
# --float8.precompute_float8_dynamic_scale_for_fsdp --float8.force_recompute_fp8_weight_in_bwd.
# torchtitan 0.0.2 names no commit; the defaults are those of torchtitan's main on the day
# (0da8901b, the last commit before 2025-03-12): seq_len 8192, selective_ac_option "op",
# --optimizer.implementation "fused", Float8LinearConfig's dynamic tensorwise scaling. The README
# does not say which H100s: the machines of torchtitan's own tables (Meta's Grand Teton, 96 GB
# HBM2e at 500 W, pytorch/torchtitan docs/performance.md), run by the same team two months
# earlier, are assumed. Written before either run was simulated.
TORCHAO_TORCHTITAN_COMMIT = "0da8901b"


def _torchao_float8_readme(run, f):
    f.run["gpu_type"] = "H100 SXM (96 GB HBM2e, 2.4 TB/s, 500 W power limit), Meta Grand Teton"
    _torchtitan_fill(
        run, f, TORCHAO_TORCHTITAN_COMMIT, "fused",
        "the default of --optimizer.implementation", [
            "force_recompute_fp8_weight_in_bwd (the FP8 weights re-cast for the backward, not "
            "saved: the float8 all-gather's weights are gathered again anyway)"
            if "Float8" in (run.get("reported_other") or {}).get("techniques", "") else ""],
        "H100 not named in torchao's README: the Grand Teton H100 of torchtitan's own tables "
        "(96 GB HBM2e, 500 W power limit) is assumed, as run by the same team two months "
        "earlier; " + TORCHTITAN_HARDWARE,
        float8_scaling="torchao Float8 with dynamic tensorwise scaling (no --float8.recipe_name: "
        "Float8LinearConfig's default, torchtitan %s components/float8.py): each tensor's amax "
        "taken before its cast, priced as current scaling (fp8_recipe current)"
        % TORCHAO_TORCHTITAN_COMMIT,
        float8_gather="FSDP2's float8 all-gather (fp8_param_gather: "
        "--float8.enable_fsdp_float8_all_gather and "
        "--float8.precompute_float8_dynamic_scale_for_fsdp, set by torchao's benchmark script)")


# ---- Megatron-Bridge 25.11, Qwen3-30B-A3B on 16 H100 ------------------------------------------

# The table prints VP 24 and MBS 2, the layout of the 25.09 performance matrix (Megatron-Bridge
# cac49dc). The recipe of the commit that published the 25.11 table (00b7660b,
# scripts/performance/configs/qwen/qwen3_workload_base_configs.py) has virtual pipeline 12 and no
# micro-batch size, so Megatron-Bridge's default 1 (the MBS 2 override was removed in cb62f8620);
# the 26.02 table re-ran that recipe as MBS 1, VP 12. The recipe is what ran, so it is used: the
# printed layout would also need more memory than an 80 GB H100 has (check: 74.9 GiB per GPU
# against 70.0 usable), which a published run cannot.
BRIDGE_COMMIT = "00b7660b"


def _bridge_qwen3_recipe(run, f):
    f.run["micro_batch_size"] = 1
    f.run["virtual_pipeline_stages"] = 12
    f.notes.append("micro-batch 1 and 12 virtual stages from the qwen3_30b_a3b recipe of the "
                   "commit that published the table (Megatron-Bridge %s: VP 12, micro-batch "
                   "unset, default 1; re-run as MBS 1 / VP 12 in the 26.02 table), not the "
                   "table's MBS 2 / VP 24 (the 25.09 layout), which needs 74.9 GiB per GPU "
                   "against the 70.0 usable of an 80 GB H100" % BRIDGE_COMMIT)


# ---- Megatron-Bridge 25.11, Llama 3 8B on 8 H100 -----------------------------------------------

# The table prints FSDP 1, as its 25.09 row did (the 25.09 table of Megatron-Bridge's
# performance summary at fa0315ae2: the same columns, 14,079 tokens/s against 14,451). The commit that changed the Qwen3-30B-A3B H100 recipe to the layout the
# 25.11 row ran (cb62f8620, 2025-11-21; BRIDGE_2511_QWEN3_RECIPE above) changed this recipe in the
# same edit: LLAMA3_8B_H100_FP8_CS_BASE_CONFIG went from use_megatron_fsdp=True to
# context_parallel_size=1, recompute_num_layers=5, which the v0.2.0 release (2025-11-26) and the
# commit that published the table (00b7660b) keep; no recipe version has both. The same reading
# as the Qwen3 rule's follows: the recipe is what ran, and the table's FSDP column repeats the
# 25.09 layout. So Megatron-Core's distributed optimizer (the llama3 recipe's
# DistributedDataParallelConfig(use_distributed_optimizer=True), ZeRO-1) with the recipe's five
# recomputed layers, which fits once the FP8 parameters are counted (fp8_param_gather, 64 GiB of
# 70 usable). Added at the thirty-first revision, after the case had been simulated as FSDP with
# five recomputed layers (-17.3 % cross-validated; -16.1 % with this rule): it removes a
# combination of settings no recipe had, and it makes the two rules read the table alike.


def _bridge_llama3_8b_recipe(run, f):
    f.run["zero_or_fsdp"] = "distributed optimizer (ZeRO-1)"
    f.notes.append("the distributed optimizer (ZeRO-1) of the llama3_8b H100 FP8-CS recipe of the "
                   "commit that published the table (Megatron-Bridge %s, as in the v0.2.0 "
                   "release), not the table's FSDP 1, the 25.09 layout: the recipe replaced "
                   "use_megatron_fsdp=True by recompute_num_layers=5 in cb62f8620, the edit that "
                   "also gave the Qwen3-30B-A3B row its layout" % BRIDGE_COMMIT)


# ---- Megatron-Bridge 25.11 on GB300: the recipes' micro-batch ---------------------------------

# The 25.11 table prints micro-batch 2 for Llama 3 8B and 4 for Qwen3-30B-A3B on 8 GB300, the
# GB200 rows' sizes. Every version of the GB300 performance configs, from the commit that added
# them (bf75c658c, 2025-11-06: LLAMA3_8B_GB300_8GPUS_FP8_CS_PARALLEL_CONFIG and
# QWEN3_30B_A3B_GB300_8GPUS_FP8_CS_PARALLEL_CONFIG) to the one that published the table
# (00b7660b: LLAMA3_8B_ and QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_CS_BASE_CONFIG, whose FP8_MX
# configs are the same objects), sets 4 and 8; the 25.09 table has no GB300 rows. As for the
# H100 rules above, the recipe is what ran: no version of it has the printed size.
BRIDGE_GB300_RECIPE_MBS = {
    # run id prefix: (base config, configs directory, recipe's micro-batch, table's)
    "megatron_bridge_2511_llama3_8b_gb300_": (
        "LLAMA3_8B_PRETRAIN_CONFIG_GB300_FP8_CS_BASE_CONFIG", "llama", 4, 2),
    "megatron_bridge_2511_qwen3_30b_a3b_gb300_": (
        "QWEN3_30B_A3B_PRETRAIN_CONFIG_GB300_FP8_CS_BASE_CONFIG", "qwen", 8, 4),
}


def _bridge_gb300_recipe_mbs(run, f):
    cfg, where, mbs, printed = next(v for p, v in BRIDGE_GB300_RECIPE_MBS.items()
                                    if run["id"].startswith(p))
    f.run["micro_batch_size"] = mbs
    f.notes.append("micro-batch %d from %s (Megatron-Bridge %s scripts/performance/configs/%s), "
                   "not the table's %d: every version of the GB300 configs, from the commit that "
                   "added them (bf75c658c), sets %d" % (mbs, cfg, BRIDGE_COMMIT, where, printed,
                                                        mbs))


# ---- NeMo Megatron 22.08 on DGX A100: the launcher config of the table's commit --------------

# NVIDIA/NeMo-Framework-Launcher 3579cdb3 (2022-09-07), README section 7.1.2, gives nodes and
# tokens per second only. The training configs of that commit, conf/training/gpt3/{5b,175b}.yaml,
# give the rest; conf/config.yaml runs them in bignlp-training:22.08-py3, whose changelog entry
# "NeMo Megatron 22.08" adds "Distributed Adam Optimizer for GPT-3": NeMo 1.11 (v1.11.0,
# 2022-09-08) on Apex's DistributedFusedAdam (NVIDIA/apex 6f7d8ac3, 2022-08-25). From them:
#   layout and batch        5b.yaml: TP 1, PP 1, MBS 2, GBS 2048; 175b.yaml: TP 8, PP 8, MBS 2,
#                           GBS 2048, no virtual stages; sequence 2048; precision bf16 with
#                           megatron_amp_O2 (FP32 master weights and main gradients)
#   recomputation           5b: granularity full, method block, 0 layers: NeMo 1.11's
#                           ParallelTransformer checkpoints layer l only while l < 0, so none;
#                           175b: selective (core attention)
#   sequence parallelism    5b: false; 175b: true
#   optimizer               distributed_fused_adam: ZeRO-2 with Apex's defaults, bucket_cap_mb
#                           100 (1024 x 1024 x 100 bytes per bucket), grad_sync_dtype = dtype
#                           (FP32); step() runs Adam bucket by bucket and all-gathers each
#                           bucket's parameters inside it, so the gather is not overlapped with
#                           the next forward
#   gradient overlap        MegatronGPTModel.configure_optimizers sets overlap_grad_sync False
#                           when pipeline_model_parallel_size > 1 or sequence_parallel: the
#                           175B reduces its gradients after the pipeline; the 5B overlaps them
#                           with the last micro-batch's backward (no_sync(greedy_grad_copy))
#   cross entropy           fp16_lm_cross_entropy False: vocab_parallel_cross_entropy over
#                           output.float() (nemo/.../megatron/gpt_model.py)
#   TP backward             Apex's LinearWithGradAccumulationAndAsyncCommunication launches the
#                           sequence-parallel all-gather and reduce-scatter beside the GEMMs
# The 5B config's comment reads "MBS=2, TPS=2, AGB=8 for 80GB nodes" and the README's Figure 1
# caption says the 5B "uses tensor parallelism of 2", while the config's own value is 1; the
# value the launcher passes is used.
NEMO_2208_COMMIT = "3579cdb3"
NEMO_2208_CONFIGS = {
    # prefix: (config, model preset, tp, pp, micro-batch, sequence parallel, recomputation)
    "nemo2208_gpt3-5b_": ("gpt3/5b.yaml", "gpt3-5b-nemo", 1, 1, 2, False, "none"),
    "nemo2208_gpt3-175b_": ("gpt3/175b.yaml", "gpt3-175b-nemo", 8, 8, 2, True, "selective"),
}
NEMO_2208_GLOBAL_BATCH = 2048
APEX_DISTRIBUTED_ADAM_BUCKET_MIB = 100


def _nemo_2208_launcher(run, f):
    cfg = next(c for p, c in NEMO_2208_CONFIGS.items() if run["id"].startswith(p))
    name, model, tp, pp, mbs, sp, rc = cfg
    f.model = model
    f.cluster = "dgx-a100-sc21"
    dp = run["num_gpus"] // (tp * pp)
    f.run.update(tp=tp, pp=pp, dp=dp, cp=1, micro_batch_size=mbs,
                 virtual_pipeline_stages=1, global_batch_size=NEMO_2208_GLOBAL_BATCH,
                 sequence_parallel=sp, precision="bf16 (megatron_amp_O2)",
                 activation_recomputation=rc + " (launcher config)",
                 zero_or_fsdp="ZeRO-2 (Apex DistributedFusedAdam)")
    overlap = pp == 1 and not sp
    f.training.update(grad_bucket_MiB=APEX_DISTRIBUTED_ADAM_BUCKET_MIB,
                      overlap_grad_reduce=overlap, overlap_param_gather=False,
                      cross_entropy="unfused")
    if tp > 1:
        f.training["tp_async_backward"] = True
    f.comm["grad_dtype"] = "fp32"
    f.notes.append(
        "layout, batch, precision and recomputation not in the table: TP %d, PP %d, DP %d, "
        "micro-batch %d, global batch %d, BF16 (megatron_amp_O2), sequence parallelism %s, "
        "%s, from conf/training/%s (NeMo-Framework-Launcher %s)%s" % (
            tp, pp, dp, mbs, NEMO_2208_GLOBAL_BATCH,
            "on" if sp else "off",
            "selective recomputation" if rc == "selective" else
            "no recomputation (granularity full with 0 block layers)", name, NEMO_2208_COMMIT,
            "; its comment and the README's Figure 1 caption say TP 2, the config's value 1 "
            "is used" if tp == 1 else ""))
    f.notes.append(
        "distributed_fused_adam (NeMo 1.11, Apex 6f7d8ac3 DistributedFusedAdam): ZeRO-2, 100 MiB "
        "buckets, gradients reduce-scattered in FP32, parameters all-gathered inside the "
        "optimizer step (overlap_param_gather false); gradient reduction %s" % (
            "overlapped with the last micro-batch's backward" if overlap else
            "after the pipeline (overlap_grad_sync set False with pipeline or sequence "
            "parallelism, MegatronGPTModel.configure_optimizers)"))
    f.notes.append("NeMo 1.11 of the time: vocab-parallel cross entropy over FP32 logits, "
                   "unfused attention around Apex's fused softmax, dropout 0.1%s" % (
                       ", Apex's asynchronous TP collectives in the backward" if tp > 1 else ""))


# Rules, in the order they are applied.
RULES = [
    Rule("SC21_T2_TAKEAWAY1",
         "Narayanan et al. SC'21 section 3.3 Takeaway #1 and Table 1; Megatron-LM " +
         MEGATRON_2021_COMMIT, "sc21_t2_ptdp_", _sc21_t2_layout),
    Rule("SC21_T1_SCRIPT", "NVIDIA/Megatron-LM examples/sc21/run_table_1.sh and CONFIG.sh (de7dc40f)",
         "sc21_t1_", _sc21_t1_script),
    Rule("NEMO_2407_LAUNCHER_ARCH",
         "NeMo-Framework-Launcher %s nemotron/nemotron_8b.yaml" % NEMO_LAUNCHER_COMMIT,
         "nemo2407_nemotron-8b_", _nemotron_8b_arch),
    Rule("MEGATRON_H100_STRONG_LAYOUT",
         "NVIDIA/Megatron-LM %s README weak-scaling table (177B row)" % MEGATRON_H100_COMMIT,
         "megatron_readme_h100_strong_", _megatron_h100_strong),
    Rule("MEGATRON_H100_EXAMPLE",
         "NVIDIA/Megatron-LM %s README and examples/gpt3/train_gpt3_175b_distributed.sh" %
         MEGATRON_H100_COMMIT, "megatron_readme_h100_", _megatron_h100_example),
    Rule("LLAMA3_T4_TEXT", "Llama 3 paper (arXiv:2407.21783) section 3.3.2",
         "llama3_405b_t4_", _llama3_t4_text),
    Rule("BLOOM_TR11_SCRIPT",
         "bigscience train/tr11-176B-ml slurm script and README (%s)" % BLOOM_SCRIPT_COMMIT,
         "bloom_176b_", _bloom_script),
    Rule("TORCHTITAN_9DEC370_DEFAULTS",
         "pytorch/torchtitan %s train_configs and parallelisms defaults" % TORCHTITAN_COMMIT,
         "torchtitan_", _torchtitan_defaults),
    Rule("TORCHAO_FLOAT8_README",
         "pytorch/ao 8c81863ba benchmarks/float8/training/float8_training_benchmark.sh and "
         "pytorch/torchtitan %s defaults" % TORCHAO_TORCHTITAN_COMMIT,
         "torchao_float8_", _torchao_float8_readme),
    Rule("NEMO_2208_LAUNCHER",
         "NVIDIA/NeMo-Framework-Launcher %s conf/training/gpt3 and NeMo 1.11" % NEMO_2208_COMMIT,
         "nemo2208_", _nemo_2208_launcher),
    Rule("BRIDGE_2511_QWEN3_RECIPE",
         "NVIDIA-NeMo/Megatron-Bridge %s scripts/performance/configs/qwen" % BRIDGE_COMMIT,
         "megatron_bridge_2511_qwen3_30b_a3b_16gpu", _bridge_qwen3_recipe),
    Rule("BRIDGE_2511_GB300_RECIPE_MBS",
         "NVIDIA-NeMo/Megatron-Bridge %s and bf75c658c GB300 performance configs" % BRIDGE_COMMIT,
         tuple(BRIDGE_GB300_RECIPE_MBS), _bridge_gb300_recipe_mbs),
    Rule("BRIDGE_2511_LLAMA3_8B_RECIPE",
         "NVIDIA-NeMo/Megatron-Bridge %s scripts/performance/configs/llama" % BRIDGE_COMMIT,
         "megatron_bridge_2511_llama3_8b_8gpu", _bridge_llama3_8b_recipe),
]


def complete(run):
    """The run with every applicable rule's fields filled in, and the rules' fills (in order)."""
    fills = []
    for rule in RULES:
        if rule.applies(run):
            f = rule.fill(run)
            run = dict(run, **f.run)
            fills.append(f)
    return run, fills


# Runs left out for a reason the generic checks would not give (they would name a missing field
# that no rule can honestly fill, or a near miss), by id prefix.
LEFT_OUT = {
    "opt_175b_": "only the tensor-parallel degree (8) and the FSDP degree (124, from the 992 "
                 "checkpoint shards of metaseq's OPT chronicles) are known, not the micro-batch; "
                 "and the reported figure is a peak ('up to 147 TFLOP/s per GPU') in a FLOP "
                 "convention the paper does not state (metaseq logs no FLOP count)",
    "gpt_neox_20b_": "besides a cluster preset for its 12 nodes of A100 40GB, the 117 TFLOP/s "
                     "figure lacks a FLOP convention: the paper does not state one (and is "
                     "transcribed only from a secondary summary); GPT-NeoX's own logger of the "
                     "time counts 6 x parameters + 60 s h l FLOPs per token (megatron/logging.py "
                     "get_flops, EleutherAI/gpt-neox 450b58c4), a convention the suite does not "
                     "have, and whether the paper's figure is that logger's is not stated",
}


# Megatron-Bridge 25.11 rows whose recipe (Megatron-Bridge 00b7660b,
# scripts/performance/configs/llama/) does what the simulator does not model, or is not the
# layout the table prints.
LEFT_OUT.update({
    "megatron_bridge_2511_llama3_70b_gb": (
        "the recipe of the commit that published the table (LLAMA3_70B_PRETRAIN_CONFIG_GB200/"
        "GB300_FP8_CS_BASE_CONFIG, Megatron-Bridge %s) runs Megatron-FSDP with the activations of "
        "40 (GB200) or 20 (GB300) layers offloaded to the Grace CPU (cpu_offloading_num_layers); "
        "the simulator models neither Megatron-FSDP's double-buffered gathers nor activation "
        "offloading" % BRIDGE_COMMIT),
    "megatron_bridge_2511_llama31_405b_gb300_": (
        "the table's layout (256 GPUs, TP 2, PP 8, CP 2, global batch 1536) is not that of the "
        "GB300 FP8-CS recipe of the commit that published it (LLAMA31_405B_PRETRAIN_CONFIG_GB300_"
        "FP8_CS_BASE_CONFIG, Megatron-Bridge %s: 128 GPUs, Megatron-FSDP at TP 2 with 10 layers' "
        "activations offloaded to the CPU, global batch 64), so what else the run set is not "
        "known; the simulator models neither Megatron-FSDP's double-buffered gathers nor "
        "activation offloading" % BRIDGE_COMMIT),
    "megatron_bridge_2511_qwen3_235b_a22b_b200_": (
        "the table's layout (64 GPUs, PP 8, VP 2, EP 8) is the B200 FP8-CS recipe's before "
        "cb62f8620 (2025-11-21), which changed it to VP 4 with the expert-parallel exchanges "
        "overlapped (moe_a2a_overlap) in one edit, the recipe of the commit that published the "
        "table (QWEN3_235B_A22B_PRETRAIN_CONFIG_B200_FP8_CS_BASE_CONFIG, Megatron-Bridge %s); "
        "which of the two the row ran is not known" % BRIDGE_COMMIT),
    "megatron_bridge_2511_qwen3_235b_a22b_gb": (
        "the table's layout (256 GPUs: GB200 PP 8, VP 3, EP 32; GB300 PP 4, VP 12, EP 16, "
        "micro-batch 2; global batch 8192) is not that of the recipe of the commit that published "
        "it (QWEN3_235B_A22B_PRETRAIN_CONFIG_GB200/GB300_BF16_BASE_CONFIG, Megatron-Bridge %s: 64 "
        "GPUs, global batch 1024; GB200 PP 8, EP 8; GB300 TP 2, EP 64, micro-batch 4), so what "
        "else the run set is not known" % BRIDGE_COMMIT),
    "megatron_bridge_2511_llama31_405b_gb200_": (
        "the table's layout (256 GPUs, TP 4, PP 16, VP 4, global batch 1536) is not that of the "
        "GB200 FP8-CS recipe of the commit that published it (LLAMA31_405B_PRETRAIN_CONFIG_GB200_"
        "FP8_CS_BASE_CONFIG, Megatron-Bridge %s: 128 GPUs, Megatron-FSDP at TP 2 with 92 layers' "
        "activations offloaded to the CPU, global batch 64), so what else the run set is not "
        "known" % BRIDGE_COMMIT),
    "megatron_bridge_2511_deepseekv3_gb300_": (
        "the table's layout (256 GPUs, PP 2, VP 4, EP 32, global batch 4096) is not that of the "
        "GB300 recipe of the commit that published it (DEEPSEEK_V3_PRETRAIN_CONFIG_GB300_BASE_"
        "CONFIG, Megatron-Bridge %s: PP 4, VP 4, EP 64, global batch 2048), so what else the run "
        "set is not known" % BRIDGE_COMMIT),
    "megatron_bridge_2511_deepseekv3_gb200_fp8mx_": (
        "the table's layout (256 GPUs, PP 8, VP 4, EP 32, global batch 4096) is not that of the "
        "GB200 recipe of the commit that published it (DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_BASE_"
        "CONFIG, Megatron-Bridge %s: PP 4, VP 4, EP 64, global batch 2048), so what else the run "
        "set is not known" % BRIDGE_COMMIT),
    "megatron_bridge_2511_deepseekv3_gb200_bf16_": (
        "the table's global batch (4096, 64 micro-batches per replica) is not the GB200 recipe's "
        "(2048 in DEEPSEEK_V3_PRETRAIN_CONFIG_GB200_BASE_CONFIG, Megatron-Bridge %s), so the row "
        "was launched with at least that changed and what else is not known; and its expert-"
        "parallel group of 64 GPUs with HybridEP inside a 72-GPU NVLink rack would need the "
        "placement of 256 GPUs over four racks, which is not published" % BRIDGE_COMMIT),
})

def left_out(run):
    """A reason to leave the run out that only a reading of its source gives, or None."""
    for prefix, reason in LEFT_OUT.items():
        if run["id"].startswith(prefix):
            return reason
    return None
