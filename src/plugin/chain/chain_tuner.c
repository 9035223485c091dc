/* Inner tuner plugin (chain.h). Bound versions: ncclTunerPlugin_v6 .. v3, highest first, as
 * NCCL itself looks them up (v2's explicit algorithm outputs have no cost table to chain). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/chain/chain.h"
#include "runtime/runtime.h"

extern const struct nb_nccl_tuner_v3 ncclTunerPlugin_v3;
extern const struct nb_nccl_tuner_v4 ncclTunerPlugin_v4;
extern const struct nb_nccl_tuner_v5 ncclTunerPlugin_v5;
extern const struct nb_nccl_tuner_v6 ncclTunerPlugin_v6;

#define CHAIN_EXCLUDED_COST 1e30f /* "excluded": larger than any time NCCL computes */

struct chain_tuner {
	void *dl;
	int version;
	const void *table; /* struct nb_nccl_tuner_vN */
	char path[256];
};

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chain_tuner loaded;
static _Atomic int load_state; /* 0 untried, 1 loaded, 2 none */
static _Atomic uint64_t cnt_errors, cnt_init_failures;
static _Atomic unsigned error_logged;
_Atomic uint64_t chain_profiler_errors_count, chain_profiler_init_failures_count;

void chain_get_counters(struct chain_counters *o)
{
	o->tuner_errors = atomic_load(&cnt_errors);
	o->tuner_init_failures = atomic_load(&cnt_init_failures);
	o->profiler_errors = atomic_load(&chain_profiler_errors_count);
	o->profiler_init_failures = atomic_load(&chain_profiler_init_failures_count);
}

static bool is_self(const void *sym)
{
	return sym == (const void *)&ncclTunerPlugin_v3 || sym == (const void *)&ncclTunerPlugin_v4 ||
	       sym == (const void *)&ncclTunerPlugin_v5 || sym == (const void *)&ncclTunerPlugin_v6;
}

const struct chain_tuner *chain_tuner_get(void)
{
	int st = atomic_load_explicit(&load_state, memory_order_acquire);
	if (st)
		return st == 1 ? &loaded : NULL;
	pthread_mutex_lock(&load_lock);
	st = atomic_load(&load_state);
	if (!st) {
		st = 2;
		const char *path = getenv("NCCLBPF_TUNER_INNER");
		struct chain_inner_lib lib;
		char why[256];
		int rc = path && *path ? chain_inner_open(path, "ncclTunerPlugin_v", 6, 3, is_self,
							 &lib, why, sizeof(why))
				       : 1;
		if (rc == 0) {
			loaded.dl = lib.dl;
			loaded.version = lib.version;
			loaded.table = lib.table;
			snprintf(loaded.path, sizeof(loaded.path), "%s", path);
			st = 1;
			runtime_log(NB_LOG_INFO, NB_LOG_INIT | NB_LOG_TUNING,
				    "tuner: inner plugin %s (ncclTunerPlugin_v%d, \"%s\") runs before "
				    "the policies",
				    path, loaded.version,
				    *(const char *const *)loaded.table ? *(const char *const *)loaded.table
								       : "?");
		} else {
			chain_inner_warn(rc, "tuner", "NCCLBPF_TUNER_INNER", path, why, NB_LOG_TUNING);
		}
		atomic_store_explicit(&load_state, st, memory_order_release);
	}
	pthread_mutex_unlock(&load_lock);
	return st == 1 ? &loaded : NULL;
}

int chain_tuner_version(const struct chain_tuner *t)
{
	return t ? t->version : 0;
}

void chain_reset_for_tests(void)
{
	pthread_mutex_lock(&load_lock);
	/* the library stays open: contexts of it may still be referenced */
	memset(&loaded, 0, sizeof(loaded));
	atomic_store(&load_state, 0);
	atomic_store(&error_logged, 0);
	pthread_mutex_unlock(&load_lock);
	extern void chain_profiler_reset_for_tests(void);
	chain_profiler_reset_for_tests();
}

static void note_error(const char *what, int rc)
{
	atomic_fetch_add_explicit(&cnt_errors, 1, memory_order_relaxed);
	unsigned bit = what[0] == 'g' ? 1u : 2u;
	if (atomic_fetch_or(&error_logged, bit) & bit)
		return;
	runtime_log(NB_LOG_WARN, NB_LOG_TUNING,
		    "tuner: inner plugin %s returned %d: its changes were undone and ncclbpf's "
		    "policies decide on NCCL's table. Logged once, counted always",
		    what, rc);
}

