/* x86-64 JIT, program side: structural checks and analysis of a linked program before
 * code generation, and the public vm_jit_* API (compile, run, free).
 *
 * The JIT refuses (with -EINVAL and a message, never a crash) anything it cannot compile
 * with exactly the interpreter's behaviour: unknown encodings, writes to r10, jumps out of
 * a function, functions that fall through into the next one. The runtime then uses the
 * interpreter. Verified programs never hit these cases.
 */
#include "vm/jit_x86_64.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static bool is_cond_jmp_op(uint8_t op)
{
	switch (op) {
	case BPF_JEQ: case BPF_JGT: case BPF_JGE: case BPF_JSET: case BPF_JNE:
	case BPF_JSGT: case BPF_JSGE: case BPF_JLT: case BPF_JLE: case BPF_JSLT: case BPF_JSLE:
		return true;
	default:
		return false;
	}
}

/* Checks one instruction's encoding. Returns NULL if the JIT supports it, else why not. */
static const char *check_insn(const struct bpf_insn *in)
{
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
	bool x = BPF_SRC(in->code) == BPF_X;

	if (in->dst_reg > 10 || in->src_reg > 10)
		return "register out of range";
	switch (cls) {
	case BPF_ALU:
	case BPF_ALU64:
		if (in->dst_reg == BPF_REG_FP)
			return "write to r10";
		if (!x && in->src_reg && op != BPF_END)
			return "reserved src_reg";
		switch (op) {
		case BPF_ADD: case BPF_SUB: case BPF_MUL: case BPF_OR: case BPF_AND:
		case BPF_LSH: case BPF_RSH: case BPF_XOR: case BPF_ARSH:
			return in->off ? "reserved offset" : NULL;
		case BPF_DIV: case BPF_MOD:
			return (in->off == 0 || in->off == 1) ? NULL : "bad division offset";
		case BPF_NEG:
			return (x || in->off || in->imm) ? "bad neg encoding" : NULL;
		case BPF_MOV:
			if (!x)
				return in->off ? "reserved offset" : NULL;
			if (in->off == 0 || in->off == 8 || in->off == 16 ||
			    (in->off == 32 && cls == BPF_ALU64))
				return NULL;
			return "bad movsx offset";
		case BPF_END:
			if (cls == BPF_ALU64 && x)
				return "bad byte-swap encoding";
			if (in->src_reg || in->off)
				return "reserved field in byte swap";
			return (in->imm == 16 || in->imm == 32 || in->imm == 64) ? NULL
										 : "bad byte-swap width";
		default:
			return "unknown ALU operation";
		}
	case BPF_JMP:
	case BPF_JMP32:
		if (op == BPF_JA)
			return (x || in->src_reg || in->dst_reg ||
				(cls == BPF_JMP ? in->imm != 0 : in->off != 0))
				       ? "bad ja encoding"
				       : NULL;
		if (cls == BPF_JMP && op == BPF_CALL) {
			if (x || in->dst_reg || in->off)
				return "bad call encoding";
			return (in->src_reg == 0 || in->src_reg == BPF_PSEUDO_CALL)
				       ? NULL
				       : "unsupported call form";
		}
		if (cls == BPF_JMP && op == BPF_EXIT)
			return (x || in->src_reg || in->dst_reg || in->off || in->imm)
				       ? "bad exit encoding"
				       : NULL;
		if (!is_cond_jmp_op(op))
			return "unknown jump operation";
		if (!x && in->src_reg)
			return "reserved src_reg";
		return NULL;
	case BPF_LD:
		if (in->code != BPF_LDDW)
			return "unsupported load (legacy packet access?)";
		if (in->dst_reg == BPF_REG_FP)
			return "write to r10";
		return in->src_reg && in->src_reg != BPF_PSEUDO_FUNC ? "unlinked pseudo lddw" : NULL;
	case BPF_LDX:
		if (in->dst_reg == BPF_REG_FP)
			return "write to r10";
		if (BPF_MODE(in->code) == BPF_MEM)
			return in->imm ? "reserved imm" : NULL;
		if (BPF_MODE(in->code) == BPF_MEMSX && BPF_SIZE(in->code) != BPF_DW)
			return in->imm ? "reserved imm" : NULL;
		return "unsupported load mode";
	case BPF_ST:
		if (BPF_MODE(in->code) != BPF_MEM || in->src_reg)
			return "unsupported store";
		return NULL;
	case BPF_STX:
		if (BPF_MODE(in->code) == BPF_MEM)
			return in->imm ? "reserved imm" : NULL;
		if (BPF_MODE(in->code) != BPF_ATOMIC ||
		    (BPF_SIZE(in->code) != BPF_W && BPF_SIZE(in->code) != BPF_DW))
			return "unsupported store mode";
		switch (in->imm) {
		case BPF_ADD: case BPF_OR: case BPF_AND: case BPF_XOR:
			return NULL;
		case BPF_ADD | BPF_FETCH: case BPF_OR | BPF_FETCH: case BPF_AND | BPF_FETCH:
		case BPF_XOR | BPF_FETCH: case BPF_XCHG:
			return in->src_reg == BPF_REG_FP ? "atomic fetch into r10" : NULL;
		case BPF_CMPXCHG:
			return NULL;
		default:
			return "unknown atomic operation";
		}
	default:
		return "unknown instruction class";
	}
}

