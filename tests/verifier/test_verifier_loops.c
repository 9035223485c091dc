/* The loop corpus (issue 24 item 1): loop shapes as clang emits them, written in plain C
 * (tests/verifier/loops/NAME.bpf.c) and compiled by CMake for every -mcpu and -O level it
 * knows (build/tests/verifier/loops/<variant>/). Each program declares its verdict in a
 * comment above it:
 *   EXPECT: accept MIN MAX        accepted, with MIN <= max_insns <= MAX (MIN is what one
 *                                  run really executes at least: the bound is not too low;
 *                                  MAX: not absurdly high)
 *   EXPECT: E-CODE                rejected with that code
 *   EXPECT(v1-O1): ...            the same for the variants whose name starts so (checked
 *                                  before the plain EXPECT)
 * and this test checks each one in each variant, with the limits the runtime applies (the
 * hook's run limit and budget), and prints one line per program with the verifier's work.
 * Usage: test_verifier_loops SOURCE_DIR BINARY_DIR VARIANT...; exits 77 (skipped) when the
 * corpus was not built. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "loader/object.h"
#include "test_util.h"
#include "verifier/hooks.h"
#include "verifier/verifier.h"

#define MAX_PROGS 128
#define MAX_EXPECT 4

struct expect {
	char variant[MAX_EXPECT][32]; /* "" = any */
	char code[MAX_EXPECT][32];    /* "accept" or an E-code */
	uint64_t min[MAX_EXPECT], max[MAX_EXPECT];
	int n;
};

struct prog_expect {
	char name[128];
	struct expect e;
};

static int parse_source(const char *path, struct prog_expect *out, int max)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[512];
	struct expect pending = { .n = 0 };
	int n = 0;
	bool sec = false;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "EXPECT");
		if (p && pending.n < MAX_EXPECT) {
			int k = pending.n;
			pending.variant[k][0] = 0;
			p += 6;
			if (*p == '(') {
				size_t l = strcspn(p + 1, ")");
				if (l >= sizeof(pending.variant[k]))
					l = sizeof(pending.variant[k]) - 1;
				memcpy(pending.variant[k], p + 1, l);
				pending.variant[k][l] = 0;
				p += l + 2;
			}
			if (*p != ':')
				continue;
			unsigned long long lo = 0, hi = 0;
			char code[32] = "";
			int got = sscanf(p + 1, " %31s %llu %llu", code, &lo, &hi);
			if (got < 1 || (!strcmp(code, "accept") && got != 3))
				continue;
			memcpy(pending.code[k], code, sizeof(code));
			pending.min[k] = lo;
			pending.max[k] = hi;
			pending.n++;
			continue;
		}
		if (strstr(line, "SEC(\"") && !strstr(line, ".maps") && !strstr(line, "license"))
			sec = true;
		char *paren;
		if (sec && (paren = strchr(line, '('))) {
			/* "SEC("x") int name(" or "int name(" on the next line */
			char *q = paren;
			if (strstr(line, "SEC(\"")) {
				q = strchr(strchr(line, ')') + 1, '(');
				if (!q)
					continue;
			}
			char *e = q;
			while (e > line && (e[-1] == '_' || (e[-1] >= 'a' && e[-1] <= 'z') ||
					    (e[-1] >= 'A' && e[-1] <= 'Z') || (e[-1] >= '0' && e[-1] <= '9')))
				e--;
			if (n < max && q > e && (size_t)(q - e) < sizeof(out[n].name)) {
				memcpy(out[n].name, e, (size_t)(q - e));
				out[n].name[q - e] = 0;
				out[n].e = pending;
				n++;
			}
			pending.n = 0;
			sec = false;
		}
	}
	fclose(f);
	return n;
}

/* The expectation that applies to variant v, or -1. */
static int pick(const struct expect *e, const char *v)
{
	for (int k = 0; k < e->n; k++)
		if (e->variant[k][0] && !strncmp(v, e->variant[k], strlen(e->variant[k])))
			return k;
	for (int k = 0; k < e->n; k++)
		if (!e->variant[k][0])
			return k;
	return -1;
}

static unsigned checked_programs, accepted_programs;

