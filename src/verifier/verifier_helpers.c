/* Helper calls: the hook's prototype decides which helpers exist and what each argument
 * must be; after the call r1-r5 are clobbered and r0 takes the return kind.
 */
#include "verifier/verifier_internal.h"

/* The prototype of helper id in any hook other than conformance (or NULL). */
static const struct nb_helper_proto *any_helper(int32_t id)
{
	for (int h = 0; h < NB_HOOK_COUNT; h++) {
		const struct nb_helper_proto *p = hook_helper(hook_desc((enum nb_hook_type)h), id);
		if (p && h != NB_HOOK_CONFORMANCE)
			return p;
	}
	return NULL;
}

bool verifier_helper_known(int32_t id)
{
	return any_helper(id) != NULL;
}

static bool is_ptr(const struct vreg *r)
{
	return r->type != VT_SCALAR && r->type != VT_NOT_INIT;
}

/* How many of r3..r5 bpf_trace_printk may read: the conversions of its format when the
 * format is read-only global data at a constant offset (bpf_printk puts it there), else
 * all three. The runtime reads one register per conversion (helpers.c). */
static unsigned printk_arg_count(const struct verifier_env *env, const struct vreg *fmt,
				 const struct vreg *size)
{
	if (fmt->type != VT_PTR_MAP_VALUE || !sc_is_const(&fmt->s))
		return 3;
	const struct nb_map_def *m = &env->maps[fmt->map];
	if (m->origin != NB_MAP_ORIGIN_RODATA || !m->init_data)
		return 3;
	int64_t start = (int64_t)fmt->off + (int64_t)fmt->s.t.value;
	uint64_t end = (uint64_t)start + size->s.umax; /* helper arg check proved it in range */
	if (start < 0 || end > m->value_size)
		return 3;
	const uint8_t *f = m->init_data;
	unsigned n = 0;
	for (uint64_t i = (uint64_t)start; i < end && f[i]; i++) {
		if (f[i] != '%')
			continue;
		if (i + 1 < end && f[i + 1] == '%') {
			i++;
			continue;
		}
		n++; /* an unsupported conversion stops the helper: an upper bound */
	}
	return n < 3 ? n : 3;
}

