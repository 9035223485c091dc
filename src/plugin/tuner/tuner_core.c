/* The tuner decision path shared by every ABI version: per-communicator state, the
 * policy chain run on a stack context, and the hand-off to tuner_translate.c.
 * getCollInfo takes no lock and allocates nothing; it always returns success because NCCL
 * fails the collective on any other value (ref/nccl-plugin-abi.md §7.4). */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree/agree.h"
#include "ncclbpf/ncclbpf.h"
#include "plugin/chain/chain.h"
#include "plugin/comm_channels.h"
#include "plugin/env/env_plugin.h"
#include "plugin/metrics/metrics.h"
#include "plugin/otlp/otlp.h"
#include "plugin/provenance.h"
#include "plugin/nccl_version.h"
#include "plugin/tuner/tuner.h"
#include "runtime/runtime.h"

#define TUNER_LOG (NB_LOG_TUNING)

static _Atomic uint64_t issue_counts[TUNER_ISSUE_COUNT];
static _Atomic unsigned issues_logged; /* bit per kind: logged once per process */

uint64_t tuner_issue_count(enum tuner_issue issue)
{
	if ((unsigned)issue >= TUNER_ISSUE_COUNT)
		return 0;
	return atomic_load_explicit(&issue_counts[issue], memory_order_relaxed);
}

/* Counts every issue; logs the first occurrence of each kind (the slow path only runs when
 * a policy misbehaves). */
static void note_issues(unsigned issues, const char *label, const char *detail)
{
	for (int i = 0; i < TUNER_ISSUE_COUNT; i++) {
		if (!(issues & (1u << i)))
			continue;
		atomic_fetch_add_explicit(&issue_counts[i], 1, memory_order_relaxed);
		unsigned bit = 1u << i;
		if (atomic_fetch_or_explicit(&issues_logged, bit, memory_order_relaxed) & bit)
			continue;
		int level = i == TUNER_ISSUE_FAULT ? NB_LOG_WARN : NB_LOG_INFO;
		const char *action = i == TUNER_ISSUE_FAULT ? "its writes were discarded"
				     : i == TUNER_ISSUE_CHANNELS_CLAMPED ? "the clamped count was applied"
				     : "NCCL's choice was kept";
		runtime_log(level, TUNER_LOG,
			    "tuner: %s (%s)%s%s; %s. Logged once per kind, counted always",
			    tuner_issue_name((enum tuner_issue)i), label ? label : "policy",
			    detail && detail[0] ? ": " : "", detail ? detail : "", action);
	}
}

/* A policy asked for something NCCL's table does not offer: who restricted it (counted per
 * communicator, logged once per kind per process). Off the common path: only a request
 * that was not applied gets here. */
static _Atomic unsigned restrictions_logged;
static enum tuner_restriction note_restriction(struct tuner_comm *tc, int coll_type, int algo,
					       int proto)
{
	enum tuner_restriction r = tuner_restriction_of(tc, coll_type, algo, proto);
	atomic_fetch_add_explicit(&tc->restricted[r], 1, memory_order_relaxed);
	if (atomic_fetch_or_explicit(&restrictions_logged, 1u << r, memory_order_relaxed) &
	    (1u << r))
		return r;
	runtime_log(NB_LOG_INFO, TUNER_LOG,
		    "tuner: comm 0x%" PRIx64 ": a policy's algorithm %d / protocol %d for "
		    "collective %d was not applied: %s; NCCL's choice stands (a policy never "
		    "overrides it). Logged once, counted per communicator",
		    tc->comm_id, algo, proto, coll_type, tuner_restriction_name(r));
	return r;
}

void tuner_note_issue(enum tuner_issue issue, const char *label, const char *detail)
{
	if ((unsigned)issue < TUNER_ISSUE_COUNT)
		note_issues(1u << issue, label, detail);
}

static void comm_go_straight(struct tuner_comm *tc);

/* Whether anything reads the per-collective provenance: the metrics (file or OTLP), the
 * timeline, OTLP spans. Decisions then take the general path, which records it. */
static bool tuner_prov_wanted(void)
{
	/* the timeline by its variable: opening it here would make a tuner-only process write
	 * a trace file */
	const char *tr = getenv("NCCLBPF_TRACE");
	return metrics_enabled() || (tr && *tr) || otlp_traces_enabled();
}

