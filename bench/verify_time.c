/* bench_verify_time: verification time (CPU time of the verifier only) of
 *  - every program of the objects given (the shipped policies; rank-local ones verified
 *    with allow_rank_local so that every one is timed to the end),
 *  - counted loops of 10 ... 10,000 iterations (4-instruction body, and the everyday
 *    `for (__u32 i = 0; i < N; i++) bpf_map_lookup_elem(&m, &i)` with i in a 4-byte slot),
 *  - the same lookup as a bpf_loop callback (1,000 and 1,000,000 iterations),
 *  - a 16-instruction loop whose bound is an input: it can only end by exhausting the
 *    processed-instruction budget (1,000,000), which must be reported quickly.
 * max_insns: the verifier's bound of the instructions one run executes (">L": over the
 * hook's limit L, E-COST). Budgets (issue 14): shipped policy <= 1 ms, 1,000-iteration counted loop <= 1 ms,
 * budget exhaustion reported <= 200 ms. Prints the median and max of `reps` runs, and,
 * interleaved run by run, the baseline: the same verifier walking every loop iteration by
 * iteration (opts.no_widen: loop widening off, as before src/verifier/verifier_widen.c).
 *
 *   bench_verify_time [reps=21] [POLICY.bpf.o...]
 *   bench_verify_time [reps] --corpus DIR   the loop corpus (issue 24): every program of
 *     DIR/VARIANT/NAME.bpf.o (build/tests/verifier/loops: one variant per -mcpu and -O
 *     level), one row each, then a summary per variant (accepted, within 1 ms)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/object.h"
#include "verifier/verifier.h"
#include "../tests/verifier/insn_macros.h"

static const struct nb_map_def maps[] = {
	{ .name = "per_bucket", .origin = NB_MAP_ORIGIN_BTF, .type = 2, .key_size = 4,
	  .value_size = 8, .max_entries = 100000 },
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Verifies reps times, interleaved with the baseline: the same verifier walking every loop
 * (opts.no_widen, what it did before loop widening); prints one table row. Returns the
 * verdict of the last run. */
static int row(const char *what, const struct nb_program *p, const struct nb_map_def *m,
	       size_t map_cnt, const struct nb_hook_desc *h, int reps, double budget_ms,
	       double *median_ms)
{
	uint64_t *t = calloc((size_t)reps, sizeof(*t)), *tw = calloc((size_t)reps, sizeof(*tw));
	struct nb_verifier_stats st = { 0 }, stw = { 0 };
	struct nb_verifier_diag diag, wdiag;
	struct nb_verifier_opts opts = { .allow_rank_local = true };
	struct nb_verifier_opts walk = { .allow_rank_local = true, .no_widen = true };
	int rc = 0, wrc = 0;
	for (int i = 0; i < reps; i++) {
		rc = verifier_check(p, m, map_cnt, h, &opts, &diag, &st);
		t[i] = st.time_ns;
		wrc = verifier_check(p, m, map_cnt, h, &walk, &wdiag, &stw);
		tw[i] = stw.time_ns;
	}
	qsort(t, (size_t)reps, sizeof(*t), cmp_u64);
	qsort(tw, (size_t)reps, sizeof(*tw), cmp_u64);
	double med = (double)t[reps / 2] / 1e6, max = (double)t[reps - 1] / 1e6;
	double wmed = (double)tw[reps / 2] / 1e6;
	char wv[64];
	snprintf(wv, sizeof(wv), "%s, %llu", wrc == 0 ? "accepted" : verifier_err_code(wdiag.code),
		 (unsigned long long)stw.insns_processed);
	char mi[32] = "-"; /* the static bound of one run (E-COST above the hook's limit) */
	if (rc == 0 || (rc == -13 && diag.code == NB_VERR_COST))
		snprintf(mi, sizeof(mi), "%s%llu", rc ? ">" : "",
			 (unsigned long long)(rc ? st.max_insns_limit : st.max_insns));
	printf("| %-44s | %5zu | %9llu | %llu/%llu | %-16s | %11s | %8.3f | %8.3f | %s | %-22s | "
	       "%8.3f | %6.2fx |\n",
	       what, p->insn_cnt, (unsigned long long)st.insns_processed,
	       (unsigned long long)st.loops_widened, (unsigned long long)st.runs,
	       rc == 0 ? "accepted" : verifier_err_code(diag.code), mi, med, max,
	       med <= budget_ms ? "yes" : "NO", wv, wmed, med > 0 ? wmed / med : 0.0);
	free(t);
	free(tw);
	if (median_ms)
		*median_ms = med;
	return rc;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* Sorted entries of dir whose names end in suffix ("" = subdirectories); returns count. */
static int list_dir(const char *dir, const char *suffix, char names[][128], int max)
{
	DIR *d = opendir(dir);
	int n = 0;
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		size_t l = strlen(e->d_name), sl = strlen(suffix);
		if (e->d_name[0] == '.' || l >= 128 || l <= sl ||
		    (sl && strcmp(e->d_name + l - sl, suffix)))
			continue;
		memcpy(names[n++], e->d_name, l + 1);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), cmp_name);
	return n;
}

