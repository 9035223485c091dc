#include "cli_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

int cli_run_alloc(const char *cmd, char **out, size_t *len)
{
	*out = NULL;
	FILE *f = popen(cmd, "r");
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	if (!f || !buf) {
		if (f)
			pclose(f);
		free(buf);
		return -1;
	}
	for (;;) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		if (!r)
			break;
		n += r;
	}
	buf[n] = '\0';
	int st = pclose(f);
	*out = buf;
	if (len)
		*len = n;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int cli_run(const char *cmd, char *out, size_t cap)
{
	char *buf;
	size_t n;
	int st = cli_run_alloc(cmd, &buf, &n);
	if (!buf)
		return -1;
	snprintf(out, cap, "%s", buf);
	free(buf);
	return st;
}
