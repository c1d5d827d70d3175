/*
 * kwcov-c: the shared example metric keyword_coverage, in C, against
 * sdk/c/anvil.h and wasi-libc only. Build: ./build.sh (bin/wasm/kwcov-c.wasm).
 *
 * score = keywords found in actual_output / keywords configured (substring
 * match; ASCII-only lowering of A-Z unless case_sensitive). With
 * judge_check, one judge request asks whether the keywords are used
 * meaningfully; a false verdict halves the score.
 */
#define ANVIL_IMPLEMENTATION
#include "anvil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLUGIN "kwcov-c"
#define KIND "keyword_coverage"

static const char DESCRIPTOR[] =
	"{\"name\":\"" PLUGIN "\",\"version\":\"0.1.0\",\"abi_major\":1,\"abi_minor\":0,"
	"\"kinds\":[{\"name\":\"" KIND "\",\"role\":\"metric\","
	"\"description\":\"Fraction of the configured keywords found in actual_output; "
	"optionally checked by the judge.\","
	"\"required_fields\":[\"actual_output\"],"
	"\"config_schema\":{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
	"\"properties\":{"
	"\"keywords\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1},"
	"\"case_sensitive\":{\"type\":\"boolean\"},"
	"\"judge_check\":{\"type\":\"boolean\"}},"
	"\"required\":[\"keywords\"],\"additionalProperties\":false}}],"
	"\"capabilities\":[\"judge\"]}";

static const char VERDICT_SCHEMA[] =
	"{\"type\":\"object\",\"properties\":{\"verdict\":{\"type\":\"boolean\"}},"
	"\"required\":[\"verdict\"],\"additionalProperties\":false}";

ANVIL_EXPORT("anvil_describe") int32_t describe(void) {
	if (anvil_output(DESCRIPTOR, sizeof DESCRIPTOR - 1) < 0) {
		return anvil_fail("cannot allocate the descriptor");
	}
	return 0;
}

typedef struct {
	anvil_str *keywords;
	size_t n;
	bool case_sensitive;
	bool judge_check;
} config;

/* Reads the config strictly. Returns NULL, or an error message naming the
 * field (*field) for an invalid_config error; msg is a caller buffer. */
static const char *read_config(anvil_json cfg, config *c, const char **field, char *msg, size_t cap) {
	memset(c, 0, sizeof *c);
	*field = "keywords";
	if (cfg.type != ANVIL_JSON_NONE && cfg.type != ANVIL_JSON_NULL) {
		if (cfg.type != ANVIL_JSON_OBJECT) {
			*field = "";
			return "config: want a JSON object";
		}
		size_t it = 0;
		anvil_json k, v;
		while (anvil_json_member(cfg, &it, &k, &v)) {
			if (anvil_json_key_is(k, "keywords")) {
				if (v.type == ANVIL_JSON_NULL) continue;
				size_t bad = 0;
				int rc = anvil_json_strings(v, &c->keywords, &c->n, &bad);
				if (rc == -2) return "config: out of memory";
				if (rc < 0) return "config field \"keywords\": want a list of strings";
			} else if (anvil_json_key_is(k, "case_sensitive")) {
				if (v.type != ANVIL_JSON_NULL && anvil_json_bool(v, &c->case_sensitive) < 0) {
					*field = "case_sensitive";
					return "config field \"case_sensitive\": want a boolean";
				}
			} else if (anvil_json_key_is(k, "judge_check")) {
				if (v.type != ANVIL_JSON_NULL && anvil_json_bool(v, &c->judge_check) < 0) {
					*field = "judge_check";
					return "config field \"judge_check\": want a boolean";
				}
			} else {
				anvil_str name = {0};
				if (anvil_json_string(k, &name) < 0) return "config: unreadable key";
				/* The field is the key as written; keep it for the caller. */
				static char keybuf[256];
				snprintf(keybuf, sizeof keybuf, "%s", name.s);
				snprintf(msg, cap, "config: json: unknown field \"%s\"", name.s);
				anvil_str_free(&name);
				*field = keybuf;
				return msg;
			}
		}
	}
	if (c->n == 0) {
		return "keywords: at least one keyword is required";
	}
	for (size_t i = 0; i < c->n; i++) {
		if (c->keywords[i].n == 0) {
			snprintf(msg, cap, "keywords[%zu] is empty", i);
			return msg;
		}
	}
	return NULL;
}

static void lower_ascii(char *s, size_t n) {
	for (size_t i = 0; i < n; i++) {
		if (s[i] >= 'A' && s[i] <= 'Z') s[i] = (char)(s[i] - 'A' + 'a');
	}
}

static bool contains(const char *hay, size_t hn, const char *needle, size_t nn) {
	if (nn == 0) return true;
	if (nn > hn) return false;
	for (size_t i = 0; i + nn <= hn; i++) {
		if (hay[i] == needle[0] && memcmp(hay + i, needle, nn) == 0) return true;
	}
	return false;
}