void tuner_comm_open(unsigned abi_version, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		     nb_nccl_logger_t log, void **out)
{
	if (log)
		runtime_set_logger((nb_logger_fn)log);
	/* Loads NCCLBPF_POLICY once per process; the runtime logs the outcome (one INFO line
	 * for pass-through, one WARN line with the diagnostic per rejected object). */
	runtime_load_policies_from_env();
	const struct nb_hook_chain *chain = runtime_chain_enter(NB_HOOK_TUNER);
	size_t attached = chain ? chain->len : 0;
	runtime_chain_exit();

	struct tuner_comm *tc = calloc(1, sizeof(*tc));
	if (!tc) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | TUNER_LOG,
			    "tuner: out of memory for a communicator context, pass-through");
		*out = NULL;
		return;
	}
	tc->comm_id = comm_id;
	tc->n_ranks = (uint32_t)n_ranks;
	tc->n_nodes = (uint32_t)n_nodes;
	tc->ranks_per_node = tc->n_nodes && tc->n_ranks % tc->n_nodes == 0
				     ? tc->n_ranks / tc->n_nodes : 0;
	tc->abi_version = abi_version;
	tc->nccl_version = nccl_version_get();
	tc->channels_unclamped = tuner_channels_unclamped_mask(abi_version, tc->nccl_version,
							       getenv("NCCL_ALLGATHERV_ENABLE"));
	tuner_restrict_open(tc);
	tc->stats.kind = "tuner";
	tc->stats.comm_id = comm_id;
	tc->stats.n_ranks = tc->n_ranks;
	tc->stats.n_nodes = tc->n_nodes;
	tc->stats.abi_version = abi_version;
	const char *sym = getenv("NCCLBPF_TUNER_SYM");
	int pin = tuner_sym_mode_parse(sym);
	if (pin < 0)
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | TUNER_LOG,
			    "NCCLBPF_TUNER_SYM=%s not understood (pin|compete): using pin", sym);
	tc->pin = pin != 0;
	/* NCCL applied NCCL_ALGO / NCCL_PROTO to the table before we see it (entries -1): a
	 * choice nobody overrides is then the environment's (read as NCCL reads it, through
	 * the env plugin when it answers) */
	const char *ea = env_plugin_lookup("NCCL_ALGO"), *ep = env_plugin_lookup("NCCL_PROTO");
	tc->env_restricted = (ea && *ea) || (ep && *ep);
	tc->stats.keep_src = tc->env_restricted ? NB_DSRC_ENV
			     : tc->pin		? NB_DSRC_PINNED
						: NB_DSRC_NCCL;
	tc->prov = tuner_prov_wanted() ? prov_comm_open(comm_id) : NULL;
	tc->metrics = metrics_tuner_open(comm_id);
	tc->agree = agree_comm_tuner_open(comm_id, (uint32_t)n_ranks);
	tuner_reload_comm_open(tc);
	comm_go_straight(tc); /* tried again after each general-path decision */
	runtime_comm_register(&tc->stats); /* status; the first one starts the control socket */
	char rel[32] = "NCCL version unknown";
	if (tc->nccl_version)
		snprintf(rel, sizeof(rel), "NCCL %u.%u.%u", tc->nccl_version / 10000,
			 tc->nccl_version / 100 % 100, tc->nccl_version % 100);
	runtime_log(NB_LOG_INFO, NB_LOG_INIT | TUNER_LOG,
		    "tuner: ncclTunerPlugin_v%u (%s) comm 0x%" PRIx64 " nRanks %zu nNodes %zu: "
		    "%zu tuner program(s)%s",
		    abi_version, rel, comm_id, n_ranks, n_nodes, attached,
		    attached ? "" : ", pass-through");
	*out = tc;
}

int tuner_sym_mode_parse(const char *s)
{
	if (!s || !*s || !strcmp(s, "pin"))
		return 1;
	if (!strcmp(s, "compete"))
		return 0;
	return -1;
}

void tuner_comm_set_nvl(void *ctx, const struct nb_nccl_nvl_domain_info_v5 *nvl)
{
	struct tuner_comm *tc = ctx;
	if (!tc || !nvl)
		return;
	/* negative = nonsense from a foreign NCCL build: unknown */
	tc->n_nvl_domains = nvl->n_nvl_domains > 0 ? (uint32_t)nvl->n_nvl_domains : 0;
	tc->min_ranks_per_nvl_domain =
		nvl->min_ranks_per_nvl_domain > 0 ? (uint32_t)nvl->min_ranks_per_nvl_domain : 0;
	tc->max_ranks_per_nvl_domain =
		nvl->max_ranks_per_nvl_domain > 0 ? (uint32_t)nvl->max_ranks_per_nvl_domain : 0;
}

