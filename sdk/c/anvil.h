/*
 * anvil.h — write an Anvil plugin (ABI v1, Wasm transport) in C.
 *
 * One header, no other dependency than wasi-libc. It declares:
 *   - the Extism kernel functions (import module "extism:host/env") with
 *     their exact Wasm signatures, and the Anvil host functions
 *     anvil_judge, anvil_embed (ABI minor 5) and anvil_log (import module
 *     "extism:host/user");
 *   - input/output/error helpers over Extism memory blocks;
 *   - a small, bounded JSON reader (validate once, then look values up by
 *     key or dotted path; strings unescaped to UTF-8, \uXXXX and surrogate
 *     pairs included) and a JSON writer that escapes correctly;
 *   - helpers for the ABI's result messages, a one-request judge call, an
 *     embed call returning its vectors, and a conversational case's turns.
 *
 * The specification is abi/v1/README.md in the Anvil repository; section
 * "Building a C guest" there matches what is described here.
 *
 * USE
 *
 *   In exactly one .c file of the plugin:
 *
 *       #define ANVIL_IMPLEMENTATION
 *       #include "anvil.h"
 *
 *   Other files include "anvil.h" without the define. The implementation
 *   section also defines the ABI marker export anvil_abi_v1; define
 *   ANVIL_NO_MARKER before including to leave it out.
 *
 *   Write the exports yourself, each `() -> i32`:
 *
 *       ANVIL_EXPORT("anvil_describe") int32_t describe(void) { ... }
 *       ANVIL_EXPORT("anvil_measure")  int32_t measure(void)  { ... }
 *
 *   Return 0 when an output was set — including a result whose "error" is
 *   set (a metric error: bad config, missing field, a judge failure).
 *   Return non-zero only when the request cannot be read at all; call
 *   anvil_fail(msg), which sets the Extism error and returns 1.
 *
 * BUILD (Debian: apt-get install clang lld wasi-libc libclang-rt-dev-wasm32)
 *
 *       clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wl,--strip-all \
 *             -I path/to/sdk/c -o plugin.wasm plugin.c
 *
 *   The module is a WASI *reactor*: it has no _start and no main. The
 *   reactor start file (crt1-reactor.o) exports _initialize, which runs the
 *   C constructors and sets up libc. Extism calls _initialize once per
 *   instance, before the first export call (Anvil's host makes that first
 *   call anvil_describe, when it warms a new instance), and never calls
 *   _start. Globals then persist from one invocation to the next on the
 *   same instance, but instances are created and discarded at the host's
 *   will: never let a result depend on them. Exports are marked with
 *   export_name attributes (ANVIL_EXPORT), so no -Wl,--export flags are
 *   needed. A "command" build (with main) is wrong for a plugin: its
 *   _start would run main and then tear libc down.
 *
 * MEMORY MODEL
 *
 *   Payloads live in Extism memory — the kernel's memory, not the module's
 *   linear memory — addressed by 64-bit offsets (anvil_mem). Copy them in
 *   and out with the kernel's load/store functions; the helpers below do
 *   that and hand you malloc'd buffers. Lengths are UTF-8 byte counts.
 *
 * SANDBOX
 *
 *   No files, network, environment or real clock; stdout is discarded,
 *   stderr is kept (8 KiB) and shown only when the guest traps. Use
 *   anvil_log for diagnostics. Extism's own log_* functions are accepted
 *   and dropped by Anvil's host.
 *
 * Every helper is bounded: malformed JSON, a wrong type, a missing key or
 * an allocation failure is reported as a return value, never undefined
 * behaviour. Nothing here is thread-safe; a Wasm instance is never called
 * concurrently.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
#ifndef ANVIL_H
#define ANVIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header's helpers speak: up to minor 5 (anvil_embed; minor 4
 * added conversational cases). A descriptor says the lowest minor whose
 * features its plugin uses (abi/v1/README.md section 5): "abi_minor":0 for
 * one that only judges and logs; 1 or more when it lists capabilities per
 * kind (a KindDescriptor "capabilities" field); 4 when a kind reads turns;
 * 5 when it calls anvil_embed. */
#define ANVIL_ABI_MAJOR 1
#define ANVIL_ABI_MINOR 5

/* Marks a function as a Wasm export named name. */
#define ANVIL_EXPORT(name) __attribute__((export_name(name), visibility("default")))
#define ANVIL__IMPORT(mod, name) __attribute__((import_module(mod), import_name(name)))
#define ANVIL_KERNEL(name) ANVIL__IMPORT("extism:host/env", name)
#define ANVIL_HOST(name) ANVIL__IMPORT("extism:host/user", name)

/* Offset of a block in Extism memory (0 is never a block). */
typedef uint64_t anvil_mem;

/* ---- Extism kernel, module "extism:host/env" -------------------------
 * Wasm signatures are in the comments: i64 is uint64_t, i32 is uint32_t or
 * int32_t. Offsets passed to input_load_* are positions in the input
 * (0 .. input_length-1); offsets passed to load_/store_* are absolute
 * Extism memory offsets (a block's offset plus a position in it). */
ANVIL_KERNEL("input_length")   uint64_t  anvil_kernel_input_length(void);                 /* () -> i64 */
ANVIL_KERNEL("input_load_u8")  uint32_t  anvil_kernel_input_load_u8(uint64_t pos);        /* (i64) -> i32 */
ANVIL_KERNEL("input_load_u64") uint64_t  anvil_kernel_input_load_u64(uint64_t pos);       /* (i64) -> i64 */
ANVIL_KERNEL("alloc")          anvil_mem anvil_kernel_alloc(uint64_t n);                  /* (i64) -> i64 */
ANVIL_KERNEL("free")           void      anvil_kernel_free(anvil_mem block);              /* (i64) -> () */
ANVIL_KERNEL("length")         uint64_t  anvil_kernel_length(anvil_mem block);            /* (i64) -> i64 */
ANVIL_KERNEL("length_unsafe")  uint64_t  anvil_kernel_length_unsafe(anvil_mem block);     /* (i64) -> i64 */
ANVIL_KERNEL("load_u8")        uint32_t  anvil_kernel_load_u8(uint64_t off);              /* (i64) -> i32 */
ANVIL_KERNEL("load_u64")       uint64_t  anvil_kernel_load_u64(uint64_t off);             /* (i64) -> i64 */
ANVIL_KERNEL("store_u8")       void      anvil_kernel_store_u8(uint64_t off, uint32_t v); /* (i64, i32) -> () */
ANVIL_KERNEL("store_u64")      void      anvil_kernel_store_u64(uint64_t off, uint64_t v);/* (i64, i64) -> () */
ANVIL_KERNEL("output_set")     void      anvil_kernel_output_set(anvil_mem block, uint64_t n); /* (i64, i64) -> () */
ANVIL_KERNEL("error_set")      void      anvil_kernel_error_set(anvil_mem block);         /* (i64) -> () */
ANVIL_KERNEL("config_get")     anvil_mem anvil_kernel_config_get(anvil_mem key);          /* (i64) -> i64; Anvil: always 0 */
ANVIL_KERNEL("var_get")        anvil_mem anvil_kernel_var_get(anvil_mem key);             /* (i64) -> i64; Anvil: always 0 */
ANVIL_KERNEL("var_set")        void      anvil_kernel_var_set(anvil_mem key, anvil_mem v);/* (i64, i64) -> (); Anvil: no capacity */
ANVIL_KERNEL("log_debug")      void      anvil_kernel_log_debug(anvil_mem msg);           /* (i64) -> (); Anvil: dropped */
ANVIL_KERNEL("log_info")       void      anvil_kernel_log_info(anvil_mem msg);            /* (i64) -> (); Anvil: dropped */
ANVIL_KERNEL("log_warn")       void      anvil_kernel_log_warn(anvil_mem msg);            /* (i64) -> (); Anvil: dropped */
ANVIL_KERNEL("log_error")      void      anvil_kernel_log_error(anvil_mem msg);           /* (i64) -> (); Anvil: dropped */
ANVIL_KERNEL("get_log_level")  int32_t   anvil_kernel_get_log_level(void);                /* () -> i32 */

