"""NCCL call paths PyTorch drives, under ncclbpf (issue 25): N ranks on one GPU as N
emulated nodes (each its own NCCL_HOSTID; sockets over lo), every result checked.

  eager     all_reduce of several sizes (the baseline the others are compared with)
  grouped   one NCCL group of mixed collectives (coalescing: all_reduce of three sizes,
            all_gather_into_tensor, reduce_scatter_tensor); NCCL <= 2.30 tunes same-type
            tasks within 4x together (numPipeOps > 1)
  uneven    all_gather of tensors of different sizes per rank (PyTorch issues a group of
            ncclBroadcast: 2.29+ batch them into AllGatherV plans)
  graph     a CUDA graph with three collectives: captured once (NCCL tunes at capture),
            replayed REPLAYS times (never tuned), eager collectives around it

The plugin is selected only through NCCL's environment (NCCL_TUNER_PLUGIN,
NCCL_PROFILER_PLUGIN, NCCLBPF_*), as in a real job. Prints one line per rank and path:
"rank R path P: N collectives (R replayed), results correct" or the number of wrong
elements; exit status 1 if any result was wrong or a path failed.

    python3 scripts/gpu_torch_paths.py 2 [ITERS] [REPLAYS]
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def check(t, want):
    return int((t != want).sum().item())


def path_eager(rank, world, iters):
    bad = n = 0
    for i in range(iters):
        for numel in (1 << 10, 1 << 16, 1 << 20):
            x = torch.full((numel,), float(rank + 1), device="cuda")
            dist.all_reduce(x)
            bad += check(x, world * (world + 1) / 2)
            n += 1
    return bad, n, 0


def path_grouped(rank, world, iters):
    """Mixed collective types in one NCCL group (ProcessGroupNCCL coalescing)."""
    pg = dist.distributed_c10d._get_default_group()
    dev = torch.device("cuda", torch.cuda.current_device())
    bad = n = 0
    s = world * (world + 1) / 2
    for i in range(iters):
        a = torch.full((1 << 18,), float(rank + 1), device="cuda")
        b = torch.full((1 << 17,), float(rank + 1), device="cuda")
        c = torch.full((1 << 10,), float(rank + 1), device="cuda")
        gin = torch.full((1 << 16,), float(rank + 1), device="cuda")
        gout = torch.empty((world << 16,), device="cuda")
        rin = torch.full((world << 16,), float(rank + 1), device="cuda")
        rout = torch.empty((1 << 16,), device="cuda")
        # the backend's own coalescing: everything between start and end is one NCCL
        # group (ncclGroupStart/End), whatever the types (_coalescing_manager's fast path
        # would batch by the first op's type)
        backend = pg._get_backend(dev)
        # some torch releases take the device here; 2.11 (on the device) takes none
        try:
            backend._start_coalescing(dev)
            end = lambda: backend._end_coalescing(dev)
        except TypeError:
            backend._start_coalescing()
            end = lambda: backend._end_coalescing()
        backend.allreduce([a])
        backend.allreduce([b])
        backend.allreduce([c])
        backend._allgather_base(gout, gin)
        backend._reduce_scatter_base(rout, rin)
        work = end()
        if work is not None:
            work.wait()
        torch.cuda.synchronize()
        bad += check(a, s) + check(b, s) + check(c, s) + check(rout, s)
        want = torch.arange(world, device="cuda").repeat_interleave(1 << 16).float() + 1
        bad += check(gout, want)
        n += 5
    return bad, n, 0


def path_uneven(rank, world, iters):
    """all_gather with a different size per rank: a group of broadcasts."""
    bad = n = 0
    for i in range(iters):
        sizes = [(r + 1) * 12288 + (i % 3) * 256 for r in range(world)]
        mine = torch.full((sizes[rank],), float(rank + 1), device="cuda")
        outs = [torch.empty((sizes[r],), device="cuda") for r in range(world)]
        dist.all_gather(outs, mine)
        for r in range(world):
            bad += check(outs[r], float(r + 1))
        n += world
    return bad, n, 0


def path_graph(rank, world, iters, replays):
    """Capture three collectives in a CUDA graph, replay it; eager collectives around."""
    bad = n = 0
    s = world * (world + 1) / 2
    x1 = torch.zeros((1 << 20,), device="cuda")
    x2 = torch.zeros((1 << 14,), device="cuda")
    x3 = torch.zeros((1 << 18,), device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on the capture stream, as PyTorch requires
        for _ in range(3):
            dist.all_reduce(x1)
            dist.all_reduce(x2)
            dist.all_reduce(x3)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    n += 9
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dist.all_reduce(x1)
        dist.all_reduce(x2)
        dist.all_reduce(x3)
    n += 3
    replayed = 0
    for i in range(replays):
        for t in (x1, x2, x3):
            t.fill_(float(rank + 1))
        g.replay()
        torch.cuda.synchronize()
        bad += check(x1, s) + check(x2, s) + check(x3, s)
        replayed += 3
        if i % 4 == 0:  # eager collectives between replays: tuned as usual
            y = torch.full((1 << 16,), float(rank + 1), device="cuda")
            dist.all_reduce(y)
            bad += check(y, s)
            n += 1
    return bad, n + replayed, replayed


def worker(rank, world, iters, replays, paths, port, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      NCCL_HOSTID=f"emu-node-{rank}")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=world,
                            device_id=torch.device("cuda", 0))
    lines, failed = [], 0
    for p in paths:
        try:
            if p == "graph":
                bad, n, rep = path_graph(rank, world, iters, replays)
            else:
                bad, n, rep = globals()["path_" + p](rank, world, iters)
            torch.cuda.synchronize()
            lines.append(f"rank {rank} path {p}: {n} collectives ({rep} replayed), "
                         + ("results correct" if bad == 0 else f"{bad} WRONG"))
            failed += bad != 0
        except Exception as e:  # a path PyTorch cannot drive here: say so, fail
            lines.append(f"rank {rank} path {p}: FAILED {type(e).__name__}: {e}")
            failed += 1
        dist.barrier()
    dist.destroy_process_group()
    q.put((rank, failed, lines))


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    replays = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    paths = os.environ.get("PATHS", "eager,grouped,uneven,graph").split(",")
    port = int(os.environ.get("PATHS_PORT", str(29600 + os.getpid() % 300)))
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, iters, replays, paths, port, q))
             for r in range(world)]
    for p in procs:
        p.start()
    results = sorted(q.get(timeout=900) for _ in procs)
    for p in procs:
        p.join()
    failed = 0
    for rank, f, lines in results:
        failed += f
        for line in lines:
            print(line, flush=True)
    failed += sum(p.exitcode != 0 for p in procs)
    print("all paths correct" if failed == 0 else f"{failed} path(s) FAILED", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
