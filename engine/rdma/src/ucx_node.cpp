#include "spyre_dma/rdma/ucx_node.hpp"

#include <ucp/api/ucp.h>

#include <poll.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace spyre_dma::rdma {
namespace {

// Transport bytes travel sealed: a tag, then the bytes, then a 64-bit FNV-1a hash of both. UCX
// parses a worker address or a packed key with no length to stop it, so bytes that are not what a
// node issued (a typo, a truncated file, another program's data) are refused before it sees them.
constexpr char kSealTag[4] = {'s', 'd', 'r', '1'};

std::uint64_t fnv(const char* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
  return h;
}

std::string seal(const void* bytes, std::size_t n) {
  std::string s(kSealTag, sizeof kSealTag);
  s.append(static_cast<const char*>(bytes), n);
  const std::uint64_t h = fnv(s.data(), s.size());
  s.append(reinterpret_cast<const char*>(&h), sizeof h);
  return s;
}

// The transport bytes inside a sealed field, or an error naming the field.
Status unseal(const char* field, const std::string& sealed, std::string_view* out) {
  if (sealed.size() <= sizeof kSealTag + sizeof(std::uint64_t) || std::memcmp(sealed.data(), kSealTag, sizeof kSealTag)) {
    return Status(ErrorCode::kRemoteAccess, std::string("remote handle: the ") + field + " is not one a node issued");
  }
  std::uint64_t h = 0;
  std::memcpy(&h, sealed.data() + sealed.size() - sizeof h, sizeof h);
  if (h != fnv(sealed.data(), sealed.size() - sizeof h)) {
    return Status(ErrorCode::kRemoteAccess, std::string("remote handle: the ") + field + " fails its checksum");
  }
  *out = std::string_view(sealed).substr(sizeof kSealTag, sealed.size() - sizeof kSealTag - sizeof h);
  return {};
}

// What a UCX status means to the caller.
Status from_ucs(ucs_status_t s, const std::string& what) {
  if (s == UCS_OK) return {};
  const std::string text = what + ": " + ucs_status_string(s);
  switch (s) {
    case UCS_ERR_CANCELED: return Status(ErrorCode::kWaitTimeout, text);
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_REJECTED:
    case UCS_ERR_NOT_CONNECTED:
    case UCS_ERR_IO_ERROR:
    case UCS_ERR_TIMED_OUT: return Status(ErrorCode::kPeerUnreachable, text);
    default: return Status(ErrorCode::kRemoteAccess, text);
  }
}

}  // namespace

struct UcxNode::Impl {
  struct Peer {
    ucp_ep_h ep = nullptr;
    Status failure;  // set once the connection failed: every later transfer fails with it
    std::map<std::string, ucp_rkey_h> rkeys;  // by sealed key
  };
  struct Region {
    ucp_mem_h memh;
    std::uint64_t base, size;
  };

  std::mutex mu;
  std::thread progress_thread;
  std::atomic<bool> stop{false};
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::string address;                   // sealed worker address
  std::map<std::string, Region> exposed;  // by sealed key
  std::map<std::string, std::unique_ptr<Peer>> peers;  // by sealed address
  // Transfers that finished with a continuation (Transfer::then) still to run: run by whoever
  // progressed the worker, once it has let go of mu (a continuation may post more transfers).
  std::vector<std::shared_ptr<Transfer::State>> ready;

  void run_ready();  // without mu

  static void on_peer_error(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* p = static_cast<Peer*>(arg);
    if (p->failure.ok()) p->failure = from_ucs(status, "the connection to the peer failed");
  }

  // The peer's connection and the unpacked key for `h`, made on first use. Under mu.
  Status reach(const RemoteHandle& h, Peer** peer, ucp_rkey_h* rkey) {
    auto it = peers.find(h.owner);
    if (it == peers.end()) {
      std::string_view addr;
      if (Status s = unseal("owner", h.owner, &addr); !s.ok()) return s;
      auto p = std::make_unique<Peer>();
      ucp_ep_params_t params{};
      params.field_mask =
          UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
      params.address = reinterpret_cast<const ucp_address_t*>(addr.data());
      params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
      params.err_handler.cb = &Impl::on_peer_error;
      params.err_handler.arg = p.get();
      if (ucs_status_t s = ucp_ep_create(worker, &params, &p->ep); s != UCS_OK) {
        return Status(ErrorCode::kPeerUnreachable, std::string("cannot connect to the peer: ") + ucs_status_string(s));
      }
      it = peers.emplace(h.owner, std::move(p)).first;
    }
    Peer& p = *it->second;
    if (!p.failure.ok()) return p.failure;
    auto k = p.rkeys.find(h.key);
    if (k == p.rkeys.end()) {
      std::string_view key;
      if (Status s = unseal("key", h.key, &key); !s.ok()) return s;
      ucp_rkey_h r = nullptr;
      if (ucs_status_t s = ucp_ep_rkey_unpack(p.ep, key.data(), &r); s != UCS_OK) {
        return Status(ErrorCode::kRemoteAccess, std::string("the peer's key does not unpack: ") + ucs_status_string(s));
      }
      k = p.rkeys.emplace(h.key, r).first;
    }
    *peer = &p;
    *rkey = k->second;
    return {};
  }

