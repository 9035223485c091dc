/* Unit tests of the agreement layer's pieces that need no second process: the wire format
 * (round trips and every malformed-frame class), SipHash-2-4 against the published test
 * vectors and the handshake MACs, the reduction operations, agreed-map validation and the
 * per-thread binding (published view read-only, contribution writable, unbound = the map's
 * own array), and the tuner path without a group (version 0: zeros). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agree/agree.h"
#include "agree/agree_internal.h"
#include "agree/agree_group.h"
#include "agree/agree_auth.h"
#include "agree/agree_wire.h"
#include "maps/map.h"
#include "ncclbpf/policy.h"
#include "test_util.h"

static void test_wire_roundtrip(void)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_CONTRIB, 3, 0x1234);
	agree_buf_u32(&b, 1);      /* stream */
	agree_buf_u64(&b, 41);     /* epoch */
	agree_buf_u32(&b, 16);     /* value size */
	size_t count_off = b.len;
	agree_buf_u32(&b, 0);
	uint8_t cur[4 * 16] = {0}, prev[4 * 16] = {0};
	cur[16] = 7;               /* entry 1 differs */
	cur[63] = 9;               /* entry 3 differs */
	uint32_t n = agree_wire_put_delta(&b, cur, prev, 4, 16, 16);
	CHECK_EQ_U64(n, 2);
	memcpy(b.p + count_off, &n, 4);
	agree_wire_end(&b, f);
	struct agree_msg m;
	char err[160];
	/* every strict prefix needs more bytes */
	for (size_t len = 0; len < b.len; len++)
		CHECK(agree_wire_parse(b.p, len, &m, err, sizeof(err)) == 0);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == (long)b.len);
	CHECK_EQ_U64(m.h.type, AGREE_MSG_CONTRIB);
	CHECK_EQ_U64(m.h.rank, 3);
	CHECK_EQ_U64(m.h.comm_id, 0x1234);
	CHECK_EQ_U64(m.h.reserved, 0);
	CHECK_EQ_U64(m.stream, 1);
	CHECK_EQ_U64(m.number, 41);
	CHECK_EQ_U64(m.n_entries, 2);
	CHECK(agree_wire_check_entries(&m, 4, 16) == 0);
	CHECK(agree_wire_check_entries(&m, 3, 16) == -EBADMSG); /* index 3 beyond 3 entries */
	CHECK(agree_wire_check_entries(&m, 4, 8) == -EBADMSG);  /* value size mismatch */
	uint8_t view[4 * 16] = {0};
	agree_wire_apply(view, 16, &m);
	CHECK(memcmp(view, cur, sizeof(cur)) == 0);

	/* malformed: magic, version, type, oversize, inconsistent counts */
	uint8_t bad[256];
	memcpy(bad, b.p, b.len);
	bad[0] ^= 1;
	CHECK(agree_wire_parse(bad, b.len, &m, err, sizeof(err)) == -EPROTO);
	memcpy(bad, b.p, b.len);
	bad[4] = 9;
	CHECK(agree_wire_parse(bad, b.len, &m, err, sizeof(err)) == -EPROTO);
	memcpy(bad, b.p, b.len);
	bad[6] = 0x7f;
	CHECK(agree_wire_parse(bad, b.len, &m, err, sizeof(err)) == -EPROTO);
	memcpy(bad, b.p, b.len);
	bad[11] = 0x7f; /* length ~2 GiB */
	CHECK(agree_wire_parse(bad, b.len, &m, err, sizeof(err)) == -EMSGSIZE);
	memcpy(bad, b.p, b.len);
	uint32_t three = 3;
	memcpy(bad + AGREE_HDR_SIZE + 16, &three, 4); /* 3 entries announced, 2 present */
	CHECK(agree_wire_parse(bad, b.len, &m, err, sizeof(err)) == -EBADMSG);
	CHECK_STR_CONTAINS(err, "entries");
	memcpy(bad, b.p, b.len);
	uint32_t vs = 12;
	memcpy(bad + AGREE_HDR_SIZE + 12, &vs, 4); /* not a multiple of 8 */
	CHECK(agree_wire_parse(bad, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);

	/* a HELLO round trip: streams and the configuration fingerprint */
	struct agree_stream_sig sig[2] = {{0x1111, 16, 321, 7}, {0x2222, 8, 4, 9}};
	struct agree_fingerprint fp = {0xa1, 0xb2, 0xc3, 5000, 3, AGREE_FP_SYM_COMPETE};
	f = agree_wire_begin(&b, AGREE_MSG_HELLO, 2, 0x99);
	agree_wire_put_hello(&b, 6, AGREE_HELLO_REJOIN, 2, sig, &fp);
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == (long)b.len);
	CHECK(m.n_ranks == 6 && m.flags == AGREE_HELLO_REJOIN && m.n_streams == 2);
	for (int i = 0; i < 2; i++) /* field by field: the structs have padding */
		CHECK(m.streams[i].name_hash == sig[i].name_hash &&
		      m.streams[i].value_size == sig[i].value_size &&
		      m.streams[i].max_entries == sig[i].max_entries &&
		      m.streams[i].map_flags == sig[i].map_flags);
	CHECK(m.fp.lib == fp.lib && m.fp.tuner == fp.tuner && m.fp.chunk == fp.chunk &&
	      m.fp.wait_ms == fp.wait_ms && m.fp.fanout == fp.fanout && m.fp.flags == fp.flags);
	for (size_t len = b.len - 1; len > AGREE_HDR_SIZE; len -= 7) { /* shorter: inconsistent */
		memcpy(b.p + 8, (uint32_t[]){(uint32_t)(len - AGREE_HDR_SIZE)}, 4);
		CHECK(agree_wire_parse(b.p, len, &m, err, sizeof(err)) < 0);
	}
	agree_buf_free(&b);
	/* a HELLO with more streams than the limit */
	f = agree_wire_begin(&b, AGREE_MSG_HELLO, 1, 1);
	agree_buf_u32(&b, 4);
	agree_buf_u32(&b, 0);
	agree_buf_u32(&b, AGREE_MAX_STREAMS + 1);
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
	/* LEADER / REGISTER ports */
	f = agree_wire_begin(&b, AGREE_MSG_REGISTER, 0, 1);
	agree_buf_u32(&b, 70000);
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
	/* FALLBACK: seq alone (flags 0), seq + flags, or seq + flags + reason */
	for (int form = 0; form < 3; form++) {
		f = agree_wire_begin(&b, AGREE_MSG_FALLBACK, 2, 1);
		if (form == 2) {
			agree_wire_put_fallback(&b, 4096, AGREE_FALLBACK_REQUEST, AGREE_WHY_CONFIG, 3,
						AGREE_FP_TUNER);
		} else {
			agree_buf_u64(&b, 4096);
			if (form)
				agree_buf_u32(&b, AGREE_FALLBACK_ORDERLY);
		}
		agree_wire_end(&b, f);
		CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == (long)b.len);
		CHECK(m.seq == 4096);
		CHECK(m.reason == (form == 1 ? AGREE_FALLBACK_ORDERLY :
				   form == 2 ? AGREE_FALLBACK_REQUEST : 0u));
		CHECK(form < 2 || (m.why == AGREE_WHY_CONFIG && m.why_rank == 3 &&
				   m.why_detail == AGREE_FP_TUNER));
		agree_buf_free(&b);
	}
	f = agree_wire_begin(&b, AGREE_MSG_FALLBACK, 2, 1); /* an unknown reason */
	agree_wire_put_fallback(&b, 1, 0, AGREE_WHY_MAX, 0, 0);
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
	/* WELCOME: seq, optionally flags (the join barrier passed) */
	f = agree_wire_begin(&b, AGREE_MSG_WELCOME, 0, 1);
	agree_buf_u64(&b, 4096);
	agree_buf_u32(&b, AGREE_WELCOME_READY);
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == (long)b.len);
	CHECK(m.seq == 4096 && m.flags == AGREE_WELCOME_READY);
	agree_buf_u32(&b, 0);
	memcpy(b.p + 8, (uint32_t[]){16}, 4);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
	/* the handshake frames: exact sizes */
	uint8_t nonce[16] = {1, 2, 3};
	f = agree_wire_begin(&b, AGREE_MSG_AUTH, 0, 0);
	agree_buf_put(&b, nonce, 16);
	agree_buf_u64(&b, 0x1234);
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == (long)b.len);
	CHECK(m.h.type == AGREE_MSG_AUTH && m.mac == 0x1234 && !memcmp(m.nonce, nonce, 16));
	memcpy(b.p + 8, (uint32_t[]){16}, 4); /* a nonce without its mac */
	CHECK(agree_wire_parse(b.p, b.len - 8, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
	/* REFUSE: reason, optionally the differing field and the refuser's value */
	f = agree_wire_begin(&b, AGREE_MSG_REFUSE, 0, 1);
	agree_buf_u32(&b, AGREE_REFUSE_CONFIG);
	agree_buf_u32(&b, AGREE_FP_TUNER);
	agree_buf_u64(&b, 0xfeedface);
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == (long)b.len);
	CHECK(m.reason == AGREE_REFUSE_CONFIG && m.detail == AGREE_FP_TUNER && m.value == 0xfeedface);
	agree_buf_free(&b);
}

