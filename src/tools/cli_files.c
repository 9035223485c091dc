/* Input files of the CLI's commands (tools/cli.h): one reader for all of them, on the
 * loader's (src/loader/read_file.c: regular files only, bounded), and the same-file test that
 * keeps an output from overwriting its input. Separate from cli_common.c, which fuzz targets
 * link without the library. */
#include <string.h>
#include <sys/stat.h>

#include "loader/object.h"
#include "tools/cli.h"

bool cli_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	if (!strcmp(a, b))
		return true;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

int cli_read_file(const char *path, size_t max, char **buf, size_t *len)
{
	char why[256];
	void *b = NULL;
	int rc = loader_read_file(path, max, &b, len, why, sizeof(why));
	if (rc) {
		fprintf(stderr, "%s: error: %s\n", path, why);
		return rc;
	}
	*buf = b;
	return 0;
}
