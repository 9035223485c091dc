/* Memory accesses: loads, stores and atomics through context, stack, map-value and raw
 * memory pointers; and the memory arguments of helpers.
 */
#include <errno.h>
#include <string.h>

#include "verifier/verifier_internal.h"

#define OFF_LIMIT (1ll << 40) /* larger variable offsets are "not bounded" */

static bool map_readonly(const struct nb_map_def *m)
{
	return m->origin == NB_MAP_ORIGIN_RODATA || (m->map_flags & (1u << 7));
}

static bool map_writeonly(const struct nb_map_def *m)
{
	return m->map_flags & (1u << 8); /* BPF_F_WRONLY_PROG */
}

static bool is_pointer(const struct vreg *r)
{
	return r->type != VT_SCALAR && r->type != VT_NOT_INIT;
}

/* ---- stack ---- */

static void slot_of(int64_t o, unsigned *slot, unsigned *byte)
{
	*slot = (unsigned)((-o - 1) / 8);
	*byte = (unsigned)(o + 8 * ((int64_t)*slot + 1));
}

/* Taint of `size` stack bytes at fp-relative o of frame f (bytes past nslots are clean). */
static uint32_t stack_taint(const struct vframe *f, int64_t o, uint64_t size)
{
	for (uint64_t i = 0; i < size; i++) {
		unsigned slot, byte;
		slot_of(o + (int64_t)i, &slot, &byte);
		if (slot < f->nslots && (f->slots[slot].taint >> byte) & 1)
			return f->slots[slot].taint_src;
	}
	return 0;
}

static void byte_taint(struct vslot *s, unsigned byte, uint32_t taint)
{
	if (taint) {
		s->taint |= (uint8_t)(1u << byte);
		s->taint_src = vtaint_join(s->taint_src, taint);
	} else {
		s->taint &= (uint8_t)~(1u << byte);
		if (!s->taint)
			s->taint_src = 0;
	}
}

static int stack_bounds(struct verifier_env *env, const struct vreg *base, int64_t o,
			unsigned size, size_t pc)
{
	int64_t lim = (int64_t)env->hook->stack_size;
	if (o < -lim)
		return verr(env, NB_VERR_STACK_LIMIT, pc,
			    "stack access at fp%lld uses more than the %lld bytes of stack a "
			    "function may have; use a map for large buffers",
			    (long long)o, (long long)lim);
	if (o + size > 0)
		return verr(env, NB_VERR_STACK_OOB, pc,
			    "%u-byte stack access at fp%+lld is above the frame pointer; the "
			    "stack is [fp-%lld, fp)",
			    size, (long long)o, (long long)lim);
	(void)base;
	return 0;
}

/* Bytes [lo, hi) of frame f may be read as a number: every byte initialised, none of a
 * spilled pointer (var: the read is at a variable offset somewhere in that range). */
static int stack_readable(struct verifier_env *env, const struct vframe *f, int64_t lo,
			  int64_t hi, unsigned size, bool var, size_t pc)
{
	for (int64_t b = lo; b < hi; b++) {
		unsigned slot, byte;
		slot_of(b, &slot, &byte);
		uint8_t t = slot < f->nslots ? f->slots[slot].type[byte] : SB_INVALID;
		if (t == SB_INVALID && var)
			return verr(env, NB_VERR_UNINIT_STACK, pc,
				    "%u-byte read at a variable offset (fp%+lld..fp%+lld) may read "
				    "byte fp%lld, which was never written; initialise the whole "
				    "array before indexing it",
				    size, (long long)lo, (long long)(hi - (int64_t)size),
				    (long long)b);
		if (t == SB_INVALID)
			return verr(env, NB_VERR_UNINIT_STACK, pc,
				    "reads %u bytes at fp%lld but byte fp%lld was never written; "
				    "initialise the variable (or the whole struct, padding included) "
				    "before reading it",
				    size, (long long)lo, (long long)b);
		if (t == SB_SPILL && f->slots[slot].spill.type != VT_SCALAR && var)
			return verr(env, NB_VERR_POINTER_LEAK, pc,
				    "%u-byte read at a variable offset (fp%+lld..fp%+lld) may read "
				    "part of the pointer spilled at fp%lld",
				    size, (long long)lo, (long long)(hi - (int64_t)size),
				    (long long)b);
		if (t == SB_SPILL && f->slots[slot].spill.type != VT_SCALAR)
			return verr(env, NB_VERR_POINTER_LEAK, pc,
				    "%u-byte read at fp%lld reads part of a spilled pointer", size,
				    (long long)lo);
	}
	return 0;
}

