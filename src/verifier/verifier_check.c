/* Structural checks before exploration: program size, known opcodes with sane fields,
 * jump/call targets inside the program and never into the middle of an LDDW, functions
 * that end in exit or jump, and every instruction reachable. Also marks prune points.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verifier/verifier_internal.h"

static bool reg_ok(unsigned r, bool writable)
{
	return writable ? r < BPF_REG_FP : r <= BPF_REG_FP;
}

static int check_alu(struct verifier_env *env, size_t pc, const struct bpf_insn *in)
{
	uint8_t op = BPF_OP(in->code);
	bool x = BPF_SRC(in->code) == BPF_X, alu64 = BPF_CLASS(in->code) == BPF_ALU64;
	if (op > BPF_END)
		return verr(env, NB_VERR_BAD_INSN, pc, "unknown ALU operation 0x%02x", in->code);
	if (!reg_ok(in->dst_reg, true))
		return verr(env, NB_VERR_BAD_INSN, pc, "r%u may not be written (r10 is read-only)",
			    in->dst_reg);
	if (op == BPF_END) {
		if ((alu64 && x) || (in->imm != 16 && in->imm != 32 && in->imm != 64) || in->src_reg ||
		    in->off)
			return verr(env, NB_VERR_BAD_INSN, pc, "malformed byte swap (code 0x%02x imm %d)",
				    in->code, in->imm);
		return 0;
	}
	if (op == BPF_NEG) {
		if (x || in->src_reg || in->off || in->imm)
			return verr(env, NB_VERR_BAD_INSN, pc, "malformed neg (code 0x%02x)", in->code);
		return 0;
	}
	if (x ? (!reg_ok(in->src_reg, false) || in->imm) : in->src_reg != 0)
		return verr(env, NB_VERR_BAD_INSN, pc, "malformed ALU source (code 0x%02x)", in->code);
	bool off_ok = in->off == 0;
	if ((op == BPF_DIV || op == BPF_MOD) && in->off == 1)
		off_ok = true;
	if (op == BPF_MOV && x && (in->off == 8 || in->off == 16 || (alu64 && in->off == 32)))
		off_ok = true;
	if (!off_ok)
		return verr(env, NB_VERR_BAD_INSN, pc, "unexpected offset %d in ALU instruction 0x%02x",
			    in->off, in->code);
	return 0;
}

static int check_jmp(struct verifier_env *env, size_t pc, const struct bpf_insn *in)
{
	uint8_t op = BPF_OP(in->code);
	bool j32 = BPF_CLASS(in->code) == BPF_JMP32, x = BPF_SRC(in->code) == BPF_X;
	if (op == 0xe0 || op == 0xf0)
		return verr(env, NB_VERR_BAD_INSN, pc, "unknown jump operation 0x%02x", in->code);
	if (op == BPF_CALL || op == BPF_EXIT) {
		if (j32 || x)
			return verr(env, NB_VERR_BAD_INSN, pc, "malformed call/exit 0x%02x", in->code);
		if (op == BPF_EXIT && (in->src_reg || in->dst_reg || in->off || in->imm))
			return verr(env, NB_VERR_BAD_INSN, pc, "malformed exit");
		if (op == BPF_CALL && (in->dst_reg || in->off ||
				       (in->src_reg != 0 && in->src_reg != BPF_PSEUDO_CALL)))
			return verr(env, NB_VERR_BAD_INSN, pc,
				    "unsupported call form (src_reg %u): only helpers and bpf-to-bpf "
				    "calls",
				    in->src_reg);
		return 0;
	}
	if (op == BPF_JA) {
		if (x || in->src_reg || in->dst_reg || (j32 ? in->off != 0 : in->imm != 0))
			return verr(env, NB_VERR_BAD_INSN, pc, "malformed ja");
		return 0;
	}
	if (!reg_ok(in->dst_reg, false) || (x ? (!reg_ok(in->src_reg, false) || in->imm)
					      : in->src_reg != 0))
		return verr(env, NB_VERR_BAD_INSN, pc, "malformed conditional jump 0x%02x", in->code);
	return 0;
}

static int check_insn(struct verifier_env *env, size_t pc)
{
	const struct bpf_insn *in = &env->insns[pc];
	uint8_t cls = BPF_CLASS(in->code), mode = BPF_MODE(in->code), sz = BPF_SIZE(in->code);
	switch (cls) {
	case BPF_ALU:
	case BPF_ALU64:
		return check_alu(env, pc, in);
	case BPF_JMP:
	case BPF_JMP32:
		return check_jmp(env, pc, in);
	case BPF_LD:
		if (in->code != BPF_LDDW)
			return verr(env, NB_VERR_BAD_INSN, pc,
				    "legacy packet load (code 0x%02x) is not supported", in->code);
		if (pc + 1 >= env->insn_cnt)
			return verr(env, NB_VERR_BAD_INSN, pc, "incomplete lddw at the end of the program");
		if (env->insns[pc + 1].code || env->insns[pc + 1].dst_reg ||
		    env->insns[pc + 1].src_reg || env->insns[pc + 1].off || in->off ||
		    !reg_ok(in->dst_reg, true))
			return verr(env, NB_VERR_BAD_INSN, pc, "malformed lddw");
		if (in->src_reg == BPF_PSEUDO_MAP_FD || in->src_reg == BPF_PSEUDO_MAP_VALUE) {
			if (in->imm < 0 || (size_t)in->imm >= env->map_cnt || in->imm > UINT16_MAX)
				return verr(env, NB_VERR_BAD_INSN, pc,
					    "lddw refers to map %d but the object has %zu maps", in->imm,
					    env->map_cnt);
			/* a direct value address only exists for array maps (global data) */
			uint32_t t = env->maps[in->imm].type;
			if (in->src_reg == BPF_PSEUDO_MAP_VALUE && t != 2 /* ARRAY */ &&
			    t != 6 /* PERCPU_ARRAY */)
				return verr(env, NB_VERR_BAD_INSN, pc,
					    "lddw takes the address of a value of map '%s', which is not "
					    "an array map",
					    env->maps[in->imm].name);
		} else if (in->src_reg == BPF_PSEUDO_FUNC) {
			if (env->insns[pc + 1].imm)
				return verr(env, NB_VERR_BAD_INSN, pc, "malformed function address lddw");
		} else if (in->src_reg != 0) {
			return verr(env, NB_VERR_BAD_INSN, pc, "unsupported lddw form (src_reg %u)",
				    in->src_reg);
		}
		return 0;
	case BPF_LDX:
		if ((mode != BPF_MEM && mode != BPF_MEMSX) || (mode == BPF_MEMSX && sz == BPF_DW) ||
		    !reg_ok(in->dst_reg, true) || !reg_ok(in->src_reg, false) || in->imm)
			return verr(env, NB_VERR_BAD_INSN, pc, "malformed load 0x%02x", in->code);
		return 0;
	case BPF_ST:
		if (mode != BPF_MEM || in->src_reg || !reg_ok(in->dst_reg, false))
			return verr(env, NB_VERR_BAD_INSN, pc, "malformed store 0x%02x", in->code);
		return 0;
	case BPF_STX:
		if (!reg_ok(in->dst_reg, false) || !reg_ok(in->src_reg, false))
			return verr(env, NB_VERR_BAD_INSN, pc, "malformed store 0x%02x", in->code);
		if (mode == BPF_MEM) {
			if (in->imm)
				return verr(env, NB_VERR_BAD_INSN, pc, "malformed store 0x%02x", in->code);
			return 0;
		}
		if (mode == BPF_ATOMIC && (sz == BPF_W || sz == BPF_DW)) {
			int32_t op = in->imm & ~BPF_FETCH;
			if (op == BPF_ADD || op == BPF_OR || op == BPF_AND || op == BPF_XOR ||
			    in->imm == BPF_XCHG || in->imm == BPF_CMPXCHG)
				return 0;
		}
		return verr(env, NB_VERR_BAD_INSN, pc, "unsupported store mode 0x%02x (imm %d)",
			    in->code, in->imm);
	default:
		return verr(env, NB_VERR_BAD_INSN, pc, "unknown opcode 0x%02x", in->code);
	}
}