/* ja, gotol or a conditional jump */
static bool is_jump(const struct bpf_insn *in)
{
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
	return (cls == BPF_JMP || cls == BPF_JMP32) && op != BPF_CALL && op != BPF_EXIT;
}

/* Target of a jump at pc (is_jump(in) must hold). */
static long jump_target(const struct bpf_insn *in, size_t pc)
{
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
	long delta = (cls == BPF_JMP32 && op == BPF_JA) ? in->imm : in->off;
	return (long)pc + delta + 1;
}

static bool is_local_call(const struct bpf_insn *in)
{
	return in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL;
}

static bool is_helper_call(const struct bpf_insn *in)
{
	return in->code == (BPF_JMP | BPF_CALL) && in->src_reg == 0;
}

/* Control never continues to the next instruction. */
static bool ends_flow(const struct bpf_insn *in)
{
	return in->code == (BPF_JMP | BPF_EXIT) || in->code == (BPF_JMP | BPF_JA) ||
	       in->code == (BPF_JMP32 | BPF_JA);
}

/* Does the instruction write register r? (for the inline-lookup pattern) */
static bool writes_reg(const struct bpf_insn *in, unsigned r)
{
	uint8_t cls = BPF_CLASS(in->code);
	if (cls == BPF_ALU || cls == BPF_ALU64 || cls == BPF_LDX || cls == BPF_LD)
		return in->dst_reg == r;
	if (cls == BPF_STX && BPF_MODE(in->code) == BPF_ATOMIC)
		return ((in->imm & BPF_FETCH) && in->src_reg == r) ||
		       (in->imm == BPF_CMPXCHG && r == 0);
	return false;
}

static struct nb_map *known_array_map(const struct vm_jit_options *opts, uint64_t v)
{
	for (size_t i = 0; i < opts->map_cnt; i++) {
		struct nb_map *m = opts->maps[i];
		if (!m || (uint64_t)(uintptr_t)m != v)
			continue;
		uint32_t t = map_type(m);
		if ((t == NB_MAP_TYPE_ARRAY || t == NB_MAP_TYPE_PERCPU_ARRAY) && map_array_base(m) &&
		    map_key_size(m) == 4)
			return m;
	}
	return NULL;
}

/* `call 1` at pc whose r1 comes from an LDDW of a known array map in the same basic
 * block: the map to inline, else NULL. */
static struct nb_map *inline_candidate(const struct vm_program *prog,
				       const struct vm_jit_options *opts,
				       const struct jit_analysis *an, size_t pc)
{
	size_t j = pc;
	while (j > 0) {
		if (an->jump_target[j] || an->func_start[j])
			return NULL; /* r1 may come from another path */
		j--;
		if (an->lddw_tail[j])
			j--;
		const struct bpf_insn *in = &prog->insns[j];
		uint8_t cls = BPF_CLASS(in->code);
		if (cls == BPF_JMP || cls == BPF_JMP32)
			return NULL;
		if (!writes_reg(in, 1))
			continue;
		if (in->code != BPF_LDDW)
			return NULL;
		uint64_t v = (uint32_t)in->imm | ((uint64_t)(uint32_t)in[1].imm << 32);
		return known_array_map(opts, v);
	}
	return NULL;
}