/* Loop corpus mode: one row per program of every variant, then per variant how many are
 * accepted and how many verify within 1 ms (median). Returns non-zero if nothing was read. */
static int corpus(const char *dir, int reps)
{
	static char variants[32][128], objs[64][128];
	int nv = list_dir(dir, "", variants, 32), total = 0;
	if (nv <= 0) {
		fprintf(stderr, "%s: no corpus variants (build the tests first)\n", dir);
		return 1;
	}
	struct { int progs, accepted, fast, fast_accepted; double max_ms; } sum[32] = { { 0 } };
	for (int v = 0; v < nv; v++) {
		char vd[1024];
		snprintf(vd, sizeof(vd), "%.800s/%.100s", dir, variants[v]);
		int no = list_dir(vd, ".bpf.o", objs, 64);
		for (int o = 0; o < no; o++) {
			char path[2048], err[256];
			snprintf(path, sizeof(path), "%.1000s/%.127s", vd, objs[o]);
			struct nb_object *obj = NULL;
			if (loader_open_file(path, &obj, err, sizeof(err))) {
				fprintf(stderr, "%s: %s\n", path, err);
				continue;
			}
			for (size_t i = 0; i < obj->prog_cnt; i++) {
				const struct nb_hook_desc *h = hook_for_section(obj->progs[i].section);
				if (!h)
					continue;
				char what[128];
				snprintf(what, sizeof(what), "%.8s/%.*s: %.26s", variants[v],
					 (int)(strlen(objs[o]) - 6 < 12 ? strlen(objs[o]) - 6 : 12),
					 objs[o], obj->progs[i].name);
				double med = 0;
				int rc = row(what, &obj->progs[i], obj->maps, obj->map_cnt, h, reps, 1.0,
					     &med);
				sum[v].progs++;
				sum[v].accepted += rc == 0;
				sum[v].fast += med <= 1.0;
				sum[v].fast_accepted += rc == 0 && med <= 1.0;
				if (med > sum[v].max_ms)
					sum[v].max_ms = med;
				total++;
			}
			loader_close(obj);
		}
	}
	printf("\n| variant | programs | accepted | verdict within 1 ms | accepted within 1 ms | "
	       "slowest median ms |\n|---|---|---|---|---|---|\n");
	for (int v = 0; v < nv; v++)
		printf("| %s | %d | %d | %d | %d | %.3f |\n", variants[v], sum[v].progs,
		       sum[v].accepted, sum[v].fast, sum[v].fast_accepted, sum[v].max_ms);
	return total == 0;
}

static void counted_loop(int n, int reps)
{
	/* r6 = 0; r7 = 0; do { r7 += r6; r6 += 1; } while (r6 < n); return r7 */
	struct bpf_insn prog[] = { MOV64_IMM(6, 0), MOV64_IMM(7, 0), ALU64_REG(BPF_ADD, 7, 6),
				   ALU64_IMM(BPF_ADD, 6, 1), JMP_IMM(BPF_JLT, 6, n, -3),
				   MOV64_REG(0, 7), EXIT() };
	struct nb_program p = { .name = "loop", .insns = prog, .insn_cnt = 7, .main_insn_cnt = 7 };
	char what[64];
	snprintf(what, sizeof(what), "counted loop, %d iterations", n);
	row(what, &p, maps, 1, hook_desc(NB_HOOK_PROFILER), reps, n <= 1000 ? 1.0 : 1e9, NULL);
}

static void lookup_loop(int n, int reps)
{
	/* for (__u32 i = 0; i < n; i++) sum += lookup(&m, &i) ? 1 : 0 */
	struct bpf_insn prog[] = {
		MOV64_IMM(7, 0), ST(BPF_W, 10, -4, 0), /* 2 */ MOV64_REG(2, 10),
		ALU64_IMM(BPF_ADD, 2, -4), LD_MAP(1, 0), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, 1),
		ALU64_IMM(BPF_ADD, 7, 1), LDX(BPF_W, 1, 10, -4), ALU64_IMM(BPF_ADD, 1, 1),
		STX(BPF_W, 10, 1, -4), JMP_IMM(BPF_JLT, 1, n, -11), MOV64_REG(0, 7), EXIT() };
	size_t cnt = sizeof(prog) / sizeof(prog[0]);
	struct nb_program p = { .name = "lookup_loop", .insns = prog, .insn_cnt = cnt,
				.main_insn_cnt = cnt };
	char what[64];
	snprintf(what, sizeof(what), "u32 i in a stack slot + lookup, %d iter.", n);
	row(what, &p, maps, 1, hook_desc(NB_HOOK_PROFILER), reps, n <= 1000 ? 1.0 : 1e9, NULL);
}

