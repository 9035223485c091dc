/* Parsers of the offline tuner: samples CSV and nccl_tuner.conf, good and bad input. */
#include <errno.h>
#include <stdlib.h>

#include <ncclbpf/policy.h>

#include "test_util.h"
#include "tools/tune_input.h"

static char errbuf[8192];

/* Parses text as samples; errors go to errbuf. */
static int parse_samples(const char *text, const char *reps, struct tune_samples *s)
{
	struct tune_rep_filter f;
	CHECK(tune_rep_filter_parse(reps, &f) == 0);
	FILE *e = fmemopen(errbuf, sizeof(errbuf), "w");
	memset(errbuf, 0, sizeof(errbuf));
	int rc = tune_samples_parse(text, strlen(text), "s.csv", &f, s, e);
	fclose(e);
	return rc;
}

static void bad_sample(const char *row, const char *want)
{
	char text[1024];
	snprintf(text, sizeof(text), "coll,bytes,algo,proto,channels,nranks,nnodes,time_us\n"
				     "AllReduce,4096,Tree,LL,0,4,2,10.5\n%s\n", row);
	struct tune_samples s;
	memset(&s, 0, sizeof(s));
	CHECK(parse_samples(text, "all", &s) == -EINVAL);
	CHECK(s.n == 0); /* nothing kept from a bad file */
	CHECK_STR_CONTAINS(errbuf, "s.csv:3: error: ");
	CHECK_STR_CONTAINS(errbuf, want);
	tune_samples_free(&s);
}