/* Jump target of a jump/call at pc, or -1 when the instruction does not jump. */
static int64_t jump_target(const struct bpf_insn *in, size_t pc)
{
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
	if (in->code == BPF_LDDW && in->src_reg == BPF_PSEUDO_FUNC)
		return (int64_t)pc + in->imm + 1; /* a callback: the start of a function */
	if (cls != BPF_JMP && cls != BPF_JMP32)
		return -1;
	if (op == BPF_EXIT)
		return -1;
	if (op == BPF_CALL)
		return in->src_reg == BPF_PSEUDO_CALL ? (int64_t)pc + in->imm + 1 : -1;
	if (op == BPF_JA && cls == BPF_JMP32)
		return (int64_t)pc + in->imm + 1;
	return (int64_t)pc + in->off + 1;
}

static bool ends_function(const struct bpf_insn *in)
{
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
	return (cls == BPF_JMP || cls == BPF_JMP32) && (op == BPF_EXIT || op == BPF_JA);
}

int verifier_check_structure(struct verifier_env *env)
{
	size_t n = env->insn_cnt;
	if (n == 0)
		return verr(env, NB_VERR_FALL_OFF, 0, "empty program");
	if (n > env->hook->max_insns)
		return verr(env, NB_VERR_PROG_SIZE, 0,
			    "program has %zu instructions; %s programs may have at most %u", n,
			    env->hook->name, env->hook->max_insns);
	for (size_t pc = 0; pc < n; pc++) {
		int err = check_insn(env, pc);
		if (err)
			return err;
		if (isa_is_lddw(&env->insns[pc]))
			env->insn_flags[++pc] |= VF_LDDW2;
	}
	env->insn_flags[0] |= VF_SUBPROG;
	for (size_t pc = 0; pc < n; pc++) {
		if (env->insn_flags[pc] & VF_LDDW2)
			continue;
		const struct bpf_insn *in = &env->insns[pc];
		int64_t t = jump_target(in, pc);
		bool func_addr = in->code == BPF_LDDW && in->src_reg == BPF_PSEUDO_FUNC;
		/* after bpf_loop: the continuations of its rounds meet here (verifier_loop.c) */
		if (in->code == (BPF_JMP | BPF_CALL) && in->src_reg == 0 &&
		    in->imm == NB_HELPER_LOOP && pc + 1 < n)
			env->insn_flags[pc + 1] |= VF_PRUNE;
		if (t < 0 && BPF_OP(in->code) == BPF_CALL && !func_addr)
			continue;
		if (t == -1 && !func_addr &&
		    !(BPF_CLASS(in->code) == BPF_JMP || BPF_CLASS(in->code) == BPF_JMP32))
			continue;
		if (BPF_OP(in->code) == BPF_EXIT)
			continue;
		if (t < 0 || t >= (int64_t)n)
			return verr(env, NB_VERR_BAD_JUMP, pc, "jump to insn %lld is outside the program "
				    "(%zu instructions)", (long long)t, n);
		if (env->insn_flags[t] & VF_LDDW2)
			return verr(env, NB_VERR_BAD_JUMP, pc,
				    "jump to insn %lld lands in the middle of a 64-bit immediate load",
				    (long long)t);
		if (func_addr) {
			env->insn_flags[t] |= VF_SUBPROG;
			continue;
		}
		if (BPF_OP(in->code) == BPF_CALL) {
			env->insn_flags[t] |= VF_SUBPROG;
			if (pc + 1 < n)
				env->insn_flags[pc + 1] |= VF_PRUNE;
			continue;
		}
		env->insn_flags[t] |= VF_PRUNE;
		if (t <= (int64_t)pc)
			env->insn_flags[t] |= VF_LOOP_HEAD;
	}
	/* every function ends in exit/ja, and local jumps stay inside their function */
	size_t start = 0, end = 0; /* the function [start, end) holding pc */
	for (size_t pc = 0; pc < n; pc++) {
		if ((env->insn_flags[pc] & VF_SUBPROG)) {
			/* found once per function: per jump it was quadratic (0.9 M instructions
			 * of the 2,594-instruction bandit_observe) */
			start = pc;
			end = pc + 1;
			while (end < n && !(env->insn_flags[end] & VF_SUBPROG))
				end++;
		}
		bool last = pc + 1 == n || (env->insn_flags[pc + 1] & VF_SUBPROG);
		if (last) {
			size_t lp = (env->insn_flags[pc] & VF_LDDW2) ? pc - 1 : pc;
			if ((env->insn_flags[pc] & VF_LDDW2) || !ends_function(&env->insns[lp]))
				return verr(env, NB_VERR_FALL_OFF, lp,
					    "execution can run past the end of the %s at insn %zu; "
					    "end it with exit",
					    start == 0 ? "program" : "function", pc);
		}
		if (env->insn_flags[pc] & VF_LDDW2)
			continue;
		const struct bpf_insn *in = &env->insns[pc];
		int64_t t = jump_target(in, pc);
		if (t < 0 || BPF_OP(in->code) == BPF_CALL || in->code == BPF_LDDW)
			continue;
		if ((size_t)t < start || (size_t)t >= end)
			return verr(env, NB_VERR_BAD_JUMP, pc,
				    "jump to insn %lld leaves the function that starts at insn %zu",
				    (long long)t, start);
	}
	/* reachability */
	size_t *work = malloc(n * sizeof(*work)), top = 0;
	if (!work)
		return -ENOMEM;
	env->insn_flags[0] |= VF_REACHED;
	work[top++] = 0;
	while (top) {
		size_t pc = work[--top];
		const struct bpf_insn *in = &env->insns[pc];
		int64_t succ[2] = { -1, -1 };
		uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
		if (cls == BPF_JMP || cls == BPF_JMP32) {
			if (op == BPF_EXIT) {
			} else if (op == BPF_JA) {
				succ[0] = jump_target(in, pc);
			} else {
				succ[0] = (int64_t)pc + 1;
				succ[1] = jump_target(in, pc);
			}
		} else {
			succ[0] = (int64_t)pc + (isa_is_lddw(in) ? 2 : 1);
			succ[1] = jump_target(in, pc); /* a callback's function */
		}
		for (int i = 0; i < 2; i++) {
			if (succ[i] < 0 || succ[i] >= (int64_t)n)
				continue;
			if (!(env->insn_flags[succ[i]] & VF_REACHED)) {
				env->insn_flags[succ[i]] |= VF_REACHED;
				work[top++] = (size_t)succ[i];
			}
		}
	}
	free(work);
	for (size_t pc = 0; pc < n; pc++)
		if (!(env->insn_flags[pc] & (VF_REACHED | VF_LDDW2)))
			return verr(env, NB_VERR_UNREACHABLE, pc,
				    "insn %zu can never execute; remove dead code", pc);
	return verifier_liveness(env);
}

