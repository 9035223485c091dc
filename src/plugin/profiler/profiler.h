/* Profiler shim internals: a version-neutral event model that the per-version entry points
 * (profiler_v1.c .. profiler_v6.c) translate NCCL's descriptors into.
 *
 * Handles and contexts given to NCCL are *tokens*, not pointers: a tagged 64-bit value
 * holding (pool index, slot index, generation). Everything NCCL hands back is decoded,
 * bounds-checked and generation-checked, never dereferenced, so stale handles, handles of
 * finalized contexts and pointers from another process (PXN) can never fault; a stale
 * handle whose slot was reused fails the generation check (no ABA).
 *
 * Configuration (documented in docs/observability.md):
 *   NCCLBPF_PROFILE       off | coll | full (default: coll when a profiler program or a
 *                         policy declaring the ncclbpf_latency map is loaded, full when
 *                         NCCLBPF_TRACE is set, else off)
 *   NCCLBPF_PROFILE_POOL  events per communicator pool (default 4096 coll, 16384 full)
 *   NCCLBPF_TRACE         directory for per-process JSON-lines callback logs
 */
#ifndef NCCLBPF_PLUGIN_PROFILER_H
#define NCCLBPF_PLUGIN_PROFILER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ncclbpf/policy.h"
#include "plugin/profiler/nccl_profiler_abi.h"

struct chain_profiler;
struct metrics_comm;

enum profiler_mode {
	PROFILER_MODE_OFF = 0,
	PROFILER_MODE_COLL = 1, /* only what per-collective timing needs */
	PROFILER_MODE_FULL = 2, /* every event type (traces) */
};

/* Version-neutral descriptor, filled by the per-version entry points. */
struct profiler_desc {
	uint32_t type;      /* one NB_PROF_* bit */
	void *parent;       /* NCCL's parentObj: a token of ours, NULL, or foreign (PXN) */
	int rank;
	/* coll / p2p / api */
	uint64_t seq;
	const char *func;   /* "AllReduce", ... (may be NULL) */
	int coll_type;      /* NCCLBPF_COLL_* or -1 */
	uint64_t count;
	int type_size;      /* bytes per element, 0 unknown */
	int algo;           /* NCCLBPF_ALGO_* or -1 */
	int proto;          /* NCCLBPF_PROTO_* or -1 */
	int n_channels;
	int peer;
	int root;
	int group_depth;
	bool graph_captured;
	/* proxy */
	pid_t pid;
	int channel;
	int n_steps;
	int chunk_size;
	int is_send;
	int step;
	/* kernel channel: GPU start timestamp (0 = none, v3) */
	uint64_t gpu_ts;
	int64_t plugin_id;
	uint64_t ce_bytes;
	uint64_t comm_hash; /* v1..v3 Coll/P2p: the communicator (0 under 2.28+ shims) */
	/* v7 (NCCL 2.31) */
	uint64_t user_tag;          /* per-call ncclCollConfig_t.userProfilerTag, 0 = none */
	bool is_sym;                /* Coll ran a symmetric kernel (algo = kernel variant) */
	const char *kernel_variant; /* symmetric kernel variant name, or NULL */
	int phase;                  /* KernelPhase: 0 initial sync, 1 compute, 2 final sync */
	/* chaining (NCCLBPF_PROFILER_INNER): NCCL's own descriptor, and Coll/P2p parentGroup */
	const void *raw;
	void *parent_group;
};

/* Version-neutral state arguments. */
struct profiler_state_args {
	uint64_t gpu_ts;       /* KernelChStop */
	uint64_t trans_size;   /* ProxyStep */
	int appended_ops;      /* ProxyCtrl */
	bool has_args;
	const void *raw;       /* NCCL's state-args union (chaining) */
};

struct profiler_init_args {
	int version;           /* profiler ABI version NCCL bound (1..6) */
	uint64_t comm_id;      /* commHash (0 for v1..v3) */
	const char *comm_name;
	int n_nodes, n_ranks, rank;
	nb_nccl_logger_t logger;
};

/* Entry points shared by all versions; each returns ncclSuccess (0) always. */
int profiler_init(void **context, int *activation_mask, const struct profiler_init_args *a);
int profiler_start(void *context, void **handle, const struct profiler_desc *d);
int profiler_stop(void *handle);
int profiler_record(void *handle, int state, const struct profiler_state_args *args);
int profiler_finalize(void *context);

/* Name translations (NCCL passes strings from v2 on). */
int profiler_coll_type_from_name(const char *func);   /* -1 if not one of the 5 */
int profiler_algo_from_name(const char *algo);         /* -1 unknown */
int profiler_proto_from_name(const char *proto);       /* -1 unknown */
int profiler_type_size_from_name(const char *dtype);   /* 0 unknown */
int profiler_type_size_from_id(int dtype);             /* v1 enum ids */
const char *profiler_event_name(uint32_t type);        /* "Coll", "KernelCh", ... */