/* SipHash-2-4: the test vectors of the paper's appendix (key 00..0f, messages 00..n-1),
 * and what the handshake relies on: different secrets give different keys, the MAC binds
 * the role and both nonces. */
static void test_siphash(void)
{
	struct agree_key k = {0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull};
	uint8_t msg[64];
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	CHECK_EQ_U64(agree_siphash(&k, msg, 0), 0x726fdb47dd0e0e31ull);
	CHECK_EQ_U64(agree_siphash(&k, msg, 1), 0x74f839c593dc67fdull);
	CHECK_EQ_U64(agree_siphash(&k, msg, 8), 0x93f5f5799a932462ull);
	CHECK_EQ_U64(agree_siphash(&k, msg, 15), 0xa129ca6149be45e5ull);
	CHECK_EQ_U64(agree_siphash(&k, msg, 63), 0x958a324ceb064572ull);
	struct agree_key a, b, none;
	agree_job_key("secret-a", &a);
	agree_job_key("secret-b", &b);
	agree_job_key(NULL, &none);
	struct agree_key empty;
	agree_job_key("", &empty);
	CHECK(a.k0 != b.k0 && a.k1 != b.k1 && a.k0 != none.k0);
	CHECK(empty.k0 == none.k0 && empty.k1 == none.k1);
	char longsecret[1200];
	memset(longsecret, 'x', sizeof(longsecret) - 1);
	longsecret[sizeof(longsecret) - 1] = '\0';
	struct agree_key l1, l2;
	agree_job_key(longsecret, &l1);
	longsecret[1100] = 'y'; /* beyond the first chunk */
	agree_job_key(longsecret, &l2);
	CHECK(l1.k0 != l2.k0);
	uint8_t n1[16] = {1}, n2[16] = {2};
	uint64_t mc = agree_auth_mac(&a, 'c', n1, n2);
	CHECK(mc != agree_auth_mac(&a, 'a', n1, n2));
	CHECK(mc != agree_auth_mac(&a, 'c', n2, n1));
	CHECK(mc != agree_auth_mac(&b, 'c', n1, n2));
	CHECK(mc == agree_auth_mac(&a, 'c', n1, n2));
	uint8_t r1[16], r2[16];
	CHECK(agree_random(r1, 16) == 0 && agree_random(r2, 16) == 0 && memcmp(r1, r2, 16));
}

