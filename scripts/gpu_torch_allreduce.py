"""A real framework loading ncclbpf: torch.distributed all-reduce, one process per GPU.

The plugin is selected only through NCCL's environment (NCCL_TUNER_PLUGIN and the
NCCLBPF_* variables the caller exports); this script knows nothing of ncclbpf. Each rank
checks the numerical result of every all-reduce and rank 0 prints a one-line summary.

    NCCL_NVLS_ENABLE=0 NCCL_TUNER_PLUGIN=$PWD/build/libncclbpf.so \
    NCCLBPF_POLICY=build/policies/size_aware.bpf.o python3 scripts/gpu_torch_allreduce.py 4
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26]  # bytes of float32 tensors
ITERS = 50


def worker(rank, world, port, out):
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    bad = 0
    lines = []
    for nbytes in SIZES:
        n = nbytes // 4
        base = torch.arange(n, device="cuda", dtype=torch.float32) % 7 + 1
        expect = base * (world * (world + 1) / 2)
        x = base * (rank + 1)
        dist.all_reduce(x)  # warm-up and first check
        bad += int((x != expect).sum().item())
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(ITERS):
            y = base * (rank + 1)
            dist.all_reduce(y)
        torch.cuda.synchronize()
        dt = (time.perf_counter() - t0) / ITERS * 1e6
        bad += int((y != expect).sum().item())
        lines.append(f"{nbytes} B: {dt:.1f} us/iter (incl. input copy)")
    dist.barrier()
    dist.destroy_process_group()
    out.put((rank, bad, lines))


def main():
    world = int(sys.argv[1]) if len(sys.argv) > 1 else torch.cuda.device_count()
    port = 29500 + os.getpid() % 1000
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, port, q)) for r in range(world)]
    for p in procs:
        p.start()
    results = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()
    bad = sum(r[1] for r in results)
    failed = any(p.exitcode != 0 for p in procs)
    for line in sorted(results)[0][2]:
        print("torch all_reduce", line)
    print(f"torch all_reduce: {world} ranks, wrong elements {bad}, "
          f"{'OK' if not bad and not failed else 'FAILED'}")
    sys.exit(1 if bad or failed else 0)


if __name__ == "__main__":
    main()
