// The DMAI data path: one CB at a time from the DMAI pipeline. Host copies (immediate) are
// checked (byte count, XLAT, device memory bounds, then the IOMMU through the ATS port), read
// with MRd requests cut at MRRS (which also keeps them inside 4 KiB pages, MRRS <= 4096) using
// a tag table, and their completions, in any order, are written to device memory at the address
// their tag and byte offset give. Fills and device copies go to the memory controller as one
// command. The RB leaves once every tag has retired and every device-memory write is done.
module dmai_engine
  import spyre_dma_pkg::*;
#(
  parameter int DATA_BYTES = 128,
  parameter int TAGS       = 256,
  localparam int DW        = DATA_BYTES * 8,
  localparam int TAG_W     = $clog2(TAGS),
  localparam int BW        = $clog2(DATA_BYTES) + 1
) (
  input  logic             clk,
  input  logic             rst_n,
  // Configuration (register port).
  input  logic [63:0]      mem_bytes,
  input  logic [31:0]      max_cb_bytes,
  input  logic [12:0]      mrrs,           // bytes, power of two <= 4096
  input  logic [TAG_W:0]   tag_limit,      // 1..TAGS
  input  logic [31:0]      timeout_cycles, // completion timer; 0: off
  // CBs.
  input  logic             cb_valid,
  output logic             cb_ready,
  input  logic [1023:0]    cb_data,
  // IOMMU check (ATS): request, then one response.
  output logic             ats_valid,
  input  logic             ats_ready,
  output logic [63:0]      ats_iova,
  output logic [31:0]      ats_bytes,
  input  logic             ats_rsp_valid,
  input  logic             ats_rsp_ok,
  // Read requests (single-beat MRd).
  output logic             rq_valid,
  input  logic             rq_ready,
  output logic [63:0]      rq_addr,
  output logic [12:0]      rq_len,
  output logic [TAG_W-1:0] rq_tag,
  // Completions: beats of CplD TLPs; a beat with an error status and no data ends its request.
  input  logic             rc_valid,
  output logic             rc_ready,
  input  logic [TAG_W-1:0] rc_tag,
  input  logic [12:0]      rc_offset,      // of the beat's first byte within its request
  input  logic [BW-1:0]    rc_bytes,       // valid bytes from lane 0
  input  logic [1:0]       rc_status,
  input  logic             rc_poisoned,
  input  logic             rc_eop,         // last beat of a CplD
  input  logic [DW-1:0]    rc_data,
  // Device memory writes; one ack per burst (a burst ends with dw_last).
  output logic             dw_valid,
  input  logic             dw_ready,
  output logic [63:0]      dw_addr,
  output logic [BW-1:0]    dw_bytes,
  output logic             dw_last,
  output logic [DW-1:0]    dw_data,
  input  logic             dw_ack,
  // Device memory commands (fill, copy); one ack each.
  output logic             dc_valid,
  input  logic             dc_ready,
  output logic             dc_kind,
  output logic [63:0]      dc_dst,
  output logic [63:0]      dc_src,
  output logic [31:0]      dc_len,
  output logic [31:0]      dc_pattern,
  input  logic             dc_ack,
  // Response blocks.
  output logic             rb_valid,
  input  logic             rb_ready,
  output logic [23:0]      rb_tag,
  output logic [3:0]       rb_status,
  output logic [15:0]      rb_error,
  output logic [15:0]      rb_field,
  output logic [63:0]      rb_detail,
  output logic [63:0]      rb_bytes,
  output logic             idle
);
  typedef enum logic [3:0] {
    S_INIT, S_IDLE, S_CHECK, S_ATS, S_ATS_WAIT, S_ISSUE, S_WAIT, S_FLUSH, S_CMD, S_CMD_WAIT, S_RB
  } state_t;
  state_t state;

  logic [1023:0] cb_q;
  logic [23:0]   d_tag;
  logic [3:0]    d_kind;
  logic [31:0]   d_bytes, d_pattern;
  logic [63:0]   d_iova, d_phys, d_src, d_detail;
  logic [15:0]   d_error, d_field;

  cb_section_decode #(.IS_DMI(1'b1)) decode (
    .cb(cb_q), .mem_bytes(mem_bytes), .max_cb_bytes(max_cb_bytes), .tag(d_tag), .kind(d_kind),
    .bytes(d_bytes), .iova(d_iova), .pattern(d_pattern), .phys(d_phys), .src_phys(d_src),
    .error(d_error), .field(d_field), .detail(d_detail));

  // Tag table: a free list (FIFO of tag numbers) and, per tag, where its data goes.
  logic [TAG_W-1:0] free_list [TAGS];
  logic [TAG_W:0]   free_head, free_tail;  // free-running; count = tail - head
  logic [TAGS-1:0]  busy;
  logic [63:0]      tag_dev  [TAGS];
  logic [63:0]      tag_host [TAGS];
  logic [12:0]      tag_left [TAGS];
  logic [TAG_W:0]   outstanding;
  logic [TAG_W:0]   init_count;

  // Request generation.
  logic [63:0] cur_host, cur_dev;
  logic [31:0] left;
  logic [12:0] piece;
  logic [12:0] room;

  // Result of the CB so far (the first failure stays).
  logic [15:0] r_error, r_field;
  logic [63:0] r_detail;
  logic [31:0] bursts_pending;
  logic [31:0] idle_cycles;
  logic [TAG_W:0] flush_index;

  // The next piece: up to the next MRRS boundary of the host address.
  assign room  = mrrs - {1'b0, cur_host[11:0] & (mrrs[11:0] - 12'd1)};
  assign piece = left < {19'd0, room} ? left[12:0] : room;

  wire tag_available = (free_tail != free_head) && outstanding < tag_limit;
  assign rq_valid = state == S_ISSUE && left != 32'd0 && tag_available;
  assign rq_addr  = cur_host;
  assign rq_len   = piece;
  assign rq_tag   = free_list[free_head[TAG_W-1:0]];
  wire issue = rq_valid && rq_ready;

  // Completions: data beats of a live tag pass straight to device memory.
  wire rc_live    = busy[rc_tag];
  wire rc_good    = rc_status == CPL_SUCCESS && !rc_poisoned && rc_live;
  assign dw_valid = rc_valid && rc_good;
  assign dw_addr  = tag_dev[rc_tag] + {51'd0, rc_offset};
  assign dw_bytes = rc_bytes;
  assign dw_last  = rc_eop;
  assign dw_data  = rc_data;
  assign rc_ready = rc_good ? dw_ready : 1'b1;
  wire cpl = rc_valid && rc_ready;
  // The request ends with its last byte, or at once with an error status (no data follows).
  wire [12:0] after = tag_left[rc_tag] - {{(13 - BW){1'b0}}, rc_bytes};
  wire cpl_ends = cpl && rc_live && (rc_status != CPL_SUCCESS || after == 13'd0);

  assign cb_ready   = state == S_IDLE;
  assign ats_valid  = state == S_ATS;
  assign ats_iova   = d_iova;
  assign ats_bytes  = d_bytes;
  assign dc_valid   = state == S_CMD;
  assign dc_kind    = d_kind == DMA_DEVICE_COPY ? DC_COPY : DC_FILL32;
  assign dc_dst     = d_phys;
  assign dc_src     = d_src;
  assign dc_len     = d_bytes;
  assign dc_pattern = d_pattern;
  assign rb_valid   = state == S_RB;
  assign rb_tag     = d_tag;
  assign rb_status  = r_error == ERR_NONE ? RB_GOOD : RB_ERROR;
  assign rb_error   = r_error;
  assign rb_field   = r_field;
  assign rb_detail  = r_detail;
  assign rb_bytes   = r_error == ERR_NONE ? {32'd0, d_bytes} : 64'd0;
  assign idle       = state == S_IDLE && outstanding == '0 && bursts_pending == 32'd0;

  wire burst_done = dw_valid && dw_ready && dw_last;
  wire timed_out  = timeout_cycles != 32'd0 && idle_cycles >= timeout_cycles;

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      state          <= S_INIT;
      init_count     <= '0;
      free_head      <= '0;
      free_tail      <= '0;
      busy           <= '0;
      outstanding    <= '0;
      bursts_pending <= 32'd0;
      cb_q           <= '0;
      cur_host       <= 64'd0;
      cur_dev        <= 64'd0;
      left           <= 32'd0;
      r_error        <= ERR_NONE;
      r_field        <= FIELD_NONE;
      r_detail       <= 64'd0;
      idle_cycles    <= 32'd0;
      flush_index    <= '0;
    end else begin
      // Tag life: allocate on issue, retire with the request's last completion.
      if (issue) begin
        busy[rq_tag]     <= 1'b1;
        tag_dev[rq_tag]  <= cur_dev;
        tag_host[rq_tag] <= cur_host;
        tag_left[rq_tag] <= piece;
        cur_host         <= cur_host + {51'd0, piece};
        cur_dev          <= cur_dev + {51'd0, piece};
        left             <= left - {19'd0, piece};
      end
      if (cpl && rc_live) begin
        tag_left[rc_tag] <= after;
        if ((rc_status != CPL_SUCCESS || rc_poisoned) && r_error == ERR_NONE) begin
          r_error  <= ERR_PCIE_ERROR;
          r_field  <= FIELD_DMI_HOST_IOVA;
          r_detail <= rc_status != CPL_SUCCESS ? tag_host[rc_tag] : tag_host[rc_tag] + {51'd0, rc_offset};
        end
      end
      if (cpl_ends) begin
        busy[rc_tag] <= 1'b0;
        free_list[free_tail[TAG_W-1:0]] <= rc_tag;
      end
      free_head   <= free_head + {{TAG_W{1'b0}}, issue};
      free_tail   <= free_tail + {{TAG_W{1'b0}}, cpl_ends};
      outstanding <= outstanding + {{TAG_W{1'b0}}, issue} - {{TAG_W{1'b0}}, cpl_ends};
      bursts_pending <= bursts_pending + {31'd0, burst_done} - {31'd0, dw_ack};
      idle_cycles <= (state == S_WAIT && !cpl && !dw_ack) ? idle_cycles + 32'd1 : 32'd0;

      case (state)
        S_INIT: begin  // every tag starts free
          free_list[init_count[TAG_W-1:0]] <= init_count[TAG_W-1:0];
          init_count <= init_count + 1'b1;
          if (init_count == TAGS[TAG_W:0] - 1'b1) begin
            free_tail <= TAGS[TAG_W:0];
            state     <= S_IDLE;
          end
        end
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
            state <= S_CMD;
          end
        end
        S_ATS: if (ats_ready) state <= S_ATS_WAIT;
        S_ATS_WAIT: if (ats_rsp_valid) begin
          if (ats_rsp_ok) begin
            cur_host <= d_iova;
            cur_dev  <= d_phys;
            left     <= d_bytes;
            state    <= S_ISSUE;
          end else begin
            r_error  <= ERR_IOMMU_FAULT;
            r_field  <= FIELD_DMI_HOST_IOVA;
            r_detail <= d_iova;
            state    <= S_RB;
          end
        end
        S_ISSUE: if (left == 32'd0 || (issue && left == {19'd0, piece})) state <= S_WAIT;
        S_WAIT: begin
          if (outstanding == '0 && bursts_pending == 32'd0 && !burst_done) state <= S_RB;
          else if (timed_out) begin
            // The completion timer: the CB fails and its tags return to the free list.
            if (r_error == ERR_NONE) begin
              r_error  <= ERR_COMPLETION_TIMEOUT;
              r_field  <= FIELD_DMI_HOST_IOVA;
              r_detail <= d_iova;
            end
            flush_index <= '0;
            state       <= S_FLUSH;
          end
        end
        S_FLUSH: begin  // one tag per cycle; completions are not accepted meanwhile (rare path)
          if (busy[flush_index[TAG_W-1:0]] && !cpl_ends) begin
            busy[flush_index[TAG_W-1:0]] <= 1'b0;
            free_list[free_tail[TAG_W-1:0]] <= flush_index[TAG_W-1:0];
            free_tail   <= free_tail + 1'b1;
            outstanding <= outstanding - 1'b1;
          end
          if (!cpl_ends) flush_index <= flush_index + 1'b1;
          if (flush_index == TAGS[TAG_W:0] - 1'b1 && !cpl_ends) state <= S_WAIT;
        end
        S_CMD: if (dc_ready) state <= S_CMD_WAIT;
        S_CMD_WAIT: if (dc_ack) state <= S_RB;
        S_RB: if (rb_ready) state <= S_IDLE;
        default: state <= S_IDLE;
      endcase
    end
  end
endmodule
