// The shared host pool (spyre_dma/host_pool.hpp, docs/engine.md "A shared host pool"): slots
// published only once their DMA completed, misses for everything else, and a writer killed at
// random points that never makes a reader accept torn or stale bytes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine_fixture.hpp"
#include "spyre_dma/host_pool.hpp"

namespace spyre_dma::test {
namespace {

std::string pool_name(const char* what) { return "spyre-dma-test-" + std::string(what) + "-" + std::to_string(::getpid()); }

// Removes the pool's name at the end of the test, however it ends.
struct PoolName {
  std::string name;
  explicit PoolName(const char* what) : name(pool_name(what)) { SharedHostPool::remove(name); }
  ~PoolName() { SharedHostPool::remove(name); }
};

// A pool of `slots` small slots and an engine it is registered with.
struct PoolRig {
  PoolName n;
  SharedHostPool pool;
  Rig rig;
  HostBuffer reg;
  PoolRig(const char* what, std::size_t slots)
      : n(what), pool(SharedHostPool::create(n.name, {slots, 4 * KiB})), rig(make_rig()),
        reg(pool.register_with(*rig.engine)) {}
  Engine& engine() { return *rig.engine; }
};

TEST(SharedHostPool, APublishedSlotIsReadOnTheHostAndFetchedToTheDevice) {
  PoolName n("basic");
  SharedHostPool pool = SharedHostPool::create(n.name, {4, 64 * KiB});
  EXPECT_EQ(pool.slots(), 4u);
  SharedHostPool other = SharedHostPool::open(n.name);  // as another process would
  EXPECT_EQ(other.slot_bytes(), 64 * KiB);

  Rig rig = make_rig();
  Engine& e = *rig.engine;
  HostBuffer reg = pool.register_with(e);
  Stream s = e.create_stream();
  DeviceBuffer src = e.allocate(64 * KiB), back = e.allocate(64 * KiB);
  const std::vector<std::uint8_t> data = pattern(40000, 11);
  SPYRE_ASSERT_OK(s.copy_h2d(src, 0, data.data(), data.size()).wait(kWait));

  std::vector<std::uint8_t> out(64 * KiB);
  EXPECT_FALSE(other.read(7, out.data(), out.size()));  // nothing published yet
  SharedHostPool::Offload o = pool.offload(s, 7, src, 0, data.size());
  ASSERT_EQ(o.offer, SharedHostPool::Offer::kStarted);
  SPYRE_ASSERT_OK(o.op.wait(kWait));
  EXPECT_EQ(other.published(), 1u);
  const auto got = other.read(7, out.data(), out.size());
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, data.size());
  EXPECT_TRUE(bytes_equal(data.data(), out.data(), data.size()));
  EXPECT_FALSE(other.read(7 + 4, out.data(), out.size()));  // the same slot, another key
  EXPECT_FALSE(other.read(7, out.data(), 100));              // does not fit

  std::optional<SharedHostPool::Fetch> f = other.fetch(s, 7, back, 0);
  ASSERT_TRUE(f);
  SPYRE_ASSERT_OK(f->op.wait(kWait));
  EXPECT_TRUE(f->valid());
  std::vector<std::uint8_t> dev(data.size());
  SPYRE_ASSERT_OK(s.copy_d2h(dev.data(), back, 0, dev.size()).wait(kWait));
  EXPECT_TRUE(bytes_equal(data.data(), dev.data(), data.size()));