void tuner_comm_chain_init(void *ctx, size_t n_ranks, size_t n_nodes, nb_nccl_logger_t log,
			   struct nb_nccl_nvl_domain_info_v5 *nvl,
			   struct nb_nccl_tuner_constants_v5 *constants)
{
	struct tuner_comm *tc = ctx;
	if (!tc)
		return;
	const struct chain_tuner *inner = chain_tuner_get();
	if (!inner)
		return;
	bool ok;
	void *ictx = chain_tuner_init(inner, tc->comm_id, n_ranks, n_nodes, log, nvl, constants,
				      &ok);
	if (ok) {
		tc->inner = inner;
		tc->inner_ctx = ictx;
		/* the inner plugin runs on the general path */
		if (tc->straight)
			map_epoch_seq_unregister(&tc->reader);
		tc->straight = false;
	}
}

void tuner_comm_chain_init_v7(void *ctx, size_t n_ranks, size_t n_nodes, nb_nccl_logger_t log,
			      struct nb_nccl_nvl_domain_info_v5 *nvl,
			      struct nb_nccl_tuner_constants_v7 *constants)
{
	if (!ctx || !chain_tuner_get())
		return;
	if (!constants) {
		tuner_comm_chain_init(ctx, n_ranks, n_nodes, log, nvl, NULL);
		return;
	}
	/* NCCL's own v7 -> v5 conversion for a v6 plugin: the latencies, then rows 0-3 of each
	 * bandwidth table; back the same way (row 4 untouched) */
	enum { LAT = 84, ROW = NB_NCCL_NUM_TUNING_SCALES };
	double *k7 = (double *)(void *)constants, k5[TUNER_CONSTANTS_V5_DOUBLES];
	memcpy(k5, k7, LAT * sizeof(double));
	for (int t = 0; t < NCCLBPF_NUM_BW_TABLES; t++)
		memcpy(&k5[LAT + t * NB_NCCL_NUM_COMPCAPS_V5 * ROW],
		       &k7[LAT + t * NB_NCCL_NUM_COMPCAPS_V7 * ROW],
		       NB_NCCL_NUM_COMPCAPS_V5 * ROW * sizeof(double));
	tuner_comm_chain_init(ctx, n_ranks, n_nodes, log, nvl,
			      (struct nb_nccl_tuner_constants_v5 *)(void *)k5);
	memcpy(k7, k5, LAT * sizeof(double));
	for (int t = 0; t < NCCLBPF_NUM_BW_TABLES; t++)
		memcpy(&k7[LAT + t * NB_NCCL_NUM_COMPCAPS_V7 * ROW],
		       &k5[LAT + t * NB_NCCL_NUM_COMPCAPS_V5 * ROW],
		       NB_NCCL_NUM_COMPCAPS_V5 * ROW * sizeof(double));
}

int tuner_comm_close(void *ctx)
{
	struct tuner_comm *tc = ctx;
	if (!tc)
		return NB_NCCL_SUCCESS;
	runtime_log(NB_LOG_INFO, TUNER_LOG,
		    "tuner: comm 0x%" PRIx64 " finalized: %" PRIu64 " decisions, %" PRIu64
		    " changed by policy",
		    tc->comm_id, atomic_load(&tc->stats.calls), atomic_load(&tc->stats.changed));
	runtime_comm_unregister(&tc->stats);
	prov_comm_close(tc->prov);
	tuner_reload_comm_close(tc);
	agree_comm_tuner_close(tc->agree);
	if (tc->inner)
		chain_tuner_finalize(tc->inner, tc->inner_ctx);
	if (tc->straight)
		map_epoch_seq_unregister(&tc->reader);
	free(tc);
	return NB_NCCL_SUCCESS;
}

/* Counts one NCCL collective: the per-type sequence (ctx->seq), the per-communicator
 * one (ctx->comm_seq) that agreed-map epochs and activations use, and the per-band one
 * (ctx->band_seq, left in tc->band_now for the fill). The one place that decides what
 * advances them (rank-invariant: every rank counts the same calls). */
static inline void tuner_next_seq(struct tuner_comm *tc, int coll_type, size_t n_bytes,
				  uint64_t *seq, uint64_t *comm_seq)
{
	*seq = tc->seq[coll_type]++;
	tc->band_now = tc->band_seq[coll_type][ncclbpf_size_bucket(n_bytes)]++;
	/* the communicator's sequence is its call count: one counter, read by `ctl status`
	 * (relaxed: only getCollInfo, serialized per communicator by NCCL, writes it) */
	uint64_t n = atomic_load_explicit(&tc->stats.calls, memory_order_relaxed);
	atomic_store_explicit(&tc->stats.calls, n + 1, memory_order_relaxed);
	*comm_seq = n;
}

