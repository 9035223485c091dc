/* Unit tests of the agreement layer's pieces that need no second process: the wire format
 * (round trips and every malformed-frame class), the reduction operations, agreed-map
 * validation and the per-thread binding (published view read-only, contribution writable,
 * unbound = the map's own array), and the tuner path without a group (version 0: zeros). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agree/agree.h"
#include "agree/agree_internal.h"
#include "agree/agree_wire.h"
#include "maps/map.h"
#include "ncclbpf/policy.h"
#include "test_util.h"

static void test_wire_roundtrip(void)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_CONTRIB, 3, 0x1234, 0xfeed);
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
	CHECK_EQ_U64(m.h.token, 0xfeed);
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

	/* a HELLO with more streams than the limit */
	f = agree_wire_begin(&b, AGREE_MSG_HELLO, 1, 1, 1);
	agree_buf_u32(&b, 4);
	agree_buf_u32(&b, AGREE_MAX_STREAMS + 1);
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
	/* LEADER / REGISTER ports */
	f = agree_wire_begin(&b, AGREE_MSG_REGISTER, 0, 1, 1);
	agree_buf_u32(&b, 70000);
	agree_wire_end(&b, f);
	CHECK(agree_wire_parse(b.p, b.len, &m, err, sizeof(err)) == -EBADMSG);
	agree_buf_free(&b);
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

int main(void)
{
	test_wire_roundtrip();
	test_reduce();
	test_map_binding();
	test_tuner_without_group();
	TEST_DONE();
}
