/* The interpreter's instruction handlers, one VM_OP(name, opcode, body) per opcode.
 * No include guard: vm_interp_loop.h includes this list twice, defining VM_OP first to
 * build the dispatch table (computed goto: opcode -> label) and then to emit the handlers
 * (a label, or a `case` in the portable switch build). Each body runs with `ip` at its
 * instruction; the next instruction is dispatched after it (ip + 1), so a jump adds its
 * offset to ip. Semantics: RFC 9669 (vm.h). Helpers used here: D (destination register),
 * S (source register), IMM (immediate, sign-extended), IMM32, PC (index of ip), VM_MEM_CHECK
 * (checked mode only), vm_sdiv* / vm_smod* (vm_interp.c). */

#ifndef VM_INTERP_OPS_HELPERS
#define VM_INTERP_OPS_HELPERS
/* The four encodings of a conditional jump: 64/32-bit, immediate/register. */
#define VM_JCC(name, OP, EXPR)                                                          \
	VM_OP(name##_k, BPF_JMP | OP | BPF_K, {                                         \
		uint64_t l = D, r = IMM;                                                \
		int64_t sl = (int64_t)l, sr = (int64_t)r;                               \
		(void)sl, (void)sr;                                                     \
		if (EXPR)                                                               \
			ip += ip->off;                                                  \
	})                                                                              \
	VM_OP(name##_x, BPF_JMP | OP | BPF_X, {                                         \
		uint64_t l = D, r = S;                                                  \
		int64_t sl = (int64_t)l, sr = (int64_t)r;                               \
		(void)sl, (void)sr;                                                     \
		if (EXPR)                                                               \
			ip += ip->off;                                                  \
	})                                                                              \
	VM_OP(name##32_k, BPF_JMP32 | OP | BPF_K, {                                     \
		uint32_t l = (uint32_t)D, r = IMM32;                                    \
		int32_t sl = (int32_t)l, sr = (int32_t)r;                               \
		(void)sl, (void)sr;                                                     \
		if (EXPR)                                                               \
			ip += ip->off;                                                  \
	})                                                                              \
	VM_OP(name##32_x, BPF_JMP32 | OP | BPF_X, {                                     \
		uint32_t l = (uint32_t)D, r = (uint32_t)S;                              \
		int32_t sl = (int32_t)l, sr = (int32_t)r;                               \
		(void)sl, (void)sr;                                                     \
		if (EXPR)                                                               \
			ip += ip->off;                                                  \
	})
/* Loads (zero- and sign-extending) and stores of one size. */
#define VM_LDX(name, SZ, T, ST)                                                         \
	VM_OP(ldx_##name, BPF_LDX | BPF_MEM | SZ, {                                     \
		uint64_t a = S + (uint64_t)(int64_t)ip->off;                            \
		VM_MEM_CHECK(a, sizeof(T), false);                                      \
		D = VM_LOAD(T, a);                                                      \
	})                                                                              \
	VM_OP(ldxsx_##name, BPF_LDX | BPF_MEMSX | SZ, {                                 \
		uint64_t a = S + (uint64_t)(int64_t)ip->off;                            \
		VM_MEM_CHECK(a, sizeof(T), false);                                      \
		D = (uint64_t)(int64_t)(ST)VM_LOAD(T, a);                               \
	})
#define VM_ST(name, SZ, T)                                                              \
	VM_OP(st_##name, BPF_ST | BPF_MEM | SZ, {                                       \
		uint64_t a = D + (uint64_t)(int64_t)ip->off;                            \
		VM_MEM_CHECK(a, sizeof(T), true);                                       \
		VM_STORE(T, a, IMM);                                                    \
	})                                                                              \
	VM_OP(stx_##name, BPF_STX | BPF_MEM | SZ, {                                     \
		uint64_t a = D + (uint64_t)(int64_t)ip->off;                            \
		VM_MEM_CHECK(a, sizeof(T), true);                                       \
		VM_STORE(T, a, S);                                                      \
	})