/* Lets the communicator's decisions take the straight path when its chain allows it: no
 * inner plugin, no metrics, no reload agreement, and an agreement layer with nothing to do
 * (agree_tuner_passive). Its sections are counted (epoch_seq_reader: the call count opens
 * one, a store closes it) with a compiler barrier only, the reclaimer's membarrier()
 * supplying the hardware one: without membarrier every decision takes the general path,
 * whose thread sections use full fences. Once straight it stays so (inner, metrics and
 * reload slot are fixed at init, passive never reverts; a forked child that loses
 * membarrier stops reclaiming instead: epoch.c): tried at init and after general-path
 * decisions until it holds. */
static void comm_go_straight(struct tuner_comm *tc)
{
	if (!tc->straight && !tc->inner && !tc->metrics && !tc->prov && tc->reload_slot < 0 &&
	    map_epoch_uses_membarrier() && agree_tuner_passive(tc->agree)) {
		map_epoch_seq_register(&tc->reader, &tc->stats.calls);
		tc->straight = true;
	}
}

/* The inputs every path fills the same way (the constant ones precomputed at init). */
static inline void ctx_fill_inputs(struct ncclbpf_tuner_ctx *c, const struct tuner_comm *tc,
				   int coll_type, size_t n_bytes, int num_pipe_ops, int reg_buff,
				   uint64_t seq, const float *table, int num_algo, int num_proto,
				   struct tuner_fill_info *fill)
{
	c->comm_id = tc->comm_id;
	c->n_bytes = n_bytes;
	c->seq = seq;
	c->coll_type = (uint32_t)coll_type;
	c->n_ranks = tc->n_ranks;
	c->n_nodes = tc->n_nodes;
	c->num_pipe_ops = num_pipe_ops > 0 ? (uint32_t)num_pipe_ops : 0;
	c->reg_buff = reg_buff ? 1 : 0;
	/* informational and rank-local (learned per rank by the profiler): the verifier rejects
	 * decisions made from it unless NCCLBPF_RANK_LOCAL=allow; never used as a clamp */
	int max_ch = tc->comm_id ? comm_channels_get(tc->comm_id) : 0;
	c->max_channels = max_ch > 0 ? (uint32_t)max_ch : 0;
	c->abi_version = tc->abi_version;
	tuner_ctx_fill_info(c, table, num_algo, num_proto, fill);
	c->n_nvl_domains = tc->n_nvl_domains;
	c->min_ranks_per_nvl_domain = tc->min_ranks_per_nvl_domain;
	c->max_ranks_per_nvl_domain = tc->max_ranks_per_nvl_domain;
	c->ranks_per_node = tc->ranks_per_node;
	c->band_seq = tc->band_now;
	c->nccl_version = tc->nccl_version; /* _pad0 is no field: programs cannot read it */
}

/* Closes the straight path's section, which the call count opened (tuner_next_seq). The
 * count is loaded again rather than kept in a register across the program call (measured
 * cheaper: no callee-saved register to spill). */
static inline void straight_exit(struct tuner_comm *tc)
{
	map_epoch_seq_exit(&tc->reader,
			   atomic_load_explicit(&tc->stats.calls, memory_order_relaxed));
}

/* Leaves the decision's section: the communicator's (straight path) or the thread's. */
static inline void apply_exit(struct tuner_comm *tc, bool straight)
{
	if (straight)
		straight_exit(tc);
	else
		runtime_chain_exit();
}

/* General path: a decision and who made it, to everything that records it (ctl status
 * counters, the profiler's provenance ring, the decision log, the metrics). The straight
 * path records nothing (runtime_comm_sources accounts for its decisions). */
static void tuner_note_decision(struct tuner_comm *tc, uint64_t comm_seq, uint64_t seq,
				int coll_type, size_t n_bytes, int algo, int proto, int n_channels,
				unsigned src, uint32_t policy, bool changed)
{
	runtime_stat_inc(&tc->stats.src[src]);
	if (changed)
		runtime_stat_inc(&tc->stats.src_changed);
	if (tc->prov)
		prov_record(tc->prov, (unsigned)coll_type, seq, n_bytes, src, policy);
	agree_log_decision(tc->agree, comm_seq, coll_type, n_bytes, algo, proto, n_channels, src,
			   policy);
	if (tc->metrics)
		metrics_tuner_note(tc->metrics, changed, src);
}

