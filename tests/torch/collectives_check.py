#!/usr/bin/python3
"""Every torch.distributed collective on backend "rina", for every dtype and
reduce op it takes, against a reference computed locally with torch.

    collectives_check.py --ranks N

starts N ranks (separate processes, one process group) and exits 0 when
every rank passed. Each rank draws every rank's input from a seed that names
the rank and the case, so it computes the expected result itself with torch
(stack the inputs, reduce along the ranks) and compares bit for bit. Inputs
are small integers, exact in every dtype, so sums do not depend on the order
rina adds in. Cases: all_reduce (contiguous and not), all_reduce_coalesced,
reduce (every root), reduce_scatter (list), reduce_scatter_tensor (in place
and out of place), broadcast, all_gather, all_gather_into_tensor (in place
and out), all_gather_coalesced, gather, scatter, all_to_all_single (even and
uneven splits), all_to_all (list form), a ring of batch_isend_irecv (small
and large), send / recv with tags into a non-contiguous tensor, recv from
any source, barrier, asynchronous calls completing in order, DDP with the
allreduce and bf16 (1.13: fp16) compression communication hooks (on the
Work's Future);
on torch 2.x the coalescing manager and a "cpu:rina,cuda:gloo" group; then what rina
does not do must raise RuntimeError naming it; and destroying a group fails
its call in progress and its queued calls promptly.
"""

import datetime
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

TORCH2 = None  # set by the worker: torch 2.x's Backend API (coalescing, device maps)
REDUCE_DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32",
                 "int64", "bool"]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "PREMUL_SUM"]
PREMUL_FACTOR = 0.5  # exact in every floating dtype


def ops_for(name):
    """The reduce ops rina takes for a dtype (bool: logical or / and)."""
    if name == "bool":
        return ["SUM", "PRODUCT", "MIN", "MAX"]
    if name in ("float32", "float64", "float16", "bfloat16"):
        return OPS
    return [op for op in OPS if op != "PREMUL_SUM"]