#define VM_ATOMIC(name, SZ, T)                                                          \
	VM_OP(atomic_##name, BPF_STX | BPF_ATOMIC | SZ, {                               \
		uint64_t a = D + (uint64_t)(int64_t)ip->off;                            \
		VM_MEM_CHECK(a, sizeof(T), true);                                       \
		T *p = (T *)(uintptr_t)a, v = (T)S;                                     \
		uint64_t *fetch = &S;                                                   \
		switch (ip->imm) {                                                      \
		case BPF_ADD: __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); break;        \
		case BPF_OR: __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); break;          \
		case BPF_AND: __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); break;        \
		case BPF_XOR: __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); break;        \
		case BPF_ADD | BPF_FETCH:                                               \
			*fetch = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);            \
			break;                                                          \
		case BPF_OR | BPF_FETCH:                                                \
			*fetch = __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);             \
			break;                                                          \
		case BPF_AND | BPF_FETCH:                                               \
			*fetch = __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);            \
			break;                                                          \
		case BPF_XOR | BPF_FETCH:                                               \
			*fetch = __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);            \
			break;                                                          \
		case BPF_XCHG: *fetch = __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); break; \
		case BPF_CMPXCHG: {                                                     \
			T expected = (T)reg[0];                                         \
			__atomic_compare_exchange_n(p, &expected, v, false,             \
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
			reg[0] = expected; /* old value, zero-extended for W */         \
			break;                                                          \
		}                                                                       \
		default: goto bad_insn;                                                 \
		}                                                                       \
	})
#endif /* VM_INTERP_OPS_HELPERS */

/* ---- ALU64 ---- */
VM_OP(add64_k, BPF_ALU64 | BPF_ADD | BPF_K, D += IMM;)
VM_OP(add64_x, BPF_ALU64 | BPF_ADD | BPF_X, D += S;)
VM_OP(sub64_k, BPF_ALU64 | BPF_SUB | BPF_K, D -= IMM;)
VM_OP(sub64_x, BPF_ALU64 | BPF_SUB | BPF_X, D -= S;)
VM_OP(mul64_k, BPF_ALU64 | BPF_MUL | BPF_K, D *= IMM;)
VM_OP(mul64_x, BPF_ALU64 | BPF_MUL | BPF_X, D *= S;)
VM_OP(div64_k, BPF_ALU64 | BPF_DIV | BPF_K, {
	uint64_t s = IMM;
	D = ip->off ? vm_sdiv64(D, s) : s ? D / s : 0;
})
VM_OP(div64_x, BPF_ALU64 | BPF_DIV | BPF_X, {
	uint64_t s = S;
	D = ip->off ? vm_sdiv64(D, s) : s ? D / s : 0;
})
VM_OP(mod64_k, BPF_ALU64 | BPF_MOD | BPF_K, {
	uint64_t s = IMM;
	D = ip->off ? vm_smod64(D, s) : s ? D % s : D;
})
VM_OP(mod64_x, BPF_ALU64 | BPF_MOD | BPF_X, {
	uint64_t s = S;
	D = ip->off ? vm_smod64(D, s) : s ? D % s : D;
})
VM_OP(or64_k, BPF_ALU64 | BPF_OR | BPF_K, D |= IMM;)
VM_OP(or64_x, BPF_ALU64 | BPF_OR | BPF_X, D |= S;)
VM_OP(and64_k, BPF_ALU64 | BPF_AND | BPF_K, D &= IMM;)
VM_OP(and64_x, BPF_ALU64 | BPF_AND | BPF_X, D &= S;)
VM_OP(xor64_k, BPF_ALU64 | BPF_XOR | BPF_K, D ^= IMM;)
VM_OP(xor64_x, BPF_ALU64 | BPF_XOR | BPF_X, D ^= S;)
VM_OP(lsh64_k, BPF_ALU64 | BPF_LSH | BPF_K, D <<= (IMM & 63);)
VM_OP(lsh64_x, BPF_ALU64 | BPF_LSH | BPF_X, D <<= (S & 63);)
VM_OP(rsh64_k, BPF_ALU64 | BPF_RSH | BPF_K, D >>= (IMM & 63);)
VM_OP(rsh64_x, BPF_ALU64 | BPF_RSH | BPF_X, D >>= (S & 63);)
VM_OP(arsh64_k, BPF_ALU64 | BPF_ARSH | BPF_K, D = (uint64_t)((int64_t)D >> (IMM & 63));)
VM_OP(arsh64_x, BPF_ALU64 | BPF_ARSH | BPF_X, D = (uint64_t)((int64_t)D >> (S & 63));)
VM_OP(neg64, BPF_ALU64 | BPF_NEG, D = 0 - D;)
VM_OP(mov64_k, BPF_ALU64 | BPF_MOV | BPF_K, D = IMM;)
VM_OP(mov64_x, BPF_ALU64 | BPF_MOV | BPF_X, {
	uint64_t s = S;
	switch (ip->off) {
	case 8: D = (uint64_t)(int64_t)(int8_t)s; break;
	case 16: D = (uint64_t)(int64_t)(int16_t)s; break;
	case 32: D = (uint64_t)(int64_t)(int32_t)s; break;
	default: D = s; break;
	}
})
VM_OP(bswap64, BPF_ALU64 | BPF_END | BPF_K, { /* unconditional */
	D = ip->imm == 16   ? __builtin_bswap16((uint16_t)D)
	    : ip->imm == 32 ? __builtin_bswap32((uint32_t)D)
			    : __builtin_bswap64(D);
})

