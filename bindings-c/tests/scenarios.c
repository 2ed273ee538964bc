/*
 * The behaviour scenarios (the JSON files of tests/scenarios, format in its README) through the C API:
 * `mqstate_scenarios DIR` runs every *.json file in DIR against the store at MQSTATE_URL,
 * `mqstate_scenarios --local DIR` against a store it starts in process (mqstate_local_store),
 * and `mqstate_scenarios --negative FILE` checks that a wrong expectation fails. The JSON is
 * read with Debian's cJSON (libcjson-dev).
 */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mqstate.h"

#define MAX_NAMES 16

struct named {
    char *name;
    void *ptr;
};

/* Keys a scan returned (owned copies, in order, repeats kept). */
struct keylist {
    uint8_t **keys;
    size_t *lens;
    size_t n, cap;
};

/* A pager of a scan_start step and the keys it returned so far. */
struct pager {
    mqstate_scan *scan;
    struct keylist seen;
};

struct run {
    const char *url;
    char prefix[64];
    struct named clients[MAX_NAMES], subs[MAX_NAMES], locks[MAX_NAMES], elections[MAX_NAMES],
        pagers[MAX_NAMES], vars[64];
    char why[1024];
    /* Clients closed by a `close` step: in C a closed handle is freed and must not be used,
       so the runner answers their later calls with the status the other languages raise. */
    char closed[MAX_NAMES][32];
};

static void *find(struct named *table, size_t n, const char *name) {
    for (size_t i = 0; i < n && table[i].name; i++) {
        if (strcmp(table[i].name, name) == 0) {
            return table[i].ptr;
        }
    }
    return NULL;
}

static void put(struct named *table, size_t n, const char *name, void *ptr) {
    for (size_t i = 0; i < n; i++) {
        if (table[i].name == NULL || strcmp(table[i].name, name) == 0) {
            if (table[i].name == NULL) {
                table[i].name = strdup(name);
            }
            table[i].ptr = ptr;
            return;
        }
    }
}

static int fail(struct run *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *str(const cJSON *step, const char *field) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(step, field);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static long num(const cJSON *step, const char *field, long dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(step, field);
    return cJSON_IsNumber(v) ? (long)v->valuedouble : dflt;
}

/* C has no zero request timeout: there 0 is "not given", the client's request_timeout
   (docs/api.md, the rule for zero). A scenario's explicit zero, refused in every other
   language before anything is sent, is reported as that refusal without calling, as for a
   zero expiry. */
static int zero_request_timeout(const cJSON *step) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(step, "timeout_ms");
    return cJSON_IsNumber(v) && v->valuedouble == 0;
}

static int has_bool(const cJSON *step, const char *field, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(step, field);
    if (!cJSON_IsBool(v)) {
        return 0;
    }
    *out = cJSON_IsTrue(v);
    return 1;
}

/* The step's value (value or value_hex) into buf; length, or -1 when absent. */
static long value_of(const cJSON *step, uint8_t *buf, size_t cap) {
    const char *text = str(step, "value"), *hex = str(step, "value_hex");
    if (text) {
        size_t n = strlen(text);
        if (n > cap) return -1;
        memcpy(buf, text, n);
        return (long)n;
    }
    if (hex) {
        size_t n = strlen(hex) / 2;
        if (n > cap) return -1;
        for (size_t i = 0; i < n; i++) {
            unsigned byte;
            sscanf(hex + 2 * i, "%2x", &byte);
            buf[i] = (uint8_t)byte;
        }
        return (long)n;
    }
    return -1;
}

static const char *key_of(struct run *r, const cJSON *step, const char *field, char *buf, size_t cap) {
    const char *k = str(step, field);
    if (k == NULL) return NULL;
    if (k[0] == '\0') return "";
    snprintf(buf, cap, "%s%s", r->prefix, k);
    return buf;
}

static mqstate_client *client_of(struct run *r, const cJSON *step) {
    const char *name = str(step, "client");
    return find(r->clients, MAX_NAMES, name ? name : "a");
}

/* Checks `version` (may be NULL) against the step's expectation and saves it if asked. */
static int check_version(struct run *r, const cJSON *step, const char *version) {
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(step, "version");
    if (cJSON_IsString(want)) {
        if (strcmp(want->valuestring, "none") == 0 && version != NULL)
            return fail(r, "version %s, want none", version);
        if (strcmp(want->valuestring, "some") == 0 && version == NULL)
            return fail(r, "no version, want some");
    } else if (cJSON_IsObject(want) && want->child) {
        const char *how = want->child->string, *var = want->child->valuestring;
        const char *other = find(r->vars, 64, var);
        mqstate_hlc *a = NULL, *b = NULL;
        int32_t order = 0;
        if (version == NULL || other == NULL)
            return fail(r, "cannot compare %s with %s", version ? version : "(none)", var);
        mqstate_hlc_parse(version, &a);
        mqstate_hlc_parse(other, &b);
        mqstate_hlc_compare_time(a, b, &order);
        mqstate_hlc_free(a);
        mqstate_hlc_free(b);
        int ok = strcmp(how, "equal") == 0 ? order == 0 : strcmp(how, "newer") == 0 ? order > 0 : order < 0;
        if (!ok) return fail(r, "version %s is not %s than %s=%s", version, how, var, other);
    }
    const char *fields[] = {"save_version", "save_token"};
    for (int i = 0; i < 2; i++) {
        const char *var = str(step, fields[i]);
        if (var) {
            if (version == NULL) return fail(r, "nothing to save as %s", var);
            free(find(r->vars, 64, var));
            put(r->vars, 64, var, strdup(version));
        }
    }
    return 0;
}

