/* libFuzzer target for `ncclbpf decisions`: decision-log files are bytes from disk (any
 * process can write the directory). The input is written to a file and checked like a
 * log (odd sizes with --json, even ones with -q); the command must return one of its
 * documented statuses - 0, 1, 3 or 4 (incomplete: dropped or lost decisions) - and never
 * crash, leak or read out of bounds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

int cmd_decisions(int argc, char **argv);

static char path[64];

static void cleanup(void)
{
	unlink(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int devnull = -1, saved_err = -1;
	if (!path[0]) {
		snprintf(path, sizeof(path), "/tmp/fuzz-decisions-%d.jsonl", (int)getpid());
		if (!freopen("/dev/null", "w", stdout))
			abort();
		devnull = open("/dev/null", O_WRONLY);
		saved_err = dup(2);
		atexit(cleanup);
	}
	FILE *f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	char *argv[] = {"decisions", size & 1 ? "--json" : "-q", path, NULL};
	/* the checker's diagnostics are silenced; sanitizer reports still reach stderr */
	fflush(stderr);
	dup2(devnull, 2);
	int rc = cmd_decisions(3, argv);
	fflush(stderr);
	dup2(saved_err, 2);
	if (rc != 0 && rc != 1 && rc != 3 && rc != 4)
		abort();
	return 0;
}
