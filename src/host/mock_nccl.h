/* Mock NCCL host: what CI uses instead of a GPU. It loads the plugin library exactly as a
 * given NCCL release does (ref/nccl-plugin-abi.md §1: name resolution, dlopen flags
 * RTLD_NOW|RTLD_LOCAL, versioned symbols highest first), creates communicators, builds
 * realistic cost tables (with -1 entries and single-rank tables), calls the tuner like
 * ncclGetAlgoInfo does and applies NCCL's real selection rule to the result.
 *
 * It deliberately does not link against the plugin: everything goes through dlopen/dlsym,
 * and its own copy of the selection rule (it must not trust the plugin's code).
 * Reusable: the profiler tests and `ncclbpf bench` build on it.
 */
#ifndef NCCLBPF_MOCK_NCCL_H
#define NCCLBPF_MOCK_NCCL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plugin/tuner/nccl_tuner_abi.h"

#define MOCK_NUM_ALGOS NB_NCCL_NUM_ALGORITHMS
#define MOCK_NUM_PROTOS NB_NCCL_NUM_PROTOCOLS

/* NCCL releases as major*100 + minor: 227 .. 232. 231 is the "2.31 mode": the tuner is
 * still bound as v6, but selection follows 2.31 (tuning.cc rewrite): ties to the highest
 * index, a negative written into a candidate is a winning time, numPipeOps is always 1,
 * nChannels is a cap, symmetric kernels compete after the tuner and a symmetric-LL winner
 * that cannot run makes NCCL call the tuner a second time. 232 is 2.32: 2.31's selection,
 * and the tuner bound as v7 (tuning constants with 5 compute-capability rows). */
int mock_nccl_parse_release(const char *s); /* "2.28" -> 228, -1 if unsupported */
/* NCCL_VERSION_CODE of the release (22809 for 228), 0 if unknown. The host's
 * ncclGetVersion answers the release last loaded by mock_nccl_load_tuner. */
int mock_nccl_version_code(int release);
/* Fills NCCL's default-like tuning constants for a tuner version (4 or 5 compcap rows);
 * returns how many doubles (144 or 159). */
int mock_constants_defaults(double *k, int tuner_version);

struct mock_nccl {
	int release;
	void *handle;          /* dlopen handle of the tuner library, NULL if none */
	char opened_as[512];   /* the name dlopen succeeded with */
	int tuner_version;     /* 3..7 bound, 0 if none */
	const void *tuner;     /* struct nb_nccl_tuner_vN */
	char err[512];
};

/* Loads the tuner plugin the way `release` does for NCCL_TUNER_PLUGIN=plugin_env (NULL or
 * "" = unset). max_version caps the symbol versions looked up (0 = the release's own list;
 * tests use it to bind the v3/v4 tables that older releases bind). Returns 0, -ENOENT when
 * no library could be opened (NCCL would fall back to the net plugin: none here), -ENOSYS
 * when the library has no tuner symbol, -ECANCELED for "none" (2.28+). m->err says why. */
int mock_nccl_load_tuner(struct mock_nccl *m, int release, const char *plugin_env,
			 int max_version);
void mock_nccl_unload(struct mock_nccl *m);

struct mock_comm {
	struct mock_nccl *nccl;
	void *ctx;
	uint64_t comm_id; /* commHash */
	int n_ranks;
	int n_nodes;
	int nccl_channels; /* "N coll channels" NCCL would log for this comm */
	pthread_mutex_t lock; /* NCCL serializes getCollInfo per comm */
	/* ncclTunerConstants_v5 (144 doubles) or _v7 (159) handed to init (plausible values) */
	double constants[159];
	int n_constants;
};

/* Calls the bound init as NCCL does; returns NCCL's result (0 = success). */
int mock_comm_init(struct mock_nccl *m, struct mock_comm *c, uint64_t comm_id, int n_ranks,
		   int n_nodes);
/* Calls getCollInfo (serialized per comm). *n_channels must be 0 on entry, as in NCCL. */
int mock_comm_get_coll_info(struct mock_comm *c, int coll, size_t n_bytes, int num_pipe_ops,
			    int reg_buff, float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
			    int *n_channels);
/* v6+; returns 0 and leaves *chunk unchanged on older versions. */
int mock_comm_get_chunk_size(struct mock_comm *c, int coll, size_t n_bytes, int algo,
			     int proto, int n_channels, size_t *chunk);
int mock_comm_finalize(struct mock_comm *c);

/* ---- cost tables ---- */
enum mock_topo {
	MOCK_TOPO_NVLINK_NODE, /* 1 node, NVSwitch: Tree, Ring, NVLS (AR/AG/RS); no CollNet/PAT */
	MOCK_TOPO_MULTI_NODE,  /* several nodes over IB: Tree, Ring; no NVLS, no CollNet */
	MOCK_TOPO_SINGLE_RANK, /* nRanks == 1: only Ring/Simple = 0.0 */
	MOCK_TOPO_NO_LL128,    /* NVLink node with NCCL_PROTO=^LL128 */
	MOCK_TOPO_RING_ONLY,   /* NVLink node with NCCL_ALGO=Ring */
	MOCK_TOPO_COUNT
};
const char *mock_topo_name(enum mock_topo t);
/* The shape from its name (mock_topo_name), -1 if unknown. */
int mock_topo_from_name(const char *name);
/* The shape a job of n_ranks on n_nodes has by default: single-rank, multi-node or an
 * NVLink node. */
