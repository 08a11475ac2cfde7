/* Native scanner for the hot path of parsers/server_log/.
 *
 * One call takes a block of a log (whole lines, cut at a newline) and, without creating a Python
 * object per line:
 *   - splits it into lines, decoding each as Python's bytes.decode("utf-8", "backslashreplace")
 *     does and dropping one trailing '\r' (what parsers.lines gives the polars path);
 *   - parses plain scheduler stats lines (`[date time tags] Decode batch, key: value, ...`, bare or
 *     in a k8s CRI `F` record: most lines of a PD log) straight into typed columns;
 *   - splits every other line with a plain sglang prefix into time, rank tags and message,
 *     and reads whole the two commonest of them: canonical uvicorn access lines and request logs
 *     (`Receive: ...` / `Finish: ...`);
 * each with the values the polars path of parsers/server_log/ would give it.
 *
 * It is conservative by design: any line it is not certain about (an odd value, a date it would
 * have to judge, non-ASCII text where it matters, an iteration tag, a file's cut last line) is left to
 * the polars path, which stays the reference. tests/test_native.py checks that both give
 * identical tables.
 *
 * What it matches by name comes from the Python grammar (server_log/grammar.py) through a Config
 * object at run time: the stats keys and their columns, the rank tags, the literals that leave a
 * line to polars, the request-log leaders. The shapes it reads by hand (prefix and CRI time, the
 * stats item list, the canonical access line, the request fields) mirror patterns of the grammar
 * and are held to them by tests/test_native.py.
 *
 * The result is a dict of buffers (Mem objects, parsers/_native.h) laid out as Arrow buffers
 * (validity bitmaps, int64 offsets), which parsers/native.py wraps into Arrow arrays without
 * copying them.
 */
#define _GNU_SOURCE /* memmem */
#define NATIVE_MODULE "_fastlog"
#include "_native.h"

#define MAX_KEYS 64
#define MAX_COLS 32
#define MAX_ITEMS 64
#define MAX_RANKS 8
#define MAX_LITS 64
#define MAX_LEADERS 8

/* ---- configuration: the grammar's tables (server_log/grammar.py), one immutable object ------- */

/* What a literal means where it occurs (server_log/scanner.py, `literals`) */
enum {
    LIT_FIELD = 1, /* the polars path looks for a rid, room, request field or rank by it: an access line with it is left */
    LIT_ROOM = 2,  /* a room pattern other than `bootstrap_room=` may match from it */
    LIT_LEAVE = 4, /* a request log line with it is left to polars */
    LIT_DIGIT = 8, /* counts only when a digit follows */
};

typedef struct {
    char key[64];
    int len;
    int col[2]; /* column on the prefill [0] / decode [1] side; -1: known key with no column there */
    char graph[16];
    int graph_len; /* the backend of a `<backend> graph` key, else 0 */
} KeyDef;

typedef struct {
    char s[32];
    int len, flags;
} Lit;

typedef struct {
    char s[32];
    int len, kind; /* 1 request_received, 2 request_finished */
} Leader;

/* Built once by Config(...) and never written again: scan() reads it with the GIL released, and
 * the call's argument tuple keeps it alive, so a configuration made meanwhile cannot race it. */
typedef struct {
    PyObject_HEAD
    KeyDef keys[MAX_KEYS];
    int nkeys;
    char types[MAX_COLS]; /* 'i' int, 'f' float, 'p' percent, 'b' bool */
    int ncols;
    char rank_tag[MAX_RANKS][16];
    size_t rank_len[MAX_RANKS];
    int nranks;
    uint8_t rank_by_letter[256]; /* rank index + 1 by the tag's first letter (the letters differ) */
    Lit lits[MAX_LITS];
    int nlits;
    /* By the first two bytes (PAIR) of a literal: the first of the LIT_FIELD literals starting so
     * (index + 1, 0 none), then field_next[index] the next one (-1 none); likewise req_lits for
     * the LIT_ROOM and LIT_LEAVE ones, in req_pairs beside REQ_CASE for the fields try_request
     * reads by hand. One look-up a byte, rather than a test of every literal where one might start. */
    uint8_t field_pairs[1 << 16];
    int8_t field_next[MAX_LITS];
    uint8_t req_pairs[1 << 16];
    int8_t req_next[MAX_LITS];
    Leader leaders[MAX_LEADERS];
    int nleaders;
} Config;

#define REQ_CASE 0x80 /* in req_pairs: a field try_request reads by hand may start here */

/* ---- string columns (buffers and bitmaps: parsers/_native.h) ---------------------------------- */

/* A column of strings in Arrow large_string layout, with a validity bitmap. */
typedef struct {
    Buf off, data, valid;
    int64_t n;
} StrCol;

static int strcol_init(StrCol *c) {
    int64_t z = 0;
    memset(c, 0, sizeof *c);
    return buf_put(&c->off, &z, 8);
}

static inline int strcol_push(StrCol *c, const char *s, size_t n, int valid) {
    if (valid && n && buf_put(&c->data, s, n)) return -1;
    int64_t end = (int64_t)c->data.len;
    if (buf_put(&c->off, &end, 8)) return -1;
    if (bit_append(&c->valid, c->n, valid)) return -1;
    c->n++;
    return 0;
}

static void strcol_free(StrCol *c) {
    buf_free(&c->off);
    buf_free(&c->data);
    buf_free(&c->valid);
}

/* ---- small parsers --------------------------------------------------------------------------- */

/* memcmp(a, b, n) == 0, inline: the compared spans are short (keys, tags, literals), and a call
 * to memcmp per item cost more than the compare */
static inline int eq_u64(const uint8_t *x, const uint8_t *y) {
    uint64_t u, v;
    memcpy(&u, x, 8), memcpy(&v, y, 8);
    return u == v;
}
static inline int eq_u32(const uint8_t *x, const uint8_t *y) {
    uint32_t u, v;
    memcpy(&u, x, 4), memcpy(&v, y, 4);
    return u == v;
}
static inline int eq_u16(const uint8_t *x, const uint8_t *y) {
    uint16_t u, v;
    memcpy(&u, x, 2), memcpy(&v, y, 2);
    return u == v;
}

/* The tail is one more word that overlaps the last one compared, not a byte loop, which cost a
 * large share of a decode block's instructions. Reads stay within the n bytes. */
static inline int eqn(const void *a, const void *b, size_t n) {
    const uint8_t *x = a, *y = b;
    if (n >= 8) {
        const uint8_t *xl = x + n - 8, *yl = y + n - 8;
        for (; x < xl; x += 8, y += 8)
            if (!eq_u64(x, y)) return 0;
        return eq_u64(xl, yl);
    }
    if (n >= 4) return eq_u32(x, y) && eq_u32(x + n - 4, y + n - 4);
    if (n >= 2) return eq_u16(x, y) && eq_u16(x + n - 2, y + n - 2);
    return n == 0 || *x == *y;
}

static inline int digits(const uint8_t *s, Py_ssize_t n, Py_ssize_t at, int k) {
    if (at + k > n) return 0;
    for (int i = 0; i < k; i++)
        if (!ISD(s[at + i])) return 0;
    return 1;
}

static int num2(const uint8_t *s) { return (s[0] - '0') * 10 + (s[1] - '0'); }