static void to_sparse(struct agree_sparse *v, const uint64_t *dense, uint32_t entries)
{
	for (uint32_t i = 0; i < entries; i++)
		CHECK(agree_sparse_set(v, 16, i, (const uint8_t *)(dense + 2 * i)) == 0);
}

static void test_reduce(void)
{
	struct nb_map_agreed_desc d = {.value_size = 16, .stride = 16, .max_entries = 2};
	uint64_t self[4] = {5, 1, 0, 0};  /* the leader: entry 0 = {5, 1}, entry 1 absent */
	uint64_t r1[4] = {7, 0, 2, 2};
	uint64_t r2[4] = {0, 0, 10, 4};   /* entry 0 absent */
	struct agree_sparse views[2] = {{0}};
	to_sparse(&views[0], r1, 2);
	to_sparse(&views[1], r2, 2);
	CHECK_EQ_U64(views[0].n, 2);
	CHECK_EQ_U64(views[1].n, 1);
	uint64_t out[4];
	uint32_t cnt[2];
	d.op = NCCLBPF_AGREE_MAX;
	agree_reduce(&d, (uint8_t *)out, cnt, (uint8_t *)self, views, 2);
	CHECK(out[0] == 7 && out[1] == 1 && out[2] == 10 && out[3] == 4);
	d.op = NCCLBPF_AGREE_MIN; /* absent entries take no part */
	agree_reduce(&d, (uint8_t *)out, cnt, (uint8_t *)self, views, 2);
	CHECK(out[0] == 5 && out[1] == 0 && out[2] == 2 && out[3] == 2);
	d.op = NCCLBPF_AGREE_SUM;
	agree_reduce(&d, (uint8_t *)out, cnt, (uint8_t *)self, views, 2);
	CHECK(out[0] == 12 && out[1] == 1 && out[2] == 12 && out[3] == 6);
	d.op = NCCLBPF_AGREE_MEAN;
	agree_reduce(&d, (uint8_t *)out, cnt, (uint8_t *)self, views, 2);
	CHECK(out[0] == 6 && out[1] == 0 && out[2] == 6 && out[3] == 3);
	d.op = NCCLBPF_AGREE_LEADER;
	agree_reduce(&d, (uint8_t *)out, cnt, (uint8_t *)self, views, 2);
	CHECK(out[0] == 5 && out[1] == 1 && out[2] == 0 && out[3] == 0);
	/* an entry set back to zero stops being contributed; updates keep the order */
	uint64_t zero[2] = {0, 0}, big[2] = {100, 100};
	CHECK(agree_sparse_set(&views[0], 16, 0, (const uint8_t *)zero) == 0);
	CHECK_EQ_U64(views[0].n, 1);
	CHECK(agree_sparse_set(&views[0], 16, 1, (const uint8_t *)big) == 0);
	CHECK(agree_sparse_set(&views[0], 16, 0, (const uint8_t *)big) == 0);
	CHECK(views[0].n == 2 && views[0].idx[0] == 0 && views[0].idx[1] == 1);
	d.op = NCCLBPF_AGREE_MAX;
	agree_reduce(&d, (uint8_t *)out, cnt, NULL, views, 2);
	CHECK(out[0] == 100 && out[2] == 100);
	agree_sparse_free(&views[0]);
	agree_sparse_free(&views[1]);
}

