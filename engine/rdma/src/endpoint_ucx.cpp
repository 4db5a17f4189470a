// Endpoint over UCX: built only where UCX is (SPYRE_DMA_RDMA).
#include "spyre_dma/rdma/endpoint.hpp"
#include "spyre_dma/rdma/ucx_node.hpp"

namespace spyre_dma::rdma {

Endpoint::Endpoint(Engine& engine) : Endpoint(engine, std::make_shared<UcxNode>(UcxNode::Progress::kThread)) {}

}  // namespace spyre_dma::rdma