enum mock_topo mock_topo_default(int n_ranks, int n_nodes);
/* NULL when the shape fits n_ranks on n_nodes, else why not ("single-rank needs --ranks
 * 1"): single-rank is exactly one rank, multi-node two nodes or more, the NVLink-node
 * shapes one node of two ranks or more. */
const char *mock_topo_mismatch(enum mock_topo t, int n_ranks, int n_nodes);
/* Fills table as ncclTopoGetAlgoTime would (µs; -1 = unavailable) for a simple but
 * plausible H100-class model. */
void mock_cost_table(float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], enum mock_topo topo,
		     int coll, size_t n_bytes, int n_ranks, int n_nodes);

/* NCCL's selection (topoGetAlgoInfo) for `release`: strictly smallest entry >= 0, ties to
 * the lowest index. Returns 0, or -1 when nothing is available (NCCL fails the collective). */
int mock_select(int release, const float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], int *algo,
		int *proto);

/* 2.31: selection among the candidates NCCL filled in `before`, with the plugin's values in
 * `after` (negatives count), ties to the highest index. */
int mock_select_231(const float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
		    const float after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], int *algo, int *proto,
		    float *time);
struct mock_231_result {
	int calls;            /* getCollInfo calls NCCL made for this one collective */
	int sym;              /* a symmetric kernel runs */
	int algo, proto;      /* the general kernel that runs (when !sym) */
	int tuner_channels;   /* what the plugin wrote to *nChannels */
	int n_channels;       /* what NCCL runs: min(its own, the plugin's cap) */
	int negative_written; /* the plugin wrote a negative into a candidate */
};
/* One collective call as NCCL 2.31 runs it: tuner call (numPipeOps 1), general selection,
 * then a symmetric candidate of time sym_us (< 0: none) competes; if it wins but cannot run
 * (sym_can_run 0: unregistered buffers, one thread driving several GPUs) the tuner is
 * called again and only general kernels are considered. Returns 0, or -1 (plugin error or
 * nothing selectable). */
int mock_collective_231(struct mock_comm *c, int coll, size_t n_bytes, int reg_buff,
			const float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], float sym_us,
			int sym_can_run, struct mock_231_result *r);

/* One collective call of NCCL 2.31+ with its per-call configuration (ncclCollConfig_t) and
 * the environment, as src/enqueue.cc ncclGetAlgoInfo treats them: the per-call
 * algSelection narrows the candidates before the tuner sees the table (cells outside it stay
 * -1), unless NCCL_ALGO/NCCL_PROTO force the function (then it is ignored: env_forced).
 * When nothing in the selection is available NCCL calls the tuner again with every
 * candidate, then fails the call (force_alg_selection 1, NCCL's default) or runs its
 * automatic choice (0). A per-call selection also keeps symmetric kernels out (sym_us). */
struct mock_call {
	int coll;
	size_t n_bytes;
	int reg_buff;
	unsigned alg_selection;  /* bit per NCCL algorithm (all its protocols), 0 = automatic */
	int force_alg_selection; /* 1 or 0 */
	int env_forced;          /* NCCL_ALGO / NCCL_PROTO force this function */
	float sym_us;            /* a symmetric candidate's time, < 0 none */
	int sym_can_run;
};
/* Returns 0, -1 (plugin error, or nothing selectable), -2 (NCCL fails the call:
 * algSelection forced and unsatisfiable; r->calls says how often the tuner ran). */
int mock_collective_cfg(struct mock_comm *c, const float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
			const struct mock_call *call, struct mock_231_result *r);

/* Invariants every tuner call must keep: no entry NCCL marked unavailable is changed, the
 * table still selects something if it did before, *n_channels is 0 or 1..64 (fits NCCL's
 * signed 8-bit field) and <= max_channels when known. Returns 0 or -1 with why filled. */
int mock_check_invariants(int release, const float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
			  const float after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], int n_channels,
			  int max_channels, char *why, size_t whylen);

/* The plugin's own per-reason counters of decisions it could not apply as a policy asked
 * (ncclbpf_tuner_issue_counts, looked up with dlsym in the loaded library): fills up to n
 * counts and names (names may be NULL), returns the number of reasons, or -1 when the
 * library does not export them (another plugin). */
int mock_nccl_issue_counts(const struct mock_nccl *m, uint64_t *counts, const char **names,
			   size_t n);

const char *mock_coll_name(int coll);
const char *mock_algo_name(int algo);
const char *mock_proto_name(int proto);

/* ---- NCCL's logger: records every line; prints like NCCL per NCCL_DEBUG and
 * NCCL_DEBUG_SUBSYS (default subsystems INIT,ENV as in NCCL, plus WARN always). ---- */
void mock_logger(int level, unsigned long flags, const char *file, int line, const char *fmt,
		 ...) __attribute__((format(printf, 5, 6)));
int mock_log_count(const char *needle);          /* lines containing needle */
int mock_log_count_level(int level, const char *needle);
void mock_log_reset(void);
void mock_log_dump(FILE *out);
/* Index of the first recorded line at or after `from` containing needle (level -1: any),
 * its text copied to out; -1 when none. */
int mock_log_find(int from, int level, const char *needle, char *out, size_t len);

#endif