#define R(n) (1u << (n))
#define ARGS (R(1) | R(2) | R(3) | R(4) | R(5))

/* Registers instruction `in` reads (*use) and writes (*def). */
static void use_def(const struct bpf_insn *in, uint16_t *use, uint16_t *def)
{
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code), mode = BPF_MODE(in->code);
	bool x = BPF_SRC(in->code) == BPF_X;
	*use = 0;
	*def = 0;
	switch (cls) {
	case BPF_ALU:
	case BPF_ALU64:
		*use = (uint16_t)((op == BPF_MOV ? 0 : R(in->dst_reg)) |
				  (x && op != BPF_END && op != BPF_NEG ? R(in->src_reg) : 0));
		*def = (uint16_t)R(in->dst_reg);
		return;
	case BPF_LD:
		*def = (uint16_t)R(in->dst_reg);
		return;
	case BPF_LDX:
		*use = (uint16_t)R(in->src_reg);
		*def = (uint16_t)R(in->dst_reg);
		return;
	case BPF_ST:
		*use = (uint16_t)R(in->dst_reg);
		return;
	case BPF_STX:
		*use = (uint16_t)(R(in->dst_reg) | R(in->src_reg));
		if (mode == BPF_ATOMIC && in->imm == BPF_CMPXCHG) {
			*use |= R(0);
			*def = R(0);
		} else if (mode == BPF_ATOMIC && (in->imm & BPF_FETCH)) {
			*def = (uint16_t)R(in->src_reg);
		}
		return;
	default: /* jumps */
		if (op == BPF_EXIT)
			*use = R(0);
		else if (op == BPF_CALL) /* the callee's (own) frame sees r1-r5 */
			*use = ARGS, *def = R(0) | ARGS;
		else if (op != BPF_JA)
			*use = (uint16_t)(R(in->dst_reg) | (x ? R(in->src_reg) : 0));
		return;
	}
}

