/* Public API end to end: open / prepare / run / map access on clang-compiled objects, in
 * every execution mode, with the hooks' context-size checks, verifier modes, helpers,
 * disassembly and raw conformance programs. */
#include <errno.h>
#include <stdlib.h>

#include "maps/map.h"
#include "rt_test_common.h"
#include "test_util.h"

static const enum ncclbpf_exec_mode all_modes[] = {
	NCCLBPF_EXEC_DEFAULT, NCCLBPF_EXEC_INTERPRET, NCCLBPF_EXEC_CHECKED, NCCLBPF_EXEC_JIT};
static const char *mode_names[] = {"default", "interpret", "checked", "jit"};

static uint64_t map_u64(struct ncclbpf_object *obj, const char *map, uint64_t key64,
			uint32_t key32, bool key_is_32)
{
	uint64_t v[64] = {0xdeadbeef}; /* global-data maps may hold more than one variable */
	struct ncclbpf_map *m = ncclbpf_object_find_map(obj, map);
	CHECK(m != NULL);
	if (!m || ncclbpf_map_value_size(m) > sizeof(v))
		return 0xdeadbeef;
	int rc = key_is_32 ? ncclbpf_map_lookup(m, &key32, v) : ncclbpf_map_lookup(m, &key64, v);
	CHECK(rc == 0);
	return v[0];
}

static void test_object_model(void)
{
	char err[512];
	struct ncclbpf_object *obj = NULL;

	CHECK(ncclbpf_object_open_file("tests/progs/does_not_exist.bpf.o", &obj, err,
				       sizeof(err)) < 0);
	CHECK(obj == NULL);
	CHECK(err[0] != '\0');

	obj = rt_open(RT_PROG("runtime_maps"));
	CHECK(ncclbpf_object_has_btf(obj));
	CHECK_STR_CONTAINS(ncclbpf_object_name(obj), "runtime_maps");
	CHECK_EQ_U64(ncclbpf_object_program_count(obj), 2);
	struct ncclbpf_program *pick = ncclbpf_object_find_program(obj, "pick");
	struct ncclbpf_program *obs = ncclbpf_object_find_program(obj, "observe");
	CHECK(pick && obs);
	CHECK(ncclbpf_object_find_program(obj, "pick_channels") == NULL); /* a subprogram */
	CHECK(ncclbpf_object_program(obj, 2) == NULL);
	if (!pick || !obs)
		return;
	CHECK(!strcmp(ncclbpf_program_section(pick), "tuner"));
	CHECK(ncclbpf_program_section_hook(pick) == NCCLBPF_HOOK_TUNER);
	CHECK(ncclbpf_program_section_hook(obs) == NCCLBPF_HOOK_PROFILER);
	CHECK(ncclbpf_program_insn_count(pick) > 40); /* entry + appended pick_channels */

	struct ncclbpf_map *calls = ncclbpf_object_find_map(obj, "calls");
	struct ncclbpf_map *arr = ncclbpf_object_find_map(obj, "bytes_per_coll");
	CHECK(calls && arr);
	CHECK(ncclbpf_object_find_map(obj, ".rodata") && ncclbpf_object_find_map(obj, ".data") &&
	      ncclbpf_object_find_map(obj, ".bss"));
	if (calls && arr) {
		CHECK_EQ_U64(ncclbpf_map_type(calls), NB_MAP_TYPE_HASH);
		CHECK_EQ_U64(ncclbpf_map_key_size(calls), 8);
		CHECK_EQ_U64(ncclbpf_map_value_size(calls), 8);
		CHECK_EQ_U64(ncclbpf_map_max_entries(calls), 64);
		CHECK_EQ_U64(ncclbpf_map_type(arr), NB_MAP_TYPE_ARRAY);
		CHECK_EQ_U64(ncclbpf_map_max_entries(arr), 8);
		CHECK(!strcmp(ncclbpf_map_name(calls), "calls"));
	}
	/* global data initialised from the file */
	CHECK_EQ_U64(map_u64(obj, ".data", 0, 0, true), 7);
	CHECK_EQ_U64(map_u64(obj, ".bss", 0, 0, true), 0);
	CHECK_EQ_U64(map_u64(obj, ".rodata", 0, 0, true) & 0xffffffff, 3);

	/* host map API: kernel errors */
	if (calls) {
		uint64_t k = 5, v = 50, out = 0, next = 0;
		CHECK(ncclbpf_map_lookup(calls, &k, &out) == -ENOENT);
		CHECK(ncclbpf_map_delete(calls, &k) == -ENOENT);
		CHECK(ncclbpf_map_update(calls, &k, &v, NB_EXIST) == -ENOENT);
		CHECK(ncclbpf_map_update(calls, &k, &v, NB_NOEXIST) == 0);
		CHECK(ncclbpf_map_update(calls, &k, &v, NB_NOEXIST) == -EEXIST);
		CHECK(ncclbpf_map_lookup(calls, &k, &out) == 0 && out == 50);
		CHECK(ncclbpf_map_get_next_key(calls, NULL, &next) == 0 && next == 5);
		CHECK(ncclbpf_map_get_next_key(calls, &next, &next) == -ENOENT);
		CHECK(ncclbpf_map_delete(calls, &k) == 0);
		CHECK(ncclbpf_map_lookup(calls, NULL, &out) == -EINVAL);
	}
	if (arr) {
		uint32_t k = 8;
		uint64_t v = 1;
		CHECK(ncclbpf_map_update(arr, &k, &v, NB_ANY) == -E2BIG); /* index out of range */
	}
	/* unprepared programs do not run */
	struct ncclbpf_tuner_ctx c;
	uint64_t r0;
	rt_tuner_ctx(&c, 1, 1, 1);
	CHECK(ncclbpf_program_run(pick, &c, sizeof(c), &r0, err, sizeof(err)) == -EINVAL);
	ncclbpf_object_close(obj);
}

