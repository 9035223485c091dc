/* Cost per run: a static bound of the instructions one run of the program executes
 * (loops x their iteration bound, bpf_loop x nr_loops x the callback, subprograms),
 * computed over the exploration tree and checked against the hook's limit (E-COST).
 *
 * Every path counts the instructions it executes since its most recent stored state
 * (vstate.steps). A path ends at the program's exit, at its callback's exit (inside a
 * bpf_loop callback), at an arrival back at a widened loop head (verifier_widen.c: one
 * iteration done), or pruned against a fully explored state, whose own bound it adds. Each
 * stored state keeps the most any path below it executes, per kind of end: to the exit
 * (`exit`), to an arrival at each widened loop it is inside (`arr[d]`, d = depth in its
 * loop chain), and, for a widened head or a bpf_loop call, one iteration (`iter`). When a
 * state is fully explored its bound is final: a widened head adds (n - 1) x iter for its
 * iteration bound n, a bpf_loop call nr_loops x iter; then it flows into the state it was
 * stored below, plus the instructions between the two.
 *
 * Soundness: every concrete run from a state follows explored paths (pruning only against
 * states that contain it), one iteration of a widened loop is a path from its head state to
 * an arrival (the arrivals are contained in it, so later iterations follow the same tree),
 * and every callback run is a path of the callback's rounds; so the bound is at least what
 * any run executes. test_verifier_soundness checks it against the checked interpreter's
 * count on every accepted random program. */
#include <stdio.h>

#include "verifier/verifier_internal.h"

