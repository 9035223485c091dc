/* Test program: connections of communicator 0x77 get 3 data sockets and 2 threads. */
#include <ncclbpf/policy.h>

SEC("net")
int net_set_socks(struct ncclbpf_net_ctx *ctx)
{
	if (ctx->op == NCCLBPF_NET_OP_CONNECT && ctx->comm_id == 0x77) {
		ctx->n_sockets = 3;
		ctx->n_threads = 2;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