static void check_object(const char *src_dir, const char *bin_dir, const char *variant,
			 const char *src_name)
{
	char src[2048], obj_path[2048], err[256];
	snprintf(src, sizeof(src), "%.1000s/%.200s", src_dir, src_name);
	snprintf(obj_path, sizeof(obj_path), "%.1000s/%.32s/%.*s.o", bin_dir, variant,
		 (int)(strlen(src_name) - 2), src_name);
	static struct prog_expect pe[MAX_PROGS];
	int np = parse_source(src, pe, MAX_PROGS);
	CHECK(np > 0);
	struct nb_object *obj = NULL;
	if (loader_open_file(obj_path, &obj, err, sizeof(err))) {
		test_failures++;
		fprintf(stderr, "%s: %s\n", obj_path, err);
		return;
	}
	CHECK((int)obj->prog_cnt == np); /* every program declares its verdict */
	for (size_t i = 0; i < obj->prog_cnt; i++) {
		const struct nb_program *p = &obj->progs[i];
		int j = 0;
		while (j < np && strcmp(pe[j].name, p->name))
			j++;
		test_checks++;
		int k = j < np ? pick(&pe[j].e, variant) : -1;
		if (k < 0) {
			test_failures++;
			fprintf(stderr, "%s/%s: program %s has no EXPECT comment\n", variant, src_name,
				p->name);
			continue;
		}
		const struct expect *e = &pe[j].e;
		struct nb_verifier_diag diag;
		struct nb_verifier_stats st = { 0 };
		int rc = verifier_check(p, obj->maps, obj->map_cnt, hook_for_section(p->section),
					NULL, &diag, &st);
		const char *got = rc == -EACCES ? verifier_err_code(diag.code)
						: rc == 0 ? "accept" : "internal-error";
		bool ok = !strcmp(got, e->code[k]);
		if (ok && rc == 0)
			ok = st.max_insns >= e->min[k] && st.max_insns <= e->max[k];
		checked_programs++;
		accepted_programs += rc == 0;
		printf("%-6s %-22s %-8s max_insns %-9llu processed %-8llu %s\n", variant, p->name,
		       got, (unsigned long long)st.max_insns,
		       (unsigned long long)st.insns_processed, st.loops_widened ? "widened" : "");
		if (!ok) {
			test_failures++;
			fprintf(stderr, "%s/%s: %s: expected %s", variant, src_name, p->name,
				e->code[k]);
			if (!strcmp(e->code[k], "accept"))
				fprintf(stderr, " with max_insns in [%llu, %llu]",
					(unsigned long long)e->min[k], (unsigned long long)e->max[k]);
			fprintf(stderr, ", got %s (max_insns %llu)%s%s\n", got,
				(unsigned long long)st.max_insns, rc ? ": " : "", rc ? diag.msg : "");
		}
	}
	loader_close(obj);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SOURCE_DIR BINARY_DIR VARIANT...\n", argv[0]);
		return 2;
	}
	if (argc == 3) {
		printf("skipped: no variant of the loop corpus was built (no clang with the BPF "
		       "target at configure time)\n");
		return 77;
	}
	const char *src_dir = argv[1], *bin_dir = argv[2];
	char names[64][128];
	int nn = 0;
	DIR *d = opendir(src_dir);
	if (!d) {
		fprintf(stderr, "%s: %s\n", src_dir, strerror(errno));
		return 1;
	}
	struct dirent *de;
	while ((de = readdir(d)) && nn < 64) {
		size_t l = strlen(de->d_name);
		if (l > 6 && l < 128 && !strcmp(de->d_name + l - 6, ".bpf.c"))
			memcpy(names[nn++], de->d_name, l + 1);
	}
	closedir(d);
	qsort(names, (size_t)nn, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
	for (int v = 3; v < argc; v++) {
		char vd[2048];
		snprintf(vd, sizeof(vd), "%.1000s/%.200s", bin_dir, argv[v]);
		DIR *t = opendir(vd);
		if (!t) {
			printf("skipped: the loop corpus was not built for %s (%s); it needs clang "
			       "with the BPF target\n", argv[v], vd);
			return 77;
		}
		closedir(t);
		for (int i = 0; i < nn; i++)
			check_object(src_dir, bin_dir, argv[v], names[i]);
	}
	printf("loop corpus: %d sources, %d variants, %u programs checked, %u accepted\n", nn,
	       argc - 3, checked_programs, accepted_programs);
	CHECK(checked_programs >= 30u * (unsigned)(argc - 3));
	TEST_DONE();
}
