/* `ncclbpf verify [options] OBJ...`: checks each object as the runtime loads it, with the
 * runtime's own checks (runtime_check_maps, then runtime_check_program for every program and
 * its hook, from the section name or --type), and prints compiler-style diagnostics: location,
 * message and error code, the source line with a caret under the column, the instruction.
 * Colour only on a terminal without NO_COLOR. Rank-local tuner decisions are rejected
 * unless --allow-rank-local or NCCLBPF_RANK_LOCAL=allow (as when the runtime loads them).
 * The verifier produces the diagnostic (src/verifier); this file only renders it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa/isa.h"
#include "loader/object.h"
#include "ncclbpf/ncclbpf.h"
#include "runtime/runtime.h"
#include "tools/cli.h"
#include "verifier/verifier.h"
#include "vm/vm.h"

struct verify_opts {
	const struct nb_hook_desc *forced;
	bool stats, json, allow_empty, allow_rank_local, color;
	uint64_t budget;
};

#define C_BOLD "\033[1m"
#define C_RED "\033[1;31m"
#define C_GREEN "\033[1;32m"
#define C_MAGENTA "\033[1;35m"
#define C_RESET "\033[0m"

/* file:line:col: error: message [E-CODE]
 *     19 |     return v->count;
 *        |            ^
 *   insn 9: r0 = *(u64 *)(r1 + 0)
 * The source line is shown without its indentation; the caret follows it. */
static void print_diag(FILE *f, const struct nb_verifier_diag *d, const struct nb_program *p,
		       bool color)
{
	const char *b = color ? C_BOLD : "", *red = color ? (d->warning ? C_MAGENTA : C_RED) : "",
		   *green = color ? C_GREEN : "", *rst = color ? C_RESET : "";
	const char *file = d->file ? d->file : p->name, *sev = d->warning ? "warning" : "error";
	if (d->line && d->col)
		fprintf(f, "%s%s:%u:%u:%s %s%s:%s %s%s%s [%s]\n", b, file, d->line, d->col, rst,
			red, sev, rst, b, d->msg, rst, verifier_diag_code(d));
	else if (d->line)
		fprintf(f, "%s%s:%u:%s %s%s:%s %s%s%s [%s]\n", b, file, d->line, rst, red, sev, rst,
			b, d->msg, rst, verifier_diag_code(d));
	else
		fprintf(f, "%s%s:%s %s%s:%s %s%s%s [%s]\n", b, file, rst, red, sev, rst, b, d->msg,
			rst, verifier_diag_code(d));
	if (d->line && d->line_src && d->line_src[0]) {
		const char *s = d->line_src;
		size_t indent = strspn(s, " \t");
		s += indent;
		size_t len = strcspn(s, "\r\n");
		fprintf(f, "%6u | %.*s\n", d->line, (int)len, s);
		/* columns are 1-based bytes of the original line */
		if (d->col > indent && d->col - 1 - indent <= len) {
			fprintf(f, "       | ");
			for (size_t k = 0; k < d->col - 1 - indent; k++)
				fputc(s[k] == '\t' ? '\t' : ' ', f);
			fprintf(f, "%s^%s\n", green, rst);
		}
	}
	char ins[128] = "";
	if (d->insn < p->insn_cnt &&
	    isa_disasm_insn(p->insns, p->insn_cnt, d->insn, ins, sizeof(ins)) < 0)
		snprintf(ins, sizeof(ins), "(cannot disassemble)");
	fprintf(f, "  insn %zu: %s\n", d->insn, ins);
	if (!d->line && p->line_cnt == 0)
		fprintf(f, "  note: no source lines: the object has no BTF line info; compile with "
			   "clang -g to see the C line here\n");
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
	if (rc == 0) /* how each decision reaches the code (issue 14, decision-path cost) */
		printf("  jit: compiled; run path: %s\n",
		       runtime_run_path_name(runtime_program_run_path(p)));
	else
		printf("  jit: NOT compiled, the plugin runs it in the interpreter: %s\n", err);
	ncclbpf_object_close(obj);
}