/* ---- Anvil host functions, module "extism:host/user" ------------------
 * anvil_judge: the argument is a block holding a JudgeBatch, the result a
 * block holding a JudgeBatchResult. anvil_embed (ABI minor 5): an
 * EmbedRequest, answered with an EmbedResult. anvil_log: a block holding a
 * LogRecord. Import only what you use: an unused declaration adds no
 * import, so a plugin that never calls anvil_embed still loads on a host
 * older than minor 5 (which refuses a module importing it). */
ANVIL_HOST("anvil_judge") anvil_mem anvil_host_judge(anvil_mem batch);   /* (i64) -> i64 */
ANVIL_HOST("anvil_embed") anvil_mem anvil_host_embed(anvil_mem request); /* (i64) -> i64 */
ANVIL_HOST("anvil_log")   void      anvil_host_log(anvil_mem record);    /* (i64) -> () */

/* ---- Memory, input, output -------------------------------------------- */

/* anvil_input copies the export's input into a malloc'd buffer with a
 * terminating NUL (not counted in *len). NULL when out of memory. */
char *anvil_input(size_t *len);
/* anvil_mem_write copies n bytes into a new Extism block; 0 when n is 0
 * or the block cannot be allocated. */
anvil_mem anvil_mem_write(const void *p, size_t n);
/* anvil_mem_read copies a block into a malloc'd, NUL-terminated buffer
 * (*len excludes the NUL). NULL for offset 0 or out of memory. */
char *anvil_mem_read(anvil_mem block, size_t *len);
/* anvil_output sets the export's output to n bytes of p (UTF-8 JSON).
 * Returns 0, or -1 when no block could be allocated. */
int anvil_output(const void *p, size_t n);
/* anvil_fail sets the Extism error to msg and returns 1: the value an
 * export returns on ABI misuse (the request could not be read). */
int32_t anvil_fail(const char *msg);

/* ---- JSON reader -------------------------------------------------------
 * anvil_json_parse validates a whole document (RFC 8259: one value, valid
 * UTF-8, depth <= ANVIL_JSON_MAX_DEPTH) and returns its root. Every other
 * reader function takes values obtained from it (or from each other): they
 * point into the caller's buffer, which must outlive them. A lookup that
 * fails returns a value of type ANVIL_JSON_NONE, which every function
 * accepts, so lookups can be chained without checks in between. */
#ifndef ANVIL_JSON_MAX_DEPTH
#define ANVIL_JSON_MAX_DEPTH 64
#endif

typedef enum {
	ANVIL_JSON_NONE = 0, /* absent / not found / invalid */
	ANVIL_JSON_NULL,
	ANVIL_JSON_FALSE,
	ANVIL_JSON_TRUE,
	ANVIL_JSON_NUMBER,
	ANVIL_JSON_STRING,
	ANVIL_JSON_ARRAY,
	ANVIL_JSON_OBJECT
} anvil_json_type;

typedef struct {
	const char *p;        /* first byte of the value's text */
	size_t n;             /* length of the text */
	anvil_json_type type;
} anvil_json;

/* A decoded string: s is malloc'd and NUL-terminated; n excludes the NUL
 * (a string may contain U+0000, so prefer n to strlen). */
typedef struct {
	char *s;
	size_t n;
} anvil_str;

/* Returns 0 and the root, or -1 with *err (static text, may be NULL) and
 * *at (byte offset of the fault, may be NULL). */
int anvil_json_parse(const char *text, size_t n, anvil_json *root, const char **err, size_t *at);
/* Member of an object by exact (case-sensitive) key; the first one if a
 * key repeats. NONE when obj is not an object or has no such key. */
anvil_json anvil_json_get(anvil_json obj, const char *key);
/* Dotted path of object keys: "case.actual_output", "config.keywords". */
anvil_json anvil_json_path(anvil_json v, const char *path);
/* Iterate an object: start with *it = 0; returns true and the next member
 * (key is a STRING value: compare it with anvil_json_key_is, decode it
 * with anvil_json_string) until the members are exhausted. */
bool anvil_json_member(anvil_json obj, size_t *it, anvil_json *key, anvil_json *val);
/* Iterate an array the same way. */
bool anvil_json_item(anvil_json arr, size_t *it, anvil_json *item);
/* Items of an array (0 for anything else). */
size_t anvil_json_count(anvil_json arr);
/* Element i of an array, NONE past the end. */
anvil_json anvil_json_at(anvil_json arr, size_t i);
/* Whether a STRING value decodes to exactly the NUL-terminated s. */
bool anvil_json_key_is(anvil_json str, const char *s);
/* A STRING value decoded to UTF-8 (escapes resolved; a lone surrogate
 * becomes U+FFFD). 0, or -1 when v is not a string or out of memory. */
int anvil_json_string(anvil_json v, anvil_str *out);
/* A BOOL value. 0, or -1 when v is not true/false. */
int anvil_json_bool(anvil_json v, bool *out);
/* A NUMBER value as a double. 0, or -1 when v is not a number or is out of
 * a double's range. */
int anvil_json_number(anvil_json v, double *out);
/* An array of strings, decoded: *items is a malloc'd array of *n strings
 * (free with anvil_strs_free). 0; -1 when v is not an array or an item is
 * not a string (*bad, if not NULL, is that item's index); -2 out of
 * memory. */
int anvil_json_strings(anvil_json v, anvil_str **items, size_t *n, size_t *bad);
void anvil_strs_free(anvil_str *items, size_t n);
void anvil_str_free(anvil_str *s);

/* ---- JSON writer -------------------------------------------------------
 * A growable buffer with commas placed for you: open containers with
 * anvil_w_object/anvil_w_array, write members with anvil_w_key followed by
 * one value. Any fault (out of memory, nesting too deep, a NaN or infinite
 * number, a value where a key is due) sets w->err and stops writing;
 * check it once at the end (anvil_w_output does). Strings are escaped as
 * JSON requires; invalid UTF-8 is written as U+FFFD, as Go's encoder does. */
typedef struct {
	char *buf;
	size_t len, cap;
	const char *err; /* first fault, static text; NULL while all is well */
	unsigned depth;
	bool after_key;
	bool has[ANVIL_JSON_MAX_DEPTH + 1];        /* container at depth has a member */
	unsigned char kind[ANVIL_JSON_MAX_DEPTH + 1]; /* 'o' or 'a' */
} anvil_w;

void anvil_w_init(anvil_w *w);
void anvil_w_free(anvil_w *w);
void anvil_w_object(anvil_w *w);
void anvil_w_object_end(anvil_w *w);
void anvil_w_array(anvil_w *w);
void anvil_w_array_end(anvil_w *w);
void anvil_w_key(anvil_w *w, const char *key);
void anvil_w_string(anvil_w *w, const char *s);
void anvil_w_stringn(anvil_w *w, const char *s, size_t n);
void anvil_w_bool(anvil_w *w, bool b);
void anvil_w_null(anvil_w *w);
/* Shortest text that reads back as the same double. */
void anvil_w_number(anvil_w *w, double d);
void anvil_w_int(anvil_w *w, int64_t i);
/* A value from the reader, copied verbatim. */
void anvil_w_json(anvil_w *w, anvil_json v);
/* Trusted, already-valid JSON text, copied verbatim. */
void anvil_w_raw(anvil_w *w, const char *text, size_t n);
/* Finish: the buffer must hold one complete value. On success sets the
 * export's output and returns 0; otherwise sets the Extism error and
 * returns 1. Frees the buffer either way. */
int32_t anvil_w_output(anvil_w *w);

/* ---- ABI helpers ------------------------------------------------------- */

/* Writes an Error object ({"code", "message", "field"?}) as the current
 * value. field may be NULL or "". */
void anvil_w_error(anvil_w *w, const char *code, const char *field, const char *message);
/* Outputs a MeasureResult carrying only an error:
 * {"success":false,"threshold":T,"error":{...}}. Returns the export's
 * return code (0, or 1 when nothing could be written). */
int32_t anvil_measure_error(double threshold, const char *code, const char *field, const char *message);

