// The concurrency kit: the two threading shapes the tool uses, each written once.
//   BoundedQueue<T>  producer threads -> one consumer, bounded, with close (producer done, with a
//                    status) and cancel (consumer gone)
//   PeriodicThread   a callback on its own thread every period until stopped, with "tick now"
// Protocols particular to one room (dump's DigestPool, diff's SnapshotGate) are built where they
// are used; what they share with these is std::mutex + std::condition_variable, nothing more.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "core/status.h"

namespace ledgerdiff {

// INVARIANT: every member is guarded by mu_. Items pushed before Close are all popped (Close
// does not drop them); after Cancel nothing more is accepted.
template <typename T>
class BoundedQueue {
 public:
  explicit BoundedQueue(size_t capacity) : capacity_(capacity ? capacity : 1) {}
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Producer: blocks while full. False when the consumer cancelled (the item is dropped).
  bool Push(T item) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return cancelled_ || items_.size() < capacity_; });
    if (cancelled_) return false;
    items_.push_back(std::move(item));
    cv_.notify_all();
    return true;
  }
  // Producer: no more items; `status` tells the consumer whether the stream ended in an error.
  void Close(Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    status_ = std::move(status);
    cv_.notify_all();
  }
  // Consumer: gives up; blocked and later pushes return false.
  void Cancel() {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  // Consumer: the next item; false once closed and drained (status() says how it ended).
  bool Pop(T& out) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return false;
    out = std::move(items_.front());
    items_.pop_front();
    cv_.notify_all();
    return true;
  }
  Status status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<T> items_;
  bool closed_ = false, cancelled_ = false;
  Status status_;
};

// Runs `tick` on its own thread: at once or after one period (Start), then every period, until
// Stop. A tick in progress is never interrupted: Stop waits for it.
// INVARIANT: stop_, requested_ and served_ are guarded by mu_; tick runs without it held.
class PeriodicThread {
 public:
  enum class Start : uint8_t { kTickAtOnce, kAfterOnePeriod };

  PeriodicThread(std::chrono::duration<double> period, Start start, std::function<void()> tick)
      : period_(period), start_(start), tick_(std::move(tick)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~PeriodicThread() { Stop(); }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  // Stops and joins; idempotent.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // Asks for a tick now and waits until a tick that began after this call has finished: true,
  // or false when `timeout` passed or the thread stopped first.
  bool TickNow(std::chrono::duration<double> timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t want = ++requested_;
    cv_.notify_all();
    cv_.wait_for(lock, timeout, [&] { return served_ >= want || stop_; });
    return served_ >= want;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    bool wait_first = start_ == Start::kAfterOnePeriod;
    while (!stop_) {
      if (wait_first) cv_.wait_for(lock, period_, [&] { return stop_ || requested_ > served_; });
      wait_first = true;
      if (stop_) break;
      const uint64_t serving = requested_;
      lock.unlock();
      tick_();
      lock.lock();
      served_ = serving;
      cv_.notify_all();
    }
  }

  const std::chrono::duration<double> period_;
  const Start start_;
  const std::function<void()> tick_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  uint64_t requested_ = 0, served_ = 0;
  std::thread thread_;  // last: started once every member above is constructed
};

}  // namespace ledgerdiff
