/* Mock NCCL host: a deterministic virtual-time model of training steps on N ranks, for
 * tests of policies that learn from the profiler's timestamps (issue 22). No wall clock:
 * every time is computed.
 *
 * A workload is a step of collectives (type, bytes), each optionally preceded by GPU work
 * on the same stream (`gap_us`: a compute kernel the collective must wait for), and
 * optionally a compute kernel per step on another stream (`overlap_us`), concurrent with the
 * step's collectives (which run `overlap_slow` times slower while it runs; the next step
 * starts when both are done). The host either enqueues a step and waits for its end (sync)
 * or runs a step ahead (queued).
 *
 * Each (type, size band) has per-arm costs: the mean time of the collective with each
 * algorithm/protocol pair (0 = NCCL does not offer it), NCCL's own choice (AUTO) and NCCL's
 * cost estimate per pair. A collective with pair p takes T = mean * lognormal(noise)
 * (* 3 for an occasional outlier) from the moment the last rank's kernel starts; ranks
 * finish staggered by stagger(p) * min(T, stagger_cap) * (n-1-r)/(n-1) (Tree: the rank that
 * finishes first starts the next collective first, and waits there). A kernel ends tail(p) * T
 * before the collective's network traffic does (measured on the GPU testbed: Tree 35-45 %,
 * Ring a few %); the next kernel on the stream starts after the traffic, so the profiler sees
 * a gap between the kernels that belongs to the first.
 *
 * Per rank the model gives what the profiler reports: enqueue time (start_ns), kernel start
 * and end on the host clock (gpu_start_ns, gpu_end_ns), the host's completion notice; and
 * per step its time (max over ranks of the last completion, step to step).
 */
#ifndef NCCLBPF_MOCK_STEP_MODEL_H
#define NCCLBPF_MOCK_STEP_MODEL_H

#include <stdint.h>

#define SM_MAX_RANKS 8
#define SM_MAX_CALLS 32 /* collectives per step */
#define SM_MAX_BANDS 32
#define SM_NPAIR 21     /* algo * 3 + proto */

enum sm_pair_idx { /* the pairs of the testbed */
	SM_TREE_LL = 0, SM_TREE_LL128 = 1, SM_TREE_SIMPLE = 2,
	SM_RING_LL = 3, SM_RING_LL128 = 4, SM_RING_SIMPLE = 5,
	SM_PAT_SIMPLE = 6 * 3 + 2,
};

struct sm_band {
	int coll;             /* NCCLBPF_COLL_* */
	uint64_t bytes;       /* any size of the band (the calls name exact sizes) */
	double mean_us[SM_NPAIR]; /* 0 = not offered */
	double keep_factor;   /* NCCL's choice left alone runs AUTO's pair x this (default 1) */
	int auto_pair;        /* NCCL's cost-table pick */
	float cost[SM_NPAIR]; /* NCCL's estimate (us); filled from mean_us when all zero */
	double drift_at_step; /* from this step on, mean_us is drift_us (0: never) */
	double drift_us[SM_NPAIR];
};

struct sm_call {
	int coll;
	uint64_t bytes;
	double gap_us; /* GPU work on the stream right before it */
};

