# Two ranks on one GPU as two emulated nodes (distinct NCCL_HOSTID, sockets over lo); the rank
# NP_RANK (default 1) runs without NCCL_PROFILER_PLUGIN. 400 AllReduce of 1 MiB, checked.
import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
def w(rank, world):
    if rank == int(os.environ.get("NP_RANK", "1")):
        os.environ.pop("NCCL_PROFILER_PLUGIN", None)  # NCCL loads no profiler on this rank
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("NP_PORT", "29731"),
                      NCCL_HOSTID=f"emu-node-{rank}")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", 0))
    bad = 0
    for i in range(400):
        x = torch.full((1 << 18,), float(rank + 1), device="cuda")
        dist.all_reduce(x)
        bad += int((x != world * (world + 1) / 2).sum().item())
    torch.cuda.synchronize(); dist.destroy_process_group()
    print(f"rank {rank}: {'results correct' if bad == 0 else f'{bad} WRONG'}", flush=True)
if __name__ == "__main__":
    n = int(sys.argv[1]); mp.spawn(w, args=(n,), nprocs=n)