static int expect_bool(struct run *r, const cJSON *step, const char *field, int got) {
    int want;
    if (has_bool(step, field, &want) && want != got)
        return fail(r, "%s %d, want %d", field, got, want);
    return 0;
}

static const char *token_of(struct run *r, const cJSON *step, mqstate_status *st, char **owned) {
    const char *lock_name = str(step, "fenced_by"), *t = str(step, "fencing_token");
    *owned = NULL;
    if (lock_name) {
        mqstate_lock *lock = find(r->locks, MAX_NAMES, lock_name);
        *st = mqstate_lock_fencing_token(lock, owned);
        return *owned;
    }
    if (t && t[0] == '$') return find(r->vars, 64, t + 1);
    return t;
}

struct edit_action {
    const cJSON *action;
};

static mqstate_status decide(void *ctx, const uint8_t *current, size_t len, mqstate_edit *d) {
    const cJSON *action = ((struct edit_action *)ctx)->action;
    if (cJSON_IsString(action)) {
        return strcmp(action->valuestring, "delete") == 0 ? mqstate_edit_delete(d) : MQSTATE_STATUS_OK;
    }
    if (str(action, "fail")) return MQSTATE_STATUS_INVALID_ARGUMENT;
    const char *set = str(action, "set"), *append = str(action, "append");
    if (set) return mqstate_edit_set(d, (const uint8_t *)set, strlen(set));
    size_t alen = strlen(append ? append : "");
    uint8_t *buf = malloc(len + alen + 1);
    if (len) memcpy(buf, current, len);
    memcpy(buf + len, append ? append : "", alen);
    mqstate_status st = mqstate_edit_set(d, buf, len + alen);
    free(buf);
    return st;
}

static mqstate_status connect_client(struct run *r, const cJSON *step, const char *name) {
    mqstate_settings *s = NULL;
    mqstate_client *c = NULL;
    char id[96];
    const char *target = str(step, "target");
    const char *url = target && strcmp(target, "closed_port") == 0 ? "mqtt://127.0.0.1:1" : r->url;
    mqstate_status st = mqstate_settings_from_url(url, &s);
    snprintf(id, sizeof id, "scn-c-%s-%s", name, r->prefix + 4);
    for (char *p = id; *p; p++) if (*p == '/') *p = '-';
    if (st == MQSTATE_STATUS_OK) st = mqstate_settings_set(s, "client_id", id);
    if (st == MQSTATE_STATUS_OK) st = mqstate_settings_set(s, "connect_timeout", "5");
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(step, "settings");
    for (const cJSON *kv = extra ? extra->child : NULL; kv && st == MQSTATE_STATUS_OK; kv = kv->next) {
        st = mqstate_settings_set(s, kv->string, kv->valuestring);
    }
    if (st == MQSTATE_STATUS_OK) st = mqstate_client_connect(s, 0, &c);
    mqstate_settings_free(s);
    if (st == MQSTATE_STATUS_OK) {
        mqstate_client_close(find(r->clients, MAX_NAMES, name));
        put(r->clients, MAX_NAMES, name, c);
    }
    return st;
}

static int is_closed(const struct run *r, const cJSON *s) {
    const char *name = str(s, "client");
    for (int i = 0; i < MAX_NAMES; i++)
        if (strcmp(r->closed[i], name ? name : "a") == 0) return 1;
    return 0;
}

/* Hex text into buf: the length, or -1 when it does not fit or is not hex. */
static long unhex(const char *hex, uint8_t *buf, size_t cap) {
    size_t n = strlen(hex);
    if (n % 2 || n / 2 > cap) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1) return -1;
        buf[i] = (uint8_t)byte;
    }
    return (long)(n / 2);
}

static void keys_add(struct keylist *l, const uint8_t *key, size_t len) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->keys = realloc(l->keys, l->cap * sizeof *l->keys);
        l->lens = realloc(l->lens, l->cap * sizeof *l->lens);
    }
    l->keys[l->n] = malloc(len ? len : 1);
    if (len) memcpy(l->keys[l->n], key, len);
    l->lens[l->n++] = len;
}

static void keys_free(struct keylist *l) {
    for (size_t i = 0; i < l->n; i++) free(l->keys[i]);
    free(l->keys);
    free(l->lens);
    memset(l, 0, sizeof *l);
}

/* A scan step's pattern (pattern or pattern_hex) after the run prefix (an empty one stays
   empty; the prefix holds no glob metacharacter); its length, or -1. */
