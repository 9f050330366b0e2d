// The backend's calls that only move data (any dtype, as bytes): broadcast,
// the all-gathers, gather, scatter, and barrier.
#include "backend.h"
#include "tensor_types.h"

namespace rina::torch_backend {

void RinaBackend::allGatherBytes(const at::Tensor& in, at::Tensor& out, const char* call) {
  at::Tensor buf = contiguousOf(in);
  check(rinaAllGather(buf.data_ptr(), out.data_ptr(), bytesOf(buf), rinaUint8, comm()), call);
}

c10::intrusive_ptr<c10d::Work> RinaBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                      const c10d::BroadcastOptions& opts) {
  const char* call = "broadcast";
  at::Tensor t = onlyTensor(tensors, call);
  checkRoot(opts.rootRank, call);
  const int root = static_cast<int>(opts.rootRank);
  return post(
      c10d::OpType::BROADCAST, "rina:broadcast", {t}, {}, opts.timeout, [this, t, root]() mutable {
        at::Tensor buf = contiguousOf(t);
        check(rinaBroadcast(buf.data_ptr(), buf.data_ptr(), bytesOf(buf), rinaUint8, root, comm()),
              "broadcast");
        if (rank_ != root) writeBack(t, buf);
      });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                      std::vector<at::Tensor>& inputs,
                                                      const c10d::AllgatherOptions& opts) {
  const char* call = "allgather";
  at::Tensor in = onlyTensor(inputs, call, "input");
  TORCH_CHECK(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == size_, "rina_torch ",
              call, ": argument tensor_list must hold ", size_, " tensors");
  for (int r = 0; r < size_; ++r) {
    checkSameAs(outputs[0][r], in, call, "tensor_list[" + std::to_string(r) + "]", "tensor");
  }
  std::vector<at::Tensor> outs = outputs[0];
  return post(c10d::OpType::ALLGATHER, "rina:all_gather", outs, {in}, opts.timeout,
              [this, in, outs]() mutable {
                at::Tensor flat = at::empty({size_, in.numel()}, in.options());
                allGatherBytes(in, flat, "allgather");
                for (int r = 0; r < size_; ++r) outs[r].copy_(flat[r].view(outs[r].sizes()));
              });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                            const c10d::AllgatherOptions& opts) {
  const char* call = "all_gather_into_tensor";
  checkTensor(input, call, "input_tensor");
  checkTensor(output, call, "output_tensor");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "rina_torch ", call,
              ": argument output_tensor has dtype ", output.scalar_type(), ", input_tensor has ",
              input.scalar_type());
  TORCH_CHECK(output.numel() == size_ * input.numel(), "rina_torch ", call,
              ": argument output_tensor has ", output.numel(), " elements, expected ", size_,
              " x input_tensor's ", input.numel());
  return post(c10d::OpType::_ALLGATHER_BASE, "rina:_all_gather_base", {output}, {input},
              opts.timeout, [this, output, input]() mutable {
                at::Tensor out = contiguousOf(output);
                // In place when input is this rank's block of a contiguous output.
                allGatherBytes(input, out, "all_gather_into_tensor");
                writeBack(output, out);
              });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::allgatherIntoTensorCoalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  const char* call = "allgather_into_tensor_coalesced";
  checkCoalesced(outputs, inputs, size_, /*outputsPerRank=*/true, call);
  return post(
      kAllgatherCoalescedOp, "rina:allgather_into_tensor_coalesced", outputs, inputs, opts.timeout,
      [this, outputs, inputs]() mutable {
        // One all-gather of every input's bytes, packed.
        int64_t block = 0;
        for (const at::Tensor& t : inputs) block += static_cast<int64_t>(bytesOf(t));
        at::Tensor mine = at::empty({block}, inputs[0].options().dtype(at::kByte));
        int64_t at = 0;
        for (const at::Tensor& t : inputs) {
          const int64_t n = static_cast<int64_t>(bytesOf(t));
          if (n) mine.narrow(0, at, n).copy_(bytesView(contiguousOf(t)));
          at += n;
        }
        at::Tensor all = at::empty({size_ * block}, mine.options());
        check(rinaAllGather(mine.data_ptr(), all.data_ptr(), block, rinaUint8, comm()),
              "allgather_into_tensor_coalesced");
        at = 0;
        for (size_t i = 0; i < inputs.size(); ++i) {
          const int64_t n = static_cast<int64_t>(bytesOf(inputs[i]));
          if (n) {
            at::Tensor out = contiguousOf(outputs[i]);
            bytesView(out).view({size_, n}).copy_(all.view({size_, block}).narrow(1, at, n));
            writeBack(outputs[i], out);
          }
          at += n;
        }
      });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                   std::vector<at::Tensor>& inputs,
                                                   const c10d::GatherOptions& opts) {
  const char* call = "gather";
  at::Tensor in = onlyTensor(inputs, call, "tensor");
  checkRoot(opts.rootRank, call);
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> outs = rootList(outputs, in, root, call, "gather_list");
  return post(
      c10d::OpType::GATHER, "rina:gather", outs, {in}, opts.timeout,
      [this, in, outs, root]() mutable {
        at::Tensor buf = contiguousOf(in);
        // Only the root holds the blocks (one flat buffer, then each output).
        at::Tensor flat = rank_ == root ? at::empty({size_, in.numel()}, in.options()) : buf;
        check(rinaGather(buf.data_ptr(), flat.data_ptr(), bytesOf(buf), rinaUint8, root, comm()),
              "gather");
        for (size_t r = 0; r < outs.size(); ++r) {
          outs[r].copy_(flat[r].view(outs[r].sizes()));
        }
      });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::scatter(std::vector<at::Tensor>& outputs,
                                                    std::vector<std::vector<at::Tensor>>& inputs,
                                                    const c10d::ScatterOptions& opts) {
  const char* call = "scatter";
  at::Tensor out = onlyTensor(outputs, call, "tensor");
  checkRoot(opts.rootRank, call);
  const int root = static_cast<int>(opts.rootRank);
  std::vector<at::Tensor> ins = rootList(inputs, out, root, call, "scatter_list");
  return post(c10d::OpType::SCATTER, "rina:scatter", {out}, ins, opts.timeout,
              [this, out, ins, root]() mutable {
                // The root's blocks in one flat buffer; each rank receives its own.
                at::Tensor flat;
                if (rank_ == root) {
                  flat = at::empty({size_, out.numel()}, out.options());
                  for (size_t r = 0; r < ins.size(); ++r) flat[r].copy_(ins[r].reshape({-1}));
                }
                at::Tensor buf = contiguousOf(out);
                check(rinaScatter(rank_ == root ? flat.data_ptr() : nullptr, buf.data_ptr(),
                                  bytesOf(buf), rinaUint8, root, comm()),
                      "scatter");
                writeBack(out, buf);
              });
}

c10::intrusive_ptr<c10d::Work> RinaBackend::barrier(const c10d::BarrierOptions& opts) {
  return post(c10d::OpType::BARRIER, "rina:barrier", {}, {}, opts.timeout, [this] {
    // Runs after every call issued before it (one thread, in order).
    int32_t one = 1, sum = 0;
    check(rinaAllReduce(&one, &sum, 1, rinaInt32, rinaSum, comm()), "barrier");
  });
}

}  // namespace rina::torch_backend
