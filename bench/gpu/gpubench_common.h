/* ncclbpf-gpubench: shared declarations of the GPU harness.
 *
 * The harness runs real NCCL collectives on real GPUs, with or without the ncclbpf plugin
 * (selected by NCCL's own environment variables), and reports time, algorithm bandwidth
 * and bus bandwidth with nccl-tests' definitions. It is CUDA C (C-style code compiled by
 * nvcc) and is built only when nvcc and nccl.h are found.
 */
#ifndef NCCLBPF_GPUBENCH_COMMON_H
#define NCCLBPF_GPUBENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define GB_MAX_GPUS 16
#define GB_MAX_SIZES 64

enum gb_coll { GB_ALLREDUCE = 0, GB_ALLGATHER, GB_REDUCESCATTER, GB_BROADCAST, GB_NCOLLS };

#define GB_MAX_STEP_CALLS 32
struct gb_step_call {
	int coll;
	size_t bytes; /* nccl-tests size: AllGather/ReduceScatter total */
};

struct gb_options {
	int procs;          /* processes to fork */
	int gpus_per_proc;  /* GPUs driven by each process */
	int nodes;          /* emulated nodes: processes split into groups with distinct NCCL_HOSTID */
	int colls[GB_NCOLLS];
	size_t min_bytes, max_bytes;
	int step_factor;
	int warmup, iters;
	int graph;          /* capture the timed iterations in a CUDA graph */
	int same_gpu;       /* every rank on device same_gpu_dev (one emulated node per rank) */
	int same_gpu_dev;
	int device_count;   /* > 0: rank r of a process uses device (proc * gpus_per_proc + g) mod this
	                       (nodes share the host's GPUs: e.g. 2 nodes x 2 GPUs on 2 GPUs, MPS) */
	int reps;           /* repetitions of the whole size sweep inside the process */
	int rep_base;       /* added to the rep column (a script's repetition index) */
	int warmup_sync;    /* wait after every K-th warm-up collective (--warmup-sync: K = 1,
			     * --warmup-sync-every K; 0: never). Online policies learn from
			     * completions: the host must not run far ahead of them. */
	int sync_every;     /* --sync-every K: the timed collectives too wait every K (0: never).
			     * A training step enqueues a few collectives and then waits; an
			     * online policy learns in the regime it runs in, so comparisons of
			     * regimes need the timed phase in either one. */
	int min_iters;      /* floor of the per-size iteration cap below */
	size_t iter_bytes;  /* cap: at most iter_bytes / size timed iterations per size (0 = off) */
	size_t warmup_bytes; /* cap: at most warmup_bytes / size warm-up collectives (0 = off) */
	int min_warmup;     /* floor of that cap */
	int overlap;        /* run a matmul-like kernel concurrently on another stream */
	int overlap_n;      /* matrix dimension of the compute kernel */
	const char *csv_path, *json_path, *label;
	const char *samples_path; /* one row per timed collective (offline tuner format) */
	const char *policy;       /* value of the samples' policy column ("" = no tuner policy) */
	/* training-step workloads (gpubench_steps.cuh): --step replaces the size sweep */
	struct gb_step_call step_calls[GB_MAX_STEP_CALLS];
	int n_step_calls;
	int steps;               /* --steps: timed steps per repetition */
	int step_warmup;         /* --step-warmup: untimed steps first */
	double gap_us;           /* --gap-us: GPU busy time before each collective */
	double overlap_us;       /* --overlap-us: compute per step on another stream */
	int overlap_blocks;      /* --overlap-blocks: its thread blocks */
	int step_queued;         /* --step-queued: no host wait after each step */
	int step_ahead;          /* --step-ahead K: the host waits for step s-K after step s */
	const char *steps_path;  /* --steps-out: one row per step */
	const char *workload;    /* --workload: the name in that file */
};

/* One measured size of one collective, reduced over all ranks (max time). */
struct gb_result {
	int coll;
	int rep;
	size_t bytes;       /* nccl-tests "size" column */
	size_t count;       /* elements per rank (send count) */
	double time_us;     /* per iteration: collective alone, or compute+collective with overlap */
	double compute_us;  /* overlap mode: compute kernel alone */
	double comm_us;     /* overlap mode: collective alone */
	double algbw, busbw; /* GB/s */
	long errors;        /* wrong elements found by the check (summed over ranks) */
};

/* Per-iteration times of one rank for one (rep, coll, size), in chunks small enough that a
 * pipe write of the whole message is atomic (PIPE_BUF) when several ranks share the pipe. */
#define GB_CHUNK 900
struct gb_samples {
	int coll, rep, first, n;
	size_t bytes;
	float us[GB_CHUNK];
};

/* Everything a rank process sends to the launcher: fixed size, one write each. */
struct gb_msg {
	int kind; /* 0 result, 1 samples, 2 step times (samples with coll -1) */
	union {
		struct gb_result result;
		struct gb_samples samples;
	} u;
};

const char *gb_coll_name(int coll);

#endif
