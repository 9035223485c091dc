/* Append-only record files that never hurt their host (runtime.h, runtime_logfile_*):
 * created without following or replacing anything already there, written whole records at
 * a time, and, when records cannot be written, counted and said so in the file itself.
 *
 * Creation: openat(dir, name, O_CREAT | O_EXCL | O_NOFOLLOW): a symlink or file planted
 * under the predictable name is neither followed nor truncated (a root process would
 * otherwise overwrite whatever it points to); the next names NAME-1 ... NAME-15 are tried,
 * and the WARN says what was found.
 *
 * Writing never kills the process: RLIMIT_FSIZE is checked before each write (at the limit
 * the kernel sends SIGXFSZ, whose default action ends the process); a write that still
 * meets it (the limit lowered meanwhile) runs with SIGXFSZ blocked on this thread only and
 * the signal it raised is consumed; no process-wide handler is installed, the host's own
 * SIGXFSZ disposition is untouched. A failed write (EFBIG, ENOSPC, EIO) drops its records
 * (the file is cut back to the last whole one), counts them, logs one WARN per cause, and
 * the file gets a marker record from the caller (e.g. {"lost":N,...}): room for two
 * markers is kept below the size limit and, where the file system can, preallocated
 * beyond the end (fallocate KEEP_SIZE), so the marker lands even on a full disk. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"

#define MARKER_MAX 128                   /* one marker record, at most */
#define MARKER_ROOM (2 * MARKER_MAX)     /* kept free: a marker now, one at close */
#define RESERVE_AHEAD (64 * 1024)        /* preallocated beyond what is needed now */

static const char *kind_of(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return "something";
	if (S_ISLNK(st.st_mode))
		return "a symbolic link";
	if (S_ISREG(st.st_mode))
		return "a file (of an earlier process with this pid?)";
	return "not a regular file";
}

int runtime_logfile_create(struct runtime_logfile *lf, const char *dir, const char *base,
			   const char *ext, runtime_logfile_marker_fn marker, char *err,
			   size_t errlen)
{
	memset(lf, 0, sizeof(*lf));
	lf->fd = -1;
	lf->marker = marker;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	char name[256], first[256];
	const char *found = NULL;
	int rc = -EEXIST;
	for (int i = 0; i < 16; i++) {
		if (i == 0)
			snprintf(name, sizeof(name), "%s%s", base, ext);
		else
			snprintf(name, sizeof(name), "%s-%d%s", base, i, ext);
		int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0) {
			lf->fd = fd;
			rc = 0;
			break;
		}
		if (errno != EEXIST) {
			rc = -errno;
			snprintf(err, errlen, "cannot create %s/%s: %s", dir, name, strerror(errno));
			close(dfd);
			return rc;
		}
		if (i == 0) {
			snprintf(first, sizeof(first), "%s", name);
			found = kind_of(dfd, name);
		}
	}
	close(dfd);
	if (rc < 0) {
		snprintf(err, errlen, "%s/%s and the next 15 names exist (%s): not opened, not "
			 "overwritten", dir, first, found);
		return rc;
	}
	snprintf(lf->path, sizeof(lf->path), "%s/%s", dir, name);
	if (found) /* the caller logs it: opened, but under another name */
		snprintf(err, errlen, "%s/%s already exists (%s): not opened, not overwritten; "
			 "writing %s instead", dir, first, found, lf->path);
	else if (errlen)
		err[0] = '\0';
	lf->can_reserve = true;
	return 0;
}

void runtime_logfile_close(struct runtime_logfile *lf)
{
	runtime_logfile_flush(lf, true);
	if (lf->fd >= 0)
		close(lf->fd);
	lf->fd = -1;
	free(lf->buf);
	lf->buf = NULL;
	lf->len = lf->cap = 0;
}

