/* Chaining to a native ("inner") tuner or profiler plugin (issue 15):
 *   NCCLBPF_TUNER_INNER=/path/libnccl-tuner-X.so     NCCLBPF_PROFILER_INNER=/path/...
 * The inner library is opened once per process (RTLD_NOW | RTLD_LOCAL, as NCCL does) and
 * bound to the highest ABI version it exports that ncclbpf can drive. It is called first:
 *  - tuner: the inner plugin edits the cost table and channel count, then ncclbpf's policy
 *    chain sees the result as NCCL's choice. Its getChunkSize runs before tuner/chunk.
 *  - profiler: every event goes to both; the inner plugin's handles and contexts are kept
 *    separately and never shown to NCCL.
 * Never fails NCCL because of the inner plugin: a library that does not open or exports no
 * usable symbol is logged once and ignored; an inner init that fails is logged and that
 * communicator runs without it; a call that returns an error is logged once, counted, and
 * (tuner) its table edits are undone. */
#ifndef NCCLBPF_PLUGIN_CHAIN_H
#define NCCLBPF_PLUGIN_CHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin/tuner/nccl_tuner_abi.h"

/* ---- opening the inner library (chain_inner.c) ---- */
struct chain_inner_lib {
	void *dl;
	const void *table; /* its plugin table of `version` */
	int version;
};
/* dlopen(path) and bind the highest "<sym_prefix><v>" for v = vmax..vmin. 0 on success;
 * -ENOENT (dlopen failed), -ELOOP (the symbol is ncclbpf's own: is_self), -ENOSYS (no such
 * symbol), with the reason in err; the library is closed on failure. */
int chain_inner_open(const char *path, const char *sym_prefix, int vmax, int vmin,
		     bool (*is_self)(const void *table), struct chain_inner_lib *out,
		     char *err, size_t errlen);
/* The WARN for a chain_inner_open failure (rc < 0) of the inner plugin that env (its
 * variable) named; the job runs without it. kind: "tuner" or "profiler". */
void chain_inner_warn(int rc, const char *kind, const char *env, const char *path,
		      const char *why, unsigned log_flags);

/* ---- tuner ---- */
struct chain_tuner; /* the process-wide inner tuner (NULL when none) */
/* Loads NCCLBPF_TUNER_INNER once; NULL if unset or unusable (logged). */
const struct chain_tuner *chain_tuner_get(void);
/* Per communicator: the inner plugin's init with its own ABI's arguments. Returns the inner
 * context, or NULL with *ok false when its init failed (logged: the comm runs without it). */
void *chain_tuner_init(const struct chain_tuner *t, uint64_t comm_id, size_t n_ranks,
		       size_t n_nodes, nb_nccl_logger_t log,
		       struct nb_nccl_nvl_domain_info_v5 *nvl,
		       struct nb_nccl_tuner_constants_v5 *constants, bool *ok);
/* Runs the inner getCollInfo on NCCL's table; on error its edits are undone. */
void chain_tuner_coll_info(const struct chain_tuner *t, void *ictx, int coll_type,
			   size_t n_bytes, int num_pipe_ops, float *table, int num_algo,
			   int num_proto, int reg_buff, int *n_channels);
/* v6 inner getChunkSize (no-op otherwise). */
void chain_tuner_chunk_size(const struct chain_tuner *t, void *ictx, int coll_type,
			    size_t n_bytes, int algo, int proto, int n_channels,
			    size_t *chunk_size);
void chain_tuner_finalize(const struct chain_tuner *t, void *ictx);
int chain_tuner_version(const struct chain_tuner *t);

/* ---- profiler ---- */
struct chain_profiler;
const struct chain_profiler *chain_profiler_get(void);
int chain_profiler_version(const struct chain_profiler *p);
/* Init with the inner's own mask int; returns its context (NULL: failed, logged). */
void *chain_profiler_init(const struct chain_profiler *p, int *inner_mask, uint64_t comm_id,
			  const char *comm_name, int n_nodes, int n_ranks, int rank,
			  nb_nccl_logger_t log, bool *ok);
/* Forwards one event: raw is NCCL's descriptor for ABI raw_version (the one NCCL bound). */
void *chain_profiler_start(const struct chain_profiler *p, void *ictx, const void *raw,
			   int raw_version, uint64_t type, void *inner_parent,
			   void *inner_parent_group);
void chain_profiler_stop(const struct chain_profiler *p, void *ih);
void chain_profiler_record(const struct chain_profiler *p, void *ih, int state,
			   const void *raw_args, int raw_version);
void chain_profiler_finalize(const struct chain_profiler *p, void *ictx);
/* Whether the inner plugin can be driven from NCCL's descriptors of raw_version. */
bool chain_profiler_compatible(const struct chain_profiler *p, int raw_version);

/* Process-wide counts (metrics, tests). */
struct chain_counters {
	uint64_t tuner_errors, tuner_init_failures, profiler_errors, profiler_init_failures;
};
void chain_get_counters(struct chain_counters *out);
/* Tests: forget the loaded inner plugins (the next get re-reads the environment). */
void chain_reset_for_tests(void);

#endif
