// The SimGrid kernel internals the engine relies on, all in this file: a routing zone subclass
// (kernel::routing::NetZoneImpl, whose routes are filled into Route::link_list_) and kernel
// timers (kernel::timer::Timer). They are not SimGrid's public s4u API and change between
// releases, so the build stops on a SimGrid other than the one this file was checked against.
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <stdexcept>

#include "sim/detail/simgrid_platform.hpp"
// After the S4U headers, like platform.cpp.
#include <simgrid/version.h>

#if SIMGRID_VERSION_MAJOR != 3 || SIMGRID_VERSION_MINOR != 32
#error \
    "sim/simgrid_kernel.cpp uses SimGrid 3.32's kernel internals (NetZoneImpl::get_local_route, Route::link_list_, kernel::timer::Timer::set); check them against this SimGrid release and update the version check"
#endif

namespace clustersim::sim::detail {

namespace {

class GraphZone final : public simgrid::kernel::routing::NetZoneImpl {
 public:
  explicit GraphZone(const std::string& name, Platform::Impl* owner)
      : NetZoneImpl(name), owner_(owner) {}
  void get_local_route(const simgrid::kernel::routing::NetPoint* src,
                       const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

 private:
  Platform::Impl* owner_;
};

void GraphZone::get_local_route(const simgrid::kernel::routing::NetPoint* src,
                                const simgrid::kernel::routing::NetPoint* dst,
                                simgrid::kernel::routing::Route* into, double* latency) {
  const auto& map = owner_->endpoint_of_netpoint;
  const int a = src->id() < map.size() ? map[src->id()] : -1;
  const int b = dst->id() < map.size() ? map[dst->id()] : -1;
  if (a < 0 || b < 0) throw std::logic_error("GraphZone: route between unknown netpoints");
  if (a == b) return;
  const CachedRoute& r = owner_->route(a, b);
  into->link_list_.insert(into->link_list_.end(), r.links.begin(), r.links.end());
  (void)latency;  // links carry no latency (platform.hpp)
}

}  // namespace

simgrid::s4u::NetZone* create_graph_zone(const std::string& name, Platform::Impl* owner) {
  return (new GraphZone(name, owner))->get_iface();
}

unsigned long netpoint_id(const simgrid::s4u::Host* host) {
  return host->get_netpoint()->id();
}

void call_at(double time_s, std::function<void()> f) {
  simgrid::kernel::timer::Timer::set(time_s, std::move(f));
}

}  // namespace clustersim::sim::detail
