/* Wrap mode (NCCLBPF_NET_INNER) over the fake inner plugin (fake_inner_net.c, exporting
 * v10, v11 or v12): forwarding of every call, the registration checklist (deregistration
 * before and after the comm closed, one buffer on several comms, size overflow, size 0 and
 * NULL, double deregistration, handles translated on the data path) and a failure of the
 * inner plugin at each step (error propagated, nothing leaked on either side).
 * Usage: test_net_wrap FAKE.so   (CTest sets NCCLBPF_NET_INNER=FAKE.so) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#define HNET_STATIC
#include "net_harness.h"
#include "plugin/net/net_plugin.h"
#include "test_util.h"

struct fake_counters {
	int comms, listens, mrs, reqs, ctxs;
	int misuse, mrs_at_close;
	int calls_reg, calls_dereg, calls_dmabuf, calls_devmr, calls_consumed, calls_attr,
	    calls_vdev, calls_iflush, calls_init;
	int irecv_hints;
};
static void (*fake_fail)(const char *, int);
static void (*fake_counters)(struct fake_counters *);
static struct hnet H;
static int inner_version;
#define FAIL 2 /* what the fake returns (ncclSystemError) */

static struct fake_counters fc(void)
{
	struct fake_counters c;
	fake_counters(&c);
	return c;
}

struct pair {
	void *lc, *sc, *rc;
	char handle[NB_NET_HANDLE_MAXSIZE];
};

static int pair_open(struct pair *p)
{
	memset(p, 0, sizeof(*p));
	int rc = hnet_listen(&H, 0, p->handle, &p->lc);
	if (rc)
		return rc;
	for (int i = 0; i < 100 && (!p->sc || !p->rc); i++) {
		if (!p->sc && (rc = hnet_connect_step(&H, 0, p->handle, &p->sc)))
			return rc;
		if (!p->rc && (rc = hnet_accept_step(&H, p->lc, &p->rc)))
			return rc;
	}
	return p->sc && p->rc ? 0 : -1;
}

static void pair_close(struct pair *p)
{
	if (p->sc)
		hnet_close_send(&H, p->sc);
	if (p->rc)
		hnet_close_recv(&H, p->rc);
	if (p->lc)
		hnet_close_listen(&H, p->lc);
	memset(p, 0, sizeof(*p));
}

/* nothing open on either side */
static void check_clean(const char *what)
{
	struct net_stats s;
	net_stats_get(&s);
	struct fake_counters c = fc();
	if (s.comms_open || s.reqs_live || c.comms || c.listens || c.reqs || c.misuse)
		fprintf(stderr, "after %s: wrapper comms %" PRIu64 " reqs %" PRIu64
				"; inner comms %d listens %d reqs %d misuse %d\n",
			what, s.comms_open, s.reqs_live, c.comms, c.listens, c.reqs, c.misuse);
	CHECK(s.comms_open == 0 && s.reqs_live == 0);
	CHECK(c.comms == 0 && c.listens == 0 && c.reqs == 0);
	CHECK(c.misuse == 0);
}