/* ---- ALU (32-bit, results zero-extended) ---- */
VM_OP(add32_k, BPF_ALU | BPF_ADD | BPF_K, D = (uint32_t)((uint32_t)D + IMM32);)
VM_OP(add32_x, BPF_ALU | BPF_ADD | BPF_X, D = (uint32_t)((uint32_t)D + (uint32_t)S);)
VM_OP(sub32_k, BPF_ALU | BPF_SUB | BPF_K, D = (uint32_t)((uint32_t)D - IMM32);)
VM_OP(sub32_x, BPF_ALU | BPF_SUB | BPF_X, D = (uint32_t)((uint32_t)D - (uint32_t)S);)
VM_OP(mul32_k, BPF_ALU | BPF_MUL | BPF_K, D = (uint32_t)((uint32_t)D * IMM32);)
VM_OP(mul32_x, BPF_ALU | BPF_MUL | BPF_X, D = (uint32_t)((uint32_t)D * (uint32_t)S);)
VM_OP(div32_k, BPF_ALU | BPF_DIV | BPF_K, {
	uint32_t s = IMM32;
	D = ip->off ? vm_sdiv32((uint32_t)D, s) : s ? (uint32_t)D / s : 0;
})
VM_OP(div32_x, BPF_ALU | BPF_DIV | BPF_X, {
	uint32_t s = (uint32_t)S;
	D = ip->off ? vm_sdiv32((uint32_t)D, s) : s ? (uint32_t)D / s : 0;
})
VM_OP(mod32_k, BPF_ALU | BPF_MOD | BPF_K, {
	uint32_t s = IMM32;
	D = ip->off ? vm_smod32((uint32_t)D, s) : s ? (uint32_t)D % s : (uint32_t)D;
})
VM_OP(mod32_x, BPF_ALU | BPF_MOD | BPF_X, {
	uint32_t s = (uint32_t)S;
	D = ip->off ? vm_smod32((uint32_t)D, s) : s ? (uint32_t)D % s : (uint32_t)D;
})
VM_OP(or32_k, BPF_ALU | BPF_OR | BPF_K, D = (uint32_t)D | IMM32;)
VM_OP(or32_x, BPF_ALU | BPF_OR | BPF_X, D = (uint32_t)(D | S);)
VM_OP(and32_k, BPF_ALU | BPF_AND | BPF_K, D = (uint32_t)D & IMM32;)
VM_OP(and32_x, BPF_ALU | BPF_AND | BPF_X, D = (uint32_t)(D & S);)
VM_OP(xor32_k, BPF_ALU | BPF_XOR | BPF_K, D = (uint32_t)D ^ IMM32;)
VM_OP(xor32_x, BPF_ALU | BPF_XOR | BPF_X, D = (uint32_t)(D ^ S);)
VM_OP(lsh32_k, BPF_ALU | BPF_LSH | BPF_K, D = (uint32_t)((uint32_t)D << (IMM32 & 31));)
VM_OP(lsh32_x, BPF_ALU | BPF_LSH | BPF_X, D = (uint32_t)((uint32_t)D << (S & 31));)
VM_OP(rsh32_k, BPF_ALU | BPF_RSH | BPF_K, D = (uint32_t)D >> (IMM32 & 31);)
VM_OP(rsh32_x, BPF_ALU | BPF_RSH | BPF_X, D = (uint32_t)D >> (S & 31);)
VM_OP(arsh32_k, BPF_ALU | BPF_ARSH | BPF_K,
      D = (uint32_t)((int32_t)(uint32_t)D >> (IMM32 & 31));)
