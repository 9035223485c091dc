/* The interpreter: reference semantics of the runtime (RFC 9669 including v4).
 *
 * One loop body, instantiated twice through an always-inline function with a constant
 * `checked` flag: the unchecked instance has no per-instruction bookkeeping (it relies on
 * isa_validate: jump targets inside the program, last instruction exit/ja), the checked
 * instance bounds-checks the pc, counts the budget and checks every memory access
 * (vm_interp_checked.c). Call depth and helper ids are checked in both: a program must
 * never overflow a host buffer or call through a NULL pointer.
 *
 * Memory is accessed with memcpy (unaligned-safe, compiles to plain moves) and atomics
 * with the __atomic builtins (sequentially consistent), as the x86-64 JIT does with LOCK.
 */
#include <errno.h>
#include <string.h>

#include "vm/vm_interp_internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the interpreter assumes a little-endian host (BPF le/be semantics)"
#endif

struct vm_frame {
	uint64_t callee_saved[4]; /* r6..r9 of the caller */
	size_t ret_pc;
	/* a bpf_loop callback's frame: the loop runs here (exit re-enters the callback) */
	bool is_loop;
	uint32_t loop_n, loop_i;
	uint64_t loop_cb, loop_ctx;
};

/* A bpf_loop callback must be a function whose address the program takes (a linked
 * BPF_PSEUDO_FUNC LDDW holds its index). Verified programs only ever pass such an
 * address; unverified ones (checked mode) are held to it here. */
static bool vm_is_callback(const struct vm_program *prog, uint64_t cb, bool checked)
{
	if (cb == 0 || cb >= prog->insn_cnt)
		return false;
	if (!checked)
		return true;
	for (size_t i = 0; i + 1 < prog->insn_cnt; i++) {
		const struct bpf_insn *in = &prog->insns[i];
		if (in->code != BPF_LDDW)
			continue;
		uint64_t v = (uint32_t)in[0].imm | (uint64_t)(uint32_t)in[1].imm << 32;
		if (in->src_reg == BPF_PSEUDO_FUNC && v == cb)
			return true;
		i++;
	}
	return false;
}

#define VM_ALWAYS_INLINE inline __attribute__((always_inline))

static VM_ALWAYS_INLINE uint64_t vm_sdiv64(uint64_t a, uint64_t b)
{
	if (b == 0)
		return 0;
	if ((int64_t)b == -1)
		return 0 - a; /* INT64_MIN / -1 wraps to INT64_MIN */
	return (uint64_t)((int64_t)a / (int64_t)b);
}

static VM_ALWAYS_INLINE uint64_t vm_smod64(uint64_t a, uint64_t b)
{
	if (b == 0)
		return a;
	if ((int64_t)b == -1)
		return 0;
	return (uint64_t)((int64_t)a % (int64_t)b);
}

static VM_ALWAYS_INLINE uint32_t vm_sdiv32(uint32_t a, uint32_t b)
{
	if (b == 0)
		return 0;
	if ((int32_t)b == -1)
		return 0u - a;
	return (uint32_t)((int32_t)a / (int32_t)b);
}

static VM_ALWAYS_INLINE uint32_t vm_smod32(uint32_t a, uint32_t b)
{
	if (b == 0)
		return a;
	if ((int32_t)b == -1)
		return 0;
	return (uint32_t)((int32_t)a % (int32_t)b);
}

#define VM_LOAD(T, a)                                                 \
	({                                                            \
		T v_;                                                 \
		memcpy(&v_, (const void *)(uintptr_t)(a), sizeof(v_)); \
		v_;                                                   \
	})
#define VM_STORE(T, a, v)                                             \
	do {                                                          \
		T v_ = (T)(v);                                        \
		memcpy((void *)(uintptr_t)(a), &v_, sizeof(v_));       \
	} while (0)

static VM_ALWAYS_INLINE int vm_run_loop(const struct vm_program *prog, uint64_t a1, uint64_t a2,
					uint64_t *r0_out, struct vm_check_state *cs,
					struct vm_fault *fault, const bool checked)
{
	const struct bpf_insn *insns = prog->insns;
	const size_t cnt = prog->insn_cnt;
	uint64_t reg[BPF_NREGS] = { 0 };
	struct vm_frame frames[BPF_MAX_CALL_DEPTH];
	uint8_t stack[BPF_MAX_CALL_DEPTH * BPF_STACK_SIZE] __attribute__((aligned(16)));
	unsigned depth = 0;
	size_t pc = 0;
	uint64_t budget = 0, executed = 0;