/* ---- event pool (profiler_pool.c) ---- */
#define PROFILER_MAX_POOLS 4096   /* pool 0 = detached (PXN) events of the process */
#define PROFILER_MAX_SLOTS (1u << 20)
#define PROFILER_GEN_MASK 0x3fffffffu

struct profiler_ctx;

struct profiler_event {
	_Atomic uint32_t gen;   /* odd = live; part of the handle token */
	_Atomic uint32_t next;  /* free-list link (slot index + 1) */
	uint32_t type;
	uint32_t flags;
	struct profiler_ctx *ctx; /* owning context, NULL when detached */
	uint64_t token;
	uint64_t parent_tok;      /* validated parent (0 if none or foreign) */
	uint64_t start_ns;
	_Atomic uint64_t stop_ns;
	/* collectives */
	uint64_t seq;
	uint64_t comm_seq, band_seq; /* its place in the communicator's / band's sequence */
	uint64_t api_ns;             /* the application's call (its group's GroupApi start) */
	uint64_t n_bytes;
	uint64_t user_tag;
	int32_t coll_type, algo, proto, n_channels;
	uint32_t expect_kch;            /* KernelCh events the mask in force for this call promises */
	bool is_sym;
	_Atomic uint32_t kch_seen;
	_Atomic int32_t pending;       /* own stop + outstanding children */
	_Atomic uint64_t gpu_start_min; /* GPU clock, UINT64_MAX = none */
	_Atomic uint64_t gpu_stop_max;  /* GPU clock, 0 = none */
	_Atomic uint64_t done_ns;       /* host time of the last child's stop */
	/* kernel channel (and kernel phase: its channel, phase id and GPU start) */
	int32_t channel;
	int32_t phase;
	uint64_t gpu_start, gpu_stop;
	/* collectives: the slowest channel's duration of each kernel phase (GPU ns, v7) */
	_Atomic uint64_t phase_max[3];
	void *inner_handle;       /* the inner plugin's handle of this event (chaining) */
};
#define PROFILER_EV_DETACHED 0x1u   /* PXN: context/parent belong to another process */
#define PROFILER_EV_COUNTED 0x2u    /* holds a reference on its parent collective */
#define PROFILER_EV_CARRIER 0x4u    /* only carries an inner plugin's handle */

struct profiler_pool {
	struct profiler_event *slots;
	uint32_t cap;
	uint32_t index;
	_Atomic uint64_t head;     /* (aba tag << 32) | (slot index + 1), 0 = empty */
	_Atomic uint64_t in_use;
	_Atomic uint64_t dropped;  /* allocation failures (pool exhausted) */
};

int profiler_pool_init(struct profiler_pool *p, uint32_t index, uint32_t cap);
void profiler_pool_destroy(struct profiler_pool *p);
/* Pops a free slot, makes it live; NULL when exhausted (counted in dropped). */
struct profiler_event *profiler_pool_alloc(struct profiler_pool *p);
/* Frees a live event once (generation CAS): false if it was not live with that token. */
bool profiler_pool_free(struct profiler_pool *p, struct profiler_event *e, uint64_t token);
/* Frees every live slot (finalize sweep). Returns how many. */
uint32_t profiler_pool_sweep(struct profiler_pool *p);

uint64_t profiler_event_token(const struct profiler_pool *p, const struct profiler_event *e);
/* Registry of pools by index (pool memory is never unmapped while the process lives). */
void profiler_pool_register(struct profiler_pool *p);
/* Decodes a handle token: the live event, or NULL (NULL, foreign, stale or malformed). */
struct profiler_event *profiler_event_decode(uint64_t token);
struct profiler_pool *profiler_pool_of(const struct profiler_event *e);
static inline bool profiler_is_event_token(uint64_t t) { return (t & 3u) == 1u; }

/* ---- KernelCh sampling (profiler_sample.c) ----
 * NCCL reads its process-wide event mask (the int whose address init received) at every
 * API call and keeps that value with the task: whether a collective carries KernelCh
 * instrumentation (GPU timestamps per channel, a proxy/profiler-thread op per channel) is
 * decided at its API call. The sampler flips the KernelCh bit of that int so that about one
 * collective in N per (communicator, size band) is instrumented, N adaptive to the
 * collective rate, and every band seen gets a GPU-timed sample within a bounded delay.
 * Completion never trusts the mask we asked for: the mask in force for a call is read back
 * at its GroupApi start (the same moment NCCL reads it) or, without API events, at Coll
 * start; a collective without KernelCh completes at its Coll stop. */
