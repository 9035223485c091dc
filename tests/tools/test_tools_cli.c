/* `ncclbpf` CLI: info, exec (the bpf_conformance plugin protocol: results, memory, modes,
 * --elf, --verify, error exits), subcommand dispatch. Runs ./ncclbpf in the build dir. */
#include <stdbool.h>
#include <stdlib.h>

#include "cli_run.h"
#include "test_util.h"

#define EXIT "95 00 00 00 00 00 00 00"

static char out[65536];

/* exec with the program hex on stdin; returns the exit status, stdout in `out`. */
static int exec_prog(const char *prog_hex, const char *args)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "echo '%s' | ./ncclbpf exec %s 2>/dev/null", prog_hex, args);
	return cli_run(cmd, out, sizeof(out));
}

/* Same but stdout+stderr together (for error messages). */
static int exec_prog_err(const char *prog_hex, const char *args)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "echo '%s' | ./ncclbpf exec %s 2>&1", prog_hex, args);
	return cli_run(cmd, out, sizeof(out));
}

static void test_exec_mode(const char *mode)
{
	char args[256];
	/* mov r0, 42 */
	CHECK(exec_prog("b7 00 00 00 2a 00 00 00 " EXIT, mode) == 0);
	CHECK(!strcmp(out, "2a\n"));
	/* r0 = *(u32 *)(r1 + 0) with memory, in both token spacings */
	snprintf(args, sizeof(args), "'01 02 03 04' %s", mode);
	CHECK(exec_prog("61 10 00 00 00 00 00 00 " EXIT, args) == 0);
	CHECK(!strcmp(out, "4030201\n"));
	snprintf(args, sizeof(args), "'01  02  03  04  ' %s", mode);
	CHECK(exec_prog("61  10  00  00  00  00  00  00  95  00  00  00  00  00  00  00  ", args) == 0);
	CHECK(!strcmp(out, "4030201\n"));
	/* r0 = r2 (memory length) */
	snprintf(args, sizeof(args), "'00 00 00 00 00 00 00 00' %s", mode);
	CHECK(exec_prog("bf 20 00 00 00 00 00 00 " EXIT, args) == 0);
	CHECK(!strcmp(out, "8\n"));
	/* --jit verifies (only verified code is compiled): it refuses returning r1, which the
	 * check below relies on */
	bool verified = strstr(mode, "--jit") != NULL;
	/* no memory: r1 = NULL, r2 = 0 */
	CHECK(exec_prog("bf 10 00 00 00 00 00 00 0f 20 00 00 00 00 00 00 " EXIT, mode) ==
	      (verified ? 1 : 0));
	CHECK(verified || !strcmp(out, "0\n"));
	/* helper 5 returns its first argument */
	CHECK(exec_prog("b7 01 00 00 55 00 00 00 85 00 00 00 05 00 00 00 " EXIT, mode) == 0);
	CHECK(!strcmp(out, "55\n"));
	/* 64-bit immediate, printed in full */
	CHECK(exec_prog("18 00 00 00 10 32 54 76 00 00 00 00 98 ba dc fe " EXIT, mode) == 0);
	CHECK(!strcmp(out, "fedcba9876543210\n"));
	/* division by zero is 0, verified or not (the verifier accepts it with a warning) */
	CHECK(exec_prog("b7 00 00 00 07 00 00 00 b7 01 00 00 00 00 00 00 3f 10 00 00 00 00 00 00 "
			EXIT, mode) == 0);
	CHECK(!strcmp(out, "0\n"));
	/* the memory is a writable copy: store then load */
	snprintf(args, sizeof(args), "'00 00 00 00' %s", mode);
	CHECK(exec_prog("62 01 00 00 ef be ad de 61 10 00 00 00 00 00 00 " EXIT, args) == 0);
	CHECK(!strcmp(out, "deadbeef\n"));
	/* --elf: the program of a clang-compiled .text-only object */
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "od -An -tx1 -v tests/progs/runtime_conf.bpf.o | ./ncclbpf exec '05 00 00 00' --elf %s",
		 mode);
	CHECK(cli_run(cmd, out, sizeof(out)) == 0);
	CHECK(!strcmp(out, "9\n"));
}

