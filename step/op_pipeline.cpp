// Pipeline ops: send and recv of activations and gradients between stages (issue_comm for
// point-to-point). A transfer starts when both sides have posted (rendezvous); the receiver
// counts the wait for the sender as bubble and the transfer itself as pipeline time. With
// overlap_p2p_comm a recv_post op posts the receiver's side when the pass before it ends, and
// the recv op only waits. Shortcut 1:
// the class's first replica's transfers stand for all replicas' (their bytes still count).
#include <algorithm>

#include "step/replay.hpp"

namespace clustersim::step {

using workload::PassKind;

bool Replay::on_send(ClassStage& me, const Op& op) {
  Message& msg = message(me.cls, op);
  msg.sender_posted = true;
  msg.sender_t = sim_.now();
  if (msg.receiver_posted && !msg.started) {
    start_transfer(msg, me.cls, op, w_.chain.rank_of(op.virtual_stage));
  }
  return true;
}

// The receiver's side of a message: posted, and the transfer started if the sender has posted.
void Replay::post_recv(ClassStage& me, const Op& recv) {
  Message& msg = message(me.cls, recv);
  msg.receiver_posted = true;
  msg.receiver_t = sim_.now();
  if (msg.sender_posted && !msg.started) start_transfer(msg, me.cls, recv, me.stage);
}

// overlap_p2p_comm: posts the receive of the next recv op in the op's direction.
bool Replay::on_recv_post(ClassStage& me, const Op& op) {
  const std::size_t d = ClassStage::direction(op);
  if (me.posted[d] < me.recvs[d].size()) post_recv(me, me.recvs[d][me.posted[d]++]);
  return true;
}

// Waits for a message, posting its receive first unless a recv_post did. The wait for the
// sender counts as bubble, the transfer after that as pipeline time.
bool Replay::on_recv(ClassStage& me, const Op& op) {
  const double wait_t = sim_.now();
  const std::size_t d = ClassStage::direction(op);
  if (me.recvs[d].empty()) {
    post_recv(me, op);
  } else if (me.waited[d]++ == me.posted[d]) {  // overlap_p2p_comm, not posted ahead
    post_recv(me, me.recvs[d][me.posted[d]++]);
  }
  Message& msg = message(me.cls, op);
  msg.started_event.wait();
  if (aborted_) return false;
  if (!wait_all(msg.handles, msg.pairs, msg.started_event.at(), msg.label, me.stage)) return false;
  const double ready = std::max(msg.sender_t, wait_t);
  note_wait(me, wait_t, msg.sender_t, &TimeBreakdown::bubble_s,
            "wait " + pass_name(op, w_.chain.chunks()), "bubble");
  note_wait(me, ready, sim_.now(), &TimeBreakdown::pp_s, "recv " + pass_name(op, w_.chain.chunks()),
            "pp");
  // Both sides are done with it (the sender posted before the transfer started): the replay
  // keeps only the messages in flight.
  messages_.erase(message_key(me.cls, op));
  return true;
}

std::tuple<int, int, int, int> Replay::message_key(int cls, const Op& op) {
  return {cls, static_cast<int>(op.pass), op.micro_batch, op.virtual_stage};
}

Message& Replay::message(int cls, const Op& op) {
  auto& slot = messages_[message_key(cls, op)];
  if (!slot) slot = std::make_unique<Message>();
  return *slot;
}

void Replay::start_transfer(Message& msg, int cls, const Op& recv_like, int receiver_stage) {
  msg.started = true;
  const int vs_recv = recv_like.virtual_stage;
  const int vs_send = recv_like.pass == PassKind::forward ? vs_recv - 1 : vs_recv + 1;
  const int src_stage = w_.chain.rank_of(vs_send);
  msg.src_stage = src_stage;
  msg.label = std::string(recv_like.pass == PassKind::forward ? "activation" : "gradient") +
              " mb " + std::to_string(recv_like.micro_batch) + " to stage " +
              std::to_string(receiver_stage);
  if (!opt_.free_communication) {
    // Shortcut 1: the class's first replica stands for all of them; every replica's pipeline
    // traffic only with StepOptions::pp_all_replicas (or exact).
    const auto& all = classes_[static_cast<std::size_t>(cls)].replicas;
    const std::vector<int> replicas =
        opt_.exact || opt_.pp_all_replicas ? all : std::vector<int>{all.front()};
    for (int d : replicas) {
      for (const auto& [t, c] : pp_ranks_) {  // every TP/CP rank, or one rail's (shortcut 5)
        const int src = gpu_of(t, c, d, src_stage);
        const int dst = gpu_of(t, c, d, receiver_stage);
        msg.handles.push_back(sim_.start_send(src, dst, recv_like.bytes, msg.label));
        msg.pairs.push_back({src, dst});
      }
    }
    // The other replicas' transfers are not simulated; their bytes still count in the link
    // statistics (payload per hop of each one's own route). The other rails' transfers of the
    // simulated replicas are added by the report (they mirror the first rail's).
    if (replicas.size() < all.size()) {
      const auto& hops = skipped_pp_hops(cls, src_stage, receiver_stage);
      for (std::size_t k = 0; k < hops.size(); ++k)
        unsimulated_bytes_[k] += hops[k] * recv_like.bytes;
    }
  }
  msg.started_event.fire(sim_.now());
}

// Hops per link class of the pipeline transfers the shortcut leaves out (all replicas of the
// class but its first, every TP/CP rank), from stage `src` to stage `dst`.
const std::array<double, topologies::kNumLinkClasses>& Replay::skipped_pp_hops(int cls, int src,
                                                                               int dst) {
  auto& slot = skipped_hops_[{cls, src, dst}];
  if (!slot) {
    slot = std::make_unique<std::array<double, topologies::kNumLinkClasses>>();
    slot->fill(0);
    const auto& g = sim_.graph();
    const auto& all = classes_[static_cast<std::size_t>(cls)].replicas;
    for (std::size_t i = 1; i < all.size(); ++i) {
      for (int c = 0; c < cp_; ++c) {
        for (int t = 0; t < tp_; ++t) {
          for (const auto& hop : g.route(gpu_of(t, c, all[i], src), gpu_of(t, c, all[i], dst))) {
            (*slot)[static_cast<std::size_t>(g.link(hop.link).cls)] += 1;
          }
        }
      }
    }
  }
  return *slot;
}

}  // namespace clustersim::step
