/* Verifier on compiled objects:
 *  - every policies/unsafe/ program is rejected with exactly the code its source declares
 *    ("// EXPECT: E-CODE"), at the line that carries the comment (BTF line info);
 *  - together they cover every rejection class;
 *  - the safe twins (tests/progs/verifier_ objects) and every shipped policy
 *    (every .bpf.o under build/policies) are accepted; the few that decide from rank-local
 *    data by design are rejected with E-RANK-LOCAL by default and accepted with
 *    allow_rank_local (NCCLBPF_RANK_LOCAL=allow).
 * Usage: test_verifier_elf SOURCE_DIR BINARY_DIR */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "loader/object.h"
#include "test_util.h"
#include "verifier/verifier.h"

static const char *src_dir, *bin_dir;

/* Finds "EXPECT: <code>" in the source; returns its line number (0 if none). */
static unsigned find_expect(const char *path, char *code, size_t len)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[512];
	unsigned n = 0, found = 0;
	while (fgets(line, sizeof(line), f)) {
		n++;
		char *p = strstr(line, "EXPECT: ");
		if (!p || found)
			continue;
		p += 8;
		size_t k = strcspn(p, " \t\r\n*/");
		if (k >= len)
			k = len - 1;
		memcpy(code, p, k);
		code[k] = 0;
		found = n;
	}
	fclose(f);
	return found;
}

static int list_objects(const char *dir, const char *prefix, char names[][128], int max)
{
	DIR *d = opendir(dir);
	int n = 0;
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < max) {
		size_t l = strlen(e->d_name);
		if (l < 7 || strcmp(e->d_name + l - 6, ".bpf.o") || l >= 128)
			continue;
		if (prefix && strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		memcpy(names[n++], e->d_name, l + 1);
	}
	closedir(d);
	return n;
}

static bool covered[NB_VERR_COUNT];

static void check_unsafe(const char *name)
{
	char obj_path[1024], src_path[1024], want[64] = "", err[256];
	snprintf(obj_path, sizeof(obj_path), "%s/policies/unsafe/%s", bin_dir, name);
	snprintf(src_path, sizeof(src_path), "%s/policies/unsafe/%.*s.c", src_dir,
		 (int)(strlen(name) - 2), name);
	unsigned want_line = find_expect(src_path, want, sizeof(want));
	test_checks++;
	if (!want_line) {
		test_failures++;
		fprintf(stderr, "%s: no EXPECT comment in %s\n", name, src_path);
		return;
	}
	struct nb_object *obj = NULL;
	int rc = loader_open_file(obj_path, &obj, err, sizeof(err));
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "%s: %s\n", name, err);
		return;
	}
	CHECK(obj->prog_cnt == 1);
	for (size_t i = 0; i < obj->prog_cnt; i++) {
		const struct nb_program *p = &obj->progs[i];
		struct nb_verifier_diag diag;
		rc = verifier_check(p, obj->maps, obj->map_cnt, hook_for_section(p->section), NULL,
				    &diag, NULL);
		const char *got = rc == -EACCES ? verifier_err_code(diag.code) : "accepted";
		test_checks++;
		if (rc != -EACCES || strcmp(got, want) || diag.line != want_line) {
			test_failures++;
			fprintf(stderr, "%s: expected %s at line %u, got %s at line %u (insn %zu): %s\n",
				name, want, want_line, got, diag.line, diag.insn, diag.msg);
			continue;
		}
		covered[diag.code] = true;
		char buf[2048], head[256];
		verifier_format_diag(&diag, p, buf, sizeof(buf));
		snprintf(head, sizeof(head), "%.*s.c:%u:", (int)(strlen(name) - 2), name, want_line);
		CHECK_STR_CONTAINS(buf, head);
		CHECK_STR_CONTAINS(buf, want);
		CHECK_STR_CONTAINS(buf, "EXPECT"); /* the source line is shown */
		CHECK_STR_CONTAINS(buf, "insn ");
		CHECK_STR_CONTAINS(buf, "       | "); /* the caret line under the source */
		CHECK(strchr(buf, '^') != NULL);
		if (diag.code == NB_VERR_RANK_LOCAL) /* sources named by line, with the remedy */
			CHECK_STR_CONTAINS(diag.msg, "at line ");
		if (diag.code == NB_VERR_RANK_LOCAL)
			CHECK_STR_CONTAINS(diag.msg, "rank-invariant inputs");
	}
	loader_close(obj);
}