/* The policy id of program i of chain (interned once per chain version and program). */
static uint32_t tuner_policy_id(struct tuner_comm *tc, const struct nb_hook_chain *chain,
				uint32_t i)
{
	if (i >= chain->len)
		i = chain->len ? (uint32_t)chain->len - 1 : 0;
	uint64_t key = chain->version << 8 | (i & 0xffu);
	if (tc->policy_key != key || !tc->policy_id) {
		tc->policy_id = nb_policy_id(chain->version, i, chain->len ? chain->items[i].label
									   : "");
		tc->policy_key = key;
	}
	return tc->policy_id;
}

/* After the chain ran (inside its section): applies the decision, leaves the section, logs
 * it. straight: the straight path (no decision log: agree_tuner_passive; no provenance:
 * tuner_note_decision). keep_src: the source when NCCL's choice is kept; decider: the
 * program that last changed the outputs. Returns whether a policy changed the table or the
 * channel count. */
static inline __attribute__((always_inline)) bool
tuner_apply(struct tuner_comm *tc, const struct nb_hook_chain *chain,
	    const struct ncclbpf_tuner_ctx *c, const struct tuner_fill_info *fill,
	    uint64_t comm_seq, int coll_type, size_t n_bytes, float *table, int num_algo,
	    int num_proto, int *n_channels, bool straight, unsigned keep_src, uint32_t decider)
{
	/* the straight path runs the active chain, which `ctl status` shows without our help
	 * (runtime/control.h general_mark): a store per decision was 1-4 ns on size_aware */
	if (!straight) {
		atomic_store_explicit(&tc->stats.chain_version, chain->version,
				      memory_order_relaxed);
		atomic_store_explicit(&tc->stats.general_mark, comm_seq + 1, memory_order_relaxed);
	}
	if (tuner_ctx_keeps(c)) {
		apply_exit(tc, straight);
		if (tc->pin) /* the table is as the fill read it */
			tuner_pin_filled(table, num_algo, num_proto, fill);
		if (!straight)
			tuner_note_decision(tc, comm_seq, c->seq, coll_type, n_bytes, -1, -1, 0,
					    keep_src, 0, false);
		return false;
	}
	struct tuner_applied applied;
	tuner_translate(table, num_algo, num_proto, c->algo, c->proto, c->n_channels, n_channels,
			&applied);
	/* a path where NCCL may use the count unclamped (tuner_channels_unclamped_mask): NCCL's
	 * own count, on every rank (undone here rather than tested before: one test on the
	 * common path) */
	if (__builtin_expect(applied.n_channels > 0 && ((tc->channels_unclamped >> coll_type) & 1),
			     0)) {
		*n_channels = NCCLBPF_CHANNELS_KEEP;
		applied.n_channels = 0;
		applied.issues = (applied.issues & ~(1u << TUNER_ISSUE_CHANNELS_CLAMPED)) |
				 (1u << TUNER_ISSUE_CHANNELS_UNCLAMPED);
	}
	bool changed = applied.algo >= 0 || applied.n_channels > 0;
	if (changed)
		runtime_stat_inc(&tc->stats.changed);
	/* the table was left to NCCL (KEEP or a discarded request; translate changed no entry
	 * then): make its choice explicit */
	if (applied.algo < 0 && tc->pin)
		tuner_pin_filled(table, num_algo, num_proto, fill);
	if (__builtin_expect(applied.issues != 0, 0)) {
		if (applied.issues & (1u << TUNER_ISSUE_CHANNELS_CLAMPED))
			runtime_stat_inc(&tc->stats.clamps);
		/* a request the environment kept out: the decision is the environment's
		 * (provenance), as when no policy asks */
		if ((applied.issues & TUNER_ISSUES_UNAVAILABLE) &&
		    note_restriction(tc, coll_type, c->algo, c->proto) == TUNER_RESTRICT_ENV)
			keep_src = NB_DSRC_ENV;
		note_issues(applied.issues, chain->len == 1 ? chain->items[0].label : "policy chain",
			    NULL);
	}
	/* interned inside the section: the chain's labels are valid there */
	uint32_t policy = !straight && changed ? tuner_policy_id(tc, chain, decider) : 0;
	apply_exit(tc, straight);
	if (!straight)
		tuner_note_decision(tc, comm_seq, c->seq, coll_type, n_bytes, applied.algo,
				    applied.proto, applied.n_channels,
				    changed ? NB_DSRC_POLICY : keep_src, policy, changed);
	return changed;
}

