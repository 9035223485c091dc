/* libFuzzer target for the offline tuner's text inputs: the samples CSV parser and the
 * nccl-tests output parser (and the analysis of whatever they accept), and the
 * nccl_tuner.conf parser with each --regbuff mode. The first byte picks the parser so one
 * corpus covers all: bit 0 the rule file (bits 2-3 the regBuff mode), else bit 2 nccl-tests
 * output, else the CSV (bit 1: --reps even). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tune_analyze.h"
#include "tools/tune_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	if (data[0] & 1) {
		struct tune_rule rules[TUNE_MAX_RULES];
		int n = tune_conf_parse_regbuff(text, len, "fuzz.conf", rules, TUNE_MAX_RULES,
						(data[0] >> 2) % 3, NULL);
		if (n > TUNE_MAX_RULES)
			abort();
		for (int i = 0; i < n; i++)
			if (rules[i].min_bytes > rules[i].max_bytes || rules[i].n_channels < 0 ||
			    rules[i].n_channels > 64)
				abort();
		return 0;
	}
	struct tune_rep_filter f;
	tune_rep_filter_parse(data[0] & 2 ? "even" : "all", &f);
	struct tune_samples s;
	memset(&s, 0, sizeof(s));
	int rc = data[0] & 4 ? tune_nccltests_parse(text, len, "all_reduce_perf.txt", &f, &s, NULL)
			     : tune_samples_parse(text, len, "fuzz.csv", &f, &s, NULL);
	if (rc == 0 && s.n) {
		struct tune_opts o;
		tune_opts_default(&o);
		o.min_samples = 2;
		struct tune_range *r = NULL;
		size_t nr = 0;
		if (tune_analyze(&s, &o, &r, &nr) == 0) {
			struct tune_rule rules[TUNE_MAX_RULES];
			int n = tune_ranges_to_rules(r, nr, rules, TUNE_MAX_RULES);
			for (int i = 0; i < n; i++)
				if (rules[i].min_bytes > rules[i].max_bytes)
					abort();
		}
		free(r);
	}
	tune_samples_free(&s);
	return 0;
}
