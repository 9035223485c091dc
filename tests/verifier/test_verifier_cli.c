/* `ncclbpf verify`: compiler-style diagnostics with the source line and the instruction,
 * exit status 1 on rejection, 0 on acceptance, 2 on usage errors; --stats, --type and
 * --allow-rank-local.
 * Usage: test_verifier_cli NCCLBPF_BINARY BINARY_DIR */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_util.h"

static char out[65536];

static int run(const char *cmd)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *cli = argv[1], *bin = argv[2];
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "%s verify %s/policies/unsafe/null_spill.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 1);
	CHECK_STR_CONTAINS(out, "null_spill.bpf.c:19:");
	CHECK_STR_CONTAINS(out, ": error: ");
	CHECK_STR_CONTAINS(out, "[E-NULL-DEREF]");
	CHECK_STR_CONTAINS(out, "    19 | asm volatile(\"r0 = *(u64 *)(r1 + 0);\");");
	CHECK_STR_CONTAINS(out, "insn 9: r0 = *(u64 *)(r1 + 0)");

	snprintf(cmd, sizeof(cmd), "%s verify --stats %s/policies/noop.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 0);
	CHECK_STR_CONTAINS(out, "OK");
	CHECK_STR_CONTAINS(out, "processed");
	CHECK_STR_CONTAINS(out, "states stored");
	CHECK_STR_CONTAINS(out, "pruned");
	CHECK_STR_CONTAINS(out, "peak");
	CHECK_STR_CONTAINS(out, " ms");
	CHECK_STR_CONTAINS(out, "jit: compiled"); /* a JIT fallback would be visible here */
	CHECK_STR_CONTAINS(out, "run path: JIT, direct entry"); /* no checks, no epoch */
	CHECK_STR_CONTAINS(out, "cost: max_insns 2 per run (limit 1000000)"); /* r0 = 0; exit */
	snprintf(cmd, sizeof(cmd), "%s verify --json %s/policies/noop.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 0);
	CHECK_STR_CONTAINS(out, "\"max_insns\": 2,");
	CHECK_STR_CONTAINS(out, "\"max_insns_limit\": 1000000");

	/* the cost per run (E-COST): a million bpf_loop callbacks are over the profiler's 10^6;
	 * --max-insns and NCCLBPF_MAX_INSNS (the runtime's variable) raise it alike */
	snprintf(cmd, sizeof(cmd), "%s verify %s/tests/progs/verifier_loop.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 1);
	CHECK_STR_CONTAINS(out, "[E-COST]");
	CHECK_STR_CONTAINS(out, "more than the profiler hook's limit of 1000000 per run");
	snprintf(cmd, sizeof(cmd), "%s verify --stats --max-insns profiler=1000000000 "
		 "%s/tests/progs/verifier_loop.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 0);
	CHECK_STR_CONTAINS(out, "cost: max_insns 5000011 per run (limit 1000000000)");
	snprintf(cmd, sizeof(cmd), "NCCLBPF_MAX_INSNS=profiler=1000000000 %s verify "
		 "%s/tests/progs/verifier_loop.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 0);
	snprintf(cmd, sizeof(cmd), "NCCLBPF_MAX_INSNS=tuner=1000000000 %s verify "
		 "%s/tests/progs/verifier_loop.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 1);
	/* 20,000 x bpf_loop(2^23): over even a limit the bpf_loop alone fits in */
	snprintf(cmd, sizeof(cmd), "%s verify --max-insns 100000000 "
		 "%s/policies/unsafe/cost_loop_around_bpf_loop.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 1);
	CHECK_STR_CONTAINS(out, "[E-COST]");
	CHECK_STR_CONTAINS(out, "more than the tuner hook's limit of 100000000 per run");
	snprintf(cmd, sizeof(cmd), "%s verify --max-insns 0 %s/policies/noop.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 2);
	snprintf(cmd, sizeof(cmd), "%s verify --max-insns gpu=5 %s/policies/noop.bpf.o 2>&1", cli,
		 bin);
	CHECK(run(cmd) == 2);

	snprintf(cmd, sizeof(cmd), "%s verify --stats %s/policies/lookup_update.bpf.o 2>&1", cli,
		 bin);
	CHECK(run(cmd) == 0);
	CHECK_STR_CONTAINS(out, "run path: JIT, inside a map epoch"); /* a hash map */

	/* a caret under the column of the diagnostic */
	snprintf(cmd, sizeof(cmd), "%s verify %s/policies/unsafe/null_deref.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 1);
	CHECK_STR_CONTAINS(out, "    16 | return v->count; // EXPECT: E-NULL-DEREF\n       |           ^\n");

	/* loader errors carry a stable code too */
	snprintf(cmd, sizeof(cmd), "printf 'not an ELF file at all' > %s/not_elf.bpf.o && "
		 "%s verify %s/not_elf.bpf.o 2>&1", bin, cli, bin);
	CHECK(run(cmd) == 1); /* refused input (CLI_EXIT_REFUSED) */
	CHECK_STR_CONTAINS(out, "[E-LOAD]");

	/* --type overrides the section: a tuner program's output writes are not allowed in
	 * a profiler */
	snprintf(cmd, sizeof(cmd), "%s verify --type profiler %s/tests/progs/verifier_twins.bpf.o 2>&1",
		 cli, bin);
	CHECK(run(cmd) == 1);
	CHECK_STR_CONTAINS(out, "[E-CTX-");

	/* several objects: the status is the worst one */
	snprintf(cmd, sizeof(cmd), "%s verify %s/policies/noop.bpf.o %s/policies/unsafe/null_deref.bpf.o 2>&1",
		 cli, bin, bin);
	CHECK(run(cmd) == 1);
	CHECK_STR_CONTAINS(out, "[E-NULL-DEREF]");

	/* a divisor that may be zero: accepted (x / 0 = 0), with a warning at the line */
	snprintf(cmd, sizeof(cmd), "%s verify %s/tests/progs/verifier_div.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 0);
	CHECK_STR_CONTAINS(out, "verifier_div.bpf.c:11:");
	CHECK_STR_CONTAINS(out, ": warning: divisor r2 may be zero");
	CHECK_STR_CONTAINS(out, "[W-DIV-ZERO]");
	CHECK_STR_CONTAINS(out, "program 'div_by_input' (tuner): OK");
	snprintf(cmd, sizeof(cmd), "%s verify --json %s/tests/progs/verifier_div.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 0);
	CHECK_STR_CONTAINS(out, "\"severity\": \"warning\"");
	CHECK_STR_CONTAINS(out, "\"code\": \"W-DIV-ZERO\"");

	/* rank-local decisions: rejected by default, accepted with --allow-rank-local or
	 * NCCLBPF_RANK_LOCAL=allow */
	snprintf(cmd, sizeof(cmd), "env -u NCCLBPF_RANK_LOCAL %s verify %s/policies/unsafe/rank_local_latency.bpf.o 2>&1",
		 cli, bin);
	CHECK(run(cmd) == 1);
	CHECK_STR_CONTAINS(out, "[E-RANK-LOCAL]");
	CHECK_STR_CONTAINS(out, "depends on rank-local data");
	CHECK_STR_CONTAINS(out, "rank_local_latency.bpf.c:");
	snprintf(cmd, sizeof(cmd), "env -u NCCLBPF_RANK_LOCAL %s verify --allow-rank-local %s/policies/unsafe/rank_local_latency.bpf.o 2>&1",
		 cli, bin);
	CHECK(run(cmd) == 0);
	snprintf(cmd, sizeof(cmd), "NCCLBPF_RANK_LOCAL=allow %s verify %s/policies/unsafe/rank_local_ktime.bpf.o 2>&1",
		 cli, bin);
	CHECK(run(cmd) == 0);
	/* the closed-loop policies read agreed maps: accepted in the default strict mode */
	snprintf(cmd, sizeof(cmd), "env -u NCCLBPF_RANK_LOCAL %s verify %s/policies/adaptive_channels.bpf.o %s/policies/slo_enforcer.bpf.o 2>&1",
		 cli, bin, bin);
	CHECK(run(cmd) == 0);

	snprintf(cmd, sizeof(cmd), "%s verify --type nosuchhook x.o 2>&1", cli);
	CHECK(run(cmd) == 2);
	/* a missing object is refused input (1), not a usage error (docs/cli.md) */
	snprintf(cmd, sizeof(cmd), "%s verify %s/does-not-exist.bpf.o 2>&1", cli, bin);
	CHECK(run(cmd) == 1);
	snprintf(cmd, sizeof(cmd), "%s verify 2>&1", cli);
	CHECK(run(cmd) == 2);
	TEST_DONE();
}