#define PROFILER_BANDS 65
#define PROFILER_SAMPLE_RUNS 4
struct profiler_sampler {
	int *nccl_mask;            /* NCCL's activation mask (shared by NCCL's comms) */
	bool on;                   /* sampling active for this context */
	bool requesting;           /* this context holds one process-wide KernelCh request */
	uint32_t bits;             /* the mask bits a request switches: KernelCh (+ KernelPhase) */
	uint8_t prev_band;
	uint8_t prev_run;          /* collectives of prev_band in a row, capped (the predictor's key) */
	uint32_t fixed_n;          /* NCCLBPF_PROFILE_SAMPLE=N, 0 = adaptive */
	uint32_t n;                /* current 1-in-N */
	uint64_t delay_ns;         /* max delay before a band seen gets a GPU-timed sample */
	uint64_t last_coll_ns;
	uint64_t ewma_dt_ns;       /* collective inter-arrival time, EWMA 1/16 */
	/* learned successor of (band, its run length so far - 1), 0xff unknown: a step that
	 * all-reduces two 16 MiB buckets in a row and then a 4 MiB one is predicted exactly */
	uint8_t next_band[PROFILER_BANDS][PROFILER_SAMPLE_RUNS];
	uint32_t since[PROFILER_BANDS];    /* collectives of the band since its last sample */
	uint64_t last_sample_ns[PROFILER_BANDS];
	uint32_t seen[PROFILER_BANDS];     /* collectives of the band (steered bursts) */
	struct nb_map *ctl;                /* "ncclbpf_sample_ctl": per-band requests of policies */
	_Atomic uint64_t total, instrumented; /* Coll starts; those carrying KernelCh */
};
/* Budget: about one instrumented collective per PROFILER_SAMPLE_SPACING_NS per context
 * (KernelCh costs ~1-2 us of NCCL time per collective: <= 1 %). */
#define PROFILER_SAMPLE_SPACING_NS 200000ull
#define PROFILER_SAMPLE_MAX_N 1024u
/* The bounded delay's grid: an overdue band is sampled at its next collective whose band
 * index is a multiple of min(N, this), the same collective on every rank. */
#define PROFILER_SAMPLE_DELAY_GRID 8u

struct profiler_ctx;
void profiler_sample_init(struct profiler_ctx *c, int *nccl_mask, bool enable);
void profiler_sample_release(struct profiler_ctx *c);
/* The event mask NCCL used for the collective whose Coll start is being handled. */
uint32_t profiler_task_mask(const struct profiler_ctx *c);
/* GroupApi start/stop on this thread: NCCL (re)read its mask for the calls of this group. */
void profiler_api_group_start(const struct profiler_ctx *c, uint64_t now);
void profiler_api_group_stop(void);
/* The host time of the current group's GroupApi start on this thread (the application's
 * call into NCCL), 0 outside one (profiler v1-v4, or a launch on another thread). */
uint64_t profiler_api_ns(void);
/* Coll start: account the collective (band, instrumented or not) and set the KernelCh bit
 * for the next API call. */
void profiler_sample_coll(struct profiler_ctx *c, uint32_t band, bool instrumented,
			  uint64_t now);
/* A policy's request for band b ("ncclbpf_sample_ctl", policy.h NCCLBPF_SAMPLE_*): 0 = none;
 * else N = v & 0xffff (>= 1) and a burst B = v >> 16 (0 = 1): the first B of every N
 * collectives of the band carry KernelCh, and so do the collectives before and after each
 * of them (a program that times completion to completion, or kernel start to kernel start,
 * needs both ends). Exposed for tests. */
bool profiler_sample_steered_due(uint32_t v, uint32_t index);
/* Parses NCCLBPF_PROFILE_SAMPLE ("auto" = 0, or N >= 1); -1 if invalid. */
int profiler_sample_parse(const char *s);
/* Process-wide outstanding KernelCh requests (tests). */
int profiler_sample_requests(void);

/* ---- per-communicator context (profiler_core.c) ---- */
struct profiler_stat_slot {
	atomic_flag lock; /* taken only on collective completion, per (coll, bucket) */
	struct ncclbpf_latency_stats s;
};