static long pattern_of(struct run *r, const cJSON *s, uint8_t *buf, size_t cap) {
    const char *text = str(s, "pattern"), *hex = str(s, "pattern_hex");
    size_t plen = strlen(r->prefix);
    long n;
    if (hex) {
        n = unhex(hex, buf + plen, cap - plen);
    } else if (text && strlen(text) <= cap - plen) {
        n = (long)strlen(text);
        memcpy(buf + plen, text, (size_t)n);
    } else {
        return -1;
    }
    if (n <= 0) return n;
    memcpy(buf, r->prefix, plen);
    return n + (long)plen;
}

/* Asks `scan` for one page and adds its keys to `seen`; *done when the scan had ended. */
static mqstate_status scan_page(mqstate_scan *scan, struct keylist *seen, int *done) {
    mqstate_scan_page *page = NULL;
    mqstate_status st = mqstate_scan_next(scan, NULL, &page);
    *done = st == MQSTATE_STATUS_OK && page == NULL;
    for (size_t i = 0; i < mqstate_scan_page_count(page); i++) {
        size_t len = 0;
        const uint8_t *key = mqstate_scan_page_key(page, i, &len);
        keys_add(seen, key, len);
    }
    mqstate_scan_page_free(page);
    return st;
}

static mqstate_status scan_rest(mqstate_scan *scan, struct keylist *seen) {
    int done = 0;
    mqstate_status st = MQSTATE_STATUS_OK;
    while (st == MQSTATE_STATUS_OK && !done) st = scan_page(scan, seen, &done);
    return st;
}

struct bkey {
    const uint8_t *p;
    size_t len;
};

static int bkey_cmp(const void *a, const void *b) {
    const struct bkey *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->p, y->p, n) : 0;
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Sorts and removes repeats; the new count. */
static size_t bkey_unique(struct bkey *k, size_t n) {
    qsort(k, n, sizeof *k, bkey_cmp);
    size_t out = 0;
    for (size_t i = 0; i < n; i++)
        if (out == 0 || bkey_cmp(&k[out - 1], &k[i]) != 0) k[out++] = k[i];
    return out;
}

static int bkey_has(const struct bkey *k, size_t n, const uint8_t *p, size_t len) {
    struct bkey want = {p, len};
    return bsearch(&want, k, n, sizeof *k, bkey_cmp) != NULL;
}

/* The scan expectations of tests/scenarios/README.md over the keys a scan returned. */
static int expect_keys(struct run *r, const cJSON *s, const struct keylist *got) {
    size_t plen = strlen(r->prefix), n = got->n;
    struct bkey *found = calloc(n + 1, sizeof *found);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (got->lens[i] < plen || memcmp(got->keys[i], r->prefix, plen) != 0) {
            free(found);
            return fail(r, "key %.*s is outside this run", (int)got->lens[i], (const char *)got->keys[i]);
        }
        found[i].p = got->keys[i] + plen;
        found[i].len = got->lens[i] - plen;
    }
    size_t distinct = bkey_unique(found, n);
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(s, "keys");
    const cJSON *keys_hex = cJSON_GetObjectItemCaseSensitive(s, "keys_hex");
    if (keys || keys_hex) {
        size_t cap = (size_t)cJSON_GetArraySize(keys) + (size_t)cJSON_GetArraySize(keys_hex);
        struct bkey *want = calloc(cap + 1, sizeof *want);
        uint8_t *bufs = malloc(cap * 256 + 1);
        size_t w = 0;
        const cJSON *k;
        cJSON_ArrayForEach(k, keys) {
            want[w].p = (const uint8_t *)k->valuestring;
            want[w++].len = strlen(k->valuestring);
        }
        cJSON_ArrayForEach(k, keys_hex) {
            long len = unhex(k->valuestring, bufs + w * 256, 256);
            want[w].p = bufs + w * 256;
            want[w++].len = len < 0 ? 0 : (size_t)len;
        }
        w = bkey_unique(want, w);
        int same = w == distinct;
        for (size_t i = 0; same && i < w; i++) same = bkey_cmp(&want[i], &found[i]) == 0;
        if (!same) rc = fail(r, "%lu distinct keys, not the %lu expected", (unsigned long)distinct,
                             (unsigned long)w);
        free(want);
        free(bufs);
    }
    const char *lists[] = {"includes", "excludes"};
    for (int l = 0; l < 2 && rc == 0; l++) {
        const cJSON *k;
        cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(s, lists[l])) {
            int has = bkey_has(found, distinct, (const uint8_t *)k->valuestring, strlen(k->valuestring));
            if (has != (l == 0)) {
                rc = fail(r, "%s %s", k->valuestring, l == 0 ? "is missing" : "is listed");
                break;
            }
        }
    }
    long total = (long)distinct;
    if (rc == 0 && (num(s, "total", total) != total || num(s, "min_total", total) > total ||
                    num(s, "max_total", total) < total))
        rc = fail(r, "%ld distinct keys", total);
    int no_repeats = 0;
    if (rc == 0 && has_bool(s, "no_repeats", &no_repeats) && no_repeats && distinct != n)
        rc = fail(r, "%lu keys returned, %lu distinct", (unsigned long)n, (unsigned long)distinct);
    free(found);
    return rc;
}

