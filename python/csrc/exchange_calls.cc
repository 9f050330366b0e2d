// The process group's calls that exchange between pairs of ranks:
// point-to-point messages (send, recv, recv_anysource; consecutive ones run
// as one rina group, work_thread.h), all-to-all in its two forms, and
// allgather_coalesced.
#include <cstring>
#include <numeric>

#include "process_group.h"
#include "tensor_types.h"

namespace rina::torch_backend {
namespace {

// The row splits of alltoall_base's tensor t along dimension 0: given, or
// equal (empty given); they must add up to t's rows.
std::vector<int64_t> splitsOf(const std::vector<int64_t>& given, const at::Tensor& t, int n,
                              const char* call, const char* what) {
  if (given.empty()) {
    TORCH_CHECK(t.size(0) % n == 0, "rina_torch ", call, ": ", what, " has ", t.size(0),
                " rows, not a multiple of ", n, " ranks (give split sizes)");
    return std::vector<int64_t>(n, t.size(0) / n);
  }
  TORCH_CHECK(static_cast<int>(given.size()) == n, "rina_torch ", call, ": ", what,
              " split sizes have ", given.size(), " entries, expected ", n);
  for (int64_t s : given) TORCH_CHECK(s >= 0, "rina_torch ", call, ": negative split size ", s);
  const int64_t sum = std::accumulate(given.begin(), given.end(), int64_t{0});
  TORCH_CHECK(sum == t.size(0), "rina_torch ", call, ": ", what, " split sizes add up to ", sum,
              ", not to its ", t.size(0), " rows");
  return given;
}

// Counts and displacements (in elements) of blocks of the given rows.
void blocksOf(const std::vector<int64_t>& rows, int64_t rowElems, std::vector<size_t>* counts,
              std::vector<size_t>* displs) {
  size_t at = 0;
  for (int64_t r : rows) {
    counts->push_back(static_cast<size_t>(r * rowElems));
    displs->push_back(at);
    at += counts->back();
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                      int tag) {
  const char* call = "send";
  at::Tensor t = onlyTensor(tensors, call);
  checkPeer(dstRank, call);
  auto work = c10::make_intrusive<RinaWork>(rank_, c10d::OpType::SEND, "rina:send",
                                            std::vector<at::Tensor>{t}, thread_.queue());
  // The bytes as they are now (a copy only when t is not contiguous).
  at::Tensor buf = contiguousOf(t);
  PointToPoint p;
  p.post = [this, buf, dstRank, tag] {
    const WireType w = wireTypeOf(buf);
    check(rinaSendTagged(buf.data_ptr(), w.count, w.type, dstRank, tag, comm_), "send");
  };
  p.finish = [this](int rc) { check(static_cast<rinaResult_t>(rc), "send"); };
  thread_.post(work, std::move(p));
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::postRecv(const at::Tensor& t, int peer, int tag,
                                                          c10d::OpType type, const char* title) {
  auto work = c10::make_intrusive<RinaWork>(rank_, type, title, std::vector<at::Tensor>{t},
                                            thread_.queue());
  auto source = std::make_shared<int>(-1);
  auto recvOn = [this, peer, tag, source](at::Tensor& buf) {
    const WireType w = wireTypeOf(buf);
    return rinaRecvTagged(buf.data_ptr(), w.count, w.type, peer, tag, source.get(), comm_);
  };
  if (peer == RINA_ANY_PEER) {
    // Never in a group (which message it takes would depend on timing).
    thread_.post(work,
                 [this, out = at::Tensor(t), recvOn, source, sourceOut = work->source()]() mutable {
                   at::Tensor buf = contiguousOf(out);
                   check(recvOn(buf), "recv_anysource");
                   writeBack(out, buf);
                   sourceOut->store(*source);
                 });
    return work;
  }
  // Received into t, or a contiguous stand-in copied into t after.
  auto buf = std::make_shared<at::Tensor>(contiguousOf(t));
  PointToPoint p;
  p.post = [this, buf, recvOn] { check(recvOn(*buf), "recv"); };
  p.finish = [this, out = at::Tensor(t), buf, source, sourceOut = work->source()](int rc) mutable {
    check(static_cast<rinaResult_t>(rc), "recv");
    writeBack(out, *buf);
    sourceOut->store(*source);
  };
  thread_.post(work, std::move(p));
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                      int tag) {
  const char* call = "recv";
  at::Tensor t = onlyTensor(tensors, call);
  checkPeer(srcRank, call);
  return postRecv(t, srcRank, tag, c10d::OpType::RECV, "rina:recv");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::recvAnysource(std::vector<at::Tensor>& tensors,
                                                               int tag) {
  at::Tensor t = onlyTensor(tensors, "recv_anysource");
  return postRecv(t, RINA_ANY_PEER, tag, c10d::OpType::RECVANYSOURCE, "rina:recvAnySource");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::alltoall_base(at::Tensor& output,
                                                               at::Tensor& input,
                                                               std::vector<int64_t>& outputSplits,
                                                               std::vector<int64_t>& inputSplits,
                                                               const c10d::AllToAllOptions& opts) {
  const char* call = "alltoall_base";
  checkDenseCpu(input, call);
  checkDenseCpu(output, call);
  TORCH_CHECK(input.dim() >= 1 && output.dim() >= 1, "rina_torch ", call,
              ": tensors need at least one dimension (split along dimension 0)");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "rina_torch ", call, ": output dtype ",
              output.scalar_type(), " differs from input dtype ", input.scalar_type());
  const int64_t rowElems = input.size(0) ? input.numel() / input.size(0) : 0;
  const int64_t outRowElems = output.size(0) ? output.numel() / output.size(0) : 0;
  TORCH_CHECK(input.size(0) == 0 || output.size(0) == 0 || rowElems == outRowElems, "rina_torch ",
              call, ": input rows have ", rowElems, " elements, output rows ", outRowElems);
  const int64_t rowSize = rowElems ? rowElems : outRowElems;
  std::vector<int64_t> sendRows = splitsOf(inputSplits, input, size_, call, "input");
  std::vector<int64_t> recvRows = splitsOf(outputSplits, output, size_, call, "output");
  return post(c10d::OpType::ALLTOALL_BASE, "rina:all_to_all", {output},
              [this, output, input, sendRows, recvRows, rowSize]() mutable {
                at::Tensor in = contiguousOf(input);
                at::Tensor out = contiguousOf(output);
                // Elements of rina's type (bytes for dtypes it has none of).
                const WireType w = wireTypeOf(in);
                const int64_t unit = in.numel() ? static_cast<int64_t>(w.count) / in.numel()
                                                : static_cast<int64_t>(wireTypeOf(out).count) /
                                                      std::max<int64_t>(out.numel(), 1);
                std::vector<size_t> sc, sd, rc, rd;
                blocksOf(sendRows, rowSize * unit, &sc, &sd);
                blocksOf(recvRows, rowSize * unit, &rc, &rd);
                check(rinaAllToAllv(in.data_ptr(), sc.data(), sd.data(), out.data_ptr(), rc.data(),
                                    rd.data(), w.type, comm_),
                      "alltoall_base");
                writeBack(output, out);
              });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& opts) {
  const char* call = "alltoall";
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
              "rina_torch ", call, ": expected ", size_, " input and output tensors, got ",
              inputs.size(), " and ", outputs.size());
  for (const at::Tensor& t : inputs) checkSameAs(t, t, call, "an input tensor");
  for (const at::Tensor& t : outputs) {
    checkDenseCpu(t, call);
    TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(), "rina_torch ", call,
                ": an output tensor has dtype ", t.scalar_type(), ", the inputs ",
                inputs[0].scalar_type());
  }
  for (const at::Tensor& t : inputs) {
    TORCH_CHECK(t.scalar_type() == inputs[0].scalar_type(), "rina_torch ", call,
                ": input tensors of one dtype only, got ", inputs[0].scalar_type(), " and ",
                t.scalar_type());
  }
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  return post(c10d::OpType::ALLTOALL, "rina:all_to_all", outs, [this, ins, outs]() mutable {
    // Packed into one buffer each way, as bytes.
    std::vector<size_t> sc, sd, rc, rd;
    size_t sendBytes = 0, recvBytes = 0;
    for (int p = 0; p < size_; ++p) {
      sd.push_back(sendBytes);
      sc.push_back(bytesOf(ins[p]));
      sendBytes += sc.back();
      rd.push_back(recvBytes);
      rc.push_back(bytesOf(outs[p]));
      recvBytes += rc.back();
    }
    at::Tensor send = at::empty({static_cast<int64_t>(sendBytes)}, at::kByte);
    at::Tensor recv = at::empty({static_cast<int64_t>(recvBytes)}, at::kByte);
    for (int p = 0; p < size_; ++p) {
      if (sc[p]) {
        at::Tensor src = contiguousOf(ins[p]);
        std::memcpy(static_cast<char*>(send.data_ptr()) + sd[p], src.data_ptr(), sc[p]);
      }
    }
    check(rinaAllToAllv(send.data_ptr(), sc.data(), sd.data(), recv.data_ptr(), rc.data(),
                        rd.data(), rinaUint8, comm_),
          "alltoall");
    for (int p = 0; p < size_; ++p) {
      if (!rc[p]) continue;
      at::Tensor block = at::from_blob(static_cast<char*>(recv.data_ptr()) + rd[p], outs[p].sizes(),
                                       outs[p].options());
      outs[p].copy_(block);
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRina::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const char* call = "allgather_coalesced";
  TORCH_CHECK(static_cast<int>(outputLists.size()) == size_, "rina_torch ", call, ": expected ",
              size_, " output lists, got ", outputLists.size());
  for (const at::Tensor& t : inputs) checkDenseCpu(t, call);
  for (const std::vector<at::Tensor>& list : outputLists) {
    TORCH_CHECK(list.size() == inputs.size(), "rina_torch ", call, ": an output list has ",
                list.size(), " tensors, the input ", inputs.size());
    for (size_t i = 0; i < list.size(); ++i) {
      checkSameAs(list[i], inputs[i], call, "an output tensor");
    }
  }
  std::vector<at::Tensor> flatOuts;
  for (const std::vector<at::Tensor>& list : outputLists) {
    flatOuts.insert(flatOuts.end(), list.begin(), list.end());
  }
  std::vector<at::Tensor> ins = inputs;
  return post(
      c10d::OpType::ALLGATHER_COALESCED, "rina:all_gather_coalesced", flatOuts,
      [this, ins, flatOuts]() mutable {
        // Every input's bytes in one buffer, gathered from every rank.
        size_t bytes = 0;
        for (const at::Tensor& t : ins) bytes += bytesOf(t);
        at::Tensor mine = at::empty({static_cast<int64_t>(bytes)}, at::kByte);
        size_t at = 0;
        for (const at::Tensor& t : ins) {
          if (!bytesOf(t)) continue;
          at::Tensor src = contiguousOf(t);
          std::memcpy(static_cast<char*>(mine.data_ptr()) + at, src.data_ptr(), bytesOf(t));
          at += bytesOf(t);
        }
        at::Tensor all = at::empty({static_cast<int64_t>(bytes) * size_}, at::kByte);
        check(rinaAllGather(mine.data_ptr(), all.data_ptr(), bytes, rinaUint8, comm_),
              "allgather_coalesced");
        const char* base = static_cast<const char*>(all.data_ptr());
        size_t k = 0;
        for (int r = 0; r < size_; ++r) {
          size_t off = r * bytes;
          for (size_t i = 0; i < ins.size(); ++i, ++k) {
            at::Tensor& out = flatOuts[k];
            if (out.numel()) {
              out.copy_(at::from_blob(const_cast<char*>(base) + off, out.sizes(), out.options()));
            }
            off += bytesOf(ins[i]);
          }
        }
      });
}

}  // namespace rina::torch_backend
