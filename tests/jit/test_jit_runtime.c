/* Execution paths through the runtime (issue 14):
 *  - code the verifier proves dead right before a bpf-to-bpf function is linked as a trap;
 *    the JIT must compile such a program (it refused it: "falls through into the function");
 *  - unverified programs (NCCLBPF_VERIFY=warn, verify off) run only in the checked
 *    interpreter with an instruction budget: a NULL dereference, a wild pointer handed to a
 *    helper and an infinite loop end in -EFAULT, never in a crash or a hang;
 *  - the decision path: ncclbpf_program_run of JIT code that cannot fault, and of code that
 *    can, reports results and faults. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ncclbpf/ncclbpf.h"
#include "ncclbpf/policy.h"
#include "runtime/runtime.h"
#include "test_util.h"
#include "verifier/insn_macros.h"
#include "vm/vm.h"

static struct ncclbpf_object *obj_of(const struct bpf_insn *insns, size_t n)
{
	char err[256];
	struct ncclbpf_object *obj = NULL;
	CHECK(runtime_object_from_insns(insns, n * sizeof(*insns), "t", &obj, err, sizeof(err)) == 0);
	return obj;
}

static int prepare(struct ncclbpf_object *obj, enum ncclbpf_exec_mode e,
		   enum ncclbpf_verify_mode v, char *err, size_t len)
{
	struct ncclbpf_prepare_opts o = { .sz = sizeof(o), .exec_mode = e, .verify_mode = v };
	return ncclbpf_program_prepare(ncclbpf_object_program(obj, 0), NCCLBPF_HOOK_TUNER, &o, err,
				       len);
}

static void test_dead_code_before_function(void)
{
	/* main: r0 = f(); if (r0 != 7) goto out; return r0; out: r0 = 1; exit  -- f returns 7,
	 * so the last two instructions of main are dead and become traps */
	const struct bpf_insn p[] = {
		CALL_LOCAL(4), JMP_IMM(BPF_JNE, 0, 7, 1), EXIT(), MOV64_IMM(0, 1), EXIT(),
		/* 5: f */ MOV64_IMM(0, 7), EXIT(),
	};
	char err[512];
	struct ncclbpf_object *obj = obj_of(p, sizeof(p) / sizeof(p[0]));
	int rc = prepare(obj, NCCLBPF_EXEC_JIT, NCCLBPF_VERIFY_STRICT, err, sizeof(err));
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "prepare: %s\n", err);
	struct ncclbpf_program *prog = ncclbpf_object_program(obj, 0);
	CHECK(ncclbpf_program_is_jitted(prog));
	struct ncclbpf_tuner_ctx c;
	memset(&c, 0, sizeof(c));
	uint64_t r0 = 0;
	CHECK(ncclbpf_program_run(prog, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 7);
	ncclbpf_object_close(obj);
}

static void expect_contained(const struct bpf_insn *p, size_t n, const char *what)
{
	char err[512];
	struct ncclbpf_tuner_ctx c;
	memset(&c, 0, sizeof(c));
	for (int mode = 0; mode < 2; mode++) {
		struct ncclbpf_object *obj = obj_of(p, n);
		struct ncclbpf_program *prog = ncclbpf_object_program(obj, 0);
		enum ncclbpf_verify_mode v = mode ? NCCLBPF_VERIFY_OFF : NCCLBPF_VERIFY_WARN;
		CHECK(prepare(obj, NCCLBPF_EXEC_DEFAULT, v, err, sizeof(err)) == 0);
		CHECK(!ncclbpf_program_is_jitted(prog));
		CHECK(prepare(obj, NCCLBPF_EXEC_JIT, v, err, sizeof(err)) == -EPERM);
		CHECK(prepare(obj, NCCLBPF_EXEC_DEFAULT, v, err, sizeof(err)) == 0);
		uint64_t r0 = 0;
		int rc = ncclbpf_program_run(prog, &c, sizeof(c), &r0, err, sizeof(err));
		CHECK(rc == -EFAULT);
		if (rc != -EFAULT)
			fprintf(stderr, "%s: not contained (rc %d)\n", what, rc);
		else
			CHECK_STR_CONTAINS(err, what);
		ncclbpf_object_close(obj);
	}
}

static void test_unverified_contained(void)
{
	setenv("NCCLBPF_VERIFY", "warn", 1);
	/* NULL dereference */
	const struct bpf_insn null_deref[] = { MOV64_IMM(1, 0), LDX(BPF_DW, 0, 1, 0), EXIT() };
	expect_contained(null_deref, 3, "NULL");
	/* an infinite loop: the instruction budget stops it */
	const struct bpf_insn forever[] = { MOV64_IMM(0, 0), JA(-1), EXIT() };
	expect_contained(forever, 3, "budget");
	/* a wild "map" handed to bpf_map_lookup_elem: checked against the prototype */
	const struct bpf_insn wild_map[] = { ST(BPF_DW, 10, -8, 0), MOV64_REG(2, 10),
					     ALU64_IMM(BPF_ADD, 2, -8), LD_IMM64(1, 0x41414140, 0),
					     CALL(1), MOV64_IMM(0, 0), EXIT() };
	expect_contained(wild_map, sizeof(wild_map) / sizeof(wild_map[0]), "not a map");
	unsetenv("NCCLBPF_VERIFY");
}

static void test_decision_path(void)
{
	char err[512];
	struct ncclbpf_tuner_ctx c;
	memset(&c, 0, sizeof(c));
	c.n_bytes = 5;
	/* cannot fault: the direct entry */
	const struct bpf_insn plain[] = { LDX(BPF_DW, 0, 1, 8), ALU64_IMM(BPF_ADD, 0, 1), EXIT() };
	struct ncclbpf_object *obj = obj_of(plain, 3);
	struct ncclbpf_program *prog = ncclbpf_object_program(obj, 0);
	CHECK(prepare(obj, NCCLBPF_EXEC_JIT, NCCLBPF_VERIFY_STRICT, err, sizeof(err)) == 0);
	uint64_t r0 = 0;
	CHECK(ncclbpf_program_run(prog, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 6);
	CHECK(ncclbpf_program_run(prog, &c, sizeof(c), NULL, NULL, 0) == 0);
	/* a wrong context size or a NULL context never reaches the code */
	CHECK(ncclbpf_program_run(prog, &c, sizeof(c) - 8, &r0, err, sizeof(err)) == -EINVAL);
	CHECK(ncclbpf_program_run(prog, NULL, sizeof(c), &r0, err, sizeof(err)) == -EINVAL);
	CHECK(ncclbpf_program_run(NULL, &c, sizeof(c), &r0, err, sizeof(err)) == -EINVAL);
	ncclbpf_object_close(obj);
}

int main(void)
{
	if (!vm_jit_available()) {
		printf("no JIT on this architecture\n");
		TEST_DONE();
	}
	test_dead_code_before_function();
	test_unverified_contained();
	test_decision_path();
	TEST_DONE();
}