/* The scan ops: fill, scan, scan_start, scan_page, scan_rest. 1 when `op` is none of them. */
static int scan_step(struct run *r, const cJSON *s, const char *op, mqstate_status *st, int *rc) {
    uint8_t pat[1024];
    *rc = 0;
    if (strcmp(op, "fill") == 0) {
        uint8_t vbuf[4096];
        long vlen = value_of(s, vbuf, sizeof vbuf);
        const char *kp = str(s, "key_prefix");
        long count = num(s, "count", -1);
        if (vlen < 0 || kp == NULL || count < 0) {
            *rc = fail(r, "fill needs key_prefix, count and a value");
            return 0;
        }
        char key[512];
        for (long i = 0; i < count && *st == MQSTATE_STATUS_OK; i++) {
            snprintf(key, sizeof key, "%s%s%04ld", r->prefix, kp, i);
            *st = mqstate_client_set(client_of(r, s), (const uint8_t *)key, strlen(key), vbuf,
                                     (size_t)vlen, NULL, NULL, NULL);
        }
    } else if (strcmp(op, "scan") == 0 || strcmp(op, "scan_start") == 0) {
        long plen = pattern_of(r, s, pat, sizeof pat);
        mqstate_scan *scan = NULL;
        if (plen < 0) {
            *rc = fail(r, "bad pattern");
            return 0;
        }
        uint32_t timeout = (uint32_t)num(s, "timeout_ms", 0);
        *st = mqstate_client_scan(client_of(r, s), pat, (size_t)plen, timeout, &scan);
        if (*st != MQSTATE_STATUS_OK) return 0;
        if (op[4] == '_') {
            struct pager *p = calloc(1, sizeof *p);
            p->scan = scan;
            put(r->pagers, MAX_NAMES, str(s, "as"), p);
            return 0;
        }
        struct keylist seen = {0};
        int done = 0;
        while (*st == MQSTATE_STATUS_OK && !done) {
            mqstate_scan_page *page = NULL;
            *st = mqstate_scan_next(scan, NULL, &page);
            done = *st == MQSTATE_STATUS_OK && page == NULL;
            for (size_t i = 0; i < mqstate_scan_page_count(page); i++) {
                size_t len = 0;
                const uint8_t *key = mqstate_scan_page_key(page, i, &len);
                keys_add(&seen, key, len);
            }
            mqstate_scan_page_free(page);
        }
        if (*st == MQSTATE_STATUS_OK) *rc = expect_keys(r, s, &seen);
        keys_free(&seen);
        mqstate_scan_free(scan);
    } else if (strcmp(op, "scan_page") == 0 || strcmp(op, "scan_rest") == 0) {
        struct pager *p = find(r->pagers, MAX_NAMES, str(s, "pager"));
        int done = 0;
        if (p == NULL) {
            *rc = fail(r, "no such pager");
            return 0;
        }
        if (strcmp(op, "scan_page") == 0) {
            *st = scan_page(p->scan, &p->seen, &done);
            if (*st == MQSTATE_STATUS_OK && done) *rc = fail(r, "the scan had already ended");
            else if (*st == MQSTATE_STATUS_OK)
                *rc = expect_bool(r, s, "last", mqstate_scan_is_done(p->scan));
        } else {
            *st = scan_rest(p->scan, &p->seen);
            if (*st == MQSTATE_STATUS_OK) *rc = expect_keys(r, s, &p->seen);
        }
    } else {
        return 1;
    }
    return 0;
}

