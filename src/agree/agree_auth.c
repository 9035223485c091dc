/* agree: connection authentication (agree_auth.h): SipHash-2-4, the job key, the handshake
 * MACs, random nonces and the owner of a peer socket on this host. */
#include "agree/agree_auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#define SIPROUND                                                                           \
	do {                                                                               \
		v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);                  \
		v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                                     \
		v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                                     \
		v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);                  \
	} while (0)

uint64_t agree_siphash(const struct agree_key *k, const void *p, size_t n)
{
	const uint8_t *in = p;
	uint64_t v0 = k->k0 ^ 0x736f6d6570736575ull, v1 = k->k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = k->k0 ^ 0x6c7967656e657261ull, v3 = k->k1 ^ 0x7465646279746573ull;
	size_t full = n & ~(size_t)7;
	for (size_t i = 0; i < full; i += 8) {
		uint64_t m = le64(in + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	/* the last block: the remaining bytes and the length's low byte on top */
	uint64_t b = (uint64_t)(n & 0xff) << 56;
	for (size_t i = 0; i < (n & 7); i++)
		b |= (uint64_t)in[full + i] << (8 * i);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

void agree_job_key(const char *secret, struct agree_key *out)
{
	/* fixed derivation key: the job key is a function of the secret alone */
	static const struct agree_key kdf = {0x6e63636c6270662dull, 0x61677265652d6b64ull};
	uint8_t buf[512];
	size_t len = secret ? strlen(secret) : 0;
	uint64_t h[2];
	for (int i = 0; i < 2; i++) {
		/* "ncclbpf-agree-key" i, then the secret; long secrets are hashed in chunks */
		uint64_t acc = 0;
		size_t off = 0;
		do {
			size_t chunk = len - off < sizeof(buf) - 32 ? len - off : sizeof(buf) - 32;
			int hl = snprintf((char *)buf, 32, "ncclbpf-agree-key-%d", i);
			memcpy(buf + hl, &acc, 8);
			if (chunk)
				memcpy(buf + hl + 8, secret + off, chunk);
			acc = agree_siphash(&kdf, buf, (size_t)hl + 8 + chunk);
			off += chunk;
		} while (off < len);
		h[i] = acc;
	}
	out->k0 = h[0];
	out->k1 = h[1];
}

uint64_t agree_auth_mac(const struct agree_key *k, char role, const uint8_t *n1,
			const uint8_t *n2)
{
	uint8_t buf[24 + 2 * AGREE_NONCE_BYTES];
	memcpy(buf, "ncclbpf-agree-auth-2", 20);
	buf[20] = (uint8_t)role;
	buf[21] = buf[22] = buf[23] = 0;
	memcpy(buf + 24, n1, AGREE_NONCE_BYTES);
	memcpy(buf + 24 + AGREE_NONCE_BYTES, n2, AGREE_NONCE_BYTES);
	return agree_siphash(k, buf, sizeof(buf));
}

int agree_random(void *buf, size_t n)
{
	uint8_t *p = buf;
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, GRND_NONBLOCK);
		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	if (got == n)
		return 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r <= 0) {
			int e = r < 0 ? -errno : -EIO;
			close(fd);
			return e;
		}
		got += (size_t)r;
	}
	close(fd);
	return 0;
}

/* The kernel's exact socket lookup (NETLINK_SOCK_DIAG, the interface `ss` uses): the
 * socket whose local end is (src, sport) and remote end (dst, dport). */
static int diag_uid(uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport, uid_t *uid)
{
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -errno;
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req;
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = AF_INET;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	req.r.id.idiag_sport = sport;
	req.r.id.idiag_dport = dport;
	req.r.id.idiag_src[0] = src;
	req.r.id.idiag_dst[0] = dst;
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
	/* a bounded wait: the kernel answers at once */
	struct timeval tv = {1, 0};
	setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sendto(nl, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = -errno;
		close(nl);
		return e;
	}
	union {
		struct nlmsghdr h;
		char b[8192];
	} resp;
	ssize_t n = recv(nl, &resp, sizeof(resp), 0);
	int rc = n < 0 ? -errno : -EIO;
	close(nl);
	if (n < 0)
		return rc;
	for (struct nlmsghdr *h = &resp.h; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(h);
			return e->error ? e->error : -EIO;
		}
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			*uid = m->idiag_uid;
			return 0;
		}
	}
	return -EIO;
}

/* /proc/net/tcp, where netlink is not available: the same lookup by scanning. */
static int proc_uid(uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport, uid_t *uid)
{
	FILE *f = fopen("/proc/net/tcp", "re");
	if (!f)
		return -errno;
	char line[512];
	int rc = -ENOENT;
	if (!fgets(line, sizeof(line), f)) { /* header */
		fclose(f);
		return -EIO;
	}
	/* addresses are printed as the raw 32-bit word in host order, ports in host order */
	while (fgets(line, sizeof(line), f)) {
		unsigned la, lp, ra, rp, st;
		unsigned long u;
		if (sscanf(line, " %*d: %x:%x %x:%x %x %*x:%*x %*x:%*x %*x %lu", &la, &lp, &ra, &rp,
			   &st, &u) != 6)
			continue;
		if (la == src && lp == ntohs(sport) && ra == dst && rp == ntohs(dport)) {
			*uid = (uid_t)u;
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

int agree_peer_uid(int fd, uid_t *uid)
{
	struct sockaddr_in me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);
	if (getsockname(fd, (struct sockaddr *)&me, &ml) != 0 ||
	    getpeername(fd, (struct sockaddr *)&peer, &pl) != 0)
		return -errno;
	if (me.sin_family != AF_INET || peer.sin_family != AF_INET)
		return -EAFNOSUPPORT;
	/* the peer's socket: its local end is our remote end */
	int rc = diag_uid(peer.sin_addr.s_addr, peer.sin_port, me.sin_addr.s_addr, me.sin_port,
			  uid);
	if (rc == 0 || rc == -ENOENT)
		return rc;
	return proc_uid(peer.sin_addr.s_addr, peer.sin_port, me.sin_addr.s_addr, me.sin_port,
			uid);
}

bool agree_addr_is_local(uint32_t addr)
{
	if ((ntohl(addr) >> 24) == 127)
		return true;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
	sa.sin_addr.s_addr = addr;
	bool local = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return local;
}