/* anvil_log sends one LogRecord ("debug", "info", "warn" or "error").
 * Records past the host's per-invocation limits are dropped there. */
void anvil_log(const char *level, const char *message);

/* anvil_judge sends one JudgeBatch (JSON text) and returns the
 * JudgeBatchResult text, malloc'd and NUL-terminated, or NULL when no
 * block could be allocated. Needs the "judge" capability, asked for in the
 * descriptor and granted by the operator; otherwise the host answers every
 * batch with error.code "capability_denied". */
char *anvil_judge(const char *batch, size_t n, size_t *out_len);

/* The outcome of a one-request batch (anvil_judge_one). */
typedef struct {
	char *raw;          /* the JudgeBatchResult text (owned) */
	anvil_json doc;     /* its root */
	anvil_json response;/* responses[0], NONE on error */
	anvil_str code;     /* on error: the host's error code ("judge_error", "budget_exhausted", ...) */
	anvil_str message;  /* on error: its message */
} anvil_judged;

/* anvil_judge_one sends the single JudgeRequest request_json (one JSON
 * object) in a batch of one. Returns 0 with out->response set to the
 * response (its "json", "content", "score", "usage" members); or -1 with
 * out->code/out->message set from the batch's error or the response's
 * error (code kept as the host sent it, so a guest can propagate it), or
 * "metric_error" when the result could not be read. Always release with
 * anvil_judged_free. */
int anvil_judge_one(const char *request_json, size_t n, anvil_judged *out);
void anvil_judged_free(anvil_judged *j);

/* ---- Embeddings (ABI minor 5) -------------------------------------------
 * anvil_embed turns texts into vectors with the embedding model of a
 * configured judge, through the host (abi/v1/README.md sections 3, 7.8):
 * cached per text, limited, retried and accounted like a judge call; it
 * needs the "judge" capability and counts as one judge call. */

/* The most texts one request may carry (abi.MaxEmbedTexts). */
#define ANVIL_EMBED_MAX_TEXTS 2048

/* The outcome of anvil_embed. */
typedef struct {
	char *raw;         /* the EmbedResult text (owned) */
	anvil_json doc;    /* its root */
	anvil_json usage;  /* its "usage" object (calls, input_tokens, usd, cache_hit, ...) */
	double *values;    /* on success: n vectors of dims numbers, row by row (owned) */
	size_t n, dims;
	anvil_str code;    /* on error: the host's error code ("capability_denied", "budget_exhausted", "invalid_config", ...) */
	anvil_str message; /* on error: its message */
} anvil_embedded;

/* anvil_embed sends one EmbedRequest of the n texts (lens[i] bytes of
 * UTF-8 each; lens may be NULL for NUL-terminated texts) to the judge
 * named judge (NULL or "": the metric's judge), labelled purpose (NULL or
 * "": none). Returns 0 with out->values holding one vector per text, in
 * order, all of out->dims numbers (anvil_embedded_vector(out, i) is text
 * i's); or -1 with out->code/out->message: the host's error, code kept as
 * the host sent it (a request fails whole), or "abi_violation" for n
 * outside 1..ANVIL_EMBED_MAX_TEXTS and for a result that breaks the ABI
 * (not n vectors of one non-zero length of numbers), or "metric_error"
 * when out of memory or the result could not be read. Always release
 * with anvil_embedded_free. */
int anvil_embed(const char *judge, const char *const *texts, const size_t *lens, size_t n, const char *purpose,
                anvil_embedded *out);
/* Vector i (out->dims numbers), NULL past the end or after an error. */
const double *anvil_embedded_vector(const anvil_embedded *e, size_t i);
void anvil_embedded_free(anvil_embedded *e);

/* ---- Conversational cases (ABI minor 4) ---------------------------------
 * A case with turns is conversational (abi/v1/README.md section 8.1). The
 * JSON reader reaches them like every other field:
 *
 *     anvil_json turns = anvil_json_path(root, "case.turns");  // ARRAY, or NONE
 *     size_t it = 0; anvil_json item;
 *     while (anvil_json_item(turns, &it, &item)) { anvil_turn t; anvil_turn_read(item, &t); ...; anvil_turn_free(&t); }
 *
 * and "case.scenario", "case.expected_outcome", "case.chatbot_role" are
 * strings. A kind that needs turns lists "turns" in its required_fields
 * (the host then reports a single-turn case as missing_field); the derived
 * field names "last_user_turn" and "last_assistant_turn" are
 * anvil_last_turn's. */
#define ANVIL_ROLE_USER "user"
#define ANVIL_ROLE_ASSISTANT "assistant"
#define ANVIL_ROLE_SYSTEM "system"
#define ANVIL_ROLE_TOOL "tool"

typedef struct {
	anvil_str role;               /* "user", "assistant", "system" or "tool" */
	anvil_str content;            /* empty only in a turn of tools only */
	anvil_json tools_called;      /* array of ToolCall, or NONE */
	anvil_json retrieval_context; /* array of strings, or NONE */
} anvil_turn;

/* anvil_turn_read decodes one item of "turns". 0; -1 when item is not an
 * object whose role and content are strings (content may be absent in a
 * turn of tools only: it reads as ""); -2 out of memory. Release with
 * anvil_turn_free whatever it returned. */
int anvil_turn_read(anvil_json item, anvil_turn *out);
void anvil_turn_free(anvil_turn *t);
/* anvil_last_turn: the content of the last turn of role whose content is
 * not empty — what the derived fields last_user_turn (role "user") and
 * last_assistant_turn ("assistant") name. 0 with *out set (free with
 * anvil_str_free); 1 when there is no such turn (*out empty); -2 out of
 * memory. */
int anvil_last_turn(anvil_json turns, const char *role, anvil_str *out);

/* ---- Required fields ------------------------------------------------------
 * anvil_case_has: whether the case (the request's "case" object) has field,
 * by abi/v1/README.md section 8's presence rules: input, actual_output,
 * expected_output, scenario, expected_outcome, chatbot_role a non-empty
 * string; context, retrieval_context an array with an item that has a
 * character other than white space (section 8's list: U+0009-U+000D,
 * U+0020, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
 * U+205F, U+3000, as the host has it); tools_called, expected_tools, turns
 * a non-empty array; last_user_turn, last_assistant_turn a turn of that
 * role with content; any other name a key of "extra" whose value is
 * neither null nor "". anvil_case_missing: the first of the n fields the
 * case lacks, or NULL — answer it with
 * anvil_measure_error(threshold, "missing_field", name, message), as a
 * kind must for the fields it lists in required_fields (the host checks
 * them too, but a kind is called by conformance tools and older hosts). */
bool anvil_case_has(anvil_json c, const char *field);
const char *anvil_case_missing(anvil_json c, const char *const *fields, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* ANVIL_H */

/* ======================================================================
 * Implementation
 * ====================================================================== */
#ifdef ANVIL_IMPLEMENTATION
#ifndef ANVIL_IMPLEMENTATION_DONE
#define ANVIL_IMPLEMENTATION_DONE

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ANVIL_NO_MARKER
/* The ABI marker: its presence says this module speaks ABI major 1. */
ANVIL_EXPORT("anvil_abi_v1") void anvil_abi_v1(void) {}
#endif

/* ---- memory ---- */

char *anvil_input(size_t *len) {
	uint64_t n = anvil_kernel_input_length();
	if (n >= SIZE_MAX) {
		return NULL;
	}
	char *buf = (char *)malloc((size_t)n + 1);
	if (!buf) {
		return NULL;
	}
	uint64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v = anvil_kernel_input_load_u64(i);
		memcpy(buf + i, &v, 8); /* wasm32 is little-endian, as Extism memory */
	}
	for (; i < n; i++) {
		buf[i] = (char)(anvil_kernel_input_load_u8(i) & 0xff);
	}
	buf[n] = 0;
	if (len) {
		*len = (size_t)n;
	}
	return buf;
}

