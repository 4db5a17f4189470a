// Everything a runtime needs: the engine, its streams, events and buffers, and the device seam.
#pragma once

#include "spyre_dma/device.hpp"
#include "spyre_dma/engine.hpp"
#include "spyre_dma/host_pool.hpp"
#include "spyre_dma/memory.hpp"
#include "spyre_dma/observer.hpp"
#include "spyre_dma/options.hpp"
#include "spyre_dma/status.hpp"
#include "spyre_dma/stream.hpp"
#include "spyre_dma/wait_interrupt.hpp"
