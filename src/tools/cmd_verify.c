/* `ncclbpf verify [--type HOOK] [--stats] [--budget N] [--allow-rank-local] OBJ...`:
 * verifies every program of each object for its hook (from the section name, or --type)
 * and prints compiler-style diagnostics. Rank-local tuner decisions are rejected unless
 * --allow-rank-local or NCCLBPF_RANK_LOCAL=allow (as when the runtime loads them). Exit status 0 when every program is accepted, 1 on any rejection, 2 on
 * usage or load errors. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/object.h"
#include "ncclbpf/ncclbpf.h"
#include "verifier/verifier.h"
#include "vm/vm.h"

static void verify_usage(FILE *f)
{
	fprintf(f, "usage: ncclbpf verify [--type HOOK] [--stats] [--budget N] [--allow-rank-local] "
		   "OBJ...\n"
		   "  --type HOOK  verify as tuner, tuner/chunk, profiler, net or env (default: "
		   "from each program's section)\n"
		   "  --stats      print instructions processed, states stored/pruned, peak states "
		   "and time\n"
		   "  --budget N   processed-instruction budget (default: the hook's)\n"
		   "  --allow-rank-local  accept tuner decisions from rank-local data (also "
		   "NCCLBPF_RANK_LOCAL=allow)\n");
}

/* --stats: whether the accepted program also JIT-compiles, as the plugin would prepare it
 * (a JIT failure there silently meant the slower interpreter). */
static void print_jit_status(const char *path, const char *prog, const struct nb_hook_desc *h,
			     bool allow_rank_local)
{
	char err[512] = "";
	struct ncclbpf_object *obj = NULL;
	if (ncclbpf_object_open_file(path, &obj, err, sizeof(err)))
		return;
	struct ncclbpf_program *p = ncclbpf_object_find_program(obj, prog);
	struct ncclbpf_prepare_opts o = { .sz = sizeof(o), .exec_mode = NCCLBPF_EXEC_JIT,
					  .verify_mode = NCCLBPF_VERIFY_STRICT };
	if (allow_rank_local)
		setenv("NCCLBPF_RANK_LOCAL", "allow", 1);
	int rc = p ? ncclbpf_program_prepare(p, (enum ncclbpf_hook)h->type, &o, err, sizeof(err))
		   : -ENOENT;
	if (rc == 0)
		printf("  jit: compiled\n");
	else
		printf("  jit: NOT compiled, the plugin runs it in the interpreter: %s\n", err);
	ncclbpf_object_close(obj);
}

static int verify_object(const char *path, const struct nb_hook_desc *forced, bool stats,
			 uint64_t budget, bool allow_rank_local)
{
	char err[512];
	struct nb_object *obj = NULL;
	int rc = loader_open_file(path, &obj, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s: error: cannot load: %s\n", path, err);
		return 2;
	}
	int status = 0;
	if (obj->prog_cnt == 0)
		fprintf(stderr, "%s: warning: no programs\n", path);
	for (size_t i = 0; i < obj->prog_cnt; i++) {
		const struct nb_program *p = &obj->progs[i];
		const struct nb_hook_desc *hook = forced ? forced : hook_for_section(p->section);
		if (!hook) {
			fprintf(stderr,
				"%s: error: program '%s' is in section '%s', which names no hook; use "
				"SEC(\"tuner\"), \"tuner/chunk\", \"profiler\", \"net\" or \"env\", or "
				"--type\n",
				path, p->name, p->section);
			status = status ? status : 1;
			continue;
		}
		struct nb_verifier_opts opts = { .budget = budget,
						 .allow_rank_local = allow_rank_local };
		struct nb_verifier_diag diag;
		struct nb_verifier_stats st;
		memset(&st, 0, sizeof(st));
		rc = verifier_check(p, obj->maps, obj->map_cnt, hook, &opts, &diag, &st);
		if (rc == -EACCES) {
			char buf[2048];
			verifier_format_diag(&diag, p, buf, sizeof(buf));
			fputs(buf, stdout);
			printf("%s: program '%s' (%s) rejected\n", path, p->name, hook->name);
			status = 1;
		} else if (rc) {
			fprintf(stderr, "%s: error: verifying '%s' failed: %s\n", path, p->name,
				strerror(-rc));
			status = 2;
		} else {
			printf("%s: program '%s' (%s): OK\n", path, p->name, hook->name);
		}
		if (stats)
			printf("  stats: %zu insns, %llu processed, %llu states stored, %llu pruned, "
			       "peak %llu states, %.3f ms\n",
			       p->insn_cnt, (unsigned long long)st.insns_processed,
			       (unsigned long long)st.states_stored,
			       (unsigned long long)st.states_pruned,
			       (unsigned long long)st.peak_states, (double)st.time_ns / 1e6);
		if (stats && rc == 0 && vm_jit_available())
			print_jit_status(path, p->name, hook, allow_rank_local);
	}
	loader_close(obj);
	return status;
}

int cmd_verify(int argc, char **argv)
{
	const struct nb_hook_desc *forced = NULL;
	bool stats = false;
	uint64_t budget = 0;
	const char *rl = getenv("NCCLBPF_RANK_LOCAL");
	bool allow_rank_local = rl && !strcmp(rl, "allow");
	int nobj = 0, status = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			verify_usage(stdout);
			return 0;
		} else if (!strcmp(a, "--stats")) {
			stats = true;
		} else if (!strcmp(a, "--allow-rank-local")) {
			allow_rank_local = true;
		} else if (!strcmp(a, "--type") || !strncmp(a, "--type=", 7)) {
			const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
			forced = v ? hook_by_name(v) : NULL;
			if (!forced) {
				fprintf(stderr, "ncclbpf verify: unknown hook type '%s'\n", v ? v : "");
				verify_usage(stderr);
				return 2;
			}
		} else if (!strcmp(a, "--budget") || !strncmp(a, "--budget=", 9)) {
			const char *v = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
			char *end = NULL;
			budget = v ? strtoull(v, &end, 0) : 0;
			if (!v || !*v || *end || budget == 0) {
				fprintf(stderr, "ncclbpf verify: bad budget '%s'\n", v ? v : "");
				return 2;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "ncclbpf verify: unknown option '%s'\n", a);
			verify_usage(stderr);
			return 2;
		}
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--type") || !strcmp(a, "--budget")) {
			i++;
			continue;
		}
		if (a[0] == '-' && a[1])
			continue;
		nobj++;
		int s = verify_object(a, forced, stats, budget, allow_rank_local);
		if (s > status)
			status = s;
	}
	if (nobj == 0) {
		verify_usage(stderr);
		return 2;
	}
	return status;
}
