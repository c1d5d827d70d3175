/*
 * probe-c: a test plugin for the C SDK itself (sdk/c/sdk_test.go), run
 * through the real host. Its kinds use what ABI minors 4 and 5 added the
 * way a plugin author would: "cosine" embeds actual_output and
 * expected_output with anvil_embed; "turns" reads a conversation's turns.
 */
#define ANVIL_IMPLEMENTATION
#include "anvil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char DESCRIPTOR[] =
	"{\"name\":\"probe-c\",\"version\":\"0.0.1\",\"abi_major\":1,\"abi_minor\":5,"
	"\"kinds\":["
	"{\"name\":\"cosine\",\"role\":\"metric\",\"required_fields\":[\"actual_output\",\"expected_output\"]},"
	"{\"name\":\"turns\",\"role\":\"metric\",\"required_fields\":[\"turns\",\"last_user_turn\"]}],"
	"\"capabilities\":[\"judge\"]}";

ANVIL_EXPORT("anvil_describe") int32_t describe(void) {
	if (anvil_output(DESCRIPTOR, sizeof DESCRIPTOR - 1) < 0) {
		return anvil_fail("cannot allocate the descriptor");
	}
	return 0;
}

/* missing answers a case lacking one of fields with missing_field, as the
 * kind's required_fields promise; 0 when it has them all. */
static int32_t missing(anvil_json c, double threshold, const char *const *fields, size_t n, bool *done) {
	const char *f = anvil_case_missing(c, fields, n);
	*done = f != NULL;
	if (!f) return 0;
	char msg[96];
	snprintf(msg, sizeof msg, "the case has no %s", f);
	return anvil_measure_error(threshold, "missing_field", f, msg);
}

static int32_t cosine(anvil_json c, double threshold) {
	static const char *const need[] = {"actual_output", "expected_output"};
	bool done;
	int32_t rc = missing(c, threshold, need, 2, &done);
	if (done) return rc;
	anvil_str a = {0}, b = {0};
	if (anvil_json_string(anvil_json_get(c, "actual_output"), &a) < 0 ||
	    anvil_json_string(anvil_json_get(c, "expected_output"), &b) < 0) {
		anvil_str_free(&a);
		return anvil_measure_error(threshold, "metric_error", NULL, "out of memory");
	}
	const char *texts[2] = {a.s, b.s};
	size_t lens[2] = {a.n, b.n};
	anvil_embedded e;
	int erc = anvil_embed(NULL, texts, lens, 2, "similarity", &e);
	anvil_str_free(&a);
	anvil_str_free(&b);
	if (erc < 0) {
		/* The host's code, kept (budget_exhausted stays budget_exhausted). */
		int32_t out = anvil_measure_error(threshold, e.code.s, NULL, e.message.s);
		anvil_embedded_free(&e);
		return out;
	}
	const double *x = anvil_embedded_vector(&e, 0), *y = anvil_embedded_vector(&e, 1);
	double dot = 0, nx = 0, ny = 0;
	for (size_t i = 0; i < e.dims; i++) {
		dot += x[i] * y[i];
		nx += x[i] * x[i];
		ny += y[i] * y[i];
	}
	size_t dims = e.dims;
	anvil_embedded_free(&e);
	if (nx == 0 || ny == 0) {
		return anvil_measure_error(threshold, "metric_error", NULL, "a zero vector has no direction");
	}
	double cos = dot / (sqrt(nx) * sqrt(ny));
	double score = cos < 0 ? 0 : cos > 1 ? 1 : cos;
	char reason[64];
	snprintf(reason, sizeof reason, "cosine %.4f", cos);
	anvil_w w;
	anvil_w_init(&w);
	anvil_w_object(&w);
	anvil_w_key(&w, "score");
	anvil_w_number(&w, score);
	anvil_w_key(&w, "success");
	anvil_w_bool(&w, score >= threshold);
	anvil_w_key(&w, "threshold");
	anvil_w_number(&w, threshold);
	anvil_w_key(&w, "reason");
	anvil_w_string(&w, reason);
	anvil_w_key(&w, "details");
	anvil_w_object(&w);
	anvil_w_key(&w, "cosine");
	anvil_w_number(&w, cos);
	anvil_w_key(&w, "dimensions");
	anvil_w_int(&w, (int64_t)dims);
	anvil_w_object_end(&w);
	anvil_w_object_end(&w);
	return anvil_w_output(&w);
}

/* last writes the derived field name's text, or null. */
static void last(anvil_w *w, anvil_json turns, const char *role) {
	anvil_str s = {0};
	if (anvil_last_turn(turns, role, &s) == 0) {
		anvil_w_stringn(w, s.s, s.n);
	} else {
		anvil_w_null(w);
	}
	anvil_str_free(&s);
}

