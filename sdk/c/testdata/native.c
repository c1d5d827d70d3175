/*
 * native: anvil.h's embed and turn helpers compiled for the build machine,
 * with the Extism kernel stubbed by a table of blocks and anvil_embed's
 * answer given by the test, so the answers a real host never sends (a
 * wrong count, ragged or non-numeric vectors, no answer at all) can be
 * fed to it. Prints one line per check; sdk_test.go compares them. With
 * the argument "presence", anvil_case_has over the cases on stdin.
 */
#define ANVIL_IMPLEMENTATION
#define ANVIL_NO_MARKER
#include "anvil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Blocks: offset k+1 is blocks[k]. */
#define MAXB 64
static char *blocks[MAXB];
static size_t lens[MAXB];
static size_t nblocks;
static char *last_request; /* what the guest sent to anvil_embed */
static const char *answer;  /* what anvil_embed answers; NULL: no block */

static char *at(uint64_t off, size_t *n) {
	/* off is block<<32 | position */
	size_t b = (size_t)(off >> 32) - 1;
	if (b >= nblocks || !blocks[b]) abort(); /* a use after free */
	*n = lens[b];
	return blocks[b] + (off & 0xffffffff);
}
anvil_mem anvil_kernel_alloc(uint64_t n) {
	if (nblocks == MAXB) return 0;
	blocks[nblocks] = calloc(n + 8, 1);
	lens[nblocks] = n;
	return (anvil_mem)(++nblocks) << 32;
}
void anvil_kernel_free(anvil_mem b) {
	size_t k = (size_t)(b >> 32) - 1;
	if (k >= nblocks || !blocks[k]) abort(); /* a double or wild free */
	free(blocks[k]);
	blocks[k] = NULL;
}
uint64_t anvil_kernel_length(anvil_mem b) { size_t n; at(b, &n); return n; }
uint64_t anvil_kernel_length_unsafe(anvil_mem b) { return anvil_kernel_length(b); }
uint32_t anvil_kernel_load_u8(uint64_t o) { size_t n; return (unsigned char)*at(o, &n); }
uint64_t anvil_kernel_load_u64(uint64_t o) { size_t n; uint64_t v; memcpy(&v, at(o, &n), 8); return v; }
void anvil_kernel_store_u8(uint64_t o, uint32_t v) { size_t n; *at(o, &n) = (char)v; }
void anvil_kernel_store_u64(uint64_t o, uint64_t v) { size_t n; memcpy(at(o, &n), &v, 8); }
uint64_t anvil_kernel_input_length(void) { return 0; }
uint32_t anvil_kernel_input_load_u8(uint64_t p) { (void)p; return 0; }
uint64_t anvil_kernel_input_load_u64(uint64_t p) { (void)p; return 0; }
void anvil_kernel_output_set(anvil_mem b, uint64_t n) { (void)b; (void)n; }
void anvil_kernel_error_set(anvil_mem b) { (void)b; }
anvil_mem anvil_host_judge(anvil_mem b) { (void)b; return 0; }
void anvil_host_log(anvil_mem b) { (void)b; }
anvil_mem anvil_host_embed(anvil_mem req) {
	free(last_request);
	last_request = anvil_mem_read(req, NULL);
	return answer ? anvil_mem_write(answer, strlen(answer)) : 0;
}

static void embed(const char *name, const char *ans, size_t n) {
	static const char *texts[3] = {"a", "\xc3\xa9\"", "c"};
	answer = ans;
	anvil_embedded e;
	int rc = anvil_embed(NULL, texts, NULL, n, NULL, &e);
	printf("%s: rc=%d", name, rc);
	if (rc == 0) {
		printf(" n=%zu dims=%zu", e.n, e.dims);
		for (size_t i = 0; i < e.n; i++) {
			const double *v = anvil_embedded_vector(&e, i);
			for (size_t j = 0; j < e.dims; j++) printf(" %g", v[j]);
		}
		printf(" past_end=%s", anvil_embedded_vector(&e, e.n) ? "vector" : "NULL");
	} else {
		printf(" code=%s message=%s vector=%s", e.code.s, e.message.s, anvil_embedded_vector(&e, 0) ? "set" : "NULL");
	}
	printf("\n");
	anvil_embedded_free(&e);
	for (size_t k = 0; k < nblocks; k++) {
		if (blocks[k]) printf("  block %zu not freed\n", k);
	}
	nblocks = 0;
}

