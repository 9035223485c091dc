/* The interpreter loop, included twice by vm_interp.c: once as vm_run_unchecked
 * (VM_CHECKED 0) and once as vm_run_checked_loop (VM_CHECKED 1). Two real functions rather
 * than one always-inline template: each needs its own table of label addresses.
 *
 * Dispatch: with GCC/clang, direct threading through a 256-entry table of label addresses
 * indexed by the opcode byte; every handler ends with its own fetch and indirect jump, so
 * the branch predictor sees one jump per handler and no bounds check or loop back-edge runs
 * between instructions. Elsewhere (or with -DNCCLBPF_INTERP_SWITCH, which a test build
 * uses) the same handlers are the cases of one switch. The unchecked loop does no work per
 * instruction beyond its handler: isa_validate and the verifier proved the jump targets and
 * the end of the program; the checked loop checks the pc, the budget and every access. */

static int VM_LOOP_NAME(const struct vm_program *prog, uint64_t a1, uint64_t a2,
			uint64_t *r0_out, struct vm_check_state *cs, struct vm_fault *fault)
{
	const struct bpf_insn *const insns = prog->insns;
	const size_t cnt = prog->insn_cnt;
	const struct bpf_insn *ip = insns;
	uint64_t reg[BPF_NREGS] = { 0 };
	struct vm_frame frames[BPF_MAX_CALL_DEPTH];
	uint8_t stack[BPF_MAX_CALL_DEPTH * BPF_STACK_SIZE] __attribute__((aligned(16)));
	unsigned depth = 0;
	uint64_t budget = 0, executed = 0;

	(void)cs, (void)cnt, (void)budget;
	if (VM_CHECKED) {
		memset(stack, 0, sizeof(stack)); /* deterministic runs for differential tests */
		cs->stack_lo = (uint64_t)(uintptr_t)stack;
		cs->depth = 0;
		budget = cs->chk->insn_budget;
	}
	reg[1] = a1;
	reg[2] = a2;
	reg[BPF_REG_FP] = (uint64_t)(uintptr_t)(stack + BPF_STACK_SIZE);

#define PC ((size_t)(ip - insns))
#define D reg[ip->dst_reg]
#define S reg[ip->src_reg]
#define IMM ((uint64_t)(int64_t)ip->imm)
#define IMM32 ((uint32_t)ip->imm)
#define VM_MEM_CHECK(addr, size, write)                                                   \
	do {                                                                              \
		if (VM_CHECKED && vm_check_mem(cs, PC, (addr), (size), (write), fault))   \
			goto out_fault;                                                   \
	} while (0)
/* checked mode, before every instruction: inside the program, within the budget */
#define VM_PRE_CHECK()                                                                    \
	do {                                                                              \
		if (VM_CHECKED) {                                                         \
			if ((uintptr_t)ip - (uintptr_t)insns >= cnt * sizeof(*insns)) {   \
				vm_fault_set(fault, VM_FAULT_PC_OOB, PC, 0,               \
					     "execution ran past the end of the program " \
					     "(%zu insns)", cnt);                         \
				goto out_fault;                                           \
			}                                                                 \
			if (budget && executed >= budget) {                               \
				vm_fault_set(fault, VM_FAULT_BUDGET, PC, 0,               \
					     "instruction budget of %llu exhausted",      \
					     (unsigned long long)budget);                 \
				goto out_fault;                                           \
			}                                                                 \
			executed++;                                                       \
		}                                                                         \
	} while (0)

#if VM_THREADED
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#ifdef __clang__
#pragma GCC diagnostic ignored "-Winitializer-overrides"
#else
#pragma GCC diagnostic ignored "-Woverride-init"
#endif
	static const void *const labels[256] = {
		[0 ... 255] = &&bad_insn,
#define VM_OP(name, code, ...) [code] = &&op_##name,
#include "vm/vm_interp_ops.h"
#undef VM_OP
	};
#define VM_DISPATCH()                                                                     \
	do {                                                                              \
		VM_PRE_CHECK();                                                           \
		goto *labels[ip->code];                                                   \
	} while (0)
#define VM_OP(name, code, ...)                                                            \
	op_##name : { __VA_ARGS__ }                                                       \
	ip++;                                                                             \
	VM_DISPATCH();
	VM_DISPATCH();
#include "vm/vm_interp_ops.h"
#undef VM_OP
vm_next:
	ip++;
	VM_DISPATCH();
#pragma GCC diagnostic pop
#else /* portable: one switch */
	goto vm_dispatch;
vm_next:
	ip++;
vm_dispatch:
	VM_PRE_CHECK();
	switch (ip->code) {
#define VM_OP(name, code, ...)                                                            \
	case code: { __VA_ARGS__ }                                                        \
		goto vm_next;
#include "vm/vm_interp_ops.h"
#undef VM_OP
	default:
		goto bad_insn;
	}
#endif
bad_insn:
	vm_fault_set(fault, VM_FAULT_BAD_INSN, PC, 0, "invalid instruction (opcode 0x%02x)",
		     ip->code);
out_fault:
	if (VM_CHECKED)
		cs->chk->insns_executed += executed;
	return -EFAULT;
#undef PC
#undef D
#undef S
#undef IMM
#undef IMM32
#undef VM_MEM_CHECK
#undef VM_PRE_CHECK
#undef VM_DISPATCH
}
