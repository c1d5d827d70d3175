/*
 * A native libFuzzer harness for anvil.h's JSON reader and writer: any
 * input must be validated or refused without undefined behaviour, every
 * value the reader finds must survive a write and a re-parse, and
 * anvil_case_has's in-place reading of context must agree with its decoding.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Wno-unknown-attributes -I sdk/c \
 *         -o /tmp/anvil-json-fuzz sdk/c/fuzz/json_fuzz.c
 *   /tmp/anvil-json-fuzz -max_total_time=60
 *
 * The Extism kernel is not there natively: its functions are stubbed.
 */
#define ANVIL_IMPLEMENTATION
#define ANVIL_NO_MARKER
#include "anvil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kernel stubs: natively, the import attributes only name the symbols. */
uint64_t anvil_kernel_input_length(void) { return 0; }
uint32_t anvil_kernel_input_load_u8(uint64_t p) { (void)p; return 0; }
uint64_t anvil_kernel_input_load_u64(uint64_t p) { (void)p; return 0; }
anvil_mem anvil_kernel_alloc(uint64_t n) { (void)n; return 0; }
void anvil_kernel_free(anvil_mem b) { (void)b; }
uint64_t anvil_kernel_length(anvil_mem b) { (void)b; return 0; }
uint64_t anvil_kernel_length_unsafe(anvil_mem b) { (void)b; return 0; }
uint32_t anvil_kernel_load_u8(uint64_t o) { (void)o; return 0; }
uint64_t anvil_kernel_load_u64(uint64_t o) { (void)o; return 0; }
void anvil_kernel_store_u8(uint64_t o, uint32_t v) { (void)o; (void)v; }
void anvil_kernel_store_u64(uint64_t o, uint64_t v) { (void)o; (void)v; }
void anvil_kernel_output_set(anvil_mem b, uint64_t n) { (void)b; (void)n; }
void anvil_kernel_error_set(anvil_mem b) { (void)b; }
anvil_mem anvil_host_judge(anvil_mem b) { (void)b; return 0; }
anvil_mem anvil_host_embed(anvil_mem b) { (void)b; return 0; }
void anvil_host_log(anvil_mem b) { (void)b; }

static void walk(anvil_json v, anvil_w *w, int depth) {
	size_t it = 0;
	anvil_json k, x;
	anvil_str s;
	double d;
	bool b;
	switch (v.type) {
	case ANVIL_JSON_OBJECT:
		anvil_w_object(w);
		while (anvil_json_member(v, &it, &k, &x)) {
			if (anvil_json_string(k, &s) != 0) abort(); /* a validated key always decodes */
			anvil_w_key(w, s.s);
			anvil_json_key_is(k, s.s);
			anvil_str_free(&s);
			walk(x, w, depth + 1);
		}
		anvil_w_object_end(w);
		break;
	case ANVIL_JSON_ARRAY:
		anvil_w_array(w);
		while (anvil_json_item(v, &it, &x)) walk(x, w, depth + 1);
		anvil_w_array_end(w);
		(void)anvil_json_count(v);
		(void)anvil_json_at(v, 3);
		break;
	case ANVIL_JSON_STRING:
		if (anvil_json_string(v, &s) != 0) abort();
		anvil_w_stringn(w, s.s, s.n);
		anvil_str_free(&s);
		break;
	case ANVIL_JSON_NUMBER:
		if (anvil_json_number(v, &d) == 0) anvil_w_number(w, d);
		else anvil_w_null(w); /* out of a double's range */
		break;
	case ANVIL_JSON_TRUE:
	case ANVIL_JSON_FALSE:
		if (anvil_json_bool(v, &b) != 0) abort();
		anvil_w_bool(w, b);
		break;
	default:
		anvil_w_null(w);
	}
}

/* Whether a decoded string has a rune that is not white space: what
 * anvil_case_has finds in place, here from anvil_json_string's text. */
static bool text(const anvil_str *s) {
	const unsigned char *p = (const unsigned char *)s->s, *end = p + s->n;
	while (p < end) {
		size_t k = anvil__utf8(p, end);
		if (k == 0) abort(); /* decoded text is valid UTF-8 */
		unsigned long cp = k == 1 ? p[0]
		                   : k == 2 ? ((p[0] & 0x1Ful) << 6) | (p[1] & 0x3Ful)
		                   : k == 3 ? ((p[0] & 0x0Ful) << 12) | ((p[1] & 0x3Ful) << 6) | (p[2] & 0x3Ful)
		                            : 0x10000;
		if (!anvil__space(cp)) return true;
		p += k;
	}
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
	anvil_json root;
	if (anvil_json_parse((const char *)data, size, &root, NULL, NULL) != 0) return 0;
	(void)anvil_json_path(root, "a.b.c");
	anvil_str *items = NULL;
	size_t n = 0;
	if (anvil_json_strings(root, &items, &n, NULL) == 0) anvil_strs_free(items, n);
	/* anvil_case_has reads context in place; it agrees with the decoded items. */
	bool present = false;
	size_t it = 0;
	anvil_json item;
	while (anvil_json_item(anvil_json_get(root, "context"), &it, &item)) {
		anvil_str s;
		if (item.type != ANVIL_JSON_STRING) continue;
		if (anvil_json_string(item, &s) != 0) abort();
		present = present || text(&s);
		anvil_str_free(&s);
	}
	if (anvil_case_has(root, "context") != present) abort();
	anvil_w w;
	anvil_w_init(&w);
	walk(root, &w, 0);
	if (w.err == NULL) {
		/* What the writer wrote parses, and to the same shape. */
		anvil_json again;
		if (anvil_json_parse(w.buf, w.len, &again, NULL, NULL) != 0) abort();
		if (root.type != ANVIL_JSON_NUMBER && again.type != root.type) abort();
	}
	anvil_w_free(&w);
	return 0;
}
