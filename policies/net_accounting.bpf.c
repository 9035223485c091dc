/* net_accounting: per-connection traffic accounting for the ncclbpf net plugin.
 *   net_conn  conn_id -> bytes / operations / busy time per direction, socket count,
 *             and a latency histogram per direction: bucket b counts completions that took
 *             [2^b, 2^(b+1)) us (b = 0 also holds < 1 us; the last bucket everything above)
 * One map lookup per completion (the histogram lives in the connection's value).
 * Read the map with the CLI or the runtime API; the program never changes a decision. */
#include <ncclbpf/policy.h>

#define NET_HIST_BUCKETS 24

struct net_conn_stats {
	__u64 send_bytes, recv_bytes;
	__u64 send_ops, recv_ops;
	__u64 send_ns, recv_ns; /* sum of post-to-completion times */
	__u32 dev, n_sockets;
	__u64 lifetime_ns;      /* set at close */
	__u64 send_hist[NET_HIST_BUCKETS];
	__u64 recv_hist[NET_HIST_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct net_conn_stats);
} net_conn SEC(".maps");

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
	__u32 b = ncclbpf_size_bucket(ctx->duration_ns >> 10); /* ~us */
	if (b >= NET_HIST_BUCKETS)
		b = NET_HIST_BUCKETS - 1;
	if (op == NCCLBPF_NET_OP_SEND_DONE) {
		__sync_fetch_and_add(&s->send_bytes, ctx->bytes);
		__sync_fetch_and_add(&s->send_ops, 1);
		__sync_fetch_and_add(&s->send_ns, ctx->duration_ns);
		__sync_fetch_and_add(&s->send_hist[b], 1);
	} else {
		__sync_fetch_and_add(&s->recv_bytes, ctx->bytes);
		__sync_fetch_and_add(&s->recv_ops, 1);
		__sync_fetch_and_add(&s->recv_ns, ctx->duration_ns);
		__sync_fetch_and_add(&s->recv_hist[b], 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
