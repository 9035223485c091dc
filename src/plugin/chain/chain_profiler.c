/* Inner profiler plugin (chain.h). Bound to the highest of ncclProfiler_v7 .. v1 it exports.
 * Events are forwarded in the inner plugin's own layout, made from NCCL's descriptor:
 *  - same version as NCCL bound: a copy;
 *  - both v5 or newer: v6 and v7 only append to v5's members, so a copy of the common
 *    prefix, zero-filled beyond it; event types the inner version does not know (CE before
 *    v6, KernelPhase before v7) are not forwarded;
 *  - anything else (v1..v4 layouts differ) cannot be driven: the inner plugin is dropped.
 * parentObj (and Coll/P2p parentGroup) are NCCL's handles, i.e. ncclbpf's tokens: the copy
 * carries the inner plugin's own handle of that parent instead, or NULL. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/chain/chain.h"
#include "plugin/profiler/profiler.h"
#include "plugin/profiler/profiler_versions.h"
#include "runtime/runtime.h"

struct chain_profiler {
	void *dl;
	int version;
	const void *table;
	char path[256];
};

extern _Atomic uint64_t chain_profiler_errors_count, chain_profiler_init_failures_count;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chain_profiler loaded;
static _Atomic int load_state;
static _Atomic unsigned error_logged;

void chain_profiler_reset_for_tests(void);
void chain_profiler_reset_for_tests(void)
{
	pthread_mutex_lock(&load_lock);
	memset(&loaded, 0, sizeof(loaded));
	atomic_store(&load_state, 0);
	atomic_store(&error_logged, 0);
	pthread_mutex_unlock(&load_lock);
}

static bool is_self(const void *t)
{
	return t == (const void *)&ncclProfiler_v1 || t == (const void *)&ncclProfiler_v2 ||
	       t == (const void *)&ncclProfiler_v3 || t == (const void *)&ncclProfiler_v4 ||
	       t == (const void *)&ncclProfiler_v5 || t == (const void *)&ncclProfiler_v6 ||
	       t == (const void *)&ncclProfiler_v7;
}

const struct chain_profiler *chain_profiler_get(void)
{
	int st = atomic_load_explicit(&load_state, memory_order_acquire);
	if (st)
		return st == 1 ? &loaded : NULL;
	pthread_mutex_lock(&load_lock);
	st = atomic_load(&load_state);
	if (!st) {
		st = 2;
		const char *path = getenv("NCCLBPF_PROFILER_INNER");
		struct chain_inner_lib lib;
		char why[256];
		int rc = path && *path ? chain_inner_open(path, "ncclProfiler_v", 7, 1, is_self, &lib,
							 why, sizeof(why))
				       : 1;
		if (rc == 0) {
			loaded.dl = lib.dl;
			loaded.version = lib.version;
			loaded.table = lib.table;
			snprintf(loaded.path, sizeof(loaded.path), "%s", path);
			st = 1;
			runtime_log(NB_LOG_INFO, NB_LOG_INIT | NB_LOG_PROFILE,
				    "profiler: inner plugin %s (ncclProfiler_v%d) gets every event first",
				    path, loaded.version);
		} else {
			chain_inner_warn(rc, "profiler", "NCCLBPF_PROFILER_INNER", path, why,
					 NB_LOG_PROFILE);
		}
		atomic_store_explicit(&load_state, st, memory_order_release);
	}
	pthread_mutex_unlock(&load_lock);
	return st == 1 ? &loaded : NULL;
}

int chain_profiler_version(const struct chain_profiler *p)
{
	return p ? p->version : 0;
}

bool chain_profiler_compatible(const struct chain_profiler *p, int raw_version)
{
	if (!p)
		return false;
	return p->version == raw_version || (p->version >= 5 && raw_version >= 5);
}

static void note_error(const char *what, int rc)
{
	atomic_fetch_add_explicit(&chain_profiler_errors_count, 1, memory_order_relaxed);
	unsigned bit = what[0] == 's' ? 1u : what[0] == 'r' ? 2u : 4u;
	if (atomic_fetch_or(&error_logged, bit) & bit)
		return;
	runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
		    "profiler: inner plugin %s returned %d (ignored; ncclbpf continues). Logged "
		    "once, counted always",
		    what, rc);
}

/* Every table of v1..v7 starts name, init, startEvent, stopEvent, recordEventState,
 * finalize; only init's arguments and the descriptor/state-args types differ. */
struct any_table {
	const char *name;
	void *init;
	int (*startEvent)(void *ctx, void **h, void *descr);
	int (*stopEvent)(void *h);
	int (*recordEventState)(void *h, int state, void *args);
	int (*finalize)(void *ctx);
};

