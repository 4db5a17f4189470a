// The DMA controller's data path for the DMAI and DMAO pipelines: CBs in, PCIe requests out on a
// requester-request stream (MRd and MWr, as a hard IP's RQ interface), completions in on a
// requester-completion stream (RC), device memory through write, read and command ports, the
// IOMMU through one ATS port per pipeline, response blocks out. Configuration arrives through a
// register port. rtl_bridge/README.md documents every interface.
module spyre_dma_core
  import spyre_dma_pkg::*;
#(
  parameter int DATA_BYTES  = 128,  // bytes per beat of every data stream
  parameter int TAGS        = 256,  // read tag table (outstanding MRd)
  parameter int MAX_PAYLOAD = 4096, // largest MPS and MRRS the register port accepts
  // The DMAO read buffer: device memory reads (pieces) in flight at most, and their bytes. The
  // bridge's build sets both from the SystemC data path's constants (rtl_bridge/CMakeLists.txt).
  parameter int OUTSTANDING = 64,
  parameter int READ_BUFFER = 8192,
  localparam int DW         = DATA_BYTES * 8,
  localparam int TAG_W      = $clog2(TAGS),
  localparam int BW         = $clog2(DATA_BYTES) + 1
) (
  input  logic             clk,
  input  logic             rst_n,
  input  logic [63:0]      timestamp,   // the device's clock (the bridge drives simulated ps)
  // Register port: one write per cycle.
  input  logic             cfg_valid,
  input  logic [2:0]       cfg_addr,
  input  logic [63:0]      cfg_data,
  // CB streams, one per pipeline.
  input  logic             dmai_cb_valid,
  output logic             dmai_cb_ready,
  input  logic [1023:0]    dmai_cb_data,
  input  logic             dmao_cb_valid,
  output logic             dmao_cb_ready,
  input  logic [1023:0]    dmao_cb_data,
  // ATS (IOMMU) ports, one per pipeline.
  output logic             dmai_ats_valid,
  input  logic             dmai_ats_ready,
  output logic [63:0]      dmai_ats_iova,
  output logic [31:0]      dmai_ats_bytes,
  input  logic             dmai_ats_rsp_valid,
  input  logic             dmai_ats_rsp_ok,
  output logic             dmao_ats_valid,
  input  logic             dmao_ats_ready,
  output logic [63:0]      dmao_ats_iova,
  output logic [31:0]      dmao_ats_bytes,
  input  logic             dmao_ats_rsp_valid,
  input  logic             dmao_ats_rsp_ok,
  // Requester request stream. A hard IP takes posted (MWr) and non-posted (MRd) requests
  // against separate transmit credits, so each class has its own ready; a beat is offered only
  // when its class's ready is high, and it is taken on that cycle.
  output logic             rq_valid,
  input  logic             rq_ready,    // posted: an MWr beat is taken
  input  logic             rq_np_ready, // non-posted: an MRd is taken
  output logic             rq_type,     // RQ_MRD or RQ_MWR
  output logic             rq_sop,
  output logic             rq_eop,
  output logic [63:0]      rq_addr,
  output logic [12:0]      rq_len,
  output logic [TAG_W-1:0] rq_tag,      // MRd
  output logic [BW-1:0]    rq_bytes,    // MWr: bytes in this beat
  output logic [DW-1:0]    rq_data,
  // Requester completion stream.
  input  logic             rc_valid,
  output logic             rc_ready,
  input  logic [TAG_W-1:0] rc_tag,
  input  logic [12:0]      rc_offset,
  input  logic [BW-1:0]    rc_bytes,
  input  logic [1:0]       rc_status,
  input  logic             rc_poisoned,
  input  logic             rc_eop,
  input  logic [DW-1:0]    rc_data,
  // Device memory write port.
  output logic             dw_valid,
  input  logic             dw_ready,
  output logic [63:0]      dw_addr,
  output logic [BW-1:0]    dw_bytes,
  output logic             dw_last,
  output logic [DW-1:0]    dw_data,
  input  logic             dw_ack,
  // Device memory read port.
  output logic             drq_valid,
  input  logic             drq_ready,
  output logic [63:0]      drq_addr,
  output logic [12:0]      drq_len,
  input  logic             dr_valid,
  output logic             dr_ready,
  input  logic [BW-1:0]    dr_bytes,
  input  logic             dr_last,
  input  logic [DW-1:0]    dr_data,
  // Device memory command port.
  output logic             dc_valid,
  input  logic             dc_ready,
  output logic             dc_kind,
  output logic [63:0]      dc_dst,
  output logic [63:0]      dc_src,
  output logic [31:0]      dc_len,
  output logic [31:0]      dc_pattern,
  input  logic             dc_ack,
  // Response blocks, both pipelines.
  output logic             rb_valid,
  input  logic             rb_ready,
  output logic [3:0]       rb_pipe,     // RB locator: 1 DMAI, 2 DMAO
  output logic [23:0]      rb_tag,
  output logic [3:0]       rb_status,
  output logic [15:0]      rb_error,
  output logic [15:0]      rb_field,
  output logic [63:0]      rb_detail,
  output logic [63:0]      rb_bytes,
  output logic [63:0]      rb_end,      // when the CB's work was done (DMAI; DMAO: the RB's cycle)
  output logic             idle
);
  // Register file (cfg_addr): 0 device memory bytes, 1 largest CB byte count, 2 MPS, 3 MRRS,
  // 4 tags in use (1..TAGS), 5 completion timer in cycles (0: off).
  logic [63:0] mem_bytes;
  logic [31:0] max_cb_bytes, timeout_cycles;
  logic [12:0] mps, mrrs;
  logic [TAG_W:0] tag_limit;

  localparam logic [12:0] PAYLOAD = 13'(MAX_PAYLOAD);
  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      mem_bytes      <= 64'd0;
      max_cb_bytes   <= 32'd0;
      mps            <= 13'd128;
      mrrs           <= 13'd128;
      tag_limit      <= (TAG_W + 1)'(TAGS);
      timeout_cycles <= 32'd0;
    end else if (cfg_valid) begin
      case (cfg_addr)
        3'd0: mem_bytes <= cfg_data;
        3'd1: max_cb_bytes <= cfg_data[31:0];
        3'd2: mps <= cfg_data[12:0] > PAYLOAD ? PAYLOAD : cfg_data[12:0];
        3'd3: mrrs <= cfg_data[12:0] > PAYLOAD ? PAYLOAD : cfg_data[12:0];
        3'd4: tag_limit <= cfg_data[TAG_W:0] > (TAG_W + 1)'(TAGS) ? (TAG_W + 1)'(TAGS) : cfg_data[TAG_W:0];
        3'd5: timeout_cycles <= cfg_data[31:0];
        default: ;
      endcase
    end
  end

  logic i_rq_valid, i_rq_ready, o_rq_valid, o_rq_ready;
  logic [63:0] i_rq_addr, o_rq_addr;
  logic [12:0] i_rq_len, o_rq_len;
  logic [TAG_W-1:0] i_rq_tag;
  logic o_rq_sop, o_rq_eop;
  logic [BW-1:0] o_rq_bytes;
  logic [DW-1:0] o_rq_data;
  logic i_rb_valid, i_rb_ready, o_rb_valid, o_rb_ready;
  logic [23:0] i_rb_tag, o_rb_tag;
  logic [3:0] i_rb_status, o_rb_status;
  logic [15:0] i_rb_error, o_rb_error, i_rb_field, o_rb_field;
  logic [63:0] i_rb_detail, o_rb_detail, i_rb_bytes, o_rb_bytes, i_rb_end;
  logic i_idle, o_idle;

  dmai_engine #(.DATA_BYTES(DATA_BYTES), .TAGS(TAGS)) dmai (
    .clk, .rst_n, .timestamp, .mem_bytes, .max_cb_bytes, .mrrs, .tag_limit, .timeout_cycles,
    .cb_valid(dmai_cb_valid), .cb_ready(dmai_cb_ready), .cb_data(dmai_cb_data),
    .ats_valid(dmai_ats_valid), .ats_ready(dmai_ats_ready), .ats_iova(dmai_ats_iova),
    .ats_bytes(dmai_ats_bytes), .ats_rsp_valid(dmai_ats_rsp_valid), .ats_rsp_ok(dmai_ats_rsp_ok),
    .rq_valid(i_rq_valid), .rq_ready(i_rq_ready), .rq_addr(i_rq_addr), .rq_len(i_rq_len), .rq_tag(i_rq_tag),
    .rc_valid, .rc_ready, .rc_tag, .rc_offset, .rc_bytes, .rc_status, .rc_poisoned, .rc_eop, .rc_data,
    .dw_valid, .dw_ready, .dw_addr, .dw_bytes, .dw_last, .dw_data, .dw_ack,
    .dc_valid, .dc_ready, .dc_kind, .dc_dst, .dc_src, .dc_len, .dc_pattern, .dc_ack,
    .rb_valid(i_rb_valid), .rb_ready(i_rb_ready), .rb_tag(i_rb_tag), .rb_status(i_rb_status),
    .rb_error(i_rb_error), .rb_field(i_rb_field), .rb_detail(i_rb_detail), .rb_bytes(i_rb_bytes),
    .rb_end(i_rb_end), .idle(i_idle));

  dmao_engine #(.DATA_BYTES(DATA_BYTES), .OUTSTANDING(OUTSTANDING), .BUFFER_BYTES(READ_BUFFER)) dmao (
    .clk, .rst_n, .mem_bytes, .max_cb_bytes, .mps,
    .cb_valid(dmao_cb_valid), .cb_ready(dmao_cb_ready), .cb_data(dmao_cb_data),
    .ats_valid(dmao_ats_valid), .ats_ready(dmao_ats_ready), .ats_iova(dmao_ats_iova),
    .ats_bytes(dmao_ats_bytes), .ats_rsp_valid(dmao_ats_rsp_valid), .ats_rsp_ok(dmao_ats_rsp_ok),
    .drq_valid, .drq_ready, .drq_addr, .drq_len, .dr_valid, .dr_ready, .dr_bytes, .dr_last, .dr_data,
    .rq_valid(o_rq_valid), .rq_ready(o_rq_ready), .rq_sop(o_rq_sop), .rq_eop(o_rq_eop),
    .rq_addr(o_rq_addr), .rq_len(o_rq_len), .rq_bytes(o_rq_bytes), .rq_data(o_rq_data),
    .rb_valid(o_rb_valid), .rb_ready(o_rb_ready), .rb_tag(o_rb_tag), .rb_status(o_rb_status),
    .rb_error(o_rb_error), .rb_field(o_rb_field), .rb_detail(o_rb_detail), .rb_bytes(o_rb_bytes),
    .idle(o_idle));

  // RQ: whole packets, alternating between the pipelines when both wait (an MRd is one beat).
  // A pipeline waits only for its own class's credits: a read request is not held behind the
  // posted writes the IP cannot take yet (nor a write behind a read), as the link orders them.
  logic rq_pick_o;
  stream_arbiter #(.ROUND_ROBIN(1'b1)) rq_arb (
    .clk, .rst_n,
    .a_valid(i_rq_valid && rq_np_ready), .a_ready(i_rq_ready), .a_eop(1'b1),
    .b_valid(o_rq_valid && rq_ready), .b_ready(o_rq_ready), .b_eop(o_rq_eop),
    .out_valid(rq_valid), .out_ready(rq_pick_o ? rq_ready : rq_np_ready), .from_b(rq_pick_o));
  assign rq_type  = rq_pick_o ? RQ_MWR : RQ_MRD;
  assign rq_sop   = rq_pick_o ? o_rq_sop : 1'b1;
  assign rq_eop   = rq_pick_o ? o_rq_eop : 1'b1;
  assign rq_addr  = rq_pick_o ? o_rq_addr : i_rq_addr;
  assign rq_len   = rq_pick_o ? o_rq_len : i_rq_len;
  assign rq_tag   = rq_pick_o ? '0 : i_rq_tag;
  assign rq_bytes = rq_pick_o ? o_rq_bytes : '0;
  assign rq_data  = rq_pick_o ? o_rq_data : '0;

  // RB: one beat per RB, DMAI first when both wait.
  logic rb_pick_o;
  stream_arbiter #(.ROUND_ROBIN(1'b0)) rb_arb (
    .clk, .rst_n,
    .a_valid(i_rb_valid), .a_ready(i_rb_ready), .a_eop(1'b1),
    .b_valid(o_rb_valid), .b_ready(o_rb_ready), .b_eop(1'b1),
    .out_valid(rb_valid), .out_ready(rb_ready), .from_b(rb_pick_o));
  assign rb_pipe   = rb_pick_o ? 4'd2 : 4'd1;
  assign rb_tag    = rb_pick_o ? o_rb_tag : i_rb_tag;
  assign rb_status = rb_pick_o ? o_rb_status : i_rb_status;
  assign rb_error  = rb_pick_o ? o_rb_error : i_rb_error;
  assign rb_field  = rb_pick_o ? o_rb_field : i_rb_field;
  assign rb_detail = rb_pick_o ? o_rb_detail : i_rb_detail;
  assign rb_bytes  = rb_pick_o ? o_rb_bytes : i_rb_bytes;
  assign rb_end    = rb_pick_o ? timestamp : i_rb_end;  // DMAO's work ends with its RB

  assign idle = i_idle && o_idle;
endmodule