/* Value grammars the polars casts certainly agree on; anything else goes to the polars path. */
static int parse_int(const char *s, size_t n, int64_t *out) {
    size_t i = 0;
    int neg = 0;
    if (n && s[0] == '-') neg = 1, i = 1;
    size_t nd = n - i;
    if (nd == 0 || nd > 18) return 0;
    if (nd > 1 && s[i] == '0') return 0;
    int64_t v = 0;
    for (; i < n; i++) {
        if (!ISD(s[i])) return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return 1;
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int parse_float(const char *s, size_t n, double *out) {
    size_t i = 0, nd = 0, nf = 0;
    int neg = 0;
    uint64_t m = 0;
    if (n && s[0] == '-') i = 1, neg = 1;
    while (i < n && ISD(s[i])) m = m * 10 + (uint64_t)(s[i++] - '0'), nd++;
    if (nd == 0) return 0;
    if (i < n) {
        if (s[i] != '.') return 0;
        i++;
        while (i < n && ISD(s[i])) m = m * 10 + (uint64_t)(s[i++] - '0'), nf++;
        if (nf == 0 || i != n) return 0;
    }
    if (nd + nf <= 15) {
        /* Clinger's fast path: an integer below 2^53 and a power of ten up to 1e22 are both exact,
         * so one division is correctly rounded, as polars' parser (and strtod) round */
        double v = (double)m / POW10[nf];
        *out = neg ? -v : v;
        return 1;
    }
    if (n > 40) return 0;
    char tmp[48];
    memcpy(tmp, s, n);
    tmp[n] = 0;
    char *end;
    *out = strtod(tmp, &end);
    return end == tmp + n;
}

static inline int is_ascii(const uint8_t *p, Py_ssize_t n) {
    uint64_t acc = 0, w;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) memcpy(&w, p + i, 8), acc |= w;
    for (; i < n; i++) acc |= p[i];
    return !(acc & 0x8080808080808080ULL);
}

static int is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* ---- UTF-8 with backslashreplace, as CPython decodes (utf8_len: parsers/_native.h) ------------ */

/* Append a line to `c`, escaping invalid UTF-8 bytes as \xNN (each byte of an invalid sequence
 * is escaped on its own in CPython too: a continuation byte never starts a valid sequence). */
static int push_decoded(StrCol *c, const uint8_t *s, Py_ssize_t n, int ascii) {
    if (ascii) return strcol_push(c, (const char *)s, (size_t)n, 1);
    static const char hex[] = "0123456789abcdef";
    if (buf_reserve(&c->data, (size_t)n * 4)) return -1;
    char *o = c->data.p + c->data.len;
    Py_ssize_t i = 0;
    while (i < n) {
        int k = utf8_len(s + i, s + n);
        if (k) {
            memcpy(o, s + i, k);
            o += k;
            i += k;
        } else {
            *o++ = '\\';
            *o++ = 'x';
            *o++ = hex[s[i] >> 4];
            *o++ = hex[s[i] & 15];
            i++;
        }
    }
    size_t len = (size_t)(o - (c->data.p + c->data.len));
    c->data.len += len;
    int64_t end = (int64_t)c->data.len;
    if (buf_put(&c->off, &end, 8)) return -1;
    if (bit_append(&c->valid, c->n, 1)) return -1;
    c->n++;
    return 0;
}

/* ---- one stats line ---------------------------------------------------------------------- */

typedef struct {
    int kind; /* 0: not taken, 1: request_received, 2: request_finished */
    Py_ssize_t rid[2], fin[2], status[2];
    int has_fin, has_status, has_room, has_e2e, has_rank, has_tok[3];
    int64_t room, tok[3], rank;
    double e2e;
} Req;

typedef struct {
    int kind; /* 0 prefill, 1 decode */
    int64_t local_us;
    const char *raw;
    size_t raw_len;
    const char *cri;
    size_t cri_len; /* 0: no CRI record around the line */
    int64_t rank[MAX_RANKS];
    int has_rank[MAX_RANKS];
    int64_t ival[MAX_COLS];
    double fval[MAX_COLS];
    int set[MAX_COLS];
    int graph; /* -1 none, else the key naming the graph backend */
    int nextra;
    const char *ek[MAX_ITEMS], *ev[MAX_ITEMS];
    size_t ekl[MAX_ITEMS], evl[MAX_ITEMS];
    int last_key[MAX_ITEMS]; /* per item position: the key found there on the line before */
    Py_ssize_t body, msg, body_end; /* other sglang lines: where body and message start, body end */
    int access;                      /* ... and a canonical access message: peer, method, path, status */
    Py_ssize_t acc[4][2];
    Req req; /* ... or a request log line */
} Row;

static int find_key(const Config *cfg, int *last_key, const char *k, size_t n, int pos) {
    if (pos < MAX_ITEMS) {
        int j = last_key[pos];
        if (j >= 0 && j < cfg->nkeys && (size_t)cfg->keys[j].len == n && eqn(cfg->keys[j].key, k, n)) return j;
    }
    for (int j = 0; j < cfg->nkeys; j++)
        if ((size_t)cfg->keys[j].len == n && eqn(cfg->keys[j].key, k, n)) {
            if (pos < MAX_ITEMS) last_key[pos] = j;
            return j;
        }
    return -1;
}

/* CRI time: \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2}); returns its length or 0. */
static Py_ssize_t cri_time(const uint8_t *s, Py_ssize_t n) {
    if (!(digits(s, n, 0, 4) && n > 4 && s[4] == '-' && digits(s, n, 5, 2) && n > 7 && s[7] == '-' &&
          digits(s, n, 8, 2) && n > 10 && s[10] == 'T' && digits(s, n, 11, 2) && n > 13 && s[13] == ':' &&
          digits(s, n, 14, 2) && n > 16 && s[16] == ':' && digits(s, n, 17, 2)))
        return 0;
    Py_ssize_t p = 19;
    if (p < n && s[p] == '.') {
        Py_ssize_t q = p + 1;
        while (q < n && ISD(s[q])) q++;
        if (q == p + 1) return 0;
        p = q;
    }
    if (p < n && s[p] == 'Z') return p + 1;
    if (p < n && (s[p] == '+' || s[p] == '-')) {
        if (!digits(s, n, p + 1, 2)) return 0;
        p += 3;
        if (p < n && s[p] == ':') p++;
        if (!digits(s, n, p, 2)) return 0;
        return p + 2;
    }
    return 0;
}

/* The sglang prefix `[date time(.ms) tags]`, bare or in a CRI `F` record: fills the time, CRI and
 * rank fields of `r`, sets r->body to where the text after the CRI wrapper starts, and returns the
 * position right after the `]` (0: not such a line). */
static Py_ssize_t parse_header(const Config *cfg, const uint8_t *s, Py_ssize_t n, int year, Row *r) {
    Py_ssize_t p = 0;
    r->cri = NULL;
    r->cri_len = 0;
    r->body = 0;
    if (n == 0) return 0;
    if (s[0] != '[') {
        Py_ssize_t t = cri_time(s, n);
        if (!t) return 0;
        if (t + 9 > n || (!eqn(s + t, " stdout F", 9) && !eqn(s + t, " stderr F", 9))) return 0;
        r->cri = (const char *)s;
        r->cri_len = (size_t)t;
        p = t + 9;
        if (p < n && s[p] == ' ') p++;
        if (p >= n || s[p] != '[') return 0;
        r->body = p;
    }
    p++; /* '[' */
    Py_ssize_t d0 = p;
    int y, mo, dd;
    if (digits(s, n, p, 4) && p + 4 < n && s[p + 4] == '-' && digits(s, n, p + 5, 2) && p + 7 < n && s[p + 7] == '-' &&
        digits(s, n, p + 8, 2)) {
        y = (s[p] - '0') * 1000 + (s[p + 1] - '0') * 100 + (s[p + 2] - '0') * 10 + (s[p + 3] - '0');
        mo = num2(s + p + 5);
        dd = num2(s + p + 8);
        p += 10;
    } else if (digits(s, n, p, 2) && p + 2 < n && s[p + 2] == '-' && digits(s, n, p + 3, 2)) {
        y = year;
        mo = num2(s + p);
        dd = num2(s + p + 3);
        p += 5;
    } else
        return 0;
    if (!(p + 9 <= n && s[p] == ' ' && digits(s, n, p + 1, 2) && s[p + 3] == ':' && digits(s, n, p + 4, 2) &&
          s[p + 6] == ':' && digits(s, n, p + 7, 2)))
        return 0;
    int hh = num2(s + p + 1), mi = num2(s + p + 4), ss = num2(s + p + 7);
    p += 9;
    int ms = 0;
    if (p < n && s[p] == '.') {
        if (!digits(s, n, p + 1, 3)) return 0;
        ms = (s[p + 1] - '0') * 100 + (s[p + 2] - '0') * 10 + (s[p + 3] - '0');
        p += 4;
    }
    /* dates the polars parser would have to judge (leap seconds, Feb 30) stay with it */
    if (y < 1 || mo < 1 || mo > 12 || dd < 1 || dd > days_in_month(y, mo) || hh > 23 || mi > 59 || ss > 59) return 0;
    r->raw = (const char *)s + d0;
    r->raw_len = (size_t)(p - d0);
    r->local_us = ((days_from_civil(y, mo, dd) * 86400 + hh * 3600 + mi * 60 + ss) * 1000 + ms) * 1000;
    for (int k = 0; k < cfg->nranks; k++) r->has_rank[k] = 0;
    while (p < n && s[p] == ' ') {
        /* the tags start with distinct letters: one candidate */
        int found = p + 1 < n ? cfg->rank_by_letter[s[p + 1]] - 1 : -1;
        if (found < 0) return 0;
        size_t tl = cfg->rank_len[found];
        if (!((size_t)(n - p - 1) > tl && eqn(s + p + 1, cfg->rank_tag[found], tl) && ISD(s[p + 1 + tl]))) return 0;
        Py_ssize_t q = p + 1 + tl, q0 = q;
        int64_t v = 0;
        while (q < n && ISD(s[q])) v = v * 10 + (s[q++] - '0');
        if (q - q0 > 9) return 0; /* the Int32 cast of the polars path would fail: leave it there */
        if (!r->has_rank[found]) r->has_rank[found] = 1, r->rank[found] = v;
        p = q;
    }
    if (p >= n || s[p] != ']') return 0;
    return p + 1;
}

/* A plain stats line, its sglang prefix read up to p (parse_header; 0: none). */
static int try_stats(const Config *cfg, const uint8_t *s, Py_ssize_t n, Py_ssize_t p, Row *r) {
    if (!p || p >= n || s[p] != ' ') return 0;
    p++;
    if (p + 7 <= n && eqn(s + p, "Prefill", 7))
        r->kind = 0;
    else if (p + 6 <= n && eqn(s + p, "Decode", 6))
        r->kind = 1;
    else
        return 0;
    p += r->kind ? 6 : 7;
    if (p + 7 > n || !eqn(s + p, " batch", 6)) return 0;
    p += 6;
    if (s[p] != '.' && s[p] != ',') return 0; /* ` [iter]` and the rest: the polars path */
    p++;
    if (p < n && s[p] == ' ') p++;

    /* body: strip_chars_end(" \t\r"), then strip_chars_end(", ") */
    Py_ssize_t e = n;
    while (e > p && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) e--;
    while (e > p && (s[e - 1] == ',' || s[e - 1] == ' ')) e--;
    if (e == p) return 0;

    for (int c = 0; c < cfg->ncols; c++) r->set[c] = 0;
    r->graph = -1;
    r->nextra = 0;
    int pos = 0;
    Py_ssize_t i = p;
    for (;;) {
        /* item: [^,:]+ ": " [^,:]* , items joined by ", " */
        Py_ssize_t k0 = i;
        const uint8_t *comma = memchr(s + i, ',', (size_t)(e - i));
        Py_ssize_t j = comma ? comma - s : e;
        const uint8_t *c1 = memchr(s + i, ':', (size_t)(j - i));
        if (!c1) return 0;
        Py_ssize_t colon = c1 - s;
        if (colon == k0 || colon + 1 >= j || s[colon + 1] != ' ' || memchr(c1 + 1, ':', (size_t)(j - colon - 1)))
            return 0;
        const char *key = (const char *)s + k0, *val = (const char *)s + colon + 2;
        size_t kl = (size_t)(colon - k0), vl = (size_t)(j - colon - 2);
        int kid = find_key(cfg, r->last_key, key, kl, pos);
        if (kid < 0) {
            if (r->nextra >= MAX_ITEMS) return 0;
            r->ek[r->nextra] = key, r->ekl[r->nextra] = kl, r->ev[r->nextra] = val, r->evl[r->nextra] = vl;
            r->nextra++;
        } else {
            int col = cfg->keys[kid].col[r->kind];
            if (col >= 0 && !r->set[col]) { /* the first item of a column wins */
                const char *v = val;
                size_t l = vl;
                while (l && is_ws((uint8_t)v[0])) v++, l--;
                while (l && is_ws((uint8_t)v[l - 1])) l--;
                switch (cfg->types[col]) {
                case 'i':
                    if (!parse_int(v, l, &r->ival[col])) return 0;
                    break;
                case 'f':
                    if (!parse_float(v, l, &r->fval[col])) return 0;
                    break;
                case 'p':
                    if (l && v[l - 1] == '%') l--;
                    if (!parse_float(v, l, &r->fval[col])) return 0;
                    r->fval[col] /= 100.0;
                    break;
                case 'b':
                    if (l == 4 && eqn(v, "True", 4))
                        r->ival[col] = 1;
                    else if (l == 5 && eqn(v, "False", 5))
                        r->ival[col] = 0;
                    else
                        return 0;
                    break;
                default:
                    return 0;
                }
                r->set[col] = 1;
            }
            if (r->graph < 0 && cfg->keys[kid].graph_len) r->graph = kid;
        }
        pos++;
        if (j >= e) break;
        if (j + 1 >= e || s[j + 1] != ' ') return 0;
        i = j + 2;
        if (i >= e) return 0;
    }
    return 1;
}

/* A uvicorn access message in its canonical shape, `INFO:     <peer> - "<method> <path> <proto>" <status>`,
 * with none of the literals the polars path looks for rids, rooms, request fields or ranks by:
 * then its event fields are known (see server_log/events.py, `_ready_rows`). Returns 1 and the four spans. */
#define AT(m, n, i, lit) ((i) + (Py_ssize_t)sizeof(lit) - 1 <= (n) && eqn((m) + (i), lit, sizeof(lit) - 1))

/* The two bytes at m[i] as a table index. The byte loops look up each position's pair in a table
 * of the pairs their literals start with (Config.field_pairs, req_pairs), rather than its byte in
 * a table of first bytes: letters such as `t` and `r` start many positions of a reply's text, the
 * pairs few. Every literal has two bytes or more: a message's last byte starts none. */
#define PAIR(m, i) ((unsigned)(m)[i] | (unsigned)(m)[(i) + 1] << 8)

static inline int lit_at(const Lit *l, const uint8_t *m, Py_ssize_t n, Py_ssize_t i) {
    Py_ssize_t e = i + l->len;
    return e <= n && eqn(m + i, l->s, (size_t)l->len) && (!(l->flags & LIT_DIGIT) || (e < n && ISD(m[e])));
}

/* Does `m` hold a LIT_FIELD literal? */
static int has_field_literal(const Config *cfg, const uint8_t *m, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i + 1 < n; i++)
        for (int k = cfg->field_pairs[PAIR(m, i)] - 1; k >= 0; k = cfg->field_next[k])
            if (lit_at(&cfg->lits[k], m, n, i)) return 1;
    return 0;
}