static void json_diag(struct cli_json *j, const struct nb_verifier_diag *d,
		      const struct nb_program *p)
{
	char ins[128] = "";
	if (d->insn < p->insn_cnt)
		isa_disasm_insn(p->insns, p->insn_cnt, d->insn, ins, sizeof(ins));
	cli_json_object(j, NULL);
	cli_json_str(j, "file", d->file);
	if (d->line) {
		cli_json_uint(j, "line", d->line);
		cli_json_uint(j, "column", d->col);
	} else {
		cli_json_null(j, "line");
		cli_json_null(j, "column");
	}
	cli_json_str(j, "code", verifier_diag_code(d));
	cli_json_str(j, "severity", d->warning ? "warning" : "error");
	cli_json_str(j, "message", d->msg);
	cli_json_uint(j, "insn", d->insn);
	cli_json_str(j, "instruction", ins);
	cli_json_str(j, "source", d->line_src && d->line_src[0] ? d->line_src : NULL);
	cli_json_end(j);
}

/* Returns the object's status (CLI_EXIT_OK or CLI_EXIT_REFUSED). The checks are the
 * runtime's (runtime_check_maps / runtime_check_program), on `sim`: what loading the
 * objects before this one into one process left behind (pinned maps, agreed-map slots). */
static int verify_object(const char *path, const struct verify_opts *vo, struct cli_json *j,
			 struct runtime_load_sim *sim)
{
	char err[1024];
	struct nb_object *obj = NULL;
	if (vo->json) {
		cli_json_object(j, NULL);
		cli_json_str(j, "file", path);
	}
	int lrc = loader_open_file(path, &obj, err, sizeof(err));
	if (lrc == 0 && runtime_check_maps(obj, obj->name, sim, err, sizeof(err)) < 0) {
		loader_close(obj);
		lrc = -EINVAL;
	}
	if (lrc < 0) {
		if (vo->json) {
			cli_json_str(j, "error", err);
			cli_json_array(j, "programs");
			cli_json_end(j);
			cli_json_end(j);
		} else {
			fprintf(stderr, "%s: error: %s\n", path, err);
		}
		return CLI_EXIT_REFUSED;
	}
	int status = CLI_EXIT_OK;
	bool any_accepted = false;
	const char *obj_error = NULL;
	if (obj->prog_cnt == 0 && !vo->allow_empty) {
		obj_error = "no programs (nothing to verify; --allow-empty accepts this)";
		status = CLI_EXIT_REFUSED;
		if (!vo->json)
			fprintf(stderr, "%s: error: %s\n", path, obj_error);
	}
	if (vo->json) {
		cli_json_str(j, "error", obj_error);
		cli_json_array(j, "programs");
	}
	for (size_t i = 0; i < obj->prog_cnt; i++) {
		const struct nb_program *p = &obj->progs[i];
		const struct nb_hook_desc *sh = hook_for_section(p->section);
		const struct nb_hook_desc *hook = vo->forced ? vo->forced : sh;
		const char *verdict, *note = NULL;
		char notebuf[2048 + 512];
		struct nb_verifier_diag diag;
		struct nb_verifier_stats st;
		char cerr[1024];
		struct nb_verifier_warnings warns;
		memset(&warns, 0, sizeof(warns));
		memset(&st, 0, sizeof(st));
		memset(&diag, 0, sizeof(diag));
		int rc = 0;
		if (!hook) {
			snprintf(notebuf, sizeof(notebuf),
				 "program '%s' is in section '%s', which names no hook; use "
				 "SEC(\"tuner\"), \"tuner/chunk\", \"profiler\", \"net\" or \"env\", or "
				 "--type", p->name, p->section);
			note = notebuf;
			verdict = "error";
			status = CLI_EXIT_REFUSED;
			if (!vo->json)
				fprintf(stderr, "%s: error: %s\n", path, note);
		} else {
			if (vo->forced && sh != vo->forced) {
				snprintf(notebuf, sizeof(notebuf),
					 "program '%s' is in section '%s' (%s%s); verifying it as %s "
					 "(--type), which is not how the runtime would attach it",
					 p->name, p->section, sh ? "hook " : "no hook",
					 sh ? sh->name : "", vo->forced->name);
				note = notebuf;
				if (!vo->json)
					fprintf(stderr, "%s: warning: %s\n", path, note);
			}
			struct nb_verifier_opts opts = { .budget = vo->budget,
							 .allow_rank_local = vo->allow_rank_local,
							 .warnings = &warns };
			rc = runtime_check_program(obj, p, hook, &opts, &diag, &st, cerr,
						   sizeof(cerr));
			size_t nw = warns.count < NB_VERIFIER_MAX_WARNINGS ? warns.count
									   : NB_VERIFIER_MAX_WARNINGS;
			for (size_t w = 0; w < nw && !vo->json; w++)
				print_diag(stdout, &warns.w[w], p, vo->color);
			if (warns.count > nw && !vo->json)
				printf("  (%zu more warnings)\n", warns.count - nw);
			if (rc == -EACCES) {
				verdict = "rejected";
				status = CLI_EXIT_REFUSED;
				if (!vo->json) {
					print_diag(stdout, &diag, p, vo->color);
					printf("%s: program '%s' (%s) rejected\n", path, p->name,
					       hook->name);
				}
			} else if (rc) {
				verdict = "error";
				status = CLI_EXIT_REFUSED;
				snprintf(notebuf, sizeof(notebuf), "program '%s': %s", p->name, cerr);
				note = notebuf;
				if (!vo->json)
					fprintf(stderr, "%s: error: %s\n", path, note);
			} else {
				verdict = "accepted";
				any_accepted = true;
				if (!vo->json)
					printf("%s: program '%s' (%s): OK\n", path, p->name, hook->name);
			}
			if (vo->stats && !vo->json)
				printf("  stats: %zu insns, %llu processed, %llu states stored, %llu "
				       "pruned, peak %llu states, %.3f ms\n",
				       p->insn_cnt, (unsigned long long)st.insns_processed,
				       (unsigned long long)st.states_stored,
				       (unsigned long long)st.states_pruned,
				       (unsigned long long)st.peak_states, (double)st.time_ns / 1e6);
			if (vo->stats && !vo->json && rc == 0)
				printf("  cost: max_insns %llu per run (limit %llu)\n",
				       (unsigned long long)st.max_insns,
				       (unsigned long long)st.max_insns_limit);
			if (vo->stats && !vo->json && rc == 0 && vm_jit_available())
				print_jit_status(path, p->name, hook, vo->allow_rank_local);
		}
		if (!vo->json)
			continue;
		cli_json_object(j, NULL);
		cli_json_str(j, "name", p->name);
		cli_json_str(j, "section", p->section);
		cli_json_str(j, "section_hook", sh ? sh->name : NULL);
		cli_json_str(j, "hook", hook ? hook->name : NULL);
		cli_json_str(j, "verdict", verdict);
		cli_json_str(j, "note", note);
		cli_json_array(j, "diagnostics");
		for (size_t w = 0; w < warns.count && w < NB_VERIFIER_MAX_WARNINGS; w++)
			json_diag(j, &warns.w[w], p);
		if (rc == -EACCES)
			json_diag(j, &diag, p);
		cli_json_end(j);
		if (hook && rc != -EACCES && rc) {
			cli_json_null(j, "stats");
		} else if (hook) {
			cli_json_object(j, "stats");
			cli_json_uint(j, "insns", p->insn_cnt);
			cli_json_uint(j, "processed", st.insns_processed);
			cli_json_uint(j, "states_stored", st.states_stored);
			cli_json_uint(j, "states_pruned", st.states_pruned);
			cli_json_uint(j, "peak_states", st.peak_states);
			cli_json_num(j, "time_ms", (double)st.time_ns / 1e6);
			if (rc == 0)
				cli_json_uint(j, "max_insns", st.max_insns);
			else
				cli_json_null(j, "max_insns");
			cli_json_uint(j, "max_insns_limit", st.max_insns_limit);
			cli_json_end(j);
		} else {
			cli_json_null(j, "stats");
		}
		cli_json_end(j);
	}
	if (vo->json) {
		cli_json_end(j);
		cli_json_end(j);
	}
	if (any_accepted) /* the runtime keeps such an object loaded */
		runtime_load_sim_hold(sim, obj);
	loader_close(obj);
	return status;
}