/* Appends the keywords whose flag equals want, joined by ", ". */
static void w_join(anvil_w *w, const config *c, const bool *found, bool want) {
	anvil_w_array(w);
	for (size_t i = 0; i < c->n; i++) {
		if (found[i] == want) anvil_w_stringn(w, c->keywords[i].s, c->keywords[i].n);
	}
	anvil_w_array_end(w);
}

/* A growable text buffer for the reason and the prompt. */
typedef struct {
	char *s;
	size_t n, cap;
	bool oom;
} text;

static void put(text *t, const char *s, size_t n) {
	if (t->oom) return;
	if (t->n + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 128;
		while (cap < t->n + n + 1) cap *= 2;
		char *b = realloc(t->s, cap);
		if (!b) {
			t->oom = true;
			return;
		}
		t->s = b;
		t->cap = cap;
	}
	memcpy(t->s + t->n, s, n);
	t->n += n;
	t->s[t->n] = 0;
}

static void puts_(text *t, const char *s) { put(t, s, strlen(s)); }

static void join(text *t, const config *c, const bool *found, bool want) {
	bool first = true;
	for (size_t i = 0; i < c->n; i++) {
		if (!found || found[i] == want) {
			if (!first) puts_(t, ", ");
			put(t, c->keywords[i].s, c->keywords[i].n);
			first = false;
		}
	}
}

/* Asks the judge; 0 with *verdict, or -1 after writing the error result. */
static int judge(const config *c, const anvil_str *answer, double threshold, bool *verdict, int32_t *rc) {
	text prompt = {0};
	puts_(&prompt, "Does the following answer use these keywords in a meaningful way? Keywords: ");
	join(&prompt, c, NULL, true);
	puts_(&prompt, "\n\nAnswer:\n");
	put(&prompt, answer->s, answer->n);
	puts_(&prompt, "\n\nReturn only a JSON object {\"verdict\": true|false}.");
	if (prompt.oom) {
		free(prompt.s);
		*rc = anvil_measure_error(threshold, "metric_error", NULL, "out of memory");
		return -1;
	}
	anvil_w req;
	anvil_w_init(&req);
	anvil_w_object(&req);
	anvil_w_key(&req, "messages");
	anvil_w_array(&req);
	anvil_w_object(&req);
	anvil_w_key(&req, "role");
	anvil_w_string(&req, "user");
	anvil_w_key(&req, "content");
	anvil_w_stringn(&req, prompt.s, prompt.n);
	anvil_w_object_end(&req);
	anvil_w_array_end(&req);
	anvil_w_key(&req, "schema");
	anvil_w_raw(&req, VERDICT_SCHEMA, sizeof VERDICT_SCHEMA - 1);
	anvil_w_key(&req, "schema_name");
	anvil_w_string(&req, "keyword_check");
	anvil_w_key(&req, "temperature");
	anvil_w_int(&req, 0);
	anvil_w_key(&req, "purpose");
	anvil_w_string(&req, "keyword_check");
	anvil_w_object_end(&req);
	free(prompt.s);
	if (req.err) {
		anvil_w_free(&req);
		*rc = anvil_measure_error(threshold, "metric_error", NULL, "cannot build the judge request");
		return -1;
	}
	anvil_judged j;
	int ok = anvil_judge_one(req.buf, req.len, &j);
	anvil_w_free(&req);
	if (ok < 0) {
		/* The host's error as it is, code and message (the host fills in
		 * plugin and digest). */
		*rc = anvil_measure_error(threshold, j.code.s, NULL, j.message.s);
		anvil_judged_free(&j);
		return -1;
	}
	/* The parsed reply is "json"; without it, parse the reply text. */
	int got = anvil_json_bool(anvil_json_path(j.response, "json.verdict"), verdict);
	if (got < 0 && anvil_json_get(j.response, "json").type == ANVIL_JSON_NONE) {
		anvil_str content = {0};
		anvil_json doc;
		if (anvil_json_string(anvil_json_get(j.response, "content"), &content) == 0 &&
		    anvil_json_parse(content.s, content.n, &doc, NULL, NULL) == 0) {
			got = anvil_json_bool(anvil_json_get(doc, "verdict"), verdict);
		}
		anvil_str_free(&content);
	}
	anvil_judged_free(&j);
	if (got < 0) {
		*rc = anvil_measure_error(threshold, "judge_error", NULL, "keyword_check: the judge's reply has no boolean verdict");
		return -1;
	}
	return 0;
}

