// Input values for the correctness check and the result every rank must
// receive, in closed form (never computed by the library under test).
//
// Every input and every partial result, in any reduction order, is a small
// integer (or a power of two times +-1 for prod) that the data type holds
// exactly, so the expected value is exact for every type and op, float16 and
// bfloat16 included, and avg (sum / nranks) divides evenly.
//
// Shapes, with a(i) a hash of the element index and k = (rank + i) % nranks,
// so that every rank holds the extreme value somewhere and a block of results
// written to the wrong place shows up:
//   sum, min, max: a(i) + b(k)                 sum = n a(i) + sum_k b(k)
//   avg:           a(i) + c(k) - c((k+1) % n)  avg = a(i) (the c terms cancel)
//   prod:          (+-1) * (1 or 2)            prod = (-1)^negatives * 2^twos
#ifndef RINA_TOOLS_PERF_CHECK_PATTERN_H_
#define RINA_TOOLS_PERF_CHECK_PATTERN_H_

#include <cstddef>
#include <cstdint>

#include "rina/rina.h"

namespace rina::perf {

class CheckPattern {
 public:
  CheckPattern(rinaDataType_t type, rinaRedOp_t op, int nranks);

  int64_t input(int rank, size_t index) const;
  int64_t expected(size_t index) const;

  rinaDataType_t type() const { return type_; }
  rinaRedOp_t op() const { return op_; }
  int nranks() const { return nranks_; }
  // The largest magnitude any input or partial result reaches (for tests).
  int64_t magnitudeBound() const { return magnitudeBound_; }

 private:
  int64_t hashed(size_t index) const;  // a(i)
  int64_t offset(int64_t k) const;     // b(k), or c(k) for avg

  rinaDataType_t type_;
  rinaRedOp_t op_;
  int nranks_;
  bool signed_;
  int64_t magnitudeBound_ = 0;
  // a(i) in [aLow_, aLow_ + aSpan_ - 1]; b(k) = k % bPeriod_ - bShift_.
  int64_t aLow_ = 0;
  int64_t aSpan_ = 1;
  int64_t bPeriod_ = 1;
  int64_t bShift_ = 0;
  // sum_k b(k), min_k b(k), max_k b(k) over k < nranks.
  int64_t bSum_ = 0;
  int64_t bMin_ = 0;
  int64_t bMax_ = 0;
  // prod: rank r doubles element i when (r + i) % twoPeriod_ == 0, negates it
  // (signed types) when (r + 3 i) % 5 == 1.
  int64_t twoPeriod_ = 2;
};

// Writes pattern.input(rank, i) for i < count into buf, typed.
void fillInput(const CheckPattern& pattern, int rank, void* buf, size_t count);
// Elements of buf that differ from pattern.expected(i).
size_t countWrongResults(const CheckPattern& pattern, const void* buf, size_t count);
// Elements of buf that differ from pattern.input(rank, i) (a send buffer that
// the library must not have written to).
size_t countChangedInputs(const CheckPattern& pattern, int rank, const void* buf, size_t count);

}  // namespace rina::perf

#endif  // RINA_TOOLS_PERF_CHECK_PATTERN_H_
