// The handshake of two valid/ready streams merged onto one, whole packets at a time. Both
// outputs that the pipelines share (RQ and RB) need the same guarantee, and it is easy to get
// subtly wrong twice: once a beat has been offered downstream, the choice of input must not
// change until that beat is taken, or the output would switch payload under a pending valid
// (the stream rule StreamChecker enforces); and a packet of several beats must not be
// interleaved with another.
//
// Contract: from_b is the choice for this cycle, and the user muxes the payload with it (the
// inputs' payloads differ in shape, and a packed payload port, 1119 bits for RQ, cost the
// verilated data path about 6% of its cycles per second). out_valid is the chosen input's
// valid, and only the chosen input sees out_ready; nothing is registered on the data path, so no
// latency is added. The choice is held while the last cycle's beat was offered and not taken,
// and from the first beat of a packet to its end (*_eop; tie it high where every beat is a
// packet). Otherwise it is made afresh each cycle: a when only a waits, b when only b waits;
// when both wait, a (ROUND_ROBIN 0) or the input that did not send the last packet
// (ROUND_ROBIN 1).
module stream_arbiter #(
  parameter bit ROUND_ROBIN = 1'b0
) (
  input  logic clk,
  input  logic rst_n,
  input  logic a_valid,
  output logic a_ready,
  input  logic a_eop,
  input  logic b_valid,
  output logic b_ready,
  input  logic b_eop,
  output logic out_valid,
  input  logic out_ready,
  output logic from_b
);
  logic sel_b, stalled, in_packet, prefer_b;
  wire  hold = stalled || in_packet;
  wire  eop  = from_b ? b_eop : a_eop;
  wire  take = out_valid && out_ready;

  assign from_b    = hold ? sel_b : (b_valid && (!a_valid || prefer_b));
  assign out_valid = from_b ? b_valid : a_valid;
  assign a_ready   = !from_b && out_ready;
  assign b_ready   = from_b && out_ready;

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      sel_b     <= 1'b0;
      stalled   <= 1'b0;
      in_packet <= 1'b0;
    end else begin
      sel_b   <= from_b;
      stalled <= out_valid && !out_ready;
      if (take) in_packet <= !eop;
    end
  end

  if (ROUND_ROBIN) begin : g_round_robin
    logic last_b;  // the last packet taken came from b
    always_ff @(posedge clk or negedge rst_n) begin
      if (!rst_n) last_b <= 1'b0;
      else if (take && eop) last_b <= from_b;
    end
    assign prefer_b = !last_b;
  end else begin : g_a_first
    assign prefer_b = 1'b0;
  end
endmodule