/* The inner plugin's getCollInfo; whether it changed the table or the channel count (the
 * first 64 entries compared: NCCL's tables are 7x3). */
static bool tuner_inner_call(struct tuner_comm *tc, int coll_type, size_t n_bytes,
			     int num_pipe_ops, float *table, int num_algo, int num_proto,
			     int reg_buff, int *n_channels)
{
	float before[64];
	size_t n = (size_t)num_algo * (size_t)num_proto;
	if (n > 64)
		n = 64;
	memcpy(before, table, n * sizeof(float));
	int ch = *n_channels;
	chain_tuner_coll_info(tc->inner, tc->inner_ctx, coll_type, n_bytes, num_pipe_ops, table,
			      num_algo, num_proto, reg_buff, n_channels);
	return *n_channels != ch || memcmp(before, table, n * sizeof(float)) != 0;
}

static bool tuner_decide_general(struct tuner_comm *tc, const struct nb_hook_chain *chain,
				 uint64_t seq, uint64_t comm_seq, int coll_type, size_t n_bytes,
				 int num_pipe_ops, float *table, int num_algo, int num_proto,
				 int reg_buff, int *n_channels);

/* The straight line for a program that uses hash/LRU maps: it runs inside the thread's
 * epoch section too, as ncclbpf_program_run runs it (an update that finds the element pool
 * empty then fails at once instead of waiting for a reclamation it would block). Out of
 * line, so that the direct case keeps its code. Inside the communicator's section. */
static __attribute__((noinline)) void
tuner_decide_epoch(struct tuner_comm *tc, const struct nb_hook_chain *chain, uint64_t seq,
		   uint64_t comm_seq, int coll_type, size_t n_bytes, int num_pipe_ops,
		   float *table, int num_algo, int num_proto, int reg_buff, int *n_channels)
{
	struct ncclbpf_tuner_ctx c;
	struct tuner_fill_info fill;
	ctx_fill_inputs(&c, tc, coll_type, n_bytes, num_pipe_ops, reg_buff, seq, table, num_algo,
			num_proto, &fill);
	c.comm_seq = comm_seq;
	map_epoch_enter_fast();
	chain->epoch_entry((uint64_t)(uintptr_t)&c, sizeof(c));
	map_epoch_exit_fast();
	tuner_apply(tc, chain, &c, &fill, comm_seq, coll_type, n_bytes, table, num_algo,
		    num_proto, n_channels, true, NB_DSRC_UNKNOWN, 0);
}

/* The decision path. The common case (a straight communicator, comm_go_straight, and a
 * direct chain: runtime_hook_direct, one JIT-compiled program that cannot fault, needs no
 * epoch, reads no agreed map and has no gate open) is two predictable branches, then a
 * straight line: fill, one call of the JIT code, apply. A program that uses hash/LRU maps
 * takes the same line inside the thread's epoch section. Everything optional (inner
 * plugin, agreement, reload gates, decision log, metrics, several programs, faults,
 * interpreters) is on the general path, which keeps the order the straight path implies:
 * inner plugin, agreement verdict, gate, chain, apply. */