	if (checked) {
		memset(stack, 0, sizeof(stack)); /* deterministic runs for differential tests */
		cs->stack_lo = (uint64_t)(uintptr_t)stack;
		cs->depth = 0;
		budget = cs->chk->insn_budget;
	}
	reg[1] = a1;
	reg[2] = a2;
	reg[BPF_REG_FP] = (uint64_t)(uintptr_t)(stack + BPF_STACK_SIZE);

/* access check of the current instruction (checked mode only) */
#define VM_CHECK(addr, size, write)                                                        \
	do {                                                                               \
		if (checked && vm_check_mem(cs, pc - 1, (addr), (size), (write), fault)) { \
			goto out_fault;                                                    \
		}                                                                          \
	} while (0)

	for (;;) {
		if (checked) {
			if (pc >= cnt) {
				vm_fault_set(fault, VM_FAULT_PC_OOB, pc, 0,
					     "execution ran past the end of the program (%zu insns)",
					     cnt);
				goto out_fault;
			}
			if (budget && executed >= budget) {
				vm_fault_set(fault, VM_FAULT_BUDGET, pc, 0,
					     "instruction budget of %llu exhausted",
					     (unsigned long long)budget);
				goto out_fault;
			}
			executed++;
		}
		const struct bpf_insn *in = &insns[pc++];
		uint64_t *dst = &reg[in->dst_reg];
		const uint64_t src = reg[in->src_reg];
		const uint64_t imm = (uint64_t)(int64_t)in->imm; /* sign-extended */
		const uint32_t imm32 = (uint32_t)in->imm;

		switch (in->code) {
		/* ---- ALU64 ---- */
		case BPF_ALU64 | BPF_ADD | BPF_K: *dst += imm; break;
		case BPF_ALU64 | BPF_ADD | BPF_X: *dst += src; break;
		case BPF_ALU64 | BPF_SUB | BPF_K: *dst -= imm; break;
		case BPF_ALU64 | BPF_SUB | BPF_X: *dst -= src; break;
		case BPF_ALU64 | BPF_MUL | BPF_K: *dst *= imm; break;
		case BPF_ALU64 | BPF_MUL | BPF_X: *dst *= src; break;
		case BPF_ALU64 | BPF_DIV | BPF_K:
			*dst = in->off ? vm_sdiv64(*dst, imm) : imm ? *dst / imm : 0;
			break;
		case BPF_ALU64 | BPF_DIV | BPF_X:
			*dst = in->off ? vm_sdiv64(*dst, src) : src ? *dst / src : 0;
			break;
		case BPF_ALU64 | BPF_MOD | BPF_K:
			*dst = in->off ? vm_smod64(*dst, imm) : imm ? *dst % imm : *dst;
			break;
		case BPF_ALU64 | BPF_MOD | BPF_X:
			*dst = in->off ? vm_smod64(*dst, src) : src ? *dst % src : *dst;
			break;
		case BPF_ALU64 | BPF_OR | BPF_K: *dst |= imm; break;
		case BPF_ALU64 | BPF_OR | BPF_X: *dst |= src; break;
		case BPF_ALU64 | BPF_AND | BPF_K: *dst &= imm; break;
		case BPF_ALU64 | BPF_AND | BPF_X: *dst &= src; break;
		case BPF_ALU64 | BPF_XOR | BPF_K: *dst ^= imm; break;
		case BPF_ALU64 | BPF_XOR | BPF_X: *dst ^= src; break;
		case BPF_ALU64 | BPF_LSH | BPF_K: *dst <<= (imm & 63); break;
		case BPF_ALU64 | BPF_LSH | BPF_X: *dst <<= (src & 63); break;
		case BPF_ALU64 | BPF_RSH | BPF_K: *dst >>= (imm & 63); break;
		case BPF_ALU64 | BPF_RSH | BPF_X: *dst >>= (src & 63); break;
		case BPF_ALU64 | BPF_ARSH | BPF_K: *dst = (uint64_t)((int64_t)*dst >> (imm & 63)); break;
		case BPF_ALU64 | BPF_ARSH | BPF_X: *dst = (uint64_t)((int64_t)*dst >> (src & 63)); break;
		case BPF_ALU64 | BPF_NEG: *dst = 0 - *dst; break;
		case BPF_ALU64 | BPF_MOV | BPF_K: *dst = imm; break;
		case BPF_ALU64 | BPF_MOV | BPF_X:
			switch (in->off) {
			case 8: *dst = (uint64_t)(int64_t)(int8_t)src; break;
			case 16: *dst = (uint64_t)(int64_t)(int16_t)src; break;
			case 32: *dst = (uint64_t)(int64_t)(int32_t)src; break;
			default: *dst = src; break;
			}
			break;
		case BPF_ALU64 | BPF_END | BPF_K: /* bswap, unconditional */
			*dst = in->imm == 16   ? __builtin_bswap16((uint16_t)*dst)
			       : in->imm == 32 ? __builtin_bswap32((uint32_t)*dst)
					       : __builtin_bswap64(*dst);
			break;

		/* ---- ALU (32-bit, results zero-extended) ---- */
		case BPF_ALU | BPF_ADD | BPF_K: *dst = (uint32_t)((uint32_t)*dst + imm32); break;
		case BPF_ALU | BPF_ADD | BPF_X: *dst = (uint32_t)((uint32_t)*dst + (uint32_t)src); break;
		case BPF_ALU | BPF_SUB | BPF_K: *dst = (uint32_t)((uint32_t)*dst - imm32); break;
		case BPF_ALU | BPF_SUB | BPF_X: *dst = (uint32_t)((uint32_t)*dst - (uint32_t)src); break;
		case BPF_ALU | BPF_MUL | BPF_K: *dst = (uint32_t)((uint32_t)*dst * imm32); break;
		case BPF_ALU | BPF_MUL | BPF_X: *dst = (uint32_t)((uint32_t)*dst * (uint32_t)src); break;
		case BPF_ALU | BPF_DIV | BPF_K:
			*dst = in->off ? vm_sdiv32((uint32_t)*dst, imm32)
			       : imm32 ? (uint32_t)*dst / imm32 : 0;
			break;
		case BPF_ALU | BPF_DIV | BPF_X:
			*dst = in->off ? vm_sdiv32((uint32_t)*dst, (uint32_t)src)
			       : (uint32_t)src ? (uint32_t)*dst / (uint32_t)src : 0;
			break;
		case BPF_ALU | BPF_MOD | BPF_K:
			*dst = in->off ? vm_smod32((uint32_t)*dst, imm32)
			       : imm32 ? (uint32_t)*dst % imm32 : (uint32_t)*dst;
			break;
		case BPF_ALU | BPF_MOD | BPF_X:
			*dst = in->off ? vm_smod32((uint32_t)*dst, (uint32_t)src)
			       : (uint32_t)src ? (uint32_t)*dst % (uint32_t)src : (uint32_t)*dst;
			break;
		case BPF_ALU | BPF_OR | BPF_K: *dst = (uint32_t)*dst | imm32; break;
		case BPF_ALU | BPF_OR | BPF_X: *dst = (uint32_t)(*dst | src); break;
		case BPF_ALU | BPF_AND | BPF_K: *dst = (uint32_t)*dst & imm32; break;
		case BPF_ALU | BPF_AND | BPF_X: *dst = (uint32_t)(*dst & src); break;
		case BPF_ALU | BPF_XOR | BPF_K: *dst = (uint32_t)*dst ^ imm32; break;
		case BPF_ALU | BPF_XOR | BPF_X: *dst = (uint32_t)(*dst ^ src); break;
		case BPF_ALU | BPF_LSH | BPF_K: *dst = (uint32_t)((uint32_t)*dst << (imm32 & 31)); break;
		case BPF_ALU | BPF_LSH | BPF_X: *dst = (uint32_t)((uint32_t)*dst << (src & 31)); break;
		case BPF_ALU | BPF_RSH | BPF_K: *dst = (uint32_t)*dst >> (imm32 & 31); break;
		case BPF_ALU | BPF_RSH | BPF_X: *dst = (uint32_t)*dst >> (src & 31); break;
		case BPF_ALU | BPF_ARSH | BPF_K:
			*dst = (uint32_t)((int32_t)(uint32_t)*dst >> (imm32 & 31));
			break;
		case BPF_ALU | BPF_ARSH | BPF_X:
			*dst = (uint32_t)((int32_t)(uint32_t)*dst >> (src & 31));
			break;
		case BPF_ALU | BPF_NEG: *dst = (uint32_t)(0u - (uint32_t)*dst); break;
		case BPF_ALU | BPF_MOV | BPF_K: *dst = imm32; break;
		case BPF_ALU | BPF_MOV | BPF_X:
			switch (in->off) {
			case 8: *dst = (uint32_t)(int32_t)(int8_t)src; break;
			case 16: *dst = (uint32_t)(int32_t)(int16_t)src; break;
			default: *dst = (uint32_t)src; break;
			}
			break;
		case BPF_ALU | BPF_END | BPF_TO_LE: /* host is little-endian: truncate */
			*dst = in->imm == 16 ? (uint16_t)*dst : in->imm == 32 ? (uint32_t)*dst : *dst;
			break;
		case BPF_ALU | BPF_END | BPF_TO_BE:
			*dst = in->imm == 16   ? __builtin_bswap16((uint16_t)*dst)
			       : in->imm == 32 ? __builtin_bswap32((uint32_t)*dst)
					       : __builtin_bswap64(*dst);
			break;

		/* ---- loads and stores ---- */
#define VM_LDX(SZ, T, ST)                                                    \
	case BPF_LDX | BPF_MEM | SZ: {                                       \
		uint64_t a = src + (uint64_t)(int64_t)in->off;               \
		VM_CHECK(a, sizeof(T), false);                               \
		*dst = VM_LOAD(T, a);                                        \
		break;                                                       \
	}                                                                    \
	case BPF_LDX | BPF_MEMSX | SZ: {                                     \
		uint64_t a = src + (uint64_t)(int64_t)in->off;               \
		VM_CHECK(a, sizeof(T), false);                               \
		*dst = (uint64_t)(int64_t)(ST)VM_LOAD(T, a);                 \
		break;                                                       \
	}
		VM_LDX(BPF_B, uint8_t, int8_t)
		VM_LDX(BPF_H, uint16_t, int16_t)
		VM_LDX(BPF_W, uint32_t, int32_t)
		case BPF_LDX | BPF_MEM | BPF_DW: {
			uint64_t a = src + (uint64_t)(int64_t)in->off;
			VM_CHECK(a, 8, false);
			*dst = VM_LOAD(uint64_t, a);
			break;
		}
#define VM_ST(SZ, T)                                                         \
	case BPF_ST | BPF_MEM | SZ: {                                        \
		uint64_t a = *dst + (uint64_t)(int64_t)in->off;              \
		VM_CHECK(a, sizeof(T), true);                                \
		VM_STORE(T, a, imm);                                         \
		break;                                                       \
	}                                                                    \
	case BPF_STX | BPF_MEM | SZ: {                                       \
		uint64_t a = *dst + (uint64_t)(int64_t)in->off;              \
		VM_CHECK(a, sizeof(T), true);                                \
		VM_STORE(T, a, src);                                         \
		break;                                                       \
	}
		VM_ST(BPF_B, uint8_t)
		VM_ST(BPF_H, uint16_t)
		VM_ST(BPF_W, uint32_t)
		VM_ST(BPF_DW, uint64_t)

		/* ---- atomics ---- */
#define VM_ATOMIC(SZ, T)                                                                   \
	case BPF_STX | BPF_ATOMIC | SZ: {                                                  \
		uint64_t a = *dst + (uint64_t)(int64_t)in->off;                            \
		VM_CHECK(a, sizeof(T), true);                                              \
		T *p = (T *)(uintptr_t)a, v = (T)src;                                      \
		uint64_t *fetch = &reg[in->src_reg];                                       \
		switch (in->imm) {                                                         \
		case BPF_ADD: __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); break;           \
		case BPF_OR: __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); break;             \
		case BPF_AND: __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); break;           \
		case BPF_XOR: __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); break;           \
		case BPF_ADD | BPF_FETCH: *fetch = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); break; \
		case BPF_OR | BPF_FETCH: *fetch = __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); break;   \
		case BPF_AND | BPF_FETCH: *fetch = __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); break; \
		case BPF_XOR | BPF_FETCH: *fetch = __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); break; \
		case BPF_XCHG: *fetch = __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); break; \
		case BPF_CMPXCHG: {                                                        \
			T expected = (T)reg[0];                                            \
			__atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, \
						    __ATOMIC_SEQ_CST);                     \
			reg[0] = expected; /* old value, zero-extended for W */            \
			break;                                                             \
		}                                                                          \
		default: goto bad_insn;                                                    \
		}                                                                          \
		break;                                                                     \
	}
		VM_ATOMIC(BPF_W, uint32_t)
		VM_ATOMIC(BPF_DW, uint64_t)

		case BPF_LDDW:
			if (checked && pc >= cnt)
				goto bad_insn;
			*dst = (uint64_t)imm32 | (uint64_t)(uint32_t)insns[pc].imm << 32;
			pc++;
			break;

		/* ---- jumps ---- */
		case BPF_JMP | BPF_JA: pc += in->off; break;
		case BPF_JMP32 | BPF_JA: pc += in->imm; break;