/* A store (that may) hit byte `byte` of slot s: a register spilled over it is gone. A
 * scalar's other bytes stay readable as unknown bytes, a pointer's become unreadable (it
 * may be half overwritten). */
static void spill_clobber(struct vslot *s, unsigned byte)
{
	if (!slot_spilled(s) || byte < s->spill_at || byte >= s->spill_at + s->spill_size)
		return;
	memset(s->type + s->spill_at, s->spill.type == VT_SCALAR ? SB_MISC : SB_INVALID,
	       s->spill_size);
	if (s->spill.type != VT_SCALAR) { /* unreadable bytes */
		s->taint = 0;
		s->taint_src = 0;
	}
	s->spill_at = s->spill_size = 0;
	vreg_set_not_init(&s->spill);
}

static int stack_read(struct verifier_env *env, const struct vreg *base, int64_t o,
		      unsigned size, bool sx, struct vreg *dst, size_t pc)
{
	struct vframe *f = env->cur.frames[base->frameno];
	int err = stack_bounds(env, base, o, size, pc);
	if (err)
		return err;
	unsigned slot, byte;
	slot_of(o, &slot, &byte);
	if (slot < f->nslots && slot_spilled(&f->slots[slot]) && f->slots[slot].spill_at == byte &&
	    f->slots[slot].spill_size == size && (!sx || size == 8)) {
		struct vreg *sp = &f->slots[slot].spill;
		/* the reload is a copy: a bounds check on it narrows the slot too */
		if (sp->type == VT_SCALAR && !sc_is_const(&sp->s) && sp->id == 0)
			sp->id = ++env->next_id;
		*dst = *sp;
		return 0;
	}
	err = stack_readable(env, f, o, o + size, size, false, pc);
	if (err)
		return err;
	struct vscalar s;
	sc_unknown_sized(&s, size, sx);
	vreg_set_scalar(dst, &s);
	dst->taint = stack_taint(f, o, size);
	return 0;
}

static int stack_write(struct verifier_env *env, const struct vreg *base, int64_t o,
		       unsigned size, const struct vreg *val, size_t pc)
{
	int err = stack_bounds(env, base, o, size, pc);
	if (err)
		return err;
	unsigned slot, byte;
	slot_of(o, &slot, &byte); /* the deepest slot touched */
	struct vframe *f = vframe_reserve(&env->cur, base->frameno, slot);
	if (!f)
		return -ENOMEM;
	if (size == 8 && byte == 0) {
		struct vslot *s = &f->slots[slot];
		memset(s->type, SB_SPILL, 8);
		s->spill = *val;
		s->spill_at = 0;
		s->spill_size = 8;
		s->taint = val->taint ? 0xff : 0;
		s->taint_src = val->taint;
		return 0;
	}
	if (is_pointer(val))
		return verr(env, NB_VERR_POINTER_LEAK, pc,
			    "%u-byte store of a pointer at fp%lld would split it; spill pointers "
			    "as aligned 8-byte values",
			    size, (long long)o);
	unsigned first = byte;
	for (unsigned i = 0; i < size; i++) {
		slot_of(o + i, &slot, &byte);
		struct vslot *s = &f->slots[slot];
		spill_clobber(s, byte);
		s->type[byte] = SB_MISC;
		byte_taint(s, byte, val->taint);
	}
	/* A naturally aligned narrower store of a number that fits: remember the register
	 * (4-byte loop counters whose address is taken, e.g. a map key). */
	slot_of(o, &slot, &byte);
	if (size < 8 && (first & (size - 1)) == 0 && val->type == VT_SCALAR &&
	    val->s.umax < (1ull << (8 * size)) && !slot_spilled(&f->slots[slot])) {
		struct vslot *s = &f->slots[slot]; /* one register per slot: the first stays */
		memset(s->type + first, SB_SPILL, size);
		s->spill = *val;
		s->spill_at = (uint8_t)first;
		s->spill_size = (uint8_t)size;
	}
	return 0;
}