def launch(args):
    n = args.ranks
    import ranks
    result = ranks.spawn(os.path.abspath(__file__), n, timeout=600)
    ok = ranks.report(result)
    print(f"collectives_check: {n} ranks: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


class Checker:
    def __init__(self, rank, world):
        import torch
        self.torch = torch
        self.rank, self.world = rank, world
        self.passed = 0
        self.failures = []
        self.case_id = 0

    def dtype(self, name):
        return getattr(self.torch, name)

    def inputs(self, name, op, shape, case):
        """Every rank's input of this case (int64 values, exact in every dtype)."""
        torch = self.torch
        out = []
        for r in range(self.world):
            g = torch.Generator().manual_seed(case * 1009 + r)
            unsigned = name == "uint8"
            if name == "bool":
                out.append(torch.randint(0, 2, shape, generator=g))
            elif op == "PRODUCT":
                choices = torch.tensor([1, 2, 3] if unsigned else [-2, -1, 1, 2])
                idx = torch.randint(0, len(choices), shape, generator=g)
                out.append(choices[idx])
            elif op in ("MIN", "MAX"):
                lo, hi = (0, 200) if unsigned else (-100, 101)
                out.append(torch.randint(lo, hi, shape, generator=g))
            else:  # SUM, AVG, and data movement: the sums of 4 ranks fit int8
                lo, hi = (0, 17) if unsigned else (-8, 9)
                out.append(torch.randint(lo, hi, shape, generator=g))
        return out

    def reference(self, values, name, op):
        torch = self.torch
        stacked = torch.stack(values)
        dt = self.dtype(name)
        if name == "bool":  # SUM and MAX: any; PRODUCT and MIN: all
            return (stacked.amax(0) if op in ("SUM", "MAX") else stacked.amin(0)).to(dt)
        if op == "PREMUL_SUM":  # each input scaled in its dtype, then summed (exact)
            return (stacked.to(dt) * PREMUL_FACTOR).to(torch.float64).sum(0).to(dt)
        if op == "SUM":
            return stacked.sum(0).to(dt)
        if op == "PRODUCT":
            return stacked.prod(0).to(dt)
        if op == "MIN":
            return stacked.amin(0).to(dt)
        if op == "MAX":
            return stacked.amax(0).to(dt)
        total = stacked.sum(0)
        if dt.is_floating_point:  # divided once, in the dtype (as torch divides)
            return total.to(dt) / self.world
        return torch.div(total, self.world, rounding_mode="trunc").to(dt)

    def expect(self, what, got, want):
        torch = self.torch
        if got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want):
            self.passed += 1
            return
        bad = (got.to(torch.float64) != want.to(torch.float64)).nonzero()[:3].tolist() \
            if got.shape == want.shape else "shape"
        self.failures.append(f"{what}: got {got.flatten()[:6].tolist()} ... expected "
                             f"{want.flatten()[:6].tolist()} ... (first differences at {bad})")

    def next_case(self):
        self.case_id += 1
        return self.case_id

    def noncontiguous(self, t):
        """A non-contiguous tensor with t's values (a transposed view)."""
        torch = self.torch
        base = torch.empty(tuple(reversed(t.shape)), dtype=t.dtype).t()
        base.copy_(t)
        assert not base.is_contiguous()
        return base

    # ---- reductions: every dtype x op -------------------------------------

    def reductions(self, name, op):
        torch, dist = self.torch, self.torch.distributed
        dt, n, me = self.dtype(name), self.world, self.rank
        rop = dist._make_nccl_premul_sum(PREMUL_FACTOR) if op == "PREMUL_SUM" \
            else getattr(dist.ReduceOp, op)
        tag = f"{name} {op}"

        # all_reduce, contiguous and not (a transposed view)
        for layout in ("contiguous", "non-contiguous"):
            case = self.next_case()
            vals = self.inputs(name, op, (7, 5), case)
            t = vals[me].to(dt, copy=True)
            if layout == "non-contiguous":
                t = self.noncontiguous(t)
            dist.all_reduce(t, op=rop)
            self.expect(f"all_reduce {tag} {layout}", t, self.reference(vals, name, op))

        # all_reduce_coalesced: three tensors of different shapes in one call
        shapes = [(3,), (4, 2), (1, 5)]
        case = self.next_case()
        vals = [self.inputs(name, op, s, case * 10 + i) for i, s in enumerate(shapes)]
        ts = [v[me].to(dt, copy=True) for v in vals]
        dist.all_reduce_coalesced(ts, op=rop)
        for i, t in enumerate(ts):
            self.expect(f"all_reduce_coalesced {tag} tensor {i}", t,
                        self.reference(vals[i], name, op))

        # reduce, the root rotating with the case
        case = self.next_case()
        root = case % n
        vals = self.inputs(name, op, (11,), case)
        t = vals[me].to(dt, copy=True)
        dist.reduce(t, dst=root, op=rop)
        want = self.reference(vals, name, op) if me == root else vals[me].to(dt)
        self.expect(f"reduce {tag} root {root}", t, want)

        # reduce_scatter: a list of n inputs, one output block
        case = self.next_case()
        vals = self.inputs(name, op, (n, 6), case)
        out = torch.empty(6, dtype=dt)
        dist.reduce_scatter(out, [vals[me][r].to(dt) for r in range(n)], op=rop)
        self.expect(f"reduce_scatter {tag}", out, self.reference(vals, name, op)[me])

        # reduce_scatter_tensor, out of place and in place (output = own block)
        for place in ("out of place", "in place"):
            case = self.next_case()
            vals = self.inputs(name, op, (n * 5,), case)
            inp = vals[me].to(dt, copy=True)
            out = inp.narrow(0, me * 5, 5) if place == "in place" else torch.empty(5, dtype=dt)
            dist.reduce_scatter_tensor(out, inp, op=rop)
            self.expect(f"reduce_scatter_tensor {tag} {place}", out,
                        self.reference(vals, name, op)[me * 5:(me + 1) * 5])

    # ---- data movement: any dtype (bytes) ---------------------------------

    def movement(self, name):
        torch, dist = self.torch, self.torch.distributed
        dt, n, me = self.dtype(name), self.world, self.rank

        def mine(case, shape):
            vals = self.inputs("int8", "SUM", shape, case)
            return [v.to(dt) for v in vals]

        case = self.next_case()
        root = case % n
        vals = mine(case, (9,))
        t = self.noncontiguous(vals[me].view(3, 3))
        dist.broadcast(t, src=root)
        self.expect(f"broadcast {name} root {root} non-contiguous", t, vals[root].view(3, 3))

        case = self.next_case()
        vals = mine(case, (4, 3))
        outs = [torch.empty(4, 3, dtype=dt) for _ in range(n)]
        dist.all_gather(outs, vals[me])
        for r in range(n):
            self.expect(f"all_gather {name} block {r}", outs[r], vals[r])

        for place in ("out of place", "in place"):
            case = self.next_case()
            vals = mine(case, (5,))
            out = torch.empty(n * 5, dtype=dt)
            inp = out.narrow(0, me * 5, 5) if place == "in place" else torch.empty(5, dtype=dt)
            inp.copy_(vals[me])
            dist.all_gather_into_tensor(out, inp)
            self.expect(f"all_gather_into_tensor {name} {place}", out, torch.cat(vals))

        case = self.next_case()
        root = case % n
        vals = mine(case, (6,))
        outs = [torch.empty(6, dtype=dt) for _ in range(n)] if me == root else None
        dist.gather(vals[me], gather_list=outs, dst=root)
        if me == root:
            for r in range(n):
                self.expect(f"gather {name} root {root} block {r}", outs[r], vals[r])

        case = self.next_case()
        root = case % n
        vals = mine(case, (n, 4))
        out = torch.empty(4, dtype=dt)
        dist.scatter(out, scatter_list=[vals[root][r] for r in range(n)] if me == root else None,
                     src=root)
        self.expect(f"scatter {name} root {root}", out, vals[root][me])

        # all_to_all_single, even splits: block d of rank s goes to rank d
        case = self.next_case()
        vals = mine(case, (n * 2, 3))
        out = torch.empty(n * 2, 3, dtype=dt)
        dist.all_to_all_single(out, vals[me])
        want = torch.cat([vals[s][me * 2:(me + 1) * 2] for s in range(n)])
        self.expect(f"all_to_all_single {name} even", out, want)

        # uneven: rank s sends (s + d) % 3 rows to rank d
        case = self.next_case()
        rows = [[(s + d) % 3 for d in range(n)] for s in range(n)]
        vals = [v.to(dt) for v in
                [self.inputs("int8", "SUM", (sum(rows[s]), 2), case * 7 + s)[s] for s in range(n)]]
        out = torch.empty(sum(rows[s][me] for s in range(n)), 2, dtype=dt)
        dist.all_to_all_single(out, vals[me], output_split_sizes=[rows[s][me] for s in range(n)],
                               input_split_sizes=rows[me])
        pieces = []
        for s in range(n):
            start = sum(rows[s][:me])
            pieces.append(vals[s][start:start + rows[s][me]])
        self.expect(f"all_to_all_single {name} uneven", out, torch.cat(pieces))

        # all_to_all (list form), blocks of different sizes: rank s sends
        # s + d + 1 elements to rank d
        case = self.next_case()
        blocks = [[self.inputs("int8", "SUM", (s + d + 1,), case * 31 + s * n + d)[s].to(dt)
                   for d in range(n)] for s in range(n)]
        outs = [torch.empty(s + me + 1, dtype=dt) for s in range(n)]
        dist.all_to_all(outs, blocks[me])
        for s in range(n):
            self.expect(f"all_to_all {name} block from {s}", outs[s], blocks[s][me])

        # all_gather_coalesced: two tensors of different shapes from every rank
        case = self.next_case()
        a = mine(case, (5,))
        b = mine(case + 1000, (2, 3))
        outs = [[torch.empty(5, dtype=dt), torch.empty(2, 3, dtype=dt)] for _ in range(n)]
        dist.all_gather_coalesced(outs, [a[me], b[me]])
        for r in range(n):
            self.expect(f"all_gather_coalesced {name} from {r} first", outs[r][0], a[r])
            self.expect(f"all_gather_coalesced {name} from {r} second", outs[r][1], b[r])

        if n == 1:
            return
        # A ring of isend/irecv in one batch, small and large (a large send
        # that ran before its receive would wait forever).
        for elems in (3, 300000):
            case = self.next_case()
            vals = mine(case, (elems,))
            got = torch.empty(elems, dtype=dt)
            ops = [dist.P2POp(dist.isend, vals[me], (me + 1) % n),
                   dist.P2POp(dist.irecv, got, (me - 1) % n)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
            self.expect(f"batch_isend_irecv ring {name} {elems}", got, vals[(me - 1) % n])

    def asynchronous(self):
        """Calls issued back to back complete in order with the right values."""
        torch, dist = self.torch, self.torch.distributed
        case = self.next_case()
        vals = [self.inputs("float32", "SUM", (1000 * (i + 1),), case * 13 + i) for i in range(6)]
        ts = [v[self.rank].to(torch.float32, copy=True) for v in vals]
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        works.append(dist.barrier(async_op=True))
        for w in works:
            w.wait()
        for i, t in enumerate(ts):
            self.expect(f"async all_reduce {i}", t, self.reference(vals[i], "float32", "SUM"))
        # A Future completes with nobody waiting on the Work: the group's
        # thread runs the call.
        fut = dist.all_reduce(ts[0], async_op=True).get_future()
        got = fut.wait()
        self.expect("future value is the output", got[0], ts[0])
        # So does a call only polled for completion (bounded: 120 s).
        vals = self.inputs("float32", "SUM", (777,), case * 13 + 7)
        t = vals[self.rank].to(torch.float32, copy=True)
        w = dist.all_reduce(t, async_op=True)
        deadline = time.monotonic() + 120
        while not w.is_completed() and time.monotonic() < deadline:
            time.sleep(0.001)
        self.expect("polled async all_reduce", t, self.reference(vals, "float32", "SUM"))
        # And a call whose handle is dropped at once on every rank but the
        # last, which waits: the others issue nothing more until that wait
        # returned (the store says so), so their dropped calls must run on
        # their own; the next synchronous call then works, in order.
        store = dist.distributed_c10d._get_default_store()
        key = f"dropped-call-waited-{case}"
        vals = self.inputs("float32", "SUM", (555,), case * 13 + 8)
        t = vals[self.rank].to(torch.float32, copy=True)
        w = dist.all_reduce(t, async_op=True)
        if self.rank != self.world - 1:
            del w
            store.wait([key], datetime.timedelta(seconds=60))
        else:
            w.wait()
            store.set(key, "1")
        after = torch.full((3,), float(self.rank + 1))
        dist.all_reduce(after)
        self.expect("dropped async all_reduce", t, self.reference(vals, "float32", "SUM"))
        self.expect("all_reduce after a dropped one", after,
                    torch.full((3,), float(self.world * (self.world + 1) // 2)))

    def point_to_point(self):
        """send / recv with tags, non-contiguous tensors, recv from any source."""
        torch, dist = self.torch, self.torch.distributed
        n, me = self.world, self.rank
        if n == 1:
            return
        # Rank 0 sends a tagged message to every rank, which receives it
        # into a transposed (non-contiguous) view.
        case = self.next_case()
        vals = [self.inputs("float32", "SUM", (4, 6), case * 17 + r)[r].to(torch.float32)
                for r in range(n)]
        if me == 0:
            for d in range(1, n):
                dist.send(vals[d].t().contiguous(), dst=d, tag=d + 100)
        else:
            out = torch.empty(4, 6).t()
            dist.recv(out, src=0, tag=me + 100)
            self.expect("send/recv tagged into a non-contiguous view", out, vals[me].t())
        # Every rank but 0 sends to rank 0, which receives from any source.
        if me == 0:
            seen = []
            for _ in range(n - 1):
                t = torch.empty(7, dtype=torch.int64)
                src = dist.recv(t)
                seen.append(src)
                self.expect(f"recv from any source ({src})", t, torch.full((7,), src * 11))
            self.expect("recv from any source: every sender once", torch.tensor(sorted(seen)),
                        torch.arange(1, n))
        else:
            dist.send(torch.full((7,), me * 11, dtype=torch.int64), dst=0)
        dist.barrier()

    def coalescing(self):
        """torch 2.x's coalescing manager: all_reduce, all_gather_into_tensor and
        reduce_scatter_tensor issued inside it run as one coalesced call each
        kind, and the manager's work completes them all."""
        torch, dist = self.torch, self.torch.distributed
        n, me = self.world, self.rank
        cpu = torch.device("cpu")
        case = self.next_case()
        vals = [self.inputs("float32", "SUM", (5 + i,), case * 5 + i) for i in range(3)]
        ts = [v[me].to(torch.float32, copy=True) for v in vals]
        with dist._coalescing_manager(device=cpu, async_ops=True) as cm:
            for t in ts:
                dist.all_reduce(t)
        cm.wait()
        for i, t in enumerate(ts):
            self.expect(f"coalesced all_reduce {i}", t, self.reference(vals[i], "float32", "SUM"))
        case = self.next_case()
        vals = [self.inputs("bfloat16", "SUM", (n * (3 + i),), case * 5 + i) for i in range(2)]
        outs = [torch.empty(3 + i, dtype=torch.bfloat16) for i in range(2)]
        with dist._coalescing_manager(device=cpu, async_ops=True) as cm:
            for i, o in enumerate(outs):
                dist.reduce_scatter_tensor(o, vals[i][me].to(torch.bfloat16), op=dist.ReduceOp.AVG)
        cm.wait()
        for i, o in enumerate(outs):
            want = self.reference(vals[i], "bfloat16", "AVG")[me * (3 + i):(me + 1) * (3 + i)]
            self.expect(f"coalesced reduce_scatter_tensor AVG {i}", o, want)
        case = self.next_case()
        vals = [self.inputs("int64", "SUM", (2 + i,), case * 5 + i) for i in range(2)]
        outs = [torch.empty(n * (2 + i), dtype=torch.int64) for i in range(2)]
        with dist._coalescing_manager(device=cpu, async_ops=True) as cm:
            for i, o in enumerate(outs):
                dist.all_gather_into_tensor(o, vals[i][me].clone())
        cm.wait()
        for i, o in enumerate(outs):
            self.expect(f"coalesced all_gather_into_tensor {i}", o, torch.cat(vals[i]))

    def device_map(self):
        """A group of "cpu:rina,cuda:gloo": its CPU tensors go to rina."""
        torch, dist = self.torch, self.torch.distributed
        import rina_torch
        g = dist.new_group(backend="cpu:rina,cuda:gloo")
        backend = g._get_backend(torch.device("cpu"))
        if isinstance(backend, rina_torch.RinaBackend):
            self.passed += 1
        else:
            self.failures.append(f"device map: the CPU backend is {type(backend).__name__}")
        t = torch.full((4,), float(self.rank + 1))
        dist.all_reduce(t, group=g)
        self.expect("device map cpu:rina all_reduce", t,
                    torch.full((4,), float(self.world * (self.world + 1) // 2)))
        dist.destroy_process_group(g)

    def ddp_comm_hooks(self):
        """DDP communication hooks run on the Work's Future: the allreduce
        hook and a compression hook (bf16; fp16 on torch 1.13) average every
        rank's gradient."""
        torch, dist = self.torch, self.torch.distributed
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        from torch.nn.parallel import DistributedDataParallel
        n, me = self.world, self.rank
        # (torch 1.13 takes its bf16 hook only with NCCL: fp16 there.)
        for name in ("allreduce_hook", "bf16_compress_hook" if TORCH2 else "fp16_compress_hook"):
            model = DistributedDataParallel(torch.nn.Linear(8, 4, bias=False))
            model.register_comm_hook(None, getattr(default_hooks, name))
            model(torch.full((2, 8), float(me + 1))).sum().backward()
            # d(sum(W x))/dW = 2 (rank + 1) on every rank; their mean is n + 1.
            self.expect(f"DDP with {name}", model.module.weight.grad,
                        torch.full((4, 8), float(n + 1)))

    def refusals(self):
        """What rina does not do raises RuntimeError naming the call, dtype or op."""
        torch, dist = self.torch, self.torch.distributed
        cases = [
            ("reduce_scatter_tensor complex64", "dtype ComplexFloat",
             lambda: dist.reduce_scatter_tensor(torch.ones(1, dtype=torch.complex64),
                                                torch.ones(self.world, dtype=torch.complex64))),
            ("all_reduce BAND int32", "op BAND",
             lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BAND)),
            ("all_reduce BOR int32", "op BOR",
             lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BOR)),
            ("all_reduce BXOR int32", "op BXOR",
             lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BXOR)),
            ("reduce BAND int32", "op BAND",
             lambda: dist.reduce(torch.ones(4, dtype=torch.int32), dst=0, op=dist.ReduceOp.BAND)),
            ("all_reduce AVG bool", "op AVG is not supported for dtype Bool",
             lambda: dist.all_reduce(torch.ones(4, dtype=torch.bool), op=dist.ReduceOp.AVG)),
            ("all_reduce PREMUL_SUM int32", "PREMUL_SUM takes floating-point",
             lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32),
                                     op=dist._make_nccl_premul_sum(2.0))),
            ("send to itself", "to or from itself",
             lambda: self.torch.distributed.distributed_c10d._get_default_group().send(
                 [torch.ones(1)], self.rank, 0)),
            ("recv from a rank outside the group", "outside",
             lambda: self.torch.distributed.distributed_c10d._get_default_group().recv(
                 [torch.ones(1)], self.world, 0)),
            ("all_to_all_single splits that do not add up", "add up to",
             lambda: dist.all_to_all_single(torch.ones(self.world + 1), torch.ones(self.world),
                                            output_split_sizes=[1] * self.world,
                                            input_split_sizes=[1] * self.world)),
            ("all_reduce of a sparse tensor", "dense",
             lambda: dist.all_reduce(torch.ones(3).to_sparse())),
        ]
        for what, needle, call in cases:
            try:
                call()
            except RuntimeError as e:
                if needle in str(e):
                    self.passed += 1
                else:
                    self.failures.append(f"{what}: RuntimeError without '{needle}': {e}")
            except Exception as e:  # noqa: BLE001 -- the wrong kind is a failure
                self.failures.append(f"{what}: {type(e).__name__} instead of RuntimeError: {e}")
            else:
                self.failures.append(f"{what}: no error")
        # The group still works after the refusals.
        t = torch.ones(3)
        dist.all_reduce(t)
        self.expect("all_reduce after refusals", t, torch.full((3,), float(self.world)))


def destroy_in_flight(c):
    """Destroying a group aborts its call in progress and fails the queued
    ones, promptly: rank 0 issues two all_reduces on a group the other ranks
    never call on, destroys it, and both waits must raise; the others
    destroy theirs only after rank 0 is done (the default group's barrier)."""
    torch, dist = c.torch, c.torch.distributed
    g = dist.new_group(backend="rina")
    if c.rank == 0:
        works = [dist.all_reduce(torch.ones(1 << 16), group=g, async_op=True) for _ in range(2)]
        works[0].get_future()  # hands the calls to the group's thread: one may be in flight
        start = time.monotonic()
        dist.destroy_process_group(g)
        del g  # the last reference: the group's destructor runs here
        for i, w in enumerate(works):
            try:
                w.wait()
                c.failures.append(f"destroyed group: call {i} did not raise")
            except RuntimeError as e:
                if "aborted" in str(e) or "destroyed" in str(e):
                    c.passed += 1
                else:
                    c.failures.append(f"destroyed group: call {i}: unexpected error: {e}")
        took = time.monotonic() - start
        if took > 30:  # the group's timeout is 120 s
            c.failures.append(f"destroyed group: the calls took {took:.1f} s to fail")
        dist.barrier()
    else:
        dist.barrier()
        dist.destroy_process_group(g)


def worker(args):
    import torch
    import torch.distributed as dist
    import rina_torch  # noqa: F401  registers "rina"
    global TORCH2
    TORCH2 = rina_torch._C.torch_backend_api == "Backend"
    torch.set_num_threads(1)
    dist.init_process_group("rina", init_method=f"file://{args.store}/store", rank=args.rank,
                            world_size=args.world, timeout=datetime.timedelta(seconds=120))
    assert dist.get_backend() == "rina", dist.get_backend()
    c = Checker(args.rank, args.world)
    for name in REDUCE_DTYPES:
        for op in ops_for(name):
            c.reductions(name, op)
    for name in REDUCE_DTYPES + ["complex64"]:
        c.movement(name)
    if TORCH2:
        c.coalescing()
        c.device_map()
    c.asynchronous()
    c.ddp_comm_hooks()
    c.point_to_point()
    c.refusals()
    if args.world > 1:
        destroy_in_flight(c)
    dist.barrier()
    dist.destroy_process_group()
    for f in c.failures:
        print(f"rank {args.rank}: FAIL {f}")
    print(f"rank {args.rank}: {c.passed} checks passed, {len(c.failures)} failed")
    return 1 if c.failures else 0


if __name__ == "__main__":
    import ranks
    sys.exit(ranks.main(launch, worker, default_ranks=None))