static void test_samples(void)
{
	struct tune_samples s;
	memset(&s, 0, sizeof(s));
	const char *good = "# comment\r\n"
			   "iter,coll,bytes,algo,proto,channels,nranks,nnodes,time_us,policy,config,rep\r\n"
			   "0,AllReduce,4096,Tree,LL,0,4,2,10.5,,Tree-LL,0\r\n"
			   "1, allreduce , 4096 ,default,default,0,4,2,12,,default,1\n"
			   "2,AllGather,65536,ring,simple,8,4,2,1e2,,x,2\n"
			   "3,AllReduce,4096,default,default,0,4,2,9,bandit,policy-bandit,0\n"
			   "\n"
			   "4,ReduceScatter,1,collnet_direct,LL128,64,4,4,0.5,,x,3";
	CHECK(parse_samples(good, "all", &s) == 0);
	CHECK(s.n == 4 && s.skipped_policy == 1);
	CHECK(s.v[0].coll == NCCLBPF_COLL_ALLREDUCE && s.v[0].bytes == 4096 &&
	      s.v[0].algo == NCCLBPF_ALGO_TREE && s.v[0].proto == NCCLBPF_PROTO_LL && s.v[0].nranks == 4 &&
	      s.v[0].nnodes == 2 && s.v[0].time_us == 10.5 && s.v[0].rep == 0);
	CHECK(s.v[1].algo == TUNE_DEFAULT && s.v[1].proto == TUNE_DEFAULT && s.v[1].rep == 1);
	CHECK(s.v[2].coll == NCCLBPF_COLL_ALLGATHER && s.v[2].channels == 8 && s.v[2].time_us == 100);
	CHECK(s.v[3].algo == NCCLBPF_ALGO_COLLNET_DIRECT && s.v[3].proto == NCCLBPF_PROTO_LL128);
	tune_samples_free(&s);
	CHECK(parse_samples(good, "even", &s) == 0 && s.n == 2 && s.skipped_rep == 2);
	tune_samples_free(&s);
	CHECK(parse_samples(good, "1,3", &s) == 0 && s.n == 2 && s.v[0].rep == 1 && s.v[1].rep == 3);
	tune_samples_free(&s);

	bad_sample("Allreduce2,4096,Tree,LL,0,4,2,1", "unknown collective 'Allreduce2'");
	bad_sample("AllReduce,-4096,Tree,LL,0,4,2,1", "bytes '-4096'");
	bad_sample("AllReduce,4k,Tree,LL,0,4,2,1", "bytes '4k'");
	bad_sample("AllReduce,4096,Trie,LL,0,4,2,1", "unknown algorithm 'Trie'");
	bad_sample("AllReduce,4096,Tree,LL64,0,4,2,1", "unknown protocol 'LL64'");
	bad_sample("AllReduce,4096,Tree,LL,65,4,2,1", "channels '65'");
	bad_sample("AllReduce,4096,Tree,LL,0,0,1,1", "nranks '0'");
	bad_sample("AllReduce,4096,Tree,LL,0,4,5,1", "nnodes '5'");
	bad_sample("AllReduce,4096,Tree,LL,0,4,2,-1", "time_us '-1'");
	bad_sample("AllReduce,4096,Tree,LL,0,4,2,nan", "time_us 'nan'");
	bad_sample("AllReduce,4096,Tree,LL,0,4,2,inf", "time_us 'inf'");
	bad_sample("AllReduce,4096,Tree,LL,0,4,2,", "time_us ''");
	bad_sample("AllReduce,4096,Tree,LL,0,4,2", "7 fields, the header has 8");
	bad_sample("AllReduce,4096,Tree,LL,0,4,2,1,1", "9 fields");
	bad_sample("\"AllReduce\",4096,Tree,LL,0,4,2,1", "quoted fields");

	/* header problems */
	memset(&s, 0, sizeof(s));
	CHECK(parse_samples("coll,bytes,algo,proto,channels,nranks,time_us\n", "all", &s) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "s.csv:1: error: header lacks column 'nnodes'");
	CHECK(parse_samples("coll,coll,bytes,algo,proto,channels,nranks,nnodes,time_us\n", "all", &s) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "column 'coll' appears twice");
	CHECK(parse_samples("", "all", &s) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "header line is required");
	/* --reps without a rep column */
	CHECK(parse_samples("coll,bytes,algo,proto,channels,nranks,nnodes,time_us\nAllReduce,1,Tree,LL,0,1,1,1\n",
			    "even", &s) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "--reps needs a 'rep' column");
	/* NUL byte and an overlong line */
	const char nul[] = "coll,bytes,algo,proto,channels,nranks,nnodes,time_us\nAll\0Reduce,1,Tree,LL,0,1,1,1\n";
	struct tune_rep_filter f;
	tune_rep_filter_parse("all", &f);
	FILE *e = fmemopen(errbuf, sizeof(errbuf), "w");
	CHECK(tune_samples_parse(nul, sizeof(nul) - 1, "n.csv", &f, &s, e) == -EINVAL);
	fclose(e);
	CHECK_STR_CONTAINS(errbuf, "n.csv:2: error: NUL byte");
	char *longl = malloc(10000);
	strcpy(longl, "coll,bytes,algo,proto,channels,nranks,nnodes,time_us\n");
	size_t k = strlen(longl);
	memset(longl + k, 'a', 5000);
	longl[k + 5000] = 0;
	CHECK(parse_samples(longl, "all", &s) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "s.csv:2: error: line longer than");
	free(longl);
	/* many bad rows: reporting stops at the limit */
	char *many = malloc(200000);
	strcpy(many, "coll,bytes,algo,proto,channels,nranks,nnodes,time_us\n");
	for (int i = 0; i < 1000; i++)
		strcat(many, "x,1,Tree,LL,0,1,1,1\n");
	CHECK(parse_samples(many, "all", &s) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "too many errors");
	CHECK(strstr(errbuf, "s.csv:30:") == NULL);
	free(many);
	tune_samples_free(&s);
	CHECK(tune_rep_filter_parse("1,x", &f) == -EINVAL);
	CHECK(tune_rep_filter_parse("", &f) == -EINVAL);
}

static int parse_conf(const char *text, struct tune_rule *rules, size_t max)
{
	FILE *e = fmemopen(errbuf, sizeof(errbuf), "w");
	memset(errbuf, 0, sizeof(errbuf));
	int rc = tune_conf_parse(text, strlen(text), "nccl_tuner.conf", rules, max, e);
	fclose(e);
	return rc;
}