/* Variable offsets (`buf[i & 15]`): the access may touch any byte of [lo, hi), the
 * fp-relative range of every offset the pointer may hold. The frame bounds hold for all of
 * them; the bytes follow Linux's rule for unprivileged programs on reads (every byte
 * initialised, no byte of a spilled pointer: E-UNINIT-STACK / E-POINTER-LEAK) and a looser
 * one on writes (Linux refuses a write that may hit uninitialised bytes; here those bytes
 * simply stay uninitialised, since the write may miss them). */
static int stack_var_range(struct verifier_env *env, const struct vreg *base, int64_t o,
			   unsigned size, int64_t *lo, int64_t *hi, size_t pc)
{
	int64_t lim = (int64_t)env->hook->stack_size;
	if (base->s.smin < -OFF_LIMIT || base->s.smax > OFF_LIMIT)
		return verr(env, NB_VERR_STACK_OOB, pc,
			    "%u-byte stack access at a variable offset that is not bounded; mask "
			    "or check the index against the array size first (e.g. i & 15, or "
			    "if (i < N))",
			    size);
	*lo = o + base->s.smin;
	*hi = o + base->s.smax + (int64_t)size;
	if (*lo < -lim || *hi > 0)
		return verr(env, NB_VERR_STACK_OOB, pc,
			    "%u-byte stack access at a variable offset, fp%+lld..fp%+lld, leaves "
			    "the stack frame [fp-%lld, fp); the index is not proven in range: "
			    "mask or check it against the array size",
			    size, (long long)*lo, (long long)(*hi - (int64_t)size), (long long)lim);
	return 0;
}

static int stack_read_var(struct verifier_env *env, const struct vreg *base, int64_t o,
			  unsigned size, bool sx, struct vreg *dst, size_t pc)
{
	struct vframe *f = env->cur.frames[base->frameno];
	int64_t lo = 0, hi = 0; /* set when stack_var_range returns 0; -O3 cannot see it */
	int err = stack_var_range(env, base, o, size, &lo, &hi, pc);
	if (err)
		return err;
	err = stack_readable(env, f, lo, hi, size, true, pc);
	if (err)
		return err;
	struct vscalar s;
	sc_unknown_sized(&s, size, sx);
	vreg_set_scalar(dst, &s);
	dst->taint = stack_taint(f, lo, (uint64_t)(hi - lo));
	return 0;
}

static int stack_write_var(struct verifier_env *env, const struct vreg *base, int64_t o,
			   unsigned size, const struct vreg *val, size_t pc)
{
	int64_t lo = 0, hi = 0; /* set when stack_var_range returns 0; -O3 cannot see it */
	int err = stack_var_range(env, base, o, size, &lo, &hi, pc);
	if (err)
		return err;
	if (is_pointer(val))
		return verr(env, NB_VERR_POINTER_LEAK, pc,
			    "stores a pointer at a variable stack offset; spill pointers at "
			    "constant, aligned 8-byte offsets");
	unsigned slot, byte;
	slot_of(lo, &slot, &byte);
	struct vframe *f = vframe_reserve(&env->cur, base->frameno, slot);
	if (!f)
		return -ENOMEM;
	for (int64_t b = lo; b < hi; b++) {
		slot_of(b, &slot, &byte);
		if (slot >= f->nslots)
			continue; /* never written: stays uninitialised */
		struct vslot *s = &f->slots[slot];
		spill_clobber(s, byte); /* the write may hit it */
		/* a byte that was never written stays so: this write may miss it */
		if (s->type[byte] != SB_INVALID && val->taint)
			byte_taint(s, byte, val->taint);
	}
	return 0;
}

/* ---- context ---- */

/* An access that is not inside one field. Reads are rejected (wider than the field).
 * A store is accepted when it is aligned and exactly tiles whole adjacent writable fields:
 * clang -O2 merges adjacent stores (`ctx->proto = P; ctx->n_channels = N;` becomes one 8-byte
 * store at offset 144), so a policy written field by field must not be rejected for it.
 * Padding, a read-only field, or a partly covered field is still rejected. */
