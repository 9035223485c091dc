/* Our own declarations of NCCL's tuner plugin ABI (v3..v6), written from the facts in
 * ref/nccl-plugin-abi.md §2-§3 (no NCCL header is included or copied). Enums are passed as
 * int (same size and calling convention as NCCL's C enums).
 *
 *   release      symbols NCCL looks up, highest first
 *   2.27         ncclTunerPlugin_v4, _v3, _v2
 *   2.28, 2.29   ncclTunerPlugin_v5, _v4, _v3, _v2
 *   2.30, 2.31   ncclTunerPlugin_v6, _v5, _v4, _v3, _v2  (2.31: same ABI, new selection
 *                semantics: see tuner.h)
 */
#ifndef NCCLBPF_PLUGIN_NCCL_TUNER_ABI_H
#define NCCLBPF_PLUGIN_NCCL_TUNER_ABI_H

#include <stddef.h>
#include <stdint.h>

#define NB_NCCL_SUCCESS 0
#define NB_NCCL_INTERNAL_ERROR 3

#define NB_NCCL_NUM_FUNCTIONS 5  /* collectives covered by the cost model */
#define NB_NCCL_NUM_ALGORITHMS 7
#define NB_NCCL_NUM_PROTOCOLS 3
#define NB_NCCL_ALGO_PROTO_IGNORE (-1.0f)
#define NB_NCCL_MAXCHANNELS 64

/* ncclDebugLogger_t: (level, subsystem flags, file or function, line, printf format, ...) */
typedef void (*nb_nccl_logger_t)(int level, unsigned long flags, const char *file, int line,
				 const char *fmt, ...);

/* ncclNvlDomainInfo_v5_t (= v6): three ints. */
struct nb_nccl_nvl_domain_info_v5 {
	int n_nvl_domains;
	int min_ranks_per_nvl_domain;
	int max_ranks_per_nvl_domain;
};
/* ncclTunerConstants_v5_t: 144 doubles, in/out during init. We do not modify it. */
struct nb_nccl_tuner_constants_v5;

/* costTable is float[numAlgo][numProto] cast to float** (NOT an array of row pointers). */
struct nb_nccl_tuner_v3 {
	const char *name;
	int (*init)(size_t n_ranks, size_t n_nodes, nb_nccl_logger_t log, void **ctx);
	int (*get_coll_info)(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
			     float **cost_table, int num_algo, int num_proto, int *n_channels);
	int (*destroy)(void *ctx);
};

struct nb_nccl_tuner_v4 {
	const char *name;
	int (*init)(size_t n_ranks, size_t n_nodes, nb_nccl_logger_t log, void **ctx);
	int (*get_coll_info)(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
			     float **cost_table, int num_algo, int num_proto, int reg_buff,
			     int *n_channels);
	int (*destroy)(void *ctx);
};

struct nb_nccl_tuner_v5 {
	const char *name;
	int (*init)(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		    nb_nccl_logger_t log, struct nb_nccl_nvl_domain_info_v5 *nvl,
		    struct nb_nccl_tuner_constants_v5 *constants);
	int (*get_coll_info)(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
			     float **cost_table, int num_algo, int num_proto, int reg_buff,
			     int *n_channels);
	int (*finalize)(void *ctx);
};

struct nb_nccl_tuner_v6 {
	const char *name;
	int (*init)(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		    nb_nccl_logger_t log, struct nb_nccl_nvl_domain_info_v5 *nvl,
		    struct nb_nccl_tuner_constants_v5 *constants);
	int (*get_coll_info)(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
			     float **cost_table, int num_algo, int num_proto, int reg_buff,
			     int *n_channels);
	int (*finalize)(void *ctx);
	/* Optional (NCCL checks NULL); only 2.30 calls it. */
	int (*get_chunk_size)(void *ctx, int coll_type, size_t n_bytes, int algo, int proto,
			      int n_channels, size_t *chunk_size);
};

#define NB_NCCL_TUNER_SYMBOL_V3 "ncclTunerPlugin_v3"
#define NB_NCCL_TUNER_SYMBOL_V4 "ncclTunerPlugin_v4"
#define NB_NCCL_TUNER_SYMBOL_V5 "ncclTunerPlugin_v5"
#define NB_NCCL_TUNER_SYMBOL_V6 "ncclTunerPlugin_v6"

#endif