anvil_mem anvil_mem_write(const void *p, size_t n) {
	if (n == 0) {
		return 0;
	}
	anvil_mem off = anvil_kernel_alloc((uint64_t)n);
	if (off == 0) {
		return 0;
	}
	const unsigned char *b = (const unsigned char *)p;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v;
		memcpy(&v, b + i, 8);
		anvil_kernel_store_u64(off + i, v);
	}
	for (; i < n; i++) {
		anvil_kernel_store_u8(off + i, b[i]);
	}
	return off;
}

char *anvil_mem_read(anvil_mem block, size_t *len) {
	if (block == 0) {
		return NULL;
	}
	uint64_t n = anvil_kernel_length(block);
	if (n >= SIZE_MAX) {
		return NULL;
	}
	char *buf = (char *)malloc((size_t)n + 1);
	if (!buf) {
		return NULL;
	}
	uint64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v = anvil_kernel_load_u64(block + i);
		memcpy(buf + i, &v, 8);
	}
	for (; i < n; i++) {
		buf[i] = (char)(anvil_kernel_load_u8(block + i) & 0xff);
	}
	buf[n] = 0;
	if (len) {
		*len = (size_t)n;
	}
	return buf;
}

int anvil_output(const void *p, size_t n) {
	anvil_mem off = anvil_mem_write(p, n);
	if (off == 0) {
		return -1;
	}
	anvil_kernel_output_set(off, (uint64_t)n);
	return 0;
}

int32_t anvil_fail(const char *msg) {
	if (!msg || !*msg) {
		msg = "plugin failed";
	}
	anvil_mem off = anvil_mem_write(msg, strlen(msg));
	if (off != 0) {
		anvil_kernel_error_set(off);
	}
	return 1;
}

/* ---- JSON reader ---- */

typedef struct {
	const unsigned char *s, *end, *start;
	const char *err;
} anvil__rd;

static void anvil__ws(anvil__rd *r) {
	while (r->s < r->end && (*r->s == ' ' || *r->s == '\t' || *r->s == '\n' || *r->s == '\r')) {
		r->s++;
	}
}

static int anvil__hex(unsigned c) {
	if (c >= '0' && c <= '9') return (int)(c - '0');
	if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
	return -1;
}

/* Length of a valid UTF-8 sequence at s (bounded by end), 0 if invalid. */
static size_t anvil__utf8(const unsigned char *s, const unsigned char *end) {
	unsigned c = s[0];
	size_t n = (size_t)(end - s);
	if (c < 0x80) return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
	}
	if (c >= 0xE0 && c <= 0xEF) {
		if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
		if (c == 0xE0 && s[1] < 0xA0) return 0; /* overlong */
		if (c == 0xED && s[1] > 0x9F) return 0; /* surrogate */
		return 3;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
		if (c == 0xF0 && s[1] < 0x90) return 0; /* overlong */
		if (c == 0xF4 && s[1] > 0x8F) return 0; /* > U+10FFFF */
		return 4;
	}
	return 0;
}

static int anvil__rstring(anvil__rd *r) {
	r->s++; /* opening quote */
	while (r->s < r->end) {
		unsigned c = *r->s;
		if (c == '"') {
			r->s++;
			return 0;
		}
		if (c < 0x20) {
			r->err = "control character in string";
			return -1;
		}
		if (c == '\\') {
			if (r->end - r->s < 2) break;
			unsigned e = r->s[1];
			if (e == 'u') {
				if (r->end - r->s < 6) break;
				for (int k = 2; k < 6; k++) {
					if (anvil__hex(r->s[k]) < 0) {
						r->err = "bad \\u escape";
						return -1;
					}
				}
				r->s += 6;
				continue;
			}
			if (!strchr("\"\\/bfnrt", (int)e) || e == 0) {
				r->err = "bad escape";
				return -1;
			}
			r->s += 2;
			continue;
		}
		size_t k = anvil__utf8(r->s, r->end);
		if (k == 0) {
			r->err = "invalid UTF-8";
			return -1;
		}
		r->s += k;
	}
	r->err = "unterminated string";
	return -1;
}

static int anvil__rnumber(anvil__rd *r) {
	const unsigned char *s = r->s, *e = r->end;
	if (s < e && *s == '-') s++;
	if (s >= e) goto bad;
	if (*s == '0') {
		s++;
	} else if (*s >= '1' && *s <= '9') {
		while (s < e && *s >= '0' && *s <= '9') s++;
	} else {
		goto bad;
	}
	if (s < e && *s == '.') {
		s++;
		if (s >= e || *s < '0' || *s > '9') goto bad;
		while (s < e && *s >= '0' && *s <= '9') s++;
	}
	if (s < e && (*s == 'e' || *s == 'E')) {
		s++;
		if (s < e && (*s == '+' || *s == '-')) s++;
		if (s >= e || *s < '0' || *s > '9') goto bad;
		while (s < e && *s >= '0' && *s <= '9') s++;
	}
	r->s = s;
	return 0;
bad:
	r->err = "bad number";
	return -1;
}

static int anvil__lit(anvil__rd *r, const char *lit) {
	size_t n = strlen(lit);
	if ((size_t)(r->end - r->s) < n || memcmp(r->s, lit, n) != 0) {
		r->err = "invalid literal";
		return -1;
	}
	r->s += n;
	return 0;
}

static int anvil__rvalue(anvil__rd *r, unsigned depth) {
	anvil__ws(r);
	if (r->s >= r->end) {
		r->err = "unexpected end of input";
		return -1;
	}
	switch (*r->s) {
	case '"':
		return anvil__rstring(r);
	case 't':
		return anvil__lit(r, "true");
	case 'f':
		return anvil__lit(r, "false");
	case 'n':
		return anvil__lit(r, "null");
	case '{':
	case '[': {
		unsigned char close = *r->s == '{' ? '}' : ']';
		bool obj = close == '}';
		if (depth >= ANVIL_JSON_MAX_DEPTH) {
			r->err = "nesting too deep";
			return -1;
		}
		r->s++;
		anvil__ws(r);
		if (r->s < r->end && *r->s == close) {
			r->s++;
			return 0;
		}
		for (;;) {
			if (obj) {
				anvil__ws(r);
				if (r->s >= r->end || *r->s != '"') {
					r->err = "expected a key";
					return -1;
				}
				if (anvil__rstring(r) < 0) return -1;
				anvil__ws(r);
				if (r->s >= r->end || *r->s != ':') {
					r->err = "expected ':'";
					return -1;
				}
				r->s++;
			}
			if (anvil__rvalue(r, depth + 1) < 0) return -1;
			anvil__ws(r);
			if (r->s < r->end && *r->s == ',') {
				r->s++;
				continue;
			}
			if (r->s < r->end && *r->s == close) {
				r->s++;
				return 0;
			}
			r->err = obj ? "expected ',' or '}'" : "expected ',' or ']'";
			return -1;
		}
	}
	default:
		if (*r->s == '-' || (*r->s >= '0' && *r->s <= '9')) {
			return anvil__rnumber(r);
		}
		r->err = "unexpected character";
		return -1;
	}
}

static anvil_json_type anvil__type(unsigned char c) {
	switch (c) {
	case '"': return ANVIL_JSON_STRING;
	case '{': return ANVIL_JSON_OBJECT;
	case '[': return ANVIL_JSON_ARRAY;
	case 't': return ANVIL_JSON_TRUE;
	case 'f': return ANVIL_JSON_FALSE;
	case 'n': return ANVIL_JSON_NULL;
	default: return (c == '-' || (c >= '0' && c <= '9')) ? ANVIL_JSON_NUMBER : ANVIL_JSON_NONE;
	}
}

static const anvil_json anvil__none = {NULL, 0, ANVIL_JSON_NONE};

int anvil_json_parse(const char *text, size_t n, anvil_json *root, const char **err, size_t *at) {
	anvil__rd r = {(const unsigned char *)text, (const unsigned char *)text + n, (const unsigned char *)text, NULL};
	if (root) *root = anvil__none;
	if (!text) {
		if (err) *err = "no input";
		if (at) *at = 0;
		return -1;
	}
	anvil__ws(&r);
	const unsigned char *begin = r.s;
	if (anvil__rvalue(&r, 0) == 0) {
		const unsigned char *stop = r.s;
		anvil__ws(&r);
		if (r.s == r.end) {
			if (root) {
				root->p = (const char *)begin;
				root->n = (size_t)(stop - begin);
				root->type = anvil__type(*begin);
			}
			return 0;
		}
		r.err = "data after the value";
	}
	if (err) *err = r.err;
	if (at) *at = (size_t)(r.s - r.start);
	return -1;
}