/* One step: 0 done (with *st the API status), -1 expectation failed. */
static int step(struct run *r, const cJSON *s, mqstate_status *st) {
    const char *op = str(s, "op");
    if (strcmp(op, "connect") != 0 && str(s, "lock") == NULL && str(s, "election") == NULL &&
        str(s, "subscription") == NULL && strcmp(op, "sleep") != 0 && is_closed(r, s)) {
        *st = MQSTATE_STATUS_CLOSED;
        return 0;
    }
    char kbuf[512];
    uint8_t vbuf[4096];
    const char *key = key_of(r, s, "key", kbuf, sizeof kbuf);
    size_t klen = key ? strlen(key) : 0;
    *st = MQSTATE_STATUS_OK;
    int scan_rc = 0;
    if (scan_step(r, s, op, st, &scan_rc) == 0) return scan_rc;
    if (str(s, "key_hex")) {
        size_t plen = strlen(r->prefix);
        long n = unhex(str(s, "key_hex"), (uint8_t *)kbuf + plen, sizeof kbuf - plen);
        if (n < 0) return fail(r, "bad key_hex");
        memcpy(kbuf, r->prefix, plen);
        key = kbuf;
        klen = plen + (size_t)n;
    }
    if (strcmp(op, "connect") == 0) {
        const char *name = str(s, "client");
        *st = connect_client(r, s, name ? name : "a");
    } else if (strcmp(op, "close") == 0) {
        const char *name = str(s, "client");
        mqstate_client_close(client_of(r, s));
        put(r->clients, MAX_NAMES, name ? name : "a", NULL);
        for (int i = 0; i < MAX_NAMES; i++) {
            if (r->closed[i][0] == '\0') {
                snprintf(r->closed[i], sizeof r->closed[i], "%s", name ? name : "a");
                break;
            }
        }
    } else if (strcmp(op, "sleep") == 0) {
        long ms = num(s, "ms", 0);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    } else if (strcmp(op, "set") == 0) {
        mqstate_set_options o;
        char *owned = NULL, *version = NULL;
        bool applied = false;
        memset(&o, 0, sizeof o);
        if (zero_request_timeout(s)) {
            *st = MQSTATE_STATUS_INVALID_ARGUMENT;
            return 0;
        }
        o.timeout_ms = (uint32_t)num(s, "timeout_ms", 0);
        /* The condition's text, parsed by the core as in every language. */
        *st = mqstate_set_condition_parse(str(s, "condition"), &o.condition);
        if (*st != MQSTATE_STATUS_OK) return 0;
        o.expiry_ms = (uint64_t)num(s, "expiry_ms", 0);
        if (cJSON_GetObjectItemCaseSensitive(s, "expiry_ms") && o.expiry_ms == 0) {
            *st = MQSTATE_STATUS_INVALID_ARGUMENT; /* C has no "zero expiry": 0 means none */
            return 0;
        }
        int persist = 0;
        has_bool(s, "persist", &persist);
        o.persist = persist;
        o.fencing_token = token_of(r, s, st, &owned);
        if (*st != MQSTATE_STATUS_OK) return 0;
        long vlen = value_of(s, vbuf, sizeof vbuf);
        *st = mqstate_client_set(client_of(r, s), (const uint8_t *)key, klen, vbuf, (size_t)vlen, &o,
                                 &applied, &version);
        mqstate_string_free(owned);
        int rc = *st == MQSTATE_STATUS_OK
                     ? (expect_bool(r, s, "applied", applied) || check_version(r, s, version))
                     : 0;
        mqstate_string_free(version);
        return rc;
    } else if (strcmp(op, "get") == 0) {
        mqstate_value *v = NULL;
        mqstate_call_options o;
        memset(&o, 0, sizeof o);
        if (zero_request_timeout(s)) {
            *st = MQSTATE_STATUS_INVALID_ARGUMENT;
            return 0;
        }
        o.timeout_ms = (uint32_t)num(s, "timeout_ms", 0);
        *st = mqstate_client_get(client_of(r, s), (const uint8_t *)key, klen, &o, &v);
        if (*st != MQSTATE_STATUS_OK) return 0;
        int missing = 0, rc = 0;
        long want = value_of(s, vbuf, sizeof vbuf);
        has_bool(s, "missing", &missing);
        size_t len = 0;
        const uint8_t *data = v ? mqstate_value_data(v, &len) : NULL;
        if (missing && v) rc = fail(r, "want missing");
        else if (!missing && want >= 0 && (!v || len != (size_t)want || (len && memcmp(data, vbuf, len))))
            rc = fail(r, "value differs or is missing");
        if (rc == 0) rc = check_version(r, s, v ? mqstate_value_version(v) : NULL);
        mqstate_value_free(v);
        return rc;
    } else if (strcmp(op, "del") == 0 || strcmp(op, "vdel") == 0) {
        mqstate_call_options o;
        char *owned = NULL;
        memset(&o, 0, sizeof o);
        o.fencing_token = token_of(r, s, st, &owned);
        if (*st != MQSTATE_STATUS_OK) return 0;
        int rc = 0;
        if (op[0] == 'd') {
            uint64_t n = 0;
            *st = mqstate_client_delete(client_of(r, s), (const uint8_t *)key, klen, &o, &n);
            if (*st == MQSTATE_STATUS_OK && num(s, "count", (long)n) != (long)n)
                rc = fail(r, "count %lu", (unsigned long)n);
        } else {
            mqstate_vdel_outcome out;
            long vlen = value_of(s, vbuf, sizeof vbuf);
            *st = mqstate_client_vdel(client_of(r, s), (const uint8_t *)key, klen, vbuf, (size_t)vlen, &o, &out);
            const char *got = mqstate_vdel_outcome_name(out), *want = str(s, "outcome");
            if (*st == MQSTATE_STATUS_OK && want && strcmp(want, got) != 0)
                rc = fail(r, "outcome %s, want %s", got, want);
        }
        mqstate_string_free(owned);
        return rc;
    } else if (strcmp(op, "observe") == 0) {
        mqstate_subscription *sub = NULL;
        *st = mqstate_client_observe(client_of(r, s), (const uint8_t *)key, klen, NULL, &sub);
        if (*st == MQSTATE_STATUS_OK) put(r->subs, MAX_NAMES, str(s, "as"), sub);
    } else if (strcmp(op, "unobserve") == 0) {
        mqstate_subscription_free(find(r->subs, MAX_NAMES, str(s, "subscription")));
        put(r->subs, MAX_NAMES, str(s, "subscription"), NULL);
    } else if (strcmp(op, "expect_notification") == 0 || strcmp(op, "expect_no_notification") == 0) {
        mqstate_subscription *sub = find(r->subs, MAX_NAMES, str(s, "subscription"));
        mqstate_sub_event *e = NULL;
        int none = strcmp(op, "expect_no_notification") == 0;
        uint32_t wait = (uint32_t)num(s, none ? "for_ms" : "timeout_ms", none ? 300 : 5000);
        mqstate_status got;
        for (;;) {
            got = mqstate_subscription_next(sub, wait, &e);
            if (got != MQSTATE_STATUS_OK) break;
            mqstate_sub_event_type t = mqstate_sub_event_type_of(e);
            if (t == MQSTATE_SUB_EVENT_TYPE_KEY_SET || t == MQSTATE_SUB_EVENT_TYPE_KEY_DELETED) break;
            mqstate_sub_event_free(e);
            e = NULL;
        }
        if (none) {
            mqstate_sub_event_free(e);
            return got == MQSTATE_STATUS_OK ? fail(r, "an unexpected notification") : 0;
        }
        if (got != MQSTATE_STATUS_OK) {
            *st = got; /* the API's own wait (0: do not wait): its status is the step's */
            return 0;
        }
        int rc = 0;
        const char *kind = str(s, "event");
        mqstate_sub_event_type t = mqstate_sub_event_type_of(e);
        long want = value_of(s, vbuf, sizeof vbuf);
        size_t len = 0;
        const uint8_t *v = mqstate_sub_event_value(e, &len);
        if (kind && strcmp(kind, t == MQSTATE_SUB_EVENT_TYPE_KEY_SET ? "set" : "delete") != 0)
            rc = fail(r, "notified the other kind");
        else if (t == MQSTATE_SUB_EVENT_TYPE_KEY_SET && want >= 0 && (len != (size_t)want || (len && memcmp(v, vbuf, len))))
            rc = fail(r, "notified another value");
        if (rc == 0) rc = check_version(r, s, mqstate_sub_event_version(e));
        mqstate_sub_event_free(e);
        return rc;
    } else if (strcmp(op, "lock") == 0) {
        mqstate_lock_options o;
        mqstate_lock *lock = NULL;
        memset(&o, 0, sizeof o);
        o.holder = str(s, "holder");
        o.session_id = str(s, "session_id");
        o.auto_renew_ms = (uint64_t)num(s, "auto_renew_ms", 0);
        *st = mqstate_lock_new(client_of(r, s), (const uint8_t *)key, klen, &o, &lock);
        if (*st == MQSTATE_STATUS_OK) put(r->locks, MAX_NAMES, str(s, "as"), lock);
    } else if (str(s, "lock")) {
        mqstate_lock *lock = find(r->locks, MAX_NAMES, str(s, "lock"));
        uint64_t lease = (uint64_t)num(s, "lease_ms", 0); /* 0: the core's default */
        char *token = NULL;
        bool flag = false;
        int rc = 0;
        if (strcmp(op, "try_acquire") == 0) {
            *st = mqstate_lock_try_acquire(lock, lease, &flag, &token);
            if (*st == MQSTATE_STATUS_OK) rc = expect_bool(r, s, "acquired", flag) || check_version(r, s, token);
        } else if (strcmp(op, "acquire") == 0) {
            /* A wait: without limit unless given; 0 is "do not wait". */
            uint32_t wait = (uint32_t)num(s, "timeout_ms", (long)MQSTATE_WAIT_FOREVER);
            *st = mqstate_lock_acquire(lock, lease, wait, NULL, &token);
            if (*st == MQSTATE_STATUS_OK) rc = check_version(r, s, token);
        } else if (strcmp(op, "renew") == 0) {
            *st = mqstate_lock_renew(lock, &flag, &token);
            if (*st == MQSTATE_STATUS_OK) rc = expect_bool(r, s, "renewed", flag) || check_version(r, s, token);
        } else if (strcmp(op, "release") == 0) {
            *st = mqstate_lock_release(lock, &flag);
            if (*st == MQSTATE_STATUS_OK) rc = expect_bool(r, s, "released", flag);
        } else if (strcmp(op, "is_held") == 0) {
            rc = expect_bool(r, s, "held", mqstate_lock_is_held(lock));
        } else if (strcmp(op, "holder") == 0) {
            *st = mqstate_lock_holder(lock, &token);
            const char *want = str(s, "holder_of")
                                   ? mqstate_lock_holder_id(find(r->locks, MAX_NAMES, str(s, "holder_of")))
                                   : str(s, "holder");
            if (*st == MQSTATE_STATUS_OK && ((want == NULL) != (token == NULL) || (want && strcmp(want, token) != 0)))
                rc = fail(r, "holder %s, want %s", token ? token : "(none)", want ? want : "(none)");
        } else if (strcmp(op, "edit") == 0) {
            struct edit_action ctx = {cJSON_GetObjectItemCaseSensitive(s, "action")};
            *st = mqstate_lock_edit(lock, (const uint8_t *)key, klen, lease, (uint32_t)num(s, "timeout_ms", 0),
                                    decide, &ctx, NULL);
            if (*st == MQSTATE_STATUS_OK && str(s, "save_version")) {
                mqstate_value *v = NULL;
                mqstate_client_get(client_of(r, s), (const uint8_t *)key, klen, NULL, &v);
                rc = check_version(r, s, v ? mqstate_value_version(v) : NULL);
                mqstate_value_free(v);
            }
        } else {
            return fail(r, "unknown lock op %s", op);
        }
        mqstate_string_free(token);
        return rc;
    } else if (strcmp(op, "election") == 0) {
        mqstate_election *e = NULL;
        key = key_of(r, s, "name", kbuf, sizeof kbuf);
        *st = mqstate_election_new(client_of(r, s), (const uint8_t *)key, strlen(key), str(s, "candidate"), NULL, &e);
        if (*st == MQSTATE_STATUS_OK) put(r->elections, MAX_NAMES, str(s, "as"), e);
    } else if (str(s, "election")) {
        mqstate_election *e = find(r->elections, MAX_NAMES, str(s, "election"));
        uint64_t term = (uint64_t)num(s, "term_ms", 0); /* 0: the core's default */
        bool flag = false;
        char *text = NULL;
        int rc = 0;
        if (strcmp(op, "campaign") == 0) {
            uint32_t wait = (uint32_t)num(s, "timeout_ms", (long)MQSTATE_WAIT_FOREVER);
            *st = mqstate_election_campaign(e, term, wait, NULL, &text);
            if (*st == MQSTATE_STATUS_OK) rc = check_version(r, s, text);
        } else if (strcmp(op, "try_campaign") == 0) {
            *st = mqstate_election_try_campaign(e, term, &flag);
            if (*st == MQSTATE_STATUS_OK) rc = expect_bool(r, s, "elected", flag);
        } else if (strcmp(op, "resign") == 0) {
            *st = mqstate_election_resign(e, &flag);
            if (*st == MQSTATE_STATUS_OK) rc = expect_bool(r, s, "resigned", flag);
        } else if (strcmp(op, "is_leader") == 0) {
            rc = expect_bool(r, s, "leader_now", mqstate_election_is_leader(e));
        } else if (strcmp(op, "leader") == 0) {
            *st = mqstate_election_leader(e, &text);
            const char *want = str(s, "leader");
            if (*st == MQSTATE_STATUS_OK && ((want == NULL) != (text == NULL) || (want && strcmp(want, text) != 0)))
                rc = fail(r, "leader %s, want %s", text ? text : "(none)", want ? want : "(none)");
        } else {
            return fail(r, "unknown election op %s", op);
        }
        mqstate_string_free(text);
        return rc;
    } else {
        return fail(r, "unknown op %s", op);
    }
    return 0;
}