  // A newer key of the same slot evicts it; the fetch taken before no longer counts.
  ASSERT_EQ(pool.offload(s, 7 + 4, src, 0, 128).offer, SharedHostPool::Offer::kStarted);
  SPYRE_ASSERT_OK(s.synchronize(kWait));
  EXPECT_FALSE(other.read(7, out.data(), out.size()));
  EXPECT_FALSE(f->valid());
  EXPECT_TRUE(other.read(7 + 4, out.data(), out.size()));
}

TEST(SharedHostPool, ASlotBeingWrittenIsAMissAndBusyForOtherWriters) {
  PoolRig r("busy", 2);
  Engine& e = r.engine();
  SharedHostPool& pool = r.pool;
  Stream a = e.create_stream(), b = e.create_stream();
  DeviceBuffer src = e.allocate(4 * KiB);
  TaskCompletion end_task;
  a.host_task([&](TaskCompletion done) { end_task = done; });  // holds a's copy back
  SharedHostPool::Offload held = pool.offload(a, 3, src, 0, 4096);
  ASSERT_EQ(held.offer, SharedHostPool::Offer::kStarted);
  std::vector<std::uint8_t> out(4096);
  EXPECT_FALSE(pool.read(3, out.data(), out.size()));
  EXPECT_EQ(pool.offload(b, 3, src, 0, 4096).offer, SharedHostPool::Offer::kBusy);
  EXPECT_EQ(pool.offload(b, 5, src, 0, 4096).offer, SharedHostPool::Offer::kBusy);  // same slot
  EXPECT_EQ(held.op.wait(std::chrono::milliseconds(20)).code(), ErrorCode::kWaitTimeout);
  end_task(Status());
  SPYRE_ASSERT_OK(held.op.wait(kWait));
  EXPECT_TRUE(pool.read(3, out.data(), out.size()));
}

TEST(SharedHostPool, AFailedCopyGivesTheSlotBackEmpty) {
  PoolRig r("fail", 2);
  Engine& e = r.engine();
  SharedHostPool& pool = r.pool;
  StreamOptions propagate;
  propagate.on_failure = FailurePolicy::kPropagate;
  Stream s = e.create_stream(propagate);
  DeviceBuffer src = e.allocate(4 * KiB);
  s.host_callback([] { throw std::runtime_error("no data"); });
  SharedHostPool::Offload o = pool.offload(s, 1, src, 0, 4096);
  ASSERT_EQ(o.offer, SharedHostPool::Offer::kStarted);
  EXPECT_EQ(o.op.wait(kWait).code(), ErrorCode::kDependencyFailed);
  std::vector<std::uint8_t> out(4096);
  EXPECT_FALSE(pool.read(1, out.data(), out.size()));
  EXPECT_EQ(pool.published(), 0u);
  (void)s.synchronize(kWait);
  SharedHostPool::Offload again = pool.offload(s, 1, src, 0, 4096);  // not left busy
  ASSERT_EQ(again.offer, SharedHostPool::Offer::kStarted);
  SPYRE_ASSERT_OK(again.op.wait(kWait));
  EXPECT_TRUE(pool.read(1, out.data(), out.size()));
}

TEST(SharedHostPool, BadNamesAndOptionsAreRefusedByName) {
  EXPECT_THROW(SharedHostPool::create("a/b", {1, 4096}), InvalidArgument);
  EXPECT_THROW(SharedHostPool::create(pool_name("zero"), {0, 4096}), InvalidArgument);
  EXPECT_THROW(SharedHostPool::create(pool_name("zero"), {1, 0}), InvalidArgument);
  try {
    SharedHostPool::open(pool_name("absent"));
    ADD_FAILURE() << "opened a pool nobody created";
  } catch (const InvalidArgument& ex) {
    EXPECT_NE(std::string(ex.what()).find(pool_name("absent")), std::string::npos) << ex.what();
  }
  PoolName n("twice");
  SharedHostPool first = SharedHostPool::create(n.name, {1, 4096});
  EXPECT_THROW(SharedHostPool::create(n.name, {1, 4096}), InvalidArgument);
}

// --- A writer killed at random points ----------------------------------------------------------

// A slot's payload names its key and generation in its first 16 bytes; the rest follows from both.
constexpr std::size_t kPayload = 16 * KiB;
constexpr std::size_t kSlots = 8, kKeys = 16;

void make_payload(std::uint8_t* p, std::uint64_t key, std::uint64_t gen) {
  std::memcpy(p, &key, 8);
  std::memcpy(p + 8, &gen, 8);
  fill_pattern(p + 16, kPayload - 16, key * 1000003 + gen);
}

// Whether an accepted read is whole: the key asked for, and every byte of one generation.
bool whole(const std::uint8_t* p, std::uint64_t key, std::vector<std::uint8_t>& scratch) {
  std::uint64_t k = 0, gen = 0;
  std::memcpy(&k, p, 8);
  std::memcpy(&gen, p + 8, 8);
  if (k != key) return false;
  make_payload(scratch.data(), key, gen);
  return std::memcmp(scratch.data(), p, kPayload) == 0;
}

// What the test and its writer processes share besides the pool: a second small shared-memory
// object with the writer's readiness and the count of publishes.
struct Shared {
  std::atomic<std::uint64_t> publishes;
  std::atomic<std::uint32_t> ready;  // the running writer has its engine open
};

Shared* map_shared(const std::string& name, bool create) {
  const int fd = ::shm_open(("/" + name + "-count").c_str(), O_RDWR | (create ? O_CREAT | O_EXCL : 0), 0600);
  if (fd < 0) return nullptr;
  if (create && ::ftruncate(fd, 4096) != 0) {
    ::close(fd);
    return nullptr;
  }
  void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<Shared*>(p);
}

constexpr const char* kWriterEnv = "SPYRE_DMA_TEST_POOL_WRITER";  // "<pool name> <seed>"

// The writer process: this test binary again, run by the test below with only this test selected
// and kWriterEnv set (a fresh process, not a fork: the engine starts threads, which a fork of a
// threaded process may not). It publishes slot after slot until it is killed.
TEST(SharedHostPoolWriter, PublishesUntilKilled) {
  const char* arg = std::getenv(kWriterEnv);
  if (!arg) GTEST_SKIP() << "run by SharedHostPool.AWriterKilledAtRandomPointsNeverLetsATornOrStaleSlotBeRead";
  char name[256] = {};
  unsigned seed = 0;
  ASSERT_EQ(std::sscanf(arg, "%255s %u", name, &seed), 2);
  Shared* shared = map_shared(name, false);
  ASSERT_NE(shared, nullptr);
  SharedHostPool pool = SharedHostPool::open(name);
  Rig rig = make_rig();
  Engine& e = *rig.engine;
  HostBuffer reg = pool.register_with(e);
  Stream s = e.create_stream();
  DeviceBuffer dev = e.allocate(kPayload);
  HostBuffer stage = e.allocate_host(kPayload);
  std::mt19937_64 rng(seed);
  shared->ready.store(1);
  for (std::uint64_t gen = 1;; ++gen) {
    const std::uint64_t key = rng() % kKeys;
    make_payload(static_cast<std::uint8_t*>(stage.data()), key, (std::uint64_t{seed} << 32) | gen);
    SPYRE_ASSERT_OK(s.copy_h2d(dev, 0, stage.data(), kPayload).wait(kWait));
    SharedHostPool::Offload o = pool.offload(s, key, dev, 0, kPayload);
    if (o.offer != SharedHostPool::Offer::kStarted) continue;
    SPYRE_ASSERT_OK(o.op.wait(kWait));
    shared->publishes.fetch_add(1);
  }
}

pid_t spawn_writer(const std::string& name, unsigned seed) {
  static char filter[] = "--gtest_filter=SharedHostPoolWriter.PublishesUntilKilled";
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, filter, nullptr};
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  env_strings.push_back(std::string(kWriterEnv) + "=" + name + " " + std::to_string(seed));
  std::vector<char*> envp;
  for (std::string& v : env_strings) envp.push_back(v.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);  // its gtest chatter
  const int rc = ::posix_spawn(&pid, exe, &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

TEST(SharedHostPool, AWriterKilledAtRandomPointsNeverLetsATornOrStaleSlotBeRead) {
  if (test_backend() != "refdev") GTEST_SKIP() << "the writers open refdev in their own processes";
  PoolName n("kill");
  ::shm_unlink(("/" + n.name + "-count").c_str());
  SharedHostPool pool = SharedHostPool::create(n.name, {kSlots, kPayload});
  Shared* shared = map_shared(n.name, true);
  ASSERT_NE(shared, nullptr);
  struct Unlink {
    std::string name;
    ~Unlink() { ::shm_unlink(("/" + name + "-count").c_str()); }
  } unlink_count{n.name};

  constexpr std::uint64_t kTarget = 10000;
  std::mt19937_64 rng(2024);
  std::vector<std::uint8_t> out(kPayload), scratch(kPayload);
  std::uint64_t accepted = 0, misses = 0, torn = 0, kills = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (shared->publishes.load() < kTarget && std::chrono::steady_clock::now() < deadline) {
    shared->ready.store(0);
    const pid_t child = spawn_writer(n.name, static_cast<unsigned>(kills + 1));
    ASSERT_GT(child, 0);
    // Read while it starts and writes, then kill it at a random point of its run.
    const auto started = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point until{};
    for (;;) {
      const auto now = std::chrono::steady_clock::now();
      if (until == std::chrono::steady_clock::time_point{} && shared->ready.load() != 0) {
        until = now + std::chrono::microseconds(rng() % 20000);
      }
      if (until != std::chrono::steady_clock::time_point{} && now >= until) break;
      if (now - started > std::chrono::seconds(60)) break;  // it never got ready: the wait below says so
      const std::uint64_t key = rng() % kKeys;
      if (pool.read(key, out.data(), out.size())) {
        ++accepted;
        torn += !whole(out.data(), key, scratch);
      } else {
        ++misses;
      }
    }
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the writer ended on its own, status " << status;
    ++kills;
  }
  const std::uint64_t done = shared->publishes.load();
  ::munmap(shared, 4096);
  EXPECT_GE(done, kTarget) << "publishes in 240 s";
  EXPECT_EQ(torn, 0u) << accepted << " reads accepted, " << misses << " misses, " << kills << " writers killed";
  EXPECT_GT(accepted, 0u);
  std::printf("shared pool: %llu publishes by %llu writers killed at random points; %llu reads accepted, %llu torn; "
              "%llu misses\n",
              static_cast<unsigned long long>(done), static_cast<unsigned long long>(kills),
              static_cast<unsigned long long>(accepted), static_cast<unsigned long long>(torn),
              static_cast<unsigned long long>(misses));
}

}  // namespace
}  // namespace spyre_dma::test