void jit_analysis_free(struct jit_analysis *an)
{
	free(an->func_start);
	free(an->cbs);
	free(an->jump_target);
	free(an->lddw_tail);
	free(an->inline_map);
	memset(an, 0, sizeof(*an));
}

/* Registers that the entry's first straight-line run of instructions (up to the first
 * jump, call or exit, which every execution starts with) writes in full before reading
 * them: the prologue's zeroing of them is dead. Only moves, loads, 64-bit immediates and
 * plain ALU operations are followed; anything else ends the run. The interpreter's result
 * stays exact: a register it would read as zero is never in the set. */
static void entry_prefix_writes(const struct bpf_insn *insns, size_t n, struct jit_analysis *an)
{
	bool written[BPF_NREGS] = { false }, read_first[BPF_NREGS] = { false };
	written[1] = written[2] = true; /* the arguments */
	for (size_t pc = 0; pc < n; pc++) {
		const struct bpf_insn *in = &insns[pc];
		uint8_t cls = BPF_CLASS(in->code), d = in->dst_reg, s = in->src_reg;
		if (d >= BPF_NREGS || s >= BPF_NREGS)
			break;
		if (in->code == BPF_LDDW && in->src_reg != BPF_PSEUDO_FUNC) {
			written[d] = true;
			pc++;
			continue;
		}
		bool alu = cls == BPF_ALU || cls == BPF_ALU64;
		uint8_t op = BPF_OP(in->code);
		if (alu && op != BPF_NEG && op != BPF_END && op != BPF_DIV && op != BPF_MOD) {
			if (BPF_SRC(in->code) == BPF_X && !written[s])
				read_first[s] = true;
			if (op != BPF_MOV && !written[d])
				read_first[d] = true;
			written[d] = true;
			continue;
		}
		if (cls == BPF_LDX && (BPF_MODE(in->code) == BPF_MEM ||
				       BPF_MODE(in->code) == BPF_MEMSX)) {
			if (!written[s])
				read_first[s] = true;
			written[d] = true;
			continue;
		}
		break;
	}
	for (int r = 0; r < BPF_NREGS; r++)
		an->written_first[r] = written[r] && !read_first[r];
}

int jit_analyze(const struct vm_program *prog, const struct vm_jit_options *opts,
		struct jit_analysis *an, char *err, size_t errlen)
{
	const struct bpf_insn *insns = prog->insns;
	size_t n = prog->insn_cnt;

	memset(an, 0, sizeof(*an));
	if (!insns || n == 0)
		return fail(err, errlen, "jit: empty program");
	if (n >= (1u << 24))
		return fail(err, errlen, "jit: program too large (%zu instructions)", n);
	an->insn_cnt = n;
	an->func_start = calloc(n + 1, sizeof(bool));
	an->jump_target = calloc(n + 1, sizeof(bool));
	an->lddw_tail = calloc(n + 1, sizeof(bool));
	an->inline_map = calloc(n, sizeof(*an->inline_map));
	if (!an->func_start || !an->jump_target || !an->lddw_tail || !an->inline_map) {
		jit_analysis_free(an);
		if (err && errlen)
			snprintf(err, errlen, "jit: out of memory");
		return -ENOMEM;
	}
	an->func_start[0] = true;
	an->used[1] = an->used[2] = true; /* written at entry */