static int token(const uint8_t *m, Py_ssize_t n, Py_ssize_t *p) {
    Py_ssize_t q = *p;
    while (q < n && m[q] > ' ' && m[q] < 0x7f && m[q] != '"') q++;
    if (q == *p) return 0;
    *p = q;
    return 1;
}

static int try_access(const Config *cfg, const uint8_t *m, Py_ssize_t n, Py_ssize_t span[4][2]) {
    if (n < 6 || !eqn(m, "INFO:", 5) || !is_ws(m[5])) return 0;
    Py_ssize_t p = 5;
    while (p < n && is_ws(m[p])) p++;
    span[0][0] = p;
    if (!token(m, n, &p) || p + 4 > n || !eqn(m + p, " - \"", 4)) return 0;
    span[0][1] = p;
    p += 4;
    span[1][0] = p;
    if (!token(m, n, &p) || p >= n || m[p] != ' ') return 0;
    span[1][1] = p++;
    span[2][0] = p;
    if (!token(m, n, &p) || p >= n || m[p] != ' ') return 0;
    span[2][1] = p;
    const uint8_t *q = memchr(m + p, '"', (size_t)(n - p));
    if (!q) return 0;
    p = q - m + 1;
    if (p + 4 > n || m[p] != ' ' || !digits(m, n, p + 1, 3)) return 0;
    span[3][0] = p + 1;
    span[3][1] = p + 4;
    return !has_field_literal(cfg, m, n);
}


