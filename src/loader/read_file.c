/* Reading an input file whole, refusing what is not a regular file (loader/object.h). A FIFO
 * would block the reader forever (NCCL's init thread, for NCCLBPF_POLICY), a character
 * device such as /dev/zero never ends: both are refused before a byte is read. The open
 * itself is non-blocking, so opening a FIFO without a writer returns at once. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader/object.h"

static const char *file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a file";
}

int loader_open_regular(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s", strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		snprintf(err, errlen, "%s", strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "not a regular file (%s)", file_kind(st.st_mode));
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	/* reads block normally from here on (regular files never block anyway) */
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

int loader_read_file(const char *path, size_t max, void **out, size_t *out_len, char *err,
		     size_t errlen)
{
	*out = NULL;
	*out_len = 0;
	int fd = loader_open_regular(path, err, errlen);
	if (fd < 0)
		return fd;
	struct stat st;
	size_t cap = 65536;
	if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < max)
		cap = (size_t)st.st_size + 1; /* one more byte: seeing EOF needs no second buffer */
	if (cap > max)
		cap = max + 1;
	char *buf = malloc(cap + 1);
	size_t len = 0;
	int rc = 0;
	if (!buf) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
	}
	while (!rc) {
		if (len == cap) {
			if (cap > max) { /* read past the limit: the file is larger than allowed */
				rc = -EFBIG;
				snprintf(err, errlen, "larger than the %zu-byte limit", max);
				break;
			}
			size_t nc = cap > max / 2 ? max + 1 : cap * 2;
			char *g = realloc(buf, nc + 1);
			if (!g) {
				rc = -ENOMEM;
				snprintf(err, errlen, "out of memory");
				break;
			}
			buf = g;
			cap = nc;
		}
		ssize_t got = read(fd, buf + len, cap - len);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			snprintf(err, errlen, "read error: %s", strerror(errno));
			break;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	if (!rc && len > max) {
		rc = -EFBIG;
		snprintf(err, errlen, "larger than the %zu-byte limit", max);
	}
	if (rc) {
		free(buf);
		return rc;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}