void *chain_tuner_init(const struct chain_tuner *t, uint64_t comm_id, size_t n_ranks,
		       size_t n_nodes, nb_nccl_logger_t log,
		       struct nb_nccl_nvl_domain_info_v5 *nvl,
		       struct nb_nccl_tuner_constants_v5 *constants, bool *ok)
{
	*ok = true;
	if (!t)
		return NULL;
	void *ctx = NULL;
	int rc;
	/* An older NCCL (v3/v4 host) has no NVLink info or constants for a v5/v6 inner plugin:
	 * it gets the shape as one domain per node and a scratch constants table nobody reads. */
	struct nb_nccl_nvl_domain_info_v5 nvl_local;
	static double scratch_constants[144];
	if (!nvl) {
		nvl_local.n_nvl_domains = (int)n_nodes;
		nvl_local.min_ranks_per_nvl_domain = n_nodes ? (int)(n_ranks / n_nodes) : 0;
		nvl_local.max_ranks_per_nvl_domain = nvl_local.min_ranks_per_nvl_domain;
		nvl = &nvl_local;
	}
	if (!constants)
		constants = (struct nb_nccl_tuner_constants_v5 *)(void *)scratch_constants;
	switch (t->version) {
	case 3:
		rc = ((const struct nb_nccl_tuner_v3 *)t->table)->init(n_ranks, n_nodes, log, &ctx);
		break;
	case 4:
		rc = ((const struct nb_nccl_tuner_v4 *)t->table)->init(n_ranks, n_nodes, log, &ctx);
		break;
	case 5:
		rc = ((const struct nb_nccl_tuner_v5 *)t->table)
			     ->init(&ctx, comm_id, n_ranks, n_nodes, log, nvl, constants);
		break;
	default:
		rc = ((const struct nb_nccl_tuner_v6 *)t->table)
			     ->init(&ctx, comm_id, n_ranks, n_nodes, log, nvl, constants);
		break;
	}
	if (rc != 0) {
		atomic_fetch_add_explicit(&cnt_init_failures, 1, memory_order_relaxed);
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING,
			    "tuner: inner plugin %s init failed (%d) for comm 0x%llx: this "
			    "communicator runs without it",
			    t->path, rc, (unsigned long long)comm_id);
		*ok = false;
		return NULL;
	}
	return ctx;
}

void chain_tuner_coll_info(const struct chain_tuner *t, void *ictx, int coll_type,
			   size_t n_bytes, int num_pipe_ops, float *table, int num_algo,
			   int num_proto, int reg_buff, int *n_channels)
{
	if (!t || num_algo <= 0 || num_proto <= 0 || num_algo * num_proto > 64)
		return;
	float saved[64];
	size_t n = (size_t)(num_algo * num_proto);
	memcpy(saved, table, n * sizeof(float));
	int saved_ch = *n_channels;
	float **tbl = (float **)(void *)table; /* NCCL's float[a][p] cast to float** */
	int rc;
	switch (t->version) {
	case 3:
		rc = ((const struct nb_nccl_tuner_v3 *)t->table)
			     ->get_coll_info(ictx, coll_type, n_bytes, num_pipe_ops, tbl, num_algo,
					     num_proto, n_channels);
		break;
	case 4:
		rc = ((const struct nb_nccl_tuner_v4 *)t->table)
			     ->get_coll_info(ictx, coll_type, n_bytes, num_pipe_ops, tbl, num_algo,
					     num_proto, reg_buff, n_channels);
		break;
	case 5:
		rc = ((const struct nb_nccl_tuner_v5 *)t->table)
			     ->get_coll_info(ictx, coll_type, n_bytes, num_pipe_ops, tbl, num_algo,
					     num_proto, reg_buff, n_channels);
		break;
	default:
		rc = ((const struct nb_nccl_tuner_v6 *)t->table)
			     ->get_coll_info(ictx, coll_type, n_bytes, num_pipe_ops, tbl, num_algo,
					     num_proto, reg_buff, n_channels);
		break;
	}
	if (rc != 0) {
		memcpy(table, saved, n * sizeof(float));
		*n_channels = saved_ch;
		note_error("getCollInfo", rc);
		return;
	}
	/* An inner plugin written for <= 2.30 excludes an entry by writing -1 into it; NCCL 2.31
	 * would take that -1 as a winning time. An entry NCCL had filled in and the inner plugin
	 * made negative (or NaN) becomes a large positive cost instead: excluded under both. */
	for (size_t i = 0; i < n; i++)
		if (saved[i] >= 0.0f && !(table[i] >= 0.0f))
			table[i] = CHAIN_EXCLUDED_COST;
}

void chain_tuner_chunk_size(const struct chain_tuner *t, void *ictx, int coll_type,
			    size_t n_bytes, int algo, int proto, int n_channels,
			    size_t *chunk_size)
{
	if (!t || t->version < 6)
		return;
	const struct nb_nccl_tuner_v6 *v6 = t->table;
	if (!v6->get_chunk_size)
		return;
	size_t saved = *chunk_size;
	int rc = v6->get_chunk_size(ictx, coll_type, n_bytes, algo, proto, n_channels, chunk_size);
	if (rc != 0) {
		*chunk_size = saved;
		note_error("getChunkSize", rc);
	}
}

void chain_tuner_finalize(const struct chain_tuner *t, void *ictx)
{
	if (!t)
		return;
	int rc;
	if (t->version <= 4)
		rc = ((const struct nb_nccl_tuner_v4 *)t->table)->destroy(ictx);
	else
		rc = ((const struct nb_nccl_tuner_v5 *)t->table)->finalize(ictx);
	if (rc != 0)
		runtime_log(NB_LOG_WARN, NB_LOG_TUNING, "tuner: inner plugin %s finalize returned %d",
			    t->path, rc);
}
