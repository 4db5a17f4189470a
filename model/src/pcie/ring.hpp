// Ring<T>: a double-ended queue in one contiguous power-of-two array, for the per-TLP calendars
// and books of the link model (a Serializer's busy intervals, the protocol checker's credit holds
// and posted writes). Pushes and pops at both ends allocate nothing once the ring has grown to its
// working size: a std::deque allocates a node and frees one every few dozen pushes, and indexes
// through its node map. Insertion and erasure in the middle shift the elements after the place
// (the calendars insert near their end). Random-access iterators, for the standard algorithms.
// T must be trivially copyable: elements are moved by assignment and never destroyed one by one.
#pragma once

#include <cstddef>
#include <iterator>
#include <type_traits>
#include <vector>

namespace spyre_dma::model::pcie {

template <class T>
class Ring {
  static_assert(std::is_trivially_copyable_v<T>, "Ring holds trivially copyable elements");

  template <bool kConst>
  class Iter {
    using RingPtr = std::conditional_t<kConst, const Ring*, Ring*>;

   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const T*, T*>;
    using reference = std::conditional_t<kConst, const T&, T&>;

    Iter() = default;
    Iter(RingPtr ring, std::size_t i) : ring_(ring), i_(i) {}
    operator Iter<true>() const { return Iter<true>(ring_, i_); }  // an iterator is a const_iterator too

    reference operator*() const { return (*ring_)[i_]; }
    pointer operator->() const { return &(*ring_)[i_]; }
    reference operator[](difference_type n) const { return (*ring_)[i_ + static_cast<std::size_t>(n)]; }
    Iter& operator++() { return ++i_, *this; }
    Iter& operator--() { return --i_, *this; }
    Iter operator++(int) { Iter t = *this; ++i_; return t; }
    Iter operator--(int) { Iter t = *this; --i_; return t; }
    Iter& operator+=(difference_type n) { return i_ += static_cast<std::size_t>(n), *this; }
    Iter& operator-=(difference_type n) { return i_ -= static_cast<std::size_t>(n), *this; }
    friend Iter operator+(Iter a, difference_type n) { return a += n; }
    friend Iter operator+(difference_type n, Iter a) { return a += n; }
    friend Iter operator-(Iter a, difference_type n) { return a -= n; }
    friend difference_type operator-(const Iter& a, const Iter& b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const Iter& a, const Iter& b) { return a.i_ == b.i_; }
    friend bool operator!=(const Iter& a, const Iter& b) { return a.i_ != b.i_; }
    friend bool operator<(const Iter& a, const Iter& b) { return a.i_ < b.i_; }
    friend bool operator>(const Iter& a, const Iter& b) { return a.i_ > b.i_; }
    friend bool operator<=(const Iter& a, const Iter& b) { return a.i_ <= b.i_; }
    friend bool operator>=(const Iter& a, const Iter& b) { return a.i_ >= b.i_; }

   private:
    RingPtr ring_ = nullptr;
    std::size_t i_ = 0;  // from the front
  };

 public:
  using value_type = T;
  using iterator = Iter<false>;
  using const_iterator = Iter<true>;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return slots_[(head_ + i) & mask_]; }
  const T& operator[](std::size_t i) const { return slots_[(head_ + i) & mask_]; }
  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, size_); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }

  // A new element at the back, value-initialized, for the caller to fill in place.
  T& emplace_back() {
    if (size_ == slots_.size()) grow();
    T& slot = slots_[(head_ + size_++) & mask_];
    slot = T{};
    return slot;
  }
  void push_back(const T& v) { emplace_back() = v; }
  void pop_front() {
    head_ = (head_ + 1) & mask_;
    --size_;
  }
  void pop_back() { --size_; }
  void clear() { head_ = size_ = 0; }

  // Before the element at `pos` (end(): at the back); the elements after it move up one.
  iterator insert(const_iterator pos, const T& v) {
    const std::size_t i = static_cast<std::size_t>(pos - const_iterator(begin()));
    const T copy = v;  // v may lie in the ring
    if (size_ == slots_.size()) grow();
    ++size_;
    for (std::size_t k = size_ - 1; k > i; --k) (*this)[k] = (*this)[k - 1];
    (*this)[i] = copy;
    return iterator(this, i);
  }
  // The elements after `pos` move down one.
  iterator erase(const_iterator pos) {
    const std::size_t i = static_cast<std::size_t>(pos - const_iterator(begin()));
    for (std::size_t k = i; k + 1 < size_; ++k) (*this)[k] = (*this)[k + 1];
    --size_;
    return iterator(this, i);
  }

 private:
  // Twice the room (16 at first), the contents from index 0: out of line, rare.
  __attribute__((noinline)) void grow() {
    std::vector<T> bigger(slots_.empty() ? 16 : 2 * slots_.size());
    for (std::size_t k = 0; k < size_; ++k) bigger[k] = (*this)[k];
    slots_.swap(bigger);
    head_ = 0;
    mask_ = slots_.size() - 1;
  }

  std::vector<T> slots_;  // capacity a power of two (or 0)
  std::size_t mask_ = 0;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace spyre_dma::model::pcie