/* write(2) of all of it, SIGXFSZ blocked on this thread while it runs. */
static int write_all(int fd, const char *p, size_t n)
{
	sigset_t xfsz, old, before;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	sigpending(&before);
	int rc = 0;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	if (rc == -EFBIG && !sigismember(&before, SIGXFSZ)) {
		/* the signal this write raised, pending on this thread: consumed, so that
		 * restoring the mask does not deliver it */
		sigset_t now;
		struct timespec zero = {0, 0};
		if (sigpending(&now) == 0 && sigismember(&now, SIGXFSZ))
			sigtimedwait(&xfsz, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Bytes of the file size limit left for records, MARKER_ROOM kept back; UINT64_MAX: none. */
static uint64_t fsize_room(const struct runtime_logfile *lf)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	uint64_t lim = (uint64_t)rl.rlim_cur;
	return lim > lf->off + MARKER_ROOM ? lim - lf->off - MARKER_ROOM : 0;
}

/* Room for n more bytes and MARKER_ROOM after them: under RLIMIT_FSIZE, and preallocated
 * where the file system can. 0 or a negative errno (the data is not written then). */
static int make_room(struct runtime_logfile *lf, size_t n)
{
	uint64_t need = lf->off + n + MARKER_ROOM;
	struct rlimit rl;
	if (n > fsize_room(lf))
		return -EFBIG;
	if (!lf->can_reserve || lf->reserved_end >= need)
		return 0;
	uint64_t want = need + RESERVE_AHEAD;
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    want > (uint64_t)rl.rlim_cur)
		want = rl.rlim_cur; /* fallocate beyond the limit would raise SIGXFSZ */
	if (fallocate(lf->fd, FALLOC_FL_KEEP_SIZE, (off_t)lf->off, (off_t)(want - lf->off)) == 0 ||
	    (errno == ENOSPC && (want = need) &&
	     fallocate(lf->fd, FALLOC_FL_KEEP_SIZE, (off_t)lf->off, (off_t)(want - lf->off)) == 0)) {
		/* (nearly full: just what this write and the markers need) */
		lf->reserved_end = want;
		return 0;
	}
	if (errno == EOPNOTSUPP || errno == ENOSYS || errno == ENODEV || errno == EINVAL) {
		lf->can_reserve = false; /* no guarantee for the marker on this file system */
		return 0;
	}
	return -errno;
}

static void warn_loss(struct runtime_logfile *lf, int rc)
{
	if (rc == lf->last_err)
		return; /* once per cause; the file's markers carry the counts */
	lf->last_err = rc;
	runtime_log(NB_LOG_WARN, NB_LOG_INIT,
		    "%s: cannot write (%s): %llu record(s) lost so far; the file says so "
		    "(a \"lost\" record)%s", lf->path, strerror(-rc), (unsigned long long)lf->lost,
		    rc == -EFBIG ? ", the process is not stopped by the file size limit" : "");
}

/* A marker for the records lost and not yet marked; when the room kept for it allows. */
static void write_marker(struct runtime_logfile *lf, bool final)
{
	char m[MARKER_MAX];
	if (!lf->unmarked || !lf->marker || (lf->marked_since_ok && !final))
		return;
	int n = lf->marker(m, sizeof(m), lf->unmarked, strerror(-lf->unmarked_err));
	if (n <= 0 || (size_t)n >= sizeof(m))
		return;
	if (write_all(lf->fd, m, (size_t)n) == 0) {
		lf->off += (uint64_t)n;
		lf->unmarked = 0;
		lf->marked_since_ok = true;
	} else if (ftruncate(lf->fd, (off_t)lf->off) != 0) {
		/* nothing more to do: the next whole record starts at off all the same */
	}
}

int runtime_logfile_flush(struct runtime_logfile *lf, bool final)
{
	if (lf->fd < 0)
		return -EBADF;
	int rc = 0;
	uint64_t fit = lf->len ? fsize_room(lf) : UINT64_MAX;
	if (lf->len && fit < lf->len) {
		/* the whole records that still fit under the file size limit go out; the rest
		 * is lost below */
		size_t k = (size_t)fit;
		while (k && lf->buf[k - 1] != '\n')
			k--;
		uint64_t recs = 0;
		for (size_t i = 0; i < k; i++)
			recs += lf->buf[i] == '\n';
		if (k && make_room(lf, k) == 0 && write_all(lf->fd, lf->buf, k) == 0) {
			lf->off += k;
			memmove(lf->buf, lf->buf + k, lf->len - k);
			lf->len -= k;
			lf->records -= recs;
		}
	}
	if (lf->len) {
		rc = make_room(lf, lf->len);
		if (rc == 0)
			rc = write_all(lf->fd, lf->buf, lf->len);
		if (rc == 0) {
			lf->off += lf->len;
			lf->marked_since_ok = false;
			lf->last_err = 0;
		} else {
			/* cut back to the last whole record: a reader never sees half of one */
			if (ftruncate(lf->fd, (off_t)lf->off) != 0) {
				/* the marker below still starts a line of its own */
			}
			lf->lost += lf->records;
			lf->unmarked += lf->records;
			lf->unmarked_err = rc;
			warn_loss(lf, rc);
		}
		lf->len = 0;
		lf->records = 0;
	}
	write_marker(lf, final);
	return rc;
}

int runtime_logfile_append(struct runtime_logfile *lf, const char *rec, size_t n)
{
	if (lf->fd < 0)
		return -EBADF;
	if (lf->len + n > lf->cap) {
		if (lf->len)
			runtime_logfile_flush(lf, false);
		if (n > lf->cap) {
			size_t cap = n > 65536 ? n : 65536;
			char *p = realloc(lf->buf, cap);
			if (!p) {
				lf->lost++;
				lf->unmarked++;
				lf->unmarked_err = -ENOMEM;
				warn_loss(lf, -ENOMEM);
				return -ENOMEM;
			}
			lf->buf = p;
			lf->cap = cap;
		}
	}
	memcpy(lf->buf + lf->len, rec, n);
	lf->len += n;
	lf->records++;
	return 0;
}