	/* pass 1: encodings, LDDW pairs, targets */
	for (size_t pc = 0; pc < n; pc++) {
		const struct bpf_insn *in = &insns[pc];
		const char *why = check_insn(in);
		if (why)
			goto bad_insn_why;
		an->used[in->dst_reg] = true;
		if (BPF_CLASS(in->code) == BPF_ALU || BPF_CLASS(in->code) == BPF_ALU64 ||
		    BPF_CLASS(in->code) == BPF_JMP || BPF_CLASS(in->code) == BPF_JMP32 ||
		    BPF_CLASS(in->code) == BPF_LDX || BPF_CLASS(in->code) == BPF_STX) {
			if (BPF_SRC(in->code) == BPF_X || BPF_CLASS(in->code) == BPF_LDX ||
			    BPF_CLASS(in->code) == BPF_STX)
				an->used[in->src_reg] = true;
		}
		if (in->code == BPF_LDDW) {
			const struct bpf_insn *t = in + 1;
			if (pc + 1 >= n || t->code || t->dst_reg || t->src_reg || t->off)
				return jit_analysis_free(an),
				       fail(err, errlen, "jit: insn %zu: incomplete lddw", pc);
			if (in->src_reg == BPF_PSEUDO_FUNC) { /* linked: imm64 = the function */
				uint64_t f = (uint32_t)in->imm | (uint64_t)(uint32_t)t->imm << 32;
				if (f == 0 || f >= n)
					return jit_analysis_free(an),
					       fail(err, errlen,
						    "jit: insn %zu: function address %llu is not a "
						    "function other than the entry", pc,
						    (unsigned long long)f);
				an->func_start[f] = true;
				an->has_calls = true;
				size_t k = 0;
				while (k < an->cb_cnt && an->cbs[k] != f)
					k++;
				if (k == an->cb_cnt) {
					size_t *nc = realloc(an->cbs, (an->cb_cnt + 1) * sizeof(*nc));
					if (!nc)
						return jit_analysis_free(an),
						       fail(err, errlen, "jit: out of memory");
					an->cbs = nc;
					an->cbs[an->cb_cnt++] = (size_t)f;
				}
			}
			an->lddw_tail[++pc] = true;
			continue;
		}
		if (is_helper_call(in)) {
			an->has_helper_calls = true;
			for (int r = 0; r <= 5; r++)
				an->used[r] = true;
			int32_t id = in->imm;
			if (id < 0 || id >= NB_HELPER_MAX || !prog->helpers || !prog->helpers[id])
				an->may_fault = true;
			else if (id == NB_HELPER_LOOP) /* calls back into the program */
				an->has_calls = an->used[0] = true;
		}
		if (is_local_call(in)) {
			long t = (long)pc + in->imm + 1;
			if (t < 0 || (size_t)t >= n)
				return jit_analysis_free(an),
				       fail(err, errlen, "jit: insn %zu: call target %ld out of range",
					    pc, t);
			if (t == 0) /* main's frame differs from a subprogram's: interpreter only */
				return jit_analysis_free(an),
				       fail(err, errlen,
					    "jit: insn %zu: local call to the entry function", pc);
			an->func_start[t] = true;
			an->has_calls = true;
			an->used[0] = true;
		}
		if (is_jump(in)) {
			long t = jump_target(in, pc);
			if (t < 0 || (size_t)t >= n)
				return jit_analysis_free(an),
				       fail(err, errlen, "jit: insn %zu: jump target %ld out of range",
					    pc, t);
			an->jump_target[t] = true;
		}
		if (in->code == (BPF_JMP | BPF_EXIT))
			an->used[0] = true;
		continue;
bad_insn_why:
		jit_analysis_free(an);
		return fail(err, errlen, "jit: insn %zu (opcode 0x%02x): %s", pc, in->code, why);
	}
	for (size_t pc = 0; pc < n; pc++) {
		if ((an->jump_target[pc] || an->func_start[pc]) && an->lddw_tail[pc])
			return jit_analysis_free(an),
			       fail(err, errlen, "jit: insn %zu: jump into the middle of an lddw", pc);
	}