int tuner_get_coll_info(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
			float **cost_table, int num_algo, int num_proto, int reg_buff,
			int *n_channels)
{
	struct tuner_comm *tc = ctx;
	if (!tc || !cost_table || !n_channels || coll_type < 0 ||
	    coll_type >= NCCLBPF_NUM_COLLS || num_algo <= 0 || num_proto <= 0)
		return NB_NCCL_SUCCESS;
	uint64_t seq, comm_seq;
	tuner_next_seq(tc, coll_type, n_bytes, &seq, &comm_seq);
	/* costTable is float[numAlgo][numProto] cast to float** (ABI dossier §2.3). */
	float *table = (float *)cost_table;
	if (__builtin_expect(tc->straight, 1)) {
		/* The chain stays valid until the section ends (a reload frees it only after). The
		 * section is the communicator's own, opened by the call count tuner_next_seq
		 * stored: NCCL serializes getCollInfo per communicator (the seq counters rely on
		 * it too), so its sections never overlap, and one store at the end replaces the
		 * thread's nesting count, TLS lookups and epoch stores (measured: docs/results.md
		 * "decision path"). */
		map_epoch_seq_enter();
		const struct nb_hook_chain *chain =
			atomic_load_explicit(&runtime_hook_direct[NB_HOOK_TUNER], memory_order_acquire);
		if (__builtin_expect(chain != NULL, 1)) {
			struct ncclbpf_tuner_ctx c;
			struct tuner_fill_info fill;
			ctx_fill_inputs(&c, tc, coll_type, n_bytes, num_pipe_ops, reg_buff, seq, table,
					num_algo, num_proto, &fill);
			c.comm_seq = comm_seq;
			chain->direct_entry((uint64_t)(uintptr_t)&c, sizeof(c));
			tuner_apply(tc, chain, &c, &fill, comm_seq, coll_type, n_bytes, table, num_algo,
				    num_proto, n_channels, true, NB_DSRC_UNKNOWN, 0);
			return NB_NCCL_SUCCESS;
		}
		chain = atomic_load_explicit(&runtime_hook_slots[NB_HOOK_TUNER], memory_order_acquire);
		if (chain && chain->epoch_entry &&
		    !atomic_load_explicit(&chain->gated, memory_order_relaxed)) {
			tuner_decide_epoch(tc, chain, seq, comm_seq, coll_type, n_bytes, num_pipe_ops,
					   table, num_algo, num_proto, reg_buff, n_channels);
			return NB_NCCL_SUCCESS;
		}
		straight_exit(tc);
	}
	/* The chain stays valid until runtime_chain_exit (a reload frees it only after). */
	const struct nb_hook_chain *chain = runtime_chain_enter(NB_HOOK_TUNER);
	tuner_decide_general(tc, chain, seq, comm_seq, coll_type, n_bytes, num_pipe_ops, table,
			     num_algo, num_proto, reg_buff, n_channels);
	runtime_stat_inc(&tc->stats.general);
	comm_go_straight(tc);
	return NB_NCCL_SUCCESS;
}

/* Everything the straight path leaves out. Called inside the section that returned chain
 * (NULL: nothing attached); leaves it. Returns whether a policy changed the table or the
 * channel count. */
static __attribute__((noinline)) bool
tuner_decide_general(struct tuner_comm *tc, const struct nb_hook_chain *chain, uint64_t seq,
		     uint64_t comm_seq, int coll_type, size_t n_bytes, int num_pipe_ops,
		     float *table, int num_algo, int num_proto, int reg_buff, int *n_channels)
{
	/* the inner plugin first: its edits are what the policies see as NCCL's choice */
	bool inner_changed = false;
	if (tc->inner)
		inner_changed = tuner_inner_call(tc, coll_type, n_bytes, num_pipe_ops, table,
						 num_algo, num_proto, reg_buff, n_channels);
	/* who decided when nothing overrides NCCL's (or the inner plugin's) choice */
	unsigned keep_src = inner_changed ? NB_DSRC_INNER : tc->stats.keep_src;
	unsigned nochain_src = inner_changed	   ? NB_DSRC_INNER
			       : tc->env_restricted ? NB_DSRC_ENV
						    : NB_DSRC_NCCL;
	if (!chain) {
		runtime_chain_exit();
		tuner_note_decision(tc, comm_seq, seq, coll_type, n_bytes, -1, -1, 0, nochain_src, 0,
				    false);
		return false;
	}
	/* agreed maps: activate the version due at comm_seq; after a failed agreement every
	 * rank keeps NCCL's defaults from the same collective on (pinned, see tuner.h, so that
	 * NCCL 2.31 cannot call again for this collective) */
	if (agree_tuner_begin(tc->agree, comm_seq) == AGREE_FALLBACK) {
		agree_tuner_end();
		runtime_chain_exit();
		if (tc->pin)
			tuner_pin(table, num_algo, num_proto);
		tuner_note_decision(tc, comm_seq, seq, coll_type, n_bytes, -1, -1, 0,
				    NB_DSRC_FALLBACK, 0, false);
		return false;
	}
	/* a reload activating across ranks: old or new chain, as the agreed view at comm_seq
	 * says (after agree_tuner_begin, which binds that view) */
	if (__builtin_expect(atomic_load_explicit(&chain->gated, memory_order_relaxed) != 0, 0))
		chain = tuner_reload_gate(tc, chain, comm_seq);
	if (tc->reload_slot >= 0) /* reload agreement on: a reload requested on another rank */
		tuner_reload_watch(tc, comm_seq);
	if (!chain || chain->len == 0) {
		agree_tuner_end();
		runtime_chain_exit();
		tuner_note_decision(tc, comm_seq, seq, coll_type, n_bytes, -1, -1, 0, nochain_src, 0,
				    false);
		return false;
	}

	struct ncclbpf_tuner_ctx c;
	struct tuner_fill_info fill;
	ctx_fill_inputs(&c, tc, coll_type, n_bytes, num_pipe_ops, reg_buff, seq, table, num_algo,
			num_proto, &fill);
	c.comm_seq = comm_seq;
	/* fewer candidates than this collective and size band had: the application's
	 * per-call selection (2.31+), unless the environment explains it */
	if (tuner_call_restricted(tc, coll_type, n_bytes, c.avail_mask) && !inner_changed &&
	    keep_src != NB_DSRC_ENV)
		keep_src = NB_DSRC_CALL;
	uint32_t decider = 0;
	for (size_t i = 0; i < chain->len; i++) {
		/* Snapshot: a faulting program's writes are discarded, the previous program's
		 * decision stands. */
		int32_t sa = c.algo, sp = c.proto, sn = c.n_channels;
		uint64_t r0;
		char err[160];
		if (runtime_program_run_direct(chain->items[i].prog, &c, sizeof(c), &r0, err,
					       sizeof(err)) != 0) {
			c.algo = sa;
			c.proto = sp;
			c.n_channels = sn;
			runtime_stat_inc(&tc->stats.faults);
			note_issues(1u << TUNER_ISSUE_FAULT, chain->items[i].label, err);
		} else if (c.algo != sa || c.proto != sp || c.n_channels != sn) {
			decider = (uint32_t)i; /* the last program that changed the outputs */
		}
	}
	agree_tuner_end();
	return tuner_apply(tc, chain, &c, &fill, comm_seq, coll_type, n_bytes, table, num_algo,
			   num_proto, n_channels, false, keep_src, decider);
}