static void bad_conf(const char *line, const char *want)
{
	char text[512];
	snprintf(text, sizeof(text), "# header comment\nallreduce,0,65536,tree,simple,-1,-1,-1\n%s\n", line);
	struct tune_rule r[TUNE_MAX_RULES];
	CHECK(parse_conf(text, r, TUNE_MAX_RULES) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "nccl_tuner.conf:3: error: ");
	CHECK_STR_CONTAINS(errbuf, want);
}

static void test_conf(void)
{
	struct tune_rule r[TUNE_MAX_RULES];
	const char *conf = "# NCCL example tuner rules\n"
			   "allreduce, 0, 65536, tree, simple, -1, -1, -1\n"
			   "  allgather,65537,-1,ring,ll128,4,2,16\n"
			   "\n"
			   "broadcast,0,1024,nvls_tree,ll,8,-1,-1,2\n"
			   "reducescatter,-1,-1,pat,simple,-1,4,32,-1,-1\n";
	CHECK(parse_conf(conf, r, TUNE_MAX_RULES) == 4);
	CHECK(r[0].coll_type == NCCLBPF_COLL_ALLREDUCE && r[0].min_bytes == 0 && r[0].max_bytes == 65536 &&
	      r[0].algo == NCCLBPF_ALGO_TREE && r[0].proto == NCCLBPF_PROTO_SIMPLE && r[0].n_channels == 0 &&
	      r[0].n_nodes == -1 && r[0].n_ranks == -1 && r[0].num_pipe_ops == -1);
	CHECK(r[1].coll_type == NCCLBPF_COLL_ALLGATHER && r[1].max_bytes == UINT64_MAX &&
	      r[1].proto == NCCLBPF_PROTO_LL128 && r[1].n_channels == 4 && r[1].n_nodes == 2 && r[1].n_ranks == 16);
	CHECK(r[2].algo == NCCLBPF_ALGO_NVLS_TREE && r[2].num_pipe_ops == 2);
	CHECK(r[3].algo == NCCLBPF_ALGO_PAT && r[3].min_bytes == 0 && r[3].n_nodes == 4);
	bad_conf("allreduce,0,65536,tree,simple,-1,-1", "7 fields");
	bad_conf("allreduce,0,65536,tree,simple,-1,-1,-1,1,1,1", "11 fields");
	bad_conf("allreduc,0,65536,tree,simple,-1,-1,-1", "unknown collective 'allreduc'");
	bad_conf("allreduce,x,65536,tree,simple,-1,-1,-1", "min_bytes 'x'");
	bad_conf("allreduce,0,-2,tree,simple,-1,-1,-1", "max_bytes '-2'");
	bad_conf("allreduce,10,5,tree,simple,-1,-1,-1", "min_bytes 10 is above max_bytes 5");
	bad_conf("allreduce,0,65536,trees,simple,-1,-1,-1", "unknown algorithm 'trees'");
	bad_conf("allreduce,0,65536,tree,simpl,-1,-1,-1", "unknown protocol 'simpl'");
	bad_conf("allreduce,0,65536,tree,simple,65,-1,-1", "channels '65'");
	bad_conf("allreduce,0,65536,tree,simple,-1,0,-1", "nNodes '0'");
	bad_conf("allreduce,0,65536,tree,simple,-1,-1,abc", "nRanks 'abc'");
	bad_conf("allreduce,0,65536,tree,simple,-1,-1,-1,0", "numPipeOps '0'");
	bad_conf("allreduce,0,65536,tree,simple,-1,-1,-1,-1,2", "regBuff '2'");
	bad_conf("allreduce,0,65536,tree,simple,-1,-1,-1,-1,1", "rank-local");
	/* capacity */
	char big[8192] = "";
	for (int i = 0; i < TUNE_MAX_RULES + 1; i++)
		strcat(big, "allreduce,0,1,tree,ll,-1,-1,-1\n");
	CHECK(parse_conf(big, r, TUNE_MAX_RULES) == -E2BIG);
	CHECK_STR_CONTAINS(errbuf, "more than 32 rules");
	CHECK(parse_conf("", r, TUNE_MAX_RULES) == 0);
}

/* NVIDIA's example file has regBuff 0/1 rows and a spreadsheet header: refused by
 * default (rank-local), migrated explicitly with a warning per row. */
