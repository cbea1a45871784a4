// Per-stage streams for gradient reductions (and ZeRO-1/2 parameter buckets), ZeRO-3 gathers and
// the embedding's tied gradients: an instance starts once every class-stage launched it, runs
// on every data-parallel group at once, one NCCL call after the other. Shortcut 3: instances of
// the same shape that queue up behind a running call are sent as one merged call of at most
// merge_cap_bytes, while NCCL would run it with the algorithm, protocol and channels of the first
// alone, with the latency of the calls merged away added back.
#include <algorithm>

#include "step/replay.hpp"

namespace clustersim::step {

using workload::Group;

namespace {

bool same_shape(const Instance& a, const Instance& b) {
  if (a.group != b.group || a.calls.size() != b.calls.size()) return false;
  for (std::size_t i = 0; i < a.calls.size(); ++i) {
    if (a.calls[i].kind != b.calls[i].kind || a.calls[i].dtype != b.calls[i].dtype) return false;
  }
  return true;
}

// One NCCL call of a stream instance on `gpus`, at `bytes`.
nccl::CollectiveRequest call_request(const workload::CommCall& c, const std::vector<int>& gpus,
                                     double bytes) {
  nccl::CollectiveRequest req;
  req.op = nccl_op(c.kind);
  req.gpus = gpus;
  req.bytes = bytes;
  req.dtype = c.dtype;
  return req;
}

}  // namespace

void Replay::build_streams() {
  const int needed = static_cast<int>(classes_.size());
  for (int st = 0; st < p_; ++st) {
    const auto& prog = w_.stages[static_cast<std::size_t>(st)];
    Stream red;
    red.name = "reduce";
    red.stage = st;
    red.needed = needed;
    red.can_merge = !opt_.exact;
    double bytes = 0;
    for (const auto& b : prog.buckets) {
      if (b.group == Group::dp || b.group == Group::expert_dp) bytes += b.bytes();
    }
    red.merge_cap_bytes = bytes / std::max(1, opt_.merge_parts);
    reduce_.push_back(std::move(red));
    Stream gat;
    gat.name = "gather";
    gat.stage = st;
    gat.needed = needed;
    // ZeRO-3 gathers are paced by compute (one unit of prefetch): merging would only delay
    // the unit being waited for.
    gat.can_merge = !opt_.exact && s_.parallelism.zero_stage < 3;
    double gbytes = 0;
    for (const auto& g : prog.gathers) gbytes += g.call.bytes;
    gat.merge_cap_bytes = gbytes / std::max(1, opt_.merge_parts);
    gather_.push_back(std::move(gat));
  }
  embedding_.name = "embedding";
  embedding_.stage = 0;
  embedding_.needed = needed * (p_ > 1 ? 2 : 1);
  embedding_.can_merge = false;
}

Instance& Replay::instance(Stream& st, int id, int mb, int pass,
                           const std::vector<workload::CommCall>& calls, Group group,
                           const std::string& label, double stream_work_s) {
  auto& slot = st.instances[{id, mb, pass}];
  if (!slot) {
    slot = std::make_unique<Instance>();
    slot->id = id;
    slot->micro_batch = mb;
    slot->pass = pass;
    slot->calls = calls;
    slot->group = group;
    slot->label = label;
    slot->stream_work_s = stream_work_s;
    for (const auto& c : calls) slot->bytes += c.bytes;
  }
  return *slot;
}

void Replay::launch(Stream& st, Instance& inst) {
  if (++inst.ready < st.needed) return;
  inst.queued = true;
  st.queue.push_back(&inst);
  if (!st.busy) {
    st.busy = true;
    const int gpu = gpu_of(0, 0, classes_.front().replicas.front(), st.stage);
    Stream* sp = &st;
    sim_.spawn(gpu, st.name + "-stream-stage" + std::to_string(st.stage),
               [this, sp] { run_stream(*sp); });
  }
}

std::vector<std::vector<int>> Replay::groups_for(const Stream& st, Group g) const {
  if (g == Group::embedding) return embedding_groups_;
  const auto stage = static_cast<std::size_t>(st.stage);
  static const std::vector<int> no_rail;
  const std::vector<int>& first = rails_.empty() ? no_rail : first_rail_groups_[stage];
  const auto on_first_rail = [&](int t) {
    return std::find(first.begin(), first.end(), t) != first.end();
  };
  if (g == Group::expert_dp) {
    if (rails_.empty()) return expert_dp_groups_[stage];
    std::vector<std::vector<int>> out;  // shortcut 4: the groups of the first rail's TP ranks
    for (std::size_t i = 0; i < expert_dp_groups_[stage].size(); ++i) {
      if (on_first_rail(expert_dp_tp_[stage][i])) out.push_back(expert_dp_groups_[stage][i]);
    }
    return out;
  }
  const auto& all = dp_groups_[stage];
  if (rails_.empty()) return all;
  std::vector<std::vector<int>> first_rail;  // shortcut 4
  for (int t : first) first_rail.push_back(all[static_cast<std::size_t>(t)]);
  return first_rail;
}

std::vector<std::tuple<int, int, int>> Replay::call_plans(const Instance& head,
                                                          const std::vector<int>& gpus,
                                                          const std::vector<double>& bytes) const {
  std::vector<std::tuple<int, int, int>> out;
  if (gpus.size() < 2) return out;
  for (std::size_t ci = 0; ci < head.calls.size(); ++ci) {
    const nccl::CollectivePlan p = sim_.plan(call_request(head.calls[ci], gpus, bytes[ci]));
    out.emplace_back(static_cast<int>(p.algorithm), static_cast<int>(p.protocol), p.channels);
  }
  return out;
}

// The head of the queue and the instances of the same shape merged with it (shortcut 3). NCCL
// picks the algorithm, protocol and channels of each call by its size, and they set its
// bandwidth as well as its latency: a merged call that NCCL would run otherwise than the head
// alone (ring LL or LL128 -> Simple as the bytes grow) would stand for the calls at another
// bandwidth, so merging stops before it.
std::vector<Instance*> Replay::next_batch(Stream& st) {
  std::vector<Instance*> batch{st.queue.front()};
  st.queue.pop_front();
  const Instance& head = *batch.front();
  double bytes = head.bytes;
  std::vector<double> call_bytes;
  for (const auto& c : head.calls) call_bytes.push_back(c.bytes);
  std::vector<int> gpus;  // the stream's first group, looked up at the first candidate
  std::vector<std::tuple<int, int, int>> alone;
  while (st.can_merge && !st.queue.empty() && same_shape(head, *st.queue.front()) &&
         bytes + st.queue.front()->bytes <= std::max(st.merge_cap_bytes, head.bytes)) {
    const Instance& next = *st.queue.front();
    std::vector<double> merged = call_bytes;
    for (std::size_t ci = 0; ci < merged.size(); ++ci) merged[ci] += next.calls[ci].bytes;
    if (batch.size() == 1) {
      const auto groups = groups_for(st, head.group);
      if (!groups.empty()) gpus = groups.front();
      alone = call_plans(head, gpus, call_bytes);
    }
    if (call_plans(head, gpus, merged) != alone) break;
    call_bytes = std::move(merged);
    bytes += next.bytes;
    batch.push_back(st.queue.front());
    st.queue.pop_front();
  }
  return batch;
}

// The batch's NCCL calls, one after the other, each on every group at once. Returns false when
// the step hung.
bool Replay::run_calls(Stream& st, const std::vector<Instance*>& batch, const std::string& label,
                       double started) {
  const Instance& head = *batch.front();
  const auto groups = groups_for(st, head.group);
  // The stages whose GPUs run the calls (the embedding's group spans the first and the last).
  std::vector<int> stages{st.stage};
  if (head.group == Group::embedding && p_ > 1) stages.push_back(p_ - 1);
  for (std::size_t ci = 0; ci < head.calls.size(); ++ci) {
    double call_bytes = 0;
    for (const Instance* in : batch) call_bytes += in->calls[ci].bytes;
    std::vector<sim::CollectiveHandle> handles;
    std::vector<std::pair<int, int>> pairs;
    // The calls merged away would each have paid NCCL's latency, at their own size: NCCL
    // picks the protocol per call, and a merged call large enough to switch protocol (ring
    // LL128 -> Simple) has a larger latency than any of the calls it stands for.
    double merged_latency = 0;
    for (const auto& gpus : groups) {
      if (gpus.size() < 2) continue;
      nccl::CollectiveRequest req = call_request(head.calls[ci], gpus, call_bytes);
      req.label = label;
      handles.push_back(sim_.start_collective(req));
      double group_latency = 0;
      for (std::size_t k = 1; k < batch.size(); ++k) {
        req.bytes = batch[k]->calls[ci].bytes;
        if (req.bytes > 0) group_latency += sim_.plan(req).latency_s;
      }
      merged_latency = std::max(merged_latency, group_latency);
      if (faults_can_hang()) {
        const auto rp = ring_pairs(gpus);
        pairs.insert(pairs.end(), rp.begin(), rp.end());
      }
    }
    // The call's CTAs hold SMs of its GPUs from its launch to its end (sm_share.cpp).
    const int ctas = handles.empty() || sm_count_ == 0 ? 0 : handles.front().result().plan.channels;
    if (ctas > 0) {
      for (int stage : stages) sms_[static_cast<std::size_t>(stage)].take(sim_.now(), ctas);
    }
    if (!wait_all(handles, pairs, started, label, st.stage)) return false;
    if (merged_latency > 0) sim_.sleep_for(merged_latency);
    if (ctas > 0) {
      for (int stage : stages) sms_[static_cast<std::size_t>(stage)].give_back(sim_.now(), ctas);
    }
  }
  return true;
}

void Replay::run_stream(Stream& st) {
  while (!st.queue.empty()) {
    const std::vector<Instance*> batch = next_batch(st);
    const double started = sim_.now();
    const Instance& head = *batch.front();
    std::string label = st.name + " stage " + std::to_string(st.stage) + " (" + head.label;
    if (batch.size() > 1) label += " + " + std::to_string(batch.size() - 1) + " more";
    label += ")";
    if (!opt_.free_communication && !run_calls(st, batch, label, started)) return;
    double stream_work_s = 0;
    for (const Instance* in : batch) stream_work_s += in->stream_work_s;
    if (stream_work_s > 0) sim_.sleep_for(stream_work_s);
    for (Instance* in : batch) in->done.fire(sim_.now());
    if (opt_.record_trace && sim_.now() > started) {
      trace_.push_back({-1, st.stage, 1, started, sim_.now(), label, "dp-stream"});
    }
  }
  st.busy = false;
}

}  // namespace clustersim::step
