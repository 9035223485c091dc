/* ncclTunerPlugin_v4: NCCL 2.27's native tuner ABI (v3 plus regBuff). No commId: comm_id = 0. */
#include "plugin/tuner/tuner.h"

static int v4_init(size_t n_ranks, size_t n_nodes, nb_nccl_logger_t log, void **ctx)
{
	tuner_comm_open(4, 0, n_ranks, n_nodes, log, ctx);
	if (ctx)
		tuner_comm_chain_init(*ctx, n_ranks, n_nodes, log, NULL, NULL);
	return NB_NCCL_SUCCESS;
}

__attribute__((visibility("default"))) const struct nb_nccl_tuner_v4 ncclTunerPlugin_v4 = {
	.name = "ncclbpf",
	.init = v4_init,
	.get_coll_info = tuner_get_coll_info,
	.destroy = tuner_comm_close,
};