static int cmd_verify(int argc, char **argv)
{
	struct verify_opts vo = { 0 };
	const char *rl = getenv("NCCLBPF_RANK_LOCAL");
	vo.allow_rank_local = rl && !strcmp(rl, "allow");
	const char *objs[256];
	int nobj = 0;
	bool no_more_opts = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		int r = 0;
		if (no_more_opts || a[0] != '-' || !a[1]) {
			if (nobj == (int)(sizeof(objs) / sizeof(objs[0])))
				return cli_usage_error("verify", "more than %zu objects",
						       sizeof(objs) / sizeof(objs[0]));
			objs[nobj++] = a;
		} else if (!strcmp(a, "--")) {
			no_more_opts = true;
		} else if (!strcmp(a, "--stats")) {
			vo.stats = true;
		} else if (!strcmp(a, "--json")) {
			vo.json = true;
		} else if (!strcmp(a, "--allow-empty")) {
			vo.allow_empty = true;
		} else if (!strcmp(a, "--allow-rank-local")) {
			vo.allow_rank_local = true;
		} else if ((r = cli_opt_value("verify", argc, argv, &i, "--type", &v)) != 0) {
			if (r < 0)
				return CLI_EXIT_USAGE;
			vo.forced = hook_by_name(v);
			if (!vo.forced)
				return cli_usage_error("verify", "--type: unknown hook '%s' (tuner, "
							 "tuner/chunk, profiler, net, env)", v);
		} else if ((r = cli_opt_value("verify", argc, argv, &i, "--budget", &v)) != 0) {
			long long b;
			if (r < 0 ||
			    cli_parse_range("verify", "--budget", v, 1, 1000000000000ll, &b) < 0)
				return CLI_EXIT_USAGE;
			vo.budget = (uint64_t)b;
		} else if ((r = cli_opt_value("verify", argc, argv, &i, "--max-insns", &v)) != 0) {
			uint64_t n;
			if (r < 0)
				return CLI_EXIT_USAGE;
			if (runtime_parse_max_insns(v, NULL, &n) < 0)
				return cli_usage_error("verify", "--max-insns: '%s' is not N or "
							 "HOOK=N[,HOOK=N...] (N from 1 to 10^15)", v);
			/* the runtime's own variable: the verifier and the JIT check (--stats)
			 * read it where the runtime reads it (runtime_check_program) */
			setenv("NCCLBPF_MAX_INSNS", v, 1);
		} else {
			return cli_usage_error("verify", "unknown option '%s'", a);
		}
	}
	if (nobj == 0)
		return cli_usage_error("verify", "no object given");
	vo.color = !vo.json && cli_use_color(stdout);
	struct cli_json j;
	if (vo.json) {
		cli_json_init(&j, stdout);
		cli_json_object(&j, NULL);
		cli_json_str(&j, "schema", "ncclbpf.verify/1");
		cli_json_array(&j, "objects");
	}
	int status = CLI_EXIT_OK;
	struct runtime_load_sim *sim = runtime_load_sim_new();
	if (!sim) {
		fprintf(stderr, "verify: out of memory\n");
		return CLI_EXIT_REFUSED;
	}
	for (int i = 0; i < nobj; i++)
		if (verify_object(objs[i], &vo, &j, sim) != CLI_EXIT_OK)
			status = CLI_EXIT_REFUSED;
	runtime_load_sim_free(sim);
	if (vo.json) {
		cli_json_end(&j);
		cli_json_bool(&j, "ok", status == CLI_EXIT_OK);
		cli_json_end(&j);
		cli_json_finish(&j);
	}
	return status;
}