static void cleanup(struct run *r) {
    for (int i = 0; i < MAX_NAMES; i++) {
        mqstate_subscription_free(r->subs[i].ptr);
        mqstate_lock_free(r->locks[i].ptr);
        mqstate_election_free(r->elections[i].ptr);
        struct pager *p = r->pagers[i].ptr;
        if (p) {
            mqstate_scan_free(p->scan);
            keys_free(&p->seen);
            free(p);
        }
        free(r->pagers[i].name);
        free(r->subs[i].name);
        free(r->locks[i].name);
        free(r->elections[i].name);
    }
    for (int i = 0; i < MAX_NAMES; i++) {
        mqstate_client_close(r->clients[i].ptr);
        free(r->clients[i].name);
    }
    for (int i = 0; i < 64; i++) {
        free(r->vars[i].name);
        free(r->vars[i].ptr);
    }
}

/* Runs one scenario; 0 when it passes (else a message on stderr). */
static int run_scenario(const char *url, const cJSON *scenario, const char *name) {
    static unsigned counter = 0;
    struct run r;
    memset(&r, 0, sizeof r);
    r.url = url;
    snprintf(r.prefix, sizeof r.prefix, "scn/c%lx%u/", (unsigned long)time(NULL), counter++);
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(scenario, "steps");
    const char *client_ops[] = {"close", "set",  "get",  "del",        "vdel",
                                "observe", "lock", "election", "fill", "scan", "scan_start"};
    int rc = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, steps) {
        const char *op = str(s, "op");
        for (size_t i = 0; i < sizeof client_ops / sizeof *client_ops; i++) {
            const char *c = str(s, "client");
            if (strcmp(op, client_ops[i]) == 0 && !find(r.clients, MAX_NAMES, c ? c : "a")) {
                if (connect_client(&r, s, c ? c : "a") != MQSTATE_STATUS_OK) {
                    fprintf(stderr, "%s: cannot connect: %s\n", name, mqstate_status_name(0));
                    rc = 1;
                }
            }
        }
    }
    int i = 0;
    cJSON_ArrayForEach(s, steps) {
        if (rc) break;
        mqstate_status st = MQSTATE_STATUS_OK;
        const char *want = str(s, "error");
        char *text = cJSON_PrintUnformatted(s);
        if (step(&r, s, &st) != 0) {
            fprintf(stderr, "%s: step %d %s: %s\n", name, i, text, r.why);
            rc = 1;
        } else if (want && strcmp(mqstate_status_name(st), want) != 0) {
            fprintf(stderr, "%s: step %d %s: %s, want %s\n", name, i, text, mqstate_status_name(st), want);
            rc = 1;
        } else if (!want && st != MQSTATE_STATUS_OK) {
            char msg[256];
            mqstate_last_error_message(msg, sizeof msg);
            fprintf(stderr, "%s: step %d %s: %s (%s)\n", name, i, text, mqstate_status_name(st), msg);
            rc = 1;
        }
        free(text);
        i++;
    }
    cleanup(&r);
    return rc;
}

