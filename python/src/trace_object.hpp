// The Python Trace object (traces.cpp), made by the engine's capture too (engine.cpp).
#pragma once

#include "native.hpp"
#include "spyre_dma/traces/trace.hpp"

namespace spyre_dma::python {

py::object make_trace_object(traces::Trace trace);

}  // namespace spyre_dma::python
