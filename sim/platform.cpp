// The SimGrid platform built from the cluster graph (see platform.hpp for the choices).
#include "sim/platform.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <xbt/config.hpp>

#include "sim/detail/simgrid_platform.hpp"
// After the S4U headers, which define the macros it needs.
#include <simgrid/version.h>

namespace clustersim::sim {

namespace {

bool g_engine_used = false;

// A link that is down keeps a residual bandwidth in SimGrid (a zero capacity aborts SimGrid
// 3.32's solver); flows crossing it are suspended by the simulation, so nothing moves.
constexpr double kDownResidualFactor = 1e-6;

// SimGrid 3.32's context factories on Linux x86-64 (EngineImpl.cpp, context_factories).
constexpr const char* kContextFactories[] = {"raw", "ucontext", "boost", "thread"};

// "--cfg=name:value" with the value as SimGrid parses it (doubles to the last digit).
std::string cfg(const std::string& name, double value) {
  std::ostringstream s;
  s.precision(17);
  s << "--cfg=" << name << ':' << value;
  return s.str();
}
std::string cfg(const std::string& name, const std::string& value) {
  return "--cfg=" + name + ':' + value;
}

std::uint64_t pair_key(int a, int b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

}  // namespace

std::vector<std::string> engine_arguments(const NetworkModelOptions& network,
                                          const EngineOptions& engine) {
  return {
      // SimGrid's informational logging ("Configuration change: ...") would mix with our output.
      "--log=root.thresh:warning",
      cfg("network/model", "CM02"),
      cfg("network/crosstraffic", "0"),
      cfg("network/bandwidth-factor", network.bandwidth_factor),
      cfg("network/latency-factor", network.latency_factor),
      cfg("network/weight-S", network.weight_S),
      cfg("maxmin/precision", network.maxmin_precision),
      cfg("contexts/factory", engine.context_factory),
      cfg("contexts/stack-size", engine.actor_stack_KiB),
      cfg("contexts/guard-size", engine.stack_guard ? 1 : 0),
  };
}

Platform::Impl::Impl(const topologies::ClusterGraph& g, const NetworkModelOptions& o,
                     bool p2p_nvlink, const EngineOptions& engine_options)
    : graph(g), options(o) {
  namespace sg4 = simgrid::s4u;
  router = std::make_unique<nccl::EndpointRouter>(graph, p2p_nvlink);
  num_gpus = graph.num_gpus();

  // SimGrid reads the arguments while it creates the engine (xbt_init, then sg_config_init):
  // every setting is in force from the first actor on.
  std::vector<std::string> args = {"clustersim"};
  for (auto& a : engine_arguments(o, engine_options)) args.push_back(std::move(a));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  engine = new sg4::Engine(&argc, argv.data());
  if (argc != 1) {
    throw std::logic_error("Platform: SimGrid did not take the argument \"" + std::string(argv[1]) +
                           "\"");
  }

  zone = detail::create_graph_zone("cluster", this);
  const int endpoints = router->num_endpoints();
  hosts.resize(static_cast<std::size_t>(endpoints), nullptr);
  std::vector<double> ladder;
  for (int i = 0; i < kSpeedSteps; ++i)
    ladder.push_back(kNominalSpeed * (1.0 - double(i) / kSpeedSteps));
  for (int e = 0; e < endpoints; ++e) {
    const bool gpu = e < num_gpus;
    sg4::Host* h =
        zone->create_host(router->name(e), gpu ? ladder : std::vector<double>{kNominalSpeed});
    h->seal();
    hosts[static_cast<std::size_t>(e)] = h;
    const auto id = detail::netpoint_id(h);
    if (endpoint_of_netpoint.size() <= id) endpoint_of_netpoint.resize(id + 1, -1);
    endpoint_of_netpoint[id] = e;
  }
  links.resize(static_cast<std::size_t>(graph.num_links()));
  for (const auto& l : graph.links()) {
    for (int dir = 0; dir < 2; ++dir) {
      sg4::Link* s = zone->create_link(l.name + (dir == 0 ? "/up" : "/down"),
                                       std::vector<double>{l.bandwidth_Bps});
      s->set_latency(0);
      s->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
      s->seal();
      links[static_cast<std::size_t>(l.id)][static_cast<std::size_t>(dir)] = s;
    }
  }
  factor.assign(links.size(), 1.0);
  down.assign(links.size(), 0);
  bytes.assign(links.size(), {0.0, 0.0});
  zone->seal();
}

const detail::CachedRoute& Platform::Impl::route(int src, int dst) {
  const std::uint64_t key = pair_key(src, dst);
  auto it = routes.find(key);
  if (it != routes.end()) return it->second;
  detail::CachedRoute r;
  r.hops = router->route(src, dst);
  r.links.reserve(r.hops.size());
  for (const auto& h : r.hops) {
    r.links.push_back(
        links[static_cast<std::size_t>(h.link)][h.dir == topologies::Direction::up ? 0 : 1]
            ->get_impl());
  }
  return routes.emplace(key, std::move(r)).first->second;
}

void Platform::Impl::account(int src, int dst, double wire_bytes) {
  for (const auto& h : route(src, dst).hops) {
    bytes[static_cast<std::size_t>(h.link)][h.dir == topologies::Direction::up ? 0 : 1] +=
        wire_bytes;
  }
}

bool Platform::Impl::route_is_down(int src, int dst) {
  for (const auto& h : route(src, dst).hops) {
    if (down[static_cast<std::size_t>(h.link)] > 0) return true;
  }
  return false;
}

void Platform::Impl::refresh_link(int link) {
  const auto& l = graph.link(link);
  const double f = down[static_cast<std::size_t>(link)] > 0
                       ? kDownResidualFactor
                       : factor[static_cast<std::size_t>(link)];
  for (auto* s : links[static_cast<std::size_t>(link)]) s->set_bandwidth(l.bandwidth_Bps * f);
}

// ---------------------------------------------------------------------------------------------

Platform::Platform(const topologies::ClusterGraph& graph, const NetworkModelOptions& options,
                   bool p2p_nvlink, const EngineOptions& engine) {
  if (g_engine_used) {
    throw std::logic_error(
        "Platform: this process already created its SimGrid engine; SimGrid 3.32 keeps global "
        "state (clock, configuration) after an engine is destroyed, so each simulation needs its "
        "own process (see run_isolated in sim/isolated.hpp)");
  }
  if (engine.actor_stack_KiB < 16) throw std::invalid_argument("actor_stack_KiB must be >= 16");
  if (std::find(std::begin(kContextFactories), std::end(kContextFactories),
                engine.context_factory) == std::end(kContextFactories)) {
    throw std::invalid_argument("EngineOptions: context_factory \"" + engine.context_factory +
                                "\" is not one of raw, ucontext, boost, thread");
  }
  if (!(options.bandwidth_factor > 0) || !(options.latency_factor >= 0) ||
      !(options.weight_S >= 0) || !(options.maxmin_precision > 0)) {
    throw std::invalid_argument(
        "NetworkModelOptions: bandwidth_factor and maxmin_precision must be > 0, latency_factor "
        "and weight_S >= 0");
  }
  g_engine_used = true;
  impl_ = std::make_unique<Impl>(graph, options, p2p_nvlink, engine);
  const EngineOptions in_force = engine_settings();
  if (in_force.actor_stack_KiB != engine.actor_stack_KiB ||
      in_force.stack_guard != engine.stack_guard ||
      in_force.context_factory != engine.context_factory) {
    throw std::logic_error(
        "Platform: SimGrid's engine does not hold the settings it was created "
        "with (was SimGrid initialised before the engine?)");
  }
}

Platform::~Platform() = default;

bool Platform::engine_used_in_this_process() {
  return g_engine_used;
}

const topologies::ClusterGraph& Platform::graph() const {
  return impl_->graph;
}
const NetworkModelOptions& Platform::options() const {
  return impl_->options;
}

std::string Platform::describe() const {
  std::ostringstream s;
  const auto& o = impl_->options;
  s << "SimGrid " << SIMGRID_VERSION_MAJOR << '.' << SIMGRID_VERSION_MINOR
    << ", network model CM02 (bandwidth factor " << o.bandwidth_factor << ", latency factor "
    << o.latency_factor << ", weight-S " << o.weight_S << "), split-duplex links, latency from "
    << "NCCL's model";
  return s.str();
}

EngineOptions Platform::engine_settings() const {
  EngineOptions e;
  e.actor_stack_KiB = simgrid::config::get_value<int>("contexts/stack-size");
  e.stack_guard = simgrid::config::get_value<int>("contexts/guard-size") > 0;
  e.context_factory = simgrid::config::get_value<std::string>("contexts/factory");
  return e;
}

double Platform::link_bandwidth_factor(int link) const {
  return impl_->factor.at(static_cast<std::size_t>(link));
}

bool Platform::link_is_down(int link) const {
  return impl_->down.at(static_cast<std::size_t>(link)) > 0;
}

LinkUsageReport Platform::link_usage(double elapsed_s) const {
  LinkUsageReport rep;
  rep.elapsed_s = elapsed_s;
  const auto& g = impl_->graph;
  rep.classes.resize(topologies::kNumLinkClasses);
  for (int c = 0; c < topologies::kNumLinkClasses; ++c) {
    rep.classes[static_cast<std::size_t>(c)].cls = static_cast<topologies::LinkClass>(c);
  }
  for (const auto& l : g.links()) {
    auto& cu = rep.classes[static_cast<std::size_t>(l.cls)];
    const auto& b = impl_->bytes[static_cast<std::size_t>(l.id)];
    cu.links += 1;
    cu.bytes += b[0] + b[1];
    cu.capacity_Bps += 2 * l.bandwidth_Bps;
    if (elapsed_s > 0) {
      const double peak = std::max(b[0], b[1]) / (l.bandwidth_Bps * elapsed_s);
      if (peak > cu.peak_link_utilisation) {
        cu.peak_link_utilisation = peak;
        cu.peak_link = l.name;
      }
    }
    if (b[0] > 0 || b[1] > 0)
      rep.links.push_back({l.id, l.name, l.cls, b[0], b[1], l.bandwidth_Bps});
  }
  for (auto& cu : rep.classes) {
    cu.utilisation =
        elapsed_s > 0 && cu.capacity_Bps > 0 ? cu.bytes / (cu.capacity_Bps * elapsed_s) : 0;
  }
  return rep;
}

}  // namespace clustersim::sim