static cJSON *load(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    cJSON *json = cJSON_Parse(buf);
    free(buf);
    return json;
}

static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *url, const char *dir_path, unsigned shard, unsigned shards);

int main(int argc, char **argv) {
    if ((argc == 3 || argc == 4) && strcmp(argv[1], "--local") == 0) {
        /* Against a store of this process's own (mqstate_local_store), not MQSTATE_URL;
           with K/N, only the files whose index is K modulo N (shards run in parallel). */
        unsigned shard = 0, shards = 1;
        if (argc == 4 && (sscanf(argv[3], "%u/%u", &shard, &shards) != 2 || shard >= shards)) {
            fprintf(stderr, "bad shard %s (want K/N, K < N)\n", argv[3]);
            return 2;
        }
        mqstate_local_store *store = NULL;
        if (mqstate_local_store_start(&store) != MQSTATE_STATUS_OK) {
            char msg[256];
            mqstate_last_error_message(msg, sizeof msg);
            fprintf(stderr, "cannot start a local store: %s\n", msg);
            return 1;
        }
        printf("against the local store at %s\n", mqstate_local_store_url(store));
        int rc = run_dir(mqstate_local_store_url(store), argv[2], shard, shards);
        if (mqstate_local_store_stop(store) != MQSTATE_STATUS_OK) rc = 1;
        mqstate_local_store_free(store);
        return rc;
    }
    const char *url = getenv("MQSTATE_URL");
    if (!url || argc < 2) {
        fprintf(stderr, "usage: MQSTATE_URL=mqtt://… %s DIR | --negative FILE; %s --local DIR [K/N]\n",
                argv[0], argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "--negative") == 0 && argc == 3) {
        cJSON *scenario = load(argv[2]);
        cJSON *steps = cJSON_GetObjectItemCaseSensitive(scenario, "steps"), *s;
        int passes = run_scenario(url, scenario, "as written") == 0;
        cJSON_ArrayForEach(s, steps) {
            if (strcmp(str(s, "op"), "get") == 0) {
                cJSON_ReplaceItemInObject(s, "value", cJSON_CreateString("not what was set"));
            }
        }
        int fails = run_scenario(url, scenario, "with a wrong expectation (expected to fail)") != 0;
        cJSON_Delete(scenario);
        printf("negative control: %s\n", passes && fails ? "ok" : "FAILED");
        return passes && fails ? 0 : 1;
    }
    return run_dir(url, argv[1], 0, 1);
}

