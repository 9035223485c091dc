/* ncclTunerPlugin_v7: NCCL 2.32's native tuner ABI. v6's functions; the tuning constants
 * handed to init have five compute-capability rows in each bandwidth table (v5/v6: four),
 * so SEC("tuner/init") programs see them through the layout-aware conversion in
 * tuner_init_hook.c (row 4 in the appended compcap4_bw_mbps). An inner plugin
 * (NCCLBPF_TUNER_INNER) binds at most v6: it gets the 4-row view, as NCCL would give it. */
#include "plugin/tuner/tuner.h"

static int v7_init(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		   nb_nccl_logger_t log, struct nb_nccl_nvl_domain_info_v5 *nvl,
		   struct nb_nccl_tuner_constants_v7 *constants)
{
	tuner_comm_open(7, comm_id, n_ranks, n_nodes, log, ctx);
	if (ctx) {
		tuner_comm_set_nvl(*ctx, nvl);
		tuner_comm_chain_init_v7(*ctx, n_ranks, n_nodes, log, nvl, constants);
		tuner_run_init_hook_layout(*ctx, constants, NB_NCCL_NUM_COMPCAPS_V7);
	}
	return NB_NCCL_SUCCESS;
}

__attribute__((visibility("default"))) const struct nb_nccl_tuner_v7 ncclTunerPlugin_v7 = {
	.name = "ncclbpf",
	.init = v7_init,
	.get_coll_info = tuner_get_coll_info,
	.finalize = tuner_comm_close,
	.get_chunk_size = tuner_get_chunk_size,
};