int verifier_check_helper(struct verifier_env *env, const struct bpf_insn *insn)
{
	size_t pc = env->pc;
	int32_t id = insn->imm;
	const struct nb_helper_proto *p = hook_helper(env->hook, id);
	char d[128];
	if (!p) {
		const struct nb_helper_proto *other = any_helper(id);
		if (other)
			return verr(env, NB_VERR_HELPER_DENIED, pc,
				    "%s (helper %d) is not available to %s programs", other->name, id,
				    env->hook->name);
		return verr(env, NB_VERR_HELPER_UNKNOWN, pc,
			    "unknown helper %d; this runtime provides map lookup/update/delete (1-3), "
			    "ktime_get_ns (5), trace_printk (6), get_prandom_u32 (7) and bpf_loop "
			    "(181)",
			    id);
	}
	const struct nb_map_def *map = NULL;
	for (int a = 0; a < 5; a++) {
		unsigned regno = (unsigned)a + 1;
		const struct vreg *r = vcur_reg(env, regno);
		enum nb_arg_kind k = p->args[a];
		if (k == NB_ARG_NONE)
			continue;
		if (r->type == VT_NOT_INIT)
			return verr(env, NB_VERR_UNINIT_REG, pc,
				    "argument r%u of %s was never set", regno, p->name);
		/* described only for a message: this runs on every call the verifier walks */
#define DESCRIBE_R() vreg_describe(env, r, d, sizeof(d))
		switch (k) {
		case NB_ARG_ANYTHING:
			if (is_ptr(r) && (DESCRIBE_R(), true))
				return verr(env, NB_VERR_HELPER_ARG, pc, "argument r%u of %s must be a number, not %s", regno,
					    p->name, d);
			break;
		case NB_ARG_CONST_MAP_PTR:
			if (r->type != VT_CONST_MAP_PTR && (DESCRIBE_R(), true))
				return verr(env, NB_VERR_HELPER_ARG, pc,
					    "argument r%u of %s must be a map (&map_name), not %s",
					    regno, p->name, d);
			map = &env->maps[r->map];
			break;
		case NB_ARG_PTR_TO_MAP_KEY:
		case NB_ARG_PTR_TO_MAP_VALUE: {
			bool key = k == NB_ARG_PTR_TO_MAP_KEY, has_ptr;
			if (!map)
				return verr(env, NB_VERR_HELPER_ARG, pc, "%s: no map argument before r%u",
					    p->name, regno);
			int err = verifier_check_helper_mem(env, r, key ? map->key_size : map->value_size,
							    (int)regno, key ? "the key" : "the value",
							    &has_ptr);
			if (err)
				return err;
			if (has_ptr) /* a key is stored too (update), and readable from user space */
				return verr(env, NB_VERR_POINTER_LEAK, pc,
					    "the %s passed to %s for map '%s' contains a pointer; keys "
					    "and values must be numbers",
					    key ? "key" : "value", p->name, map->name);
			/* update and delete both write (Linux: BPF_F_RDONLY_PROG forbids both);
			 * an agreed map is read-only to tuners */
			if ((id == NB_HELPER_MAP_UPDATE_ELEM || id == NB_HELPER_MAP_DELETE_ELEM) &&
			    (map->origin == NB_MAP_ORIGIN_RODATA || (map->map_flags & (1u << 7)) ||
			     vtaint_map_agreed_readonly(env, map)))
				return verr(env, NB_VERR_READONLY_MAP, pc,
					    "%s on map '%s', which is read-only to programs",
					    p->name, map->name);
			break;
		}
		case NB_ARG_PTR_TO_MEM: {
			if (a == 4 || p->args[a + 1] != NB_ARG_CONST_SIZE)
				return verr(env, NB_VERR_HELPER_ARG, pc, "bad prototype of %s", p->name);
			const struct vreg *sz = vcur_reg(env, regno + 1);
			if (sz->type != VT_SCALAR)
				return verr(env, sz->type == VT_NOT_INIT ? NB_VERR_UNINIT_REG
									 : NB_VERR_HELPER_ARG,
					    pc, "size argument r%u of %s must be a number", regno + 1,
					    p->name);
			if (sz->s.umin == 0 || sz->s.umax > (uint64_t)BPF_STACK_SIZE * 8)
				return verr(env, NB_VERR_HELPER_ARG, pc,
					    "size argument r%u of %s must be between 1 and %d; it is in "
					    "[%llu, %llu]",
					    regno + 1, p->name, BPF_STACK_SIZE * 8,
					    (unsigned long long)sz->s.umin,
					    (unsigned long long)sz->s.umax);
			vreg_mark_precise(env, sz);
			bool has_ptr;
			int err = verifier_check_helper_mem(env, r, sz->s.umax, (int)regno, "the buffer",
							    &has_ptr);
			if (err)
				return err;
			if (has_ptr) /* e.g. trace_printk would write the address to the log */
				return verr(env, NB_VERR_POINTER_LEAK, pc,
					    "the buffer passed to %s contains a pointer", p->name);
			break;
		}
		case NB_ARG_CONST_SIZE:
			break; /* checked with its buffer */
		default:
			break;
		}
	}
#undef DESCRIBE_R
	/* bpf_trace_printk's variadic arguments: numbers, set, as many as the format reads
	 * (regression: pointers and stale registers were printed, host addresses in the log) */
	if (id == NB_HELPER_TRACE_PRINTK && env->hook->type != NB_HOOK_CONFORMANCE) {
		unsigned n = printk_arg_count(env, vcur_reg(env, 1), vcur_reg(env, 2));
		for (unsigned regno = 3; regno < 3 + n; regno++) {
			const struct vreg *r = vcur_reg(env, regno);
			if (r->type == VT_NOT_INIT)
				return verr(env, NB_VERR_UNINIT_REG, pc,
					    "argument r%u of %s was never set; the format reads %u "
					    "argument%s%s",
					    regno, p->name, n, n == 1 ? "" : "s",
					    n == 3 ? " (or is not a constant string: use bpf_printk)" : "");
			if (is_ptr(r)) {
				vreg_describe(env, r, d, sizeof(d));
				return verr(env, NB_VERR_HELPER_ARG, pc,
					    "argument r%u of %s must be a number, not %s: addresses "
					    "may not be printed",
					    regno, p->name, d);
			}
		}
	}
	/* rank variance of the result: a lookup's NULL-ness (key in r2), or the prototype's */
	uint32_t taint = 0;
	if (p->ret == NB_RET_MAP_VALUE_OR_NULL && map)
		taint = vtaint_lookup(env, (uint16_t)(map - env->maps), vcur_reg(env, 2));
	else if (p->rank_local_result)
		taint = vtaint_new(env, VTK_HELPER, (uint32_t)id);
	/* r1-r5 are caller-saved */
	for (unsigned r = 1; r <= 5; r++)
		vreg_set_not_init(vcur_reg(env, r));
	struct vreg *r0 = vcur_reg(env, 0);
	switch (p->ret) {
	case NB_RET_MAP_VALUE_OR_NULL:
		vreg_set_not_init(r0);
		r0->type = VT_PTR_MAP_VALUE_OR_NULL;
		r0->map = (uint16_t)(map - env->maps);
		r0->off = 0;
		r0->id = ++env->next_id; /* fresh id for every call: facts never leak between lookups */
		sc_const(&r0->s, 0);
		break;
	case NB_RET_VOID:
		vreg_set_not_init(r0);
		break;
	default: {
		struct vscalar s;
		if (id == NB_HELPER_GET_PRANDOM_U32 && env->hook->type != NB_HOOK_CONFORMANCE)
			sc_unknown_sized(&s, 4, false);
		else
			sc_unknown(&s);
		vreg_set_scalar(r0, &s);
		break;
	}
	}
	if (r0->type != VT_NOT_INIT)
		r0->taint = taint;
	return 0;
}