static void test_conf_regbuff(void)
{
	const char *nv = "collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,"
			 "nRanks,numPipeOps,regBuff\n"
			 "allreduce,0,65536,tree,simple,2,1,-1,-1,1\n"
			 "allreduce,65537,1048576,ring,simple,4,4,32,1,0\n"
			 "allreduce,1048577,4294967295,ring,ll128,-1,-1,-1,4,-1\n"
			 "broadcast,0,32768,tree,simple,-1,1,-1\n";
	struct tune_rule r[TUNE_MAX_RULES];
	for (int mode = 0; mode < 3; mode++) {
		FILE *e = fmemopen(errbuf, sizeof(errbuf), "w");
		memset(errbuf, 0, sizeof(errbuf));
		int n = tune_conf_parse_regbuff(nv, strlen(nv), "nv.conf", r, TUNE_MAX_RULES, mode, e);
		fclose(e);
		if (mode == TUNE_REGBUFF_REFUSE) {
			CHECK(n == -EINVAL);
			CHECK_STR_CONTAINS(errbuf, "nv.conf:2: error: regBuff 1");
			CHECK_STR_CONTAINS(errbuf, "nv.conf:3: error: regBuff 0");
			CHECK_STR_CONTAINS(errbuf, "--regbuff ignore|drop");
			CHECK(strstr(errbuf, "nv.conf:1:") == NULL); /* the header is not a rule */
		} else if (mode == TUNE_REGBUFF_IGNORE) {
			CHECK(n == 4);
			CHECK_STR_CONTAINS(errbuf, "nv.conf:2: warning: regBuff 1 ignored");
			CHECK_STR_CONTAINS(errbuf, "nv.conf:3: warning: regBuff 0 ignored");
			CHECK(strstr(errbuf, "error") == NULL);
			CHECK(r[0].n_channels == 2 && r[0].n_nodes == 1 && r[1].num_pipe_ops == 1 &&
			      r[2].max_bytes == 4294967295ull && r[3].coll_type == NCCLBPF_COLL_BROADCAST);
		} else {
			CHECK(n == 2);
			CHECK_STR_CONTAINS(errbuf, "nv.conf:2: warning: regBuff 1: rule dropped");
			CHECK(r[0].min_bytes == 1048577 && r[1].coll_type == NCCLBPF_COLL_BROADCAST);
		}
	}
}

static const char nt_head[] =
	"# nccl-tests version 2.18.2 nccl-headers=23007 nccl-library=23007\n"
	"# Collective test starting: all_gather_perf\n"
	"# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20\n"
	"#\n# Using devices\n"
	"#  Rank  0 Group  0 Pid  10 on  node-a device  0 [0x07] NVIDIA H100\n"
	"#  Rank  1 Group  0 Pid  11 on  node-a device  1 [0x08] NVIDIA H100\n"
	"#  Rank  2 Group  0 Pid  12 on  node-b device  0 [0x07] NVIDIA H100\n"
	"#  Rank  3 Group  0 Pid  13 on  node-b device  1 [0x08] NVIDIA H100\n";
static const char nt_table[] =
	"#\n#                                                              out-of-place                       in-place\n"
	"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
	"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n";

static int parse_nt(const char *text, const char *fname, struct tune_samples *s)
{
	struct tune_rep_filter f;
	tune_rep_filter_parse("all", &f);
	FILE *e = fmemopen(errbuf, sizeof(errbuf), "w");
	memset(errbuf, 0, sizeof(errbuf));
	int rc = tune_nccltests_parse(text, strlen(text), fname, &f, s, e);
	fclose(e);
	return rc;
}

