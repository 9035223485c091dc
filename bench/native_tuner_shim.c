/* See native_tuner_shim.h. */
#include "native_tuner_shim.h"

#include <stdbool.h>
#include <stdlib.h>

#include "plugin/comm_channels.h"
#include "plugin/tuner/tuner.h"

native_policy_fn native_shim_policy;

struct native_comm {
	uint64_t comm_id;
	uint32_t n_ranks, n_nodes, ranks_per_node;
	struct nb_nccl_nvl_domain_info_v5 nvl;
	bool pin; /* NCCLBPF_TUNER_SYM, as the plugin reads it */
	uint64_t seq[NCCLBPF_NUM_COLLS], comm_seq;
};

static int native_init(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		       nb_nccl_logger_t log, struct nb_nccl_nvl_domain_info_v5 *nvl,
		       struct nb_nccl_tuner_constants_v5 *constants)
{
	(void)log;
	(void)constants;
	struct native_comm *c = calloc(1, sizeof(*c));
	if (c) {
		c->comm_id = comm_id;
		c->n_ranks = (uint32_t)n_ranks;
		c->n_nodes = (uint32_t)n_nodes;
		c->ranks_per_node = n_nodes && n_ranks % n_nodes == 0 ? (uint32_t)(n_ranks / n_nodes)
								       : 0;
		if (nvl)
			c->nvl = *nvl;
		c->pin = tuner_sym_mode_parse(getenv("NCCLBPF_TUNER_SYM")) != 0;
	}
	*ctx = c;
	return 0;
}

/* tuner_get_coll_info's straight path with the program call replaced by the native policy.
 * Before 2026-11-26 the baseline did not pin NCCL's choice when the policy kept it (the
 * plugin always does while programs are attached: tuner.h "pinning"), nor fill comm_seq,
 * the NVLink-domain fields and ranks_per_node: "noop" then compared a pinned decision with
 * an unpinned one. */
static int native_get_coll_info(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
				float **cost_table, int num_algo, int num_proto, int reg_buff,
				int *n_channels)
{
	struct native_comm *tc = ctx;
	if (!tc || !cost_table || !n_channels || coll_type < 0 ||
	    coll_type >= NCCLBPF_NUM_COLLS || num_algo <= 0 || num_proto <= 0)
		return 0;
	float *table = (float *)cost_table;
	struct ncclbpf_tuner_ctx c;
	struct tuner_fill_info fill;
	c.comm_id = tc->comm_id;
	c.n_bytes = n_bytes;
	c.seq = tc->seq[coll_type]++;
	c.coll_type = (uint32_t)coll_type;
	c.n_ranks = tc->n_ranks;
	c.n_nodes = tc->n_nodes;
	c.num_pipe_ops = num_pipe_ops > 0 ? (uint32_t)num_pipe_ops : 0;
	c.reg_buff = reg_buff ? 1 : 0;
	int max_ch = tc->comm_id ? comm_channels_get(tc->comm_id) : 0;
	c.max_channels = max_ch > 0 ? (uint32_t)max_ch : 0;
	c.abi_version = 5;
	tuner_ctx_fill_info(&c, table, num_algo, num_proto, &fill);
	c.n_nvl_domains = (uint32_t)tc->nvl.n_nvl_domains;
	c.min_ranks_per_nvl_domain = (uint32_t)tc->nvl.min_ranks_per_nvl_domain;
	c.max_ranks_per_nvl_domain = (uint32_t)tc->nvl.max_ranks_per_nvl_domain;
	c.ranks_per_node = tc->ranks_per_node;
	c.comm_seq = tc->comm_seq++;
	native_shim_policy(&c);
	if (tuner_ctx_keeps(&c)) {
		if (tc->pin)
			tuner_pin_filled(table, num_algo, num_proto, &fill);
		return 0;
	}
	struct tuner_applied applied;
	tuner_translate(table, num_algo, num_proto, c.algo, c.proto, c.n_channels, n_channels,
			&applied);
	if (applied.algo < 0 && tc->pin)
		tuner_pin_filled(table, num_algo, num_proto, &fill);
	return 0;
}

static int native_finalize(void *ctx)
{
	free(ctx);
	return 0;
}

const struct nb_nccl_tuner_v5 native_tuner_shim = {
	.name = "native",
	.init = native_init,
	.get_coll_info = native_get_coll_info,
	.finalize = native_finalize,
};
