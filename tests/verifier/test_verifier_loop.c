/* bpf_loop (helper 181) end to end: tests/progs/verifier_loop.bpf.o loads, verifies, and
 * every program gives the result computed here in the interpreter, the checked interpreter
 * and the JIT (differential). Also division by zero as the ISA defines it (x / 0 = 0,
 * x % 0 = x: tests/progs/verifier_div.bpf.o, accepted with a warning), the same in all three.
 * Variable-offset stack access (tests/progs/verifier_stack_index.bpf.o), the same way. The verifier's side (rejections) is in policies/unsafe/loop_*
 * (test_verifier_elf) and test_verifier_hardening.
 * Usage: test_verifier_loop BINARY_DIR */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ncclbpf/ncclbpf.h"
#include "ncclbpf/policy.h"
#include "test_util.h"

static const enum ncclbpf_exec_mode modes[] = { NCCLBPF_EXEC_INTERPRET, NCCLBPF_EXEC_CHECKED,
						NCCLBPF_EXEC_JIT };
static const char *mode_name[] = { "default", "interpret", "jit", "checked" };

/* Runs program `name` of the object at `path` in `mode` on ctx; returns r0 (or ~0 on a
 * failure, reported). */
static uint64_t run(const char *path, const char *name, enum ncclbpf_exec_mode mode, void *ctx,
		    size_t ctx_size)
{
	char err[1024] = "";
	struct ncclbpf_object *obj = NULL;
	uint64_t r0 = ~0ull;
	if (ncclbpf_object_open_file(path, &obj, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", path, err);
		test_failures++;
		return r0;
	}
	struct ncclbpf_program *p = ncclbpf_object_find_program(obj, name);
	struct ncclbpf_map *sq = ncclbpf_object_find_map(obj, "squares");
	for (uint32_t i = 0; sq && i < 16; i++) {
		uint64_t v = (uint64_t)i * i;
		ncclbpf_map_update(sq, &i, &v, 0);
	}
	struct ncclbpf_prepare_opts o = { .sz = sizeof(o), .exec_mode = mode };
	int rc = p ? ncclbpf_program_prepare(p, NCCLBPF_HOOK_AUTO, &o, err, sizeof(err)) : -ENOENT;
	if (!rc)
		rc = ncclbpf_program_run(p, ctx, ctx_size, &r0, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s (%s): %d %s\n", name, mode_name[mode], rc, err);
		test_failures++;
		r0 = ~0ull;
	}
	if (!rc && mode == NCCLBPF_EXEC_JIT && !ncclbpf_program_is_jitted(p)) {
		fprintf(stderr, "%s: not JIT-compiled\n", name);
		test_failures++;
	}
	ncclbpf_object_close(obj);
	return r0;
}

/* Variable-offset stack access (tests/progs/verifier_stack_index.bpf.c): the results of
 * the C source computed here, for inputs that reach every element. */
static uint64_t stack_expect(const char *name, const struct ncclbpf_profiler_ctx *c)
{
	if (!strcmp(name, "stack_byte_table"))
		return (uint8_t)(c->n_ranks + 3 * (c->n_bytes & 15));
	if (!strcmp(name, "stack_histogram")) {
		uint32_t hist[16] = { 0 };
		uint64_t x = c->n_bytes, sum = 0;
		for (int k = 0; k < 8; k++, x >>= 4)
			hist[x & 15] += (uint32_t)k + 1;
		for (int k = 0; k < 16; k++)
			sum = sum * 3 + hist[k];
		return sum & 0x7fffffff;
	}
	uint32_t i = c->size_bucket;
	if (i >= 8)
		return 0;
	uint64_t v[8];
	for (int k = 0; k < 8; k++)
		v[k] = c->seq + (uint64_t)(k * k);
	v[i] += 100;
	return (v[i] + v[7 - i]) & 0xffff;
}

static void test_stack_index(const char *bin)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/tests/progs/verifier_stack_index.bpf.o", bin);
	static const char *const names[] = { "stack_byte_table", "stack_histogram",
					     "stack_checked_index" };
	for (uint64_t in = 0; in < 20; in++) {
		struct ncclbpf_profiler_ctx ctx;
		memset(&ctx, 0, sizeof(ctx));
		ctx.n_bytes = in * 0x9e3779b97f4a7c15ull + in;
		ctx.n_ranks = (uint32_t)in * 7;
		ctx.seq = in * 1000;
		ctx.size_bucket = (uint32_t)in;
		for (size_t p = 0; p < sizeof(names) / sizeof(names[0]); p++) {
			uint64_t want = stack_expect(names[p], &ctx);
			for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
				uint64_t r = run(path, names[p], modes[m], &ctx, sizeof(ctx));
				test_checks++;
				if (r != want) {
					test_failures++;
					fprintf(stderr, "%s (%s, input %llu): r0 = %llu, expected %llu\n",
						names[p], mode_name[modes[m]], (unsigned long long)in,
						(unsigned long long)r, (unsigned long long)want);
				}
			}
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s BINARY_DIR\n", argv[0]);
		return 2;
	}
	char path[1024];
	snprintf(path, sizeof(path), "%s/tests/progs/verifier_loop.bpf.o", argv[1]);
	static const struct {
		const char *name;
		uint64_t n_bytes;
		uint64_t expect;
	} cases[] = {
		{ "loop_stack_ctx", 0, 4950 * 1000 + 100 * 10 + 1 },
		{ "loop_break", 0, 11 * 100 + 11 },
		{ "loop_map_ctx", 0, 28 * 100 + 7 },
		{ "loop_lookup", 0, 5 * 100000 + 1240 },
		{ "loop_million", 0, 1000000 },
		{ "loop_input_count", 37, 3 },
		{ "loop_input_count", 0, 3 },
		{ "loop_search_linked", 12, 812 },
		{ "loop_search_linked", 5, 5 },
	};
	/* a million callbacks: over the profiler's 10^6 instructions per run unless
	 * NCCLBPF_MAX_INSNS raises the profiler's limit (the runtime's load path) */
	static const struct {
		const char *env;
		int rc;
	} limits[] = { { NULL, -EACCES }, { "tuner=1000000000", -EACCES },
		       { "1x", -EACCES /* malformed: the defaults */ }, { "5000010", -EACCES },
		       { "5000011", 0 /* the exact bound */ }, { "tuner=7,profiler=1000000000", 0 } };
	for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
		if (limits[l].env)
			setenv("NCCLBPF_MAX_INSNS", limits[l].env, 1);
		else
			unsetenv("NCCLBPF_MAX_INSNS");
		char err[1024] = "";
		struct ncclbpf_object *obj = NULL;
		CHECK(ncclbpf_object_open_file(path, &obj, err, sizeof(err)) == 0);
		struct ncclbpf_program *p = obj ? ncclbpf_object_find_program(obj, "loop_million")
						: NULL;
		struct ncclbpf_prepare_opts o = { .sz = sizeof(o) };
		int rc = p ? ncclbpf_program_prepare(p, NCCLBPF_HOOK_AUTO, &o, err, sizeof(err))
			   : -ENOENT;
		test_checks++;
		if (rc != limits[l].rc || (rc && !strstr(err, "[E-COST]"))) {
			test_failures++;
			fprintf(stderr, "NCCLBPF_MAX_INSNS=%s: loop_million prepare %d, expected %d: %s\n",
				limits[l].env ? limits[l].env : "(unset)", rc, limits[l].rc, err);
		}
		ncclbpf_object_close(obj);
	}
	setenv("NCCLBPF_MAX_INSNS", "profiler=1000000000", 1);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			struct ncclbpf_profiler_ctx ctx;
			memset(&ctx, 0, sizeof(ctx));
			ctx.n_bytes = cases[c].n_bytes;
			uint64_t r = run(path, cases[c].name, modes[m], &ctx, sizeof(ctx));
			test_checks++;
			if (r != cases[c].expect) {
				test_failures++;
				fprintf(stderr, "%s (%s, n_bytes %llu): r0 = %llu, expected %llu\n",
					cases[c].name, mode_name[modes[m]],
					(unsigned long long)cases[c].n_bytes, (unsigned long long)r,
					(unsigned long long)cases[c].expect);
			}
		}
	}
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct ncclbpf_tuner_ctx t;
		memset(&t, 0, sizeof(t));
		uint64_t r = run(path, "loop_tuner", modes[m], &t, sizeof(t));
		CHECK(r == 0 && t.n_channels == 8);
	}
	test_stack_index(argv[1]);
	snprintf(path, sizeof(path), "%s/tests/progs/verifier_div.bpf.o", argv[1]);
	static const struct {
		const char *name;
		uint32_t n_ranks, n_nodes;
		uint64_t expect;
	} div[] = {
		{ "div_by_input", 8, 0, 0 },       { "div_by_input", 8, 3, 2 },
		{ "div_zero_one_path", 8, 1, 0 },  { "div_zero_one_path", 8, 2, 2 },
		{ "mod_by_zero_imm", 8, 0, 8 },    { "mod32_by_input", 8, 0, 8 },
		{ "mod32_by_input", 8, 3, 2 },     { "div_checked", 8, 0, 1000 },
	};
	for (size_t c = 0; c < sizeof(div) / sizeof(div[0]); c++) {
		for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			struct ncclbpf_tuner_ctx t;
			memset(&t, 0, sizeof(t));
			t.n_ranks = div[c].n_ranks;
			t.n_nodes = div[c].n_nodes;
			uint64_t r = run(path, div[c].name, modes[m], &t, sizeof(t));
			test_checks++;
			if (r != div[c].expect) {
				test_failures++;
				fprintf(stderr, "%s (%s, %u / %u): r0 = %llu, expected %llu\n",
					div[c].name, mode_name[modes[m]], div[c].n_ranks, div[c].n_nodes,
					(unsigned long long)r, (unsigned long long)div[c].expect);
			}
		}
	}
	TEST_DONE();
}