VM_OP(arsh32_x, BPF_ALU | BPF_ARSH | BPF_X,
      D = (uint32_t)((int32_t)(uint32_t)D >> (S & 31));)
VM_OP(neg32, BPF_ALU | BPF_NEG, D = (uint32_t)(0u - (uint32_t)D);)
VM_OP(mov32_k, BPF_ALU | BPF_MOV | BPF_K, D = IMM32;)
VM_OP(mov32_x, BPF_ALU | BPF_MOV | BPF_X, {
	uint64_t s = S;
	switch (ip->off) {
	case 8: D = (uint32_t)(int32_t)(int8_t)s; break;
	case 16: D = (uint32_t)(int32_t)(int16_t)s; break;
	default: D = (uint32_t)s; break;
	}
})
VM_OP(le, BPF_ALU | BPF_END | BPF_TO_LE, { /* host is little-endian: truncate */
	D = ip->imm == 16 ? (uint16_t)D : ip->imm == 32 ? (uint32_t)D : D;
})
VM_OP(be, BPF_ALU | BPF_END | BPF_TO_BE, {
	D = ip->imm == 16   ? __builtin_bswap16((uint16_t)D)
	    : ip->imm == 32 ? __builtin_bswap32((uint32_t)D)
			    : __builtin_bswap64(D);
})

/* ---- loads, stores, atomics ---- */
VM_LDX(b, BPF_B, uint8_t, int8_t)
VM_LDX(h, BPF_H, uint16_t, int16_t)
VM_LDX(w, BPF_W, uint32_t, int32_t)
VM_OP(ldx_dw, BPF_LDX | BPF_MEM | BPF_DW, {
	uint64_t a = S + (uint64_t)(int64_t)ip->off;
	VM_MEM_CHECK(a, 8, false);
	D = VM_LOAD(uint64_t, a);
})
VM_ST(b, BPF_B, uint8_t)
VM_ST(h, BPF_H, uint16_t)
VM_ST(w, BPF_W, uint32_t)
VM_ST(dw, BPF_DW, uint64_t)
VM_ATOMIC(w, BPF_W, uint32_t)
VM_ATOMIC(dw, BPF_DW, uint64_t)
VM_OP(lddw, BPF_LDDW, {
	if (VM_CHECKED && PC + 1 >= cnt)
		goto bad_insn;
	D = (uint64_t)IMM32 | (uint64_t)(uint32_t)ip[1].imm << 32;
	ip++;
})

/* ---- jumps ---- */
VM_OP(ja, BPF_JMP | BPF_JA, ip += ip->off;)
VM_OP(ja32, BPF_JMP32 | BPF_JA, ip += ip->imm;)
VM_JCC(jeq, BPF_JEQ, l == r)
VM_JCC(jne, BPF_JNE, l != r)
VM_JCC(jgt, BPF_JGT, l > r)
VM_JCC(jge, BPF_JGE, l >= r)
VM_JCC(jlt, BPF_JLT, l < r)
VM_JCC(jle, BPF_JLE, l <= r)
VM_JCC(jset, BPF_JSET, (l & r) != 0)
VM_JCC(jsgt, BPF_JSGT, sl > sr)
VM_JCC(jsge, BPF_JSGE, sl >= sr)
VM_JCC(jslt, BPF_JSLT, sl < sr)
VM_JCC(jsle, BPF_JSLE, sl <= sr)

