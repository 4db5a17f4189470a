// spyre_dma._native: the extension module behind the spyre_dma package (python/spyre_dma).
#include "native.hpp"

PYBIND11_MODULE(_native, m) {
  m.doc() = "The spyre-dma engine, its backends and the trace tools (the spyre_dma package's native part).";
  spyre_dma::python::bind_errors(m);
  spyre_dma::python::bind_engine(m);
  spyre_dma::python::bind_host_pool(m);
  spyre_dma::python::bind_traces(m);
}