static void test_nccltests(void)
{
	char text[8192];
	struct tune_samples s;
	memset(&s, 0, sizeof(s));
	/* two cycles (-N 2), mpirun's tag prefix, NCCL's log lines in between, NCCL_PROTO */
	snprintf(text, sizeof(text), "%s"
		 "[1,0]<stdout>:node-a:10:10 [0] NCCL INFO NCCL_PROTO set by environment to LL128\n"
		 "node-a:10:10 [0] NCCL INFO comm 0x1 rank 0 nranks 4 - Init COMPLETE\n"
		 "%s"
		 "        1024           256     float    none      -1    20.10    0.05    0.05      0    20.00    0.05    0.05      0\n"
		 "[1,0]<stdout>:        2048           512     float    none      -1    21.30    0.10    0.10    N/A    21.20    0.10    0.10    N/A\n"
		 "%s"
		 "        1024           256     float    none      -1    19.90    0.05    0.05      0    20.20    0.05    0.05      0\n"
		 "# Out of bounds values : 0 OK\n", nt_head, nt_table, nt_table);
	CHECK(tune_input_is_nccltests(text, strlen(text)));
	CHECK(!tune_input_is_nccltests("coll,bytes\n", 11));
	CHECK(parse_nt(text, "x.txt", &s) == 0);
	CHECK(s.n == 6);
	CHECK(s.v[0].coll == NCCLBPF_COLL_ALLGATHER && s.v[0].bytes == 1024 && s.v[0].nranks == 4 &&
	      s.v[0].nnodes == 2 && s.v[0].algo == TUNE_DEFAULT && s.v[0].proto == NCCLBPF_PROTO_LL128 &&
	      s.v[0].time_us == 20.1 && s.v[1].time_us == 20.0 && s.v[0].rep == 0);
	CHECK(s.v[2].bytes == 2048 && s.v[2].rep == 0);
	CHECK(s.v[4].bytes == 1024 && s.v[4].rep == 1); /* the second table */
	tune_samples_free(&s);
	/* the collective from the file name when the test line is missing */
	const char *noname = strstr(nt_head, "# nThread");
	snprintf(text, sizeof(text), "%s%s        4096    1024  float  sum  -1  30.0  0.1  0.1  0  "
		 "31.0  0.1  0.1  0\n", noname, nt_table);
	CHECK(parse_nt(text, "runs/reduce_scatter_perf.log", &s) == 0);
	CHECK(s.n == 2 && s.v[0].coll == NCCLBPF_COLL_REDUCESCATTER);
	tune_samples_free(&s);
	CHECK(parse_nt(text, "run.log", &s) == -EINVAL && s.n == 0);
	CHECK_STR_CONTAINS(errbuf, "run.log:");
	CHECK_STR_CONTAINS(errbuf, "which collective?");
	/* wrong elements: refused, nothing kept */
	snprintf(text, sizeof(text), "%s%s        1024  256  float  none  -1  20.1  0.05  0.05  3  "
		 "20.0  0.05  0.05  0\n", nt_head, nt_table);
	CHECK(parse_nt(text, "x.txt", &s) == -EINVAL && s.n == 0);
	CHECK_STR_CONTAINS(errbuf, "wrong elements reported (3)");
	/* a multi-algorithm NCCL_ALGO is not one configuration */
	snprintf(text, sizeof(text), "%sh:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring,Tree\n%s"
		 "        1024  256  float  none  -1  20.1  0.05  0.05  0  20.0  0.05  0.05  0\n",
		 nt_head, nt_table);
	CHECK(parse_nt(text, "x.txt", &s) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "NCCL_ALGO=Ring,Tree is not one algorithm");
	/* no rank lines, no rows, a short row */
	snprintf(text, sizeof(text), "# Collective test starting: all_reduce_perf\n%s"
		 "        1024  256  float  sum  -1  20.1  0.05  0.05  0  20.0  0.05  0.05  0\n", nt_table);
	CHECK(parse_nt(text, "x.txt", &s) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "no '#  Rank N ... on HOST' lines");
	snprintf(text, sizeof(text), "%s%s", nt_head, nt_table);
	CHECK(parse_nt(text, "x.txt", &s) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "x.txt: error: no result rows");
	snprintf(text, sizeof(text), "%s%s        1024  256  float\n", nt_head, nt_table);
	CHECK(parse_nt(text, "x.txt", &s) == -EINVAL);
	CHECK_STR_CONTAINS(errbuf, "3 columns, the table header has 13");
	tune_samples_free(&s); /* a failed parse keeps the caller's buffer (the caller owns it) */
}

int main(void)
{
	test_samples();
	test_conf();
	test_conf_regbuff();
	test_nccltests();
	TEST_DONE();
}
