/* A fake native profiler plugin for the chaining tests (NCCLBPF_PROFILER_INNER), built as
 * several shared objects from this one file:
 *   FAKE_PROF_VERSION 4..7   which ncclProfiler_vN it exports
 *   FAKE_PROF_FAIL_INIT      init returns an error
 *   FAKE_PROF_ERRORS         every other startEvent and every recordEventState return an
 *                            error (startEvent also leaves garbage in *handle)
 * Its handles point into its own slot array; it checks that every handle and parent it is
 * given is one of its own (never ncclbpf's tokens), that KernelCh's parent is its own Coll,
 * and counts what it saw (fake_profiler_state, read by the tests). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "plugin/profiler/nccl_profiler_abi.h"

#define SLOTS 65536
struct slot {
	uint32_t magic;
	uint32_t type;
	bool live;
};
static struct slot slots[SLOTS];
static unsigned next_slot;

struct fake_profiler_state {
	int inits, finalizes;
	int starts[16];       /* per event-type bit */
	int stops, records, kch_stop_records;
	int foreign_parent;   /* a parent that is not one of its handles */
	int bad_handle;       /* stop/record of a handle that is not its live one */
	int kch_parent_not_coll;
	int coll_func_ok;     /* Coll descriptors whose func/algo strings were readable */
	uint64_t last_user_tag;
	int ctx_mismatch;
};
__attribute__((visibility("default"))) struct fake_profiler_state fake_profiler_state;
static int ctx_magic;

static struct slot *own(void *h)
{
	struct slot *s = h;
	if (s < slots || s >= slots + SLOTS || ((uintptr_t)s - (uintptr_t)slots) % sizeof(*s))
		return NULL;
	return s->magic == 0xfa4e ? s : NULL;
}

static int bit_of(uint64_t type)
{
	for (int b = 0; b < 16; b++)
		if (type == (1ull << b))
			return b;
	return 15;
}

static int common_start(void *ctx, void **handle, uint64_t type, void *parent, void *group,
			const char *func, const char *algo)
{
	static unsigned calls;
	calls++;
	if (ctx != &ctx_magic)
		fake_profiler_state.ctx_mismatch++;
#ifdef FAKE_PROF_ERRORS
	if (calls % 2) {
		*handle = (void *)(uintptr_t)0xdead0;
		return 3;
	}
#endif
	struct slot *p = NULL;
	if (parent && !(p = own(parent)))
		fake_profiler_state.foreign_parent++;
	if (group && !own(group))
		fake_profiler_state.foreign_parent++;
	if (type == NB_PROF_KERNEL_CH && p && p->type != NB_PROF_COLL)
		fake_profiler_state.kch_parent_not_coll++;
	if (type == NB_PROF_COLL && func && algo && strlen(func) > 0)
		fake_profiler_state.coll_func_ok++;
	fake_profiler_state.starts[bit_of(type)]++;
	struct slot *s = &slots[next_slot++ % SLOTS];
	s->magic = 0xfa4e;
	s->type = (uint32_t)type;
	s->live = true;
	*handle = s;
	return 0;
}

static int stop(void *h)
{
	struct slot *s = own(h);
	if (!s || !s->live) {
		fake_profiler_state.bad_handle++;
		return 0;
	}
	s->live = false;
	fake_profiler_state.stops++;
	return 0;
}

static int record(void *h, nb_prof_state_t st, void *args)
{
	struct slot *s = own(h);
	if (!s || !s->live)
		fake_profiler_state.bad_handle++;
	fake_profiler_state.records++;
	if (st == NB_PROF_ST_KERNEL_CH_STOP && args &&
	    ((union nb_prof_state_args_v4 *)args)->kernelCh.pTimer)
		fake_profiler_state.kch_stop_records++;
#ifdef FAKE_PROF_ERRORS
	return 3;
#endif
	return 0;
}

static int fin(void *ctx)
{
	if (ctx != &ctx_magic)
		fake_profiler_state.ctx_mismatch++;
	fake_profiler_state.finalizes++;
	return 0;
}

static int do_init(void **ctx, int *mask)
{
	fake_profiler_state.inits++;
#ifdef FAKE_PROF_FAIL_INIT
	return 3;
#endif
	*ctx = &ctx_magic;
	*mask = FAKE_PROF_VERSION >= 5 ? 0xb62 : 0x62; /* Coll KernelCh ProxyCtrl (+ API events) */
	return 0;
}

#if FAKE_PROF_VERSION == 4
static int v4_init(void **ctx, int *mask, const char *name, uint64_t hash, int nn, int nr, int r,
		   nb_nccl_logger_t l)
{
	(void)name, (void)hash, (void)nn, (void)nr, (void)r, (void)l;
	return do_init(ctx, mask);
}
static int v4_start(void *ctx, void **h, struct nb_prof_descr_v4 *d)
{
	return common_start(ctx, h, d->type, d->parentObj, NULL,
			    d->type == NB_PROF_COLL ? d->coll.func : NULL,
			    d->type == NB_PROF_COLL ? d->coll.algo : NULL);
}
static int v4_record(void *h, nb_prof_state_t st, union nb_prof_state_args_v4 *a)
{
	return record(h, st, a);
}
__attribute__((visibility("default"))) const struct nb_profiler_v4 ncclProfiler_v4 = {
	"fake4", v4_init, v4_start, stop, v4_record, fin};
#else
static int v5p_init(void **ctx, uint64_t id, int *mask, const char *name, int nn, int nr, int r,
		    nb_nccl_logger_t l)
{
	(void)id, (void)name, (void)nn, (void)nr, (void)r, (void)l;
	return do_init(ctx, mask);
}
#if FAKE_PROF_VERSION == 5
#define DESCR struct nb_prof_descr_v5
#elif FAKE_PROF_VERSION == 6
#define DESCR struct nb_prof_descr_v6
#else
#define DESCR struct nb_prof_descr_v7
#endif
static int v5p_start(void *ctx, void **h, DESCR *d)
{
	bool coll = d->type == NB_PROF_COLL, p2p = d->type == NB_PROF_P2P;
#if FAKE_PROF_VERSION >= 7
	if (coll)
		fake_profiler_state.last_user_tag = d->coll.userTag;
#endif
	return common_start(ctx, h, d->type, d->parentObj,
			    coll ? d->coll.parentGroup : p2p ? d->p2p.parentGroup : NULL,
			    coll ? d->coll.func : NULL, coll ? d->coll.algo : NULL);
}
static int v5p_record(void *h, nb_prof_state_t st, union nb_prof_state_args_v4 *a)
{
	return record(h, st, a);
}
#if FAKE_PROF_VERSION == 5
__attribute__((visibility("default"))) const struct nb_profiler_v5 ncclProfiler_v5 = {
	"fake5", v5p_init, v5p_start, stop, v5p_record, fin};
#elif FAKE_PROF_VERSION == 6
__attribute__((visibility("default"))) const struct nb_profiler_v6 ncclProfiler_v6 = {
	"fake6", v5p_init, v5p_start, stop, v5p_record, fin};
#else
__attribute__((visibility("default"))) const struct nb_profiler_v7 ncclProfiler_v7 = {
	"fake7", v5p_init, v5p_start, stop, v5p_record, fin};
#endif
#endif
