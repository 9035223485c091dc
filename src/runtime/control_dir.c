/* The control directory and socket names (control.h, docs/control.md "The socket").
 *
 * Rules: ncclbpf changes only a directory it created. An existing one is used as it is when
 * it is a real directory (no symlink) of this uid that nobody else may write to; otherwise
 * the socket is disabled with the reason. A shared sticky directory such as /tmp given as
 * NCCLBPF_CONTROL_DIR is not used itself: its private subdirectory ncclbpf-<uid> is, as for
 * the default under $TMPDIR (library and `ncclbpf ctl` resolve the name alike).
 *
 * Sockets are bound and connected through the opened directory (/proc/self/fd/N/NAME), so
 * a directory of any depth works (sun_path holds 108 bytes) and a directory renamed or
 * replaced after it was checked is never used. No chdir: this is a library. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/control_internal.h"
#include "runtime/runtime.h"

/* A sticky directory others may write to (/tmp, /var/tmp): never used as is. */
static bool shared_sticky(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) &&
	       (st.st_mode & S_IWOTH);
}

int runtime_control_dir_resolve(const char *configured, char *buf, size_t len)
{
	const char *d;
	int n;
	if (configured && *configured && shared_sticky(configured))
		n = snprintf(buf, len, "%s/ncclbpf-%u", configured, (unsigned)geteuid());
	else if (configured && *configured)
		n = snprintf(buf, len, "%s", configured);
	else if ((d = getenv("XDG_RUNTIME_DIR")) && *d)
		n = snprintf(buf, len, "%s/ncclbpf", d);
	else
		n = snprintf(buf, len, "%s/ncclbpf-%u", (d = getenv("TMPDIR")) && *d ? d : "/tmp",
			     (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int runtime_control_dir(char *buf, size_t len)
{
	return runtime_control_dir_resolve(getenv("NCCLBPF_CONTROL_DIR"), buf, len);
}

int control_dir_open(const char *dir, char *err, size_t errlen)
{
	bool created = mkdir(dir, 0700) == 0;
	if (!created && errno != EEXIST) {
		int e = errno;
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(e));
		return -e;
	}
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		struct stat ls;
		bool link = e == ELOOP || (lstat(dir, &ls) == 0 && S_ISLNK(ls.st_mode));
		if (e == ELOOP || e == ENOTDIR)
			snprintf(err, errlen, "%s is %s: not used (ncclbpf uses only a real directory "
				 "of its own)", dir, link ? "a symbolic link" : "not a directory");
		else
			snprintf(err, errlen, "%s: %s", dir, strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a directory", dir);
		close(fd);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s belongs to uid %u, not to this process (uid %u): not used "
			 "and not changed (someone else created it; remove it, or set "
			 "NCCLBPF_CONTROL_DIR to a directory of your own)", dir, (unsigned)st.st_uid,
			 (unsigned)geteuid());
		close(fd);
		return -EPERM;
	}
	if (created) {
		/* ours: the umask may have taken bits a 0700 directory needs */
		if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) != 0) {
			int e = errno;
			snprintf(err, errlen, "cannot make %s mode 0700: %s", dir, strerror(e));
			close(fd);
			return -e;
		}
	} else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s (mode %04o) is writable by other users, who could replace "
			 "the sockets: not used and not changed (ncclbpf changes only directories it "
			 "creates; make it 0700, or set NCCLBPF_CONTROL_DIR to a private directory)",
			 dir, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	return fd;
}

int control_sockaddr(int dfd, const char *dir, const char *name, struct sockaddr_un *sa,
		     char *err, size_t errlen)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* through the directory descriptor when /proc is there: any depth, no re-resolution */
	if (dfd >= 0 && access("/proc/self/fd", X_OK) == 0) {
		int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/%s", dfd, name);
		if (n > 0 && (size_t)n < sizeof(sa->sun_path))
			return 0;
	}
	int n = snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path)) {
		snprintf(err, errlen, "%s/%s: too long for a Unix socket address (%zu bytes) and "
			 "/proc is not mounted", dir, name, sizeof(sa->sun_path) - 1);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Whether something listens on NAME in the directory (a connection is accepted or pending). */
static bool listening(int dfd, const char *dir, const char *name)
{
	struct sockaddr_un sa;
	char err[64];
	if (control_sockaddr(dfd, dir, name, &sa, err, sizeof(err)) < 0)
		return true; /* cannot tell: keep it */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return true;
	int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	close(fd);
	return rc == 0 || e != ECONNREFUSED;
}

int control_dir_sweep(int dfd, const char *dir)
{
	int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	int removed = 0, seen = 0;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return 0;
	}
	for (struct dirent *e; (e = readdir(d)) && seen < 4096;) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (pid <= 0 || pid > INT_MAX || strcmp(end, ".sock") || pid == (long)getpid())
			continue;
		seen++;
		/* a socket is stale when its process is gone and nothing listens on it; a
		 * process of another pid namespace sharing the directory still listens */
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH || listening(dfd, dir, e->d_name))
			continue;
		if (unlinkat(dfd, e->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
