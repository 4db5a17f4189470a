// The DMAI data path. CBs of the DMAI pipeline are issued one at a time and drain several at a
// time: host copies (immediate) are checked (byte count, XLAT, device memory bounds, then the
// IOMMU through the ATS port) and read with MRd requests cut at MRRS (which also keeps them
// inside 4 KiB pages, MRRS <= 4096) using a tag table; once a CB's last request is out, the next
// CB is taken while its completions still arrive (in any order, each written to device memory at
// the address its tag and byte offset give). Fills and device copies go to the memory controller
// as one command, the next CB waiting for its ack. Each CB in flight holds a slot (its tag, byte
// count, first failure, requests outstanding, last memory write, the device range it writes); a
// CB that writes (or copies from) device memory an unfinished older CB writes waits for it, so
// memory sees the CBs' writes in order. RBs leave in CB order, each once its CB's tags have
// retired and its device-memory writes are acked (acks come in order).
module dmai_engine
  import spyre_dma_pkg::*;
#(
  parameter int DATA_BYTES = 128,
  parameter int TAGS       = 256,
  parameter int SLOTS      = 16,   // CBs in flight: the one issuing and those draining
  localparam int DW        = DATA_BYTES * 8,
  localparam int TAG_W     = $clog2(TAGS),
  localparam int SLOT_W    = $clog2(SLOTS),
  localparam int BW        = $clog2(DATA_BYTES) + 1
) (
  input  logic             clk,
  input  logic             rst_n,
  input  logic [63:0]      timestamp,      // the device's clock, stamped into rb_end
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
  // Device memory writes; one ack per burst (a burst ends with dw_last), in burst order.
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
  output logic [63:0]      rb_end,         // when the CB's work was done (it may wait for older RBs)
  output logic             idle
);
  typedef enum logic [3:0] {
    S_INIT, S_IDLE, S_CHECK, S_HAZARD, S_ATS, S_ATS_WAIT, S_ISSUE, S_CMD, S_CMD_WAIT
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

  // Tag table: a free list (FIFO of tag numbers) and, per tag, where its data goes and whose it is.
  logic [TAG_W-1:0]  free_list [TAGS];
  logic [TAG_W:0]    free_head, free_tail;  // free-running; count = tail - head
  logic [TAGS-1:0]   busy;
  logic [63:0]       tag_dev  [TAGS];
  logic [63:0]       tag_host [TAGS];
  logic [12:0]       tag_left [TAGS];
  logic [SLOT_W-1:0] tag_slot [TAGS];
  logic [TAG_W:0]    outstanding;             // tags in flight, all slots
  logic [TAG_W:0]    init_count;

  // CB slots, a ring in CB order: [head, tail) are in flight, `cur` is the one issuing.
  logic [SLOT_W:0]   head, tail;              // free-running
  logic [SLOT_W-1:0] cur;
  logic [23:0]       s_tag    [SLOTS];
  logic [31:0]       s_bytes  [SLOTS];
  logic [63:0]       s_iova   [SLOTS];
  logic [15:0]       s_error  [SLOTS], s_field [SLOTS];  // the first failure stays
  logic [63:0]       s_detail [SLOTS];
  logic [TAG_W:0]    s_out    [SLOTS];        // its tags in flight
  logic [31:0]       s_burst  [SLOTS];        // burst_seq after its last device-memory write
  logic [SLOTS-1:0]  s_issued;                // every request out (or command acked, or refused)
  logic [SLOTS-1:0]  s_ended;                 // its work is done, at s_end
  logic [63:0]       s_end    [SLOTS];
  logic [63:0]       s_lo [SLOTS], s_hi [SLOTS];  // the device memory it writes, [lo, hi)
  logic [31:0]       burst_seq, ack_seq;      // device-memory bursts written and acked (free-running)

  // Request generation.
  logic [63:0] cur_host, cur_dev;
  logic [31:0] left;
  logic [12:0] piece;
  logic [12:0] room;

  logic [31:0]    idle_cycles;
  logic           flushing;
  logic [TAG_W:0] flush_index;

  // The next piece: up to the next MRRS boundary of the host address.
  assign room  = mrrs - {1'b0, cur_host[11:0] & (mrrs[11:0] - 12'd1)};
  assign piece = left < {19'd0, room} ? left[12:0] : room;

  wire tag_available = (free_tail != free_head) && outstanding < tag_limit;
  assign rq_valid = state == S_ISSUE && left != 32'd0 && tag_available && !flushing;
  assign rq_addr  = cur_host;
  assign rq_len   = piece;
  assign rq_tag   = free_list[free_head[TAG_W-1:0]];
  wire issue = rq_valid && rq_ready;

  // Completions: data beats of a live tag pass straight to device memory.
  wire rc_live    = busy[rc_tag];
  wire rc_good    = rc_status == CPL_SUCCESS && !rc_poisoned && rc_live;
  wire [SLOT_W-1:0] rc_slot = tag_slot[rc_tag];
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
  wire burst_done = dw_valid && dw_ready && dw_last;

  // The oldest CB: its RB leaves once it is issued, its tags retired and its writes acked.
  wire [SLOT_W:0]    in_flight = tail - head;
  wire [SLOT_W-1:0]  h = head[SLOT_W-1:0];
  wire head_writes_acked = $signed(s_burst[h] - ack_seq) <= 0;
  wire head_done = in_flight != '0 && s_issued[h] && s_out[h] == '0 && head_writes_acked && !flushing;
  wire head_waiting = in_flight != '0 && s_issued[h] && !head_done && !flushing;
  wire head_progress = (cpl && rc_live && rc_slot == h) || dw_ack;
  wire timed_out = timeout_cycles != 32'd0 && idle_cycles >= timeout_cycles;
  // Flushing a timed-out head: its tags return to the free list, one per cycle (not on a cycle
  // whose completion takes the free list's write port).
  wire [TAG_W-1:0] fi = flush_index[TAG_W-1:0];
  wire flush_free = flushing && busy[fi] && tag_slot[fi] == h && !cpl_ends;

  // Device memory is written in CB order: a CB waits (S_HAZARD) while an older CB whose work is
  // not done writes what it writes, or, for a device copy, what it reads.
  logic [SLOTS-1:0] live;
  logic dst_hazard, src_hazard;
  wire [63:0] dst_hi = d_phys + {32'd0, d_bytes};
  wire [63:0] src_hi = d_src + {32'd0, d_bytes};
  always_comb begin
    dst_hazard = 1'b0;
    src_hazard = 1'b0;
    for (int i = 0; i < SLOTS; i++) begin
      live[i] = (SLOT_W'(i) - h < in_flight[SLOT_W-1:0] || in_flight == SLOTS[SLOT_W:0]) &&
                SLOT_W'(i) != cur && !s_ended[i];
      if (live[i] && d_phys < s_hi[i] && s_lo[i] < dst_hi) dst_hazard = 1'b1;
      if (live[i] && d_src < s_hi[i] && s_lo[i] < src_hi) src_hazard = 1'b1;
    end
  end
  wire hazard = dst_hazard || (d_kind == DMA_DEVICE_COPY && src_hazard);

  assign cb_ready   = state == S_IDLE && in_flight != SLOTS[SLOT_W:0];
  assign ats_valid  = state == S_ATS;
  assign ats_iova   = d_iova;
  assign ats_bytes  = d_bytes;
  assign dc_valid   = state == S_CMD;
  assign dc_kind    = d_kind == DMA_DEVICE_COPY ? DC_COPY : DC_FILL32;
  assign dc_dst     = d_phys;
  assign dc_src     = d_src;
  assign dc_len     = d_bytes;
  assign dc_pattern = d_pattern;
  assign rb_valid   = head_done;
  assign rb_tag     = s_tag[h];
  assign rb_status  = s_error[h] == ERR_NONE ? RB_GOOD : RB_ERROR;
  assign rb_error   = s_error[h];
  assign rb_field   = s_field[h];
  assign rb_detail  = s_detail[h];
  assign rb_bytes   = s_error[h] == ERR_NONE ? {32'd0, s_bytes[h]} : 64'd0;
  assign rb_end     = s_ended[h] ? s_end[h] : timestamp;
  assign idle       = state == S_IDLE && in_flight == '0 && outstanding == '0 && ack_seq == burst_seq;

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      state       <= S_INIT;
      init_count  <= '0;
      free_head   <= '0;
      free_tail   <= '0;
      busy        <= '0;
      outstanding <= '0;
      head        <= '0;
      tail        <= '0;
      cur         <= '0;
      s_issued    <= '0;
      s_ended     <= '0;
      burst_seq   <= 32'd0;
      ack_seq     <= 32'd0;
      cb_q        <= '0;
      cur_host    <= 64'd0;
      cur_dev     <= 64'd0;
      left        <= 32'd0;
      idle_cycles <= 32'd0;
      flushing    <= 1'b0;
      flush_index <= '0;
      for (int i = 0; i < SLOTS; i++) s_out[i] <= '0;
    end else begin
      // Tag life: allocate on issue, retire with the request's last completion (or a flush).
      if (issue) begin
        busy[rq_tag]     <= 1'b1;
        tag_dev[rq_tag]  <= cur_dev;
        tag_host[rq_tag] <= cur_host;
        tag_left[rq_tag] <= piece;
        tag_slot[rq_tag] <= cur;
        cur_host         <= cur_host + {51'd0, piece};
        cur_dev          <= cur_dev + {51'd0, piece};
        left             <= left - {19'd0, piece};
      end
      if (cpl && rc_live) begin
        tag_left[rc_tag] <= after;
        if ((rc_status != CPL_SUCCESS || rc_poisoned) && s_error[rc_slot] == ERR_NONE) begin
          s_error[rc_slot]  <= ERR_PCIE_ERROR;
          s_field[rc_slot]  <= FIELD_DMI_HOST_IOVA;
          s_detail[rc_slot] <= rc_status != CPL_SUCCESS ? tag_host[rc_tag] : tag_host[rc_tag] + {51'd0, rc_offset};
        end
      end
      if (cpl_ends) begin
        busy[rc_tag] <= 1'b0;
        free_list[free_tail[TAG_W-1:0]] <= rc_tag;
      end else if (flush_free) begin
        busy[fi] <= 1'b0;
        free_list[free_tail[TAG_W-1:0]] <= fi;
      end
      free_head   <= free_head + {{TAG_W{1'b0}}, issue};
      free_tail   <= free_tail + {{TAG_W{1'b0}}, cpl_ends} + {{TAG_W{1'b0}}, flush_free};
      outstanding <= outstanding + {{TAG_W{1'b0}}, issue} - {{TAG_W{1'b0}}, cpl_ends} -
                     {{TAG_W{1'b0}}, flush_free};
      for (int i = 0; i < SLOTS; i++) begin
        s_out[i] <= s_out[i] + {{TAG_W{1'b0}}, issue && cur == SLOT_W'(i)} -
                    {{TAG_W{1'b0}}, cpl_ends && rc_slot == SLOT_W'(i)} -
                    {{TAG_W{1'b0}}, flush_free && h == SLOT_W'(i)};
      end
      if (burst_done) s_burst[rc_slot] <= burst_seq + 32'd1;
      burst_seq <= burst_seq + {31'd0, burst_done};
      ack_seq   <= ack_seq + {31'd0, dw_ack};

      // The completion timer watches the oldest CB once it has issued everything.
      idle_cycles <= (head_waiting && !head_progress) ? idle_cycles + 32'd1 : 32'd0;
      if (head_waiting && timed_out) begin
        if (s_error[h] == ERR_NONE) begin
          s_error[h]  <= ERR_COMPLETION_TIMEOUT;
          s_field[h]  <= FIELD_DMI_HOST_IOVA;
          s_detail[h] <= s_iova[h];
        end
        flushing    <= 1'b1;
        flush_index <= '0;
      end
      if (flushing && !cpl_ends) begin
        flush_index <= flush_index + 1'b1;
        if (flush_index == TAGS[TAG_W:0] - 1'b1) flushing <= 1'b0;
      end
      if (rb_valid && rb_ready) head <= head + 1'b1;
      // Each CB in flight is stamped the cycle its work is done, whatever is ahead of it.
      for (int i = 0; i < SLOTS; i++) begin
        if (SLOT_W'(i) - h < in_flight[SLOT_W-1:0] || in_flight == SLOTS[SLOT_W:0]) begin
          if (s_issued[i] && !s_ended[i] && s_out[i] == '0 && $signed(s_burst[i] - ack_seq) <= 0 &&
              !(flushing && SLOT_W'(i) == h)) begin
            s_ended[i] <= 1'b1;
            s_end[i]   <= timestamp;
          end
        end
      end

      case (state)
        S_INIT: begin  // every tag starts free
          free_list[init_count[TAG_W-1:0]] <= init_count[TAG_W-1:0];
          init_count <= init_count + 1'b1;
          if (init_count == TAGS[TAG_W:0] - 1'b1) begin
            free_tail <= TAGS[TAG_W:0];
            state     <= S_IDLE;
          end
        end
        S_IDLE: if (cb_valid && cb_ready) begin
          cb_q                       <= cb_data;
          cur                        <= tail[SLOT_W-1:0];
          s_error[tail[SLOT_W-1:0]]  <= ERR_NONE;
          s_field[tail[SLOT_W-1:0]]  <= FIELD_NONE;
          s_detail[tail[SLOT_W-1:0]] <= 64'd0;
          s_burst[tail[SLOT_W-1:0]]  <= burst_seq + {31'd0, burst_done};
          s_issued[tail[SLOT_W-1:0]] <= 1'b0;
          s_ended[tail[SLOT_W-1:0]]  <= 1'b0;
          tail                       <= tail + 1'b1;
          state                      <= S_CHECK;
        end
        S_CHECK: begin
          s_tag[cur]   <= d_tag;
          s_bytes[cur] <= d_bytes;
          s_iova[cur]  <= d_iova;
          s_lo[cur]    <= d_phys;
          s_hi[cur]    <= d_error != ERR_NONE ? d_phys : dst_hi;
          if (d_error != ERR_NONE) begin
            s_error[cur]  <= d_error;
            s_field[cur]  <= d_field;
            s_detail[cur] <= d_detail;
            s_issued[cur] <= 1'b1;
            state         <= S_IDLE;
          end else begin
            state <= S_HAZARD;
          end
        end
        S_HAZARD: if (!hazard) state <= d_kind == DMA_IMMEDIATE ? S_ATS : S_CMD;
        S_ATS: if (ats_ready) state <= S_ATS_WAIT;
        S_ATS_WAIT: if (ats_rsp_valid) begin
          if (ats_rsp_ok) begin
            cur_host <= d_iova;
            cur_dev  <= d_phys;
            left     <= d_bytes;
            state    <= S_ISSUE;
          end else begin
            s_error[cur]  <= ERR_IOMMU_FAULT;
            s_field[cur]  <= FIELD_DMI_HOST_IOVA;
            s_detail[cur] <= d_iova;
            s_issued[cur] <= 1'b1;
            state         <= S_IDLE;
          end
        end
        S_ISSUE: if (left == 32'd0 || (issue && left == {19'd0, piece})) begin
          s_issued[cur] <= 1'b1;
          state         <= S_IDLE;
        end
        S_CMD: if (dc_ready) state <= S_CMD_WAIT;
        S_CMD_WAIT: if (dc_ack) begin
          s_issued[cur] <= 1'b1;
          state         <= S_IDLE;
        end
        default: state <= S_IDLE;
      endcase
    end
  end
endmodule