static void t_forwarding(void)
{
	int n = 0;
	CHECK(hnet_devices(&H, &n) == 0 && n == 1);
	struct nb_net_props_v12 p;
	CHECK(hnet_props(&H, 0, &p) == 0);
	CHECK(p.name && !strcmp(p.name, "fake0") && p.speed == 100000 && p.max_recvs == 8);
	const struct nb_net_v12 *t = H.table;
	if (H.version == 12) {
		/* rail/plane pass through a v12 inner, become -1 from older inners */
		CHECK(p.rail_id == (inner_version == 12 ? 5 : -1));
		CHECK(t->make_vdevice != NULL && t->get_device_mr != NULL && t->irecv_consumed != NULL &&
		      t->reg_mr_dma_buf != NULL);
		CHECK((t->set_net_attr != NULL) == (inner_version >= 11));
		struct nb_net_vprops_v12 vp = { 2, { 0, 0 } };
		int d = -1;
		CHECK(t->make_vdevice(&d, &vp) == 0 && d == 1 && fc().calls_vdev == 1);
		if (t->set_net_attr) {
			struct nb_net_attr a;
			memset(&a, 0xff, sizeof(a));
			CHECK(t->set_net_attr(H.ctx, &a) == 0 && fc().calls_attr == 1);
		}
	}
	struct pair pr;
	CHECK(pair_open(&pr) == 0);
	/* multi-receive through the wrapper, with registered buffers */
	char s1[100], s2[5000], r1[200], r2[6000];
	hnet_fill(s1, sizeof(s1), 1);
	hnet_fill(s2, sizeof(s2), 2);
	void *smh = NULL, *rmh = NULL;
	CHECK(hnet_reg(&H, pr.sc, s2, sizeof(s2), NB_NET_PTR_HOST, &smh) == 0 && smh);
	CHECK(hnet_reg(&H, pr.rc, r2, sizeof(r2), NB_NET_PTR_HOST, &rmh) == 0 && rmh);
	void *sreq1 = NULL, *sreq2 = NULL, *rreq = NULL;
	CHECK(hnet_isend(&H, pr.sc, s1, sizeof(s1), 4, NULL, &sreq1) == 0 && sreq1);
	CHECK(hnet_isend(&H, pr.sc, s2, sizeof(s2), 3, smh, &sreq2) == 0 && sreq2);
	void *rd[2] = { r2, r1 };
	size_t rs[2] = { sizeof(r2), sizeof(r1) };
	int rt[2] = { 3, 4 };
	void *rmhs[2] = { rmh, NULL };
	rreq = (void *)1; /* NCCL_NET_OPTIONAL_RECV_COMPLETION: forwarded as a hint */
	CHECK(hnet_irecv(&H, pr.rc, 2, rd, rs, rt, rmhs, &rreq) == 0 && rreq && rreq != (void *)1);
	CHECK(fc().irecv_hints == 1);
	int got[2] = { 0, 0 }, sz;
	CHECK(hnet_wait(&H, rreq, got, 5000) == 0 && got[0] == 5000 && got[1] == 100);
	CHECK(hnet_verify(r1, 100, 1) && hnet_verify(r2, 5000, 2));
	CHECK(hnet_wait(&H, sreq1, &sz, 5000) == 0 && hnet_wait(&H, sreq2, &sz, 5000) == 0);
	/* optional members forward the translated handles */
	void *dptr = NULL;
	if (t->get_device_mr) {
		CHECK(t->get_device_mr(pr.rc, rmh, &dptr) == 0 && dptr && dptr != rmh);
		CHECK(t->irecv_consumed(pr.rc, 1, NULL) == 0);
	}
	void *freq = NULL;
	int fsz = 10;
	void *fd = r1;
	CHECK(t->iflush(pr.rc, 1, &fd, &fsz, &rmh, &freq) == 0 && freq);
	CHECK(hnet_wait(&H, freq, NULL, 5000) == 0);
	CHECK(hnet_dereg(&H, pr.sc, smh) == 0);
	CHECK(hnet_dereg(&H, pr.rc, rmh) == 0);
	pair_close(&pr);
	check_clean("forwarding");
	CHECK(fc().mrs == 0);
}