struct profiler_ctx {
	_Atomic uint32_t gen;  /* odd = live */
	uint32_t index;
	uint64_t token;
	int version;
	int mode;
	bool disabled;
	bool trace;
	bool log_tags; /* v7 and NCCLBPF_DECISION_LOG: CollApi tags go to the decision log */
	/* atomic: profiler v1-v3 learn them from the first Coll event (app thread) while the
	 * proxy thread reads them */
	_Atomic uint64_t comm_id;
	char comm_name[64];
	_Atomic int rank;
	int n_ranks, n_nodes;
	uint32_t mask;         /* activation mask we asked for (KernelCh: "may come") */
	struct metrics_comm *metrics;       /* NCCLBPF_METRICS_FILE, NULL when off */
	const struct chain_profiler *inner; /* NCCLBPF_PROFILER_INNER, NULL when none */
	void *inner_ctx;
	int inner_mask;        /* what the inner plugin asked for */
	/* Written by the proxy/profiler thread on every collective: kept off the cache lines
	 * the application thread reads on each event (false sharing measured as a cost when
	 * both threads spin on one line). */
	_Alignas(64) _Atomic uint64_t last_reclaim_ns; /* rate limit of profiler_reclaim_stale */
	_Atomic int64_t gpu_offset;   /* host_ns - gpu_ns, minimum seen */
	_Atomic bool have_offset;
	_Atomic uint64_t completed;
	_Atomic uint64_t dropped_children;
	_Alignas(64) struct profiler_pool pool;
	/* KernelCh sampling state (profiler_sample.c), application thread only */
	_Alignas(64) struct profiler_sampler sampler;
	/* Coll starts so far, all types and per (type, size band): the tuner's comm_seq and
	 * band_seq of each collective (ctx->comm_seq, ctx->band_seq). Application thread only,
	 * like the sampler: NCCL starts a communicator's Coll events one at a time. */
	uint64_t coll_started;
	uint64_t band_started[NCCLBPF_NUM_COLLS][PROFILER_BANDS];
	struct profiler_stat_slot stats[NCCLBPF_NUM_COLLS][65];
};

/* Decodes a context token (NULL if not a live context of this process). */
struct profiler_ctx *profiler_ctx_decode(uint64_t token);
/* First live context of comm_id (tests, diagnostics; linear scan). */
struct profiler_ctx *profiler_ctx_find(uint64_t comm_id);
uint64_t profiler_now_ns(void);
/* GPU timestamp -> host CLOCK_MONOTONIC ns for this context (0 stays 0). */
uint64_t profiler_gpu_to_host(const struct profiler_ctx *c, uint64_t gpu_ns);
void profiler_note_gpu_sample(struct profiler_ctx *c, uint64_t host_ns, uint64_t gpu_ns);

/* ---- completion of a collective (profiler_timing.c / profiler_latency.c) ---- */
/* Drops one reference of a collective; the last one completes it and frees its slot. */
void profiler_coll_release(struct profiler_event *coll, uint64_t host_ns);
/* Completes collectives of c pending for longer than the stale age (default 5 s) with
 * what they have; called when c's pool is exhausted. Returns how many. */
uint32_t profiler_reclaim_stale(struct profiler_ctx *c, uint64_t now);
void profiler_set_stale_ns(uint64_t ns); /* tests */
/* Updates the stats (EWMA, min, p99) and publishes them to the ncclbpf_latency map. */
void profiler_latency_update(struct profiler_ctx *c, const struct ncclbpf_profiler_ctx *pc);
/* Creates/binds the built-in map (idempotent). */
void profiler_latency_map_init(void);
/* The streaming p99 update (exposed for tests). */
uint64_t profiler_p99_step(uint64_t q, uint64_t x);

/* ---- process-wide settings and counters ---- */
int profiler_process_mode(void); /* resolved once */
/* NCCLBPF_PROFILE_PHASES=1 (read once): KernelPhase events in coll mode (v7). */
bool profiler_phases_wanted(void);
/* Tests: forget the resolved mode so the next init re-reads the environment. */
void profiler_reset_mode_for_tests(void);

struct profiler_counters {
	uint64_t dropped_pool;    /* pool exhausted */
	uint64_t dropped_ctx;     /* NULL/disabled/stale context or filtered by mode */
	uint64_t detached;        /* PXN events of another process */
	uint64_t stale_handles;   /* stop/record with a handle that is not live */
	uint64_t null_handles;    /* stop/record with NULL */
	uint64_t completed;       /* collectives completed */
	uint64_t program_faults;
};
void profiler_get_counters(struct profiler_counters *out);

/* Observer of completed collectives (tests, benchmark). One process-wide slot. */
typedef void (*profiler_observer_fn)(const struct ncclbpf_profiler_ctx *pc, void *arg);
void profiler_set_observer(profiler_observer_fn fn, void *arg);
/* Copy of the stats for (comm, coll, bucket) as the context keeps them; -ENOENT if none. */
int profiler_latency_get(uint64_t comm_id, uint32_t coll_type, uint32_t bucket,
			 struct ncclbpf_latency_stats *out);

/* ---- trace writer (trace_writer.c) ---- */
bool trace_writer_enabled(void);
/* Appends one JSON object (without newline) as a line; cheap per-thread buffering. */
void trace_writer_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void trace_writer_flush_all(void);
/* Flushes the calling thread's buffer if its last flush is >= 250 ms older than now_ns. */
void trace_writer_flush_periodic(uint64_t now_ns);
/* Tests: re-read NCCLBPF_TRACE (closes the current file). */
void trace_writer_reset_for_tests(void);
const char *trace_writer_path(void);

#endif
