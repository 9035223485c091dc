"""Closed loop on real GPUs: 2 processes, torch.distributed all_reduce of 64 MiB with a
synchronize after each (so completions come back before the next decision, as in a
training step), NCCL_TUNER_PLUGIN + NCCL_PROFILER_PLUGIN = libncclbpf.so and
NCCLBPF_POLICY = adaptive_channels.bpf.o set by the caller (tests/profiler/gpu_check.sh).
Usage: python3 gpu_loop.py [iters] [bytes]"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def run(rank, world, iters, nbytes):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29533"
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    x = torch.ones(nbytes // 4, device="cuda")
    for _ in range(iters):
        dist.all_reduce(x)
        torch.cuda.synchronize()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    nbytes = int(sys.argv[2]) if len(sys.argv) > 2 else 64 << 20
    mp.spawn(run, args=(2, iters, nbytes), nprocs=2)