static void test_map_binding(void)
{
	char err[256];
	struct nb_map *m = NULL;
	struct nb_map_spec s = {.name = "ag", .type = NB_MAP_TYPE_HASH, .key_size = 4,
				.value_size = 8, .max_entries = 4,
				.map_flags = NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 3)};
	CHECK(map_create(&s, &m, err, sizeof(err)) == -EINVAL); /* arrays only */
	CHECK_STR_CONTAINS(err, "ARRAY");
	s.type = NB_MAP_TYPE_ARRAY;
	s.value_size = 12;
	CHECK(map_create(&s, &m, err, sizeof(err)) == -EINVAL); /* __u64 words */
	s.value_size = 8;
	s.map_flags = NB_MAP_F_AGREED | (7u << NCCLBPF_AGREE_OP_SHIFT);
	CHECK(map_create(&s, &m, err, sizeof(err)) == -EINVAL); /* unknown op */
	s.map_flags = 1u << 26; /* op bits without the flag */
	CHECK(map_create(&s, &m, err, sizeof(err)) == -EINVAL);
	s.map_flags = NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 3);
	CHECK(map_create(&s, &m, err, sizeof(err)) == 0);
	if (!m)
		return;
	int slot = map_agreed_slot(m);
	CHECK(slot >= 0);
	struct nb_map_agreed_desc d;
	CHECK(map_agreed_desc((uint32_t)slot, &d));
	CHECK_EQ_U64(d.epoch, 8);
	CHECK_EQ_U64(d.op, NCCLBPF_AGREE_MAX);
	CHECK(map_array_base(m) == NULL); /* never inlined by the JIT */

	uint32_t k = 1;
	uint64_t v = 42, *p;
	/* unbound: the map's own array */
	CHECK(map_update(m, &k, &v, NB_ANY) == 0);
	p = map_lookup(m, &k);
	CHECK(p && *p == 42);
	/* READ binding without a version: the all-zero view, updates refused */
	static struct nb_map_binding rb = {.mode = NB_BIND_READ};
	map_agreed_bind(&rb);
	p = map_lookup(m, &k);
	CHECK(p && *p == 0);
	CHECK(map_update(m, &k, &v, NB_ANY) == -EPERM);
	/* READ binding to a published version */
	static uint64_t published[4] = {1, 2, 3, 4};
	rb.base[slot] = (uint8_t *)published;
	p = map_lookup(m, &k);
	CHECK(p && *p == 2);
	k = 4;
	CHECK(map_lookup(m, &k) == NULL);
	/* WRITE binding: the contribution */
	static uint64_t contrib[4];
	static struct nb_map_binding wb = {.mode = NB_BIND_WRITE};
	wb.base[slot] = (uint8_t *)contrib;
	map_agreed_bind(&wb);
	k = 2;
	v = 99;
	CHECK(map_update(m, &k, &v, NB_ANY) == 0);
	CHECK(contrib[2] == 99);
	map_agreed_bind(NULL);
	map_free(m);
	CHECK(!map_agreed_desc((uint32_t)slot, &d));
}

