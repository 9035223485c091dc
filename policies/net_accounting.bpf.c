/* net_accounting: per-connection traffic accounting for the ncclbpf net plugin.
 *   net_conn     conn_id -> bytes / operations / busy time per direction, socket count
 *   net_latency  {conn_id, op, log2(duration in us)} -> completions
 * Read the maps with the CLI or the runtime API; the program never changes a decision. */
#include <ncclbpf/policy.h>

struct net_conn_stats {
	__u64 send_bytes, recv_bytes;
	__u64 send_ops, recv_ops;
	__u64 send_ns, recv_ns; /* sum of post-to-completion times */
	__u32 dev, n_sockets;
	__u64 lifetime_ns;      /* set at close */
};

struct net_latency_key {
	__u64 conn_id;
	__u32 op;     /* NCCLBPF_NET_OP_SEND_DONE or _RECV_DONE */
	__u32 bucket; /* floor(log2(duration_us)), 0 for < 2 us */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct net_conn_stats);
} net_conn SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct net_latency_key);
	__type(value, __u64);
} net_latency SEC(".maps");

SEC("net")
int net_accounting(struct ncclbpf_net_ctx *ctx)
{
	__u32 op = ctx->op;
	__u64 id = ctx->conn_id;

	if (op == NCCLBPF_NET_OP_CONNECT || op == NCCLBPF_NET_OP_ACCEPT) {
		struct net_conn_stats s = {};
		s.dev = ctx->dev;
		s.n_sockets = ctx->n_sockets;
		bpf_map_update_elem(&net_conn, &id, &s, BPF_ANY);
		return 0;
	}
	if (op != NCCLBPF_NET_OP_SEND_DONE && op != NCCLBPF_NET_OP_RECV_DONE &&
	    op != NCCLBPF_NET_OP_CLOSE)
		return 0;
	struct net_conn_stats *s = bpf_map_lookup_elem(&net_conn, &id);
	if (!s) {
		struct net_conn_stats z = {};
		z.dev = ctx->dev;
		z.n_sockets = ctx->n_sockets;
		bpf_map_update_elem(&net_conn, &id, &z, BPF_NOEXIST);
		s = bpf_map_lookup_elem(&net_conn, &id);
		if (!s)
			return 0;
	}
	if (op == NCCLBPF_NET_OP_CLOSE) {
		s->lifetime_ns = ctx->duration_ns;
		return 0;
	}
	if (op == NCCLBPF_NET_OP_SEND_DONE) {
		__sync_fetch_and_add(&s->send_bytes, ctx->bytes);
		__sync_fetch_and_add(&s->send_ops, 1);
		__sync_fetch_and_add(&s->send_ns, ctx->duration_ns);
	} else {
		__sync_fetch_and_add(&s->recv_bytes, ctx->bytes);
		__sync_fetch_and_add(&s->recv_ops, 1);
		__sync_fetch_and_add(&s->recv_ns, ctx->duration_ns);
	}
	struct net_latency_key k = {};
	k.conn_id = id;
	k.op = op;
	k.bucket = ncclbpf_size_bucket(ctx->duration_ns >> 10);
	__u64 *cnt = bpf_map_lookup_elem(&net_latency, &k);
	if (cnt) {
		__sync_fetch_and_add(cnt, 1);
	} else {
		__u64 one = 1;
		bpf_map_update_elem(&net_latency, &k, &one, BPF_NOEXIST);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