static void t_registration(void)
{
	struct pair pr;
	CHECK(pair_open(&pr) == 0);
	static char buf[4096];
	struct fake_counters c0 = fc();

	/* deregistration before close */
	void *a = NULL;
	CHECK(hnet_reg(&H, pr.sc, buf, sizeof(buf), NB_NET_PTR_HOST, &a) == 0 && a);
	CHECK(hnet_dereg(&H, pr.sc, a) == 0);
	CHECK(fc().mrs == c0.mrs);

	/* one buffer on two comms: independent registrations */
	void *ms = NULL, *mr = NULL;
	CHECK(hnet_reg(&H, pr.sc, buf, sizeof(buf), NB_NET_PTR_HOST, &ms) == 0);
	CHECK(hnet_reg(&H, pr.rc, buf, sizeof(buf), NB_NET_PTR_HOST, &mr) == 0);
	CHECK(ms && mr && ms != mr);
	int dereg_calls = fc().calls_dereg;
	CHECK(hnet_dereg(&H, pr.sc, mr) == NB_NET_INVALID_ARGUMENT); /* wrong comm */
	CHECK(fc().calls_dereg == dereg_calls);                       /* not passed down */
	CHECK(hnet_dereg(&H, pr.sc, ms) == 0);
	/* ... and the other one survives the first's removal */
	void *rreq = NULL, *sreq = NULL;
	void *d = buf;
	size_t s = sizeof(buf);
	int tag = 1;
	char msg[64] = "still registered";
	CHECK(hnet_irecv(&H, pr.rc, 1, &d, &s, &tag, &mr, &rreq) == 0 && rreq);
	CHECK(hnet_isend(&H, pr.sc, msg, sizeof(msg), 1, NULL, &sreq) == 0);
	int got = 0;
	CHECK(hnet_wait(&H, rreq, &got, 5000) == 0 && !strcmp(buf, msg));
	CHECK(hnet_wait(&H, sreq, &got, 5000) == 0);

	/* double deregistration: refused, nothing touched */
	CHECK(hnet_dereg(&H, pr.sc, ms) == NB_NET_INVALID_ARGUMENT);

	/* size overflow: rejected before the inner plugin */
	int reg_calls = fc().calls_reg;
	void *x = (void *)1;
	CHECK(hnet_reg(&H, pr.sc, (void *)(uintptr_t)-4096, 8192, NB_NET_PTR_HOST, &x) ==
	      NB_NET_INVALID_ARGUMENT && x == NULL);
	CHECK(hnet_reg(&H, pr.sc, buf, SIZE_MAX, NB_NET_PTR_HOST, &x) == NB_NET_INVALID_ARGUMENT);
	const struct nb_net_v12 *t = H.table;
	if (t->reg_mr_dma_buf) {
		CHECK(t->reg_mr_dma_buf(pr.sc, buf, 100, NB_NET_PTR_HOST, UINT64_MAX - 10, 3, &x) ==
		      NB_NET_INVALID_ARGUMENT);
		CHECK(t->reg_mr_dma_buf(pr.sc, buf, 100, NB_NET_PTR_HOST, 0, -1, &x) ==
		      NB_NET_INVALID_ARGUMENT);
		CHECK(t->reg_mr_dma_buf(pr.sc, buf, 100, NB_NET_PTR_HOST, 0, 3, &x) == 0 && x);
		CHECK(fc().calls_dmabuf == 1);
		CHECK(hnet_dereg(&H, pr.sc, x) == 0);
	}
	CHECK(fc().calls_reg == reg_calls + (t->reg_mr_dma_buf ? 1 : 0));

	/* size 0 and NULL */
	void *z = NULL, *zn = NULL;
	reg_calls = fc().calls_reg;
	CHECK(hnet_reg(&H, pr.sc, buf, 0, NB_NET_PTR_HOST, &z) == 0 && z);
	CHECK(hnet_reg(&H, pr.sc, NULL, 0, NB_NET_PTR_HOST, &zn) == 0 && zn);
	CHECK(hnet_reg(&H, pr.sc, NULL, 10, NB_NET_PTR_HOST, &x) == NB_NET_INVALID_ARGUMENT);
	CHECK(fc().calls_reg == reg_calls); /* nothing to register in the inner plugin */
	CHECK(hnet_dereg(&H, pr.sc, z) == 0);
	CHECK(hnet_dereg(&H, pr.sc, NULL) == 0);

	/* deregistration after the comm closed: the wrapper released it before closing */
	void *late = NULL;
	CHECK(hnet_reg(&H, pr.sc, buf, sizeof(buf), NB_NET_PTR_HOST, &late) == 0);
	dereg_calls = fc().calls_dereg;
	CHECK(hnet_close_send(&H, pr.sc) == 0);
	pr.sc = NULL;
	CHECK(fc().mrs_at_close == c0.mrs_at_close); /* inner saw no live registration at close */
	CHECK(fc().calls_dereg == dereg_calls + 1);   /* late; zn (size 0) has no inner side */
	CHECK(hnet_dereg(&H, (void *)0x1234, late) == 0); /* the closed comm's pointer: not used */
	CHECK(hnet_dereg(&H, NULL, zn) == 0);
	CHECK(hnet_dereg(&H, pr.rc, mr) == 0);
	struct net_stats st;
	net_stats_get(&st);
	CHECK(st.mrs_live == 0);
	pair_close(&pr);
	check_clean("registration");
	CHECK(fc().mrs == 0);
}