/* The tuner program in one execution mode: results, map side effects, ctx checks. */
static void test_tuner_mode(enum ncclbpf_exec_mode mode, const char *mname)
{
	char err[2048];
	struct ncclbpf_object *obj = rt_open(RT_PROG("runtime_maps"));
	struct ncclbpf_program *pick = ncclbpf_object_find_program(obj, "pick");
	struct ncclbpf_program *obs = ncclbpf_object_find_program(obj, "observe");
	struct ncclbpf_tuner_ctx c;
	uint64_t r0 = 0;

	int rc = rt_prepare(pick, NCCLBPF_HOOK_AUTO, mode, NCCLBPF_VERIFY_DEFAULT, err, sizeof(err));
	if (mode == NCCLBPF_EXEC_JIT && !vm_jit_available()) {
		CHECK(rc < 0);
		ncclbpf_object_close(obj);
		return;
	}
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "mode %s: %s\n", mname, err);
		ncclbpf_object_close(obj);
		return;
	}
	if (mode == NCCLBPF_EXEC_JIT)
		CHECK(ncclbpf_program_is_jitted(pick));
	if (mode == NCCLBPF_EXEC_INTERPRET || mode == NCCLBPF_EXEC_CHECKED)
		CHECK(!ncclbpf_program_is_jitted(pick));

	rt_tuner_ctx(&c, 42, 4096, NCCLBPF_COLL_ALLREDUCE);
	CHECK(ncclbpf_program_run(pick, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 1);
	CHECK_EQ_U64(c.algo, NCCLBPF_ALGO_RING);
	CHECK_EQ_U64(c.proto, NCCLBPF_PROTO_SIMPLE);
	CHECK_EQ_U64(c.n_channels, 3);
	CHECK(ncclbpf_program_run(pick, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 2);
	rt_tuner_ctx(&c, 42, 2u << 20, NCCLBPF_COLL_ALLREDUCE);
	CHECK(ncclbpf_program_run(pick, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 3);
	CHECK_EQ_U64(c.n_channels, 12);
	rt_tuner_ctx(&c, 7, 100, NCCLBPF_COLL_BROADCAST);
	CHECK(ncclbpf_program_run(pick, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 1);

	/* what the program wrote, seen through the host API */
	CHECK_EQ_U64(map_u64(obj, "calls", 42, 0, false), 3);
	CHECK_EQ_U64(map_u64(obj, "calls", 7, 0, false), 1);
	CHECK_EQ_U64(map_u64(obj, "bytes_per_coll", 0, NCCLBPF_COLL_ALLREDUCE, true),
		     4096 + 4096 + (2u << 20));
	CHECK_EQ_U64(map_u64(obj, "bytes_per_coll", 0, NCCLBPF_COLL_BROADCAST, true), 100);
	CHECK_EQ_U64(map_u64(obj, ".data", 0, 0, true), 7 + 4);
	CHECK_EQ_U64(map_u64(obj, ".bss", 0, 0, true), 100);

	/* what the host writes, seen by the program */
	uint64_t k = 42, v = 100;
	CHECK(ncclbpf_map_update(ncclbpf_object_find_map(obj, "calls"), &k, &v, NB_EXIST) == 0);
	rt_tuner_ctx(&c, 42, 1, NCCLBPF_COLL_ALLREDUCE);
	CHECK(ncclbpf_program_run(pick, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 101);

	/* context size must be the hook's exactly */
	CHECK(ncclbpf_program_run(pick, &c, sizeof(c) - 1, &r0, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "192");
	CHECK(ncclbpf_program_run(pick, NULL, sizeof(c), &r0, err, sizeof(err)) == -EINVAL);
	struct ncclbpf_profiler_ctx pc;
	CHECK(ncclbpf_program_run(pick, &pc, sizeof(pc), &r0, err, sizeof(err)) == -EINVAL);

	/* the profiler program on the same object */
	CHECK(rt_prepare(obs, NCCLBPF_HOOK_AUTO, mode, NCCLBPF_VERIFY_DEFAULT, err, sizeof(err)) == 0);
	memset(&pc, 0, sizeof(pc));
	pc.gpu_ns = 777;
	CHECK(ncclbpf_program_run(obs, &pc, sizeof(pc), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(map_u64(obj, "bytes_per_coll", 0, 7, true), 777);
	CHECK(ncclbpf_program_run(obs, &c, sizeof(c), &r0, err, sizeof(err)) == -EINVAL);
	/* re-preparing is allowed and keeps the maps */
	CHECK(rt_prepare(pick, NCCLBPF_HOOK_TUNER, mode, NCCLBPF_VERIFY_STRICT, err, sizeof(err)) == 0);
	rt_tuner_ctx(&c, 42, 1, NCCLBPF_COLL_ALLREDUCE);
	CHECK(ncclbpf_program_run(pick, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 102);
	ncclbpf_object_close(obj);
}

static void test_chunk_and_hooks(void)
{
	char err[1024];
	struct ncclbpf_object *obj = rt_open(RT_PROG("runtime_order"));
	struct ncclbpf_program *chunk = ncclbpf_object_find_program(obj, "chunk");
	struct ncclbpf_program *first = ncclbpf_object_find_program(obj, "first");
	uint64_t r0;

	CHECK(ncclbpf_program_section_hook(chunk) == NCCLBPF_HOOK_TUNER_CHUNK);
	CHECK(rt_prepare(chunk, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == 0);
	struct ncclbpf_chunk_ctx cc = {.n_bytes = 1, .chunk_size = 131072};
	CHECK(ncclbpf_program_run(chunk, &cc, sizeof(cc), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(cc.chunk_size, 262144);
	struct ncclbpf_tuner_ctx tc;
	CHECK(ncclbpf_program_run(chunk, &tc, sizeof(tc), &r0, err, sizeof(err)) == -EINVAL);
	/* a tuner program verified against the read-only profiler context is rejected */
	CHECK(rt_prepare(first, NCCLBPF_HOOK_PROFILER, 0, 0, err, sizeof(err)) == -EACCES);
	CHECK(err[0] != '\0');
	CHECK(rt_prepare(first, (enum ncclbpf_hook)42, 0, 0, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "unknown hook");
	CHECK(rt_prepare(first, NCCLBPF_HOOK_AUTO, (enum ncclbpf_exec_mode)7, 0, err, sizeof(err)) ==
	      -EINVAL);
	CHECK(rt_prepare(first, NCCLBPF_HOOK_AUTO, 0, (enum ncclbpf_verify_mode)7, err, sizeof(err)) ==
	      -EINVAL);
	/* hook names */
	enum ncclbpf_hook h;
	CHECK(ncclbpf_hook_from_name("tuner", &h) == 0 && h == NCCLBPF_HOOK_TUNER);
	CHECK(ncclbpf_hook_from_name("profiler", &h) == 0 && h == NCCLBPF_HOOK_PROFILER);
	CHECK(ncclbpf_hook_from_name("nonsense", &h) == -ENOENT);
	CHECK(!strcmp(ncclbpf_hook_name(NCCLBPF_HOOK_TUNER), "tuner"));
	CHECK(ncclbpf_hook_name((enum ncclbpf_hook)99) == NULL);
	ncclbpf_object_close(obj);
}

static void test_verify_modes(void)
{
	char err[2048];
	struct ncclbpf_object *obj = rt_open(RT_PROG("runtime_bad"));
	struct ncclbpf_program *bad = ncclbpf_object_find_program(obj, "unchecked");
	struct ncclbpf_program *nohook = ncclbpf_object_find_program(obj, "nohook");
	struct ncclbpf_tuner_ctx c;
	uint64_t r0;

	CHECK(ncclbpf_program_section_hook(nohook) == NCCLBPF_HOOK_AUTO);
	CHECK(rt_prepare(nohook, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "names no hook");

	/* strict (default): rejected with the diagnostic and source line */
	CHECK(rt_prepare(bad, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == -EACCES);
	CHECK_STR_CONTAINS(err, "E-NULL-DEREF");
	CHECK_STR_CONTAINS(err, "runtime_bad.bpf.c");
	CHECK(rt_prepare(bad, NCCLBPF_HOOK_AUTO, 0, NCCLBPF_VERIFY_STRICT, err, sizeof(err)) == -EACCES);

	/* NCCLBPF_VERIFY=warn: loud log line, loads anyway; the checked interpreter then
	 * catches the NULL dereference the verifier predicted */
	setenv("NCCLBPF_VERIFY", "warn", 1);
	rt_clear_logs();
	CHECK(rt_prepare(bad, NCCLBPF_HOOK_AUTO, NCCLBPF_EXEC_CHECKED, 0, err, sizeof(err)) == 0);
	CHECK_STR_CONTAINS(rt_logs(), "LOADING UNVERIFIED");
	CHECK_STR_CONTAINS(rt_logs(), "E-NULL-DEREF");
	CHECK_EQ_U64(rt_warn_count(), 1);
	rt_tuner_ctx(&c, 1, 1, 2);
	CHECK(ncclbpf_program_run(bad, &c, sizeof(c), &r0, err, sizeof(err)) == -EFAULT);
	CHECK_STR_CONTAINS(err, "unchecked");
	/* an explicit mode beats the environment */
	CHECK(rt_prepare(bad, NCCLBPF_HOOK_AUTO, 0, NCCLBPF_VERIFY_STRICT, err, sizeof(err)) == -EACCES);
	/* unknown values fall back to strict, with a warning */
	setenv("NCCLBPF_VERIFY", "lenient", 1);
	rt_clear_logs();
	CHECK(rt_prepare(bad, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == -EACCES);
	CHECK_STR_CONTAINS(rt_logs(), "unknown value, using strict");
	unsetenv("NCCLBPF_VERIFY");

	/* NCCLBPF_VERIFY_OFF (conformance only): loads */
	CHECK(rt_prepare(bad, NCCLBPF_HOOK_AUTO, NCCLBPF_EXEC_CHECKED, NCCLBPF_VERIFY_OFF, err,
			 sizeof(err)) == 0);
	/* Regression (issue 14): unverified programs (warn or off) never run in the JIT or the
	 * plain interpreter, which trust the proof: a NULL dereference there killed the host.
	 * Explicit modes are refused; the default mode runs them checked. */
	CHECK(rt_prepare(bad, NCCLBPF_HOOK_AUTO, NCCLBPF_EXEC_JIT, NCCLBPF_VERIFY_OFF, err,
			 sizeof(err)) == -EPERM);
	CHECK_STR_CONTAINS(err, "checked interpreter");
	CHECK(rt_prepare(bad, NCCLBPF_HOOK_AUTO, NCCLBPF_EXEC_INTERPRET, NCCLBPF_VERIFY_WARN, err,
			 sizeof(err)) == -EPERM);
	CHECK(rt_prepare(bad, NCCLBPF_HOOK_AUTO, NCCLBPF_EXEC_DEFAULT, NCCLBPF_VERIFY_WARN, err,
			 sizeof(err)) == 0);
	CHECK(!ncclbpf_program_is_jitted(bad));
	CHECK(ncclbpf_program_run(bad, &c, sizeof(c), &r0, err, sizeof(err)) == -EFAULT);
	CHECK_STR_CONTAINS(err, "unchecked");
	ncclbpf_object_close(obj);
}

static void test_jit_env(void)
{
	char err[512];
	struct ncclbpf_object *obj = rt_open(RT_PROG("runtime_order"));
	struct ncclbpf_program *first = ncclbpf_object_find_program(obj, "first");

	setenv("NCCLBPF_JIT", "0", 1);
	CHECK(rt_prepare(first, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == 0);
	CHECK(!ncclbpf_program_is_jitted(first));
	setenv("NCCLBPF_JIT", "1", 1);
	CHECK(rt_prepare(first, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == 0);
	CHECK(ncclbpf_program_is_jitted(first) == vm_jit_available());
	unsetenv("NCCLBPF_JIT");
	ncclbpf_object_close(obj);
}

static void test_helpers(void)
{
	char err[1024];
	struct ncclbpf_object *obj = rt_open(RT_PROG("runtime_printk"));
	struct ncclbpf_program *say = ncclbpf_object_find_program(obj, "say");
	struct ncclbpf_tuner_ctx c;
	uint64_t r0;
	int differ = 0, prev = -1;

	CHECK(rt_prepare(say, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == 0);
	rt_clear_logs();
	for (int i = 0; i < 20; i++) {
		rt_tuner_ctx(&c, 1, 4096, 4);
		CHECK(ncclbpf_program_run(say, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
		CHECK(c.n_channels >= 0 && c.n_channels <= 255);
		differ += prev >= 0 && prev != c.n_channels;
		prev = c.n_channels;
	}
	CHECK(differ > 0); /* bpf_get_prandom_u32 is not constant */
	CHECK_STR_CONTAINS(rt_logs(), "ncclbpf: bpf_trace_printk: coll=4 bytes=4096 neg=-5");
	ncclbpf_object_close(obj);
}

static void test_disasm(void)
{
	struct ncclbpf_object *obj = rt_open(RT_PROG("runtime_maps"));
	struct ncclbpf_program *pick = ncclbpf_object_find_program(obj, "pick");
	int n = ncclbpf_program_disasm(pick, NULL, 0);
	CHECK(n > 0);
	char *buf = malloc((size_t)n + 1);
	CHECK(ncclbpf_program_disasm(pick, buf, (size_t)n + 1) == n);
	CHECK_EQ_U64(strlen(buf), (size_t)n);
	CHECK_STR_CONTAINS(buf, "<pick>:");
	CHECK_STR_CONTAINS(buf, "<pick_channels>:");
	CHECK_STR_CONTAINS(buf, "call 1");
	CHECK_STR_CONTAINS(buf, "# map calls");
	CHECK_STR_CONTAINS(buf, "# &.rodata + 0");
	CHECK_STR_CONTAINS(buf, "; runtime_maps.bpf.c:");
	CHECK_STR_CONTAINS(buf, "bpf_map_lookup_elem(&calls, &key)");
	CHECK_STR_CONTAINS(buf, "exit");
	char small[16];
	CHECK(ncclbpf_program_disasm(pick, small, sizeof(small)) == n);
	CHECK_EQ_U64(strlen(small), sizeof(small) - 1);
	free(buf);
	ncclbpf_object_close(obj);
}

/* Raw conformance programs (no ELF): r1 = memory, r2 = length, helper 5 = identity. */
static void test_conformance(void)
{
	char err[512];
	struct ncclbpf_object *obj;
	uint64_t r0 = 0;
	/* r0 = r2; r0 += *(u8 *)(r1 + 4); r1 = r0; call 5; exit */
	static const uint8_t prog[] = {
		0xbf, 0x20, 0, 0, 0, 0, 0, 0,   0x71, 0x13, 4, 0, 0, 0, 0, 0,
		0x0f, 0x30, 0, 0, 0, 0, 0, 0,   0xbf, 0x01, 0, 0, 0, 0, 0, 0,
		0x85, 0x00, 0, 0, 5, 0, 0, 0,   0x95, 0, 0, 0, 0, 0, 0, 0};
	/* r0 = *(u64 *)(r1 + 8); exit: out of bounds on 5 bytes */
	static const uint8_t oob[] = {0x79, 0x10, 8, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0};
	uint8_t mem[5] = {1, 2, 3, 4, 100};

	CHECK(runtime_object_from_insns(prog, 12, "x", &obj, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "multiple of 8");
	for (size_t m = 0; m < 4; m++) {
		CHECK(runtime_object_from_insns(prog, sizeof(prog), "conf", &obj, err, sizeof(err)) == 0);
		struct ncclbpf_program *p = ncclbpf_object_find_program(obj, "main");
		CHECK(p != NULL);
		int rc = rt_prepare(p, NCCLBPF_HOOK_CONFORMANCE, all_modes[m], NCCLBPF_VERIFY_OFF, err,
				    sizeof(err));
		if (all_modes[m] == NCCLBPF_EXEC_JIT || all_modes[m] == NCCLBPF_EXEC_INTERPRET) {
			CHECK(rc == -EPERM); /* unverified: checked interpreter only */
			rc = 0;
		} else {
			CHECK(rc == 0);
			r0 = 0;
			CHECK(ncclbpf_program_run(p, mem, sizeof(mem), &r0, err, sizeof(err)) == 0);
			CHECK_EQ_U64(r0, 105);
			/* the conformance hook takes any size */
			CHECK(ncclbpf_program_run(p, mem, 4 + 1, &r0, err, sizeof(err)) == 0);
		}
		if (rc)
			fprintf(stderr, "conformance mode %s: %s\n", mode_names[m], err);
		ncclbpf_object_close(obj);
	}
	CHECK(runtime_object_from_insns(oob, sizeof(oob), "oob", &obj, err, sizeof(err)) == 0);
	struct ncclbpf_program *p = ncclbpf_object_program(obj, 0);
	CHECK(rt_prepare(p, NCCLBPF_HOOK_CONFORMANCE, NCCLBPF_EXEC_CHECKED, NCCLBPF_VERIFY_OFF, err,
			 sizeof(err)) == 0);
	CHECK(ncclbpf_program_run(p, mem, sizeof(mem), &r0, err, sizeof(err)) == -EFAULT);
	CHECK(err[0] != '\0');
	/* the verifier, told the memory is 5 bytes, rejects the same program */
	CHECK(runtime_program_prepare_mem(p, NCCLBPF_HOOK_CONFORMANCE,
					  &(struct ncclbpf_prepare_opts){.sz = sizeof(struct ncclbpf_prepare_opts),
									 .verify_mode = NCCLBPF_VERIFY_STRICT},
					  sizeof(mem), err, sizeof(err)) == -EACCES);
	ncclbpf_object_close(obj);

	/* Regression (review): a program verified for N bytes of memory must only run on N
	 * bytes (the verifier relied on that size, and on a non-NULL buffer) */
	CHECK(runtime_object_from_insns(prog, sizeof(prog), "sized", &obj, err, sizeof(err)) == 0);
	p = ncclbpf_object_find_program(obj, "main");
	CHECK(runtime_program_prepare_mem(p, NCCLBPF_HOOK_CONFORMANCE,
					  &(struct ncclbpf_prepare_opts){.sz = sizeof(struct ncclbpf_prepare_opts),
									 .verify_mode = NCCLBPF_VERIFY_STRICT},
					  sizeof(mem), err, sizeof(err)) == 0);
	CHECK(ncclbpf_program_run(p, mem, sizeof(mem), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, sizeof(mem) + mem[4]);
	CHECK(ncclbpf_program_run(p, mem, sizeof(mem) - 1, &r0, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "verified for 5 bytes");
	CHECK(ncclbpf_program_run(p, NULL, sizeof(mem), &r0, err, sizeof(err)) == -EINVAL);
	ncclbpf_object_close(obj);

	/* Defence in depth: code the verifier proved dead is linked as a trap. With 8 bytes of
	 * memory r1 is never NULL, so "if r1 == 0" leads to dead code; forcing that path (the
	 * interpreter called directly with r1 = 0) faults at the trap instead of running it. */
	static const uint8_t dead[] = {
		0x15, 0x01, 2, 0, 0, 0, 0, 0,   /* if r1 == 0 goto +2 */
		0xb7, 0x00, 0, 0, 7, 0, 0, 0,   /* r0 = 7 */
		0x95, 0, 0, 0, 0, 0, 0, 0,      /* exit */
		0xb7, 0x00, 0, 0, 9, 0, 0, 0,   /* r0 = 9 (dead) */
		0x95, 0, 0, 0, 0, 0, 0, 0};     /* exit (dead) */
	uint8_t m8[8] = {0};
	CHECK(runtime_object_from_insns(dead, sizeof(dead), "dead", &obj, err, sizeof(err)) == 0);
	p = ncclbpf_object_find_program(obj, "main");
	CHECK(runtime_program_prepare_mem(p, NCCLBPF_HOOK_CONFORMANCE,
					  &(struct ncclbpf_prepare_opts){.sz = sizeof(struct ncclbpf_prepare_opts),
									 .exec_mode = NCCLBPF_EXEC_INTERPRET,
									 .verify_mode = NCCLBPF_VERIFY_STRICT},
					  sizeof(m8), err, sizeof(err)) == 0);
	CHECK(ncclbpf_program_run(p, m8, sizeof(m8), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 7);
	CHECK(p->linked[3].code == (BPF_JMP | BPF_CALL) && p->linked[3].imm == 0);
	CHECK(p->linked[1].code == (BPF_ALU64 | BPF_MOV | BPF_K)); /* live code untouched */
	struct vm_fault f;
	CHECK(vm_interp_run(&p->vm, 0, sizeof(m8), &r0, NULL, &f) == -EFAULT);
	CHECK(f.kind == VM_FAULT_BAD_HELPER && f.pc == 3);
	ncclbpf_object_close(obj);
}

/* ncclbpf_program_run's direct path (issue 14, decision-path cost): JIT code of a
 * fixed-context hook that can neither fault nor needs a map epoch is a tail call of its
 * store entry; everything else, and every error, takes the general path with the same
 * results and messages as before. A counting wrapper in place of the store entry shows
 * which path each call took. */
static int direct_calls;
static vm_jit_store_fn direct_real;

static int counting_store(uint64_t a1, uint64_t a2, uint64_t *r0)
{
	direct_calls++;
	return direct_real(a1, a2, r0);
}

static void test_run_paths(void)
{
	char err[512];
	struct ncclbpf_tuner_ctx c;
	struct ncclbpf_object *obj;
	uint64_t r0;
	/* r0 = 5; exit */
	static const uint8_t five[] = {0xb7, 0, 0, 0, 5, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0};
	/* call +1; exit; r0 = 3; exit (a local call: the JIT checks the call depth) */
	static const uint8_t call[] = {0x85, 0x10, 0, 0, 1, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0,
				       0xb7, 0, 0, 0, 3, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0};

	if (!vm_jit_available())
		return;
	CHECK(runtime_object_from_insns(five, sizeof(five), "five", &obj, err, sizeof(err)) == 0);
	struct ncclbpf_program *p = ncclbpf_object_find_program(obj, "main");
	CHECK(runtime_program_run_path(p) == RUNTIME_RUN_UNPREPARED);
	CHECK(rt_prepare(p, NCCLBPF_HOOK_TUNER, NCCLBPF_EXEC_JIT, NCCLBPF_VERIFY_STRICT, err,
			 sizeof(err)) == 0);
	CHECK(runtime_program_run_path(p) == RUNTIME_RUN_JIT_DIRECT);
	CHECK(p->fast_store != NULL && p->fast_entry != NULL);
	direct_real = p->fast_store;
	p->fast_store = counting_store;
	direct_calls = 0;
	rt_tuner_ctx(&c, 1, 1, 0);
	r0 = 0;
	CHECK(ncclbpf_program_run(p, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 5);
	CHECK(direct_calls == 1);
	/* errors and a NULL result pointer: the general path */
	CHECK(ncclbpf_program_run(p, &c, sizeof(c) - 1, &r0, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "192");
	CHECK(ncclbpf_program_run(p, &c, sizeof(c) + 8, &r0, err, sizeof(err)) == -EINVAL);
	CHECK(ncclbpf_program_run(p, NULL, sizeof(c), &r0, err, sizeof(err)) == -EINVAL);
	CHECK(ncclbpf_program_run(NULL, &c, sizeof(c), &r0, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "not prepared");
	CHECK(ncclbpf_program_run(p, &c, sizeof(c), NULL, err, sizeof(err)) == 0);
	CHECK(direct_calls == 1);
	/* the shim's inline path calls the raw entry itself */
	r0 = 0;
	CHECK(runtime_program_run_direct(p, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 5);
	CHECK(direct_calls == 1);
	p->fast_store = direct_real;

	/* interpreters and unverified programs: never the direct path */
	static const struct {
		enum ncclbpf_exec_mode em;
		enum ncclbpf_verify_mode vm;
		enum runtime_run_path path;
	} modes[] = {
		{NCCLBPF_EXEC_INTERPRET, NCCLBPF_VERIFY_STRICT, RUNTIME_RUN_INTERPRETER},
		{NCCLBPF_EXEC_CHECKED, NCCLBPF_VERIFY_STRICT, RUNTIME_RUN_CHECKED},
		{NCCLBPF_EXEC_DEFAULT, NCCLBPF_VERIFY_OFF, RUNTIME_RUN_CHECKED},
	};
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		CHECK(rt_prepare(p, NCCLBPF_HOOK_TUNER, modes[i].em, modes[i].vm, err,
				 sizeof(err)) == 0);
		CHECK(runtime_program_run_path(p) == modes[i].path);
		CHECK(p->fast_store == NULL && p->fast_entry == NULL);
		r0 = 0;
		CHECK(ncclbpf_program_run(p, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
		CHECK_EQ_U64(r0, 5);
		r0 = 0;
		CHECK(runtime_program_run_direct(p, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
		CHECK_EQ_U64(r0, 5);
		CHECK(runtime_program_run_direct(p, &c, sizeof(c) - 1, &r0, err, sizeof(err)) ==
		      -EINVAL);
	}
	ncclbpf_object_close(obj);

	/* JIT code that may fault: a fault record per call */
	CHECK(runtime_object_from_insns(call, sizeof(call), "call", &obj, err, sizeof(err)) == 0);
	p = ncclbpf_object_find_program(obj, "main");
	CHECK(rt_prepare(p, NCCLBPF_HOOK_TUNER, NCCLBPF_EXEC_JIT, NCCLBPF_VERIFY_STRICT, err,
			 sizeof(err)) == 0);
	CHECK(runtime_program_run_path(p) == RUNTIME_RUN_JIT_FAULT_REC);
	CHECK(p->fast_store == NULL && p->fast_entry == NULL && p->fast != NULL);
	r0 = 0;
	CHECK(ncclbpf_program_run(p, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 3);
	ncclbpf_object_close(obj);

	/* a hash map: inside an epoch; an array map only: direct */
	obj = rt_open("policies/lookup_update.bpf.o");
	p = ncclbpf_object_program(obj, 0);
	CHECK(rt_prepare(p, NCCLBPF_HOOK_TUNER, NCCLBPF_EXEC_JIT, NCCLBPF_VERIFY_STRICT, err,
			 sizeof(err)) == 0);
	CHECK(runtime_program_run_path(p) == RUNTIME_RUN_JIT_EPOCH);
	CHECK(p->fast_store == NULL);
	CHECK(ncclbpf_program_run(p, &c, sizeof(c), &r0, err, sizeof(err)) == 0);
	ncclbpf_object_close(obj);
	obj = rt_open(RT_PROG("runtime_maps"));
	p = ncclbpf_object_find_program(obj, "observe");
	CHECK(rt_prepare(p, NCCLBPF_HOOK_AUTO, NCCLBPF_EXEC_JIT, NCCLBPF_VERIFY_STRICT, err,
			 sizeof(err)) == 0);
	CHECK(runtime_program_run_path(p) == RUNTIME_RUN_JIT_DIRECT);
	ncclbpf_object_close(obj);
}

int main(void)
{
	rt_capture_logs();
	test_object_model();
	for (size_t m = 0; m < sizeof(all_modes) / sizeof(all_modes[0]); m++)
		test_tuner_mode(all_modes[m], mode_names[m]);
	test_chunk_and_hooks();
	test_verify_modes();
	test_jit_env();
	test_helpers();
	test_disasm();
	test_conformance();
	test_run_paths();
	TEST_DONE();
}
