/* bpf_loop (helper 181): the callback is verified as a loop body, once per round, not once
 * per iteration, so verification cost does not grow with nr_loops.
 *
 * At the call the caller state S0 is snapshotted and the path after the call is queued
 * with it (zero iterations). The callback then runs from S0 plus a frame with r1 = the
 * index (0 .. nr_loops max - 1) and r2 = the context argument. At each exit of the
 * callback the caller frames C (which the callback may have changed through a pointer to
 * the caller's stack) are compared with the round's start S: C inside S (every position,
 * no precision shortcuts) means this iteration reaches nothing new and the path ends;
 * otherwise S' = join(S, C) (verifier_state.c: differing numbers become unknown numbers,
 * anything else uninitialised) starts another round, and the path after the call is
 * queued from S' as well. Every concrete run of k iterations ends in a state some queued
 * continuation contains (induction over k), and the joins only lose information, so a
 * handful of rounds reach the fixed point (VLOOP_MAX_ROUNDS guards pathological cases).
 *
 * The callback must return 0 (continue) or 1 (break); flags must be 0; nr_loops above
 * NB_BPF_LOOP_MAX makes the helper return -E2BIG without calling it (as Linux), and a
 * callback may not call bpf_loop itself, so one call runs at most 2^23 callbacks. The
 * result is an unknown number (the iteration count or an error).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verifier/verifier_internal.h"

#define VLOOP_MAX_ROUNDS 16

static bool is_ptr(const struct vreg *r)
{
	return r->type != VT_SCALAR && r->type != VT_NOT_INIT;
}

/* The state after the call: the caller frames of `from`, r1-r5 clobbered, r0 a number;
 * below the state stored at the call (its cost: the callback runs counted there). */
static int push_after(struct verifier_env *env, const struct vstate *from,
		      const struct vloop *lp)
{
	struct vstate k;
	if (vstate_copy(&k, from))
		return -ENOMEM;
	uint32_t callsite = lp->callsite, taint = lp->nr_taint;
	k.rec = lp->rec;
	k.steps = 0;
	k.stored_at = env->cur.stored_at;
	k.loop_head = env->cur.loop_head;
	k.loop_jump = env->cur.loop_jump;
	struct vframe *top = k.frames[k.nframes - 1];
	for (unsigned r = 1; r <= 5; r++)
		vreg_set_not_init(&top->regs[r]);
	vreg_set_unknown(&top->regs[0]);
	top->regs[0].taint = vtaint_join(taint, k.path_taint);
	int err = verifier_push_pending(env, callsite + 1, &k);
	if (err)
		vstate_free(&k);
	return err;
}

/* Replaces the current path by one iteration of the callback from lp->in. */
static int enter_callback(struct verifier_env *env, const struct vloop *lp)
{
	struct vstate st;
	if (vstate_copy(&st, &lp->in))
		return -ENOMEM;
	struct vframe *f = vframe_new(lp->callsite);
	if (!f) {
		vstate_free(&st);
		return -ENOMEM;
	}
	f->loop = lp;
	f->regs[1] = lp->idx;
	f->regs[2] = lp->ctx;
	f->regs[BPF_REG_FP].type = VT_PTR_STACK;
	sc_const(&f->regs[BPF_REG_FP].s, 0); /* no variable offset */
	f->regs[BPF_REG_FP].frameno = (uint8_t)st.nframes;
	st.frames[st.nframes++] = f;
	st.rec = lp->rec; /* each round's runs start below the call: one iteration each */
	st.steps = 0;
	st.stored_at = env->cur.stored_at;
	st.loop_head = env->cur.loop_head;
	st.loop_jump = env->cur.loop_jump;
	vstate_free(&env->cur);
	env->cur = st;
	env->pc = lp->cb;
	return 0;
}