/* the inner plugin fails at `step`: the error reaches the caller, nothing leaks */
static void t_fail_step(const char *step)
{
	struct fake_counters before = fc();
	struct net_stats s0;
	net_stats_get(&s0);
	fake_fail(step, 1);
	struct pair pr;
	int rc = pair_open(&pr);
	bool setup_step = !strcmp(step, "listen") || !strcmp(step, "connect") || !strcmp(step, "accept");
	if (setup_step) {
		CHECK(rc == FAIL);
		pair_close(&pr);
		fake_fail("", 0);
		if (!strcmp(step, "accept")) { /* the connect side went through: clean it up */
			check_clean(step);
		}
		check_clean(step);
		return;
	}
	CHECK(rc == 0);
	const struct nb_net_v12 *t = H.table;
	static char buf[256];
	void *mh = NULL, *req = NULL;
	int r = 0;
	if (!strcmp(step, "regMr")) {
		r = hnet_reg(&H, pr.sc, buf, sizeof(buf), NB_NET_PTR_HOST, &mh);
		CHECK(r == FAIL && mh == NULL);
	} else if (!strcmp(step, "regMrDmaBuf")) {
		r = t->reg_mr_dma_buf ? t->reg_mr_dma_buf(pr.sc, buf, 10, NB_NET_PTR_HOST, 0, 3, &mh) : FAIL;
		CHECK(r == FAIL && mh == NULL);
	} else if (!strcmp(step, "deregMr")) {
		CHECK(hnet_reg(&H, pr.sc, buf, sizeof(buf), NB_NET_PTR_HOST, &mh) == 0);
		CHECK(hnet_dereg(&H, pr.sc, mh) == FAIL);
		fake_fail("", 0);
		CHECK(hnet_dereg(&H, pr.sc, mh) == NB_NET_INVALID_ARGUMENT); /* wrapper gone */
	} else if (!strcmp(step, "isend")) {
		CHECK(hnet_isend(&H, pr.sc, buf, 10, 1, NULL, &req) == FAIL && req == NULL);
	} else if (!strcmp(step, "irecv")) {
		void *d = buf;
		size_t s = 10;
		int tag = 1;
		CHECK(hnet_irecv(&H, pr.rc, 1, &d, &s, &tag, NULL, &req) == FAIL && req == NULL);
	} else if (!strcmp(step, "test")) {
		CHECK(hnet_isend(&H, pr.sc, buf, 10, 1, NULL, &req) == 0 && req);
		int done = 0;
		CHECK(hnet_test(&H, req, &done, NULL) == FAIL && done == 0);
		/* NCCL aborts the comm now: close with the request still open */
	} else if (!strcmp(step, "iflush")) {
		void *d = buf;
		int s = 10;
		CHECK(t->iflush(pr.rc, 1, &d, &s, NULL, &req) == FAIL && req == NULL);
	} else if (!strcmp(step, "closeSend")) {
		CHECK(hnet_close_send(&H, pr.sc) == FAIL);
		pr.sc = NULL; /* the wrapper is gone even though the inner failed */
		fake_fail("", 0);
		/* the inner's comm stays, by the inner's own failure (no pointer is left to
		 * retry with) */
		CHECK(fc().comms == before.comms + 2);
		pair_close(&pr);
		CHECK(fc().comms == before.comms + 1);
		return;
	} else if (!strcmp(step, "closeRecv")) {
		CHECK(hnet_close_recv(&H, pr.rc) == FAIL);
		pr.rc = NULL;
		fake_fail("", 0);
		pair_close(&pr);
		CHECK(fc().comms == before.comms + 1);
		return;
	} else if (!strcmp(step, "closeListen")) {
		CHECK(hnet_close_listen(&H, pr.lc) == FAIL);
		pr.lc = NULL;
		fake_fail("", 0);
		pair_close(&pr);
		CHECK(fc().listens == before.listens + 1);
		return;
	} else if (!strcmp(step, "getDeviceMr") && t->get_device_mr) {
		void *dp = NULL;
		CHECK(t->get_device_mr(pr.sc, NULL, &dp) == FAIL);
	} else if (!strcmp(step, "irecvConsumed") && t->irecv_consumed) {
		CHECK(t->irecv_consumed(pr.rc, 1, NULL) == FAIL);
	} else if (!strcmp(step, "setNetAttr") && H.version >= 11 && t->set_net_attr) {
		struct nb_net_attr a;
		memset(&a, 0, sizeof(a));
		CHECK(t->set_net_attr(H.ctx, &a) == FAIL);
	} else if (!strcmp(step, "makeVDevice") && t->make_vdevice) {
		struct nb_net_vprops_v12 vp = { 1, { 0 } };
		int d;
		CHECK(t->make_vdevice(&d, &vp) == FAIL);
	} else if (!strcmp(step, "devices")) {
		int n = 0;
		CHECK(hnet_devices(&H, &n) == FAIL);
	} else if (!strcmp(step, "getProperties")) {
		struct nb_net_props_v12 p;
		CHECK(hnet_props(&H, 0, &p) == FAIL);
	}
	fake_fail("", 0);
	pair_close(&pr);
	check_clean(step);
	struct net_stats s1;
	net_stats_get(&s1);
	CHECK(s1.mrs_live == s0.mrs_live);
	(void)r;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: test_net_wrap FAKE.so INNER_VERSION [TABLE_VERSION]\n");
		return 2;
	}
	void *fake = dlopen(argv[1], RTLD_NOW);
	inner_version = atoi(argv[2]);
	int table = argc > 3 ? atoi(argv[3]) : 12;
	CHECK(fake != NULL);
	if (!fake)
		TEST_DONE();
	fake_fail = (void (*)(const char *, int))dlsym(fake, "fake_net_fail");
	fake_counters = (void (*)(struct fake_counters *))dlsym(fake, "fake_net_counters");
	hnet_open_static(&H, table);

	/* init fails in the inner plugin: the wrapper's init fails, no context survives */
	fake_fail("init", 1);
	CHECK(hnet_init(&H, 0x42) == FAIL);
	CHECK(fc().ctxs == 0);
	fake_fail("", 0);
	CHECK(hnet_init(&H, 0x42) == 0);
	t_forwarding();
	t_registration();
	static const char *steps[] = { "listen", "connect", "accept", "regMr", "regMrDmaBuf",
				       "deregMr", "isend", "irecv", "test", "iflush",
				       "getDeviceMr", "irecvConsumed", "setNetAttr", "makeVDevice",
				       "devices", "getProperties", "closeListen", "closeRecv",
				       "closeSend" };
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		t_fail_step(steps[i]);
	if (table >= 11 && inner_version >= 11) {
		fake_fail("finalize", 1);
		CHECK(hnet_finalize(&H) == FAIL);
		fake_fail("", 0);
	} else {
		CHECK(hnet_finalize(&H) == 0);
	}
	TEST_DONE();
}
