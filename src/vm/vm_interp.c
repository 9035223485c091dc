/* The interpreter: reference semantics of the runtime (RFC 9669 including v4).
 *
 * One set of handlers (vm_interp_ops.h), one loop (vm_interp_loop.h), compiled twice: the
 * unchecked loop has no per-instruction bookkeeping (it relies on isa_validate: jump
 * targets inside the program, last instruction exit/ja), the checked loop bounds-checks the
 * pc, counts the budget and checks every memory access (vm_interp_checked.c). Call depth and
 * helper ids are checked in both: a program must never overflow a host buffer or call
 * through a NULL pointer. Dispatch is direct-threaded (computed goto) with GCC and clang,
 * a switch elsewhere or with -DNCCLBPF_INTERP_SWITCH (tests build both).
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

#if (defined(__GNUC__) || defined(__clang__)) && !defined(NCCLBPF_INTERP_SWITCH)
#define VM_THREADED 1
#else
#define VM_THREADED 0
#endif

struct vm_frame {
	uint64_t callee_saved[4]; /* r6..r9 of the caller */
	const struct bpf_insn *ret; /* the call instruction */
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

#define VM_CHECKED 0
#define VM_LOOP_NAME vm_run_unchecked
#include "vm/vm_interp_loop.h"
#undef VM_CHECKED
#undef VM_LOOP_NAME
#define VM_CHECKED 1
#define VM_LOOP_NAME vm_run_checked_loop
#include "vm/vm_interp_loop.h"
#undef VM_CHECKED
#undef VM_LOOP_NAME

static int vm_run_checked(const struct vm_program *prog, uint64_t a1, uint64_t a2, uint64_t *r0,
			  struct vm_checked *chk, struct vm_fault *fault)
{
	struct vm_check_state cs;
	cs.chk = chk;
	cs.base_cnt = chk->region_cnt;
	cs.ring_next = cs.base_cnt;
	cs.depth = 0;
	int r = vm_run_checked_loop(prog, a1, a2, r0, &cs, fault);
	chk->region_cnt = cs.base_cnt; /* drop this run's map-value regions */
	return r;
}

/* Everything but the common unchecked call with a result pointer. */
static __attribute__((noinline)) int vm_interp_run_general(const struct vm_program *prog,
							   uint64_t a1, uint64_t a2, uint64_t *r0,
							   struct vm_checked *chk,
							   struct vm_fault *fault)
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
	return vm_run_unchecked(prog, a1, a2, r0, NULL, fault);
}

/* The unchecked run with a result pointer is a tail call of the loop (the runtime's and
 * the plugin's interpreter path): a few instructions per call (issue 24, interpreter cost). */
int vm_interp_run(const struct vm_program *prog, uint64_t a1, uint64_t a2, uint64_t *r0,
		  struct vm_checked *chk, struct vm_fault *fault)
{
	if (__builtin_expect(!chk && r0 && prog && prog->insn_cnt && prog->insns, 1)) {
		if (fault)
			fault->kind = VM_FAULT_NONE;
		return vm_run_unchecked(prog, a1, a2, r0, NULL, fault);
	}
	return vm_interp_run_general(prog, a1, a2, r0, chk, fault);
}
