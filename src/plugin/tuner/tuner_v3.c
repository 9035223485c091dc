/* ncclTunerPlugin_v3 (NCCL 2.22+ bind it when no newer version is exported; 2.27-2.30 still
 * accept it through their shims). No commId and no regBuff: comm_id = 0, reg_buff = 0. */
#include "plugin/tuner/tuner.h"

static int v3_init(size_t n_ranks, size_t n_nodes, nb_nccl_logger_t log, void **ctx)
{
	tuner_comm_open(3, 0, n_ranks, n_nodes, log, ctx);
	if (ctx)
		tuner_comm_chain_init(*ctx, n_ranks, n_nodes, log, NULL, NULL);
	return NB_NCCL_SUCCESS;
}

static int v3_get_coll_info(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
			    float **cost_table, int num_algo, int num_proto, int *n_channels)
{
	return tuner_get_coll_info(ctx, coll_type, n_bytes, num_pipe_ops, cost_table, num_algo,
				   num_proto, 0, n_channels);
}

__attribute__((visibility("default"))) const struct nb_nccl_tuner_v3 ncclTunerPlugin_v3 = {
	.name = "ncclbpf",
	.init = v3_init,
	.get_coll_info = v3_get_coll_info,
	.destroy = tuner_comm_close,
};
