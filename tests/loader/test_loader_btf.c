/* BTF parser unit test on a hand-built type section holding every kind (INT .. ENUM64):
 * sizes resolved through modifiers and typedefs, loops detected, malformed headers and
 * references rejected with specific messages. Uses the loader's internal API. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "loader/loader_internal.h"
#include "test_util.h"

static uint8_t types[2048], strs[256], blob[4096];
static size_t tlen, slen;

static uint32_t str(const char *s)
{
	uint32_t off = (uint32_t)slen;
	memcpy(strs + slen, s, strlen(s) + 1);
	slen += strlen(s) + 1;
	return off;
}

static void u32(uint32_t v)
{
	memcpy(types + tlen, &v, 4);
	tlen += 4;
}

static void hdr(uint32_t name, uint32_t kind, uint32_t vlen, uint32_t size_or_type)
{
	u32(name);
	u32(kind << 24 | vlen);
	u32(size_or_type);
}

/* header (24 bytes) + types + strings */
static size_t make_blob(size_t type_len, size_t str_len)
{
	uint32_t h[6] = {0x0001eB9F, 24, 0, (uint32_t)type_len, (uint32_t)type_len,
			 (uint32_t)str_len};
	memcpy(blob, h, 24);
	memcpy(blob + 24, types, type_len);
	memcpy(blob + 24 + type_len, strs, str_len);
	return 24 + type_len + str_len;
}

static void build(void)
{
	slen = 1; /* strs[0] = "" */
	tlen = 0;
	hdr(str("int"), LD_BTF_KIND_INT, 0, 4); u32(32);                 /* 1 */
	hdr(0, LD_BTF_KIND_PTR, 0, 1);                                    /* 2 */
	hdr(0, LD_BTF_KIND_ARRAY, 0, 0); u32(1); u32(1); u32(10);         /* 3 */
	hdr(str("s"), LD_BTF_KIND_STRUCT, 2, 16);                         /* 4 */
	u32(str("a")); u32(1); u32(0);
	u32(str("b")); u32(2); u32(64);
	hdr(str("u"), LD_BTF_KIND_UNION, 2, 8);                           /* 5 */
	u32(str("x")); u32(1); u32(0);
	u32(str("y")); u32(2); u32(0);
	hdr(str("e"), LD_BTF_KIND_ENUM, 2, 4);                            /* 6 */
	u32(str("E0")); u32(0); u32(str("E1")); u32(1);
	hdr(str("fw"), LD_BTF_KIND_FWD, 0, 0);                            /* 7 */
	hdr(str("td"), LD_BTF_KIND_TYPEDEF, 0, 4);                        /* 8 */
	hdr(0, LD_BTF_KIND_VOLATILE, 0, 8);                               /* 9 */
	hdr(0, LD_BTF_KIND_CONST, 0, 9);                                  /* 10 */
	hdr(0, LD_BTF_KIND_RESTRICT, 0, 2);                               /* 11 */
	hdr(0, LD_BTF_KIND_FUNC_PROTO, 1, 1); u32(str("p")); u32(1);      /* 12 */
	hdr(str("f"), LD_BTF_KIND_FUNC, 0, 12);                           /* 13 */
	hdr(str("v"), LD_BTF_KIND_VAR, 0, 3); u32(1);                     /* 14 */
	hdr(str(".data"), LD_BTF_KIND_DATASEC, 1, 40); u32(14); u32(0); u32(40); /* 15 */
	hdr(str("float"), LD_BTF_KIND_FLOAT, 0, 4);                       /* 16 */
	hdr(str("tag"), LD_BTF_KIND_DECL_TAG, 0, 4); u32(0xffffffff);     /* 17 */
	hdr(str("tt"), LD_BTF_KIND_TYPE_TAG, 0, 2);                       /* 18 */
	hdr(str("e64"), LD_BTF_KIND_ENUM64, 1, 8); u32(str("BIG")); u32(1); u32(2); /* 19 */
	hdr(str("loop_a"), LD_BTF_KIND_TYPEDEF, 0, 21);                   /* 20 */
	hdr(0, LD_BTF_KIND_CONST, 0, 20);                                 /* 21 */
	hdr(0, LD_BTF_KIND_ARRAY, 0, 0); u32(3); u32(1); u32(0x10000000); /* 22: too large */
}

static int parse(size_t n, char *err, size_t errlen, struct ld_ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->err = err;
	c->errlen = errlen;
	err[0] = '\0';
	return ld_btf_parse(c, blob, n);
}

