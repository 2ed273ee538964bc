/*
 * The shared conformance vectors as C tables. The tables are defined in vectors_data.c,
 * which CMake generates at build time from the JSON files with gen_vectors.py (never
 * committed): every case of every list is there, so added cases need no C change.
 */
#ifndef MQSTATE_TEST_VECTORS_H
#define MQSTATE_TEST_VECTORS_H

#include <stddef.h>
#include <stdint.h>

/* A byte field of a vector; ptr is NULL when the field is absent. */
typedef struct vbytes {
    const uint8_t *ptr;
    size_t len;
} vbytes;

struct request_case {
    const char *name;
    const char *verb;
    vbytes key;
    vbytes value;          /* SET and VDEL */
    const char *condition; /* NULL, "NX" or "NEX" */
    uint64_t px_ms;        /* 0: none */
    int stop;
    vbytes payload;
};

struct response_case {
    const char *name;
    const char *verb;
    vbytes payload;
    const char *kind; /* ok, not_applied, not_found, value, count, error, malformed */
    vbytes value;
    int has_count;
    uint64_t count;
    const char *error_kind; /* the vectors' store error name, "unknown" included */
    const char *error_text;
    int has_applied;
    int applied;
};

struct notification_case {
    const char *name;
    const char *topic;
    vbytes payload;
    const char *kind; /* set, delete, malformed */
    const char *client_id;
    vbytes key;
    vbytes value;
};

/* scan.json: requests (token ptr NULL: the first page) and response pages. */
struct scan_request_case {
    const char *name;
    vbytes pattern;
    vbytes token;
    vbytes payload;
};

struct scan_response_case {
    const char *name;
    const char *verb;
    vbytes payload;
    const char *kind; /* keys, malformed, error */
    const vbytes *keys;
    size_t key_count;
    vbytes token; /* ptr NULL: the final page */
    const char *error_kind;
    const char *error_text;
};

struct topic_case {
    const char *client_id;
    vbytes key; /* notification topics only */
    const char *topic;
};

struct allowed_case {
    const char *topic;
    int allowed;
};

struct hlc_parse_case {
    const char *text;
    int ok;
    uint64_t wall_ms;
    uint64_t counter;
    const char *node_id;
};

struct hlc_format_case {
    uint64_t wall_ms;
    uint64_t counter;
    const char *node_id;
    const char *text;
};

struct hlc_compare_case {
    const char *a;
    const char *b;
    int order; /* -1, 0, 1 */
};

struct hlc_step_case {
    const char *name;
    const char *clock;
    const char *other; /* receive only */
    uint64_t now_ms;
    uint64_t max_drift_ms;
    const char *expect; /* a clock text, "error:drift" or "error:overflow" */
};

#define VECTOR_TABLE(type, name) \
    extern const type name[];    \
    extern const size_t name##_count

VECTOR_TABLE(struct request_case, request_cases);
VECTOR_TABLE(struct response_case, response_cases);
VECTOR_TABLE(struct notification_case, notification_cases);
VECTOR_TABLE(struct scan_request_case, scan_request_cases);
VECTOR_TABLE(struct scan_response_case, scan_response_cases);
VECTOR_TABLE(struct topic_case, response_topic_cases);
VECTOR_TABLE(struct topic_case, notification_filter_cases);
VECTOR_TABLE(struct topic_case, notification_topic_cases);
VECTOR_TABLE(struct allowed_case, allowed_cases);
VECTOR_TABLE(struct hlc_parse_case, hlc_parse_cases);
VECTOR_TABLE(struct hlc_format_case, hlc_format_cases);
VECTOR_TABLE(struct hlc_compare_case, hlc_compare_cases);
VECTOR_TABLE(struct hlc_step_case, hlc_tick_cases);
VECTOR_TABLE(struct hlc_step_case, hlc_receive_cases);
extern const char *const vector_request_topic;

#endif