  // Closes every connection at once: its requests in flight complete (with an error), so the
  // transfers that hold the node let go of it. Under mu.
  void close_peers() {
    for (auto& [addr, p] : peers) {
      for (auto& [key, r] : p->rkeys) ucp_rkey_destroy(r);
      ucp_request_param_t param{};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = UCP_EP_CLOSE_FLAG_FORCE;
      void* req = ucp_ep_close_nbx(p->ep, &param);
      if (UCS_PTR_IS_PTR(req)) {
        // Bounded: a forced close completes locally.
        for (int i = 0; i < 1000000 && ucp_request_check_status(req) == UCS_INPROGRESS; ++i) ucp_worker_progress(worker);
        ucp_request_free(req);
      }
    }
    peers.clear();
  }

  ~Impl() {
    close_peers();
    for (auto& [key, r] : exposed) ucp_mem_unmap(context, r.memh);
    if (worker) ucp_worker_destroy(worker);
    if (context) ucp_cleanup(context);
  }
};

struct Transfer::State {
  std::shared_ptr<UcxNode::Impl> node;
  void* request = nullptr;  // the request whose completion is the transfer's (a get, or a put's flush)
  bool finished = false;
  Status result;
  std::string what;
  std::function<void(Status)> next;  // Transfer::then
  // While a request is pending the state keeps itself alive: its callback writes into it even if
  // every Transfer handle is gone.
  std::shared_ptr<State> self;

  static void on_done(void* request, ucs_status_t status, void* user) {
    auto* s = static_cast<State*>(user);
    s->finished = true;
    s->result = from_ucs(status, s->what);
    ucp_request_free(request);
    s->request = nullptr;
    const std::shared_ptr<State> keep = std::move(s->self);  // s lives until this returns
    if (s->next) s->node->ready.push_back(keep);
  }
  // Under node->mu.
  static void post(const std::shared_ptr<State>& s, ucs_status_ptr_t r) {
    if (r == nullptr) {
      s->finished = true;
    } else if (UCS_PTR_IS_ERR(r)) {
      s->finished = true;
      s->result = from_ucs(UCS_PTR_STATUS(r), s->what);
    } else {
      s->request = r;
      s->self = s;
    }
  }
};

void UcxNode::Impl::run_ready() {
  std::vector<std::shared_ptr<Transfer::State>> now;
  {
    std::lock_guard lock(mu);
    if (ready.empty()) return;
    now.swap(ready);
  }
  for (const auto& s : now) {
    const std::function<void(Status)> fn = std::move(s->next);
    fn(s->result);
  }
}

void Transfer::then(std::function<void(Status)> next) const {
  if (!state_ || !next) return;
  {
    std::lock_guard lock(state_->node->mu);
    if (!state_->finished) {
      state_->next = std::move(next);
      return;
    }
  }
  next(state_->result);
}

namespace {
std::shared_ptr<Transfer::State> failed(const std::shared_ptr<UcxNode::Impl>& node, Status s) {
  auto st = std::make_shared<Transfer::State>();
  st->node = node;
  st->finished = true;
  st->result = std::move(s);
  return st;
}

}  // namespace

bool Transfer::done() const {
  if (!state_) return true;
  bool finished;
  {
    std::lock_guard lock(state_->node->mu);
    if (!state_->finished) ucp_worker_progress(state_->node->worker);
    finished = state_->finished;
  }
  state_->node->run_ready();
  return finished;
}

Status Transfer::status() const {
  if (!state_) return Status(ErrorCode::kInvalidArgument, "transfer: not a transfer");
  std::lock_guard lock(state_->node->mu);
  return state_->finished ? state_->result : Status(ErrorCode::kWaitTimeout, state_->what + ": still in flight");
}

Status Transfer::wait(std::chrono::nanoseconds timeout) const {
  if (!state_) return Status(ErrorCode::kInvalidArgument, "transfer: not a transfer");
  const auto deadline = std::chrono::steady_clock::now() + std::min(timeout, std::chrono::nanoseconds(std::chrono::hours(24 * 365)));
  for (unsigned spins = 0;; ++spins) {
    state_->node->run_ready();
    {
      std::lock_guard lock(state_->node->mu);
      if (state_->finished) return state_->result;
      ucp_worker_progress(state_->node->worker);
      if (state_->finished) return state_->result;
      if (std::chrono::steady_clock::now() >= deadline) {
        // Cancelled, it completes with UCS_ERR_CANCELED (WaitTimeout) at the next progress.
        ucp_request_cancel(state_->node->worker, state_->request);
        for (int i = 0; i < 1000000 && !state_->finished; ++i) ucp_worker_progress(state_->node->worker);
        if (!state_->finished) return Status(ErrorCode::kWaitTimeout, state_->what + ": gave up after the timeout");
        return Status(ErrorCode::kWaitTimeout, state_->what + ": timed out and cancelled");
      }
    }
    if (spins > 64) std::this_thread::yield();
  }
}