/* text writes a string member of the case, or "" when it has none. */
static void text(anvil_w *w, anvil_json c, const char *key) {
	anvil_json v = anvil_json_get(c, key);
	if (v.type == ANVIL_JSON_STRING) {
		anvil_w_json(w, v);
	} else {
		anvil_w_string(w, "");
	}
}

static int32_t turns(anvil_json c, double threshold) {
	static const char *const need[] = {"turns", "last_user_turn"};
	bool done;
	int32_t rc = missing(c, threshold, need, 2, &done);
	if (done) return rc;
	anvil_json ts = anvil_json_get(c, "turns");
	size_t n = 0, assistant = 0, it = 0;
	anvil_json item;
	anvil_w roles, tools, retrieved;
	anvil_w_init(&roles);
	anvil_w_init(&tools);
	anvil_w_init(&retrieved);
	anvil_w_array(&roles);
	anvil_w_array(&tools);
	anvil_w_array(&retrieved);
	while (anvil_json_item(ts, &it, &item)) {
		anvil_turn t;
		if (anvil_turn_read(item, &t) < 0) {
			anvil_turn_free(&t);
			anvil_w_free(&roles);
			anvil_w_free(&tools);
			anvil_w_free(&retrieved);
			return anvil_measure_error(threshold, "metric_error", "turns", "a turn is not a role and a content");
		}
		n++;
		if (strcmp(t.role.s, ANVIL_ROLE_ASSISTANT) == 0) assistant++;
		anvil_w_stringn(&roles, t.role.s, t.role.n);
		size_t jt = 0;
		anvil_json v;
		while (anvil_json_item(t.tools_called, &jt, &v)) anvil_w_json(&tools, anvil_json_get(v, "name"));
		jt = 0;
		while (anvil_json_item(t.retrieval_context, &jt, &v)) anvil_w_json(&retrieved, v);
		anvil_turn_free(&t);
	}
	anvil_w_array_end(&roles);
	anvil_w_array_end(&tools);
	anvil_w_array_end(&retrieved);

	double score = n ? (double)assistant / (double)n : 0;
	char reason[64];
	snprintf(reason, sizeof reason, "%zu of %zu turns are the assistant's", assistant, n);
	anvil_w w;
	anvil_w_init(&w);
	anvil_w_object(&w);
	anvil_w_key(&w, "score");
	anvil_w_number(&w, score);
	anvil_w_key(&w, "success");
	anvil_w_bool(&w, score >= threshold);
	anvil_w_key(&w, "threshold");
	anvil_w_number(&w, threshold);
	anvil_w_key(&w, "reason");
	anvil_w_string(&w, reason);
	anvil_w_key(&w, "details");
	anvil_w_object(&w);
	anvil_w_key(&w, "roles");
	anvil_w_raw(&w, roles.buf, roles.len);
	anvil_w_key(&w, "last_user_turn");
	last(&w, ts, ANVIL_ROLE_USER);
	anvil_w_key(&w, "last_assistant_turn");
	last(&w, ts, ANVIL_ROLE_ASSISTANT);
	anvil_w_key(&w, "tools");
	anvil_w_raw(&w, tools.buf, tools.len);
	anvil_w_key(&w, "retrieval_context");
	anvil_w_raw(&w, retrieved.buf, retrieved.len);
	anvil_w_key(&w, "scenario");
	text(&w, c, "scenario");
	anvil_w_key(&w, "chatbot_role");
	text(&w, c, "chatbot_role");
	anvil_w_object_end(&w);
	anvil_w_object_end(&w);
	if (roles.err || tools.err || retrieved.err) w.err = "out of memory";
	anvil_w_free(&roles);
	anvil_w_free(&tools);
	anvil_w_free(&retrieved);
	return anvil_w_output(&w);
}

ANVIL_EXPORT("anvil_measure") int32_t measure(void) {
	size_t len = 0;
	char *in = anvil_input(&len);
	anvil_json root;
	if (!in || anvil_json_parse(in, len, &root, NULL, NULL) < 0) {
		free(in);
		return anvil_fail("cannot read the measure request");
	}
	double threshold = 0;
	anvil_json_number(anvil_json_get(root, "threshold"), &threshold);
	anvil_json c = anvil_json_get(root, "case");
	int32_t rc;
	if (anvil_json_key_is(anvil_json_get(root, "kind"), "cosine")) {
		rc = cosine(c, threshold);
	} else {
		rc = turns(c, threshold);
	}
	free(in);
	return rc;
}