int main(void)
{
	/* dispatch */
	CHECK(cli_run("./ncclbpf 2>&1", out, sizeof(out)) == 2);
	CHECK_STR_CONTAINS(out, "usage: ncclbpf");
	CHECK(cli_run("./ncclbpf --help", out, sizeof(out)) == 0);
	CHECK_STR_CONTAINS(out, "disasm");
	CHECK(cli_run("./ncclbpf frobnicate 2>&1", out, sizeof(out)) == 2);
	CHECK_STR_CONTAINS(out, "unknown command 'frobnicate'");

	/* info */
	CHECK(cli_run("./ncclbpf info tests/progs/runtime_maps.bpf.o", out, sizeof(out)) == 0);
	CHECK_STR_CONTAINS(out, "BTF:     yes");
	CHECK_STR_CONTAINS(out, "BTF.ext: yes");
	CHECK_STR_CONTAINS(out, "programs (2):");
	CHECK_STR_CONTAINS(out, "tuner");
	CHECK_STR_CONTAINS(out, "pick");
	CHECK_STR_CONTAINS(out, "observe");
	CHECK_STR_CONTAINS(out, "profiler");
	CHECK_STR_CONTAINS(out, "calls");
	CHECK_STR_CONTAINS(out, "hash");
	CHECK_STR_CONTAINS(out, "bytes_per_coll");
	CHECK_STR_CONTAINS(out, ".rodata");
	CHECK(strstr(out, "array") != NULL);
	CHECK(cli_run("./ncclbpf info tests/progs/nothing.bpf.o 2>&1", out, sizeof(out)) == 1);
	CHECK_STR_CONTAINS(out, "nothing.bpf.o");
	CHECK(cli_run("./ncclbpf info 2>&1", out, sizeof(out)) == 2);

	/* disasm of one program, unknown program */
	CHECK(cli_run("./ncclbpf disasm tests/progs/runtime_maps.bpf.o pick", out, sizeof(out)) == 0);
	CHECK_STR_CONTAINS(out, "Disassembly of program 'pick'");
	CHECK_STR_CONTAINS(out, "; runtime_maps.bpf.c:");
	CHECK(strstr(out, "observe") == NULL);
	CHECK(cli_run("./ncclbpf disasm tests/progs/runtime_maps.bpf.o nope 2>&1", out, sizeof(out)) == 1);
	CHECK_STR_CONTAINS(out, "no program 'nope'");

	/* exec: interpreter (default, --interpret), then the JIT if this build has one */
	test_exec_mode("");
	test_exec_mode("--interpret");
	test_exec_mode("--verify=off --debug");
	int jit = exec_prog_err("b7 00 00 00 01 00 00 00 " EXIT, "--jit");
	if (jit == 0) {
		test_exec_mode("--jit");
		/* run-time faults the JIT detects: unknown helper, falling off the end */
		CHECK(exec_prog_err("85 00 00 00 63 00 00 00 " EXIT, "--jit") == 1);
		CHECK_STR_CONTAINS(out, "helper");
		CHECK(exec_prog_err("b7 00 00 00 2a 00 00 00", "--jit") == 1);
		/* Regression (issue 14): unverified code is never JIT-compiled */
		CHECK(exec_prog_err("79 10 00 00 00 00 00 00 " EXIT, "--jit --verify=off") == 1);
		CHECK_STR_CONTAINS(out, "checked interpreter");
	} else
		CHECK_STR_CONTAINS(out, "JIT not available");

	/* --verify=on: a safe program runs; an out-of-bounds one is rejected before running */
	CHECK(exec_prog("61 10 00 00 00 00 00 00 " EXIT, "'01 00 00 00' --verify=on") == 0);
	CHECK(!strcmp(out, "1\n"));
	CHECK(exec_prog_err("79 10 08 00 00 00 00 00 " EXIT, "'01 00 00 00' --verify=on") == 1);
	CHECK(out[0] != '\0');

	/* errors: exit 1 with the reason on stderr, nothing on stdout */
	CHECK(exec_prog_err("79 10 08 00 00 00 00 00 " EXIT, "'01 00 00 00'") == 1);
	CHECK_STR_CONTAINS(out, "ncclbpf exec: ");
	CHECK(exec_prog("79 10 08 00 00 00 00 00 " EXIT, "'01 00 00 00'") == 1);
	CHECK(out[0] == '\0');
	CHECK(exec_prog_err("79 10 00 00 00 00 00 00 " EXIT, "") == 1); /* NULL r1 */
	CHECK(exec_prog_err("zz 00", "") == 1);
	CHECK_STR_CONTAINS(out, "hex");
	CHECK(exec_prog_err("b7 00 00 00 2a 00 00 00 95 00 00 00", "") == 1);
	CHECK_STR_CONTAINS(out, "multiple of 8");
	CHECK(exec_prog_err("", "") == 1);
	CHECK_STR_CONTAINS(out, "no program");
	CHECK(exec_prog_err("b7 00 00 00 2a 00 00 00 " EXIT, "--frobnicate") == 2);
	CHECK_STR_CONTAINS(out, "unknown option '--frobnicate'");
	CHECK(exec_prog_err("b7 00 00 00 2a 00 00 00 " EXIT, "'01' '02'") == 2);
	CHECK(exec_prog_err("b7 00 00 00 2a 00 00 00 " EXIT, "'0g'") == 1);
	CHECK(exec_prog_err("b7 00 00 00 2a 00 00 00", "") == 1); /* falls off the end */
	CHECK(exec_prog_err("85 00 00 00 63 00 00 00 " EXIT, "") == 1); /* unknown helper 99 */
	CHECK(exec_prog_err("ff 00 00 00 00 00 00 00 " EXIT, "") == 1); /* bad opcode */
	CHECK(exec_prog_err("05 00 ff ff 00 00 00 00 " EXIT, "") == 1);   /* endless loop: budget */
	CHECK(exec_prog_err("00 01 02", "--elf") == 1);                    /* not an ELF */
	TEST_DONE();
}