NCCLBPF_CLI_COMMAND(
	verify, .name = "verify", .run = cmd_verify,
	.synopsis = "[--type HOOK] [--stats] [--budget N] [--max-insns N] [--allow-rank-local] "
		    "[--allow-empty] "
		    "[--json] OBJ...",
	.summary = "verify programs for their hook, compiler-style diagnostics",
	.help = "Verifies every program of each object for the hook its section names (as the "
		"runtime\nwould before attaching it) and prints \"OK\" or a compiler-style "
		"diagnostic: location,\nmessage and error code (docs/verifier.md), the source "
		"line with a caret under the\ncolumn, and the instruction. Colour on a terminal "
		"unless NO_COLOR is set.\n"
		"\n"
		"It accepts exactly what the runtime loads: the runtime's own checks of maps "
		"([E-MAP]:\nkernel-only types, agreed-map attributes, sizes) and instructions "
		"run first. Several\nobjects are checked as one process loading them in this "
		"order (NCCLBPF_POLICY=a.o,b.o):\na shared (pinned) map declared differently "
		"([E-MAP-SHARED]) or agreed-map slots used\nup by earlier objects are refused "
		"as the runtime refuses them.\n"
		"\n"
		"options:\n"
		"  --type HOOK         verify as tuner, tuner/chunk, profiler, net or env instead "
		"of\n"
		"                      the section's hook (a warning says when they differ)\n"
		"  --stats             instructions processed, states stored/pruned, peak states, "
		"time,\n"
		"                      and max_insns: the most instructions one run executes\n"
		"  --budget N          processed-instruction budget, 1 to 10^12 (default: the "
		"hook's)\n"
		"  --max-insns N       most instructions one run may execute (E-COST above it): N\n"
		"                      for every hook or HOOK=N[,HOOK=N...]; default\n"
		"                      NCCLBPF_MAX_INSNS (this option sets it), else the hook's\n"
		"                      (10^6; 10^7 for env and tuner/init), as the runtime loads it\n"
		"  --allow-rank-local  accept tuner decisions from rank-local data (also\n"
		"                      NCCLBPF_RANK_LOCAL=allow); only safe when every rank "
		"sees the\n"
		"                      same state\n"
		"  --allow-empty       an object without programs is not an error\n"
		"  --json              one JSON document (below) instead of text\n"
		"\n"
		"exit status: 0 every program accepted; 1 a program rejected, an object missing,\n"
		"malformed or without programs, or a section naming no hook; 2 usage error.\n"
		"\n"
		"json (schema \"ncclbpf.verify/1\"):\n"
		"  {\"schema\", \"ok\": bool (the exit status is 0),\n"
		"   \"objects\": [{\"file\": string, \"error\": string or null (load error, no "
		"programs),\n"
		"     \"programs\": [{\"name\", \"section\": strings, \"section_hook\", \"hook\" "
		"(verified as):\n"
		"        string or null, \"verdict\": \"accepted\" | \"rejected\" | \"error\",\n"
		"        \"note\": string or null (--type mismatch, no hook, internal error),\n"
		"        \"diagnostics\": [{\"file\": string or null, \"line\", \"column\": "
		"numbers or null,\n"
		"          \"code\": \"E-...\" or \"W-...\", \"severity\": \"error\" | \"warning\",\n"
		"          \"message\", "
		"\"instruction\",\n"
		"          \"source\": strings (source null when unknown), \"insn\": number}],\n"
		"        \"stats\": {\"insns\", \"processed\", \"states_stored\", "
		"\"states_pruned\",\n"
		"          \"peak_states\", \"time_ms\", \"max_insns\" (null if rejected),\n"
		"          \"max_insns_limit\" (0: none): numbers} or null}]}]}\n");