struct sm_workload {
	struct sm_call calls[SM_MAX_CALLS];
	int n_calls;
	double overlap_us;     /* compute per step on another stream (0: none) */
	double overlap_slow;   /* collectives' slowdown while it runs (1.1 = 10 %) */
	int queued;            /* 1: the host runs a step ahead; 0: waits for every step */
	double noise;          /* lognormal sigma of a collective's time (0.1 = ~10 %) */
	double outlier_p;      /* probability of a 3x outlier */
	double stagger_small;  /* Tree's stagger fraction up to 16 KiB */
	double stagger;        /* Tree's stagger fraction above */
	double stagger_cap_us; /* at most this much (a pipeline's end, not its length) */
	double tail_tree;      /* a Tree kernel ends this fraction of the time before the
				* collective's traffic does (the next kernel waits for it) */
	double tail_ring;      /* the same for the other algorithms */
	double coll_start_late; /* NCCL reports the Coll start this fraction of the kernel's time
				 * after the kernel started when the host was waiting (0.5: as the
				 * profiler saw it on the GPU testbed, the events come after the
				 * launch and the proxy ops' upload) */
	double launch_us;      /* host time per enqueued call */
	double notify_us;      /* host notices a completion this much later */
	int host_waits_traffic; /* 1: a waiting host resumes when the step's traffic ended, not
				 * its last kernel (the GPU testbed one size at a time, g3 trace:
				 * after a Tree/Simple 1 MiB kernel the next call came 197-256 us
				 * after the kernel's end, and the next kernel at once) */
};

/* One collective as the model ran it. */
struct sm_coll {
	int step, idx;           /* step number, index in the step */
	int coll, band;          /* type, index into the model's bands */
	uint64_t bytes;
	uint64_t seq;            /* per collective type (the tuner's seq, NCCL's seqNumber) */
	uint64_t comm_seq;       /* the communicator's collectives before it */
	uint64_t band_seq;       /* of its (type, size band) */
	int pair;                /* what ran */
	int kept;                /* NCCL's own choice (not forced) */
	double t_us;             /* its time (global: last kernel start to last completion) */
	/* per rank, host clock in ns */
	uint64_t api_ns[SM_MAX_RANKS];   /* the application's call */
	uint64_t enq_ns[SM_MAX_RANKS], kstart_ns[SM_MAX_RANKS], end_ns[SM_MAX_RANKS],
		notice_ns[SM_MAX_RANKS];        /* the Coll start, the kernel, the host's notice */
};

struct sm_model {
	int n_ranks;
	struct sm_workload w;
	struct sm_band bands[SM_MAX_BANDS];
	int n_bands;
	uint64_t rng;
	/* state */
	uint64_t seq[8], comm_seq, band_seq[8][65];
	int step, idx;
	double prev_end[SM_MAX_RANKS]; /* us */
	double host_us;                /* the host's clock */
	double step_begin_us;          /* last completion of the previous step (global) */
	double step_kend_us;           /* its last kernel's end: what a host that waits sees */
	double compute_end_us;         /* the step's compute on the other stream */
	double step_enq_us;            /* when the host started enqueueing this step */
	double last_step_us;           /* time of the last completed step */
	int steps_done;
};

void sm_init(struct sm_model *m, int n_ranks, const struct sm_workload *w, uint64_t seed);
/* Adds a band; returns its index or -1. cost[] all zero: NCCL's estimate = mean_us, and AUTO
 * (when < 0) = the cheapest offered pair. */
int sm_add_band(struct sm_model *m, const struct sm_band *b);
int sm_band_of(const struct sm_model *m, int coll, uint64_t bytes);
/* The next collective's identity (what the tuner sees); c->band < 0 when no band matches. */
void sm_next(struct sm_model *m, struct sm_coll *c);
/* Runs it with `pair` (kept: NCCL's own choice), computes the timeline; returns 1 when it
 * completed a step (m->last_step_us is its time). */
int sm_run(struct sm_model *m, struct sm_coll *c, int pair, int kept);
/* Uniform in [0, 1) from the model's generator. */
double sm_uniform(struct sm_model *m);

/* Per-arm mean times on the one-GPU testbed (docs/results.md 9.5, gpu-b8 medians; AllReduce
 * measured, AllGather/ReduceScatter modelled until measured), for 2 or 4 emulated nodes and
 * sizes 4 KiB .. 64 MiB (a power of 4); 0 when unknown. Fills b (coll, bytes, mean_us,
 * auto_pair). */
int sm_testbed_band(int coll, int nodes, uint64_t bytes, struct sm_band *b);

#endif