/* the lookup loop as a bpf_loop callback: verified once, whatever n */
static void bpf_loop_lookup(int n, int reps)
{
	struct bpf_insn prog[] = {
		MOV64_IMM(6, 0), STX(BPF_DW, 10, 6, -8), MOV64_IMM(1, n), LD_FUNC(2, 7),
		MOV64_REG(3, 10), ALU64_IMM(BPF_ADD, 3, -8), MOV64_IMM(4, 0), CALL(181),
		LDX(BPF_DW, 0, 10, -8), EXIT(),
		/* 11: callback(i, ctx): *ctx += lookup(&m, &i) != NULL */
		STX(BPF_W, 10, 1, -4), MOV64_REG(6, 2), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -4),
		LD_MAP(1, 0), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, 3), LDX(BPF_DW, 1, 6, 0),
		ALU64_IMM(BPF_ADD, 1, 1), STX(BPF_DW, 6, 1, 0), MOV64_IMM(0, 0), EXIT() };
	size_t cnt = sizeof(prog) / sizeof(prog[0]);
	struct nb_program p = { .name = "bpf_loop", .insns = prog, .insn_cnt = cnt,
				.main_insn_cnt = cnt };
	char what[64];
	snprintf(what, sizeof(what), "bpf_loop + lookup in the callback, %d iter.", n);
	row(what, &p, maps, 1, hook_desc(NB_HOOK_PROFILER), reps, 1.0, NULL);
}

static void budget_loop(int reps)
{
	/* 16 instructions; the bound comes from the context: never proven to end */
	struct bpf_insn prog[] = {
		LDX(BPF_DW, 6, 1, 16), MOV64_IMM(7, 0), MOV64_IMM(8, 0), /* 3 */
		ALU64_REG(BPF_ADD, 7, 8), ALU64_IMM(BPF_XOR, 7, 0x55), ALU64_IMM(BPF_AND, 7, 0xffff),
		ALU64_IMM(BPF_ADD, 8, 1), ALU64_IMM(BPF_LSH, 7, 1), ALU64_IMM(BPF_RSH, 7, 1),
		MOV64_REG(1, 7), ALU64_IMM(BPF_MUL, 1, 3), ALU64_REG(BPF_ADD, 7, 1),
		ALU64_IMM(BPF_AND, 7, 0xffff), JMP_REG(BPF_JLT, 8, 6, -11), MOV64_REG(0, 7), EXIT() };
	size_t cnt = sizeof(prog) / sizeof(prog[0]);
	struct nb_program p = { .name = "budget", .insns = prog, .insn_cnt = cnt,
				.main_insn_cnt = cnt };
	row("input-bounded loop (budget exhaustion)", &p, maps, 1, hook_desc(NB_HOOK_PROFILER),
	    reps, 200.0, NULL);
}

int main(int argc, char **argv)
{
	int reps = 21, first = 1;
	if (argc > 1 && strspn(argv[1], "0123456789") == strlen(argv[1])) {
		reps = atoi(argv[1]);
		first = 2;
	}
	if (reps < 1)
		reps = 1;
	bool corpus_mode = argc > first + 1 && !strcmp(argv[first], "--corpus");
	printf("| program | insns | processed | widened/runs | verdict | max_insns | median ms | "
	       "max ms | within budget | walking: verdict, processed | walking median ms | "
	       "walking/widening |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	if (corpus_mode)
		return corpus(argv[first + 1], reps);
	for (int a = first; a < argc; a++) {
		struct nb_object *obj = NULL;
		char err[256];
		if (loader_open_file(argv[a], &obj, err, sizeof(err))) {
			fprintf(stderr, "%s: %s\n", argv[a], err);
			continue;
		}
		for (size_t i = 0; i < obj->prog_cnt; i++) {
			const struct nb_hook_desc *h = hook_for_section(obj->progs[i].section);
			if (!h)
				continue;
			const char *base = strrchr(argv[a], '/');
			char what[96];
			snprintf(what, sizeof(what), "%.40s: %.40s", base ? base + 1 : argv[a],
				 obj->progs[i].name);
			row(what, &obj->progs[i], obj->maps, obj->map_cnt, h, reps, 1.0, NULL);
		}
		loader_close(obj);
	}
	static const int sizes[] = { 10, 100, 1000, 10000 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		counted_loop(sizes[i], reps);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		lookup_loop(sizes[i], reps);
	bpf_loop_lookup(1000, reps);
	bpf_loop_lookup(1000000, reps);
	budget_loop(reps < 5 ? reps : 5);
	return 0;
}
