/* Shared harness of the interpreter tests: validates a program, runs it in unchecked and
 * checked mode (each on its own copy of the memory) and checks that both agree. */
#ifndef NCCLBPF_TESTS_VM_HARNESS_H
#define NCCLBPF_TESTS_VM_HARNESS_H

#include <stdlib.h>

#include "isa/insn_build.h"
#include "test_util.h"
#include "vm/vm.h"

static vm_helper_fn test_helpers[NB_HELPER_MAX];
static const struct nb_helper_proto *test_protos[NB_HELPER_MAX];

struct run_result {
	int rc;
	uint64_t r0;
	struct vm_fault fault;
	uint8_t mem[256]; /* memory after the unchecked run */
};

/* Runs the program both ways on copies of mem; returns the unchecked result. */
__attribute__((unused)) static struct run_result run_prog(int line, const struct bpf_insn *insns, size_t n,
				  const void *mem, size_t len)
{
	struct run_result u = { 0 }, c = { 0 };
	char err[256];
	if (isa_validate(insns, n, err, sizeof(err))) {
		test_checks++;
		test_failures++;
		fprintf(stderr, "line %d: program invalid: %s\n", line, err);
		u.rc = -1;
		return u;
	}
	struct vm_program prog = { insns, n, test_helpers, test_protos };
	uint8_t cmem[256];
	if (len > sizeof(u.mem))
		abort();
	if (mem) {
		memcpy(u.mem, mem, len);
		memcpy(cmem, mem, len);
	}
	u.rc = vm_interp_run(&prog, mem ? (uint64_t)(uintptr_t)u.mem : 0, len, &u.r0, NULL,
			     &u.fault);
	struct vm_checked chk;
	memset(&chk, 0, sizeof(chk));
	if (mem)
		vm_checked_add_region(&chk, (uint64_t)(uintptr_t)cmem, len, true, "caller memory");
	c.rc = vm_interp_run(&prog, mem ? (uint64_t)(uintptr_t)cmem : 0, len, &c.r0, &chk,
			     &c.fault);
	test_checks++;
	if (u.rc != c.rc || (u.rc == 0 && u.r0 != c.r0) || (mem && memcmp(u.mem, cmem, len)) ||
	    (u.rc && u.fault.kind != c.fault.kind)) {
		test_failures++;
		fprintf(stderr,
			"line %d: unchecked (rc %d r0 0x%llx) and checked (rc %d r0 0x%llx: %s) "
			"differ\n",
			line, u.rc, (unsigned long long)u.r0, c.rc, (unsigned long long)c.r0,
			c.fault.msg);
	}
	return u;
}

#define RUN_MEM(mem, len, ...) run_prog(__LINE__, PROG(__VA_ARGS__), PROG_LEN(__VA_ARGS__), mem, len)
#define RUN(...) RUN_MEM(NULL, 0, __VA_ARGS__)

/* r0 of a program that must succeed */
#define EXPECT(want, ...)                                                                   \
	do {                                                                                \
		struct run_result r_ = RUN(__VA_ARGS__);                                    \
		CHECK(r_.rc == 0);                                                          \
		if (r_.rc)                                                                  \
			fprintf(stderr, "  line %d: %s\n", __LINE__, r_.fault.msg);         \
		CHECK_EQ_U64(r_.r0, want);                                                  \
	} while (0)

#endif