#define VM_JCC(OP, EXPR)                                                          \
	case BPF_JMP | OP | BPF_K: {                                              \
		uint64_t l = *dst, r = imm;                                       \
		int64_t sl = (int64_t)l, sr = (int64_t)r;                         \
		(void)sl, (void)sr;                                               \
		if (EXPR)                                                         \
			pc += in->off;                                            \
		break;                                                            \
	}                                                                         \
	case BPF_JMP | OP | BPF_X: {                                              \
		uint64_t l = *dst, r = src;                                       \
		int64_t sl = (int64_t)l, sr = (int64_t)r;                         \
		(void)sl, (void)sr;                                               \
		if (EXPR)                                                         \
			pc += in->off;                                            \
		break;                                                            \
	}                                                                         \
	case BPF_JMP32 | OP | BPF_K: {                                            \
		uint32_t l = (uint32_t)*dst, r = imm32;                           \
		int32_t sl = (int32_t)l, sr = (int32_t)r;                         \
		(void)sl, (void)sr;                                               \
		if (EXPR)                                                         \
			pc += in->off;                                            \
		break;                                                            \
	}                                                                         \
	case BPF_JMP32 | OP | BPF_X: {                                            \
		uint32_t l = (uint32_t)*dst, r = (uint32_t)src;                   \
		int32_t sl = (int32_t)l, sr = (int32_t)r;                         \
		(void)sl, (void)sr;                                               \
		if (EXPR)                                                         \
			pc += in->off;                                            \
		break;                                                            \
	}
		VM_JCC(BPF_JEQ, l == r)
		VM_JCC(BPF_JNE, l != r)
		VM_JCC(BPF_JGT, l > r)
		VM_JCC(BPF_JGE, l >= r)
		VM_JCC(BPF_JLT, l < r)
		VM_JCC(BPF_JLE, l <= r)
		VM_JCC(BPF_JSET, (l & r) != 0)
		VM_JCC(BPF_JSGT, sl > sr)
		VM_JCC(BPF_JSGE, sl >= sr)
		VM_JCC(BPF_JSLT, sl < sr)
		VM_JCC(BPF_JSLE, sl <= sr)

		case BPF_JMP | BPF_CALL:
			if (in->src_reg == BPF_PSEUDO_CALL) {
				if (depth + 1 >= BPF_MAX_CALL_DEPTH) {
					vm_fault_set(fault, VM_FAULT_CALL_DEPTH, pc - 1, 0,
						     "call depth exceeds %d frames",
						     BPF_MAX_CALL_DEPTH);
					goto out_fault;
				}
				struct vm_frame *fr = &frames[depth++];
				memcpy(fr->callee_saved, &reg[6], sizeof(fr->callee_saved));
				fr->ret_pc = pc;
				fr->is_loop = false;
				reg[BPF_REG_FP] = (uint64_t)(uintptr_t)(stack + (depth + 1) * BPF_STACK_SIZE);
				if (checked)
					cs->depth = depth;
				pc += in->imm;
			} else if (in->imm == NB_HELPER_LOOP && prog->helpers &&
				   prog->helpers[NB_HELPER_LOOP]) {
				/* bpf_loop(nr_loops, callback, ctx, flags), results as in Linux */
				uint32_t n = (uint32_t)reg[1];
				if (reg[4] != 0 || n > NB_BPF_LOOP_MAX || n == 0) {
					reg[0] = reg[4] ? (uint64_t)-EINVAL
							: n ? (uint64_t)-E2BIG : 0;
					break;
				}
				if (!vm_is_callback(prog, reg[2], checked)) {
					vm_fault_set(fault, VM_FAULT_BAD_HELPER, pc - 1, reg[2],
						     "bpf_loop callback %llu is not a function of the "
						     "program", (unsigned long long)reg[2]);
					goto out_fault;
				}
				if (depth + 1 >= BPF_MAX_CALL_DEPTH) {
					vm_fault_set(fault, VM_FAULT_CALL_DEPTH, pc - 1, 0,
						     "call depth exceeds %d frames",
						     BPF_MAX_CALL_DEPTH);
					goto out_fault;
				}
				struct vm_frame *fr = &frames[depth++];
				memcpy(fr->callee_saved, &reg[6], sizeof(fr->callee_saved));
				fr->ret_pc = pc;
				fr->is_loop = true;
				fr->loop_n = n;
				fr->loop_i = 0;
				fr->loop_cb = reg[2];
				fr->loop_ctx = reg[3];
				reg[BPF_REG_FP] = (uint64_t)(uintptr_t)(stack + (depth + 1) * BPF_STACK_SIZE);
				if (checked)
					cs->depth = depth;
				reg[1] = 0;
				reg[2] = fr->loop_ctx;
				pc = (size_t)fr->loop_cb;
			} else {
				uint32_t id = (uint32_t)in->imm;
				vm_helper_fn fn = id < NB_HELPER_MAX && prog->helpers ? prog->helpers[id]
										     : NULL;
				if (!fn) {
					vm_fault_set(fault, VM_FAULT_BAD_HELPER, pc - 1, 0,
						     "call to unavailable helper %d", in->imm);
					goto out_fault;
				}
				if (checked &&
				    vm_check_helper_args(cs, prog, (int32_t)id, reg, pc - 1, fault))
					goto out_fault;
				uint64_t arg1 = reg[1];
				reg[0] = fn(reg[1], reg[2], reg[3], reg[4], reg[5]);
				if (checked)
					vm_check_helper_result(cs, prog, (int32_t)id, arg1, reg[0]);
			}
			break;
		case BPF_JMP | BPF_EXIT:
			if (depth == 0) {
				*r0_out = reg[0];
				if (checked)
					cs->chk->insns_executed += executed;
				return 0;
			}
			if (frames[depth - 1].is_loop) {
				struct vm_frame *fr = &frames[depth - 1];
				uint32_t i = ++fr->loop_i;
				if (reg[0] == 0 && i < fr->loop_n) { /* next iteration, same frame */
					reg[1] = i;
					reg[2] = fr->loop_ctx;
					pc = (size_t)fr->loop_cb;
					break;
				}
				reg[0] = reg[0] ? i : fr->loop_n; /* iterations run */
			}
			depth--;
			memcpy(&reg[6], frames[depth].callee_saved, sizeof(frames[depth].callee_saved));
			pc = frames[depth].ret_pc;
			reg[BPF_REG_FP] = (uint64_t)(uintptr_t)(stack + (depth + 1) * BPF_STACK_SIZE);
			if (checked)
				cs->depth = depth;
			break;
		default:
			goto bad_insn;
		}
	}