static void test_tuner_without_group(void)
{
	/* no agreed maps, no rank: never waits, never falls back, reads zeros */
	unsetenv("NCCLBPF_AGREE");
	struct agree_comm *ac = agree_comm_tuner_open(0x77, 4);
	CHECK(ac != NULL);
	for (uint64_t s = 0; s < 1000; s++)
		CHECK(agree_tuner_begin(ac, s) == AGREE_RUN);
	agree_tuner_end();
	CHECK(agree_tuner_begin(NULL, 5) == AGREE_RUN);
	agree_tuner_end();
	agree_comm_tuner_close(ac);
	struct agree_stats st;
	agree_get_stats(&st);
	CHECK_EQ_U64(st.waits, 0);
	CHECK_EQ_U64(st.fallbacks, 0);
	/* regression: closed communicators free their registry slot (there are 256), also
	 * without a service thread and for profiler-only communicators */
	for (uint64_t i = 0; i < 600; i++) {
		struct agree_comm *c = agree_comm_tuner_open(0x1000 + i, 2);
		CHECK(c != NULL);
		agree_comm_profiler_open(0x1000 + i, 1, 2);
		agree_comm_tuner_close(c);
		agree_comm_profiler_close(0x1000 + i);
		agree_comm_profiler_open(0x9000 + i, 0, 2);
		agree_comm_profiler_close(0x9000 + i);
	}
}

/* Regression (stress_agree, eighth session): the service thread closes a version's gate
 * (AGREE_GATE_FALLBACK) before it stores the fallback point F. The tuner that saw the gate
 * at F fell back there, and its next call, at F + 1, read no fallback point yet and ran the
 * policy (every rank fell back at 448, one used the policy at 449). Here the window is held
 * open: the gate closed, the fallback point never stored. */
static void test_tuner_fallback_permanent(void)
{
	unsetenv("NCCLBPF_AGREE");
	struct agree_comm *ac = agree_comm_tuner_open(0x78, 4);
	CHECK(ac != NULL);
	if (!ac)
		return;
	CHECK(agree_tuner_begin(ac, 0) == AGREE_RUN); /* starts it: no group, no streams */
	agree_tuner_end();
	/* as a group with one agreed stream of epoch 8 would be after joining: version 0 only,
	 * version 1 (needed from collective 16) failed - its gate closed */
	ac->grouped = true;
	atomic_store(&ac->ready, AGREE_READY_YES);
	ac->n_streams = 1;
	ac->streams[0].k = 8;
	ac->streams[0].active = NULL;
	atomic_store(&ac->streams[0].gate, AGREE_GATE_FALLBACK);
	ac->next_event = 16;
	CHECK(agree_tuner_begin(ac, 15) == AGREE_RUN);
	agree_tuner_end();
	CHECK(agree_tuner_begin(ac, 16) == AGREE_FALLBACK);
	agree_tuner_end();
	for (uint64_t s = 17; s < 40; s++) {
		CHECK(agree_tuner_begin(ac, s) == AGREE_FALLBACK);
		agree_tuner_end();
	}
	ac->grouped = false;
	ac->n_streams = 0;
	agree_comm_tuner_close(ac);
}

/* Regression (issue 23, stress_agree with the leader stopped, ninth session): a fallback
 * point F closed every version the communicator had not committed yet, also version v with
 * S_v < F. The resumed leader's tuner, waiting for v at S_v, read the closed gate as "fall
 * back now" and fell back at S_v, while the other ranks activated v there (F = S_{v+1} on
 * every rank) - and v could no longer be committed here. A version activating before F
 * must stay decidable by the commit rule; only versions activating at or after F close. */
static void test_fallback_closes_from_f(void)
{
	unsetenv("NCCLBPF_AGREE");
	struct agree_comm *ac = agree_comm_tuner_open(0x79, 4);
	CHECK(ac != NULL);
	if (!ac)
		return;
	CHECK(agree_tuner_begin(ac, 0) == AGREE_RUN); /* starts it: no group, no streams */
	agree_tuner_end();
	/* a joined group, one stream of epoch 8: S_v = 8 (v + 1); nothing committed yet */
	struct agree_stream *s = &ac->streams[0];
	ac->grouped = true;
	atomic_store(&ac->ready, AGREE_READY_YES);
	ac->n_streams = 1;
	s->k = 8;
	s->bytes = 0;
	s->active = NULL;
	s->last = NULL;
	atomic_store(&s->first, NULL);
	atomic_store(&s->gate, 0);
	ac->next_event = 8;
	for (uint64_t q = 0; q < 16; q++) { /* versions 0 (zeros), then S_1 = 16 */
		CHECK(agree_tuner_begin(ac, q) == AGREE_RUN);
		agree_tuner_end();
	}
	/* F = S_2 = 24: version 1 (S_1 = 16 < F) stays committable, version 2 does not */
	CHECK(agree_fall_at(ac, 24, AGREE_WHY_TIMEOUT, 1, 2, "test: F = S_2"));
	CHECK_EQ_U64(atomic_load(&ac->fallback_seq), 24);
	CHECK((atomic_load(&s->gate) & AGREE_GATE_FALLBACK) == 0);
	struct agree_version *v1 = agree_version_new(s, 1, NULL);
	CHECK(v1 != NULL);
	CHECK(v1 && agree_commit_version(ac, s, v1));
	CHECK_EQ_U64(atomic_load(&s->gate), 1);
	/* the tuner runs version 1 from S_1 to F - 1 and falls back from F on */
	for (uint64_t q = 16; q < 24; q++) {
		CHECK(agree_tuner_begin(ac, q) == AGREE_RUN);
		agree_tuner_end();
	}
	CHECK_EQ_U64(atomic_load(&s->active_number), 1);
	struct agree_version *v2 = agree_version_new(s, 2, NULL);
	CHECK(v2 != NULL);
	CHECK(!agree_commit_version(ac, s, v2)); /* S_2 = F: closed (freed there) */
	CHECK_EQ_U64(atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK, 1);
	for (uint64_t q = 24; q < 40; q++) {
		CHECK(agree_tuner_begin(ac, q) == AGREE_FALLBACK);
		agree_tuner_end();
	}
	/* a second, earlier fallback at S_2 itself: nothing more to close, version 1 stays */
	CHECK(!agree_fall_at(ac, 16, AGREE_WHY_TIMEOUT, 1, 1, "test: everything 16 needs"));
	for (struct agree_version *v = atomic_load(&s->first), *n; v; v = n) {
		n = atomic_load(&v->next);
		free(v);
	}
	atomic_store(&s->first, NULL);
	s->last = s->active = NULL;
	ac->grouped = false;
	ac->n_streams = 0;
	agree_comm_tuner_close(ac);
}