/* ---- calls: local functions, bpf_loop, helpers ---- */
VM_OP(call, BPF_JMP | BPF_CALL, {
	if (ip->src_reg == BPF_PSEUDO_CALL) {
		if (depth + 1 >= BPF_MAX_CALL_DEPTH) {
			vm_fault_set(fault, VM_FAULT_CALL_DEPTH, PC, 0, "call depth exceeds %d frames",
				     BPF_MAX_CALL_DEPTH);
			goto out_fault;
		}
		struct vm_frame *fr = &frames[depth++];
		memcpy(fr->callee_saved, &reg[6], sizeof(fr->callee_saved));
		fr->ret = ip;
		fr->is_loop = false;
		reg[BPF_REG_FP] = (uint64_t)(uintptr_t)(stack + (depth + 1) * BPF_STACK_SIZE);
		if (VM_CHECKED)
			cs->depth = depth;
		ip += ip->imm;
	} else if (ip->imm == NB_HELPER_LOOP && prog->helpers && prog->helpers[NB_HELPER_LOOP]) {
		/* bpf_loop(nr_loops, callback, ctx, flags), results as in Linux */
		uint32_t n = (uint32_t)reg[1];
		if (reg[4] != 0 || n > NB_BPF_LOOP_MAX || n == 0) {
			reg[0] = reg[4] ? (uint64_t)-EINVAL : n ? (uint64_t)-E2BIG : 0;
		} else {
			if (!vm_is_callback(prog, reg[2], VM_CHECKED)) {
				vm_fault_set(fault, VM_FAULT_BAD_HELPER, PC, reg[2],
					     "bpf_loop callback %llu is not a function of the "
					     "program", (unsigned long long)reg[2]);
				goto out_fault;
			}
			if (depth + 1 >= BPF_MAX_CALL_DEPTH) {
				vm_fault_set(fault, VM_FAULT_CALL_DEPTH, PC, 0,
					     "call depth exceeds %d frames", BPF_MAX_CALL_DEPTH);
				goto out_fault;
			}
			struct vm_frame *fr = &frames[depth++];
			memcpy(fr->callee_saved, &reg[6], sizeof(fr->callee_saved));
			fr->ret = ip;
			fr->is_loop = true;
			fr->loop_n = n;
			fr->loop_i = 0;
			fr->loop_cb = reg[2];
			fr->loop_ctx = reg[3];
			reg[BPF_REG_FP] = (uint64_t)(uintptr_t)(stack + (depth + 1) * BPF_STACK_SIZE);
			if (VM_CHECKED)
				cs->depth = depth;
			reg[1] = 0;
			reg[2] = fr->loop_ctx;
			ip = insns + fr->loop_cb - 1; /* the callback is next */
		}
	} else {
		uint32_t id = (uint32_t)ip->imm;
		vm_helper_fn fn = id < NB_HELPER_MAX && prog->helpers ? prog->helpers[id] : NULL;
		if (!fn) {
			vm_fault_set(fault, VM_FAULT_BAD_HELPER, PC, 0, "call to unavailable helper %d",
				     ip->imm);
			goto out_fault;
		}
		if (VM_CHECKED && vm_check_helper_args(cs, prog, (int32_t)id, reg, PC, fault))
			goto out_fault;
		uint64_t arg1 = reg[1];
		reg[0] = fn(reg[1], reg[2], reg[3], reg[4], reg[5]);
		if (VM_CHECKED)
			vm_check_helper_result(cs, prog, (int32_t)id, arg1, reg[0]);
		(void)arg1;
	}
})
VM_OP(exit, BPF_JMP | BPF_EXIT, {
	if (depth == 0) {
		*r0_out = reg[0];
		if (VM_CHECKED)
			cs->chk->insns_executed += executed;
		return 0;
	}
	struct vm_frame *fr = &frames[depth - 1];
	if (fr->is_loop) {
		uint32_t i = ++fr->loop_i;
		if (reg[0] == 0 && i < fr->loop_n) { /* next iteration, same frame */
			reg[1] = i;
			reg[2] = fr->loop_ctx;
			ip = insns + fr->loop_cb - 1;
			goto vm_next;
		}
		reg[0] = reg[0] ? i : fr->loop_n; /* iterations run */
	}
	depth--;
	memcpy(&reg[6], fr->callee_saved, sizeof(fr->callee_saved));
	ip = fr->ret;
	reg[BPF_REG_FP] = (uint64_t)(uintptr_t)(stack + (depth + 1) * BPF_STACK_SIZE);
	if (VM_CHECKED)
		cs->depth = depth;
})