void *chain_profiler_init(const struct chain_profiler *p, int *inner_mask, uint64_t comm_id,
			  const char *comm_name, int n_nodes, int n_ranks, int rank,
			  nb_nccl_logger_t log, bool *ok)
{
	*ok = false;
	if (!p)
		return NULL;
	void *ctx = NULL;
	int rc;
	switch (p->version) {
	case 1:
		rc = ((const struct nb_profiler_v1 *)p->table)->init(&ctx, inner_mask);
		break;
	case 2:
		rc = ((const struct nb_profiler_v2 *)p->table)->init(&ctx, inner_mask);
		break;
	case 3:
		rc = ((const struct nb_profiler_v3 *)p->table)->init(&ctx, inner_mask);
		break;
	case 4:
		rc = ((const struct nb_profiler_v4 *)p->table)
			     ->init(&ctx, inner_mask, comm_name, comm_id, n_nodes, n_ranks, rank, log);
		break;
	default: /* v5..v7 share init */
		rc = ((const struct nb_profiler_v5 *)p->table)
			     ->init(&ctx, comm_id, inner_mask, comm_name, n_nodes, n_ranks, rank, log);
		break;
	}
	if (rc != 0) {
		atomic_fetch_add_explicit(&chain_profiler_init_failures_count, 1,
					  memory_order_relaxed);
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_PROFILE,
			    "profiler: inner plugin %s init failed (%d) for comm 0x%llx: this "
			    "communicator runs without it",
			    p->path, rc, (unsigned long long)comm_id);
		*inner_mask = 0;
		return NULL;
	}
	*ok = true;
	return ctx;
}

static size_t descr_size(int v)
{
	switch (v) {
	case 1: return sizeof(struct nb_prof_descr_v1);
	case 2: return sizeof(struct nb_prof_descr_v2);
	case 3: return sizeof(struct nb_prof_descr_v3);
	case 4: return sizeof(struct nb_prof_descr_v4);
	case 5: return sizeof(struct nb_prof_descr_v5);
	case 6: return sizeof(struct nb_prof_descr_v6);
	default: return sizeof(struct nb_prof_descr_v7);
	}
}

/* Event types the inner version knows (v5+ forwarding between versions). */
static bool type_known(int v, uint64_t type)
{
	if (type & (NB_PROF_CE_COLL | NB_PROF_CE_SYNC | NB_PROF_CE_BATCH))
		return v >= 6;
	if (type & NB_PROF_KERNEL_PHASE)
		return v >= 7;
	return true;
}

void *chain_profiler_start(const struct chain_profiler *p, void *ictx, const void *raw,
			   int raw_version, uint64_t type, void *inner_parent,
			   void *inner_parent_group)
{
	if (!p || !raw || !chain_profiler_compatible(p, raw_version) ||
	    !type_known(p->version, type))
		return NULL;
	/* the largest descriptor (v7, 136 B on x86-64), aligned for its 64-bit members */
	union {
		struct nb_prof_descr_v7 v7;
		unsigned char bytes[sizeof(struct nb_prof_descr_v7)];
	} local;
	size_t in = descr_size(raw_version), out = descr_size(p->version);
	memset(&local, 0, sizeof(local));
	memcpy(local.bytes, raw, in < out ? in : out);
	/* parentObj sits after the type field (8 bytes: u64, or u8 + padding) in every version */
	memcpy(local.bytes + offsetof(struct nb_prof_descr_v5, parentObj), &inner_parent,
	       sizeof(void *));
	if (p->version >= 5 && (type == NB_PROF_COLL || type == NB_PROF_P2P)) {
		size_t off = type == NB_PROF_COLL ? offsetof(struct nb_prof_descr_v5, coll.parentGroup)
						  : offsetof(struct nb_prof_descr_v5, p2p.parentGroup);
		memcpy(local.bytes + off, &inner_parent_group, sizeof(void *));
	}
	void *ih = NULL;
	int rc = ((const struct any_table *)p->table)->startEvent(ictx, &ih, local.bytes);
	if (rc != 0) {
		note_error("startEvent", rc);
		return NULL;
	}
	return ih;
}

void chain_profiler_stop(const struct chain_profiler *p, void *ih)
{
	if (!p || !ih)
		return;
	int rc = ((const struct any_table *)p->table)->stopEvent(ih);
	if (rc != 0)
		note_error("stopEvent", rc);
}

void chain_profiler_record(const struct chain_profiler *p, void *ih, int state,
			   const void *raw_args, int raw_version)
{
	if (!p || !ih)
		return;
	if (state == NB_PROF_ST_KERNEL_PHASE_STOP && p->version < 7)
		return;
	/* v4..v7 share the state-args union; v1..v3 theirs (equal versions only) */
	union nb_prof_state_args_v4 a4;
	union nb_prof_state_args_v1 a1;
	void *args;
	if (p->version >= 4) {
		memset(&a4, 0, sizeof(a4));
		if (raw_args && raw_version >= 4)
			memcpy(&a4, raw_args, sizeof(a4));
		args = &a4;
	} else {
		memset(&a1, 0, sizeof(a1));
		if (raw_args && raw_version == p->version)
			memcpy(&a1, raw_args, sizeof(a1));
		args = &a1;
	}
	int rc = ((const struct any_table *)p->table)->recordEventState(ih, state, args);
	if (rc != 0)
		note_error("recordEventState", rc);
}

void chain_profiler_finalize(const struct chain_profiler *p, void *ictx)
{
	if (!p)
		return;
	int rc = ((const struct any_table *)p->table)->finalize(ictx);
	if (rc != 0)
		note_error("finalize", rc);
}