bad_insn:
	vm_fault_set(fault, VM_FAULT_BAD_INSN, pc - 1, 0, "invalid instruction (opcode 0x%02x)",
		     insns[pc - 1].code);
out_fault:
	if (checked)
		cs->chk->insns_executed += executed;
	return -EFAULT;
#undef VM_CHECK
}

static int vm_run_unchecked(const struct vm_program *prog, uint64_t a1, uint64_t a2,
			    uint64_t *r0, struct vm_fault *fault)
{
	return vm_run_loop(prog, a1, a2, r0, NULL, fault, false);
}

static int vm_run_checked(const struct vm_program *prog, uint64_t a1, uint64_t a2, uint64_t *r0,
			  struct vm_checked *chk, struct vm_fault *fault)
{
	struct vm_check_state cs;
	cs.chk = chk;
	cs.base_cnt = chk->region_cnt;
	cs.ring_next = cs.base_cnt;
	cs.depth = 0;
	int r = vm_run_loop(prog, a1, a2, r0, &cs, fault, true);
	chk->region_cnt = cs.base_cnt; /* drop this run's map-value regions */
	return r;
}

int vm_interp_run(const struct vm_program *prog, uint64_t a1, uint64_t a2, uint64_t *r0,
		  struct vm_checked *chk, struct vm_fault *fault)
{
	uint64_t dummy;
	if (fault)
		fault->kind = VM_FAULT_NONE;
	if (!r0)
		r0 = &dummy;
	if (!prog || !prog->insns || prog->insn_cnt == 0) {
		vm_fault_set(fault, VM_FAULT_PC_OOB, 0, 0, "empty program");
		return -EFAULT;
	}
	if (chk)
		return vm_run_checked(prog, a1, a2, r0, chk, fault);
	return vm_run_unchecked(prog, a1, a2, r0, fault);
}