	/* pass 2: function boundaries */
	size_t fstart = 0;
	for (size_t pc = 0; pc < n; pc++) {
		if (an->func_start[pc])
			fstart = pc;
		if (an->lddw_tail[pc])
			continue;
		size_t fend = pc + 1;
		while (fend < n && !an->func_start[fend])
			fend++;
		const struct bpf_insn *in = &insns[pc];
		long t = is_jump(in) ? jump_target(in, pc) : (long)fstart;
		if ((size_t)t < fstart || (size_t)t >= fend)
			return jit_analysis_free(an),
			       fail(err, errlen, "jit: insn %zu: jump to %ld leaves its function", pc,
				    t);
		if (fstart == 0 && in->dst_reg == BPF_REG_FP)
			an->main_uses_fp = true;
		if (fstart == 0 && in->src_reg == BPF_REG_FP && BPF_CLASS(in->code) != BPF_LD)
			an->main_uses_fp = true;
		size_t next = pc + (in->code == BPF_LDDW ? 2 : 1);
		/* a call of an unavailable helper always faults (the runtime links code the
		 * verifier proved dead as "call 0"): nothing falls through it, so dead code right
		 * before a bpf-to-bpf function does not make the JIT refuse the program */
		bool trap = is_helper_call(in) &&
			    (in->imm < 0 || in->imm >= NB_HELPER_MAX || !prog->helpers ||
			     !prog->helpers[in->imm]);
		if (!ends_flow(in) && !trap && next < n && an->func_start[next])
			return jit_analysis_free(an),
			       fail(err, errlen,
				    "jit: insn %zu: execution falls through into the function at "
				    "insn %zu",
				    pc, next);
		if (!ends_flow(in) && !trap && next >= n)
			an->falls_off_end = true;
	}
	if (an->has_calls || an->falls_off_end)
		an->may_fault = true;

	entry_prefix_writes(insns, n, an);

	/* pass 3: array-map lookups to inline */
	if (opts && opts->inline_array_lookup && opts->maps && opts->map_cnt && prog->helpers &&
	    prog->helpers[NB_HELPER_MAP_LOOKUP_ELEM]) {
		for (size_t pc = 0; pc < n; pc++) {
			const struct bpf_insn *in = &insns[pc];
			if (!an->lddw_tail[pc] && is_helper_call(in) &&
			    in->imm == NB_HELPER_MAP_LOOKUP_ELEM)
				an->inline_map[pc] = inline_candidate(prog, opts, an, pc);
		}
	}
	return 0;
}

/* ---- public API ---- */

#if defined(__x86_64__)

static const uint8_t default_slots[10] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 };
/* The ten x86 registers that hold BPF r0..r9; the identity permutation is the System V
 * friendly map (r1..r5 = argument registers, r6..r9 callee-saved). */
static const uint8_t bpf_homes[10] = { X_RAX, X_RDI, X_RSI, X_RDX, X_RCX,
				       X_R8,  X_RBX, X_R13, X_R14, X_R15 };

int jit_compile_permuted(const struct vm_program *prog, const struct vm_jit_options *opts,
			 const uint8_t perm[10], struct vm_jit_image **out, char *err,
			 size_t errlen)
{
	uint8_t reg_map[BPF_NREGS];
	bool seen[10] = { false };

	if (!prog || !out)
		return fail(err, errlen, "jit: no program");
	*out = NULL;
	if (!perm)
		perm = default_slots;
	for (int i = 0; i < 10; i++) {
		if (perm[i] >= 10 || seen[perm[i]])
			return fail(err, errlen, "jit: register permutation is not a permutation");
		seen[perm[i]] = true;
		reg_map[i] = bpf_homes[perm[i]];
	}
	reg_map[BPF_REG_FP] = X_RBP;

	struct jit_analysis an;
	int rc = jit_analyze(prog, opts, &an, err, errlen);
	if (rc)
		return rc;
	struct vm_jit_image *img = calloc(1, sizeof(*img));
	if (!img) {
		jit_analysis_free(&an);
		if (err && errlen)
			snprintf(err, errlen, "jit: out of memory");
		return -ENOMEM;
	}
	rc = jit_generate(prog, &an, reg_map, img, err, errlen);
	jit_analysis_free(&an);
	if (rc) {
		free(img);
		return rc;
	}
	*out = img;
	return 0;
}

int vm_jit_compile(const struct vm_program *prog, const struct vm_jit_options *opts,
		   struct vm_jit_image **out, char *err, size_t errlen)
{
	return jit_compile_permuted(prog, opts, NULL, out, err, errlen);
}

bool vm_jit_available(void)
{
	return true;
}

#else /* not x86-64: the interpreter runs everything */