static int ctx_access_span(struct verifier_env *env, uint32_t o, unsigned size, bool write,
			   const struct vreg *val, size_t pc)
{
	const struct nb_hook_desc *h = env->hook;
	uint32_t cur = o, end = o + size;
	unsigned fields = 0;
	const struct nb_ctx_field *covered[8];
	while (write && o % size == 0 && cur < end && fields < 8) {
		const struct nb_ctx_field *g = NULL;
		for (size_t i = 0; i < h->field_cnt && !g; i++)
			if (h->fields[i].off == cur && h->fields[i].size <= end - cur)
				g = &h->fields[i];
		if (!g)
			break;
		if (write && !g->writable)
			return verr(env, NB_VERR_CTX_WRITE, pc,
				    "ctx->%s is a read-only input of the %s hook; only its output "
				    "fields may be written",
				    g->name, h->name);
		cur += g->size;
		covered[fields++] = g;
	}
	if (cur != end || fields < 2)
		return verr(env, NB_VERR_CTX_ACCESS, pc,
			    "%u-byte context %s at offset %u does not lie inside one field of the "
			    "%s context (wider than the field, padding, or misaligned)%s",
			    size, write ? "write" : "read", o, h->name,
			    write ? "; a store may only cover whole adjacent output fields" : "");
	if (is_pointer(val))
		return verr(env, NB_VERR_POINTER_LEAK, pc,
			    "stores a pointer into the %s context; only numbers may leave the "
			    "program",
			    h->name);
	for (unsigned i = 0; i < fields; i++) {
		int err = vtaint_check_output(env, covered[i], val);
		if (err)
			return err;
	}
	return 0;
}

/* *taint: for a read, the taint of the value read */
static int ctx_access(struct verifier_env *env, int64_t o, unsigned size, bool write,
		      bool atomic, const struct vreg *val, size_t pc, uint32_t *taint)
{
	const struct nb_hook_desc *h = env->hook;
	if (o < 0 || o + size > h->ctx_size)
		return verr(env, NB_VERR_CTX_ACCESS, pc,
			    "%u-byte context access at offset %lld is outside the %s context "
			    "(%u bytes)",
			    size, (long long)o, h->name, h->ctx_size);
	if (atomic)
		return verr(env, NB_VERR_CTX_ACCESS, pc,
			    "atomic operations on the context are not allowed");
	const struct nb_ctx_field *f = hook_ctx_field(h, (uint32_t)o, size);
	if (!f)
		return ctx_access_span(env, (uint32_t)o, size, write, val, pc);
	if (write) {
		if (!f->writable)
			return verr(env, NB_VERR_CTX_WRITE, pc,
				    "ctx->%s is a read-only input of the %s hook; only its output "
				    "fields may be written",
				    f->name, h->name);
		if ((uint32_t)o != f->off || size != f->size)
			return verr(env, NB_VERR_CTX_ACCESS, pc,
				    "ctx->%s must be written whole (%u bytes at offset %u), not %u "
				    "bytes at offset %lld",
				    f->name, f->size, f->off, size, (long long)o);
		if (is_pointer(val))
			return verr(env, NB_VERR_POINTER_LEAK, pc,
				    "stores a pointer into ctx->%s; only numbers may leave the "
				    "program",
				    f->name);
		return vtaint_check_output(env, f, val);
	}
	if (!f->readable)
		return verr(env, NB_VERR_CTX_ACCESS, pc, "ctx->%s may not be read", f->name);
	if (size < f->size && (o % size) != 0)
		return verr(env, NB_VERR_CTX_ACCESS, pc,
			    "%u-byte read of ctx->%s at offset %lld is not aligned to its size",
			    size, f->name, (long long)o);
	if (f->variance == NB_RANK_LOCAL)
		*taint = vtaint_new(env, VTK_CTX, (uint32_t)(f - h->fields));
	return 0;
}

/* ---- map values ---- */

static int map_range(struct verifier_env *env, const struct vreg *r, int64_t extra,
		     uint64_t size, int64_t *lo, int64_t *hi, size_t pc, const char *what)
{
	const struct nb_map_def *m = &env->maps[r->map];
	if (r->s.smin < -OFF_LIMIT || r->s.smax > OFF_LIMIT)
		return verr(env, NB_VERR_MAP_VALUE_OOB, pc,
			    "%s map '%s' value at a variable offset that is not bounded; check "
			    "the index against the array size first (e.g. if (i < N))",
			    what, m->name);
	*lo = (int64_t)r->off + extra + r->s.smin;
	*hi = (int64_t)r->off + extra + r->s.smax + (int64_t)size;
	if (*lo < 0 || *hi > (int64_t)m->value_size) {
		if (sc_is_const(&r->s))
			return verr(env, NB_VERR_MAP_VALUE_OOB, pc,
				    "%s %llu bytes at offset %lld of map '%s' value, which has %u "
				    "bytes",
				    what, (unsigned long long)size, (long long)*lo, m->name,
				    m->value_size);
		return verr(env, NB_VERR_MAP_VALUE_OOB, pc,
			    "%s %llu bytes at offsets %lld..%lld of map '%s' value (%u bytes): the "
			    "index is not proven in range; tighten the bounds check",
			    what, (unsigned long long)size, (long long)*lo,
			    (long long)(*hi - (int64_t)size), m->name, m->value_size);
	}
	return 0;
}

