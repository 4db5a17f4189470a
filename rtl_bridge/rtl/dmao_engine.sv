// The DMAO data path: one CB at a time from the DMAO pipeline. The CB is checked (byte count,
// XLAT, device memory bounds, then the IOMMU through the ATS port); device memory is read in
// pieces cut at MPS (which keeps them inside 4 KiB host pages, MPS <= 4096), as many pieces in
// flight as the read buffer holds (OUTSTANDING pieces, BUFFER_BYTES bytes), and each piece's
// data, as it returns in order, leaves as one MWr (header on the first beat), which frees its
// room. MWr are posted: the RB follows the last one on the same link.
module dmao_engine
  import spyre_dma_pkg::*;
#(
  parameter int DATA_BYTES  = 128,
  parameter int OUTSTANDING  = 64,    // device memory reads in flight (pieces) at most
  parameter int BUFFER_BYTES = 8192,  // ... and their bytes: the read buffer
  localparam int DW         = DATA_BYTES * 8,
  localparam int BW         = $clog2(DATA_BYTES) + 1,
  localparam int OW         = $clog2(OUTSTANDING),
  localparam int FW         = $clog2(BUFFER_BYTES + 4096 + 1)  // bytes buffered plus a piece
) (
  input  logic          clk,
  input  logic          rst_n,
  input  logic [63:0]   mem_bytes,
  input  logic [31:0]   max_cb_bytes,
  input  logic [12:0]   mps,            // bytes, power of two <= 4096
  input  logic          cb_valid,
  output logic          cb_ready,
  input  logic [1023:0] cb_data,
  output logic          ats_valid,
  input  logic          ats_ready,
  output logic [63:0]   ats_iova,
  output logic [31:0]   ats_bytes,
  input  logic          ats_rsp_valid,
  input  logic          ats_rsp_ok,
  // Device memory reads: a request per piece, its data back in order (dr_last ends a piece).
  output logic          drq_valid,
  input  logic          drq_ready,
  output logic [63:0]   drq_addr,
  output logic [12:0]   drq_len,
  input  logic          dr_valid,
  output logic          dr_ready,
  input  logic [BW-1:0] dr_bytes,
  input  logic          dr_last,
  input  logic [DW-1:0] dr_data,
  // Posted writes (MWr): header fields valid on the first beat (rq_sop).
  output logic          rq_valid,
  input  logic          rq_ready,
  output logic          rq_sop,
  output logic          rq_eop,
  output logic [63:0]   rq_addr,
  output logic [12:0]   rq_len,
  output logic [BW-1:0] rq_bytes,
  output logic [DW-1:0] rq_data,
  output logic          rb_valid,
  input  logic          rb_ready,
  output logic [23:0]   rb_tag,
  output logic [3:0]    rb_status,
  output logic [15:0]   rb_error,
  output logic [15:0]   rb_field,
  output logic [63:0]   rb_detail,
  output logic [63:0]   rb_bytes,
  output logic          idle
);
  typedef enum logic [2:0] {S_IDLE, S_CHECK, S_ATS, S_ATS_WAIT, S_RUN, S_RB} state_t;
  state_t state;

  logic [1023:0] cb_q;
  logic [23:0]   d_tag;
  logic [3:0]    d_kind;
  logic [31:0]   d_bytes;
  logic [63:0]   d_iova, d_phys, d_detail;
  logic [15:0]   d_error, d_field;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0]   d_pattern;  // DMI-only fields of the shared decoder
  logic [63:0]   d_src;
  /* verilator lint_on UNUSEDSIGNAL */

  cb_section_decode #(.IS_DMI(1'b0)) decode (
    .cb(cb_q), .mem_bytes(mem_bytes), .max_cb_bytes(max_cb_bytes), .tag(d_tag), .kind(d_kind),
    .bytes(d_bytes), .iova(d_iova), .pattern(d_pattern), .phys(d_phys), .src_phys(d_src),
    .error(d_error), .field(d_field), .detail(d_detail));

  logic [15:0] r_error, r_field;
  logic [63:0] r_detail;

  // Read-request side.
  logic [63:0] cur_host, cur_dev;
  logic [31:0] left;
  logic [12:0] room, piece;
  assign room  = mps - {1'b0, cur_host[11:0] & (mps[11:0] - 12'd1)};
  assign piece = left < {19'd0, room} ? left[12:0] : room;

  // Headers of the pieces in flight, in request order.
  logic [63:0] hdr_addr [OUTSTANDING];
  logic [12:0] hdr_len  [OUTSTANDING];
  logic [OW:0] hdr_head, hdr_tail;
  wire [OW:0] in_flight = hdr_tail - hdr_head;
  logic [FW-1:0] buffered;  // bytes of the pieces in flight
  wire  fits = buffered + FW'(piece) <= FW'(BUFFER_BYTES);
  logic        in_packet;  // the next rq beat continues a packet

  assign drq_valid = state == S_RUN && left != 32'd0 && in_flight < OUTSTANDING[OW:0] && fits;
  assign drq_addr  = cur_dev;
  assign drq_len   = piece;
  wire request = drq_valid && drq_ready;

  assign rq_valid = dr_valid && in_flight != '0;
  assign rq_sop   = !in_packet;
  assign rq_eop   = dr_last;
  assign rq_addr  = hdr_addr[hdr_head[OW-1:0]];
  assign rq_len   = hdr_len[hdr_head[OW-1:0]];
  assign rq_bytes = dr_bytes;
  assign rq_data  = dr_data;
  assign dr_ready = rq_ready && in_flight != '0;
  wire beat = rq_valid && rq_ready;

  assign cb_ready  = state == S_IDLE;
  assign ats_valid = state == S_ATS;
  assign ats_iova  = d_iova;
  assign ats_bytes = d_bytes;
  assign rb_valid  = state == S_RB;
  assign rb_tag    = d_tag;
  assign rb_status = r_error == ERR_NONE ? RB_GOOD : RB_ERROR;
  assign rb_error  = r_error;
  assign rb_field  = r_field;
  assign rb_detail = r_detail;
  assign rb_bytes  = r_error == ERR_NONE ? {32'd0, d_bytes} : 64'd0;
  assign idle      = state == S_IDLE;

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      state     <= S_IDLE;
      cb_q      <= '0;
      r_error   <= ERR_NONE;
      r_field   <= FIELD_NONE;
      r_detail  <= 64'd0;
      cur_host  <= 64'd0;
      cur_dev   <= 64'd0;
      left      <= 32'd0;
      hdr_head  <= '0;
      hdr_tail  <= '0;
      buffered  <= '0;
      in_packet <= 1'b0;
    end else begin
      if (request) begin
        hdr_addr[hdr_tail[OW-1:0]] <= cur_host;
        hdr_len[hdr_tail[OW-1:0]]  <= piece;
        cur_host <= cur_host + {51'd0, piece};
        cur_dev  <= cur_dev + {51'd0, piece};
        left     <= left - {19'd0, piece};
      end
      hdr_tail <= hdr_tail + {{OW{1'b0}}, request};
      if (beat) in_packet <= !rq_eop;
      hdr_head <= hdr_head + {{OW{1'b0}}, beat && rq_eop};
      buffered <= buffered + (request ? FW'(piece) : '0) - (beat && rq_eop ? FW'(rq_len) : '0);

      case (state)
        S_IDLE: if (cb_valid) begin
          cb_q     <= cb_data;
          r_error  <= ERR_NONE;
          r_field  <= FIELD_NONE;
          r_detail <= 64'd0;
          state    <= S_CHECK;
        end
        S_CHECK: begin
          if (d_error != ERR_NONE) begin
            r_error  <= d_error;
            r_field  <= d_field;
            r_detail <= d_detail;
            state    <= S_RB;
          end else if (d_kind == DMA_IMMEDIATE) begin
            state <= S_ATS;
          end else begin
            state <= S_RB;  // the contract allows only immediate DMO sections
          end
        end
        S_ATS: if (ats_ready) state <= S_ATS_WAIT;
        S_ATS_WAIT: if (ats_rsp_valid) begin
          if (ats_rsp_ok) begin
            cur_host <= d_iova;
            cur_dev  <= d_phys;
            left     <= d_bytes;
            state    <= S_RUN;
          end else begin
            r_error  <= ERR_IOMMU_FAULT;
            r_field  <= FIELD_DMO_HOST_IOVA;
            r_detail <= d_iova;
            state    <= S_RB;
          end
        end
        S_RUN: if (left == 32'd0 && in_flight == '0) state <= S_RB;
        S_RB: if (rb_ready) state <= S_IDLE;
        default: state <= S_IDLE;
      endcase
    end
  end
endmodule