int verifier_bpf_loop_call(struct verifier_env *env, const struct bpf_insn *insn)
{
	size_t pc = env->pc;
	const struct nb_helper_proto *p = hook_helper(env->hook, NB_HELPER_LOOP);
	if (!p)
		return verifier_check_helper(env, insn); /* names the hooks that have it */
	struct vreg *nr = vcur_reg(env, 1), *cb = vcur_reg(env, 2), *ctx = vcur_reg(env, 3),
		    *flags = vcur_reg(env, 4);
	char d[128];
	for (unsigned r = 1; r <= 4; r++)
		if (vcur_reg(env, r)->type == VT_NOT_INIT)
			return verr(env, NB_VERR_UNINIT_REG, pc, "argument r%u of bpf_loop was never set",
				    r);
	if (is_ptr(nr)) {
		vreg_describe(env, nr, d, sizeof(d));
		return verr(env, NB_VERR_HELPER_ARG, pc,
			    "nr_loops (r1) of bpf_loop must be a number, not %s", d);
	}
	if (cb->type != VT_PTR_FUNC) {
		vreg_describe(env, cb, d, sizeof(d));
		return verr(env, NB_VERR_HELPER_ARG, pc,
			    "callback (r2) of bpf_loop must be a function (the name of a static "
			    "function), not %s",
			    d);
	}
	bool null_ctx = ctx->type == VT_SCALAR && sc_is_const(&ctx->s) && ctx->s.t.value == 0;
	if (!null_ctx && ctx->type != VT_PTR_STACK && ctx->type != VT_PTR_MAP_VALUE) {
		vreg_describe(env, ctx, d, sizeof(d));
		return verr(env, NB_VERR_HELPER_ARG, pc,
			    "callback context (r3) of bpf_loop must be a pointer to the stack or to a "
			    "map value, or NULL, not %s",
			    d);
	}
	if (flags->type != VT_SCALAR || !sc_is_const(&flags->s) || flags->s.t.value != 0) {
		vreg_describe(env, flags, d, sizeof(d));
		return verr(env, NB_VERR_HELPER_ARG, pc, "flags (r4) of bpf_loop must be 0, not %s",
			    d);
	}
	/* nested loops would multiply: 2^23 x 2^23 callback runs could hang a decision */
	for (uint32_t fi = 0; fi < env->cur.nframes; fi++)
		if (env->cur.frames[fi]->loop)
			return verr(env, NB_VERR_HELPER_DENIED, pc,
				    "bpf_loop inside a bpf_loop callback (the callback at insn %u); "
				    "nested loops multiply their iteration counts: use one loop over "
				    "the product, or a counted loop inside",
				    env->cur.frames[fi]->loop->cb);
	vreg_mark_precise(env, nr);
	vreg_mark_precise(env, flags);
	if (env->cur.nframes >= BPF_MAX_CALL_DEPTH)
		return verr(env, NB_VERR_CALL_DEPTH, pc,
			    "the bpf_loop callback would be frame %d; at most %d nested calls",
			    env->cur.nframes + 1, BPF_MAX_CALL_DEPTH);
	/* nr_loops is a __u32; above NB_BPF_LOOP_MAX the helper fails without calling */
	uint64_t hi = nr->s.u32max < NB_BPF_LOOP_MAX ? nr->s.u32max : NB_BPF_LOOP_MAX;
	uint32_t nr_taint = nr->taint;
	/* a rank-local count: whether and how often the callback runs is rank-local */
	if (nr_taint)
		env->cur.path_taint = vtaint_join(env->cur.path_taint, nr_taint);
	vstate_mark_all_precise(env); /* the state is snapshotted and compared as a whole */
	struct vloop *lp = varena_alloc(env, sizeof(*lp));
	if (!lp)
		return -ENOMEM;
	memset(lp, 0, sizeof(*lp));
	/* the state at the call: the after-call paths and every callback run are below it,
	 * so it bounds the call's cost (verifier_cost.c: n_max x one run + the rest) */
	int err = vstate_store(env);
	if (err)
		return err;
	lp->rec = env->cur.rec;
	lp->rec->loop_own = lp;
	lp->n_max = hi;
	lp->ctx = *ctx;
	lp->ctx.org = (struct vorig){ { 0, 0 } };
	lp->cb = (uint32_t)cb->off;
	lp->callsite = (uint32_t)pc;
	lp->nr_taint = nr_taint;
	struct vscalar idx;
	sc_unknown(&idx);
	idx.umin = 0;
	idx.umax = hi ? hi - 1 : 0;
	sc_sync(&idx);
	vreg_set_scalar(&lp->idx, &idx);
	lp->idx.taint = nr_taint; /* how far it counts is as rank-local as nr_loops */
	err = vstate_snapshot(env, &lp->in, &env->cur);
	if (!err)
		err = push_after(env, &env->cur, lp);
	if (err || hi == 0) { /* never calls back: only the path after the call */
		if (!err) {
			vstate_free(&env->cur);
			return 1;
		}
		return err;
	}
	return enter_callback(env, lp);
}

int verifier_bpf_loop_exit(struct verifier_env *env)
{
	struct vframe *f = vcur_frame(env);
	const struct vloop *lp = f->loop;
	struct vreg *r0 = vcur_reg(env, 0);
	size_t pc = env->pc;
	if (r0->type != VT_SCALAR) {
		char d[128];
		vreg_describe(env, r0, d, sizeof(d));
		return verr(env, r0->type == VT_NOT_INIT ? NB_VERR_RETURN : NB_VERR_POINTER_LEAK, pc,
			    "the bpf_loop callback returns %s; it must return 0 (continue) or 1 "
			    "(stop)",
			    r0->type == VT_NOT_INIT ? "without setting r0" : d);
	}
	vreg_mark_precise(env, r0);
	if (r0->s.umax > 1)
		return verr(env, NB_VERR_RETURN, pc,
			    "the bpf_loop callback may return %llu (r0 in [%llu, %llu]); it must "
			    "return 0 (continue) or 1 (stop)",
			    (unsigned long long)r0->s.umax, (unsigned long long)r0->s.umin,
			    (unsigned long long)r0->s.umax);
	/* when it stops depends on r0: later code learns as much as r0 is rank-local */
	if (r0->taint)
		env->cur.path_taint = vtaint_join(env->cur.path_taint, r0->taint);
	vstate_mark_all_precise(env);
	vcost_exit(env); /* one callback run's instructions */
	vframe_free(f);
	env->cur.nframes--;
	if (vstate_covers(&lp->in, &env->cur))
		return 1; /* nothing new: the continuation queued for lp->in covers it */
	if (lp->round + 1 >= VLOOP_MAX_ROUNDS)
		return verr(env, NB_VERR_BUDGET, lp->callsite,
			    "the bpf_loop callback at insn %u changes its caller's state in a way "
			    "that does not settle after %d rounds; keep the loop state in a few "
			    "numbers",
			    lp->cb, VLOOP_MAX_ROUNDS);
	struct vloop *next = varena_alloc(env, sizeof(*next));
	if (!next)
		return -ENOMEM;
	*next = *lp;
	next->round = lp->round + 1;
	int err = vstate_join(env, &next->in, &lp->in, &env->cur);
	if (err)
		return err;
	/* this run ends here; the next round starts below the call again */
	next->rec->branches++;
	err = vrecord_path_done(env, env->cur.rec);
	if (!err)
		err = push_after(env, &next->in, next);
	if (err)
		return err;
	return enter_callback(env, next);
}