/* Skips one value of an already validated document; bounded by end. */
static const unsigned char *anvil__skip(const unsigned char *s, const unsigned char *end) {
	if (s >= end) return end;
	if (*s == '"') {
		s++;
		while (s < end && *s != '"') {
			s += (*s == '\\' && end - s >= 2) ? 2 : 1;
		}
		return s < end ? s + 1 : end;
	}
	if (*s == '{' || *s == '[') {
		unsigned depth = 0;
		while (s < end) {
			unsigned char c = *s;
			if (c == '"') {
				s = anvil__skip(s, end);
				continue;
			}
			if (c == '{' || c == '[') depth++;
			if (c == '}' || c == ']') {
				if (--depth == 0) return s + 1;
			}
			s++;
		}
		return end;
	}
	while (s < end && *s != ',' && *s != '}' && *s != ']' && *s != ' ' && *s != '\t' && *s != '\n' && *s != '\r') {
		s++;
	}
	return s;
}

static const unsigned char *anvil__skipws(const unsigned char *s, const unsigned char *end) {
	while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')) s++;
	return s;
}

static anvil_json anvil__at(const unsigned char *s, const unsigned char *end) {
	anvil_json v = anvil__none;
	if (s >= end) return v;
	v.type = anvil__type(*s);
	if (v.type == ANVIL_JSON_NONE) return v;
	v.p = (const char *)s;
	v.n = (size_t)(anvil__skip(s, end) - s);
	return v;
}

/* Iteration shared by objects and arrays: *it is the byte position of the
 * next element relative to the container's first byte (0: not started). */
static bool anvil__next(anvil_json c, anvil_json_type want, size_t *it, anvil_json *key, anvil_json *val) {
	if (c.type != want || !it || c.n < 2) return false;
	const unsigned char *base = (const unsigned char *)c.p, *end = base + c.n - 1; /* end at the closing bracket */
	const unsigned char *s = base + (*it == 0 ? 1 : *it);
	if (s >= end) return false;
	s = anvil__skipws(s, end);
	if (s < end && *s == ',') s = anvil__skipws(s + 1, end);
	if (s >= end) return false;
	if (want == ANVIL_JSON_OBJECT) {
		anvil_json k = anvil__at(s, end);
		if (k.type != ANVIL_JSON_STRING) return false;
		s = anvil__skipws(s + k.n, end);
		if (s >= end || *s != ':') return false;
		s = anvil__skipws(s + 1, end);
		if (key) *key = k;
	}
	anvil_json v = anvil__at(s, end);
	if (v.type == ANVIL_JSON_NONE) return false;
	if (val) *val = v;
	*it = (size_t)(s + v.n - base);
	return true;
}

bool anvil_json_member(anvil_json obj, size_t *it, anvil_json *key, anvil_json *val) {
	return anvil__next(obj, ANVIL_JSON_OBJECT, it, key, val);
}

bool anvil_json_item(anvil_json arr, size_t *it, anvil_json *item) {
	return anvil__next(arr, ANVIL_JSON_ARRAY, it, NULL, item);
}

size_t anvil_json_count(anvil_json arr) {
	size_t it = 0, n = 0;
	anvil_json v;
	while (anvil_json_item(arr, &it, &v)) n++;
	return n;
}

anvil_json anvil_json_at(anvil_json arr, size_t i) {
	size_t it = 0, k = 0;
	anvil_json v;
	while (anvil_json_item(arr, &it, &v)) {
		if (k++ == i) return v;
	}
	return anvil__none;
}

/* Decodes one character of a string body at *s (bounded by end) into out
 * (up to 4 bytes); returns the number of bytes written, 0 at the closing
 * quote or on malformed text. */
static size_t anvil__char(const unsigned char **sp, const unsigned char *end, unsigned char out[4]) {
	const unsigned char *s = *sp;
	if (s >= end || *s == '"') return 0;
	if (*s != '\\') {
		size_t k = anvil__utf8(s, end);
		if (k == 0) return 0;
		memcpy(out, s, k);
		*sp = s + k;
		return k;
	}
	if (end - s < 2) return 0;
	unsigned e = s[1];
	unsigned long cp;
	s += 2;
	switch (e) {
	case '"': cp = '"'; break;
	case '\\': cp = '\\'; break;
	case '/': cp = '/'; break;
	case 'b': cp = '\b'; break;
	case 'f': cp = '\f'; break;
	case 'n': cp = '\n'; break;
	case 'r': cp = '\r'; break;
	case 't': cp = '\t'; break;
	case 'u': {
		if (end - s < 4) return 0;
		cp = 0;
		for (int k = 0; k < 4; k++) {
			int h = anvil__hex(s[k]);
			if (h < 0) return 0;
			cp = cp * 16 + (unsigned long)h;
		}
		s += 4;
		if (cp >= 0xD800 && cp <= 0xDBFF) {
			unsigned long lo = 0;
			bool pair = end - s >= 6 && s[0] == '\\' && s[1] == 'u';
			for (int k = 0; pair && k < 4; k++) {
				int h = anvil__hex(s[2 + k]);
				if (h < 0) pair = false;
				else lo = lo * 16 + (unsigned long)h;
			}
			if (pair && lo >= 0xDC00 && lo <= 0xDFFF) {
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				s += 6;
			} else {
				cp = 0xFFFD;
			}
		} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
			cp = 0xFFFD;
		}
		break;
	}
	default:
		return 0;
	}
	*sp = s;
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xC0 | (cp >> 6));
		out[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xE0 | (cp >> 12));
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (unsigned char)(0xF0 | (cp >> 18));
	out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}

bool anvil_json_key_is(anvil_json str, const char *want) {
	if (str.type != ANVIL_JSON_STRING || str.n < 2 || !want) return false;
	const unsigned char *s = (const unsigned char *)str.p + 1, *end = (const unsigned char *)str.p + str.n - 1;
	const unsigned char *w = (const unsigned char *)want;
	unsigned char buf[4];
	while (s < end) {
		size_t k = anvil__char(&s, end, buf);
		if (k == 0) return false;
		for (size_t i = 0; i < k; i++) {
			if (*w == 0 || *w != buf[i]) return false;
			w++;
		}
	}
	return *w == 0;
}

int anvil_json_string(anvil_json v, anvil_str *out) {
	if (!out) return -1;
	out->s = NULL;
	out->n = 0;
	if (v.type != ANVIL_JSON_STRING || v.n < 2) return -1;
	/* Decoded text is never longer than the escaped text (a 6-byte \u
	 * escape gives at most 3 bytes, a 12-byte pair 4). */
	char *buf = (char *)malloc(v.n);
	if (!buf) return -1;
	const unsigned char *s = (const unsigned char *)v.p + 1, *end = (const unsigned char *)v.p + v.n - 1;
	size_t n = 0;
	unsigned char c[4];
	while (s < end) {
		size_t k = anvil__char(&s, end, c);
		if (k == 0) {
			free(buf);
			return -1;
		}
		memcpy(buf + n, c, k);
		n += k;
	}
	buf[n] = 0;
	out->s = buf;
	out->n = n;
	return 0;
}

anvil_json anvil_json_get(anvil_json obj, const char *key) {
	size_t it = 0;
	anvil_json k, v;
	while (anvil_json_member(obj, &it, &k, &v)) {
		if (anvil_json_key_is(k, key)) return v;
	}
	return anvil__none;
}

anvil_json anvil_json_path(anvil_json v, const char *path) {
	char part[256];
	if (!path) return anvil__none;
	while (*path) {
		const char *dot = strchr(path, '.');
		size_t n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof part) return anvil__none;
		memcpy(part, path, n);
		part[n] = 0;
		v = anvil_json_get(v, part);
		if (v.type == ANVIL_JSON_NONE) return v;
		path += n;
		if (*path == '.') path++;
	}
	return v;
}