/* The tree's shape: every rank but 0 has exactly one parent, parents are the leader or a
 * relay (r % F == 0), relays' children are the rest of their block, and the leader's
 * direct children stay ~2 sqrt(n) for the default fan-out. */
static void test_tree_shape(void)
{
	CHECK_EQ_U64(agree_tree_fanout_for(64, NULL), 0);      /* flat up to 64 ranks */
	CHECK_EQ_U64(agree_tree_fanout_for(65, NULL), 9);      /* ceil(sqrt(65)) */
	CHECK_EQ_U64(agree_tree_fanout_for(10000, NULL), 100);
	CHECK_EQ_U64(agree_tree_fanout_for(10000, "flat"), 0);
	CHECK_EQ_U64(agree_tree_fanout_for(6, "3"), 3);         /* forced, small group */
	CHECK_EQ_U64(agree_tree_fanout_for(6, "6"), 0);         /* F >= n: flat */
	CHECK_EQ_U64(agree_tree_fanout_for(100, "1"), 10);      /* malformed: the default */
	CHECK_EQ_U64(agree_tree_fanout_for(100, "x"), 10);
	/* 6 ranks, F = 3: 0 <- {1, 2, 3}, 3 <- {4, 5} */
	CHECK_EQ_U64(agree_tree_parent(0, 3), UINT32_MAX);
	CHECK_EQ_U64(agree_tree_parent(1, 3), 0);
	CHECK_EQ_U64(agree_tree_parent(3, 3), 0);
	CHECK_EQ_U64(agree_tree_parent(4, 3), 3);
	CHECK_EQ_U64(agree_tree_parent(5, 3), 3);
	CHECK(agree_tree_is_relay(3, 3, 6) && !agree_tree_is_relay(4, 3, 6));
	CHECK(!agree_tree_is_relay(6, 3, 7)); /* a last block of one rank: a leaf */
	CHECK_EQ_U64(agree_tree_subtree(3, 3, 5), 2);
	CHECK_EQ_U64(agree_tree_parent(7, 0), 0); /* flat */
	static const uint32_t ns[] = {65, 100, 512, 2048, 10000};
	for (size_t t = 0; t < sizeof(ns) / sizeof(ns[0]); t++) {
		uint32_t n = ns[t], f = agree_tree_fanout_for(n, NULL), direct = 0, covered = 1;
		for (uint32_t r = 1; r < n; r++) {
			uint32_t p = agree_tree_parent(r, f);
			CHECK(p < r && (p == 0 || agree_tree_is_relay(p, f, n)));
			direct += p == 0;
			if (p == 0)
				covered += agree_tree_subtree(r, f, n);
			if (p != 0)
				CHECK(agree_tree_parent(p, f) == 0); /* two levels */
		}
		CHECK_EQ_U64(covered, n); /* the leader's children's subtrees partition the rest */
		CHECK(direct <= 2 * f);
	}
}

static uint64_t xs = 88172645463325252ull;
static uint64_t rnd(void)
{
	xs ^= xs << 13;
	xs ^= xs >> 7;
	xs ^= xs << 17;
	return xs;
}