static int32_t score_case(anvil_json req, double threshold) {
	int32_t rc;
	config c;
	const char *field = NULL;
	char msg[512];
	const char *bad = read_config(anvil_json_get(req, "config"), &c, &field, msg, sizeof msg);
	if (bad) {
		anvil_strs_free(c.keywords, c.n);
		return anvil_measure_error(threshold, "invalid_config", field, bad);
	}

	anvil_str out = {0};
	if (anvil_json_string(anvil_json_path(req, "case.actual_output"), &out) < 0 || out.n == 0) {
		anvil_str id = {0};
		anvil_json_string(anvil_json_path(req, "case.id"), &id);
		anvil_w w;
		anvil_w_init(&w);
		/* The message quotes the id as Go's %q would for printable text. */
		anvil_w_object(&w);
		anvil_w_key(&w, "success");
		anvil_w_bool(&w, false);
		anvil_w_key(&w, "threshold");
		anvil_w_number(&w, threshold);
		anvil_w_key(&w, "error");
		text m = {0};
		puts_(&m, "case \"");
		if (id.s) put(&m, id.s, id.n);
		puts_(&m, "\" has no actual_output");
		anvil_w_error(&w, "missing_field", "actual_output", m.oom ? "case has no actual_output" : m.s);
		anvil_w_object_end(&w);
		free(m.s);
		anvil_str_free(&id);
		anvil_str_free(&out);
		anvil_strs_free(c.keywords, c.n);
		return anvil_w_output(&w);
	}

	bool *found = calloc(c.n, sizeof *found);
	char *hay = malloc(out.n + 1);
	if (!found || !hay) {
		free(found);
		free(hay);
		anvil_str_free(&out);
		anvil_strs_free(c.keywords, c.n);
		return anvil_measure_error(threshold, "metric_error", NULL, "out of memory");
	}
	memcpy(hay, out.s, out.n + 1);
	if (!c.case_sensitive) lower_ascii(hay, out.n);
	size_t nfound = 0;
	for (size_t i = 0; i < c.n; i++) {
		anvil_str *k = &c.keywords[i];
		char *needle = malloc(k->n + 1);
		if (!needle) {
			nfound = SIZE_MAX;
			break;
		}
		memcpy(needle, k->s, k->n + 1);
		if (!c.case_sensitive) lower_ascii(needle, k->n);
		found[i] = contains(hay, out.n, needle, k->n);
		free(needle);
		if (found[i]) nfound++;
	}
	free(hay);
	if (nfound == SIZE_MAX) {
		free(found);
		anvil_str_free(&out);
		anvil_strs_free(c.keywords, c.n);
		return anvil_measure_error(threshold, "metric_error", NULL, "out of memory");
	}

	double score = (double)nfound / (double)c.n;
	bool verdict = true;
	if (c.judge_check && judge(&c, &out, threshold, &verdict, &rc) < 0) {
		free(found);
		anvil_str_free(&out);
		anvil_strs_free(c.keywords, c.n);
		return rc;
	}
	if (!verdict) score = score / 2;

	text reason = {0};
	char head[96];
	snprintf(head, sizeof head, "found %zu of %zu keywords", nfound, c.n);
	puts_(&reason, head);
	if (nfound < c.n) {
		puts_(&reason, "; missing: ");
		join(&reason, &c, found, false);
	}
	if (!verdict) puts_(&reason, "; judge: not meaningful");

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
	anvil_w_stringn(&w, reason.s, reason.n);
	anvil_w_key(&w, "details");
	anvil_w_object(&w);
	anvil_w_key(&w, "found");
	w_join(&w, &c, found, true);
	anvil_w_key(&w, "missing");
	w_join(&w, &c, found, false);
	if (c.judge_check) {
		anvil_w_key(&w, "judge");
		anvil_w_bool(&w, verdict);
	}
	anvil_w_object_end(&w);
	anvil_w_object_end(&w);
	if (reason.oom) {
		anvil_w_free(&w);
		rc = anvil_measure_error(threshold, "metric_error", NULL, "out of memory");
	} else {
		rc = anvil_w_output(&w);
	}
	free(reason.s);
	free(found);
	anvil_str_free(&out);
	anvil_strs_free(c.keywords, c.n);
	return rc;
}

ANVIL_EXPORT("anvil_measure") int32_t measure(void) {
	size_t n = 0;
	char *in = anvil_input(&n);
	if (!in) return anvil_fail("cannot read the request: out of memory");
	anvil_json req;
	const char *err = NULL;
	size_t at = 0;
	if (anvil_json_parse(in, n, &req, &err, &at) < 0 || req.type != ANVIL_JSON_OBJECT) {
		char msg[160];
		snprintf(msg, sizeof msg, "decode request: %s at byte %zu", err ? err : "not a JSON object", at);
		free(in);
		return anvil_fail(msg);
	}
	double threshold = 0;
	anvil_json_number(anvil_json_get(req, "threshold"), &threshold);
	int32_t rc;
	if (!anvil_json_key_is(anvil_json_get(req, "kind"), KIND)) {
		anvil_str kind = {0};
		anvil_json_string(anvil_json_get(req, "kind"), &kind);
		char msg[300];
		snprintf(msg, sizeof msg, "plugin " PLUGIN " has no kind \"%.200s\"", kind.s ? kind.s : "");
		anvil_str_free(&kind);
		rc = anvil_measure_error(threshold, "abi_violation", NULL, msg);
	} else {
		rc = score_case(req, threshold);
	}
	free(in);
	return rc;
}
