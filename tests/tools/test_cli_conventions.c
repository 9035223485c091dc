/* The CLI's conventions (src/tools/main.c, docs/cli.md), command by command: --version,
 * help for every command, exit codes 0/1/2, one message per failure, range-checked
 * numbers, --json documents parsed and checked against their schema, caret diagnostics
 * and colour only on a terminal, inspection of objects built for the kernel, and
 * docs/cli.md generated from the --help text.
 * Usage: test_cli_conventions SOURCE_DIR   (runs ./ncclbpf in the build directory) */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli_run.h"
#include "profiler/json_mini.h"
#include "test_util.h"

static char *out;
static const char *srcdir;

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	free(out);
	return cli_run_alloc(cmd, &out, NULL);
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static size_t count_substr(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static struct jm *parse_json(const char *text)
{
	char err[256] = "";
	struct jm *v = jm_parse(text, err, sizeof(err));
	if (!v)
		fprintf(stderr, "JSON parse error: %s in:\n%s\n", err, text);
	return v;
}

static bool jtype(const struct jm *o, const char *k, enum jm_type t)
{
	const struct jm *v = o ? jm_get(o, k) : NULL;
	return v && v->type == t;
}

/* The command names listed by `ncclbpf help`. */
static size_t command_names(char names[][32], size_t max)
{
	CHECK(run("./ncclbpf help") == 0);
	const char *p = strstr(out, "\ncommands:\n");
	size_t n = 0;
	if (!p)
		return 0;
	for (p += 11; *p == ' ' && n < max;) {
		char name[32];
		if (sscanf(p, " %31s", name) == 1)
			snprintf(names[n++], 32, "%s", name);
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	return n;
}

static void test_version(void)
{
	CHECK(run("./ncclbpf --version") == 0);
	CHECK_STR_CONTAINS(out, "ncclbpf ");
	CHECK_STR_CONTAINS(out, "commit ");
	CHECK_STR_CONTAINS(out, "build)");
	CHECK_STR_CONTAINS(out, "JIT:");
	CHECK_STR_CONTAINS(out, "tuner ");
	CHECK_STR_CONTAINS(out, "profiler ");
	char *v1 = strdup(out);
	CHECK(run("./ncclbpf version") == 0);
	CHECK(!strcmp(v1, out));
	CHECK(run("./ncclbpf -V") == 0);
	CHECK(!strcmp(v1, out));
	free(v1);

	CHECK(run("./ncclbpf version --json") == 0);
	struct jm *j = parse_json(out);
	CHECK(j != NULL);
	CHECK(jm_str(j, "schema") && !strcmp(jm_str(j, "schema"), "ncclbpf.version/1"));
	CHECK(jm_str(j, "version") && jm_str(j, "commit") && jm_str(j, "build_type"));
	CHECK(jtype(j, "jit", JM_BOOL));
	CHECK(jm_str(j, "library") != NULL);
	const struct jm *abi = j ? jm_get(j, "abi") : NULL;
	CHECK(abi && abi->type == JM_OBJ);
	/* the library exports tuner v3..v6 and profiler v1..v6 today; versions come from
	 * dlsym, so check for the ones NCCL 2.27-2.30 bind */
	bool v5 = false, p4 = false;
	for (size_t i = 0; abi && jm_elem(abi, "tuner", i); i++)
		v5 |= jm_elem(abi, "tuner", i)->num == 5;
	for (size_t i = 0; abi && jm_elem(abi, "profiler", i); i++)
		p4 |= jm_elem(abi, "profiler", i)->num == 4;
	CHECK(v5 && p4);
	CHECK(abi && jtype(abi, "net", JM_ARR) && jtype(abi, "env", JM_ARR));
	jm_free(j);
	/* a library that is not there: the version lines, then one error, exit 1
	 * (tests/tools/test_cli_failclosed.c has the rest) */
	CHECK(run("./ncclbpf version --lib /nonexistent/lib.so 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "ncclbpf version: /nonexistent/lib.so: not loadable");
	CHECK(run("./ncclbpf version --frobnicate 2>&1") == 2);
}

static void test_help(void)
{
	char names[64][32];
	size_t n = command_names(names, 64);
	CHECK(n >= 8);
	const char *must[] = { "bench", "config", "ctl",   "decisions", "disasm", "exec", "help",
			       "info",	"rules",  "run",   "trace", "tune",	"verify", "version" };
	for (size_t k = 0; k < sizeof(must) / sizeof(must[0]); k++) {
		bool found = false;
		for (size_t i = 0; i < n; i++)
			found |= !strcmp(names[i], must[k]);
		CHECK(found);
	}
	for (size_t i = 0; i < n; i++) {
		char usage[128];
		snprintf(usage, sizeof(usage), "usage: ncclbpf %.31s", names[i]);
		CHECK(run("./ncclbpf help %s", names[i]) == 0);
		CHECK(!strncmp(out, usage, strlen(usage)));
		char *h = strdup(out);
		/* `CMD --help` and `-h` print the same text and never run the command (info
		 * used to open a file named --help, exec to read stdin) */
		if (strcmp(names[i], "help")) {
			CHECK(run("./ncclbpf %s --help </dev/null", names[i]) == 0);
			CHECK(!strcmp(h, out));
			CHECK(run("./ncclbpf %s -h </dev/null", names[i]) == 0);
			CHECK(!strcmp(h, out));
			CHECK(run("./ncclbpf %s x.o --help </dev/null", names[i]) == 0);
			CHECK(!strcmp(h, out));
			/* an unknown option is a usage error with one message naming it */
			CHECK(run("./ncclbpf %s --frobnicate </dev/null 2>&1", names[i]) == 2);
			CHECK_STR_CONTAINS(out, "--frobnicate");
			CHECK(count_lines(out) == 1);
			/* every command has a real help text: options or arguments */
			CHECK(strstr(h, "options:") || strstr(h, "arguments:"));
		}
		free(h);
	}
	CHECK(run("./ncclbpf --help") == 0);
	CHECK_STR_CONTAINS(out, "exit status");
	CHECK(run("./ncclbpf help --help") == 0);
	CHECK_STR_CONTAINS(out, "usage: ncclbpf help");
	CHECK(run("./ncclbpf help nosuch 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "unknown command 'nosuch'");
	CHECK(run("./ncclbpf nosuch 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "unknown command 'nosuch'");
	CHECK(run("./ncclbpf 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "usage: ncclbpf");
}

static void test_docs_current(void)
{
	char path[2048];
	snprintf(path, sizeof(path), "%s/docs/cli.md", srcdir);
	CHECK(run("(./ncclbpf help --markdown && ./mock_nccl_host --markdown) | diff -u '%s' - 2>&1",
		  path) == 0);
	if (out[0])
		fprintf(stderr, "docs/cli.md is stale: run `cmake --build build --target "
				"cli-docs`\n%s\n", out);
}

static void test_bad_inputs(void)
{
	/* one message per failure, the path once */
	CHECK(run("./ncclbpf info nosuch.o 2>&1") == 1);
	CHECK(count_lines(out) == 1);
	CHECK(count_substr(out, "nosuch.o") == 1);
	CHECK_STR_CONTAINS(out, "No such file");
	CHECK(run("./ncclbpf disasm nosuch.o 2>&1") == 1);
	CHECK(count_lines(out) == 1 && count_substr(out, "nosuch.o") == 1);
	CHECK(run("./ncclbpf verify nosuch.o 2>&1") == 1);
	CHECK(count_lines(out) == 1 && count_substr(out, "nosuch.o") == 1);
	/* a short text file is not an ELF file */
	CHECK(run("printf 'hello\\n' > cli_text.o && ./ncclbpf info cli_text.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "cli_text.o: error: not an ELF file");
	CHECK(count_lines(out) == 1);
	CHECK(run("printf 'x' > cli_text.o && ./ncclbpf verify cli_text.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "not an ELF file");
	CHECK(run("./ncclbpf disasm . 2>&1") == 1);
	unlink("cli_text.o");
	/* usage errors: 2 */
	CHECK(run("./ncclbpf info 2>&1") == 2);
	CHECK(run("./ncclbpf info a.o b.o 2>&1") == 2);
	CHECK(run("./ncclbpf disasm 2>&1") == 2);
	CHECK(run("./ncclbpf disasm a b c 2>&1") == 2);
	CHECK(run("./ncclbpf verify 2>&1") == 2);
	CHECK(run("./ncclbpf trace 2>&1") == 2);
	CHECK(run("./ncclbpf trace /nonexistent/dir -o /dev/null 2>&1") == 1);
	CHECK(run("./ncclbpf trace dir -o 2>&1") == 2);
	/* numeric options are range-checked */
	CHECK(run("./ncclbpf verify --budget -5 policies/noop.bpf.o 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "out of range");
	CHECK(count_lines(out) == 1);
	CHECK(run("./ncclbpf verify --budget 0 policies/noop.bpf.o 2>&1") == 2);
	CHECK(run("./ncclbpf verify --budget 12abc policies/noop.bpf.o 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "not an integer");
	CHECK(run("./ncclbpf verify --budget=100000 policies/noop.bpf.o 2>&1") == 0);
	CHECK(run("./ncclbpf verify --budget 2>&1") == 2);
	CHECK(run("./ncclbpf bench --calls 5 2>&1") == 2);
	CHECK(run("./ncclbpf bench --calls -1000 2>&1") == 2);
	CHECK(run("./ncclbpf bench --rounds 0 2>&1") == 2);
	CHECK(run("./ncclbpf bench --batch 5000 2>&1") == 2);
	/* a missing policy is an error before anything is measured */
	CHECK(run("./ncclbpf bench --calls 1000 --policies noop,nosuch 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "policy 'nosuch'");
	CHECK(strstr(out, "P50") == NULL);
	CHECK(run("./ncclbpf bench --calls 1000 --policy-dir /nonexistent 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "/nonexistent/noop.bpf.o");
}

static void test_verify(void)
{
	/* an object without programs is an error unless --allow-empty */
	CHECK(run("./ncclbpf verify tests/progs/cli_no_programs.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "no programs");
	CHECK(run("./ncclbpf verify --allow-empty tests/progs/cli_no_programs.bpf.o 2>&1") == 0);
	/* --type contradicting the section says so (and still verifies as asked) */
	CHECK(run("./ncclbpf verify --type tuner/chunk policies/noop.bpf.o 2>&1") == 0);
	CHECK_STR_CONTAINS(out, "warning: program 'noop' is in section 'tuner'");
	CHECK_STR_CONTAINS(out, "verifying it as tuner/chunk");
	CHECK(run("./ncclbpf verify --type tuner policies/noop.bpf.o 2>&1") == 0);
	CHECK(strstr(out, "warning") == NULL);
	/* a section naming no hook */
	CHECK(run("./ncclbpf verify tests/progs/loader_textonly.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "names no hook");

	/* caret under the column; no escape codes when stdout is not a terminal */
	CHECK(run("./ncclbpf verify policies/unsafe/null_deref.bpf.o") == 1);
	CHECK_STR_CONTAINS(out, "null_deref.bpf.c:16:12: error: ");
	CHECK_STR_CONTAINS(out, "    16 | return v->count;");
	/* column 12 of "\treturn v->count;" is the '-', shown without the tab */
	CHECK_STR_CONTAINS(out, "\n       |           ^\n");
	CHECK(strchr(out, '\033') == NULL);
	/* colour on a terminal (script(1) gives the command a pty), none with NO_COLOR */
	if (access("/usr/bin/script", X_OK) == 0) {
		CHECK(run("env -u NO_COLOR TERM=xterm script -qec './ncclbpf verify "
			  "policies/unsafe/null_deref.bpf.o' /dev/null") == 1);
		CHECK(strstr(out, "\033[1;31merror:") != NULL);
		CHECK(strstr(out, "\033[1;32m^") != NULL);
		CHECK(run("NO_COLOR=1 TERM=xterm script -qec './ncclbpf verify "
			  "policies/unsafe/null_deref.bpf.o' /dev/null") == 1);
		CHECK_STR_CONTAINS(out, "E-NULL-DEREF");
		CHECK(strchr(out, '\033') == NULL);
	}

	/* --json: accepted, rejected, missing, empty, in one document */
	CHECK(run("./ncclbpf verify --json --stats policies/noop.bpf.o "
		  "policies/unsafe/null_spill.bpf.o nosuch.o tests/progs/cli_no_programs.bpf.o") == 1);
	struct jm *j = parse_json(out);
	CHECK(j != NULL);
	CHECK(jm_str(j, "schema") && !strcmp(jm_str(j, "schema"), "ncclbpf.verify/1"));
	CHECK(jtype(j, "ok", JM_BOOL) && !jm_get(j, "ok")->b);
	const struct jm *o0 = jm_elem(j, "objects", 0), *o1 = jm_elem(j, "objects", 1),
			*o2 = jm_elem(j, "objects", 2), *o3 = jm_elem(j, "objects", 3);
	CHECK(o0 && o1 && o2 && o3 && !jm_elem(j, "objects", 4));
	const struct jm *p0 = jm_elem(o0, "programs", 0);
	CHECK(jm_str(o0, "file") && strstr(jm_str(o0, "file"), "noop.bpf.o"));
	CHECK(jtype(o0, "error", JM_NULL));
	CHECK(jm_str(p0, "name") && !strcmp(jm_str(p0, "name"), "noop"));
	CHECK(jm_str(p0, "verdict") && !strcmp(jm_str(p0, "verdict"), "accepted"));
	CHECK(jm_str(p0, "hook") && !strcmp(jm_str(p0, "hook"), "tuner"));
	CHECK(jm_str(p0, "section_hook") && !strcmp(jm_str(p0, "section_hook"), "tuner"));
	CHECK(jm_elem(p0, "diagnostics", 0) == NULL && jtype(p0, "diagnostics", JM_ARR));
	const struct jm *st = p0 ? jm_get(p0, "stats") : NULL;
	CHECK(st && st->type == JM_OBJ && jm_num(st, "processed") > 0 && jm_num(st, "insns") > 0 &&
	      jm_num(st, "time_ms") >= 0);
	const struct jm *p1 = jm_elem(o1, "programs", 0);
	CHECK(jm_str(p1, "verdict") && !strcmp(jm_str(p1, "verdict"), "rejected"));
	const struct jm *d = jm_elem(p1, "diagnostics", 0);
	CHECK(d != NULL);
	CHECK(jm_str(d, "file") && strstr(jm_str(d, "file"), "null_spill.bpf.c"));
	CHECK(jm_num(d, "line") == 19);
	CHECK(jtype(d, "column", JM_NUM));
	CHECK(jm_str(d, "code") && !strcmp(jm_str(d, "code"), "E-NULL-DEREF"));
	CHECK(jm_num(d, "insn") == 9);
	CHECK(jm_str(d, "instruction") && !strcmp(jm_str(d, "instruction"), "r0 = *(u64 *)(r1 + 0)"));
	CHECK(jm_str(d, "message") && strstr(jm_str(d, "message"), "may be NULL"));
	CHECK(jm_str(d, "severity") && !strcmp(jm_str(d, "severity"), "error"));
	CHECK(jm_str(d, "source") && strstr(jm_str(d, "source"), "r0 = *(u64 *)(r1 + 0);"));
	CHECK(jm_str(o2, "error") && strstr(jm_str(o2, "error"), "No such file"));
	CHECK(jtype(o2, "programs", JM_ARR));
	CHECK(jm_str(o3, "error") && strstr(jm_str(o3, "error"), "no programs"));
	jm_free(j);
	run("./ncclbpf verify --json --type profiler policies/noop.bpf.o");
	j = parse_json(out);
	const struct jm *pn = jm_elem(jm_elem(j, "objects", 0), "programs", 0);
	CHECK(jm_str(pn, "note") && strstr(jm_str(pn, "note"), "section 'tuner'"));
	CHECK(jm_str(pn, "hook") && !strcmp(jm_str(pn, "hook"), "profiler"));
	jm_free(j);
	CHECK(run("./ncclbpf verify --json policies/noop.bpf.o") == 0);
	j = parse_json(out);
	CHECK(jtype(j, "ok", JM_BOOL) && jm_get(j, "ok")->b);
	jm_free(j);
}

static void test_info_and_kernel_objects(void)
{
	CHECK(run("./ncclbpf info --json tests/progs/runtime_maps.bpf.o") == 0);
	struct jm *j = parse_json(out);
	CHECK(jm_str(j, "schema") && !strcmp(jm_str(j, "schema"), "ncclbpf.info/1"));
	CHECK(jtype(j, "btf", JM_BOOL) && jm_get(j, "btf")->b);
	CHECK(jm_str(j, "license") != NULL);
	const struct jm *p = jm_elem(j, "programs", 0);
	CHECK(jm_str(p, "name") && !strcmp(jm_str(p, "name"), "pick"));
	CHECK(jm_str(p, "hook") && !strcmp(jm_str(p, "hook"), "tuner"));
	CHECK(jm_num(p, "insns") > 0 && jm_elem(p, "functions", 0));
	const struct jm *m = jm_elem(j, "maps", 0);
	CHECK(jm_str(m, "name") && !strcmp(jm_str(m, "name"), "calls"));
	CHECK(jm_str(m, "type") && !strcmp(jm_str(m, "type"), "hash"));
	CHECK(jm_num(m, "type_id") == 1 && jm_num(m, "key_size") == 8 && jm_num(m, "max_entries") == 64);
	CHECK(jtype(m, "supported", JM_BOOL) && jm_get(m, "supported")->b);
	CHECK(jm_str(m, "origin") && !strcmp(jm_str(m, "origin"), "btf"));
	jm_free(j);

	/* kernel-only map types, numa_node / map_extra, long names, LD_ABS/LD_IND:
	 * inspected without creating any map */
	CHECK(run("./ncclbpf info tests/progs/cli_kernel_object.bpf.o 2>&1") == 0);
	CHECK_STR_CONTAINS(out, "perf_event_array");
	CHECK_STR_CONTAINS(out, "(kernel-only)");
	CHECK_STR_CONTAINS(out, "numa_node / map_extra are set");
	CHECK(strstr(out, "map 'events': map 'events'") == NULL);
	CHECK(run("./ncclbpf info --json tests/progs/cli_kernel_object.bpf.o") == 0);
	j = parse_json(out);
	const struct jm *ev = jm_elem(j, "maps", 0), *seen = jm_elem(j, "maps", 2),
			*numa = jm_elem(j, "maps", 3);
	CHECK(jm_str(ev, "type") && !strcmp(jm_str(ev, "type"), "perf_event_array"));
	CHECK(jtype(ev, "supported", JM_BOOL) && !jm_get(ev, "supported")->b);
	CHECK(jm_num(seen, "map_extra") == 3);
	CHECK(jm_num(numa, "numa_node") == 1);
	CHECK(jm_str(numa, "name") && strlen(jm_str(numa, "name")) > 64);
	p = jm_elem(j, "programs", 0);
	CHECK(jm_str(p, "name") && strlen(jm_str(p, "name")) > 256);
	CHECK(jtype(p, "hook", JM_NULL));
	jm_free(j);
	CHECK(run("./ncclbpf disasm tests/progs/cli_kernel_object.bpf.o") == 0);
	CHECK_STR_CONTAINS(out, "r0 = *(u16 *)skb[12]");
	CHECK_STR_CONTAINS(out, "r0 = *(u8 *)skb[r3]");
	CHECK_STR_CONTAINS(out, "r0 = *(u32 *)skb[-4]");
	CHECK_STR_CONTAINS(out, "# map events");
	CHECK(run("./ncclbpf info tests/progs/cli_kernel_object.bpf.o") == 0);
	CHECK_STR_CONTAINS(out, "externs (2):");
	CHECK_STR_CONTAINS(out, "bpf_rcu_read_lock        function (kfunc)");
	CHECK_STR_CONTAINS(out, "LINUX_KERNEL_VERSION     variable");
	CHECK(run("./ncclbpf info --json tests/progs/cli_kernel_object.bpf.o") == 0);
	j = parse_json(out);
	const struct jm *x0 = jm_elem(j, "externs", 0), *x1 = jm_elem(j, "externs", 1);
	CHECK(jm_str(x0, "name") && jm_str(x1, "name") && jm_str(x0, "kind") && jm_str(x1, "kind"));
	CHECK(x0 && x1 && !strcmp(jm_str(x0, "kind"), "function") &&
	      !strcmp(jm_str(x1, "kind"), "variable"));
	jm_free(j);
	CHECK(run("./ncclbpf disasm tests/progs/cli_kernel_object.bpf.o") == 0);
	CHECK_STR_CONTAINS(out, "call -1");
	/* loading it for real (verify, the runtime) is refused, with one clear reason */
	CHECK(run("./ncclbpf verify tests/progs/cli_kernel_object.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "extern");
	CHECK(count_lines(out) == 1);
	CHECK(run("LD_LIBRARY_PATH=. env -u NCCL_DEBUG NCCLBPF_POLICY=tests/progs/"
		  "cli_kernel_object.bpf.o ./mock_nccl_host simulate 2>/dev/null") == 0);
	CHECK_STR_CONTAINS(out, "SKIPPED   tests/progs/cli_kernel_object.bpf.o: ");
	CHECK_STR_CONTAINS(out, "extern");

	/* map-in-map and program arrays with initial values: inspected, refused for loading */
	CHECK(run("./ncclbpf info tests/progs/cli_map_in_map.bpf.o") == 0);
	CHECK_STR_CONTAINS(out, "array_of_maps");
	CHECK_STR_CONTAINS(out, "prog_array");
	CHECK(run("./ncclbpf disasm tests/progs/cli_map_in_map.bpf.o") == 0);
	CHECK_STR_CONTAINS(out, "<on_open>:");
	CHECK(run("./ncclbpf verify tests/progs/cli_map_in_map.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "'values' is not supported");

	/* e_machine 0 (old LLVM) is accepted, as libbpf does */
	CHECK(run("cp tests/progs/runtime_maps.bpf.o cli_em0.o && printf '\\000\\000' | "
		  "dd of=cli_em0.o bs=1 seek=18 conv=notrunc 2>/dev/null && "
		  "./ncclbpf info cli_em0.o 2>&1") == 0);
	CHECK_STR_CONTAINS(out, "programs (2)");
	CHECK(run("printf '\\001\\000' | dd of=cli_em0.o bs=1 seek=18 conv=notrunc 2>/dev/null && "
		  "./ncclbpf info cli_em0.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "not EM_BPF");
	unlink("cli_em0.o");
}

static void test_bench_json(void)
{
	CHECK(run("NCCL_DEBUG=WARN ./ncclbpf bench --json --calls 1000 --rounds 1 --batch 8 "
		  "--policies noop") == 0);
	struct jm *j = parse_json(out);
	CHECK(jm_str(j, "schema") && !strcmp(jm_str(j, "schema"), "ncclbpf.bench/1"));
	CHECK(jm_str(j, "unit") && !strcmp(jm_str(j, "unit"), "ns"));
	CHECK(jm_num(j, "calls") == 1000 && jm_num(j, "rounds") == 1 && jm_num(j, "batch") == 8);
	const struct jm *r = jm_elem(j, "results", 0);
	CHECK(jm_str(r, "policy") && !strcmp(jm_str(r, "policy"), "noop"));
	const char *modes[] = { "native", "interpreter", "jit" };
	for (int m = 0; m < 3; m++) {
		const struct jm *x = r ? jm_get(r, modes[m]) : NULL;
		CHECK(x && x->type == JM_OBJ && jtype(x, "p50_ns", JM_NUM) &&
		      jtype(x, "p99_ns", JM_NUM) && jtype(x, "error", JM_NULL));
		CHECK(x && (m == 0 ? jtype(x, "overhead_p50_ns", JM_NULL)
				   : jtype(x, "overhead_p50_ns", JM_NUM)));
	}
	jm_free(j);
	/* the text table names its unit */
	CHECK(run("NCCL_DEBUG=WARN ./ncclbpf bench --calls 1000 --rounds 1 --batch 8 "
		  "--policies noop") == 0);
	CHECK_STR_CONTAINS(out, "baseline            P50/P99 ns");
	CHECK_STR_CONTAINS(out, "noop             native");
}

/* mock_nccl_host: help per command, valid values in its errors, range checks, and a
 * rejected policy impossible to miss (one stderr line with NCCL_DEBUG unset, the simulate
 * table saying which entries were skipped). */
/* tune, rules and config (once on their own convention): usage errors 2 with one message,
 * refused input 1 with the file located, range-checked numbers, tune's --json document. */
static void test_tune_rules_config(void)
{
	FILE *f = fopen("cli_tune.csv", "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fprintf(f, "coll,bytes,algo,proto,channels,nranks,nnodes,time_us\n");
	for (int k = 0; k < 8; k++) {
		fprintf(f, "AllReduce,4096,default,default,0,2,2,%d\n", 100 + k);
		fprintf(f, "AllReduce,4096,Tree,LL,0,2,2,%d\n", 60 + k);
	}
	fclose(f);
	f = fopen("cli_rules.conf", "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fprintf(f, "# a comment\nallreduce,0,65536,tree,ll,-1,-1,-1\n");
	fclose(f);

	/* tune: usage errors */
	CHECK(run("./ncclbpf tune 2>&1") == 2);
	CHECK(count_lines(out) == 1 && strstr(out, "help tune"));
	CHECK(run("./ncclbpf tune --alpha 2 cli_tune.csv 2>&1") == 2);
	CHECK(count_lines(out) == 1 && strstr(out, "--alpha"));
	CHECK(run("./ncclbpf tune --min-samples 1 cli_tune.csv 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "out of range");
	CHECK(run("./ncclbpf tune --min-samples 6x cli_tune.csv 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "not an integer");
	CHECK(run("./ncclbpf tune --large-from -1 cli_tune.csv 2>&1") == 2);
	CHECK(run("./ncclbpf tune --reps bogus cli_tune.csv 2>&1") == 2);
	CHECK(run("./ncclbpf tune cli_tune.csv -o 2>&1") == 2);
	/* tune: refused input */
	CHECK(run("./ncclbpf tune nosuch.csv 2>&1") == 1);
	CHECK(count_lines(out) == 1 && strstr(out, "nosuch.csv: error:"));
	CHECK(run("printf 'coll,bytes\\nAllReduce,x\\n' > cli_bad.csv && "
		  "./ncclbpf tune cli_bad.csv 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "cli_bad.csv:");
	/* tune --json: one versioned document, the ranges inside (--opt=V accepted) */
	CHECK(run("./ncclbpf tune --json --min-samples=6 cli_tune.csv 2>/dev/null") == 0);
	struct jm *j = parse_json(out);
	CHECK(j != NULL);
	CHECK(jm_str(j, "schema") && !strcmp(jm_str(j, "schema"), "ncclbpf.tune/1"));
	const struct jm *r0 = jm_elem(j, "ranges", 0);
	CHECK(r0 && !jm_elem(j, "ranges", 1));
	CHECK(jm_str(r0, "coll") && !strcmp(jm_str(r0, "coll"), "AllReduce"));
	CHECK(jm_num(r0, "nranks") == 2 && jm_num(r0, "min_bytes") == 4096);
	CHECK(jm_str(r0, "algo") && !strcmp(jm_str(r0, "algo"), "Tree"));
	const struct jm *g = r0 ? jm_get(r0, "gates") : NULL;
	CHECK(g && g->type == JM_OBJ && jtype(g, "passed", JM_BOOL) && jm_get(g, "passed")->b);
	jm_free(j);

	/* rules compile */
	CHECK(run("./ncclbpf rules 2>&1") == 2);
	CHECK(count_lines(out) == 1 && strstr(out, "compile"));
	CHECK(run("./ncclbpf rules frobnicate x.conf -o x.o 2>&1") == 2);
	CHECK(count_lines(out) == 1 && strstr(out, "frobnicate"));
	CHECK(run("./ncclbpf rules compile cli_rules.conf 2>&1") == 2);
	CHECK(count_lines(out) == 1 && strstr(out, "-o"));
	CHECK(run("./ncclbpf rules compile a.conf b.conf -o x.o 2>&1") == 2);
	CHECK(run("./ncclbpf rules compile nosuch.conf -o cli_rules.bpf.o 2>&1") == 1);
	CHECK(count_lines(out) == 1 && strstr(out, "nosuch.conf: error:"));
	CHECK(run("printf 'allreduce,0,65536,tree,ll\\n' > cli_bad.conf && "
		  "./ncclbpf rules compile cli_bad.conf -o cli_rules.bpf.o 2>&1; echo rc=$?; ls") == 0);
	CHECK_STR_CONTAINS(out, "cli_bad.conf:1");
	CHECK_STR_CONTAINS(out, "rc=1\n");
	CHECK(strstr(out, "cli_rules.bpf.o") == NULL); /* nothing written */
	CHECK(run("./ncclbpf rules compile cli_rules.conf --output=cli_rules.bpf.o 2>&1") == 0);
	CHECK_STR_CONTAINS(out, "1 rule from cli_rules.conf");

	/* config, on the object rules compile wrote (its rule table is .rodata) */
	CHECK(run("./ncclbpf config 2>&1") == 2);
	CHECK(count_lines(out) == 1);
	CHECK(run("./ncclbpf config cli_rules.bpf.o n_rules=1 2>&1") == 2);
	CHECK(count_lines(out) == 1 && strstr(out, "-o OUT"));
	CHECK(run("./ncclbpf config cli_rules.bpf.o -o cli_cfg.bpf.o 2>&1") == 2);
	CHECK(run("./ncclbpf config cli_rules.bpf.o 'x[1=2' -o cli_cfg.bpf.o 2>&1") == 2);
	CHECK(run("./ncclbpf config cli_rules.bpf.o x=12abc -o cli_cfg.bpf.o 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "not a 64-bit integer");
	CHECK(run("./ncclbpf config nosuch.o 2>&1") == 1);
	CHECK(count_lines(out) == 1 && strstr(out, "nosuch.o: error:"));
	CHECK(run("./ncclbpf config cli_rules.bpf.o nosuch_var=1 -o cli_cfg.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "no .rodata variable 'nosuch_var'");
	CHECK(run("./ncclbpf config cli_rules.bpf.o") == 0);
	CHECK(out[0] != '\0');
	/* assignments before OBJ still work; a second bare argument is a usage error */
	CHECK(run("./ncclbpf config nosuch_var=1 cli_rules.bpf.o -o cli_cfg.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "no .rodata variable 'nosuch_var'");
	CHECK(run("./ncclbpf config cli_rules.bpf.o other.o 2>&1") == 2);
	CHECK(count_lines(out) == 1 && strstr(out, "other.o"));
	unlink("cli_tune.csv");
	unlink("cli_bad.csv");
	unlink("cli_rules.conf");
	unlink("cli_bad.conf");
	unlink("cli_rules.bpf.o");
	unlink("cli_cfg.bpf.o");
}

static void test_mock_host(void)
{
	const char *env = "LD_LIBRARY_PATH=. env -u NCCL_DEBUG -u NCCLBPF_POLICY";
	CHECK(run("./mock_nccl_host --help") == 0);
	CHECK_STR_CONTAINS(out, "commands:");
	const char *cmds[] = { "simulate", "stress", "versions" };
	for (int i = 0; i < 3; i++) {
		char usage[64];
		snprintf(usage, sizeof(usage), "usage: mock_nccl_host %s", cmds[i]);
		CHECK(run("./mock_nccl_host help %s", cmds[i]) == 0);
		CHECK(!strncmp(out, usage, strlen(usage)));
		char *h = strdup(out);
		CHECK(run("./mock_nccl_host %s --help", cmds[i]) == 0);
		CHECK(!strcmp(h, out));
		free(h);
		CHECK(run("./mock_nccl_host %s --frobnicate 1 2>&1", cmds[i]) == 2);
		CHECK(count_lines(out) == 1);
	}
	CHECK(run("./mock_nccl_host 2>&1") == 2);
	CHECK(run("./mock_nccl_host frobnicate 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "unknown command 'frobnicate'");
	CHECK(run("./mock_nccl_host simulate --topo bogus 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "valid: nvlink-node, multi-node");
	CHECK(run("./mock_nccl_host simulate --nccl 1.0 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "supported: 2.27, 2.28");
	CHECK(run("./mock_nccl_host simulate --ranks 0 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "out of range");
	CHECK(run("./mock_nccl_host simulate --ranks 4 --nodes 8 2>&1") == 2);
	CHECK(run("./mock_nccl_host stress --iters x 2>&1") == 2);
	CHECK(run("./mock_nccl_host stress --topo nvlink-node 2>&1") == 2); /* not a stress option */

	/* NCCL_DEBUG unset: the skipped entry is one line on stderr, and the table says so */
	CHECK(run("%s NCCLBPF_POLICY=/nonexistent/x.bpf.o,policies/size_aware.bpf.o "
		  "./mock_nccl_host simulate --nccl 2.29 2>cli_stderr.txt", env) == 0);
	CHECK_STR_CONTAINS(out, "  SKIPPED   /nonexistent/x.bpf.o: No such file or directory");
	CHECK_STR_CONTAINS(out, "  attached  policies/size_aware.bpf.o:size_aware to hook tuner");
	CHECK(run("cat cli_stderr.txt") == 0);
	CHECK(count_substr(out, "ncclbpf: policy /nonexistent/x.bpf.o skipped: No such file") == 1);
	CHECK(count_lines(out) == 1);
	/* a verifier rejection: the diagnostic's code in the one line */
	CHECK(run("%s NCCLBPF_POLICY=policies/unsafe/null_deref.bpf.o ./mock_nccl_host "
		  "simulate 2>&1 >/dev/null", env) == 0);
	CHECK(count_substr(out, "[E-NULL-DEREF]") == 1 && count_substr(out, "skipped") == 1);
	/* NCCL_DEBUG=WARN: NCCL's WARN line, and no second copy */
	CHECK(run("%s NCCL_DEBUG=WARN NCCLBPF_POLICY=/nonexistent/x.bpf.o ./mock_nccl_host "
		  "simulate 2>&1 >/dev/null", env) == 0);
	CHECK(count_substr(out, "skipped") == 1);
	CHECK_STR_CONTAINS(out, "NCCL WARN ncclbpf: policy /nonexistent/x.bpf.o skipped");
	unlink("cli_stderr.txt");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_cli_conventions SOURCE_DIR\n");
		return 2;
	}
	srcdir = argv[1];
	test_version();
	test_help();
	test_docs_current();
	test_bad_inputs();
	test_verify();
	test_info_and_kernel_objects();
	test_bench_json();
	test_tune_rules_config();
	test_mock_host();
	free(out);
	TEST_DONE();
}