static int map_access(struct verifier_env *env, const struct vreg *r, int64_t off,
		      unsigned size, bool write, bool read, const struct vreg *val, size_t pc)
{
	int64_t lo, hi;
	int err = map_range(env, r, off, size, &lo, &hi, pc, write ? "writes" : "reads");
	if (err)
		return err;
	const struct nb_map_def *m = &env->maps[r->map];
	if (read && map_writeonly(m))
		return verr(env, NB_VERR_WRITEONLY_MAP, pc,
			    "reads map '%s', which programs may only write (BPF_F_WRONLY_PROG)",
			    m->name);
	if (write && map_readonly(m))
		return verr(env, NB_VERR_READONLY_MAP, pc,
			    "writes to map '%s', which is read-only to programs", m->name);
	if (write && vtaint_map_agreed_readonly(env, m))
		return verr(env, NB_VERR_READONLY_MAP, pc,
			    "writes to agreed map '%s': tuner programs read its published view, "
			    "only profiler programs contribute to it", m->name);
	if (write && val && is_pointer(val))
		return verr(env, NB_VERR_POINTER_LEAK, pc,
			    "stores a pointer into map '%s'; maps may only hold numbers", m->name);
	return 0;
}

/* ---- dispatch ---- */

static int bad_base(struct verifier_env *env, const struct vreg *r, unsigned regno, size_t pc)
{
	char d[128];
	vreg_describe(env, r, d, sizeof(d));
	if (r->type == VT_NOT_INIT)
		return verr(env, NB_VERR_UNINIT_REG, pc, "r%u is used as an address but was never set",
			    regno);
	if (r->type == VT_PTR_MAP_VALUE_OR_NULL)
		return verr(env, NB_VERR_NULL_DEREF, pc,
			    "r%u may be NULL (it is %s); check it against NULL "
			    "before dereferencing it",
			    regno, d);
	return verr(env, NB_VERR_INVALID_MEM, pc, "r%u is %s, not a pointer to memory", regno, d);
}