static void test_kinds(void)
{
	char err[256];
	struct ld_ctx c;
	build();
	size_t n = make_blob(tlen, slen);
	int ret = parse(n, err, sizeof(err), &c);
	if (ret)
		fprintf(stderr, "%s\n", err);
	CHECK(ret == 0);
	CHECK_EQ_U64(c.btf.nr_types, 23);
	static const int64_t want[] = {-1, 4, 8, 40, 16, 8, 4, -1, 16, 16, 16, 8, -1, -1,
				       40, 40, 4, -1, 8, 8, -1, -1, -1};
	for (uint32_t id = 1; id < 23; id++) {
		uint64_t size = 0;
		int r = ld_btf_resolve_size(&c, id, &size);
		if (want[id] < 0) {
			CHECK(r < 0);
		} else {
			CHECK(r == 0);
			CHECK_EQ_U64(size, (uint64_t)want[id]);
		}
	}
	uint64_t size;
	CHECK(ld_btf_resolve_size(&c, 20, &size) == -ELOOP);
	CHECK_STR_CONTAINS(err, "type loop");
	CHECK(ld_btf_resolve_size(&c, 22, &size) == -EOVERFLOW);
	uint32_t id;
	CHECK(ld_btf_skip_mods(&c, 10, &id) == 0 && id == 4);
	CHECK(ld_btf_skip_mods(&c, 18, &id) == 0 && id == 2);
	CHECK(ld_btf_skip_mods(&c, 21, &id) == -ELOOP);
	CHECK_EQ_U64(ld_btf_find_datasec(&c.btf, ".data"), 15);
	CHECK_EQ_U64(ld_btf_find_datasec(&c.btf, ".bss"), 0);
	struct ld_btf_member m;
	CHECK(ld_btf_member(&c.btf, ld_btf_type(&c.btf, 4), 1, &m) == 0);
	CHECK(strcmp(m.name, "b") == 0 && m.type == 2 && m.offset == 64);
	CHECK(ld_btf_member(&c.btf, ld_btf_type(&c.btf, 4), 2, &m) < 0);
	CHECK(ld_btf_type(&c.btf, 0) == NULL && ld_btf_type(&c.btf, 23) == NULL);
	CHECK(strcmp(ld_btf_str(&c.btf, ld_btf_type(&c.btf, 13)->name_off), "f") == 0);
	CHECK(ld_btf_str(&c.btf, (uint32_t)slen) == NULL);
	ld_btf_free(&c.btf);
}

static void expect_fail(size_t n, const char *what)
{
	char err[256];
	struct ld_ctx c;
	CHECK(parse(n, err, sizeof(err), &c) < 0);
	CHECK_STR_CONTAINS(err, what);
	ld_btf_free(&c.btf);
}

static void test_malformed(void)
{
	build();
	size_t n = make_blob(tlen, slen);
	expect_fail(20, "header needs 24");
	expect_fail(make_blob(tlen - 4, slen), "needs 4 bytes past the end"); /* last ARRAY cut */
	expect_fail(make_blob(tlen - 16, slen), "type 22 header truncated");
	blob[0] = 0x9F, blob[1] = 0xEC;
	expect_fail(n, "bad magic");
	make_blob(tlen, slen);
	blob[2] = 2;
	expect_fail(n, "unsupported version 2");
	make_blob(tlen, slen);
	uint32_t big = 0x7fffffff;
	memcpy(blob + 20, &big, 4); /* str_len */
	expect_fail(n, "string section");
	/* strings must end with NUL */
	n = make_blob(tlen, slen);
	blob[n - 1] = 'x';
	expect_fail(n, "must start and end with NUL");
	/* PTR (type 2) referencing type 500 */
	build();
	uint32_t v = 500;
	memcpy(types + 12 + 4 + 8, &v, 4);
	expect_fail(make_blob(tlen, slen), "referenced type id 500 out of range");
	/* struct member name offset outside the strings */
	build();
	v = 4000;
	memcpy(types + 16 + 12 + 24 + 12, &v, 4);
	expect_fail(make_blob(tlen, slen), "member name offset 4000 out of range");
	/* unknown kind 31 */
	build();
	v = 31u << 24;
	memcpy(types + 4, &v, 4);
	expect_fail(make_blob(tlen, slen), "unknown kind 31");
}

int main(void)
{
	test_kinds();
	test_malformed();
	TEST_DONE();
}
