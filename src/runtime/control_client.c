/* Client of the control socket (control.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/control.h"
#include "runtime/control_internal.h"
#include "runtime/control_proto.h"

static int wait_fd(int fd, short ev, int timeout_ms)
{
	struct pollfd p = {fd, ev, 0};
	int rc;
	do
		rc = poll(&p, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
	return rc > 0 ? 0 : -ETIMEDOUT;
}

static int recv_full(int fd, void *buf, size_t len, int timeout_ms)
{
	size_t got = 0;
	while (got < len) {
		if (wait_fd(fd, POLLIN, timeout_ms))
			return -ETIMEDOUT;
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		got += (size_t)n;
	}
	return 0;
}

/* The socket's address; a path too long for sun_path is reached through its opened
 * directory (*dfd, to be closed after the connect). */
static int socket_addr(const char *path, struct sockaddr_un *sa, int *dfd, char *err,
		       size_t errlen)
{
	if (strlen(path) < sizeof(sa->sun_path)) {
		memcpy(sa->sun_path, path, strlen(path) + 1);
		return 0;
	}
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;
	if (!dir) {
		snprintf(err, errlen, "%s: path too long for a Unix socket", path);
		return -ENAMETOOLONG;
	}
	*dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int rc = *dfd < 0 ? -errno : control_sockaddr(*dfd, dir, slash + 1, sa, err, errlen);
	if (*dfd < 0)
		snprintf(err, errlen, "%s: %s", dir, strerror(-rc));
	free(dir);
	if (rc < 0 && *dfd >= 0) {
		close(*dfd);
		*dfd = -1;
	}
	return rc;
}

int runtime_control_call(const char *path, unsigned op, unsigned flags, unsigned argc,
			 const char *const *argv, int timeout_ms, int *status, char **out,
			 size_t *outlen, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	uint8_t *req = malloc(NBC_HEADER_SIZE + NBC_MAX_REQUEST);
	int fd = -1, rc;

	*out = NULL;
	if (outlen)
		*outlen = 0;
	if (!req) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	long n = nbc_encode_request((uint8_t)op, (uint8_t)flags, argc, argv, req,
				    NBC_HEADER_SIZE + NBC_MAX_REQUEST);
	if (n < 0) {
		snprintf(err, errlen, "request too large or malformed (arguments 1..%u bytes, %u in "
			 "all)", NBC_MAX_ARG_LEN, NBC_MAX_REQUEST);
		free(req);
		return (int)n;
	}
	int dfd = -1;
	if ((rc = socket_addr(path, &sa, &dfd, err, errlen)) < 0) {
		free(req);
		return rc;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* a server whose backlog is full would block connect() without end */
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	rc = fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ? -errno : 0;
	if (dfd >= 0)
		close(dfd);
	if (rc < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(-rc));
		goto out;
	}
	/* the other end must be our uid or root: in a directory others can write to, a
	 * socket of theirs would otherwise read our requests and answer for the job */
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cl != sizeof(cred)) {
		rc = -EPERM;
		snprintf(err, errlen, "%s: cannot read the server's credentials: not talking to it",
			 path);
		goto out;
	}
	if (cred.uid != geteuid() && cred.uid != 0) {
		rc = -EPERM;
		snprintf(err, errlen, "%s is served by uid %u, neither this user (uid %u) nor root: "
			 "not talking to it", path, (unsigned)cred.uid, (unsigned)geteuid());
		goto out;
	}
	size_t put = 0;
	while (put < (size_t)n) {
		if ((rc = wait_fd(fd, POLLOUT, timeout_ms))) {
			snprintf(err, errlen, "%s: timed out sending", path);
			goto out;
		}
		ssize_t w = send(fd, req + put, (size_t)n - put, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0 && (errno == EPIPE || errno == ECONNRESET))
			break; /* the server answered early (a refusal): read that answer */
		if (w <= 0) {
			rc = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto out;
		}
		put += (size_t)w;
	}
	uint8_t hdr[NBC_HEADER_SIZE];
	struct nbc_header h;
	if ((rc = recv_full(fd, hdr, sizeof(hdr), timeout_ms))) {
		snprintf(err, errlen, "%s: no reply (%s)", path, strerror(-rc));
		goto out;
	}
	nbc_header_decode(hdr, &h);
	if (h.magic != NBC_MAGIC || h.version != NBC_VERSION || h.len > NBC_MAX_REPLY) {
		rc = -EPROTO;
		snprintf(err, errlen, "%s: not an ncclbpf reply (magic 0x%08x, version %u, %u bytes)",
			 path, h.magic, h.version, h.len);
		goto out;
	}
	*out = malloc((size_t)h.len + 1);
	if (!*out) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if ((rc = recv_full(fd, *out, h.len, timeout_ms))) {
		snprintf(err, errlen, "%s: truncated reply (%s)", path, strerror(-rc));
		free(*out);
		*out = NULL;
		goto out;
	}
	(*out)[h.len] = '\0';
	if (outlen)
		*outlen = h.len;
	*status = h.status;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(req);
	return rc;
}