int anvil_json_bool(anvil_json v, bool *out) {
	if (v.type != ANVIL_JSON_TRUE && v.type != ANVIL_JSON_FALSE) return -1;
	if (out) *out = v.type == ANVIL_JSON_TRUE;
	return 0;
}

int anvil_json_number(anvil_json v, double *out) {
	char buf[128];
	if (v.type != ANVIL_JSON_NUMBER || v.n == 0) return -1;
	char *tmp = buf;
	if (v.n >= sizeof buf) {
		tmp = (char *)malloc(v.n + 1);
		if (!tmp) return -1;
	}
	memcpy(tmp, v.p, v.n);
	tmp[v.n] = 0;
	char *stop = NULL;
	double d = strtod(tmp, &stop);
	bool ok = stop == tmp + v.n && isfinite(d);
	if (tmp != buf) free(tmp);
	if (!ok) return -1;
	if (out) *out = d;
	return 0;
}

void anvil_str_free(anvil_str *s) {
	if (s) {
		free(s->s);
		s->s = NULL;
		s->n = 0;
	}
}

void anvil_strs_free(anvil_str *items, size_t n) {
	if (!items) return;
	for (size_t i = 0; i < n; i++) free(items[i].s);
	free(items);
}

int anvil_json_strings(anvil_json v, anvil_str **items, size_t *n, size_t *bad) {
	if (items) *items = NULL;
	if (n) *n = 0;
	if (v.type != ANVIL_JSON_ARRAY || !items || !n) return -1;
	size_t count = anvil_json_count(v);
	anvil_str *out = (anvil_str *)calloc(count ? count : 1, sizeof *out);
	if (!out) return -2;
	size_t it = 0, i = 0;
	anvil_json item;
	while (i < count && anvil_json_item(v, &it, &item)) {
		if (item.type != ANVIL_JSON_STRING) {
			if (bad) *bad = i;
			anvil_strs_free(out, i);
			return -1;
		}
		if (anvil_json_string(item, &out[i]) < 0) {
			anvil_strs_free(out, i);
			return -2;
		}
		i++;
	}
	*items = out;
	*n = i;
	return 0;
}

/* ---- JSON writer ---- */

void anvil_w_init(anvil_w *w) { memset(w, 0, sizeof *w); }

void anvil_w_free(anvil_w *w) {
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

static void anvil__put(anvil_w *w, const void *p, size_t n) {
	if (w->err) return;
	if (n > SIZE_MAX / 2 - w->len) {
		w->err = "output too large";
		return;
	}
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n) cap *= 2;
		char *b = (char *)realloc(w->buf, cap);
		if (!b) {
			w->err = "out of memory";
			return;
		}
		w->buf = b;
		w->cap = cap;
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void anvil__putc(anvil_w *w, char c) { anvil__put(w, &c, 1); }

/* Before a value: a comma if needed; a value inside an object must follow
 * a key, and the top level holds one value. */
static void anvil__value(anvil_w *w) {
	if (w->err) return;
	if (w->depth == 0) {
		if (w->len != 0) w->err = "more than one top-level value";
		return;
	}
	if (w->kind[w->depth] == 'o') {
		if (!w->after_key) w->err = "value without a key";
		w->after_key = false;
		return;
	}
	if (w->has[w->depth]) anvil__putc(w, ',');
	w->has[w->depth] = true;
}

static void anvil__open(anvil_w *w, char kind) {
	anvil__value(w);
	if (w->err) return;
	if (w->depth >= ANVIL_JSON_MAX_DEPTH) {
		w->err = "nesting too deep";
		return;
	}
	anvil__putc(w, kind == 'o' ? '{' : '[');
	w->depth++;
	w->kind[w->depth] = (unsigned char)kind;
	w->has[w->depth] = false;
}

static void anvil__close(anvil_w *w, char kind) {
	if (w->err) return;
	if (w->depth == 0 || w->kind[w->depth] != kind || w->after_key) {
		w->err = "unbalanced container";
		return;
	}
	w->depth--;
	anvil__putc(w, kind == 'o' ? '}' : ']');
}

void anvil_w_object(anvil_w *w) { anvil__open(w, 'o'); }
void anvil_w_object_end(anvil_w *w) { anvil__close(w, 'o'); }
void anvil_w_array(anvil_w *w) { anvil__open(w, 'a'); }
void anvil_w_array_end(anvil_w *w) { anvil__close(w, 'a'); }

static void anvil__str(anvil_w *w, const char *s, size_t n) {
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	anvil__putc(w, '"');
	while (p < end && !w->err) {
		const unsigned char *run = p;
		while (p < end && *p >= 0x20 && *p != '"' && *p != '\\' && *p < 0x80) p++;
		anvil__put(w, run, (size_t)(p - run));
		if (p >= end) break;
		unsigned c = *p;
		if (c >= 0x80) {
			size_t k = anvil__utf8(p, end);
			if (k == 0) {
				anvil__put(w, "\\ufffd", 6);
				p++;
			} else {
				anvil__put(w, p, k);
				p += k;
			}
			continue;
		}
		char esc[6] = {'\\', 0, 0, 0, 0, 0};
		size_t k = 2;
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			k = 6;
		}
		anvil__put(w, esc, k);
		p++;
	}
	anvil__putc(w, '"');
}

void anvil_w_key(anvil_w *w, const char *key) {
	if (w->err) return;
	if (w->depth == 0 || w->kind[w->depth] != 'o' || w->after_key) {
		w->err = "key outside an object";
		return;
	}
	if (w->has[w->depth]) anvil__putc(w, ',');
	w->has[w->depth] = true;
	anvil__str(w, key ? key : "", key ? strlen(key) : 0);
	anvil__putc(w, ':');
	w->after_key = true;
}

void anvil_w_stringn(anvil_w *w, const char *s, size_t n) {
	anvil__value(w);
	if (w->err) return;
	anvil__str(w, s ? s : "", s ? n : 0);
}

void anvil_w_string(anvil_w *w, const char *s) { anvil_w_stringn(w, s, s ? strlen(s) : 0); }

void anvil_w_bool(anvil_w *w, bool b) {
	anvil__value(w);
	if (b) anvil__put(w, "true", 4);
	else anvil__put(w, "false", 5);
}

void anvil_w_null(anvil_w *w) {
	anvil__value(w);
	anvil__put(w, "null", 4);
}

void anvil_w_number(anvil_w *w, double d) {
	if (!isfinite(d)) {
		if (!w->err) w->err = "number is NaN or infinite";
		return;
	}
	anvil__value(w);
	if (w->err) return;
	char buf[40];
	int n = 0;
	for (int prec = 15; prec <= 17; prec++) {
		n = snprintf(buf, sizeof buf, "%.*g", prec, d);
		if (strtod(buf, NULL) == d) break;
	}
	if (n <= 0 || (size_t)n >= sizeof buf) {
		w->err = "number formatting failed";
		return;
	}
	anvil__put(w, buf, (size_t)n);
}

void anvil_w_int(anvil_w *w, int64_t i) {
	anvil__value(w);
	if (w->err) return;
	char buf[24];
	int n = snprintf(buf, sizeof buf, "%lld", (long long)i);
	anvil__put(w, buf, (size_t)n);
}

void anvil_w_raw(anvil_w *w, const char *text, size_t n) {
	anvil__value(w);
	anvil__put(w, text, n);
}

void anvil_w_json(anvil_w *w, anvil_json v) {
	if (v.type == ANVIL_JSON_NONE) {
		if (!w->err) w->err = "no value to copy";
		return;
	}
	anvil_w_raw(w, v.p, v.n);
}

int32_t anvil_w_output(anvil_w *w) {
	int32_t rc;
	if (!w->err && (w->depth != 0 || w->len == 0)) w->err = "incomplete JSON value";
	if (w->err) {
		rc = anvil_fail(w->err);
	} else if (anvil_output(w->buf, w->len) < 0) {
		rc = anvil_fail("cannot allocate the output block");
	} else {
		rc = 0;
	}
	anvil_w_free(w);
	return rc;
}

