/* JIT variant of tests/vm/vm_test_harness.h: the interpreter's instruction-level test
 * files are compiled a second time with this header first on the include path. Every
 * program they run goes through the interpreter (unchecked, the reference) and through the
 * JIT with the default register map and JIT_HARNESS_PERMS permuted maps, each on its own
 * copy of the memory; r0, faults (kind, pc, message) and memory must all agree. The JIT's
 * result is what the test file's own expectations then check. */
#ifndef NCCLBPF_TESTS_VM_HARNESS_H
#define NCCLBPF_TESTS_VM_HARNESS_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "isa/insn_build.h"
#include "test_util.h"
#include "vm/jit_x86_64.h"
#include "vm/vm.h"

#define JIT_HARNESS_PERMS 4

static vm_helper_fn test_helpers[NB_HELPER_MAX];
static const struct nb_helper_proto *test_protos[NB_HELPER_MAX];

struct run_result {
	int rc;
	uint64_t r0;
	struct vm_fault fault;
	uint8_t mem[256];
};

/* Permutation k of r0..r9 over the JIT's ten homes (k = 0: default map). */
static void harness_perm(unsigned k, uint8_t perm[10])
{
	for (int i = 0; i < 10; i++)
		perm[i] = (uint8_t)((i * (k % 2 ? 3 : 7) + k) % 10);
}

static struct run_result harness_jit(int line, const struct vm_program *prog, const void *mem,
				     size_t len, unsigned k)
{
	struct run_result j = { 0 };
	struct vm_jit_image *img = NULL;
	char err[256] = "";
	uint8_t perm[10];
	harness_perm(k, perm);
	if (mem)
		memcpy(j.mem, mem, len);
	int rc = jit_compile_permuted(prog, NULL, k ? perm : NULL, &img, err, sizeof(err));
	if (rc) {
		test_checks++;
		test_failures++;
		fprintf(stderr, "line %d: JIT refused a valid program: %s\n", line, err);
		j.rc = -9999;
		return j;
	}
	j.rc = vm_jit_run(img, mem ? (uint64_t)(uintptr_t)j.mem : 0, len, &j.r0, &j.fault);
	vm_jit_free(img);
	return j;
}

/* A program that does arithmetic on r10 can return a stack address (difference): the
 * interpreter's and the JIT's stacks differ, so its r0 is not compared (the test file's own
 * checks still judge the JIT's value). */
static bool harness_address_dependent(const struct bpf_insn *insns, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t cls = BPF_CLASS(insns[i].code);
		if ((cls == BPF_ALU64 || cls == BPF_ALU) && BPF_SRC(insns[i].code) == BPF_X &&
		    insns[i].src_reg == BPF_REG_FP)
			return true;
	}
	return false;
}

static struct run_result run_prog(int line, const struct bpf_insn *insns, size_t n,
				  const void *mem, size_t len)
{
	struct run_result u = { 0 }, first = { 0 };
	char err[256];
	if (isa_validate(insns, n, err, sizeof(err))) {
		test_checks++;
		test_failures++;
		fprintf(stderr, "line %d: program invalid: %s\n", line, err);
		u.rc = -1;
		return u;
	}
	struct vm_program prog = { insns, n, test_helpers, test_protos };
	if (len > sizeof(u.mem))
		abort();
	if (mem)
		memcpy(u.mem, mem, len);
	u.rc = vm_interp_run(&prog, mem ? (uint64_t)(uintptr_t)u.mem : 0, len, &u.r0, NULL,
			     &u.fault);
	for (unsigned k = 0; k <= JIT_HARNESS_PERMS; k++) {
		struct run_result j = harness_jit(line, &prog, mem, len, k);
		if (k == 0)
			first = j;
		if (j.rc == -9999)
			return j;
		test_checks++;
		bool same = u.rc == j.rc &&
			    (u.rc != 0 || u.r0 == j.r0 || harness_address_dependent(insns, n)) &&
			    (!mem || !memcmp(u.mem, j.mem, len)) &&
			    (u.rc == 0 || (u.fault.kind == j.fault.kind && u.fault.pc == j.fault.pc &&
					   !strcmp(u.fault.msg, j.fault.msg)));
		if (!same) {
			test_failures++;
			fprintf(stderr,
				"line %d: interpreter (rc %d r0 0x%llx %s) and JIT perm %u (rc %d r0 "
				"0x%llx %s) differ\n",
				line, u.rc, (unsigned long long)u.r0, u.rc ? u.fault.msg : "",
				k, j.rc, (unsigned long long)j.r0, j.rc ? j.fault.msg : "");
		}
	}
	return first;
}

#define RUN_MEM(mem, len, ...) run_prog(__LINE__, PROG(__VA_ARGS__), PROG_LEN(__VA_ARGS__), mem, len)
#define RUN(...) RUN_MEM(NULL, 0, __VA_ARGS__)

#define EXPECT(want, ...)                                                                   \
	do {                                                                                \
		struct run_result r_ = RUN(__VA_ARGS__);                                    \
		CHECK(r_.rc == 0);                                                          \
		if (r_.rc)                                                                  \
			fprintf(stderr, "  line %d: %s\n", __LINE__, r_.fault.msg);         \
		CHECK_EQ_U64(r_.r0, want);                                                  \
	} while (0)

#endif