int jit_compile_permuted(const struct vm_program *prog, const struct vm_jit_options *opts,
			 const uint8_t perm[10], struct vm_jit_image **out, char *err,
			 size_t errlen)
{
	(void)prog;
	(void)opts;
	(void)perm;
	if (out)
		*out = NULL;
	if (err && errlen)
		snprintf(err, errlen, "jit: no JIT for this architecture");
	return -ENOTSUP;
}

int vm_jit_compile(const struct vm_program *prog, const struct vm_jit_options *opts,
		   struct vm_jit_image **out, char *err, size_t errlen)
{
	return jit_compile_permuted(prog, opts, NULL, out, err, errlen);
}

bool vm_jit_available(void)
{
	return false;
}

#endif

vm_jit_fn vm_jit_entry(const struct vm_jit_image *img)
{
	return img ? img->entry : NULL;
}

size_t vm_jit_code_size(const struct vm_jit_image *img)
{
	return img ? img->code_len : 0;
}

void vm_jit_free(struct vm_jit_image *img)
{
	if (!img)
		return;
	jit_mem_free(img->code, img->map_size);
	free(img);
}

/* info = kind | pc << 8 | detail << 32 (detail: the helper id); the messages are the
 * interpreter's, so callers and tests see the same text in both modes. */
static void decode_fault(uint64_t info, struct vm_fault *fault)
{
	memset(fault, 0, sizeof(*fault));
	fault->kind = (enum vm_fault_kind)(info & 0xff);
	fault->pc = (size_t)((info >> 8) & 0xffffff);
	int32_t detail = (int32_t)(uint32_t)(info >> 32);
	switch (fault->kind) {
	case VM_FAULT_CALL_DEPTH:
		snprintf(fault->msg, sizeof(fault->msg), "insn %zu: call depth exceeds %d frames",
			 fault->pc, BPF_MAX_CALL_DEPTH);
		break;
	case VM_FAULT_BAD_HELPER:
		snprintf(fault->msg, sizeof(fault->msg), "insn %zu: call to unavailable helper %d",
			 fault->pc, detail);
		break;
	case VM_FAULT_PC_OOB:
		snprintf(fault->msg, sizeof(fault->msg),
			 "insn %zu: execution ran past the end of the program (%zu insns)",
			 fault->pc, fault->pc);
		break;
	default:
		snprintf(fault->msg, sizeof(fault->msg), "insn %zu: fault", fault->pc);
		break;
	}
}

int vm_jit_run(const struct vm_jit_image *img, uint64_t a1, uint64_t a2, uint64_t *r0,
	       struct vm_fault *fault)
{
	struct vm_jit_fault_rec rec = { 0, 0 };
	if (!img || !img->run)
		return -EINVAL;
	uint64_t v = img->run(a1, a2, &rec);
	if (!rec.count) {
		if (r0)
			*r0 = v;
		return 0;
	}
	if (fault)
		decode_fault(rec.info, fault);
	return -EFAULT;
}

vm_jit_run_fn vm_jit_runner(const struct vm_jit_image *img)
{
	return img ? img->run : NULL;
}

vm_jit_store_fn vm_jit_store_entry(const struct vm_jit_image *img)
{
	return img ? img->store : NULL;
}

bool vm_jit_may_fault(const struct vm_jit_image *img)
{
	return !img || img->may_fault;
}

void vm_jit_fault_decode(const struct vm_jit_fault_rec *rec, struct vm_fault *fault)
{
	if (rec && fault)
		decode_fault(rec->info, fault);
}

uint64_t vm_jit_fault_count(const struct vm_jit_image *img)
{
	return img ? __atomic_load_n(&img->raw_fault.count, __ATOMIC_RELAXED) : 0;
}

void vm_jit_last_fault(const struct vm_jit_image *img, enum vm_fault_kind *kind, size_t *pc)
{
	uint64_t info = img ? __atomic_load_n(&img->raw_fault.info, __ATOMIC_RELAXED) : 0;
	if (kind)
		*kind = (enum vm_fault_kind)(info & 0xff);
	if (pc)
		*pc = (size_t)((info >> 8) & 0xffffff);
}