/* Live registers before each instruction (backward dataflow to a fixpoint). Pruning
 * ignores the dead registers of a stored state: its paths never read them, so a new state
 * may hold anything there (Linux does the same). Without it, a loop whose body leaves a
 * different dead value behind (a lookup result, a clobbered argument) never prunes and
 * every iteration's paths are explored to the end. Calls: the callee's frame has its own
 * registers, so a call reads r1-r5, writes r0-r5 and keeps the caller's r6-r9. */
int verifier_liveness(struct verifier_env *env)
{
	size_t n = env->insn_cnt;
	env->live_regs = calloc(n, sizeof(*env->live_regs));
	if (!env->live_regs)
		return -ENOMEM;
	for (bool changed = true; changed;) {
		changed = false;
		for (size_t i = n; i-- > 0;) {
			if (env->insn_flags[i] & VF_LDDW2)
				continue;
			const struct bpf_insn *in = &env->insns[i];
			uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
			bool jmp = cls == BPF_JMP || cls == BPF_JMP32;
			uint16_t out = 0, use, def;
			if (!(jmp && (op == BPF_EXIT || op == BPF_JA))) {
				size_t next = i + (isa_is_lddw(in) ? 2 : 1);
				if (next < n)
					out |= env->live_regs[next];
			}
			if (jmp && op != BPF_EXIT && op != BPF_CALL) {
				int64_t t = jump_target(in, i);
				if (t >= 0 && (size_t)t < n)
					out |= env->live_regs[t];
			}
			use_def(in, &use, &def);
			uint16_t live = (uint16_t)(use | (out & ~def) | R(BPF_REG_FP));
			if (live != env->live_regs[i]) {
				env->live_regs[i] = live;
				changed = true;
			}
		}
	}
	return 0;
}
