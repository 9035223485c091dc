/* Checked mode: out-of-bounds by one byte on the context, the stack and a map value
 * returned by a helper, writes to read-only regions, NULL dereferences, the instruction
 * budget, dead stack frames, and the precision of the messages. */
#include <errno.h>
#include <inttypes.h>

#include "maps/map.h"
#include "vm/vm_test_harness.h"

static struct vm_fault fault;
static uint64_t r0;

static int run_checked(const struct bpf_insn *insns, size_t n, struct vm_checked *chk,
		       uint64_t a1)
{
	struct vm_program p = { insns, n, test_helpers, test_protos };
	char err[200];
	CHECK(isa_validate(insns, n, err, sizeof(err)) == 0);
	memset(&fault, 0, sizeof(fault));
	return vm_interp_run(&p, a1, 0, &r0, chk, &fault);
}
#define RUN_CHECKED(chk, a1, ...) run_checked(PROG(__VA_ARGS__), PROG_LEN(__VA_ARGS__), chk, a1)

static void test_ctx_bounds(void)
{
	uint8_t ctx[48] = { 0 };
	char want[200];
	struct vm_checked chk;
	memset(&chk, 0, sizeof(chk));
	CHECK(vm_checked_add_region(&chk, (uint64_t)(uintptr_t)ctx, 48, true, "context") == 0);
	uint64_t base = (uint64_t)(uintptr_t)ctx;
	CHECK(RUN_CHECKED(&chk, base, LDX(BPF_W, 0, 1, 44), EXIT()) == 0);
	CHECK(RUN_CHECKED(&chk, base, LDX(BPF_DW, 0, 1, 40), ST(BPF_DW, 1, 40, 1), EXIT()) == 0);
	/* one byte past the end */
	CHECK(RUN_CHECKED(&chk, base, MOV64_K(0, 0), LDX(BPF_W, 0, 1, 45), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_MEM_OOB && fault.pc == 1 && fault.size == 4);
	CHECK(fault.addr == base + 45);
	snprintf(want, sizeof(want),
		 "insn 1: 4-byte read at 0x%" PRIx64 " is 1 bytes past the end of context (48 "
		 "bytes at 0x%" PRIx64 ")",
		 base + 45, base);
	CHECK_STR_CONTAINS(fault.msg, want);
	/* the brief's example: 3 bytes past on a write */
	CHECK(RUN_CHECKED(&chk, base, MOV64_K(0, 0), MOV64_K(0, 0), STX(BPF_W, 1, 0, 47), EXIT()) ==
	      -EFAULT);
	snprintf(want, sizeof(want),
		 "insn 2: 4-byte write at 0x%" PRIx64 " is 3 bytes past the end of context",
		 base + 47);
	CHECK_STR_CONTAINS(fault.msg, want);
	/* one byte before the start */
	CHECK(RUN_CHECKED(&chk, base, LDX(BPF_B, 0, 1, -1), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_MEM_OOB);
	CHECK_STR_CONTAINS(fault.msg, "1-byte read at");
	CHECK_STR_CONTAINS(fault.msg, "starts 1 bytes before context");
	/* far away */
	CHECK(RUN_CHECKED(&chk, base, ALU64_K(BPF_ADD, 1, 100000), ST(BPF_B, 1, 0, 1), EXIT()) ==
	      -EFAULT);
	CHECK_STR_CONTAINS(fault.msg, "is not inside any region (nearest: ");
	/* region count restored after the run */
	CHECK(chk.region_cnt == 1);
	/* read-only context */
	chk.regions[0].writable = false;
	CHECK(RUN_CHECKED(&chk, base, LDX(BPF_W, 0, 1, 0), EXIT()) == 0);
	CHECK(RUN_CHECKED(&chk, base, ST(BPF_W, 1, 4, 0), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_MEM_READONLY);
	CHECK_STR_CONTAINS(fault.msg, "insn 0: 4-byte write at");
	CHECK_STR_CONTAINS(fault.msg, "into read-only context (48 bytes at");
	CHECK(RUN_CHECKED(&chk, base, MOV64_K(2, 1), ATOMIC(BPF_DW, 1, 2, 8, BPF_ADD), EXIT()) ==
	      -EFAULT);
	CHECK(fault.kind == VM_FAULT_MEM_READONLY && fault.pc == 1);
	/* full table */
	struct vm_checked full;
	memset(&full, 0, sizeof(full));
	for (int i = 0; i < VM_MAX_REGIONS; i++)
		CHECK(vm_checked_add_region(&full, 0x10000 + i, 1, true, "x") == 0);
	CHECK(vm_checked_add_region(&full, 0, 1, true, "x") == -ENOSPC);
}

static void test_stack_bounds(void)
{
	struct vm_checked chk;
	memset(&chk, 0, sizeof(chk));
	CHECK(RUN_CHECKED(&chk, 0, ST(BPF_DW, 10, -512, 1), LDX(BPF_B, 0, 10, -1), EXIT()) == 0);
	CHECK(RUN_CHECKED(&chk, 0, ST(BPF_DW, 10, -513, 1), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_MEM_OOB);
	CHECK_STR_CONTAINS(fault.msg, "8-byte write at");
	CHECK_STR_CONTAINS(fault.msg, "starts 1 bytes before stack frame 0 (512 bytes at");
	CHECK(RUN_CHECKED(&chk, 0, LDX(BPF_H, 0, 10, -1), EXIT()) == -EFAULT);
	CHECK_STR_CONTAINS(fault.msg, "2-byte read at");
	CHECK_STR_CONTAINS(fault.msg, "is 1 bytes past the end of stack frame 0");
	CHECK(RUN_CHECKED(&chk, 0, LDX(BPF_B, 0, 10, 0), EXIT()) == -EFAULT);
	CHECK_STR_CONTAINS(fault.msg, "is 1 bytes past the end of stack frame 0");
	/* a callee may use the caller's frame, but its own frame dies with it */
	CHECK(RUN_CHECKED(&chk, 0, ST(BPF_DW, 10, -8, 3), MOV64_X(1, 10), CALL_LOCAL(2),
			  LDX(BPF_DW, 0, 0, 0), EXIT(),
			  /* sub: reads caller's slot, returns a pointer into its own frame */
			  LDX(BPF_DW, 2, 1, -8), STX(BPF_DW, 10, 2, -8), MOV64_X(0, 10),
			  ALU64_K(BPF_ADD, 0, -8), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_MEM_OOB && fault.pc == 3);
	CHECK_STR_CONTAINS(fault.msg, "insn 3: 8-byte read at");
	/* while the callee runs, its frame is a region named after its depth */
	CHECK(RUN_CHECKED(&chk, 0, CALL_LOCAL(1), EXIT(), ST(BPF_B, 10, 0, 0), EXIT()) ==
	      -EFAULT);
	CHECK_STR_CONTAINS(fault.msg, "stack frame 1");
}

static void test_null_and_budget(void)
{
	struct vm_checked chk;
	memset(&chk, 0, sizeof(chk));
	CHECK(RUN_CHECKED(&chk, 0, LDX(BPF_DW, 0, 1, 8), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_NULL && fault.addr == 8);
	CHECK_STR_CONTAINS(fault.msg, "insn 0: 8-byte read at 0x8 is a NULL pointer dereference");
	CHECK(RUN_CHECKED(&chk, 4095, ST(BPF_B, 1, 0, 0), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_NULL);
	CHECK(RUN_CHECKED(&chk, 4096, ST(BPF_B, 1, 0, 0), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_MEM_OOB);
	CHECK(RUN_CHECKED(&chk, 0, MOV64_K(2, 1), ATOMIC(BPF_W, 1, 2, 0, BPF_XCHG), EXIT()) ==
	      -EFAULT);
	CHECK(fault.kind == VM_FAULT_NULL);
	/* budget: an endless loop stops after exactly insn_budget instructions */
	chk.insn_budget = 1000;
	chk.insns_executed = 0;
	CHECK(RUN_CHECKED(&chk, 0, MOV64_K(0, 0), JA(-1), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_BUDGET);
	CHECK_STR_CONTAINS(fault.msg, "instruction budget of 1000 exhausted");
	CHECK_EQ_U64(chk.insns_executed, 1000);
	chk.insn_budget = 3;
	chk.insns_executed = 0;
	CHECK(RUN_CHECKED(&chk, 0, MOV64_K(0, 4), ALU64_K(BPF_ADD, 0, 1), EXIT()) == 0);
	CHECK(r0 == 5 && chk.insns_executed == 3);
	chk.insn_budget = 2;
	CHECK(RUN_CHECKED(&chk, 0, MOV64_K(0, 4), ALU64_K(BPF_ADD, 0, 1), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_BUDGET && fault.pc == 2);
	/* checked mode catches a program that was never validated */
	chk.insn_budget = 0;
	struct vm_program p = { PROG(MOV64_K(0, 1), MOV64_K(0, 2)), 2, NULL, NULL };
	CHECK(vm_interp_run(&p, 0, 0, &r0, &chk, &fault) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_PC_OOB && fault.pc == 2);
	struct vm_program j = { PROG(JA(5), EXIT()), 2, NULL, NULL };
	CHECK(vm_interp_run(&j, 0, 0, &r0, &chk, &fault) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_PC_OOB);
	struct vm_program e = { NULL, 0, NULL, NULL };
	CHECK(vm_interp_run(&e, 0, 0, &r0, NULL, &fault) == -EFAULT);
}

static struct nb_map *lookup_map;
static uint64_t h_lookup(uint64_t map, uint64_t key, uint64_t c, uint64_t d, uint64_t e)
{
	(void)c, (void)d, (void)e;
	return (uint64_t)(uintptr_t)map_lookup((struct nb_map *)(uintptr_t)map,
					       (const void *)(uintptr_t)key);
}

static void test_map_values(void)
{
	static const struct nb_helper_proto lookup_proto = {
		NB_HELPER_MAP_LOOKUP_ELEM, "map_lookup_elem", NB_RET_MAP_VALUE_OR_NULL,
		{ NB_ARG_CONST_MAP_PTR, NB_ARG_PTR_TO_MAP_KEY }, false
	};
	struct nb_map_spec spec = { "stats", NB_MAP_TYPE_ARRAY, 4, 12, 4, 0 };
	char err[200];
	struct nb_map *ro = NULL;
	CHECK(map_create(&spec, &lookup_map, err, sizeof(err)) == 0);
	spec.name = "frozen";
	spec.map_flags = NB_MAP_F_RDONLY_PROG;
	CHECK(map_create(&spec, &ro, err, sizeof(err)) == 0);
	if (!lookup_map || !ro)
		return;
	test_helpers[NB_HELPER_MAP_LOOKUP_ELEM] = h_lookup;
	test_protos[NB_HELPER_MAP_LOOKUP_ELEM] = &lookup_proto;
	struct vm_checked chk;
	memset(&chk, 0, sizeof(chk));
	uint64_t m = (uint64_t)(uintptr_t)lookup_map, mr = (uint64_t)(uintptr_t)ro;
#define LOOKUP(map, key)                                                                    \
	ST(BPF_W, 10, -4, key), LDDW(1, map), MOV64_X(2, 10), ALU64_K(BPF_ADD, 2, -4),       \
		CALL(NB_HELPER_MAP_LOOKUP_ELEM)
	/* in bounds: last 4 bytes of the 12-byte value, read and written */
	CHECK(RUN_CHECKED(&chk, 0, LOOKUP(m, 1), JMP_K(BPF_JEQ, 0, 0, 3), ST(BPF_W, 0, 8, 7),
			  LDX(BPF_W, 0, 0, 8), EXIT(), EXIT()) == 0);
	CHECK(r0 == 7);
	/* one byte past the value */
	CHECK(RUN_CHECKED(&chk, 0, LOOKUP(m, 1), JMP_K(BPF_JEQ, 0, 0, 2), LDX(BPF_W, 0, 0, 9),
			  EXIT(), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_MEM_OOB && fault.pc == 7);
	CHECK_STR_CONTAINS(fault.msg, "is 1 bytes past the end of map value of 'stats' (12 bytes");
	/* without a lookup the value is not accessible */
	void *v = map_lookup(lookup_map, &(uint32_t){ 2 });
	CHECK(RUN_CHECKED(&chk, (uint64_t)(uintptr_t)v, LDX(BPF_W, 0, 1, 0), EXIT()) == -EFAULT);
	/* read-only map values */
	CHECK(RUN_CHECKED(&chk, 0, LOOKUP(mr, 0), JMP_K(BPF_JEQ, 0, 0, 2), LDX(BPF_W, 0, 0, 0),
			  EXIT(), EXIT()) == 0);
	CHECK(RUN_CHECKED(&chk, 0, LOOKUP(mr, 0), JMP_K(BPF_JEQ, 0, 0, 2), ST(BPF_W, 0, 0, 1),
			  EXIT(), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_MEM_READONLY);
	CHECK_STR_CONTAINS(fault.msg, "into read-only map value of 'frozen'");
	/* a NULL result (key out of range) adds nothing; dereferencing it is a NULL fault */
	CHECK(RUN_CHECKED(&chk, 0, LOOKUP(m, 9), LDX(BPF_W, 0, 0, 0), EXIT()) == -EFAULT);
	CHECK(fault.kind == VM_FAULT_NULL);
	/* many lookups in one run never overflow the region table */
	CHECK(RUN_CHECKED(&chk, 0, MOV64_K(6, 200), LOOKUP(m, 0), ALU64_K(BPF_SUB, 6, 1),
			  JMP_K(BPF_JNE, 6, 0, -8), EXIT()) == 0);
	CHECK(chk.region_cnt == 0);
	test_helpers[NB_HELPER_MAP_LOOKUP_ELEM] = NULL;
	test_protos[NB_HELPER_MAP_LOOKUP_ELEM] = NULL;
	map_free(lookup_map);
	map_free(ro);
}

/* bpf_loop in both interpreters (linked form: the function address holds the callback's
 * absolute index). Checked mode also holds unverified programs to a real callback. */
static uint64_t loop_run(const struct bpf_insn *insns, size_t n, bool checked, uint64_t budget,
			 int *rc, struct vm_fault *f)
{
	struct vm_program prog = { insns, n, test_helpers, test_protos };
	struct vm_checked chk;
	memset(&chk, 0, sizeof(chk));
	chk.insn_budget = budget;
	uint64_t r0 = ~0ull;
	*rc = vm_interp_run(&prog, 0, 0, &r0, checked ? &chk : NULL, f);
	return r0;
}

#define LD_FUNC_LINKED(d, idx) INSN(BPF_LDDW, d, BPF_PSEUDO_FUNC, 0, idx), INSN(0, 0, 0, 0, 0)
static void test_bpf_loop(void)
{
	test_helpers[NB_HELPER_LOOP] = vm_helper_bpf_loop;
	struct vm_fault f;
	int rc;
	for (int checked = 0; checked < 2; checked++) {
		/* callback at 7: r0 = (r1 == 3): stops at index 3 after 4 calls */
		const struct bpf_insn stop3[] = {
			MOV64_K(1, 10), LD_FUNC_LINKED(2, 7), MOV64_X(3, 10), MOV64_K(4, 0),
			CALL(NB_HELPER_LOOP), EXIT(),
			MOV64_K(0, 0), /* 7 */
			JMP_K(BPF_JNE, 1, 3, 1), MOV64_K(0, 1), EXIT(),
		};
		CHECK(loop_run(stop3, sizeof(stop3) / sizeof(stop3[0]), checked, 0, &rc, &f) == 4 && rc == 0);
		const struct bpf_insn all[] = {
			MOV64_K(1, 1000), LD_FUNC_LINKED(2, 7), MOV64_K(3, 0), MOV64_K(4, 0),
			CALL(NB_HELPER_LOOP), EXIT(), MOV64_K(0, 0), EXIT(),
		};
		CHECK(loop_run(all, 9, checked, 0, &rc, &f) == 1000 && rc == 0);
		/* flags, over the cap, zero iterations: results as in Linux */
		struct bpf_insn flags[9];
		memcpy(flags, all, sizeof(all));
		flags[4] = MOV64_K(4, 1);
		CHECK(loop_run(flags, 9, checked, 0, &rc, &f) == (uint64_t)-EINVAL && rc == 0);
		flags[4] = MOV64_K(4, 0);
		flags[0] = MOV64_K(1, (1 << 23) + 1);
		CHECK(loop_run(flags, 9, checked, 0, &rc, &f) == (uint64_t)-E2BIG && rc == 0);
		flags[0] = MOV64_K(1, 0);
		CHECK(loop_run(flags, 9, checked, 0, &rc, &f) == 0 && rc == 0);
	}
	/* unverified code: a callback that is no function address of the program faults */
	const struct bpf_insn bogus[] = {
		MOV64_K(1, 4), MOV64_K(2, 6), MOV64_K(3, 0), MOV64_K(4, 0), CALL(NB_HELPER_LOOP),
		EXIT(), MOV64_K(0, 0), EXIT(),
	};
	loop_run(bogus, 8, true, 0, &rc, &f);
	CHECK(rc == -EFAULT && f.kind == VM_FAULT_BAD_HELPER);
	/* and the instruction budget covers every callback instruction */
	const struct bpf_insn big[] = {
		MOV64_K(1, 1 << 23), LD_FUNC_LINKED(2, 7), MOV64_K(3, 0), MOV64_K(4, 0),
		CALL(NB_HELPER_LOOP), EXIT(), MOV64_K(0, 0), EXIT(),
	};
	loop_run(big, 9, true, 100000, &rc, &f);
	CHECK(rc == -EFAULT && f.kind == VM_FAULT_BUDGET);
	test_helpers[NB_HELPER_LOOP] = NULL;
	/* without the helper in the table it is unavailable, like any helper */
	loop_run(big, 9, false, 0, &rc, &f);
	CHECK(rc == -EFAULT && f.kind == VM_FAULT_BAD_HELPER);
}

int main(void)
{
	test_bpf_loop();
	test_ctx_bounds();
	test_stack_bounds();
	test_null_and_budget();
	test_map_values();
	TEST_DONE();
}
