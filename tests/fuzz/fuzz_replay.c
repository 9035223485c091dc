/* Runs a libFuzzer target's LLVMFuzzerTestOneInput on the files named on the command line,
 * without libFuzzer: the fuzz targets' own checks (e.g. fuzz_loader.c's consistency walk)
 * run on their regression inputs in every build, gcc included. An input that makes the
 * target abort fails the test. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 1;
		}
		uint8_t *buf = malloc(1 << 20);
		size_t n = buf ? fread(buf, 1, 1 << 20, f) : 0;
		fclose(f);
		if (!buf)
			return 1;
		LLVMFuzzerTestOneInput(buf, n);
		free(buf);
		printf("%s: ok\n", argv[i]);
	}
	return 0;
}
