/* ncclbpf rules compile nccl_tuner.conf -o rules.bpf.o: converts the rule file of NCCL's
 * example tuner into the verified table policy (policies/tuned_rules.bpf.c), so users of
 * that tuner move to ncclbpf in one command. Nothing is written unless every line parses
 * and the built object loads, verifies and decides like the rules on every rule's edges. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"
#include "tools/tune_input.h"
#include "tools/tune_object.h"

static int cmd_rules(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("rules", "no subcommand given (the one there is: compile)");
	if (strcmp(argv[1], "compile"))
		return cli_usage_error("rules", "unknown subcommand '%s' (the one there is: compile)",
				       argv[1]);
	const char *in = NULL, *out = NULL;
	for (int i = 2; i < argc; i++) {
		int r;
		if ((r = cli_opt_value("rules", argc, argv, &i, "-o", &out)) ||
		    (r = cli_opt_value("rules", argc, argv, &i, "--output", &out))) {
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
	if (!in)
		return cli_usage_error("rules", "no rule file given");
	if (!out)
		return cli_usage_error("rules", "no output file given (-o OUT)");
	char *buf = NULL;
	size_t len = 0;
	int rc = tune_read_file(in, 16u << 20, &buf, &len);
	if (rc) {
		fprintf(stderr, "%s: error: %s\n", in, strerror(-rc));
		return CLI_EXIT_REFUSED;
	}
	struct tune_rule rules[TUNE_MAX_RULES];
	int n = tune_conf_parse(buf, len, in, rules, TUNE_MAX_RULES, stderr);
	free(buf);
	if (n < 0)
		return CLI_EXIT_REFUSED;
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

NCCLBPF_CLI_COMMAND(rules, .name = "rules", .run = cmd_rules,
		    .synopsis = "compile RULES.conf -o OUT",
		    .summary = "NCCL example-tuner rule file -> verified table policy",
		    .help = "`rules compile` converts the rule file of NCCL's example tuner\n"
			    "(plugins/tuner/example, nccl_tuner.conf) into the table policy\n"
			    "policies/tuned_rules.bpf.c with the rules in .rodata, so users of "
			    "that tuner\nmove to ncclbpf in one command. Nothing is written "
			    "unless every line parses\nand the built object loads, verifies "
			    "(strict) and decides like the rules on\nevery rule's edges; the "
			    "file is written atomically. See docs/tuning.md.\n"
			    "\n"
			    "options:\n"
			    "  -o, --output OUT   the policy object to write (required)\n"
			    "\n"
			    "input: one rule per line,\n"
			    "  coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks\n"
			    "  [,numPipeOps[,regBuff]]\n"
			    "-1 = any (min/max_bytes: 0 and unbounded; channels: NCCL's); names "
			    "as NCCL\nspells them (allreduce, ring, ll128; case-insensitive); "
			    "'#' starts a comment;\nthe first matching rule wins; at most 32 "
			    "rules; regBuff other than -1 is\nrefused (buffer registration is "
			    "rank-local).\n"
			    "\n"
			    "exit status: 0 written; 1 an unreadable file, a bad line "
			    "(FILE:LINE: error: ...)\nor an object that did not verify or decide "
			    "like the rules (nothing written);\n2 usage.\n");
