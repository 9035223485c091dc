/* A fake native tuner plugin for the chaining tests (NCCLBPF_TUNER_INNER), built as several
 * shared objects from this one file:
 *   FAKE_TUNER_VERSION 4 or 6   which ncclTunerPlugin_vN it exports
 *   FAKE_TUNER_FAIL_INIT        init returns an error
 *   FAKE_TUNER_ERRORS           getCollInfo scribbles over the table, then returns an error
 * Its decision: Tree/LL128 when NCCL allows it (lowered to 0.0), Ring/Simple excluded with
 * -1 (the <= 2.30 idiom), and 7 channels. Counters
 * and what init received are exported for the tests (fake_tuner_state). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "plugin/tuner/nccl_tuner_abi.h"

struct fake_tuner_state {
	int inits, finalizes, calls, chunk_calls;
	int last_nvl[3];
	int had_constants;
	uint64_t last_comm_id;
};
__attribute__((visibility("default"))) struct fake_tuner_state fake_tuner_state;

static int ctx_magic = 0x7e57;

static int decide(void *ctx, float **cost_table, int num_algo, int num_proto, int *n_channels)
{
	fake_tuner_state.calls++;
	if (ctx != &ctx_magic)
		return NB_NCCL_INTERNAL_ERROR; /* not our context: ncclbpf mixed them up */
	float *t = (float *)cost_table;
#ifdef FAKE_TUNER_ERRORS
	for (int i = 0; i < num_algo * num_proto; i++)
		t[i] = -1.0f;
	*n_channels = 99;
	return NB_NCCL_INTERNAL_ERROR;
#else
	if (num_algo > 0 && num_proto > 1 && t[0 * num_proto + 1] >= 0.0f)
		t[0 * num_proto + 1] = 0.0f;
	/* and excludes Ring/Simple the <= 2.30 way: -1 (a winning time on 2.31 unless ncclbpf
	 * turns it into a large cost) */
	if (num_algo > 1 && num_proto > 2 && t[1 * num_proto + 2] >= 0.0f)
		t[1 * num_proto + 2] = -1.0f;
	*n_channels = 7;
	return NB_NCCL_SUCCESS;
#endif
}

#if FAKE_TUNER_VERSION == 4
static int v4_init(size_t n_ranks, size_t n_nodes, nb_nccl_logger_t log, void **ctx)
{
	(void)n_ranks, (void)n_nodes, (void)log;
	fake_tuner_state.inits++;
#ifdef FAKE_TUNER_FAIL_INIT
	return NB_NCCL_INTERNAL_ERROR;
#endif
	*ctx = &ctx_magic;
	return NB_NCCL_SUCCESS;
}
static int v4_info(void *ctx, int coll, size_t n_bytes, int pipe, float **cost_table, int na,
		   int np, int reg, int *nch)
{
	(void)coll, (void)n_bytes, (void)pipe, (void)reg;
	return decide(ctx, cost_table, na, np, nch);
}
static int v4_destroy(void *ctx)
{
	(void)ctx;
	fake_tuner_state.finalizes++;
	return NB_NCCL_SUCCESS;
}
__attribute__((visibility("default"))) const struct nb_nccl_tuner_v4 ncclTunerPlugin_v4 = {
	"fake4", v4_init, v4_info, v4_destroy};
#else
static int v6_init(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		   nb_nccl_logger_t log, struct nb_nccl_nvl_domain_info_v5 *nvl,
		   struct nb_nccl_tuner_constants_v5 *constants)
{
	(void)n_ranks, (void)n_nodes, (void)log;
	fake_tuner_state.inits++;
	fake_tuner_state.last_comm_id = comm_id;
	if (nvl) {
		fake_tuner_state.last_nvl[0] = nvl->n_nvl_domains;
		fake_tuner_state.last_nvl[1] = nvl->min_ranks_per_nvl_domain;
		fake_tuner_state.last_nvl[2] = nvl->max_ranks_per_nvl_domain;
	}
	if (constants) {
		fake_tuner_state.had_constants = 1;
		((double *)(void *)constants)[0] += 0.0; /* touch it: must be writable memory */
#ifdef FAKE_TUNER_EDIT_CONSTANTS
		/* the last constant of the 4-row layout (NVLS tree bw, row 3, scale 2): under a
		 * v7 host it must land in row 3 of the 5-row table, not in row 4 */
		((double *)(void *)constants)[143] = 7.5;
#endif
	}
#ifdef FAKE_TUNER_FAIL_INIT
	return NB_NCCL_INTERNAL_ERROR;
#endif
	*ctx = &ctx_magic;
	return NB_NCCL_SUCCESS;
}
static int v6_info(void *ctx, int coll, size_t n_bytes, int pipe, float **cost_table, int na,
		   int np, int reg, int *nch)
{
	(void)coll, (void)n_bytes, (void)pipe, (void)reg;
	return decide(ctx, cost_table, na, np, nch);
}
static int v6_finalize(void *ctx)
{
	(void)ctx;
	fake_tuner_state.finalizes++;
	return NB_NCCL_SUCCESS;
}
static int v6_chunk(void *ctx, int coll, size_t n_bytes, int algo, int proto, int nch,
		    size_t *chunk)
{
	(void)ctx, (void)coll, (void)n_bytes, (void)algo, (void)proto, (void)nch;
	fake_tuner_state.chunk_calls++;
	*chunk = 262144;
	return NB_NCCL_SUCCESS;
}
__attribute__((visibility("default"))) const struct nb_nccl_tuner_v6 ncclTunerPlugin_v6 = {
	"fake6", v6_init, v6_info, v6_finalize, v6_chunk};
#endif
