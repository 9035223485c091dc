/* ncclTunerPlugin_v5: NCCL 2.28/2.29's native tuner ABI (ctx first in init, commId). The
 * NVLink-domain info goes into the policy context; the tuning constants only to an inner plugin
 * (NCCLBPF_TUNER_INNER). */
#include "plugin/tuner/tuner.h"

static int v5_init(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		   nb_nccl_logger_t log, struct nb_nccl_nvl_domain_info_v5 *nvl,
		   struct nb_nccl_tuner_constants_v5 *constants)
{
	tuner_comm_open(5, comm_id, n_ranks, n_nodes, log, ctx);
	if (ctx) {
		tuner_comm_set_nvl(*ctx, nvl);
		/* the inner plugin may edit NCCL's tuning constants, as it would without us */
		tuner_comm_chain_init(*ctx, n_ranks, n_nodes, log, nvl, constants);
		/* SEC("tuner/init") programs see the constants after the inner plugin */
		tuner_run_init_hook(*ctx, constants);
	}
	return NB_NCCL_SUCCESS;
}

__attribute__((visibility("default"))) const struct nb_nccl_tuner_v5 ncclTunerPlugin_v5 = {
	.name = "ncclbpf",
	.init = v5_init,
	.get_coll_info = tuner_get_coll_info,
	.finalize = tuner_comm_close,
};
