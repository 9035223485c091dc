/* ncclbpf rules compile nccl_tuner.conf -o rules.bpf.o: converts the rule file of NCCL's
 * example tuner into the verified table policy (policies/tuned_rules.bpf.c), so users of
 * that tuner move to ncclbpf in one command. Nothing is written unless every line parses
 * and the built object loads, verifies and decides like the rules on every rule's edges. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tune_input.h"
#include "tools/tune_object.h"

int cmd_rules(int argc, char **argv);

static void rules_usage(FILE *f)
{
	fprintf(f, "usage: ncclbpf rules compile nccl_tuner.conf -o rules.bpf.o\n"
		   "  lines: coll,min_bytes,max_bytes,algo,proto,channels,nNodes,nRanks[,numPipeOps[,regBuff]]\n"
		   "  -1 = any (channels -1 = NCCL's); first matching rule wins; '#' comments.\n");
}

int cmd_rules(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		rules_usage(stdout);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "compile")) {
		rules_usage(stderr);
		return 2;
	}
	const char *in = NULL, *out = NULL;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (argv[i][0] != '-' && !in)
			in = argv[i];
		else {
			rules_usage(stderr);
			return 2;
		}
	}
	if (!in || !out) {
		rules_usage(stderr);
		return 2;
	}
	char *buf = NULL;
	size_t len = 0;
	int rc = tune_read_file(in, 16u << 20, &buf, &len);
	if (rc) {
		fprintf(stderr, "%s: error: %s\n", in, strerror(-rc));
		return 1;
	}
	struct tune_rule rules[TUNE_MAX_RULES];
	int n = tune_conf_parse(buf, len, in, rules, TUNE_MAX_RULES, stderr);
	free(buf);
	if (n < 0)
		return 1;
	char err[1024] = "";
	void *obj = NULL;
	size_t olen = 0;
	if (tune_object_build(ncclbpf_tuned_rules_template, ncclbpf_tuned_rules_template_len, rules,
			      (size_t)n, &obj, &olen, err, sizeof(err)) ||
	    tune_write_atomic(out, obj, olen, err, sizeof(err))) {
		fprintf(stderr, "ncclbpf rules: %s\n", err);
		free(obj);
		return 1;
	}
	free(obj);
	fprintf(stderr, "ncclbpf rules: %d rule%s from %s -> %s (verified, checked rule by rule)\n", n,
		n == 1 ? "" : "s", in, out);
	return 0;
}
