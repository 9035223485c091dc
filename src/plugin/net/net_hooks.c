/* SEC("net") programs on the net plugin's path. Without attached programs the data path
 * pays one load per call (net_hooks_active, inline) and takes no timestamps. In the
 * standalone TCP build (NCCLBPF_NET_STANDALONE) there is no runtime and no hook. */
#include <string.h>
#include <time.h>

#include "plugin/net/net_plugin.h"

uint64_t net_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#ifdef NCCLBPF_NET_STANDALONE
int net_hooks_run(struct net_hook_args *a)
{
	(void)a;
	return 0;
}

void net_hooks_init(nb_net_logger_t log)
{
	(void)log;
}
#else
#include "ncclbpf/policy.h"
#include "runtime/runtime.h"

int net_hooks_run(struct net_hook_args *a)
{
	/* inside an epoch section: a concurrent hot reload frees the chain it replaces only
	 * after every section that could have seen it has been left (runtime.h) */
	const struct nb_hook_chain *chain = runtime_chain_enter(NB_HOOK_NET);
	if (!chain) {
		runtime_chain_exit();
		return 0;
	}
	struct ncclbpf_net_ctx ctx = {
		.comm_id = a->comm_id,
		.bytes = a->bytes,
		.op = a->op,
		.dev = a->dev,
		.peer = -1,
		.tag = a->tag,
		.now_ns = a->now_ns ? a->now_ns : net_now_ns(),
		.conn_id = a->conn_id,
		.duration_ns = a->duration_ns,
		.n_sockets = a->n_sockets,
		.n_threads = a->n_threads,
		.n_recv = a->n_recv,
		.abi_version = a->abi_version,
		.mode = a->mode,
	};
	int faults = runtime_chain_run(chain, &ctx, sizeof(ctx));
	runtime_chain_exit();
	a->n_sockets = ctx.n_sockets;
	a->n_threads = ctx.n_threads;
	return faults;
}

void net_hooks_init(nb_net_logger_t log)
{
	if (log)
		runtime_set_logger((nb_logger_fn)log);
	runtime_load_policies_from_env();
}
#endif