/* Programs whose decisions depend on rank-local data by design: table_scan decides from a
 * writable map. (The closed-loop policies read agreed maps and pass strict mode.) */
static const char *const rank_local_progs[] = { "table_scan" };
static int rank_local_seen;

/* Programs that run more than their hook's 10^6 instructions per run by design (a million
 * bpf_loop callbacks): E-COST by default, accepted with a limit of 10^9. */
static const char *const costly_progs[] = { "loop_million", "loop_input_count" };
static int costly_seen;

static bool is_costly(const char *prog)
{
	for (size_t i = 0; i < sizeof(costly_progs) / sizeof(costly_progs[0]); i++)
		if (!strcmp(prog, costly_progs[i]))
			return true;
	return false;
}

static bool is_rank_local(const char *prog)
{
	for (size_t i = 0; i < sizeof(rank_local_progs) / sizeof(rank_local_progs[0]); i++)
		if (!strcmp(prog, rank_local_progs[i]))
			return true;
	return false;
}

/* "WARN: W-CODE" lines of a source: each must get exactly that warning, and no other line
 * any. */
#define MAX_WARN_LINES 64
struct warn_lines {
	unsigned n, line[MAX_WARN_LINES], hits[MAX_WARN_LINES];
	char code[MAX_WARN_LINES][32];
};

static void find_warn_lines(const char *path, struct warn_lines *wl)
{
	memset(wl, 0, sizeof(*wl));
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[512];
	unsigned n = 0;
	while (fgets(line, sizeof(line), f)) {
		n++;
		char *p = strstr(line, "WARN: W-");
		if (!p || wl->n == MAX_WARN_LINES)
			continue;
		p += 6;
		size_t k = strcspn(p, " \t\r\n*/");
		if (k >= sizeof(wl->code[0]))
			k = sizeof(wl->code[0]) - 1;
		memcpy(wl->code[wl->n], p, k);
		wl->line[wl->n++] = n;
	}
	fclose(f);
}

static void check_warnings(const char *path, const struct nb_program *p,
			   const struct nb_verifier_warnings *w, struct warn_lines *wl)
{
	for (size_t i = 0; i < w->count && i < NB_VERIFIER_MAX_WARNINGS; i++) {
		const struct nb_verifier_diag *d = &w->w[i];
		unsigned k = 0;
		while (k < wl->n && wl->line[k] != d->line)
			k++;
		test_checks++;
		if (k == wl->n || strcmp(wl->code[k], verifier_diag_code(d))) {
			test_failures++;
			fprintf(stderr, "%s: program %s: unexpected warning %s at line %u: %s\n", path,
				p->name, verifier_diag_code(d), d->line, d->msg);
			continue;
		}
		wl->hits[k]++;
	}
}

