/* Our own declarations of NCCL's tuner plugin ABI (v3..v7), written from the facts in
 * ref/nccl-plugin-abi.md §2-§3 and ref/nccl-2.31-and-ecosystem.md (addendum: 2.32) - no
 * NCCL header is included or copied. Enums are passed as int (same size and calling
 * convention as NCCL's C enums).
 *
 *   release      symbols NCCL looks up, highest first
 *   2.27         ncclTunerPlugin_v4, _v3, _v2
 *   2.28, 2.29   ncclTunerPlugin_v5, _v4, _v3, _v2
 *   2.30, 2.31   ncclTunerPlugin_v6, _v5, _v4, _v3, _v2  (2.31: same ABI, new selection
 *                semantics: see tuner.h)
 *   2.32         ncclTunerPlugin_v7, _v6, ...  (v7: v6's functions; the constants' five
 *                bandwidth tables have 5 compute-capability rows instead of 4; NCCL converts
 *                its 5-row constants to the 4-row layout for a v6/v5 plugin and back)
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
/* ncclTunerConstants_v5_t (= v6): 144 doubles, in/out during init: baseLatencies[7][3],
 * hwLatencies[3][7][3], then five bandwidth tables [4 compcap][3 scale]. Handled as an
 * array of doubles (tuner_init_hook.c). */
struct nb_nccl_tuner_constants_v5;
/* ncclTunerConstants_v7_t: the same 84 latencies, then the five bandwidth tables with 5
 * compute-capability rows each (index 4 = Rubin): 84 + 5 * 5 * 3 = 159 doubles. */
struct nb_nccl_tuner_constants_v7;
#define NB_NCCL_NUM_COMPCAPS_V5 4
#define NB_NCCL_NUM_COMPCAPS_V7 5
#define NB_NCCL_NUM_TUNING_SCALES 3
#define NB_NCCL_NUM_HW_LINKS 3
#define NB_NCCL_TUNER_CONSTANTS_V5_DOUBLES 144
#define NB_NCCL_TUNER_CONSTANTS_V7_DOUBLES 159

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

/* v7 (NCCL 2.32): v6's table; only the constants' shape differs. */
struct nb_nccl_tuner_v7 {
	const char *name;
	int (*init)(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		    nb_nccl_logger_t log, struct nb_nccl_nvl_domain_info_v5 *nvl,
		    struct nb_nccl_tuner_constants_v7 *constants);
	int (*get_coll_info)(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
			     float **cost_table, int num_algo, int num_proto, int reg_buff,
			     int *n_channels);
	int (*finalize)(void *ctx);
	int (*get_chunk_size)(void *ctx, int coll_type, size_t n_bytes, int algo, int proto,
			      int n_channels, size_t *chunk_size);
};

#define NB_NCCL_TUNER_SYMBOL_V3 "ncclTunerPlugin_v3"
#define NB_NCCL_TUNER_SYMBOL_V4 "ncclTunerPlugin_v4"
#define NB_NCCL_TUNER_SYMBOL_V5 "ncclTunerPlugin_v5"
#define NB_NCCL_TUNER_SYMBOL_V6 "ncclTunerPlugin_v6"
#define NB_NCCL_TUNER_SYMBOL_V7 "ncclTunerPlugin_v7"

#endif