int verifier_check_mem(struct verifier_env *env, const struct bpf_insn *insn)
{
	size_t pc = env->pc;
	uint8_t cls = BPF_CLASS(insn->code), mode = BPF_MODE(insn->code);
	unsigned size = isa_size_bytes(insn->code);
	bool load = cls == BPF_LDX, atomic = mode == BPF_ATOMIC;
	unsigned baseno = load ? insn->src_reg : insn->dst_reg;
	struct vreg base = *vcur_reg(env, baseno);
	struct vreg val;

	if (cls == BPF_STX) {
		struct vreg *sr = vcur_reg(env, insn->src_reg);
		if (sr->type == VT_NOT_INIT)
			return verr(env, NB_VERR_UNINIT_REG, pc, "stores r%u, which was never set",
				    insn->src_reg);
		/* a spill is a copy: checking the register (or a reload) narrows both */
		if (mode == BPF_MEM && vcur_reg(env, insn->dst_reg)->type == VT_PTR_STACK &&
		    sr->type == VT_SCALAR && !sc_is_const(&sr->s) && sr->id == 0)
			sr->id = ++env->next_id;
		val = *sr;
	} else if (cls == BPF_ST) {
		vreg_set_const(&val, (uint64_t)(int64_t)insn->imm);
	} else {
		vreg_set_not_init(&val);
	}
	if (atomic) {
		if (val.type != VT_SCALAR)
			return verr(env, NB_VERR_POINTER_LEAK, pc,
				    "atomic operation with a pointer operand");
		if (insn->imm == BPF_CMPXCHG && vcur_reg(env, 0)->type != VT_SCALAR)
			return verr(env, vcur_reg(env, 0)->type == VT_NOT_INIT ? NB_VERR_UNINIT_REG
									       : NB_VERR_POINTER_LEAK,
				    pc, "cmpxchg compares with r0, which must hold a number");
	}

	int64_t o = (int64_t)base.off + insn->off;
	if (atomic && size > 1) {
		/* Natural alignment, as in Linux: a misaligned locked instruction that crosses a
		 * cache line takes the kernel's split-lock trap (~1 ms per call on x86-64 hosts
		 * with split-lock detection). Map values and stack slots are 8-byte aligned, so
		 * the offset decides; a variable offset must have its low bits known zero. */
		bool var_ok = (base.type != VT_PTR_MAP_VALUE && base.type != VT_PTR_STACK) ||
			      ((base.s.t.value | base.s.t.mask) & (size - 1)) == 0;
		if ((o & (int64_t)(size - 1)) != 0 || !var_ok)
			return verr(env, NB_VERR_MISALIGNED, pc,
				    "%u-byte atomic operation at offset %lld%s is not aligned to its "
				    "size; atomics must be naturally aligned (a misaligned one can "
				    "cross a cache line and trap)",
				    size, (long long)o, var_ok ? "" : " plus a variable offset");
	}
	struct vreg loaded;
	vreg_set_not_init(&loaded);
	int err = 0;
	uint32_t taint = 0; /* of the value a load or a fetching atomic produces */
	bool sx = mode == BPF_MEMSX;

	switch (base.type) {
	case VT_PTR_CTX:
		if (env->hook->ctx_is_raw_memory)
			goto raw;
		err = ctx_access(env, o, size, !load, atomic, &val, pc, &taint);
		break;
	case VT_PTR_MEM:
	raw:
		if (o < 0 || o + size > env->mem_size)
			return verr(env, NB_VERR_CTX_ACCESS, pc,
				    "%u-byte access at offset %lld of the %u-byte input memory", size,
				    (long long)o, env->mem_size);
		if (!load && is_pointer(&val))
			return verr(env, NB_VERR_POINTER_LEAK, pc, "stores a pointer into memory");
		break;
	case VT_PTR_STACK: {
		/* stack pointers carry a variable offset in base.s (ptr_add), usually 0 */
		bool var = !sc_is_const(&base.s);
		if (!var)
			o += (int64_t)base.s.t.value;
		if (load || atomic) {
			err = var ? stack_read_var(env, &base, o, size, sx, &loaded, pc)
				  : stack_read(env, &base, o, size, sx, &loaded, pc);
			if (err)
				return err;
		}
		/* An atomic turns whatever the slot holds into "some number": on a spilled pointer
		 * (or with a pointer operand, or a pointer in r0 for cmpxchg) that launders an
		 * address into a scalar the program can return, store or dereference. */
		if (atomic && (is_pointer(&loaded) || is_pointer(&val) ||
			       (insn->imm == BPF_CMPXCHG && is_pointer(vcur_reg(env, 0)))))
			return verr(env, NB_VERR_POINTER_LEAK, pc,
				    "atomic operation at fp%lld on a pointer (spilled, operand or "
				    "r0): it would turn an address into a number; atomics work on "
				    "numbers only",
				    (long long)o);
		if (!load) {
			struct vreg w = val;
			if (atomic) {
				/* the slot ends up holding some number; for cmpxchg whether the store
				 * happens depends on r0 too */
				struct vscalar s;
				sc_unknown_sized(&s, size, false);
				vreg_set_scalar(&w, &s);
				w.taint = vtaint_join(loaded.taint, val.taint);
				if (insn->imm == BPF_CMPXCHG)
					w.taint = vtaint_join(w.taint, vcur_reg(env, 0)->taint);
			}
			err = var ? stack_write_var(env, &base, o, size, &w, pc)
				  : stack_write(env, &base, o, size, &w, pc);
		}
		break;
	}
	case VT_PTR_MAP_VALUE:
		err = map_access(env, &base, insn->off, size, !load, load || atomic, &val, pc);
		if (vtaint_map_writable(env, &env->maps[base.map]))
			taint = vtaint_new(env, VTK_MAP_VALUE, base.map);
		taint = vtaint_join(taint, base.taint);
		break;
	default:
		return bad_base(env, &base, baseno, pc);
	}
	if (err)
		return err;

	if (load) {
		struct vreg *dst = vcur_reg(env, insn->dst_reg);
		if (base.type == VT_PTR_STACK && loaded.type != VT_NOT_INIT) {
			*dst = loaded;
		} else {
			struct vscalar s;
			sc_unknown_sized(&s, size, sx);
			vreg_set_scalar(dst, &s);
			dst->taint = taint;
		}
	} else if (atomic && (insn->imm & BPF_FETCH)) {
		unsigned r = insn->imm == BPF_CMPXCHG ? 0 : insn->src_reg;
		struct vscalar s;
		sc_unknown_sized(&s, size, false);
		vreg_set_scalar(vcur_reg(env, r), &s);
		vcur_reg(env, r)->taint = base.type == VT_PTR_STACK ? loaded.taint : taint;
	}
	return 0;
}