static int check_accepted(const char *dir, const char *name, const char *src)
{
	char path[1024], err[256], spath[1024];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(spath, sizeof(spath), "%s/%s/%.*s.c", src_dir, src, (int)(strlen(name) - 2), name);
	struct warn_lines wl;
	find_warn_lines(spath, &wl);
	struct nb_object *obj = NULL;
	int rc = loader_open_file(path, &obj, err, sizeof(err));
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "%s: %s\n", path, err);
		return 0;
	}
	int progs = 0;
	for (size_t i = 0; i < obj->prog_cnt; i++) {
		const struct nb_program *p = &obj->progs[i];
		const struct nb_hook_desc *h = hook_for_section(p->section);
		if (!h)
			continue; /* e.g. helper-only objects of other tests */
		struct nb_verifier_diag diag;
		struct nb_verifier_stats st;
		struct nb_verifier_opts opts = { .allow_rank_local = is_rank_local(p->name) };
		if (opts.allow_rank_local) {
			rank_local_seen++;
			rc = verifier_check(p, obj->maps, obj->map_cnt, h, NULL, &diag, &st);
			test_checks++;
			if (rc != -EACCES || diag.code != NB_VERR_RANK_LOCAL) {
				test_failures++;
				fprintf(stderr, "%s: program %s: expected E-RANK-LOCAL by default, got %s\n",
					path, p->name, rc ? verifier_err_code(diag.code) : "accepted");
			}
		}
		if (is_costly(p->name)) {
			costly_seen++;
			rc = verifier_check(p, obj->maps, obj->map_cnt, h, &opts, &diag, &st);
			test_checks++;
			if (rc != -EACCES || diag.code != NB_VERR_COST) {
				test_failures++;
				fprintf(stderr, "%s: program %s: expected E-COST by default, got %s\n",
					path, p->name, rc ? verifier_err_code(diag.code) : "accepted");
			}
			opts.max_insns = 1000000000;
		}
		struct nb_verifier_warnings warns;
		opts.warnings = &warns;
		rc = verifier_check(p, obj->maps, obj->map_cnt, h, &opts, &diag, &st);
		check_warnings(path, p, &warns, &wl);
		test_checks++;
		if (rc) {
			char buf[2048];
			verifier_format_diag(&diag, p, buf, sizeof(buf));
			test_failures++;
			fprintf(stderr, "%s: program %s rejected:\n%s", path, p->name, buf);
		} else {
			/* the cost bound: known (some instruction runs) and within the limit */
			test_checks++;
			if (st.max_insns == 0 || !st.max_insns_limit ||
			    st.max_insns > st.max_insns_limit) {
				test_failures++;
				fprintf(stderr, "%s: program %s: max_insns %llu, limit %llu\n", path,
					p->name, (unsigned long long)st.max_insns,
					(unsigned long long)st.max_insns_limit);
			}
		}
		progs++;
	}
	for (unsigned k = 0; k < wl.n; k++) {
		test_checks++;
		if (wl.hits[k] == 0) {
			test_failures++;
			fprintf(stderr, "%s: no %s warning at line %u\n", path, wl.code[k], wl.line[k]);
		}
	}
	loader_close(obj);
	return progs;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s SOURCE_DIR BINARY_DIR\n", argv[0]);
		return 2;
	}
	src_dir = argv[1];
	bin_dir = argv[2];
	static char names[256][128];
	char dir[1024];

	snprintf(dir, sizeof(dir), "%s/policies/unsafe", bin_dir);
	int n = list_objects(dir, NULL, names, 256);
	CHECK(n >= 25);
	for (int i = 0; i < n; i++)
		check_unsafe(names[i]);
	static const enum nb_verr classes[] = {
		NB_VERR_NULL_DEREF, NB_VERR_NULL_ARITH, NB_VERR_CTX_ACCESS, NB_VERR_CTX_WRITE,
		NB_VERR_MAP_VALUE_OOB, NB_VERR_STACK_OOB, NB_VERR_HELPER_UNKNOWN,
		NB_VERR_HELPER_DENIED, NB_VERR_HELPER_ARG, NB_VERR_STACK_LIMIT, NB_VERR_CALL_DEPTH,
		NB_VERR_INFINITE_LOOP, NB_VERR_BUDGET, NB_VERR_POINTER_LEAK,
		NB_VERR_UNINIT_REG, NB_VERR_UNINIT_STACK, NB_VERR_BAD_JUMP, NB_VERR_FALL_OFF,
		NB_VERR_BAD_INSN, NB_VERR_UNREACHABLE, NB_VERR_RANK_LOCAL, NB_VERR_READONLY_MAP,
		NB_VERR_POINTER_CMP, NB_VERR_MISALIGNED, NB_VERR_WRITEONLY_MAP, NB_VERR_COST,
	};
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		test_checks++;
		if (!covered[classes[i]]) {
			test_failures++;
			fprintf(stderr, "no unsafe program is rejected with %s\n",
				verifier_err_code(classes[i]));
		}
	}

	snprintf(dir, sizeof(dir), "%s/tests/progs", bin_dir);
	int twins = list_objects(dir, "verifier_", names, 256), tprogs = 0;
	CHECK(twins >= 1);
	for (int i = 0; i < twins; i++)
		tprogs += check_accepted(dir, names[i], "tests/progs");

	snprintf(dir, sizeof(dir), "%s/policies", bin_dir);
	int pol = list_objects(dir, NULL, names, 256), pprogs = 0;
	CHECK(pol >= 1);
	for (int i = 0; i < pol; i++)
		pprogs += check_accepted(dir, names[i], "policies");
	CHECK(rank_local_seen == (int)(sizeof(rank_local_progs) / sizeof(rank_local_progs[0])));
	CHECK(costly_seen == (int)(sizeof(costly_progs) / sizeof(costly_progs[0])));
	printf("%d unsafe objects, %d safe-twin programs, %d shipped policy programs (%d rank-local "
	       "by design)\n",
	       n, tprogs, pprogs, rank_local_seen);
	TEST_DONE();
}