static uint64_t sadd(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t smul(uint64_t a, uint64_t b)
{
	return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static void put(uint64_t *slot, uint64_t v)
{
	if (v > *slot)
		*slot = v;
}

static int chain_depth(const struct vwiden *chain, const struct vwiden *w)
{
	for (int d = 0; chain; chain = chain->parent, d++)
		if (chain == w)
			return d < VWIDEN_DEPTH ? d : -1;
	return -1;
}

static const struct vwiden *chain_at(const struct vwiden *chain, int d)
{
	while (chain && d-- > 0)
		chain = chain->parent;
	return chain;
}

/* A path of state `src` ending inside the callback of the bpf_loop call stored as rec. */
static bool in_callback(const struct vrecord *rec, const struct vstate *src)
{
	if (!rec->loop_own || src->nframes <= rec->st.nframes)
		return false;
	const struct vloop *lp = src->frames[rec->st.nframes]->loop;
	return lp && lp->callsite == rec->pc;
}

/* An arrival at widened loop w, `v` instructions below rec. */
static void put_arrival(struct verifier_env *env, struct vrecord *rec, const struct vwiden *w,
			uint64_t v)
{
	int d;
	if (w == rec->widen_own)
		put(&rec->cost.iter, v);
	else if ((d = chain_depth(rec->st.widen, w)) >= 0)
		put(&rec->cost.arr[d], v);
	else /* not expected (vcost_prunable): unbounded rather than wrong */
		env->cost_lost = true;
}

/* The bounds of src (state `from`: its loop chain and frames) plus off, into rec. */
static void merge(struct verifier_env *env, struct vrecord *rec, const struct vcost *src,
		  const struct vstate *from, uint64_t off)
{
	if (src->exit) {
		uint64_t v = sadd(off, src->exit);
		if (in_callback(rec, from)) {
			put(&rec->cost.iter, v);
		} else if (v > rec->cost.exit) {
			rec->cost.exit = v;
			rec->cost.culprit = src->culprit;
		}
	}
	for (int j = 0; j < VWIDEN_DEPTH; j++)
		if (src->arr[j])
			put_arrival(env, rec, chain_at(from->widen, j), sadd(off, src->arr[j]));
}

void vcost_exit(struct verifier_env *env)
{
	struct vrecord *rec = env->cur.rec;
	if (!rec)
		return;
	struct vcost c = { .exit = env->cur.steps };
	merge(env, rec, &c, &env->cur, 0);
}

void vcost_arrival(struct verifier_env *env, const struct vwiden *w)
{
	if (env->cur.rec)
		put_arrival(env, env->cur.rec, w, env->cur.steps);
}

bool vcost_prunable(const struct vrecord *old, const struct vrecord *rec)
{
	if (!rec)
		return true;
	for (int j = 0; j < VWIDEN_DEPTH; j++) {
		if (!old->cost.arr[j])
			continue;
		const struct vwiden *w = chain_at(old->st.widen, j);
		if (!w || (w != rec->widen_own && chain_depth(rec->st.widen, w) < 0))
			return false; /* its paths end at a loop head this path is not inside */
	}
	return true;
}

void vcost_pruned(struct verifier_env *env, const struct vrecord *old)
{
	if (env->cur.rec)
		merge(env, env->cur.rec, &old->cost, &old->st, env->cur.steps);
}

static int over(struct verifier_env *env, size_t insn, uint64_t total, uint64_t n,
		uint64_t iter, bool call)
{
	char what[160];
	if (call)
		snprintf(what, sizeof(what),
			 "bpf_loop at insn %zu: up to %llu calls of a callback of up to %llu "
			 "instructions",
			 insn, (unsigned long long)n, (unsigned long long)iter);
	else
		snprintf(what, sizeof(what),
			 "the loop here: up to %llu iterations of up to %llu instructions",
			 (unsigned long long)n, (unsigned long long)iter);
	return verr(env, NB_VERR_COST, insn,
		    "a run may execute %s%llu instructions (%s), more than the %s hook's limit of "
		    "%llu per run; bound the loop tighter, or raise the limit "
		    "(NCCLBPF_MAX_INSNS, ncclbpf verify --max-insns)",
		    total == UINT64_MAX ? "more than " : "",
		    (unsigned long long)(total == UINT64_MAX ? UINT64_MAX - 1 : total), what,
		    env->hook->name, (unsigned long long)env->max_insns);
}

static uint64_t max_component(const struct vcost *c)
{
	uint64_t m = c->exit;
	for (int j = 0; j < VWIDEN_DEPTH; j++)
		put(&m, c->arr[j]);
	return m;
}

int vcost_finish(struct verifier_env *env, struct vrecord *rec)
{
	uint64_t n = 0, mult = 0;
	struct vcost *c = &rec->cost;
	if (rec->widen_own) {
		n = rec->widen_own->n;
		mult = smul(n ? n - 1 : 0, c->iter);
	} else if (rec->loop_own) {
		n = rec->loop_own->n_max;
		mult = smul(n, c->iter);
	}
	if (mult) {
		uint64_t before = c->exit;
		if (c->exit)
			c->exit = sadd(c->exit, mult);
		for (int j = 0; j < VWIDEN_DEPTH; j++)
			if (c->arr[j])
				c->arr[j] = sadd(c->arr[j], mult);
		if (mult >= before) /* this loop is the larger part of the worst path */
			c->culprit = rec->widen_own ? rec->widen_own->jump + 1 : rec->pc + 1;
		uint64_t total = max_component(c);
		if (total > env->max_insns) {
			if (rec->widen_own && !env->widen_off &&
			    env->stats.insns_processed < env->budget &&
			    smul(n, c->iter) < env->budget - env->stats.insns_processed) {
				/* widening may overestimate (every iteration its longest path): walk
				 * the loop instead, it counts each iteration's own path */
				env->widen_attempt[rec->widen_own->head] = VWIDEN_NEVER;
				env->undo = rec->widen_own;
				return 1;
			}
			return over(env, rec->widen_own ? rec->widen_own->jump : rec->pc, total, n,
				    c->iter, !rec->widen_own);
		}
	}
	if (rec->parent)
		merge(env, rec->parent, c, &rec->st, rec->dist);
	else
		env->cost_root = c->exit;
	return 0;
}

int vcost_check_total(struct verifier_env *env)
{
	uint64_t total = env->cost_lost ? UINT64_MAX : env->cost_root;
	env->stats.max_insns = total;
	if (total <= env->max_insns)
		return 0;
	const struct vrecord *root = env->root;
	uint32_t culprit = root ? root->cost.culprit : 0;
	char where[96] = "";
	if (culprit)
		snprintf(where, sizeof(where), "; most of them in the loop or bpf_loop call at insn %u",
			 culprit - 1);
	return verr(env, NB_VERR_COST, culprit ? culprit - 1 : 0,
		    "a run may execute %s%llu instructions%s, more than the %s hook's limit of %llu "
		    "per run; bound the loops tighter, or raise the limit (NCCLBPF_MAX_INSNS, "
		    "ncclbpf verify --max-insns)",
		    total == UINT64_MAX ? "more than " : "",
		    (unsigned long long)(total == UINT64_MAX ? UINT64_MAX - 1 : total), where,
		    env->hook->name, (unsigned long long)env->max_insns);
}
