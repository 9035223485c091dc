/* ncclbpf rules compile nccl_tuner.conf -o rules.bpf.o: converts the rule file of NCCL's
 * example tuner into the verified table policy (policies/tuned_rules.bpf.c), so users of
 * that tuner move to ncclbpf in one command. Nothing is written unless every line parses
 * and the built object loads, verifies and decides like the rules on every rule's edges.
 * ncclbpf rules show OBJ: the rule table of such an object read back, in the same syntax. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ncclbpf/policy.h>

#include "tools/cli.h"
#include "tools/tune_input.h"
#include "tools/tune_object.h"

static int rules_compile(int argc, char **argv)
{
	const char *in = NULL, *out = NULL, *rb = NULL;
	for (int i = 2; i < argc; i++) {
		int r;
		if ((r = cli_opt_value("rules", argc, argv, &i, "-o", &out)) ||
		    (r = cli_opt_value("rules", argc, argv, &i, "--output", &out)) ||
		    (r = cli_opt_value("rules", argc, argv, &i, "--regbuff", &rb))) {
			if (r < 0)
				return CLI_EXIT_USAGE;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return cli_usage_error("rules", "unknown option '%s'", argv[i]);
		} else if (!in) {
			in = argv[i];
		} else {
			return cli_usage_error("rules", "unexpected argument '%s'", argv[i]);
		}
	}
	int regbuff = TUNE_REGBUFF_REFUSE;
	if (rb && !strcmp(rb, "ignore"))
		regbuff = TUNE_REGBUFF_IGNORE;
	else if (rb && !strcmp(rb, "drop"))
		regbuff = TUNE_REGBUFF_DROP;
	else if (rb && strcmp(rb, "refuse"))
		return cli_usage_error("rules", "--regbuff '%s': want refuse, ignore or drop", rb);
	if (!in)
		return cli_usage_error("rules", "no rule file given");
	if (!out)
		return cli_usage_error("rules", "no output file given (-o OUT)");
	if (cli_same_file(in, out))
		return cli_usage_error("rules", "-o %s is the rule file itself", out);
	char *buf = NULL;
	size_t len = 0;
	if (cli_read_file(in, 16u << 20, &buf, &len))
		return CLI_EXIT_REFUSED;
	struct tune_rule rules[TUNE_MAX_RULES];
	int n = tune_conf_parse_regbuff(buf, len, in, rules, TUNE_MAX_RULES, regbuff, stderr);
	free(buf);
	if (n < 0)
		return CLI_EXIT_REFUSED;
	if (n == 0) { /* an empty table would pass everything through: surely not what was meant */
		fprintf(stderr, "%s: error: no rules (only blank lines and comments%s); nothing "
				"written\n", in, regbuff == TUNE_REGBUFF_DROP ? ", or every rule dropped" : "");
		return CLI_EXIT_REFUSED;
	}
	char err[1024] = "";
	void *obj = NULL;
	size_t olen = 0;
	if (tune_object_build(ncclbpf_tuned_rules_template, ncclbpf_tuned_rules_template_len, rules,
			      (size_t)n, &obj, &olen, err, sizeof(err)) ||
	    tune_write_atomic(out, obj, olen, err, sizeof(err))) {
		fprintf(stderr, "ncclbpf rules: %s\n", err);
		free(obj);
		return CLI_EXIT_REFUSED;
	}
	free(obj);
	fprintf(stderr, "ncclbpf rules: %d rule%s from %s -> %s (verified, checked rule by rule)\n", n,
		n == 1 ? "" : "s", in, out);
	return CLI_EXIT_OK;
}

static const char *json_algo(int a)
{
	return a == NCCLBPF_ALGO_KEEP ? NULL : tune_algo_name(a);
}