UcxNode::UcxNode(Progress progress) : impl_(std::make_shared<Impl>()) {
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  // WAKEUP: the progress thread sleeps on the worker's event descriptor when nothing moves.
  params.features = UCP_FEATURE_RMA | (progress == Progress::kThread ? UCP_FEATURE_WAKEUP : 0);
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
    throw Error(ErrorCode::kPeerUnreachable, std::string("UCX: cannot read its configuration: ") + ucs_status_string(s));
  }
  const ucs_status_t init = ucp_init(&params, config, &impl_->context);
  ucp_config_release(config);
  if (init != UCS_OK) throw Error(ErrorCode::kPeerUnreachable, std::string("UCX: cannot start: ") + ucs_status_string(init));
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // impl_->mu serializes every call
  if (ucs_status_t s = ucp_worker_create(impl_->context, &wp, &impl_->worker); s != UCS_OK) {
    throw Error(ErrorCode::kPeerUnreachable, std::string("UCX: cannot create a worker: ") + ucs_status_string(s));
  }
  ucp_address_t* addr = nullptr;
  std::size_t len = 0;
  if (ucs_status_t s = ucp_worker_get_address(impl_->worker, &addr, &len); s != UCS_OK) {
    throw Error(ErrorCode::kPeerUnreachable, std::string("UCX: the worker has no address: ") + ucs_status_string(s));
  }
  impl_->address = seal(addr, len);
  ucp_worker_release_address(impl_->worker, addr);
  if (progress == Progress::kThread) {
    // Busy while there is work; once quiet, armed and asleep on the worker's event descriptor
    // until a peer's message (or 1 ms, to see the node close). An idle node costs nothing, and a
    // peer's transfer wakes it at once.
    int efd = -1;
    if (ucp_worker_get_efd(impl_->worker, &efd) != UCS_OK) efd = -1;
    // The thread holds the state: a node dropped from its own thread (the last holder of an
    // Endpoint's node can be an operation that ends there) lets it go instead of joining it.
    impl_->progress_thread = std::thread([impl = impl_, efd] {
      unsigned idle = 0;
      while (!impl->stop.load(std::memory_order_relaxed)) {
        unsigned n;
        {
          std::lock_guard lock(impl->mu);
          n = ucp_worker_progress(impl->worker);
        }
        impl->run_ready();
        idle = n ? 0 : idle + 1;
        if (idle < 64) {
          if (idle > 8) std::this_thread::yield();
          continue;
        }
        idle = 0;
        ucs_status_t armed;
        {
          std::lock_guard lock(impl->mu);
          armed = ucp_worker_arm(impl->worker);  // UCS_ERR_BUSY: events came meanwhile
        }
        if (armed != UCS_OK) continue;
        if (efd >= 0) {
          pollfd p{efd, POLLIN, 0};
          (void)::poll(&p, 1, 1);
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      }
    });
  }
}

UcxNode::~UcxNode() {
  impl_->stop = true;
  if (impl_->progress_thread.joinable()) {
    if (impl_->progress_thread.get_id() == std::this_thread::get_id()) impl_->progress_thread.detach();
    else impl_->progress_thread.join();
  }
  std::lock_guard lock(impl_->mu);
  impl_->close_peers();
}

const std::string& UcxNode::address() const noexcept { return impl_->address; }

RemoteHandle UcxNode::expose(void* base, std::uint64_t size) {
  if (!base || size == 0) throw InvalidArgument("expose: a range needs a base and a size above 0");
  std::lock_guard lock(impl_->mu);
  ucp_mem_map_params_t mp{};
  mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  mp.address = base;
  mp.length = size;
  ucp_mem_h memh = nullptr;
  if (ucs_status_t s = ucp_mem_map(impl_->context, &mp, &memh); s != UCS_OK) {
    throw Error(ErrorCode::kOutOfMemory, std::string("expose: UCX cannot register the range: ") + ucs_status_string(s));
  }
  void* packed = nullptr;
  std::size_t len = 0;
  if (ucs_status_t s = ucp_rkey_pack(impl_->context, memh, &packed, &len); s != UCS_OK) {
    ucp_mem_unmap(impl_->context, memh);
    throw Error(ErrorCode::kOutOfMemory, std::string("expose: UCX cannot pack the key: ") + ucs_status_string(s));
  }
  RemoteHandle h;
  h.owner = impl_->address;
  h.base = reinterpret_cast<std::uint64_t>(base);
  h.size = size;
  h.key = seal(packed, len);
  ucp_rkey_buffer_release(packed);
  impl_->exposed[h.key] = Impl::Region{memh, h.base, size};
  return h;
}