/* Property: the tree's partial reduction gives the flat reduction's bytes, for every op,
 * random sparse contributions, random fan-outs (MEAN: sum and count travel separately). */
static void test_tree_reduce_equals_flat(void)
{
	enum { E = 9, VS = 16 };
	for (int iter = 0; iter < 200; iter++) {
		uint32_t n = 2 + (uint32_t)(rnd() % 40), f = 2 + (uint32_t)(rnd() % 7);
		struct nb_map_agreed_desc d = {.value_size = VS, .stride = VS, .max_entries = E};
		d.op = (uint32_t)(rnd() % 5);
		static const uint32_t ops[] = {NCCLBPF_AGREE_SUM, NCCLBPF_AGREE_MIN, NCCLBPF_AGREE_MAX,
					       NCCLBPF_AGREE_MEAN, NCCLBPF_AGREE_LEADER};
		d.op = ops[d.op];
		uint64_t *dense = calloc((size_t)n * E * 2, 8);
		struct agree_sparse *views = calloc(n, sizeof(*views));
		for (uint32_t r = 0; r < n; r++)
			for (uint32_t i = 0; i < E; i++)
				if (rnd() % 3 == 0) {
					dense[((size_t)r * E + i) * 2] = rnd() % 1000;
					dense[((size_t)r * E + i) * 2 + 1] = rnd();
				}
		for (uint32_t r = 1; r < n; r++)
			to_sparse(&views[r], dense + (size_t)r * E * 2, E);
		uint64_t flat[E * 2], tree[E * 2];
		uint32_t cnt[E];
		agree_reduce(&d, (uint8_t *)flat, cnt, (uint8_t *)dense, views + 1, n - 1);
		/* tree: each relay combines its block into a partial, shipped sparsely */
		size_t pb = (size_t)(VS + 8) * E;
		uint8_t *part = malloc(pb), *top = malloc(pb);
		agree_partial_reset(&d, top);
		agree_partial_add_dense(&d, top, (uint8_t *)dense);
		for (uint32_t r = 1; r < n; r++) {
			if (agree_tree_parent(r, f) != 0)
				continue;
			if (!agree_tree_is_relay(r, f, n)) {
				agree_partial_add_sparse(&d, top, &views[r], false);
				continue;
			}
			agree_partial_reset(&d, part);
			agree_partial_add_dense(&d, part, (uint8_t *)(dense + (size_t)r * E * 2));
			for (uint32_t c = r + 1; c < n && agree_tree_parent(c, f) == r; c++)
				agree_partial_add_sparse(&d, part, &views[c], false);
			struct agree_sparse pv = {0};
			for (uint32_t i = 0; i < E; i++)
				CHECK(agree_sparse_set(&pv, VS + 8, i, part + (size_t)i * (VS + 8)) == 0);
			agree_partial_add_sparse(&d, top, &pv, true);
			agree_sparse_free(&pv);
		}
		agree_partial_finish(&d, (uint8_t *)tree, top, (uint8_t *)dense);
		CHECK(memcmp(flat, tree, sizeof(flat)) == 0);
		for (uint32_t r = 0; r < n; r++)
			agree_sparse_free(&views[r]);
		free(views);
		free(dense);
		free(part);
		free(top);
	}
}

static void test_wire_tree_messages(void)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_PARTIAL, 3, 1);
	agree_buf_u32(&b, 0);   /* stream */
	agree_buf_u64(&b, 12);  /* full epochs */
	agree_buf_u32(&b, 2);   /* done */
	agree_buf_u32(&b, 24);  /* entry: 16 value + 8 count */
	agree_buf_u32(&b, 1);
	uint8_t e[28] = {5};
	agree_buf_put(&b, e, sizeof(e));
	agree_wire_end(&b, f);
	struct agree_msg m;
	char err[128];
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == (long)b.len);
	CHECK(m.h.type == AGREE_MSG_PARTIAL && m.number == 12 && m.done == 2 &&
	      m.value_size == 24 && m.n_entries == 1);
	CHECK(agree_wire_check_entries(&m, 8, 24) == 0);
	b.p[AGREE_HDR_SIZE + 16] = 8; /* entry size 8: no room for a count */
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
	f = agree_wire_begin(&b, AGREE_MSG_LOST, 3, 1);
	agree_buf_u32(&b, 5);
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == (long)b.len);
	CHECK(m.h.type == AGREE_MSG_LOST && m.lost == 5 && m.reason == 0);
	/* optional flags: the lost child said BYE (an orderly end, logged at INFO) */
	agree_buf_u32(&b, AGREE_FALLBACK_ORDERLY); /* 8 bytes of payload */
	memcpy(b.p + 8, (uint32_t[]){8}, 4);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == (long)b.len);
	CHECK(m.lost == 5 && m.reason == AGREE_FALLBACK_ORDERLY);
	agree_buf_u32(&b, 0); /* 12 bytes of payload */
	memcpy(b.p + 8, (uint32_t[]){12}, 4);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
}

