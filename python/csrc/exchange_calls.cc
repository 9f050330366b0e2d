// The backend's calls that exchange between pairs of ranks:
// point-to-point messages (send, recv, recv_anysource; consecutive ones run
// as one rina group, work_thread.h), all-to-all in its two forms, and
// allgather_coalesced.
#include <numeric>

#include "backend.h"
#include "tensor_types.h"

namespace rina::torch_backend {
namespace {

// The row splits of alltoall_base's tensor t along dimension 0: given, or
// equal (empty given); they must add up to t's rows.
std::vector<int64_t> splitsOf(const std::vector<int64_t>& given, const at::Tensor& t, int n,
                              const char* call, const char* what) {
  if (given.empty()) {
    TORCH_CHECK(t.size(0) % n == 0, "rina_torch ", call, ": argument ", what, " has ", t.size(0),
                " rows, not a multiple of ", n, " ranks (give ", what, "_split_sizes)");
    return std::vector<int64_t>(n, t.size(0) / n);
  }
  TORCH_CHECK(static_cast<int>(given.size()) == n, "rina_torch ", call, ": argument ", what,
              "_split_sizes has ", given.size(), " entries, expected ", n);
  for (int64_t s : given) {
    TORCH_CHECK(s >= 0, "rina_torch ", call, ": argument ", what, "_split_sizes holds ", s);
  }
  const int64_t sum = std::accumulate(given.begin(), given.end(), int64_t{0});
  TORCH_CHECK(sum == t.size(0), "rina_torch ", call, ": argument ", what,
              "_split_sizes: the sizes add up to ", sum, ", not to ", what, "'s ", t.size(0),
              " rows");
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

c10::intrusive_ptr<c10d::Work> RinaBackend::send(std::vector<at::Tensor>& tensors, int dstRank,
                                                 int tag) {
  const char* call = "send";
  at::Tensor t = onlyTensor(tensors, call, "tensor");
  checkPeer(dstRank, call);
  auto work = newWork(c10d::OpType::SEND, "rina:send", std::vector<at::Tensor>{t});
  // The bytes as they are now, in host memory (messages in a rina group
  // take host memory; a copy only when t is not contiguous or on a GPU,
  // made here in the caller's stream order).
  at::Tensor buf = t.device().is_cpu() ? contiguousOf(t) : t.to(at::kCPU).contiguous();
  PointToPoint p;
  p.post = [this, buf, dstRank, tag] {
    const WireType w = wireTypeOf(buf);
    check(rinaSendTagged(buf.data_ptr(), w.count, w.type, dstRank, tag, comm()), "send");
  };
  p.finish = [this](int rc) { check(static_cast<rinaResult_t>(rc), "send"); };
  thread_.post(work, std::move(p));
  return work;
}

c10::intrusive_ptr<c10d::Work> RinaBackend::postRecv(const at::Tensor& t, int peer, int tag,
                                                     c10d::OpType type, const char* title) {
  auto work = newWork(type, title, std::vector<at::Tensor>{t});
  auto source = std::make_shared<int>(-1);
  auto recvOn = [this, peer, tag, source](at::Tensor& buf) {
    const WireType w = wireTypeOf(buf);
    return rinaRecvTagged(buf.data_ptr(), w.count, w.type, peer, tag, source.get(), comm());
  };
  // Received into t, or into a contiguous host stand-in copied into t
  // after (on t's device, after the caller's stream: device_order.h).
  auto stage = [](const at::Tensor& out) {
    return out.device().is_cpu() ? contiguousOf(out)
                                 : at::empty(out.sizes(), out.options().device(at::kCPU));
  };
  DeviceOrder order({t}, title);
  if (peer == RINA_ANY_PEER) {
    // Never in a group (which message it takes would depend on timing).
    thread_.post(work, [this, out = at::Tensor(t), recvOn, source, stage, order,
                        sourceOut = work->source()]() mutable {
      at::Tensor buf = stage(out);
      check(recvOn(buf), "recv_anysource");
      order.run([&] { writeBack(out, buf); });
      sourceOut->store(*source);
    });
    return work;
  }
  auto buf = std::make_shared<at::Tensor>(stage(t));
  PointToPoint p;
  p.post = [this, buf, recvOn] { check(recvOn(*buf), "recv"); };
  p.finish = [this, out = at::Tensor(t), buf, source, order,
              sourceOut = work->source()](int rc) mutable {
    check(static_cast<rinaResult_t>(rc), "recv");
    order.run([&] { writeBack(out, *buf); });
    sourceOut->store(*source);
  };
  thread_.post(work, std::move(p));
  return work;
}

c10::intrusive_ptr<c10d::Work> RinaBackend::recv(std::vector<at::Tensor>& tensors, int srcRank,
                                                 int tag) {
  const char* call = "recv";
  at::Tensor t = onlyTensor(tensors, call, "tensor");
  checkPeer(srcRank, call);
  return postRecv(t, srcRank, tag, c10d::OpType::RECV, "rina:recv");
}

c10::intrusive_ptr<c10d::Work> RinaBackend::recvAnysource(std::vector<at::Tensor>& tensors,
                                                          int tag) {
  at::Tensor t = onlyTensor(tensors, "recv_anysource", "tensor");
  return postRecv(t, RINA_ANY_PEER, tag, c10d::OpType::RECVANYSOURCE, "rina:recvAnySource");
}

c10::intrusive_ptr<c10d::Work> RinaBackend::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                          std::vector<int64_t>& outputSplits,
                                                          std::vector<int64_t>& inputSplits,
                                                          const c10d::AllToAllOptions& opts) {
  const char* call = "all_to_all_single";
  checkTensor(input, call, "input");
  checkTensor(output, call, "output");
  TORCH_CHECK(input.dim() >= 1 && output.dim() >= 1, "rina_torch ", call,
              ": arguments input and output need at least one dimension (split along dimension "
              "0)");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "rina_torch ", call,
              ": argument output has dtype ", output.scalar_type(), ", input has ",
              input.scalar_type());
  const int64_t rowElems = input.size(0) ? input.numel() / input.size(0) : 0;
  const int64_t outRowElems = output.size(0) ? output.numel() / output.size(0) : 0;
  TORCH_CHECK(input.size(0) == 0 || output.size(0) == 0 || rowElems == outRowElems, "rina_torch ",
              call, ": rows of argument input have ", rowElems, " elements, of output ",
              outRowElems);
  const int64_t rowSize = rowElems ? rowElems : outRowElems;
  std::vector<int64_t> sendRows = splitsOf(inputSplits, input, size_, call, "input");
  std::vector<int64_t> recvRows = splitsOf(outputSplits, output, size_, call, "output");
  return post(c10d::OpType::ALLTOALL_BASE, "rina:all_to_all", {output}, {input}, opts.timeout,
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
                                    rd.data(), w.type, comm()),
                      "all_to_all_single");
                writeBack(output, out);
              });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::alltoall(std::vector<at::Tensor>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllToAllOptions& opts) {
  const char* call = "all_to_all";
  TORCH_CHECK(static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
              "rina_torch ", call,
              ": arguments input_tensor_list and output_tensor_list must "
              "hold ",
              size_, " tensors each, got ", inputs.size(), " and ", outputs.size());
  for (int p = 0; p < size_; ++p) {
    const std::string i = "input_tensor_list[" + std::to_string(p) + "]";
    const std::string o = "output_tensor_list[" + std::to_string(p) + "]";
    checkTensor(inputs[p], call, i);
    checkTensor(outputs[p], call, o);
    TORCH_CHECK(inputs[p].scalar_type() == inputs[0].scalar_type() &&
                    outputs[p].scalar_type() == inputs[0].scalar_type(),
                "rina_torch ", call, ": tensors of one dtype only: ", i, " has ",
                inputs[p].scalar_type(), ", ", o, " has ", outputs[p].scalar_type(),
                ", input_tensor_list[0] has ", inputs[0].scalar_type());
  }
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  return post(c10d::OpType::ALLTOALL, "rina:all_to_all", outs, ins, opts.timeout,
              [this, ins, outs]() mutable {
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
                const auto bytes = ins[0].options().dtype(at::kByte);
                at::Tensor send = at::empty({static_cast<int64_t>(sendBytes)}, bytes);
                at::Tensor recv = at::empty({static_cast<int64_t>(recvBytes)}, bytes);
                for (int p = 0; p < size_; ++p) {
                  if (sc[p]) {
                    send.narrow(0, static_cast<int64_t>(sd[p]), static_cast<int64_t>(sc[p]))
                        .copy_(bytesView(contiguousOf(ins[p])));
                  }
                }
                check(rinaAllToAllv(send.data_ptr(), sc.data(), sd.data(), recv.data_ptr(),
                                    rc.data(), rd.data(), rinaUint8, comm()),
                      "all_to_all");
                for (int p = 0; p < size_; ++p) {
                  if (!rc[p]) continue;
                  at::Tensor out = contiguousOf(outs[p]);
                  bytesView(out).copy_(
                      recv.narrow(0, static_cast<int64_t>(rd[p]), static_cast<int64_t>(rc[p])));
                  writeBack(outs[p], out);
                }
              });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const char* call = "all_gather_coalesced";
  TORCH_CHECK(static_cast<int>(outputLists.size()) == size_, "rina_torch ", call,
              ": argument output_tensor_lists must hold ", size_, " lists, got ",
              outputLists.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    checkTensor(inputs[i], call, "input_tensor_list[" + std::to_string(i) + "]");
  }
  for (size_t r = 0; r < outputLists.size(); ++r) {
    const std::vector<at::Tensor>& list = outputLists[r];
    TORCH_CHECK(list.size() == inputs.size(), "rina_torch ", call,
                ": argument output_tensor_lists[", r, "] holds ", list.size(),
                " tensors, input_tensor_list ", inputs.size());
    for (size_t i = 0; i < list.size(); ++i) {
      checkSameAs(list[i], inputs[i], call,
                  "output_tensor_lists[" + std::to_string(r) + "][" + std::to_string(i) + "]",
                  "input_tensor_list[" + std::to_string(i) + "]");
    }
  }
  std::vector<at::Tensor> flatOuts;
  for (const std::vector<at::Tensor>& list : outputLists) {
    flatOuts.insert(flatOuts.end(), list.begin(), list.end());
  }
  std::vector<at::Tensor> ins = inputs;
  return post(c10d::OpType::ALLGATHER_COALESCED, "rina:all_gather_coalesced", flatOuts, ins,
              opts.timeout, [this, ins, flatOuts]() mutable {
                // Every input's bytes in one buffer, gathered from every rank.
                int64_t bytes = 0;
                for (const at::Tensor& t : ins) bytes += static_cast<int64_t>(bytesOf(t));
                const auto options =
                    (ins.empty() ? at::TensorOptions() : ins[0].options()).dtype(at::kByte);
                at::Tensor mine = at::empty({bytes}, options);
                int64_t at = 0;
                for (const at::Tensor& t : ins) {
                  const int64_t n = static_cast<int64_t>(bytesOf(t));
                  if (n) mine.narrow(0, at, n).copy_(bytesView(contiguousOf(t)));
                  at += n;
                }
                at::Tensor all = at::empty({bytes * size_}, options);
                check(rinaAllGather(mine.data_ptr(), all.data_ptr(), static_cast<size_t>(bytes),
                                    rinaUint8, comm()),
                      "all_gather_coalesced");
                size_t k = 0;
                for (int r = 0; r < size_; ++r) {
                  int64_t off = r * bytes;
                  for (size_t i = 0; i < ins.size(); ++i, ++k) {
                    at::Tensor& out = flatOuts[k];
                    const int64_t n = static_cast<int64_t>(bytesOf(ins[i]));
                    if (n) {
                      at::Tensor buf = contiguousOf(out);
                      bytesView(buf).copy_(all.narrow(0, off, n));
                      writeBack(out, buf);
                    }
                    off += n;
                  }
                }
              });
}

}  // namespace rina::torch_backend
