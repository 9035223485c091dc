/* agree: authentication of the agreement layer's connections (docs/agreement.md "Threat
 * model").
 *
 * Every TCP connection of the agreement layer (to the rendezvous hub, to a leader or relay,
 * accepted by one) starts with a challenge-response in both directions before anything
 * else is read or sent:
 *   acceptor  -> CHALLENGE(nonce_a)
 *   connector -> AUTH(nonce_c, mac("c", nonce_a, nonce_c))
 *   acceptor  -> AUTH_OK(mac("a", nonce_c, nonce_a))      (or REFUSE(AUTH) and close)
 * mac = SipHash-2-4 keyed with the job key, derived from NCCLBPF_AGREE_SECRET. A peer that
 * does not know the secret cannot answer a fresh challenge, and cannot replay one. Without
 * a secret the key is public: then only processes of this user on this host are accepted
 * (the peer socket's owner is checked through the kernel, agree_peer_uid), and a rendezvous
 * address that is not on this host is refused at startup (agree_core.c). */
#ifndef NCCLBPF_AGREE_AUTH_H
#define NCCLBPF_AGREE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AGREE_NONCE_BYTES 16

struct agree_key {
	uint64_t k0, k1;
};

/* SipHash-2-4 (Aumasson and Bernstein, 2012) of n bytes: a keyed PRF, 64-bit output. */
uint64_t agree_siphash(const struct agree_key *k, const void *p, size_t n);

/* The job key from the secret (NULL or "" = no secret: a fixed public key). */
void agree_job_key(const char *secret, struct agree_key *out);

/* mac(role, n1, n2) of the handshake: role 'c' (connector) or 'a' (acceptor). */
uint64_t agree_auth_mac(const struct agree_key *k, char role, const uint8_t *n1,
			const uint8_t *n2);

/* n random bytes from the kernel (getrandom, else /dev/urandom): 0 or -errno. */
int agree_random(void *buf, size_t n);

/* Owner of the socket at the other end of the TCP connection fd, when that socket is on
 * this host (same network namespace): 0 and *uid, -ENOENT when it is not (another host), or
 * another negative errno when the kernel cannot say. */
int agree_peer_uid(int fd, uid_t *uid);

/* True when addr (IPv4, network order) is an address of this host (loopback included). */
bool agree_addr_is_local(uint32_t addr);

#endif