static int rules_show(int argc, char **argv)
{
	const char *in = NULL;
	bool json = false;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return cli_usage_error("rules", "unknown option '%s'", argv[i]);
		else if (!in)
			in = argv[i];
		else
			return cli_usage_error("rules", "unexpected argument '%s'", argv[i]);
	}
	if (!in)
		return cli_usage_error("rules", "no object given");
	char *buf = NULL;
	size_t len = 0;
	if (cli_read_file(in, 64u << 20, &buf, &len))
		return CLI_EXIT_REFUSED;
	struct tune_rule rules[TUNE_MAX_RULES];
	size_t n = 0;
	char err[512] = "";
	int rc = tune_rules_read(buf, len, rules, &n, err, sizeof(err));
	free(buf);
	if (rc) {
		fprintf(stderr, "%s: error: %s\n", in, rc == -ENOMEM ? "out of memory" : err);
		return CLI_EXIT_REFUSED;
	}
	if (json) {
		struct cli_json j;
		cli_json_init(&j, stdout);
		cli_json_object(&j, NULL);
		cli_json_str(&j, "schema", "ncclbpf.rules/1");
		cli_json_str(&j, "file", in);
		cli_json_array(&j, "rules");
		for (size_t i = 0; i < n; i++) {
			const struct tune_rule *r = &rules[i];
			cli_json_object(&j, NULL);
			cli_json_str(&j, "coll", r->coll_type < 0 ? NULL : tune_coll_name(r->coll_type));
			cli_json_uint(&j, "min_bytes", r->min_bytes);
			if (r->max_bytes == UINT64_MAX)
				cli_json_null(&j, "max_bytes");
			else
				cli_json_uint(&j, "max_bytes", r->max_bytes);
			cli_json_str(&j, "algo", json_algo(r->algo));
			cli_json_str(&j, "proto", r->proto == NCCLBPF_PROTO_KEEP ? NULL
						  : tune_proto_name(r->proto));
			cli_json_int(&j, "channels", r->n_channels);
			cli_json_int(&j, "n_nodes", r->n_nodes);
			cli_json_int(&j, "n_ranks", r->n_ranks);
			cli_json_int(&j, "num_pipe_ops", r->num_pipe_ops);
			cli_json_end(&j);
		}
		cli_json_end(&j);
		cli_json_end(&j);
		cli_json_finish(&j);
		return CLI_EXIT_OK;
	}
	printf("# %s: %zu rule%s; the first matching rule decides, -1 = any / NCCL's choice\n"
	       "# coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks,numPipeOps\n",
	       in, n, n == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		char line[256];
		tune_rule_format(&rules[i], line, sizeof(line));
		printf("%s\n", line);
	}
	return CLI_EXIT_OK;
}

static int cmd_rules(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("rules", "no subcommand given (compile or show)");
	if (!strcmp(argv[1], "compile"))
		return rules_compile(argc, argv);
	if (!strcmp(argv[1], "show"))
		return rules_show(argc, argv);
	return cli_usage_error("rules", "unknown subcommand '%s' (compile or show)", argv[1]);
}

NCCLBPF_CLI_COMMAND(rules, .name = "rules", .run = cmd_rules,
		    .synopsis = "compile RULES.conf -o OUT [--regbuff refuse|ignore|drop] | "
				"show [--json] OBJ",
		    .summary = "NCCL example-tuner rule file <-> verified table policy",
		    .help = "`rules compile` converts the rule file of NCCL's example tuner\n"
			    "(plugins/tuner/example, nccl_tuner.conf) into the table policy\n"
			    "policies/tuned_rules.bpf.c with the rules in .rodata, so users of "
			    "that tuner\nmove to ncclbpf in one command. Nothing is written "
			    "unless every line parses\nand the built object loads, verifies "
			    "(strict) and decides like the rules on\nevery rule's edges; the "
			    "file is written atomically. See docs/tuning.md.\n"
			    "`rules show` reads the table of such an object (`rules compile`, "
			    "`tune -o`)\nback, as lines `rules compile` accepts.\n"
			    "\n"
			    "options:\n"
			    "  -o, --output OUT   compile: the policy object to write (required)\n"
			    "  --regbuff MODE     compile: rows with regBuff 0 or 1 - refuse "
			    "(default, an\n"
			    "                     error), ignore (the rule applies to every "
			    "buffer) or drop\n"
			    "                     (the row is left out); a warning per row\n"
			    "  --json             show: one JSON document (below)\n"
			    "\n"
			    "input: one rule per line,\n"
			    "  coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks\n"
			    "  [,numPipeOps[,regBuff]]\n"
			    "-1 = any (min/max_bytes: 0 and unbounded; channels: NCCL's); names "
			    "as NCCL\nspells them (allreduce, ring, ll128; case-insensitive); "
			    "'#' starts a comment;\na `collective_type,...` header line is "
			    "skipped; the first matching rule wins;\nat most 32 rules. regBuff "
			    "(buffer registration) is rank-local: a rule on it\ncan make ranks "
			    "decide differently, which hangs NCCL, so it is never a rule\nfield "
			    "(--regbuff says what to do with such rows).\n"
			    "\n"
			    "exit status: 0 written / shown; 1 an unreadable file, a bad line "
			    "(FILE:LINE:\nerror: ...), no rules, an object that did not verify or "
			    "decide like the rules\n(nothing written), or an object without a "
			    "rule table; 2 usage.\n"
			    "\n"
			    "json (schema \"ncclbpf.rules/1\", `rules show --json`):\n"
			    "  {\"schema\", \"file\": strings, \"rules\": [{\"coll\", \"algo\", "
			    "\"proto\": names or\n   null (any / NCCL's choice), \"min_bytes\": "
			    "number, \"max_bytes\": number or null\n   (unbounded), \"channels\" "
			    "(0 = NCCL's), \"n_nodes\", \"n_ranks\", \"num_pipe_ops\"\n   (-1 = "
			    "any): numbers}]}\n");