/* The pairs the fields try_request reads by hand start with: a quoted request field
 * (quoted_field), `bootstrap_room`, `rid='` and `rank=`. */
static const char *REQ_FIELD_PAIRS[] = {"\"e", "\"f", "\"p", "\"c", "\"s", "'e", "'f", "'p", "'c", "'s", "bo", "ri", "ra"};

/* A request log line (`Receive: ...` / `Finish: ...`; docs/formats/SGLANG.md, "Request logs") in
 * ASCII: the fields the polars path extracts from it (server_log/events.py), found the way its regexes find them (the
 * leftmost match of the first pattern that matches). Where it would have to judge (a room written
 * another way, a peer address, an odd number), the line is left to polars. */

static int is_word(uint8_t c) { return ISD(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }

/* digits at p: their span end, and the value without leading zeros if it has <= maxd digits */
static Py_ssize_t number(const uint8_t *m, Py_ssize_t n, Py_ssize_t p, int maxd, uint64_t *v, int *fits) {
    Py_ssize_t q = p;
    int sig = 0;
    *v = 0;
    while (q < n && ISD(m[q])) {
        if (sig || m[q] != '0') sig++;
        if (sig <= 19) *v = *v * 10 + (uint64_t)(m[q] - '0');
        q++;
    }
    *fits = sig <= maxd;
    return q;
}

#define QUOTE(c) ((c) == '\'' || (c) == '"')

/* After a quote at i: `KEY['"]: ` then what the field's regex wants; fills q. 0: reject the line. */
static int quoted_field(const uint8_t *m, Py_ssize_t n, Py_ssize_t i, Req *q) {
    static const char *TOK[3] = {"prompt_tokens", "completion_tokens", "cached_tokens"};
    static const size_t TOKL[3] = {13, 17, 13};
    Py_ssize_t k = i + 1;
    if (!q->has_fin && AT(m, n, k, "finish_reason")) {
        /* ['"]finish_reason['"]: \{['"]type['"]: ['"](\w+) */
        Py_ssize_t j = k + 13;
        if (j + 12 < n && QUOTE(m[j]) && eqn(m + j + 1, ": {", 3) && QUOTE(m[j + 4]) &&
            eqn(m + j + 5, "type", 4) && QUOTE(m[j + 9]) && eqn(m + j + 10, ": ", 2) && QUOTE(m[j + 12])) {
            Py_ssize_t w0 = j + 13, w1 = w0;
            while (w1 < n && is_word(m[w1])) w1++;
            if (w1 > w0) q->fin[0] = w0, q->fin[1] = w1, q->has_fin = 1;
        }
        return 1;
    }
    for (int t = 0; t < 3; t++) {
        size_t kl = TOKL[t];
        if (q->has_tok[t] || k + (Py_ssize_t)kl > n || !eqn(m + k, TOK[t], kl)) continue;
        Py_ssize_t j = k + (Py_ssize_t)kl; /* ['"]KEY['"]: (\d+) */
        if (j + 3 < n && QUOTE(m[j]) && m[j + 1] == ':' && m[j + 2] == ' ' && ISD(m[j + 3])) {
            uint64_t v;
            int fits;
            number(m, n, j + 3, 18, &v, &fits);
            if (!fits) return 0;
            q->tok[t] = (int64_t)v, q->has_tok[t] = 1;
        }
        return 1;
    }
    if (!q->has_e2e && AT(m, n, k, "e2e_latency")) {
        Py_ssize_t j = k + 11; /* ['"]e2e_latency['"]: ([\d.]+) */
        if (j + 3 < n && QUOTE(m[j]) && m[j + 1] == ':' && m[j + 2] == ' ' && (ISD(m[j + 3]) || m[j + 3] == '.')) {
            Py_ssize_t v0 = j + 3, v1 = v0;
            while (v1 < n && (ISD(m[v1]) || m[v1] == '.')) v1++;
            if (!parse_float((const char *)m + v0, (size_t)(v1 - v0), &q->e2e)) return 0;
            q->has_e2e = 1;
        }
        return 1;
    }
    if (!q->has_status && AT(m, n, k, "status_code")) {
        Py_ssize_t j = k + 11; /* ['"]status_code['"]: (\d{3}) */
        if (j + 3 < n && QUOTE(m[j]) && m[j + 1] == ':' && m[j + 2] == ' ' && digits(m, n, j + 3, 3))
            q->status[0] = j + 3, q->status[1] = j + 6, q->has_status = 1;
    }
    return 1;
}

static int try_request(const Config *cfg, const uint8_t *m, Py_ssize_t n, Req *q) {
    int kind = 0;
    for (int k = 0; k < cfg->nleaders && !kind; k++)
        if (n >= cfg->leaders[k].len && eqn(m, cfg->leaders[k].s, (size_t)cfg->leaders[k].len)) kind = cfg->leaders[k].kind;
    if (!kind || !is_ascii(m, n)) return 0;
    int room_found = 0, room_literal = 0, rid = 0;
    for (Py_ssize_t i = 0; i + 1 < n; i++) {
        unsigned v = cfg->req_pairs[PAIR(m, i)];
        if (!v) continue;
        if (v & REQ_CASE) switch (m[i]) {
        case '"':
        case '\'':
            if (!quoted_field(m, n, i, q)) return 0;
            break;
        case 'b':
            if (!room_found && AT(m, n, i, "bootstrap_room")) {
                Py_ssize_t j = i + 14; /* bootstrap_room[=:] ?'?(\d+): the first room pattern */
                if (j < n && (m[j] == '=' || m[j] == ':')) {
                    j++;
                    if (j < n && m[j] == ' ') j++;
                    if (j < n && m[j] == '\'') j++;
                    if (j < n && ISD(m[j])) {
                        uint64_t v;
                        int fits;
                        number(m, n, j, 19, &v, &fits);
                        room_found = 1;
                        q->has_room = fits && v < ((uint64_t)1 << 63);
                        q->room = (int64_t)v;
                    }
                }
            }
            break;
        case 'r':
            if (!rid && AT(m, n, i, "rid='")) { /* rid='([^']*)': the first rid pattern */
                const uint8_t *e = memchr(m + i + 5, '\'', (size_t)(n - i - 5));
                if (!e) return 0;
                q->rid[0] = i + 5, q->rid[1] = e - m, rid = 1;
            }
            if (!q->has_rank && AT(m, n, i, "rank=") && (i == 0 || !is_word(m[i - 1])) && i + 5 < n && ISD(m[i + 5])) {
                uint64_t v; /* \brank=(\d+) */
                int fits;
                number(m, n, i + 5, 9, &v, &fits);
                if (!fits) return 0;
                q->rank = (int64_t)v, q->has_rank = 1;
            }
            break;
        default:
            break;
        }
        for (int k = (int)(v & ~REQ_CASE) - 1; k >= 0; k = cfg->req_next[k]) {
            const Lit *l = &cfg->lits[k];
            if (!lit_at(l, m, n, i)) continue;
            if (l->flags & LIT_LEAVE) return 0;
            room_literal = 1;
        }
    }
    /* no rid, or a room the first pattern does not find while another room pattern might */
    if (!rid || (!room_found && room_literal)) return 0;
    q->kind = kind;
    return kind;
}

/* Any other line with a plain sglang prefix: what _strip_wrappers and _classify make of it is
 * known from the prefix alone (family sglang, message), read up to p. `[date time][file:line][LEVEL]`
 * (the custom logging config) is left to polars. */
static int try_sg(const Config *cfg, const uint8_t *s, Py_ssize_t n, Py_ssize_t p, Row *r) {
    if (!p || (p < n && s[p] == '[')) return 0;
    Py_ssize_t e = n; /* body: strip_chars_end(" \t\r") */
    while (e > r->body && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) e--;
    if (p < e && s[p] == ' ') p++;
    r->msg = p;
    r->body_end = e;
    r->access = try_access(cfg, s + p, e - p, r->acc);
    memset(&r->req, 0, sizeof r->req);
    if (!r->access) try_request(cfg, s + p, e - p, &r->req);
    return 1;
}

typedef struct {
    int64_t n;
    Buf line_no, brk, local_us;
    /* no line or body: events keep the message, these lines are never unparsed, and nothing folds
     * into them by their text (a body starting with '[' is never indented) */
    StrCol message, ts_raw, cri;
    StrCol acc[4];
    Buf rank[MAX_RANKS], rank_valid[MAX_RANKS];
    Buf req_kind;              /* uint8: 0 none, 1 received, 2 finished */
    StrCol rid, fin, status;   /* request fields */
    Buf num[6], num_valid[6];  /* room, prompt, completion, cached tokens (int64), e2e (double), rank (int64) */
} SgOut;

/* Reserved for every line of the block (`cap`) and all its bytes (`n`): address space only, the
 * pages are touched as rows are written, and nothing is copied by growing. */
static int sg_init(SgOut *o, int64_t cap, Py_ssize_t n, int nranks) {
    size_t rows = (size_t)cap + 1, bits = rows / 8 + 1;
    StrCol *strs[] = {&o->message, &o->ts_raw, &o->cri, &o->acc[0], &o->acc[1], &o->acc[2],
                      &o->acc[3], &o->rid, &o->fin, &o->status};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        if (strcol_init(strs[i]) || buf_reserve(&strs[i]->off, rows * 8) || buf_reserve(&strs[i]->valid, bits))
            return -1;
    if (buf_reserve(&o->message.data, (size_t)n + 64) || buf_reserve(&o->ts_raw.data, rows * 23) ||
        buf_reserve(&o->line_no, rows * 8) || buf_reserve(&o->brk, rows) || buf_reserve(&o->local_us, rows * 8) ||
        buf_reserve(&o->req_kind, rows))
        return -1;
    for (int k = 0; k < nranks; k++)
        if (buf_reserve(&o->rank[k], rows * 4) || buf_reserve(&o->rank_valid[k], bits)) return -1;
    for (int k = 0; k < 6; k++)
        if (buf_reserve(&o->num[k], rows * 8) || buf_reserve(&o->num_valid[k], bits)) return -1;
    return 0;
}

static void sg_free(SgOut *o) {
    buf_free(&o->line_no), buf_free(&o->brk), buf_free(&o->local_us);
    strcol_free(&o->message), strcol_free(&o->ts_raw);
    strcol_free(&o->cri);
    for (int k = 0; k < 4; k++) strcol_free(&o->acc[k]);
    for (int k = 0; k < MAX_RANKS; k++) buf_free(&o->rank[k]), buf_free(&o->rank_valid[k]);
    buf_free(&o->req_kind);
    strcol_free(&o->rid), strcol_free(&o->fin), strcol_free(&o->status);
    for (int k = 0; k < 6; k++) buf_free(&o->num[k]), buf_free(&o->num_valid[k]);
}

static int sg_push(SgOut *o, const Config *cfg, const Row *r, const uint8_t *s, int ascii, int64_t line_no, uint8_t brk) {
    if (buf_put(&o->line_no, &line_no, 8) || buf_put(&o->brk, &brk, 1) || buf_put(&o->local_us, &r->local_us, 8) ||
        push_decoded(&o->message, s + r->msg, r->body_end - r->msg, ascii) ||
        strcol_push(&o->ts_raw, r->raw, r->raw_len, 1) || strcol_push(&o->cri, r->cri, r->cri_len, r->cri_len > 0))
        return -1;
    for (int k = 0; k < 4; k++) /* the spans are ASCII: no decoding needed; not an access line: stale spans */
        if (r->access ? strcol_push(&o->acc[k], (const char *)s + r->msg + r->acc[k][0], r->acc[k][1] - r->acc[k][0], 1)
                      : strcol_push(&o->acc[k], NULL, 0, 0))
            return -1;
    for (int k = 0; k < cfg->nranks; k++) {
        int32_t v = r->has_rank[k] ? (int32_t)r->rank[k] : 0;
        if (buf_put(&o->rank[k], &v, 4) || bit_append(&o->rank_valid[k], o->n, r->has_rank[k])) return -1;
    }
    const Req *q = &r->req;
    const char *m = (const char *)s + r->msg;
    uint8_t kind = (uint8_t)q->kind;
    int on = q->kind != 0;
    if (buf_put(&o->req_kind, &kind, 1) || strcol_push(&o->rid, m + q->rid[0], on ? q->rid[1] - q->rid[0] : 0, on) ||
        strcol_push(&o->fin, m + q->fin[0], on && q->has_fin ? q->fin[1] - q->fin[0] : 0, on && q->has_fin) ||
        strcol_push(&o->status, m + q->status[0], on && q->has_status ? 3 : 0, on && q->has_status))
        return -1;
    int64_t iv[6] = {q->room, q->tok[0], q->tok[1], q->tok[2], 0, q->rank};
    int has[6] = {q->has_room, q->has_tok[0], q->has_tok[1], q->has_tok[2], q->has_e2e, q->has_rank};
    for (int k = 0; k < 6; k++) {
        int valid = on && has[k];
        if ((k == 4 ? buf_put(&o->num[k], &q->e2e, 8) : buf_put(&o->num[k], &iv[k], 8)) ||
            bit_append(&o->num_valid[k], o->n, valid))
            return -1;
    }
    o->n++;
    return 0;
}

/* ---- output columns of the stats rows ------------------------------------------------------ */

/* Fixed-width columns are allocated for `cap` rows (the lines of the block) with calloc, so only
 * the pages of rows actually written are ever touched; strings grow. A stats column is allocated
 * when a row first has it: a decode log fills 12 of the 32, and calloc from a reused heap chunk
 * zeroes (touches) all of it. */
typedef struct {
    int64_t n, cap;
    int64_t *line_no, *local_us;
    StrCol kind, ts_raw, cri, graph, ek, ev;
    int32_t *extra_off;
    int32_t nextra_total;
    int32_t *rank[MAX_RANKS];
    uint8_t *rank_valid[MAX_RANKS];
    void *val[MAX_COLS];
    uint8_t *valid[MAX_COLS];
} Out;

static int out_init(Out *o, int64_t cap, int nranks) {
    o->cap = cap;
    size_t bits = bitmap_bytes(cap) + 1;
    if (strcol_init(&o->kind) || strcol_init(&o->ts_raw) || strcol_init(&o->cri) || strcol_init(&o->graph) ||
        strcol_init(&o->ek) || strcol_init(&o->ev))
        return -1;
    if (buf_reserve(&o->ts_raw.data, (size_t)cap * 23) || buf_reserve(&o->ts_raw.off, (size_t)cap * 8 + 8) ||
        buf_reserve(&o->kind.data, (size_t)cap * 7) || buf_reserve(&o->kind.off, (size_t)cap * 8 + 8))
        return -1;
    o->line_no = calloc((size_t)cap, 8);
    o->local_us = calloc((size_t)cap, 8);
    o->extra_off = calloc((size_t)cap + 1, 4);
    if (!o->line_no || !o->local_us || !o->extra_off) return -1;
    for (int k = 0; k < nranks; k++)
        if (!(o->rank[k] = calloc((size_t)cap, 4)) || !(o->rank_valid[k] = calloc(bits, 1))) return -1;
    return 0;
}

static int out_column(Out *o, const Config *cfg, int c) {
    size_t bits = bitmap_bytes(o->cap) + 1;
    if (o->val[c]) return 0;
    o->val[c] = calloc(cfg->types[c] == 'b' ? bits : (size_t)o->cap * 8, 1);
    o->valid[c] = calloc(bits, 1);
    return o->val[c] && o->valid[c] ? 0 : -1;
}

static void out_free(Out *o) {
    free(o->line_no);
    free(o->local_us);
    free(o->extra_off);
    strcol_free(&o->kind);
    strcol_free(&o->ts_raw);
    strcol_free(&o->cri);
    strcol_free(&o->graph);
    strcol_free(&o->ek);
    strcol_free(&o->ev);
    for (int k = 0; k < MAX_RANKS; k++) free(o->rank[k]), free(o->rank_valid[k]);
    for (int c = 0; c < MAX_COLS; c++) free(o->val[c]), free(o->valid[c]);
}

static int out_push(Out *o, const Config *cfg, const Row *r, int64_t line_no) {
    int64_t i = o->n;
    if (i >= o->cap) return -1;
    o->line_no[i] = line_no;
    o->local_us[i] = r->local_us;
    if (strcol_push(&o->kind, r->kind ? "decode" : "prefill", r->kind ? 6 : 7, 1)) return -1;
    if (strcol_push(&o->ts_raw, r->raw, r->raw_len, 1)) return -1;
    if (strcol_push(&o->cri, r->cri, r->cri_len, r->cri_len > 0)) return -1;
    if (r->graph >= 0) {
        const KeyDef *g = &cfg->keys[r->graph];
        if (strcol_push(&o->graph, g->graph, (size_t)g->graph_len, 1)) return -1;
    } else if (strcol_push(&o->graph, NULL, 0, 0))
        return -1;
    for (int k = 0; k < cfg->nranks; k++)
        if (r->has_rank[k]) {
            o->rank[k][i] = (int32_t)r->rank[k];
            bit_on(o->rank_valid[k], i);
        }
    for (int c = 0; c < cfg->ncols; c++) {
        if (!r->set[c]) continue;
        if (out_column(o, cfg, c)) return -1;
        bit_on(o->valid[c], i);
        if (cfg->types[c] == 'b') {
            if (r->ival[c]) bit_on((uint8_t *)o->val[c], i);
        } else if (cfg->types[c] == 'i')
            ((int64_t *)o->val[c])[i] = r->ival[c];
        else
            ((double *)o->val[c])[i] = r->fval[c];
    }
    for (int x = 0; x < r->nextra; x++)
        if (strcol_push(&o->ek, r->ek[x], r->ekl[x], 1) || strcol_push(&o->ev, r->ev[x], r->evl[x], 1)) return -1;
    o->nextra_total += r->nextra;
    o->extra_off[i + 1] = o->nextra_total;
    o->n++;
    return 0;
}

/* ---- Python API ------------------------------------------------------------------------------ */

static int put_str(PyObject *d, const char *name, StrCol *c) {
    char k[64];
    snprintf(k, sizeof k, "%s.off", name);
    if (put_buf(d, k, &c->off)) return -1;
    snprintf(k, sizeof k, "%s.data", name);
    if (put_buf(d, k, &c->data)) return -1;
    snprintf(k, sizeof k, "%s.valid", name);
    return put_buf(d, k, &c->valid);
}

/* Config(keys, types, ranks, literals, leaders): the tables scan() matches by, built from the
 * Python grammar (parsers/native.py, server_log/scanner.py):
 *   keys:     the stats keys, (key, column on the prefill side, on the decode side, graph backend
 *             or b""); a column of -1: a known key with no column on that side;
 *   types:    one letter per column, 'i' int, 'f' float, 'p' percent, 'b' bool;
 *   ranks:    the rank tags of the sglang prefix, in the order of the rank columns;
 *   literals: (literal, LIT_* flags), what try_access and try_request leave a line to polars by;
 *   leaders:  (leader, 1 received / 2 finished), the starts of a request log message. */
static PyObject *config_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *keys, *ranks, *lits, *leaders, *seq = NULL;
    const char *types;
    Py_ssize_t ntypes;
    if (kw && PyDict_GET_SIZE(kw)) return PyErr_Format(PyExc_TypeError, "Config() takes no keyword arguments");
    if (!PyArg_ParseTuple(args, "Os#OOO", &keys, &types, &ntypes, &ranks, &lits, &leaders)) return NULL;
    if (ntypes > MAX_COLS) return PyErr_Format(PyExc_ValueError, "more than %d columns", MAX_COLS);
    Config *c = (Config *)type->tp_alloc(type, 0); /* zeroed */
    if (!c) return NULL;
    memcpy(c->types, types, (size_t)ntypes);
    c->ncols = (int)ntypes;

    if (!(seq = PySequence_Fast(keys, "keys must be a sequence"))) goto fail;
    Py_ssize_t nk = PySequence_Fast_GET_SIZE(seq);
    if (nk > MAX_KEYS) {
        PyErr_Format(PyExc_ValueError, "more than %d keys", MAX_KEYS);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < nk; i++) {
        const char *k, *g;
        Py_ssize_t kl, gl;
        int cp, cd;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "y#iiy#", &k, &kl, &cp, &cd, &g, &gl)) goto fail;
        if (kl >= (Py_ssize_t)sizeof c->keys[i].key || gl >= (Py_ssize_t)sizeof c->keys[i].graph || cp >= ntypes ||
            cd >= ntypes) {
            PyErr_Format(PyExc_ValueError, "bad key %zd", i);
            goto fail;
        }
        KeyDef *d = &c->keys[i];
        memcpy(d->key, k, (size_t)kl);
        d->len = (int)kl;
        d->col[0] = cp;
        d->col[1] = cd;
        memcpy(d->graph, g, (size_t)gl);
        d->graph_len = (int)gl;
    }
    c->nkeys = (int)nk;
    Py_CLEAR(seq);

    if (!(seq = PySequence_Fast(ranks, "ranks must be a sequence"))) goto fail;
    Py_ssize_t nr = PySequence_Fast_GET_SIZE(seq);
    if (nr > MAX_RANKS) {
        PyErr_Format(PyExc_ValueError, "more than %d rank tags", MAX_RANKS);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < nr; i++) {
        const char *t;
        Py_ssize_t tl;
        if (!PyArg_Parse(PySequence_Fast_GET_ITEM(seq, i), "y#", &t, &tl)) goto fail;
        if (tl < 1 || tl >= (Py_ssize_t)sizeof c->rank_tag[i] || c->rank_by_letter[(uint8_t)t[0]]) {
            PyErr_Format(PyExc_ValueError, "rank tag %zd: empty, too long, or its first letter starts another", i);
            goto fail;
        }
        memcpy(c->rank_tag[i], t, (size_t)tl);
        c->rank_len[i] = (size_t)tl;
        c->rank_by_letter[(uint8_t)t[0]] = (uint8_t)(i + 1);
    }
    c->nranks = (int)nr;
    Py_CLEAR(seq);

    for (size_t k = 0; k < sizeof REQ_FIELD_PAIRS / sizeof *REQ_FIELD_PAIRS; k++)
        c->req_pairs[PAIR((const uint8_t *)REQ_FIELD_PAIRS[k], 0)] = REQ_CASE;
    if (!(seq = PySequence_Fast(lits, "literals must be a sequence"))) goto fail;
    Py_ssize_t nl = PySequence_Fast_GET_SIZE(seq);
    if (nl > MAX_LITS) {
        PyErr_Format(PyExc_ValueError, "more than %d literals", MAX_LITS);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < nl; i++) {
        Lit *l = &c->lits[i];
        const char *t;
        Py_ssize_t tl;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "y#i", &t, &tl, &l->flags)) goto fail;
        if (tl < 2 || tl >= (Py_ssize_t)sizeof l->s) { /* PAIR needs two bytes */
            PyErr_Format(PyExc_ValueError, "literal %zd: %zd bytes", i, tl);
            goto fail;
        }
        memcpy(l->s, t, (size_t)tl);
        l->len = (int)tl;
        unsigned pair = PAIR((const uint8_t *)t, 0);
        if (l->flags & LIT_FIELD) { /* pushed on the front of its pair's chain */
            c->field_next[i] = (int8_t)(c->field_pairs[pair] - 1);
            c->field_pairs[pair] = (uint8_t)(i + 1);
        }
        if (l->flags & (LIT_ROOM | LIT_LEAVE)) {
            c->req_next[i] = (int8_t)((c->req_pairs[pair] & ~REQ_CASE) - 1);
            c->req_pairs[pair] = (uint8_t)((c->req_pairs[pair] & REQ_CASE) | (i + 1));
        }
    }
    c->nlits = (int)nl;
    Py_CLEAR(seq);

    if (!(seq = PySequence_Fast(leaders, "leaders must be a sequence"))) goto fail;
    Py_ssize_t nd = PySequence_Fast_GET_SIZE(seq);
    if (nd > MAX_LEADERS) {
        PyErr_Format(PyExc_ValueError, "more than %d leaders", MAX_LEADERS);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < nd; i++) {
        Leader *l = &c->leaders[i];
        const char *t;
        Py_ssize_t tl;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "y#i", &t, &tl, &l->kind)) goto fail;
        if (tl < 1 || tl >= (Py_ssize_t)sizeof l->s || l->kind < 1 || l->kind > 2) {
            PyErr_Format(PyExc_ValueError, "bad leader %zd", i);
            goto fail;
        }
        memcpy(l->s, t, (size_t)tl);
        l->len = (int)tl;
    }
    c->nleaders = (int)nd;
    Py_CLEAR(seq);
    return (PyObject *)c;
