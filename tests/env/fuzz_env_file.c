/* libFuzzer target: NCCLBPF_ENV_FILE contents. A file either parses (and every value found
 * is a NUL-terminated string with a line number inside the file) or is rejected with a
 * "file:line: error:" message and no table. */
#include <stdlib.h>
#include <string.h>

#include "plugin/env/env_plugin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct env_file *f = NULL;
	char err[512];
	int rc = env_file_parse((const char *)data, size, "fuzz.env", "node7.example", &f, err,
				sizeof(err));
	if (rc == 0) {
		for (size_t i = 0; i < f->n_vars; i++) {
			const struct env_var *v = &f->vars[i];
			if (env_file_find(f, v->name) != v || v->n < 1 || v->n > ENV_MAX_CANDIDATES)
				abort();
			for (int k = 0; k < v->n; k++)
				if (v->lines[k] < 1 || strlen(v->values[k]) > ENV_MAX_LINE)
					abort();
		}
		env_file_free(f, 0);
	} else if (f || !strstr(err, "fuzz.env:")) {
		abort();
	}
	return 0;
}
