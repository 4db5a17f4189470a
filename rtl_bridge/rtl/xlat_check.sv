// XLAT translation and device memory bounds of one device VA range, through the CB's own table
// (contract: entry `segment` valid, offset + length within its length, a write needs RW; the
// physical range must lie inside the installed device memory). Combinational.
module xlat_check
  import spyre_dma_pkg::*;
(
  input  logic [511:0] xlat,          // the CB's 8 entries (bytes 64..127)
  input  logic [29:0]  va,            // segment 29:27, flit offset 26:0
  input  logic [23:0]  length_flits,
  input  logic [31:0]  bytes,
  input  logic         write,
  input  logic [63:0]  mem_bytes,
  output logic [15:0]  error,         // ERR_NONE, ERR_XLAT_FAULT or ERR_DEVICE_MEMORY
  output logic [63:0]  detail,        // the raw VA (XLAT) or the physical address (memory)
  output logic [63:0]  phys           // byte address in device memory
);
  logic [63:0] entry;
  logic [1:0]  mode;
  logic [27:0] elen;
  logic [33:0] base;
  logic [26:0] off;
  logic [64:0] end_addr;

  always_comb begin
    entry    = xlat[64*va[29:27] +: 64];
    mode     = entry[1:0];
    elen     = entry[29:2];
    base     = entry[63:30];
    off      = va[26:0];
    phys     = {22'd0, {1'b0, base} + {8'd0, off}, 7'd0};
    end_addr = {1'b0, phys} + {33'd0, bytes};
    error    = ERR_NONE;
    detail   = 64'd0;
    if (mode == XLAT_INVALID || (write && mode != XLAT_READ_WRITE) ||
        {4'd0, length_flits} > elen || {1'b0, off} > elen - {4'd0, length_flits}) begin
      error  = ERR_XLAT_FAULT;
      detail = {34'd0, va};
    end else if (end_addr > {1'b0, mem_bytes}) begin
      error  = ERR_DEVICE_MEMORY;
      detail = phys;
    end
  end
endmodule