/* Protocol grain NCCL rounds chunk sizes down to (§2.7): below it the chunk becomes 0 and
 * NCCL divides by zero. */
static uint64_t proto_grain(int proto)
{
	switch (proto) {
	case NCCLBPF_PROTO_LL: return 16;
	case NCCLBPF_PROTO_LL128: return 1920;
	case NCCLBPF_PROTO_SIMPLE: return 512;
	default: return 0;
	}
}

int tuner_get_chunk_size(void *ctx, int coll_type, size_t n_bytes, int algo, int proto,
			 int n_channels, size_t *chunk_size)
{
	struct tuner_comm *tc = ctx;
	if (!tc || !chunk_size)
		return NB_NCCL_SUCCESS;
	if (tc->inner)
		chain_tuner_chunk_size(tc->inner, tc->inner_ctx, coll_type, n_bytes, algo, proto,
				       n_channels, chunk_size);
	const struct nb_hook_chain *chain = runtime_chain_for(
		runtime_chain_enter(NB_HOOK_TUNER_CHUNK), tc->comm_id,
		atomic_load_explicit(&tc->stats.calls, memory_order_relaxed) - 1);
	if (!chain || chain->len == 0) {
		runtime_chain_exit();
		return NB_NCCL_SUCCESS;
	}
	struct ncclbpf_chunk_ctx c = {
		.comm_id = tc->comm_id,
		.n_bytes = n_bytes,
		.coll_type = coll_type >= 0 ? (uint32_t)coll_type : 0,
		.algo = algo,
		.proto = proto,
		.n_channels = n_channels,
		.chunk_size = *chunk_size,
	};
	for (size_t i = 0; i < chain->len; i++) {
		uint64_t saved = c.chunk_size, r0;
		char err[160];
		if (runtime_program_run_direct(chain->items[i].prog, &c, sizeof(c), &r0, err,
					       sizeof(err)) != 0) {
			c.chunk_size = saved;
			note_issues(1u << TUNER_ISSUE_FAULT, chain->items[i].label, err);
		}
	}
	uint64_t grain = proto_grain(proto);
	if (c.chunk_size != *chunk_size) {
		if (grain == 0 || c.chunk_size < grain)
			note_issues(1u << TUNER_ISSUE_BAD_CHUNK, chain->items[0].label, NULL);
		else
			*chunk_size = (size_t)c.chunk_size;
	}
	runtime_chain_exit();
	return NB_NCCL_SUCCESS;
}

/* ---- public counters (ncclbpf.h): tools read them around a call ---- */

size_t ncclbpf_tuner_issue_counts(uint64_t *counts, size_t n)
{
	for (size_t i = 0; i < n && i < TUNER_ISSUE_COUNT; i++)
		counts[i] = tuner_issue_count((enum tuner_issue)i);
	return TUNER_ISSUE_COUNT;
}

const char *ncclbpf_tuner_issue_name(size_t i)
{
	return i < TUNER_ISSUE_COUNT ? tuner_issue_name((enum tuner_issue)i) : NULL;
}
