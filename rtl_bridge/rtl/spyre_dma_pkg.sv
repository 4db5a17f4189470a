// Codes of the hardware contract (engine/include/spyre_dma/hw/contract.hpp) that the data path
// puts into its response blocks. The numbers travel in RBs: they must match the C++ enums.
// Not every module uses every code: the table is complete on purpose.
/* verilator lint_off UNUSEDPARAM */
package spyre_dma_pkg;

  // RbStatus
  localparam logic [3:0] RB_GOOD  = 4'd0;
  localparam logic [3:0] RB_ERROR = 4'd3;

  // ErrorKind
  localparam logic [15:0] ERR_NONE               = 16'd0;
  localparam logic [15:0] ERR_MALFORMED_CB       = 16'd1;
  localparam logic [15:0] ERR_XLAT_FAULT         = 16'd2;
  localparam logic [15:0] ERR_IOMMU_FAULT        = 16'd3;
  localparam logic [15:0] ERR_DEVICE_MEMORY      = 16'd4;
  localparam logic [15:0] ERR_PCIE_ERROR         = 16'd5;
  localparam logic [15:0] ERR_COMPLETION_TIMEOUT = 16'd6;

  // CbField
  localparam logic [15:0] FIELD_NONE          = 16'd0;
  localparam logic [15:0] FIELD_DMI_LENGTH    = 16'd6;
  localparam logic [15:0] FIELD_DMI_DEVICE_VA = 16'd8;
  localparam logic [15:0] FIELD_DMI_HOST_IOVA = 16'd9;
  localparam logic [15:0] FIELD_DMO_LENGTH    = 16'd12;
  localparam logic [15:0] FIELD_DMO_DEVICE_VA = 16'd14;
  localparam logic [15:0] FIELD_DMO_HOST_IOVA = 16'd15;
  localparam logic [15:0] FIELD_DMI_SOURCE    = 16'd24;

  // DmaType
  localparam logic [3:0] DMA_IMMEDIATE   = 4'd1;
  localparam logic [3:0] DMA_MEMORY_FILL = 4'd2;
  localparam logic [3:0] DMA_DEVICE_COPY = 4'd3;

  // XlatMode
  localparam logic [1:0] XLAT_INVALID    = 2'd0;
  localparam logic [1:0] XLAT_READ_WRITE = 2'd2;

  // Requester request types on the rq stream.
  localparam logic RQ_MRD = 1'b0;
  localparam logic RQ_MWR = 1'b1;

  // Completion status on the rc stream (PCIe Cpl status: SC, UR, CA).
  localparam logic [1:0] CPL_SUCCESS = 2'd0;

  // Device memory command kinds.
  localparam logic DC_FILL32 = 1'b0;
  localparam logic DC_COPY   = 1'b1;

endpackage
/* verilator lint_on UNUSEDPARAM */