int verifier_check_helper_mem(struct verifier_env *env, const struct vreg *r, uint64_t size,
			      int argno, const char *what, bool *has_ptr)
{
	size_t pc = env->pc;
	char d[128];
	*has_ptr = false;
	switch (r->type) {
	case VT_PTR_STACK: {
		struct vframe *f = env->cur.frames[r->frameno];
		if (!sc_is_const(&r->s))
			return verr(env, NB_VERR_HELPER_ARG, pc,
				    "r%d: %s is a stack pointer with a variable offset; pass a "
				    "constant offset into the stack (or index a map value)",
				    argno, what);
		int64_t o = (int64_t)r->off + (int64_t)r->s.t.value,
			lim = (int64_t)env->hook->stack_size;
		if (o < -lim || o + (int64_t)size > 0)
			return verr(env, NB_VERR_HELPER_ARG, pc,
				    "r%d: %s of %llu bytes at fp%lld does not fit in the stack frame",
				    argno, what, (unsigned long long)size, (long long)o);
		for (uint64_t i = 0; i < size; i++) {
			unsigned slot, byte;
			slot_of(o + (int64_t)i, &slot, &byte);
			uint8_t t = slot < f->nslots ? f->slots[slot].type[byte] : SB_INVALID;
			if (t == SB_INVALID)
				return verr(env, NB_VERR_HELPER_ARG, pc,
					    "r%d: %s at fp%lld needs %llu initialised bytes but byte "
					    "fp%lld was never written (buffer uninitialised or shorter "
					    "than %llu bytes)",
					    argno, what, (long long)o, (unsigned long long)size,
					    (long long)(o + (int64_t)i), (unsigned long long)size);
			if (t == SB_SPILL && f->slots[slot].spill.type != VT_SCALAR)
				*has_ptr = true;
		}
		return 0;
	}
	case VT_PTR_MAP_VALUE: {
		int64_t lo, hi;
		int err = map_range(env, r, 0, size, &lo, &hi, pc, "helper reads");
		if (err) /* the same fault, but it is the argument that is wrong */
			env->diag->code = NB_VERR_HELPER_ARG;
		else if (map_writeonly(&env->maps[r->map]))
			return verr(env, NB_VERR_WRITEONLY_MAP, pc,
				    "r%d: %s is read from map '%s', which programs may only write "
				    "(BPF_F_WRONLY_PROG)",
				    argno, what, env->maps[r->map].name);
		return err;
	}
	case VT_PTR_MEM:
		if (r->off < 0 || (uint64_t)r->off + size > env->mem_size)
			return verr(env, NB_VERR_HELPER_ARG, pc, "r%d: %s outside the input memory",
				    argno, what);
		return 0;
	case VT_PTR_MAP_VALUE_OR_NULL:
		vreg_describe(env, r, d, sizeof(d));
		return verr(env, NB_VERR_NULL_DEREF, pc,
			    "r%d is %s and may be NULL; check it before passing it as %s", argno, d,
			    what);
	case VT_NOT_INIT:
		return verr(env, NB_VERR_UNINIT_REG, pc, "r%d (%s) was never set", argno, what);
	default:
		vreg_describe(env, r, d, sizeof(d));
		return verr(env, NB_VERR_HELPER_ARG, pc,
			    "r%d is %s; %s must point to the stack or a map value", argno, d, what);
	}
}

uint32_t verifier_mem_taint(struct verifier_env *env, const struct vreg *r, uint64_t size)
{
	switch (r->type) {
	case VT_PTR_STACK:
		return vtaint_join(r->taint, stack_taint(env->cur.frames[r->frameno],
							 (int64_t)r->off + (int64_t)r->s.t.value,
							 size));
	case VT_PTR_MAP_VALUE:
		if (vtaint_map_writable(env, &env->maps[r->map]))
			return vtaint_new(env, VTK_MAP_VALUE, r->map);
		return r->taint;
	default:
		return r->taint;
	}
}