/* Runs the scenarios of `dir_path` (shard `shard` of `shards`: every file whose index in
   name order is `shard` modulo `shards`) against `url`; 0 when all pass (and the shard has
   its share of 40 at least). */
static int run_dir(const char *url, const char *dir_path, unsigned shard, unsigned shards) {
    DIR *dir = opendir(dir_path);
    if (!dir) {
        fprintf(stderr, "cannot open %s\n", dir_path);
        return 2;
    }
    char *names[512];
    size_t n = 0;
    struct dirent *d;
    while ((d = readdir(dir)) && n < 512) {
        size_t len = strlen(d->d_name);
        if (len > 5 && strcmp(d->d_name + len - 5, ".json") == 0) names[n++] = strdup(d->d_name);
    }
    closedir(dir);
    qsort(names, n, sizeof *names, cmp);
    int passed = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        if (i % shards != shard) {
            free(names[i]);
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", dir_path, names[i]);
        cJSON *scenario = load(path);
        if (!scenario) {
            fprintf(stderr, "%s: not valid JSON\n", names[i]);
            failed++;
        } else if (run_scenario(url, scenario, names[i]) == 0) {
            passed++;
        } else {
            failed++;
        }
        cJSON_Delete(scenario);
        free(names[i]);
    }
    printf("scenarios: %d passed, %d failed\n", passed, failed);
    return failed == 0 && (unsigned)passed * shards >= 40 ? 0 : 1;
}