/* The hub's parked LOOKUPs (a listener not registered yet): kept once per asker, bounded per
 * connection and in all, taken by the registration of that rank (or by a notice: every rank
 * of the communicator), dropped with the asking connection. An authenticated member cannot
 * grow them without bound by asking again and again. */
static void test_hub_parked_lookups(void)
{
	int fds[64];
	uint32_t ranks[64];
	CHECK(agree_hub_park(0xc0, 0, 7) == 0);
	CHECK(agree_hub_park(0xc0, 0, 7) == 0); /* asked again: still one */
	CHECK(agree_hub_park(0xc0, 3, 8) == 0);
	CHECK(agree_hub_park(0xc1, 0, 8) == 0);
	CHECK(agree_hub_unpark(0xc0, 5, fds, ranks, 64) == 0); /* nobody waits for rank 5 */
	size_t n = agree_hub_unpark(0xc0, 0, fds, ranks, 64);
	CHECK(n == 1 && fds[0] == 7 && ranks[0] == 0);
	CHECK(agree_hub_unpark(0xc0, 0, fds, ranks, 64) == 0); /* answered once */
	/* a notice (rank NONE) answers every rank of its communicator, no other */
	CHECK(agree_hub_park(0xc0, 1, 9) == 0);
	n = agree_hub_unpark(0xc0, AGREE_RANK_NONE, fds, ranks, 64);
	CHECK(n == 2);
	CHECK(agree_hub_unpark(0xc1, 0, fds, ranks, 1) == 1 && fds[0] == 8);
	/* per connection: at most 2 x AGREE_MAX_COMMS; the others ask on their timer */
	int full = 0;
	for (uint32_t i = 0; i < 4 * AGREE_MAX_COMMS; i++)
		full += agree_hub_park(0xd000 + i, 0, 11) == -ENOSPC;
	CHECK(full == 2 * AGREE_MAX_COMMS);
	CHECK(agree_hub_park(0xe000, 0, 12) == 0); /* another connection still may */
	/* a closed connection's lookups go with it */
	agree_hub_drop_conn(11);
	CHECK(agree_hub_unpark(0xd000, 0, fds, ranks, 64) == 0);
	CHECK(agree_hub_park(0xd000, 0, 11) == 0);
	agree_hub_drop_conn(11);
	agree_hub_drop_conn(12);
	/* in all: at most the directory's size, however many connections ask */
	full = 0;
	for (uint32_t i = 0; i < 10000; i++)
		full += agree_hub_park(0xf0000 + i, 0, 100 + (int)(i / 400)) == -ENOSPC;
	CHECK(full == 10000 - 8192);
	for (int fd = 100; fd < 126; fd++)
		agree_hub_drop_conn(fd);
	CHECK(agree_hub_park(0x1, 0, 5) == 0);
	agree_hub_drop_conn(5);
}

/* RECOVER (a survivor's report to the successor): round trip, counts against the length */
static void test_wire_recover(void)
{
	struct agree_buf b = {0};
	uint64_t committed[2] = {8, 3};
	size_t f = agree_wire_begin(&b, AGREE_MSG_RECOVER, 2, 7);
	agree_wire_put_recover(&b, AGREE_RECOVER_READY, 640, 2, committed);
	agree_wire_end(&b, f);
	struct agree_msg m;
	char err[128];
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == (long)b.len);
	CHECK(m.h.type == AGREE_MSG_RECOVER && m.h.rank == 2 && m.flags == AGREE_RECOVER_READY &&
	      m.seq == 640 && m.n_streams == 2 && m.committed[0] == 8 && m.committed[1] == 3);
	b.p[AGREE_HDR_SIZE + 12] = 3; /* three streams announced, two sent */
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	b.p[AGREE_HDR_SIZE + 12] = 0xff; /* beyond AGREE_MAX_STREAMS */
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
	f = agree_wire_begin(&b, AGREE_MSG_RECOVER, 2, 7);
	agree_buf_u32(&b, 0); /* 4 bytes: shorter than flags, F and the count */
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
}

int main(void)
{
	test_wire_recover();
	test_wire_roundtrip();
	test_siphash();
	test_reduce();
	test_tree_shape();
	test_tree_reduce_equals_flat();
	test_wire_tree_messages();
	test_map_binding();
	test_tuner_without_group();
	test_tuner_fallback_permanent();
	test_fallback_closes_from_f();
	test_hub_parked_lookups();
	TEST_DONE();
}