/* ---- ABI helpers ---- */

void anvil_w_error(anvil_w *w, const char *code, const char *field, const char *message) {
	anvil_w_object(w);
	anvil_w_key(w, "code");
	anvil_w_string(w, code && *code ? code : "metric_error");
	anvil_w_key(w, "message");
	anvil_w_string(w, message && *message ? message : (code && *code ? code : "metric_error"));
	if (field && *field) {
		anvil_w_key(w, "field");
		anvil_w_string(w, field);
	}
	anvil_w_object_end(w);
}

int32_t anvil_measure_error(double threshold, const char *code, const char *field, const char *message) {
	anvil_w w;
	anvil_w_init(&w);
	anvil_w_object(&w);
	anvil_w_key(&w, "success");
	anvil_w_bool(&w, false);
	anvil_w_key(&w, "threshold");
	anvil_w_number(&w, threshold);
	anvil_w_key(&w, "error");
	anvil_w_error(&w, code, field, message);
	anvil_w_object_end(&w);
	return anvil_w_output(&w);
}

void anvil_log(const char *level, const char *message) {
	anvil_w w;
	anvil_w_init(&w);
	anvil_w_object(&w);
	anvil_w_key(&w, "level");
	anvil_w_string(&w, level ? level : "info");
	anvil_w_key(&w, "message");
	anvil_w_string(&w, message ? message : "");
	anvil_w_object_end(&w);
	if (!w.err) {
		anvil_mem off = anvil_mem_write(w.buf, w.len);
		if (off != 0) {
			anvil_host_log(off);
			anvil_kernel_free(off);
		}
	}
	anvil_w_free(&w);
}

char *anvil_judge(const char *batch, size_t n, size_t *out_len) {
	anvil_mem in = anvil_mem_write(batch, n);
	if (in == 0) return NULL;
	anvil_mem res = anvil_host_judge(in);
	anvil_kernel_free(in);
	char *out = anvil_mem_read(res, out_len);
	if (res != 0) anvil_kernel_free(res);
	return out;
}

static void anvil__str_set(anvil_str *s, const char *text) {
	size_t n = strlen(text);
	s->s = (char *)malloc(n + 1);
	s->n = s->s ? n : 0;
	if (s->s) memcpy(s->s, text, n + 1);
}

static void anvil__judged_err(anvil_judged *j, anvil_json err, const char *fallback) {
	anvil_str_free(&j->code);
	anvil_str_free(&j->message);
	if (anvil_json_string(anvil_json_get(err, "code"), &j->code) < 0 || j->code.n == 0) {
		anvil_str_free(&j->code);
		anvil__str_set(&j->code, "metric_error");
	}
	if (anvil_json_string(anvil_json_get(err, "message"), &j->message) < 0) {
		anvil__str_set(&j->message, fallback);
	}
}

int anvil_judge_one(const char *request_json, size_t n, anvil_judged *out) {
	memset(out, 0, sizeof *out);
	anvil_w w;
	anvil_w_init(&w);
	anvil_w_object(&w);
	anvil_w_key(&w, "requests");
	anvil_w_array(&w);
	anvil_w_raw(&w, request_json, n);
	anvil_w_array_end(&w);
	anvil_w_object_end(&w);
	if (w.err) {
		anvil_w_free(&w);
		anvil__judged_err(out, anvil__none, "cannot build the judge batch");
		return -1;
	}
	size_t len = 0;
	out->raw = anvil_judge(w.buf, w.len, &len);
	anvil_w_free(&w);
	if (!out->raw || anvil_json_parse(out->raw, len, &out->doc, NULL, NULL) < 0 || out->doc.type != ANVIL_JSON_OBJECT) {
		anvil__judged_err(out, anvil__none, "cannot read the judge result");
		return -1;
	}
	anvil_json err = anvil_json_get(out->doc, "error");
	if (err.type == ANVIL_JSON_OBJECT) {
		anvil__judged_err(out, err, "judge batch refused");
		return -1;
	}
	anvil_json resp = anvil_json_at(anvil_json_get(out->doc, "responses"), 0);
	if (resp.type != ANVIL_JSON_OBJECT) {
		anvil__judged_err(out, anvil__none, "the host answered no judge response");
		return -1;
	}
	err = anvil_json_get(resp, "error");
	if (err.type == ANVIL_JSON_OBJECT) {
		anvil__judged_err(out, err, "judge request failed");
		return -1;
	}
	out->response = resp;
	return 0;
}

void anvil_judged_free(anvil_judged *j) {
	if (!j) return;
	free(j->raw);
	anvil_str_free(&j->code);
	anvil_str_free(&j->message);
	memset(j, 0, sizeof *j);
}

/* ---- embeddings ---- */

static int anvil__embedded_fail(anvil_embedded *e, const char *code, const char *message) {
	anvil_str_free(&e->code);
	anvil_str_free(&e->message);
	free(e->values);
	e->values = NULL;
	e->n = e->dims = 0;
	anvil__str_set(&e->code, code);
	anvil__str_set(&e->message, message);
	return -1;
}

/* anvil__embed_rows copies the vectors of an EmbedResult into e->values,
 * checking what section 7.8 promises: n rows, one non-zero length, numbers. */
static int anvil__embed_rows(anvil_embedded *e, anvil_json vectors, size_t n) {
	char msg[128];
	size_t count = anvil_json_count(vectors);
	if (vectors.type != ANVIL_JSON_ARRAY || count != n) {
		snprintf(msg, sizeof msg, "the host answered %zu vectors for %zu texts", count, n);
		return anvil__embedded_fail(e, "abi_violation", msg);
	}
	size_t dims = anvil_json_count(anvil_json_at(vectors, 0));
	if (dims == 0) {
		return anvil__embedded_fail(e, "abi_violation", "vectors[0] is not a non-empty array of numbers");
	}
	if (dims > SIZE_MAX / sizeof(double) / n) {
		return anvil__embedded_fail(e, "metric_error", "embed result: out of memory");
	}
	e->values = (double *)malloc(n * dims * sizeof(double));
	if (!e->values) {
		return anvil__embedded_fail(e, "metric_error", "embed result: out of memory");
	}
	size_t it = 0, i = 0;
	anvil_json row;
	while (anvil_json_item(vectors, &it, &row)) {
		size_t jt = 0, j = 0;
		bool longer = false;
		anvil_json x;
		while (anvil_json_item(row, &jt, &x)) {
			if (j == dims) {
				longer = true;
				break;
			}
			if (anvil_json_number(x, &e->values[i * dims + j]) < 0) {
				snprintf(msg, sizeof msg, "vectors[%zu][%zu] is not a number", i, j);
				return anvil__embedded_fail(e, "abi_violation", msg);
			}
			j++;
		}
		if (row.type != ANVIL_JSON_ARRAY || j != dims || longer) {
			snprintf(msg, sizeof msg, "vectors[%zu] is not %zu numbers, as vectors[0] is", i, dims);
			return anvil__embedded_fail(e, "abi_violation", msg);
		}
		i++;
	}
	e->n = n;
	e->dims = dims;
	return 0;
}

