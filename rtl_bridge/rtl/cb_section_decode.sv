// Decode of one DMA section (DMI at byte 16 or DMO at byte 32) of a 128-byte CB, little-endian,
// and the checks the data path makes before anything moves: byte count against the device's
// limit (host copies), XLAT and device memory bounds of the device range (and of a device copy's
// source). The format checks of the contract (reserved bits, section combination, pipeline) are
// made before a CB reaches the data path. Combinational.
module cb_section_decode
  import spyre_dma_pkg::*;
#(
  parameter bit IS_DMI = 1'b1
) (
  /* verilator lint_off UNUSEDSIGNAL */
  input  logic [1023:0] cb,            // reserved and other sections' bits are not looked at here
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic [63:0]   mem_bytes,
  input  logic [31:0]   max_cb_bytes,
  output logic [23:0]   tag,
  output logic [3:0]    kind,          // DmaType
  output logic [31:0]   bytes,
  output logic [63:0]   iova,          // host bytes (immediate)
  output logic [31:0]   pattern,       // memory fill
  output logic [63:0]   phys,          // device destination (DMI) or source (DMO)
  output logic [63:0]   src_phys,      // device copy source
  output logic [15:0]   error,
  output logic [15:0]   field,
  output logic [63:0]   detail
);
  localparam int W0 = IS_DMI ? 128 : 256;  // bit offset of the section's word0
  localparam logic [15:0] F_LENGTH = IS_DMI ? FIELD_DMI_LENGTH : FIELD_DMO_LENGTH;
  localparam logic [15:0] F_VA     = IS_DMI ? FIELD_DMI_DEVICE_VA : FIELD_DMO_DEVICE_VA;

  /* verilator lint_off UNUSEDSIGNAL */
  logic [63:0] w0, w1;  // reserved bits were checked before the data path
  /* verilator lint_on UNUSEDSIGNAL */
  logic [23:0] length_flits;
  logic [6:0]  last_bytes;
  logic [15:0] dst_error, src_error;
  logic [63:0] dst_detail, src_detail;
  logic        host_copy;

  assign w0           = cb[W0 +: 64];
  assign w1           = cb[W0 + 64 +: 64];
  assign tag          = cb[31:8];
  assign kind         = w0[3:0];
  assign length_flits = w0[31:8];
  assign last_bytes   = w1[63:57];
  assign iova         = {w1[56:0], 7'd0};
  assign pattern      = w1[31:0];
  assign host_copy    = kind == DMA_IMMEDIATE;

  always_comb begin
    if (length_flits == 24'd0) bytes = 32'd0;
    else if (last_bytes == 7'd0) bytes = {1'b0, length_flits, 7'd0};
    else bytes = {1'b0, length_flits, 7'd0} - 32'd128 + {25'd0, last_bytes};
  end

  // DMI writes device memory; DMO reads it. A device copy's source is read.
  xlat_check dst_check (
    .xlat(cb[1023:512]), .va(w0[61:32]), .length_flits(length_flits), .bytes(bytes),
    .write(IS_DMI), .mem_bytes(mem_bytes), .error(dst_error), .detail(dst_detail), .phys(phys));
  xlat_check src_check (
    .xlat(cb[1023:512]), .va(w1[29:0]), .length_flits(length_flits), .bytes(bytes),
    .write(1'b0), .mem_bytes(mem_bytes), .error(src_error), .detail(src_detail), .phys(src_phys));

  always_comb begin
    error  = ERR_NONE;
    field  = FIELD_NONE;
    detail = 64'd0;
    if (host_copy && bytes > max_cb_bytes) begin
      error  = ERR_MALFORMED_CB;
      field  = F_LENGTH;
      detail = {40'd0, length_flits};
    end else if (dst_error != ERR_NONE) begin
      error  = dst_error;
      field  = F_VA;
      detail = dst_detail;
    end else if (IS_DMI && kind == DMA_DEVICE_COPY && src_error != ERR_NONE) begin
      error  = src_error;
      field  = FIELD_DMI_SOURCE;
      detail = src_detail;
    end
  end
endmodule