void UcxNode::start_put(const RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
                        Done done) {
  put(dst, offset, src, bytes).then(std::move(done));
}

void UcxNode::start_get(void* dst, const RemoteHandle& src, std::uint64_t offset, std::uint64_t bytes, Done done) {
  get(dst, src, offset, bytes).then(std::move(done));
}

void UcxNode::revoke(const RemoteHandle& handle) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->exposed.find(handle.key);
  if (it == impl_->exposed.end() || handle.owner != impl_->address) {
    throw InvalidArgument("revoke: the handle is not one this node exposed (or it was revoked already)");
  }
  ucp_mem_unmap(impl_->context, it->second.memh);
  impl_->exposed.erase(it);
}

// A transfer to `h`'s owner about to be posted: the connection and key reached, its state made, and
// the request parameters that complete it. Under impl->mu.
struct UcxNode::Posting {
  Impl::Peer* peer = nullptr;
  ucp_rkey_h rkey = nullptr;
  std::shared_ptr<Transfer::State> state;
  ucp_request_param_t param{};
  Status error;

  Posting(const std::shared_ptr<Impl>& impl, const RemoteHandle& h, std::string what) {
    error = impl->reach(h, &peer, &rkey);
    state = std::make_shared<Transfer::State>();
    state->node = impl;
    state->what = std::move(what);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &Transfer::State::on_done;
    param.user_data = state.get();
  }
  Transfer post(ucs_status_ptr_t request) {
    Transfer::State::post(state, request);
    return Transfer(state);
  }
};

Transfer UcxNode::put(const RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
                      Completion completion) {
  if (Status s = dst.check("put", offset, bytes); !s.ok()) return Transfer(failed(impl_, s));
  if (!src) return Transfer(failed(impl_, Status(ErrorCode::kInvalidArgument, "put: no source")));
  std::lock_guard lock(impl_->mu);
  Posting p(impl_, dst, "put of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset));
  if (!p.error.ok()) return Transfer(failed(impl_, p.error));
  if (completion == Completion::kLocal) {
    return p.post(ucp_put_nbx(p.peer->ep, src, bytes, dst.base + offset, p.rkey, &p.param));
  }
  ucp_request_param_t none{};
  ucs_status_ptr_t r = ucp_put_nbx(p.peer->ep, src, bytes, dst.base + offset, p.rkey, &none);
  if (UCS_PTR_IS_ERR(r)) return Transfer(failed(impl_, from_ucs(UCS_PTR_STATUS(r), p.state->what)));
  if (r) ucp_request_free(r);  // released when done; the flush below is what completes the transfer
  // The flush completes once every earlier put on the connection is in the peer's memory.
  return p.post(ucp_ep_flush_nbx(p.peer->ep, &p.param));
}

Transfer UcxNode::flush(const RemoteHandle& peer) {
  std::lock_guard lock(impl_->mu);
  Posting p(impl_, peer, "flush");
  if (!p.error.ok()) return Transfer(failed(impl_, p.error));
  return p.post(ucp_ep_flush_nbx(p.peer->ep, &p.param));
}

Transfer UcxNode::get(void* dst, const RemoteHandle& src, std::uint64_t offset, std::uint64_t bytes) {
  if (Status s = src.check("get", offset, bytes); !s.ok()) return Transfer(failed(impl_, s));
  if (!dst) return Transfer(failed(impl_, Status(ErrorCode::kInvalidArgument, "get: no destination")));
  std::lock_guard lock(impl_->mu);
  Posting p(impl_, src, "get of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset));
  if (!p.error.ok()) return Transfer(failed(impl_, p.error));
  return p.post(ucp_get_nbx(p.peer->ep, dst, bytes, src.base + offset, p.rkey, &p.param));
}

Status UcxNode::put(const RemoteHandle& dst, std::uint64_t offset, const void* src, std::uint64_t bytes,
                    std::chrono::nanoseconds timeout) {
  return put(dst, offset, src, bytes).wait(timeout);
}

Status UcxNode::get(void* dst, const RemoteHandle& src, std::uint64_t offset, std::uint64_t bytes,
                    std::chrono::nanoseconds timeout) {
  return get(dst, src, offset, bytes).wait(timeout);
}

bool UcxNode::progress() {
  unsigned n;
  {
    std::lock_guard lock(impl_->mu);
    n = ucp_worker_progress(impl_->worker);
  }
  impl_->run_ready();
  return n != 0;
}

}  // namespace spyre_dma::rdma