int anvil_embed(const char *judge, const char *const *texts, const size_t *lens, size_t n, const char *purpose,
                anvil_embedded *out) {
	memset(out, 0, sizeof *out);
	if (n == 0 || n > ANVIL_EMBED_MAX_TEXTS || !texts) {
		char msg[96];
		snprintf(msg, sizeof msg, "embed: %zu texts; want 1 to %d", texts ? n : 0, ANVIL_EMBED_MAX_TEXTS);
		return anvil__embedded_fail(out, "abi_violation", msg);
	}
	anvil_w w;
	anvil_w_init(&w);
	anvil_w_object(&w);
	if (judge && *judge) {
		anvil_w_key(&w, "judge");
		anvil_w_string(&w, judge);
	}
	anvil_w_key(&w, "texts");
	anvil_w_array(&w);
	for (size_t i = 0; i < n; i++) {
		const char *t = texts[i] ? texts[i] : "";
		anvil_w_stringn(&w, t, lens ? lens[i] : strlen(t));
	}
	anvil_w_array_end(&w);
	if (purpose && *purpose) {
		anvil_w_key(&w, "purpose");
		anvil_w_string(&w, purpose);
	}
	anvil_w_object_end(&w);
	if (w.err) {
		anvil_w_free(&w);
		return anvil__embedded_fail(out, "metric_error", "cannot build the embed request");
	}
	anvil_mem in = anvil_mem_write(w.buf, w.len);
	anvil_w_free(&w);
	if (in == 0) {
		return anvil__embedded_fail(out, "metric_error", "cannot allocate the embed request");
	}
	anvil_mem res = anvil_host_embed(in);
	anvil_kernel_free(in);
	size_t len = 0;
	out->raw = anvil_mem_read(res, &len);
	if (res != 0) anvil_kernel_free(res);
	if (!out->raw || anvil_json_parse(out->raw, len, &out->doc, NULL, NULL) < 0 || out->doc.type != ANVIL_JSON_OBJECT) {
		return anvil__embedded_fail(out, "metric_error", "cannot read the embed result");
	}
	out->usage = anvil_json_get(out->doc, "usage");
	anvil_json err = anvil_json_get(out->doc, "error");
	if (err.type == ANVIL_JSON_OBJECT) {
		free(out->values);
		out->values = NULL;
		anvil_str_free(&out->code);
		anvil_str_free(&out->message);
		if (anvil_json_string(anvil_json_get(err, "code"), &out->code) < 0 || out->code.n == 0) {
			anvil_str_free(&out->code);
			anvil__str_set(&out->code, "metric_error");
		}
		if (anvil_json_string(anvil_json_get(err, "message"), &out->message) < 0) {
			anvil__str_set(&out->message, "embed request failed");
		}
		return -1;
	}
	return anvil__embed_rows(out, anvil_json_get(out->doc, "vectors"), n);
}

const double *anvil_embedded_vector(const anvil_embedded *e, size_t i) {
	if (!e || !e->values || i >= e->n) return NULL;
	return e->values + i * e->dims;
}

void anvil_embedded_free(anvil_embedded *e) {
	if (!e) return;
	free(e->raw);
	free(e->values);
	anvil_str_free(&e->code);
	anvil_str_free(&e->message);
	memset(e, 0, sizeof *e);
}

/* ---- turns ---- */

int anvil_turn_read(anvil_json item, anvil_turn *out) {
	memset(out, 0, sizeof *out);
	if (item.type != ANVIL_JSON_OBJECT) return -1;
	anvil_json role = anvil_json_get(item, "role");
	anvil_json content = anvil_json_get(item, "content");
	if (role.type != ANVIL_JSON_STRING) return -1;
	if (content.type != ANVIL_JSON_STRING && content.type != ANVIL_JSON_NONE && content.type != ANVIL_JSON_NULL) return -1;
	if (anvil_json_string(role, &out->role) < 0) return -2;
	if (content.type == ANVIL_JSON_STRING) {
		if (anvil_json_string(content, &out->content) < 0) return -2;
	} else {
		anvil__str_set(&out->content, "");
		if (!out->content.s) return -2;
	}
	anvil_json tools = anvil_json_get(item, "tools_called");
	anvil_json rc = anvil_json_get(item, "retrieval_context");
	out->tools_called = tools.type == ANVIL_JSON_ARRAY ? tools : anvil__none;
	out->retrieval_context = rc.type == ANVIL_JSON_ARRAY ? rc : anvil__none;
	return 0;
}

void anvil_turn_free(anvil_turn *t) {
	if (!t) return;
	anvil_str_free(&t->role);
	anvil_str_free(&t->content);
	memset(t, 0, sizeof *t);
}

int anvil_last_turn(anvil_json turns, const char *role, anvil_str *out) {
	memset(out, 0, sizeof *out);
	anvil_json found = anvil__none;
	size_t it = 0;
	anvil_json item;
	while (anvil_json_item(turns, &it, &item)) {
		anvil_json content = anvil_json_get(item, "content");
		if (item.type == ANVIL_JSON_OBJECT && anvil_json_key_is(anvil_json_get(item, "role"), role) &&
		    content.type == ANVIL_JSON_STRING && content.n > 2) {
			found = content;
		}
	}
	if (found.type == ANVIL_JSON_NONE) return 1;
	return anvil_json_string(found, out) < 0 ? -2 : 0;
}

/* ---- required fields ---- */

/* Whether cp is white space by section 8: exactly Go's unicode.IsSpace,
 * not C's isspace (locale-bound, ASCII only) nor any language's trim. */
static bool anvil__space(unsigned long cp) {
	switch (cp) {
	case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
	case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
		return true;
	}
	return cp >= 0x2000 && cp <= 0x200A;
}

/* Whether a JSON string value holds only white space, read in place. */
static bool anvil__blank(anvil_json v) {
	const unsigned char *s = (const unsigned char *)v.p + 1, *end = (const unsigned char *)v.p + v.n - 1;
	unsigned char c[4];
	while (s < end) {
		size_t k = anvil__char(&s, end, c);
		if (k == 0) return false; /* malformed: not blank text, let the kind see it */
		unsigned long cp = k == 1 ? c[0]
		                   : k == 2 ? ((c[0] & 0x1Ful) << 6) | (c[1] & 0x3Ful)
		                   : k == 3 ? ((c[0] & 0x0Ful) << 12) | ((c[1] & 0x3Ful) << 6) | (c[2] & 0x3Ful)
		                            : 0x10000; /* beyond the BMP: no white space there */
		if (!anvil__space(cp)) return false;
	}
	return true;
}

bool anvil_case_has(anvil_json c, const char *field) {
	static const char *const strings[] = {"input", "actual_output", "expected_output", "scenario", "expected_outcome", "chatbot_role"};
	static const char *const texts[] = {"context", "retrieval_context"};
	static const char *const lists[] = {"tools_called", "expected_tools", "turns"};
	for (size_t i = 0; i < sizeof strings / sizeof *strings; i++) {
		if (strcmp(field, strings[i]) == 0) {
			anvil_json v = anvil_json_get(c, field);
			return v.type == ANVIL_JSON_STRING && v.n > 2;
		}
	}
	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		if (strcmp(field, texts[i]) == 0) {
			/* Present when an item has a character that is not white space
			 * (the host's rule). Only strings count: the host sends
			 * nothing else here, and the other SDKs skip anything else. */
			anvil_json v = anvil_json_get(c, field);
			size_t it = 0;
			anvil_json item;
			while (anvil_json_item(v, &it, &item)) {
				if (item.type == ANVIL_JSON_STRING && !anvil__blank(item)) return true;
			}
			return false;
		}
	}
	for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
		if (strcmp(field, lists[i]) == 0) {
			anvil_json v = anvil_json_get(c, field);
			size_t it = 0;
			anvil_json first;
			return anvil_json_item(v, &it, &first);
		}
	}
	const char *role = strcmp(field, "last_user_turn") == 0        ? ANVIL_ROLE_USER
	                   : strcmp(field, "last_assistant_turn") == 0 ? ANVIL_ROLE_ASSISTANT
	                                                               : NULL;
	if (role) {
		anvil_json turns = anvil_json_get(c, "turns");
		size_t it = 0;
		anvil_json item;
		while (anvil_json_item(turns, &it, &item)) {
			anvil_json content = anvil_json_get(item, "content");
			if (anvil_json_key_is(anvil_json_get(item, "role"), role) && content.type == ANVIL_JSON_STRING && content.n > 2) {
				return true;
			}
		}
		return false;
	}
	anvil_json v = anvil_json_get(anvil_json_get(c, "extra"), field);
	return v.type != ANVIL_JSON_NONE && v.type != ANVIL_JSON_NULL && !(v.type == ANVIL_JSON_STRING && v.n == 2);
}

const char *anvil_case_missing(anvil_json c, const char *const *fields, size_t n) {
	for (size_t i = 0; i < n; i++) {
		if (!anvil_case_has(c, fields[i])) return fields[i];
	}
	return NULL;
}

#endif /* ANVIL_IMPLEMENTATION_DONE */
#endif /* ANVIL_IMPLEMENTATION */