static void turns(const char *name, const char *json) {
	anvil_json root;
	if (anvil_json_parse(json, strlen(json), &root, NULL, NULL) < 0) abort();
	printf("%s:", name);
	size_t it = 0;
	anvil_json item;
	while (anvil_json_item(root, &it, &item)) {
		anvil_turn t;
		int rc = anvil_turn_read(item, &t);
		if (rc == 0) {
			printf(" [%s|%s|tools=%zu|rc=%zu]", t.role.s, t.content.s, anvil_json_count(t.tools_called),
			       anvil_json_count(t.retrieval_context));
		} else {
			printf(" [rc=%d]", rc);
		}
		anvil_turn_free(&t);
	}
	const char *roles[] = {ANVIL_ROLE_USER, ANVIL_ROLE_ASSISTANT};
	for (int i = 0; i < 2; i++) {
		anvil_str s;
		int rc = anvil_last_turn(root, roles[i], &s);
		printf(" last_%s=%d:%s", roles[i], rc, rc == 0 ? s.s : "-");
		anvil_str_free(&s);
	}
	printf("\n");
}

static void has(const char *json) {
	static const char *const fields[] = {"input", "actual_output", "expected_output", "context", "retrieval_context",
	                                     "tools_called", "turns", "scenario", "chatbot_role", "last_user_turn",
	                                     "last_assistant_turn", "tier", "n", "empty", "none", "absent"};
	anvil_json c;
	if (anvil_json_parse(json, strlen(json), &c, NULL, NULL) < 0) abort();
	printf("has:");
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) printf(" %s=%d", fields[i], anvil_case_has(c, fields[i]));
	const char *need[] = {"input", "turns", "last_user_turn", "tier"};
	const char *m = anvil_case_missing(c, need, 4);
	printf(" missing=%s", m ? m : "-");
	m = anvil_case_missing(c, need, 2);
	printf(" missing2=%s\n", m ? m : "-");
}

/* presence: one case a line on stdin; prints, a line each, whether it
 * has context and retrieval_context ("1 0"), for the presence table
 * (abi/v1/testdata/presence.json) that sdk_test.go feeds it. */
static int presence(void) {
	static char line[1 << 16];
	while (fgets(line, sizeof line, stdin)) {
		size_t n = strlen(line);
		if (n == 0 || line[n - 1] != '\n') return 1; /* too long a line */
		anvil_json c;
		if (anvil_json_parse(line, n - 1, &c, NULL, NULL) < 0) return 1;
		printf("%d %d\n", anvil_case_has(c, "context"), anvil_case_has(c, "retrieval_context"));
	}
	return 0;
}

int main(int argc, char **argv) {
	if (argc > 1 && strcmp(argv[1], "presence") == 0) return presence();
	embed("ok", "{\"vectors\":[[1,-0.5],[0,2e3]],\"usage\":{\"calls\":1}}", 2);
	printf("request: %s\n", last_request);
	embed("host error", "{\"vectors\":[],\"usage\":{},\"error\":{\"code\":\"budget_exhausted\",\"message\":\"no budget\"}}", 2);
	embed("error without code", "{\"vectors\":[],\"error\":{}}", 1);
	embed("too few", "{\"vectors\":[[1]],\"usage\":{}}", 2);
	embed("too many", "{\"vectors\":[[1],[2],[3]],\"usage\":{}}", 2);
	embed("ragged", "{\"vectors\":[[1,2],[3]],\"usage\":{}}", 2);
	embed("longer", "{\"vectors\":[[1],[2,3]],\"usage\":{}}", 2);
	embed("empty vector", "{\"vectors\":[[]],\"usage\":{}}", 1);
	embed("not a number", "{\"vectors\":[[1,\"2\"]],\"usage\":{}}", 1);
	embed("not a row", "{\"vectors\":[3],\"usage\":{}}", 1);
	embed("no vectors", "{\"usage\":{}}", 1);
	embed("not json", "vectors", 1);
	embed("no block", NULL, 1);
	embed("no texts", "{}", 0);
	embed("too many texts", "{}", ANVIL_EMBED_MAX_TEXTS + 1);
	turns("conversation",
	      "[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":\"q1\"},"
	      "{\"role\":\"assistant\",\"content\":\"\",\"tools_called\":[{\"name\":\"t\"}],\"retrieval_context\":[\"r1\",\"r2\"]},"
	      "{\"role\":\"assistant\",\"content\":\"a\\u00e9\"},{\"role\":\"user\",\"content\":\"\"}]");
	turns("malformed", "[1,{\"content\":\"x\"},{\"role\":\"user\",\"content\":3},{\"role\":\"tool\"}]");
	turns("none", "[]");
	has("{\"input\":\"q\",\"actual_output\":\"\",\"context\":[\"\"],\"retrieval_context\":[],\"turns\":[{\"role\":\"user\",\"content\":\"\"},"
	    "{\"role\":\"assistant\",\"content\":\"a\"}],\"scenario\":\"s\",\"extra\":{\"tier\":\"gold\",\"n\":0,\"empty\":\"\",\"none\":null,\"input\":\"x\"}}");
	/* Only strings count in context and retrieval_context. */
	has("{\"context\":[null,1,{\"a\":\"b\"},[\"x\"],\" \\u3000\"],\"retrieval_context\":[\"\\u00a0\",null,\"\\u001c\"]}");
	free(last_request);
	return 0;
}
