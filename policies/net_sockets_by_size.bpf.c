/* net_sockets_by_size: picks the socket and thread count of each new connection of the own
 * TCP transport from the message-size profile this process has seen on that device.
 *   completions >= LARGE bytes count as large; at connect time, with at least MIN_SAMPLES
 *   completions on the device:
 *     >= half large  -> SOCKS_LARGE data sockets and as many threads (bulk traffic)
 *     no large at all -> 0 data sockets (everything inline on the control socket: no
 *                        thread hand-off, lowest latency)
 *     otherwise       -> the environment's default (NCCLBPF_NET_NSOCKS / _NTHREADS)
 * NCCL connects a communicator's peers when it first uses them, so later connections (new
 * communicators, lazily connected p2p peers) follow the traffic the earlier ones carried.
 * The knobs are .rodata (rewritable by tooling without recompiling). */
#include <ncclbpf/policy.h>

const volatile __u64 LARGE = 512 * 1024; /* NCCL's Simple-protocol chunk */
const volatile __u64 MIN_SAMPLES = 64;
const volatile __u32 SOCKS_LARGE = 4;

struct net_size_profile {
	__u64 small, large;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64); /* per net device */
	__type(key, __u32);
	__type(value, struct net_size_profile);
} net_size_profile SEC(".maps");

SEC("net")
int net_sockets_by_size(struct ncclbpf_net_ctx *ctx)
{
	__u32 dev = ctx->dev;
	struct net_size_profile *p = bpf_map_lookup_elem(&net_size_profile, &dev);
	if (!p)
		return 0;
	if (ctx->op == NCCLBPF_NET_OP_SEND_DONE || ctx->op == NCCLBPF_NET_OP_RECV_DONE) {
		if (ctx->bytes >= LARGE)
			__sync_fetch_and_add(&p->large, 1);
		else
			__sync_fetch_and_add(&p->small, 1);
		return 0;
	}
	if (ctx->op != NCCLBPF_NET_OP_CONNECT || ctx->mode != NCCLBPF_NET_MODE_TCP)
		return 0;
	__u64 large = p->large, total = p->small + p->large;
	if (total < MIN_SAMPLES)
		return 0;
	if (large * 2 >= total) {
		ctx->n_sockets = SOCKS_LARGE;
		ctx->n_threads = SOCKS_LARGE;
	} else if (large == 0) {
		ctx->n_sockets = 0;
		ctx->n_threads = 1;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
