/* Rank variance: proves that a tuner decision depends only on rank-invariant data.
 *
 * NCCL deadlocks when the ranks of a communicator choose different algorithms, protocols,
 * channel counts or chunk sizes for the same collective. Taint sources (rank-local):
 *  - context fields marked NB_RANK_LOCAL in the hook table;
 *  - helpers whose prototype has rank_local_result (timers, random numbers, update/delete
 *    status);
 *  - loads from the value of any map a program or the plugin may write (everything but
 *    .rodata / BPF_F_RDONLY_PROG), and loads through a pointer whose offset is rank-local;
 *  - the NULL-ness of a hash/LRU lookup (presence is per-rank state); for array maps it
 *    depends only on the key, so it is rank-local only when the key bytes are.
 * Propagation: ALU results take the taint of any operand, moves and spills copy it, stack
 * bytes keep it per byte. Control dependence: a conditional jump whose outcome is not
 * statically known and that compares a rank-local value taints the rest of both paths.
 * Pruning compares taints by containment (verifier_state.c).
 */
#include <stdio.h>

#include "verifier/verifier_internal.h"

uint32_t vtaint_new(struct verifier_env *env, enum vtaint_kind kind, uint32_t arg)
{
	if (!env->taint_on)
		return 0;
	env->taint_src[env->pc].kind = (uint8_t)kind;
	env->taint_src[env->pc].arg = arg;
	return env->pc + 1;
}

/* The one place that says which maps hold rank-local data (map-kind rules go here): any
 * map a program or the plugin may write, so all but .rodata, BPF_F_RDONLY_PROG and agreed
 * maps. */
bool vtaint_map_writable(const struct verifier_env *env, const struct nb_map_def *m)
{
	/* agreed maps (NCCLBPF_F_AGREED, bit 24): the tuner hook reads the published version
	 * active for its collective, the same bytes on every rank (docs/agreement.md). Only
	 * getCollInfo binds that view; elsewhere (tuner/chunk, profiler) the map reads this
	 * rank's own contributions, which are rank-local. */
	bool agreed_view = (m->map_flags & (1u << 24)) && env->hook->type == NB_HOOK_TUNER;
	return !(m->origin == NB_MAP_ORIGIN_RODATA || (m->map_flags & (1u << 7)) || agreed_view);
}

bool vtaint_map_agreed_readonly(const struct verifier_env *env, const struct nb_map_def *m)
{
	return (m->map_flags & (1u << 24)) &&
	       (env->hook->type == NB_HOOK_TUNER || env->hook->type == NB_HOOK_TUNER_CHUNK);
}

static bool map_is_array(const struct nb_map_def *m)
{
	return m->type == 2 /* ARRAY */ || m->type == 6 /* PERCPU_ARRAY */;
}

uint32_t vtaint_lookup(struct verifier_env *env, uint16_t map, const struct vreg *key)
{
	if (!env->taint_on)
		return 0;
	const struct nb_map_def *m = &env->maps[map];
	if (!map_is_array(m))
		return vtaint_new(env, VTK_MAP_PRESENCE, map);
	return verifier_mem_taint(env, key, m->key_size);
}

void vtaint_branch(struct verifier_env *env, struct vstate *st, const struct vreg *a,
		   const struct vreg *b)
{
	uint32_t t = vtaint_join(a->taint, b->taint);
	if (!t || st->path_taint)
		return;
	st->path_taint = vtaint_new(env, VTK_BRANCH, t);
}

/* "line 42" when the object has line info, else "insn 7" */
static void where(const struct verifier_env *env, uint32_t insn, char *buf, size_t len)
{
	uint32_t line = verifier_source_line(env, insn);
	if (line)
		snprintf(buf, len, "line %u", line);
	else
		snprintf(buf, len, "insn %u", insn);
}

/* "map 'x' value at line 12", "ctx->reg_buff at insn 2", ... */
static void describe_source(const struct verifier_env *env, uint32_t taint, char *buf,
			    size_t len)
{
	uint32_t insn = taint - 1;
	const struct vtaint_src *s = &env->taint_src[insn];
	const char *mname = s->arg < env->map_cnt ? env->maps[s->arg].name : "?";
	char at[32];
	where(env, insn, at, sizeof(at));
	switch (s->kind) {
	case VTK_CTX:
		snprintf(buf, len, "ctx->%s at %s",
			 s->arg < env->hook->field_cnt ? env->hook->fields[s->arg].name : "?", at);
		break;
	case VTK_HELPER: {
		const struct nb_helper_proto *p = hook_helper(env->hook, (int32_t)s->arg);
		snprintf(buf, len, "%s at %s", p ? p->name : "a helper", at);
		break;
	}
	case VTK_MAP_VALUE:
		snprintf(buf, len, "map '%.64s' value at %s", mname, at);
		break;
	case VTK_MAP_PRESENCE:
		snprintf(buf, len, "presence of the key in map '%.64s' at %s", mname, at);
		break;
	default:
		snprintf(buf, len, "%s", at);
	}
}

int vtaint_check_output(struct verifier_env *env, const struct nb_ctx_field *f,
			const struct vreg *val)
{
	if (!env->taint_on || !hook_output_rank_invariant(env->hook, f))
		return 0;
	char src[192], at[32];
	const char *hint = env->hook->type == NB_HOOK_ENV
		? ": hosts may pick different values for the same NCCL variable and hang or "
		  "corrupt the job; pick from rank-invariant inputs (name, name_hash, "
		  "nccl_version, the file's candidates: n_candidates, cand_num, default_index; "
		  "host-specific values belong in a [host ...] section of the file), or set "
		  "NCCLBPF_RANK_LOCAL=allow if every rank shares this state"
		: ": ranks may decide differently and deadlock; decide from rank-invariant "
		  "inputs (ctx->n_bytes, coll_type, seq, n_ranks, cost, ... or an agreed map), "
		  "or set NCCLBPF_RANK_LOCAL=allow if every rank shares this state";
	if (val->taint) {
		describe_source(env, val->taint, src, sizeof(src));
		return verr(env, NB_VERR_RANK_LOCAL, env->pc,
			    "ctx->%s depends on rank-local data (%s)%s", f->name, src, hint);
	}
	if (env->cur.path_taint) {
		uint32_t br = env->cur.path_taint - 1;
		describe_source(env, env->taint_src[br].arg, src, sizeof(src));
		where(env, br, at, sizeof(at));
		return verr(env, NB_VERR_RANK_LOCAL, env->pc,
			    "ctx->%s depends on rank-local data (a branch at %s on %s)%s",
			    f->name, at, src, hint);
	}
	return 0;
}