fail:
    Py_XDECREF(seq);
    Py_DECREF(c);
    return NULL;
}

static PyTypeObject ConfigType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_fastlog.Config",
    .tp_basicsize = sizeof(Config),
    .tp_new = config_new,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Config(keys, types, ranks, literals, leaders): the grammar's tables for scan()",
};

/* scan(config, block, first_line_no, lines, year, terminated) -> dict
 *
 * st.*:   the stats lines taken, column by column (Arrow buffers);
 * sg.*:   the other lines with a plain sglang prefix, split, with access / request fields;
 * rest.*: the other lines, decoded (line_no int64, brk uint8: the line above was a stats line);
 * partial: a CRI `P` record may be in the block (the caller then parses it on the polars path).
 * `lines` sizes the columns: every row of the block fits without growing them.
 */
static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    long long first, cap;
    int year, terminated;
    const Config *cfg;
    if (!PyArg_ParseTuple(args, "O!y*LLip", &ConfigType, &cfg, &view, &first, &cap, &year, &terminated)) return NULL;
    if (cap < 0) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_ValueError, "negative line count");
    }
    const uint8_t *s = view.buf;
    Py_ssize_t n = view.len;
    /* empty first, so that `done:` may free every one whichever allocation below fails */
    StrCol rest;
    Buf rest_no, rest_brk;
    Out o;
    SgOut sg;
    memset(&rest, 0, sizeof rest);
    memset(&rest_no, 0, sizeof rest_no);
    memset(&rest_brk, 0, sizeof rest_brk);
    memset(&o, 0, sizeof o);
    memset(&sg, 0, sizeof sg);
    /* the rest lines need as many bytes as the block (more only with escapes) */
    int err = strcol_init(&rest) || out_init(&o, cap, cfg->nranks) || sg_init(&sg, cap, n, cfg->nranks) ||
              buf_reserve(&rest.data, (size_t)n + 64) ||
              buf_reserve(&rest.off, (size_t)cap * 8 + 8) || buf_reserve(&rest_no, (size_t)cap * 8) ||
              buf_reserve(&rest_brk, (size_t)cap);
    int partial = 0;
    int64_t line_no = first;
    Row *r = malloc(sizeof(Row));
    if (!r)
        err = 1;
    else
        for (int x = 0; x < MAX_ITEMS; x++) r->last_key[x] = -1;
    Py_BEGIN_ALLOW_THREADS
    int prev_taken = 0;
    Py_ssize_t i = 0;
    while (!err) {
        const uint8_t *nl = memchr(s + i, '\n', (size_t)(n - i));
        Py_ssize_t e = nl ? (Py_ssize_t)(nl - s) : n;
        Py_ssize_t len = e - i;
        const uint8_t *line = s + i;
        if (len && line[len - 1] == '\r') len--;
        int ascii = is_ascii(line, len);
        /* a last line with no newline after it is the cut end of a file: the polars path judges it */
        int whole = nl || terminated;
        Py_ssize_t head = whole ? parse_header(cfg, line, len, year, r) : 0; /* read once for both kinds */
        int taken = ascii && try_stats(cfg, line, len, head, r);
        if (taken) {
            err = out_push(&o, cfg, r, line_no);
        } else if (try_sg(cfg, line, len, head, r)) {
            err = sg_push(&sg, cfg, r, line, ascii, line_no, (uint8_t)prev_taken);
        } else {
            if (len && (ISD(line[0]) || !ascii) &&
                (memmem(line, (size_t)len, "stdout P", 8) || memmem(line, (size_t)len, "stderr P", 8)))
                partial = 1;
            uint8_t bk = (uint8_t)prev_taken;
            err = push_decoded(&rest, line, len, ascii) || buf_put(&rest_no, &line_no, 8) || buf_put(&rest_brk, &bk, 1);
        }
        prev_taken = taken;
        line_no++;
        if (!nl) break;
        i = e + 1;
    }
    Py_END_ALLOW_THREADS
    free(r);
    PyBuffer_Release(&view);
    PyObject *d = NULL;
    if (err) {
        PyErr_NoMemory();
        goto done;
    }
    d = PyDict_New();
    if (!d) goto done;
    char k[32];
    int bad = put(d, "partial", PyBool_FromLong(partial)) || put(d, "lines", PyLong_FromLongLong(line_no - first)) ||
              put_str(d, "rest.line", &rest) || put_buf(d, "rest.line_no", &rest_no) ||
              put_buf(d, "rest.brk", &rest_brk) || put(d, "rest.n", PyLong_FromLongLong(rest.n)) ||
              put(d, "st.n", PyLong_FromLongLong(o.n)) || put(d, "st.line_no", mem((void **)&o.line_no, (size_t)o.n * 8)) ||
              put(d, "st.local_us", mem((void **)&o.local_us, (size_t)o.n * 8)) || put_str(d, "st.kind", &o.kind) ||
              put_str(d, "st.ts_raw", &o.ts_raw) || put_str(d, "st.cri", &o.cri) || put_str(d, "st.graph", &o.graph) ||
              put_str(d, "st.extra_key", &o.ek) || put_str(d, "st.extra_value", &o.ev) ||
              put(d, "st.extra_off", mem((void **)&o.extra_off, (size_t)(o.n + 1) * 4)) || put(d, "st.extra_n", PyLong_FromLong(o.nextra_total));
    for (int x = 0; !bad && x < cfg->nranks; x++) {
        snprintf(k, sizeof k, "st.rank%d", x);
        bad = put(d, k, mem((void **)&o.rank[x], (size_t)o.n * 4));
        snprintf(k, sizeof k, "st.rank%d.valid", x);
        bad = bad || put(d, k, mem((void **)&o.rank_valid[x], bitmap_bytes(o.n)));
    }
    bad = bad || put(d, "sg.n", PyLong_FromLongLong(sg.n)) || put_buf(d, "sg.line_no", &sg.line_no) ||
          put_buf(d, "sg.brk", &sg.brk) || put_buf(d, "sg.local_us", &sg.local_us) || put_str(d, "sg.message", &sg.message) ||
          put_str(d, "sg.ts_raw", &sg.ts_raw) || put_str(d, "sg.cri", &sg.cri) || put_str(d, "sg.acc0", &sg.acc[0]) ||
          put_str(d, "sg.acc1", &sg.acc[1]) || put_str(d, "sg.acc2", &sg.acc[2]) || put_str(d, "sg.acc3", &sg.acc[3]) ||
          put_buf(d, "sg.req_kind", &sg.req_kind) || put_str(d, "sg.rid", &sg.rid) || put_str(d, "sg.fin", &sg.fin) ||
          put_str(d, "sg.status", &sg.status);
    for (int x = 0; !bad && x < 6; x++) {
        snprintf(k, sizeof k, "sg.num%d", x);
        bad = put_buf(d, k, &sg.num[x]);
        snprintf(k, sizeof k, "sg.num%d.valid", x);
        bad = bad || put_buf(d, k, &sg.num_valid[x]);
    }
    for (int x = 0; !bad && x < cfg->nranks; x++) {
        snprintf(k, sizeof k, "sg.rank%d", x);
        bad = put_buf(d, k, &sg.rank[x]);
        snprintf(k, sizeof k, "sg.rank%d.valid", x);
        bad = bad || put_buf(d, k, &sg.rank_valid[x]);
    }
    for (int c = 0; !bad && c < cfg->ncols; c++) {
        snprintf(k, sizeof k, "st.col%d", c);
        if (!o.val[c]) { /* no row has it: no buffers */
            Py_INCREF(Py_None);
            bad = put(d, k, Py_None);
            continue;
        }
        bad = put(d, k, mem(&o.val[c], cfg->types[c] == 'b' ? bitmap_bytes(o.n) : (size_t)o.n * 8));
        snprintf(k, sizeof k, "st.col%d.valid", c);
        bad = bad || put(d, k, mem((void **)&o.valid[c], bitmap_bytes(o.n)));
    }
    if (bad) Py_CLEAR(d);
done:
    strcol_free(&rest);
    buf_free(&rest_no);
    buf_free(&rest_brk);
    out_free(&o);
    sg_free(&sg);
    return d;
}

/* count_newlines(buffer) -> int: memchr (SIMD) outruns bytes.count(b"\n") */
static PyObject *count_newlines(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    const uint8_t *p = view.buf;
    Py_ssize_t n = view.len, i = 0;
    long long c = 0;
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *q;
    while (i < n && (q = memchr(p + i, '\n', (size_t)(n - i)))) c++, i = (q - p) + 1;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromLongLong(c);
}

static PyMethodDef methods[] = {
    {"count_newlines", count_newlines, METH_VARARGS, "count_newlines(buffer) -> number of b'\\n' in it"},
    {"scan", scan, METH_VARARGS, "scan(config, block, first_line_no, lines, year, terminated) -> dict of Arrow buffers"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastlog", "Native scanner for server logs.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastlog(void) {
    if (native_ready() < 0 || PyType_Ready(&ConfigType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ConfigType);
    if (PyModule_AddObject(m, "Config", (PyObject *)&ConfigType) < 0) {
        Py_DECREF(&ConfigType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
