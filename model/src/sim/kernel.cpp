#include "sim/kernel.hpp"

#include <cstdlib>
#include <string>
#include <vector>

#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <systemc>

namespace spyre_dma::model {

void fresh_kernel() {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
  sc_core::sc_report_handler::set_actions(sc_core::SC_ID_NO_SC_START_ACTIVITY_, sc_core::SC_DO_NOTHING);
}

namespace {

// Kills every thread process under `objects`, so that each unwinds its stack (its locals are
// destroyed) instead of being abandoned suspended.
void kill_threads(const std::vector<sc_core::sc_object*>& objects) {
  for (sc_core::sc_object* o : objects) {
    kill_threads(o->get_child_objects());
    if (std::string(o->kind()) == "sc_thread_process") {
      sc_core::sc_process_handle h(o);
      if (!h.terminated()) h.kill();
    }
  }
}

}  // namespace

void stop_threads() {
  // kill() has to come from a process of the running simulation: a method spawned for it, run for
  // one delta cycle. A simulation already stopped for good (sc_stop) cannot run it.
  if (sc_core::sc_get_status() == sc_core::SC_STOPPED || sc_core::sc_get_status() == sc_core::SC_END_OF_SIMULATION) {
    return;
  }
  // A simulation that ended in an error refuses to run again: its threads stay as they are.
  try {
    sc_core::sc_spawn_options method;
    method.spawn_method();
    // The method then kills itself: a spawned method still alive when its kernel is deleted is
    // never freed, and a long-lived process closes one kernel per simulated system.
    sc_core::sc_spawn(
        [] {
          kill_threads(sc_core::sc_get_top_level_objects());
          sc_core::sc_get_current_process_handle().kill();
        },
        "kernel_stop_threads", &method);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  } catch (const std::exception&) {
  }
}

void release_kernel() {
  delete sc_core::sc_curr_simcontext;
  sc_core::sc_curr_simcontext = nullptr;
  sc_core::sc_default_global_context = nullptr;
}

}  // namespace spyre_dma::model
