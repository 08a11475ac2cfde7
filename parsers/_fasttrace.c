/* Field splitter for the KV transfer trace (docs/formats/TRANSFER_TRACE.md): each JSONL line is read once and
 * its known fields go straight into Arrow-layout column buffers.
 *
 * It takes only the lines whose result it can give exactly as the DuckDB reference path in
 * parsers/transfer_trace.py does: strict JSON objects of flat values, no escapes, ASCII only, every
 * check of "Reader rules" passing, numbers in forms whose text DuckDB prints back unchanged. Every other line
 * (bad JSON, a schema error, an escape, a nested or float extra, a duplicate key, ...) is handed
 * back by position, and the reference path parses it: what it cannot take exactly it does not guess.
 *
 * Buffers are malloc'd, sized for the block's worst case before the scan (it runs without the GIL:
 * nothing is copied by growing, and pages never written cost nothing), and handed to Python as Mem
 * objects (parsers/_native.h), cut to their use.
 */
#define NATIVE_MODULE "_fasttrace"
#include "_native.h"
#include <math.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* column kinds */
enum { C_I64, C_I32, C_BOOL, C_STR };

typedef struct {
    const char *name;
    int kind;
    char *data;     /* fixed width values, or the bitmap of a bool column */
    uint8_t *valid; /* validity bitmap */
    int32_t *off;   /* string offsets (rows + 1) */
    Buf sdata;      /* string bytes */
} col_t;

enum {
    K_TS, K_HOST, K_PID, K_SIDE, K_ENGINE_RANK, K_DP_RANK, K_ROOM, K_RID, K_KIND, K_CHUNK, K_IS_LAST,
    K_EVENT, K_BYTES, K_STATUS, K_PEER, K_CHECKSUM, K_ERROR, NKEYS
};

/* output columns, in the order of the reference query */
enum {
    O_TS, O_TS_RAW, O_TS_NAIVE, O_HOST, O_PID, O_SIDE, O_ENGINE_RANK, O_DP_RANK, O_ROOM, O_RID, O_KIND, O_CHUNK,
    O_IS_LAST, O_EVENT, O_UNKNOWN_ENUM, O_BYTES, O_STATUS, O_STATUS_RAW, O_PEER, O_ERROR, O_CHECKSUM,
    O_CHECKSUM_INT, O_EXTRA, NCOLS
};
static const struct { const char *name; int kind; } COLS[NCOLS] = {
    {"ts", C_I64}, {"ts_raw", C_STR}, {"ts_naive", C_BOOL}, {"host", C_STR}, {"pid", C_I64}, {"side", C_STR},
    {"engine_rank", C_I32}, {"dp_rank", C_I32}, {"bootstrap_room", C_I64}, {"rid", C_STR}, {"kind", C_STR},
    {"chunk", C_I32}, {"is_last", C_BOOL}, {"event", C_STR}, {"unknown_enum", C_BOOL}, {"bytes", C_I64},
    {"status", C_STR}, {"status_raw", C_STR}, {"peer", C_STR}, {"error", C_STR}, {"checksum", C_STR},
    {"checksum_int", C_STR}, {"extra", C_STR},
};

/* docs/formats/NIXL.md, "Status codes", as STATUS_NAMES in transfer_trace.py */
static const char *STATUS_NAMES[14] = {
    "NIXL_IN_PROG", "NIXL_SUCCESS", "NIXL_ERR_NOT_POSTED", "NIXL_ERR_INVALID_PARAM", "NIXL_ERR_BACKEND",
    "NIXL_ERR_NOT_FOUND", "NIXL_ERR_MISMATCH", "NIXL_ERR_NOT_ALLOWED", "NIXL_ERR_REPOST_ACTIVE",
    "NIXL_ERR_UNKNOWN", "NIXL_ERR_NOT_SUPPORTED", "NIXL_ERR_REMOTE_DISCONNECT", "NIXL_ERR_CANCELED",
    "NIXL_ERR_NO_TELEMETRY"};

/* a value token */
enum { T_ABSENT = 0, T_STR, T_NUM, T_TRUE, T_FALSE, T_NULL };
typedef struct {
    const char *s, *e; /* the raw text (strings: without quotes, escapes decoded if `flags & S_ESC`) */
    int type, flags;
    /* numbers */
    int neg, has_frac, has_exp;
    const char *ip, *ipe, *fp, *fpe; /* integer and fraction digits */
} tok_t;

#define MAX_EXTRA 32

/* bytes that end a fast string scan: the quote, a backslash, control bytes and non-ASCII */
static uint8_t STOP[256];

static inline const char *ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    return p;
}

enum { S_UTF8 = 1, S_ESC = 2 };

/* utf8_len (parsers/_native.h) is 0 unless a sequence is well-formed as Python's strict decoder
 * has it: the reference path sees invalid bytes as `\xNN` text, which is then no JSON. */

static inline int hex4(const char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(p[i]);
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* A string from after its opening quote: its closing quote, or NULL for what the splitter leaves
 * (a control byte, ill-formed UTF-8, an escape it does not decode: \u0000, a lone surrogate).
 * `flags` says whether it holds non-ASCII text or escapes. */
static const char *scan_str_slow(const char *p, const char *e, int *flags) {
    while (p < e) {
        uint8_t c = (uint8_t)*p;
        if (c == '"') return p;
        if (c < 0x20) return NULL;
        if (c >= 0x80) {
            int n = utf8_len((const uint8_t *)p, (const uint8_t *)e);
            if (!n) return NULL;
            *flags |= S_UTF8;
            p += n;
            continue;
        }
        if (c == '\\') {
            if (e - p < 2) return NULL;
            char x = p[1];
            *flags |= S_ESC;
            if (x == '"' || x == '\\' || x == '/' || x == 'b' || x == 'f' || x == 'n' || x == 'r' || x == 't') {
                p += 2;
                continue;
            }
            if (x != 'u' || e - p < 6) return NULL;
            int u = hex4(p + 2);
            if (u <= 0 || (u >= 0xDC00 && u <= 0xDFFF)) return NULL;
            if (u >= 0xD800 && u <= 0xDBFF) {
                if (e - p < 12 || p[6] != '\\' || p[7] != 'u') return NULL;
                int l = hex4(p + 8);
                if (l < 0xDC00 || l > 0xDFFF) return NULL;
                p += 12;
            } else {
                p += 6;
            }
            continue;
        }
        p++;
    }
    return NULL;
}

/* decode the escapes of a string scan_str took into `out` (room for e - s bytes); its length */
static size_t unescape(const char *s, const char *e, char *out) {
    char *o = out;
    while (s < e) {
        if (*s != '\\') {
            *o++ = *s++;
            continue;
        }
        char x = s[1];
        if (x != 'u') {
            *o++ = x == 'b' ? '\b' : x == 'f' ? '\f' : x == 'n' ? '\n' : x == 'r' ? '\r' : x == 't' ? '\t' : x;
            s += 2;
            continue;
        }
        unsigned u = (unsigned)hex4(s + 2);
        s += 6;
        if (u >= 0xD800 && u <= 0xDBFF) {
            u = 0x10000 + ((u - 0xD800) << 10) + ((unsigned)hex4(s + 2) - 0xDC00);
            s += 6;
        }
        if (u < 0x80) {
            *o++ = (char)u;
        } else if (u < 0x800) {
            *o++ = (char)(0xC0 | (u >> 6));
            *o++ = (char)(0x80 | (u & 0x3F));
        } else if (u < 0x10000) {
            *o++ = (char)(0xE0 | (u >> 12));
            *o++ = (char)(0x80 | ((u >> 6) & 0x3F));
            *o++ = (char)(0x80 | (u & 0x3F));
        } else {
            *o++ = (char)(0xF0 | (u >> 18));
            *o++ = (char)(0x80 | ((u >> 12) & 0x3F));
            *o++ = (char)(0x80 | ((u >> 6) & 0x3F));
            *o++ = (char)(0x80 | (u & 0x3F));
        }
    }
    return (size_t)(o - out);
}

static inline const char *scan_str(const char *p, const char *e, int *flags) {
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (e - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        /* signed: bytes from 0x80 are negative, below 0x20 with the control bytes */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmplt_epi8(v, space));
        int mask = _mm_movemask_epi8(m);
        if (mask) {
            p += __builtin_ctz((unsigned)mask);
            return *p == '"' ? p : scan_str_slow(p, e, flags);
        }
        p += 16;
    }
#endif
    while (p < e && !STOP[(uint8_t)*p]) p++;
    if (p < e && *p == '"') return p;
    return scan_str_slow(p, e, flags);
}

/* One value at p (strict JSON); its end, or NULL for what the fast path does not take. */
static const char *scan_value(const char *p, const char *e, tok_t *t) {
    if (p >= e) return NULL;
    char c = *p;
    t->flags = 0;
    if (c == '"') {
        const char *q = scan_str(p + 1, e, &t->flags);
        if (!q) return NULL;
        t->type = T_STR;
        t->s = p + 1;
        t->e = q;
        return q + 1;
    }
    if (c == '-' || ISD(c)) {
        const char *s = p;
        t->neg = 0;
        if (c == '-') {
            t->neg = 1;
            p++;
        }
        if (p >= e || !ISD(*p)) return NULL;
        t->ip = p;
        if (*p == '0')
            p++;
        else
            while (p < e && ISD(*p)) p++;
        t->ipe = p;
        t->has_frac = t->has_exp = 0;
        t->fp = t->fpe = p;
        if (p < e && *p == '.') {
            p++;
            t->fp = p;
            while (p < e && ISD(*p)) p++;
            t->fpe = p;
            if (t->fp == t->fpe) return NULL;
            t->has_frac = 1;
        }
        if (p < e && (*p == 'e' || *p == 'E')) {
            p++;
            if (p < e && (*p == '+' || *p == '-')) p++;
            const char *x = p;
            while (p < e && ISD(*p)) p++;
            if (p == x) return NULL;
            t->has_exp = 1;
        }
        t->type = T_NUM;
        t->s = s;
        t->e = p;
        return p;
    }
    if (c == 't' && e - p >= 4 && !memcmp(p, "true", 4)) {
        t->type = T_TRUE;
        t->s = p;
        t->e = p + 4;
        return p + 4;
    }
    if (c == 'f' && e - p >= 5 && !memcmp(p, "false", 5)) {
        t->type = T_FALSE;
        t->s = p;
        t->e = p + 5;
        return p + 5;
    }
    if (c == 'n' && e - p >= 4 && !memcmp(p, "null", 4)) {
        t->type = T_NULL;
        t->s = p;
        t->e = p + 4;
        return p + 4;
    }
    return NULL; /* nested values, bare words */
}

static inline int key_index(const char *k, size_t n) {
    switch (n) {
    case 2: return !memcmp(k, "ts", 2) ? K_TS : -1;
    case 3:
        if (!memcmp(k, "pid", 3)) return K_PID;
        if (!memcmp(k, "rid", 3)) return K_RID;
        return -1;
    case 4:
        if (!memcmp(k, "host", 4)) return K_HOST;
        if (!memcmp(k, "side", 4)) return K_SIDE;
        if (!memcmp(k, "room", 4)) return K_ROOM;
        if (!memcmp(k, "kind", 4)) return K_KIND;
        if (!memcmp(k, "peer", 4)) return K_PEER;
        return -1;
    case 5:
        if (!memcmp(k, "chunk", 5)) return K_CHUNK;
        if (!memcmp(k, "event", 5)) return K_EVENT;
        if (!memcmp(k, "bytes", 5)) return K_BYTES;
        if (!memcmp(k, "error", 5)) return K_ERROR;
        return -1;
    case 6: return !memcmp(k, "status", 6) ? K_STATUS : -1;
    case 7:
        if (!memcmp(k, "dp_rank", 7)) return K_DP_RANK;
        if (!memcmp(k, "is_last", 7)) return K_IS_LAST;
        return -1;
    case 8: return !memcmp(k, "checksum", 8) ? K_CHECKSUM : -1;
    case 11: return !memcmp(k, "engine_rank", 11) ? K_ENGINE_RANK : -1;
    }
    return -1;
}

/* A JSON integer (no fraction, no exponent) of at most maxdig digits, as int64; 0 if not one. */
static inline int tok_int(const tok_t *t, int maxdig, int64_t *out) {
    if (t->type != T_NUM || t->has_frac || t->has_exp) return 0;
    int nd = (int)(t->ipe - t->ip);
    if (nd > maxdig) return 0;
    int64_t v = 0;
    for (const char *p = t->ip; p < t->ipe; p++) v = v * 10 + (*p - '0');
    *out = t->neg ? -v : v;
    return 1;
}

/* "-0" prints back as "0": its text is not what DuckDB gives */
static inline int neg_zero(const tok_t *t) { return t->neg && t->ipe - t->ip == 1 && *t->ip == '0'; }

/* decimal digits [s, e) of at most 19, below 2^63; 0 if not */
static inline int digits_u63(const char *s, const char *e, int64_t *out) {
    size_t n = (size_t)(e - s);
    if (n < 1 || n > 19) return 0;
    uint64_t v = 0;
    for (const char *p = s; p < e; p++) {
        if (!ISD(*p)) return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v > (uint64_t)INT64_MAX) return 0;
    *out = (int64_t)v;
    return 1;
}

static inline int dd(const char *p) {
    if (!ISD(p[0]) || !ISD(p[1])) return -1;
    return (p[0] - '0') * 10 + (p[1] - '0');
}

/* ISO-8601 YYYY-MM-DD[T ]HH:MM:SS[.f{1,6}][Z|±HH:MM] to epoch µs; 0 if not that form or not a date */
static int iso_ts(const char *s, const char *e, int64_t *us, int *naive) {
    size_t n = (size_t)(e - s);
    if (n < 19) return 0;
    int y1 = dd(s), y2 = dd(s + 2), mo = dd(s + 5), da = dd(s + 8), h = dd(s + 11), mi = dd(s + 14),
        se = dd(s + 17);
    if (y1 < 0 || y2 < 0 || mo < 0 || da < 0 || h < 0 || mi < 0 || se < 0) return 0;
    if (s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') || s[13] != ':' || s[16] != ':') return 0;
    int year = y1 * 100 + y2;
    if (year < 1000 || mo < 1 || mo > 12 || da < 1 || h > 23 || mi > 59 || se > 59) return 0;
    if (da > days_in_month(year, mo)) return 0;
    const char *p = s + 19;
    int64_t frac = 0;
    if (p < e && *p == '.') {
        p++;
        int nd = 0;
        while (p < e && ISD(*p) && nd < 7) {
            frac = frac * 10 + (*p - '0');
            p++;
            nd++;
        }
        if (nd < 1 || nd > 6) return 0;
        for (; nd < 6; nd++) frac *= 10;
    }
    int64_t off = 0;
    *naive = 1;
    if (p < e) {
        if (*p == 'Z' && p + 1 == e) {
            *naive = 0;
        } else if ((*p == '+' || *p == '-') && e - p == 6 && p[3] == ':') {
            int oh = dd(p + 1), om = dd(p + 4);
            if (oh < 0 || om < 0 || oh > 23 || om > 59) return 0;
            off = (int64_t)(oh * 3600 + om * 60) * (*p == '+' ? 1 : -1);
            *naive = 0;
        } else {
            return 0;
        }
    }
    int64_t secs = days_from_civil(year, mo, da) * 86400 + h * 3600 + mi * 60 + se - off;
    *us = secs * 1000000 + frac;
    return 1;
}

static const double POW10[10] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};

/* Whether `digits` (nd significant digits, nf of them after the point, no sign, no dot; `ip` the
 * integer part, at least 1) are what a shortest round-trip printer (DuckDB's yyjson) writes for
 * `x`, the double nearest them. They are when no other decimal of as many or fewer digits
 * rounds to the same double: when every double has a decimal of its own at this precision (up to 15
 * digits), or the decimals' spacing 10^-nf is above the doubles' spacing near the value. Otherwise
 * (16 or 17 digits) the double is printed exactly with one digit less (which must not round-trip)
 * and with as many (which must be these digits, the nearest). */
static int shortest(const char *digits, int nd, int nf, int64_t ip, double x) {
    if (nd <= 15) return 1;
    if (nd > 17) return 0;
    int e = 63 - __builtin_clzll((unsigned long long)ip); /* 2^e <= value < 2^(e+1) */
    if (e <= 52 && (double)(1ULL << (52 - e)) > POW10[nf]) return 1;
    char t[48];
    snprintf(t, sizeof t, "%.*e", nd - 2, x);
    if (strtod(t, NULL) == x) return 0;
    snprintf(t, sizeof t, "%.*e", nd - 1, x);
    if (t[1] != '.' || t[0] != digits[0] || memcmp(t + 2, digits + 1, (size_t)nd - 1)) return 0;
    return 1;
}

/* A numeric ts, as the reference query takes it: its text as DuckDB prints it back (`raw`, the
 * double's shortest form) cast to DECIMAL(38, 9) and from there to DOUBLE (the double nearest the
 * text), times 10^6 in double arithmetic, rounded half away from zero. Taken: no sign or exponent,
 * 1-12 integer digits, not starting with 0 unless an integer, at most 9 fraction digits once the
 * trailing zeros go, and digits that are the shortest form. */
static int num_ts(const tok_t *t, int64_t *us, char *raw, size_t *nraw) {
    if (t->neg || t->has_exp) return 0;
    int ni = (int)(t->ipe - t->ip);
    if (ni < 1 || ni > 12) return 0;
    int64_t ip = 0;
    for (const char *p = t->ip; p < t->ipe; p++) ip = ip * 10 + (*p - '0');
    if (!t->has_frac) {
        *us = (int64_t)round((double)ip * 1e6);
        memcpy(raw, t->s, (size_t)(t->e - t->s));
        *nraw = (size_t)(t->e - t->s);
        return 1;
    }
    if (*t->ip == '0') return 0; /* below 1: printed with an exponent past some size */
    const char *fe = t->fpe;
    while (fe > t->fp && fe[-1] == '0') fe--;
    int nf = (int)(fe - t->fp);
    if (nf > 9) return 0;
    char digits[24], text[32];
    memcpy(digits, t->ip, (size_t)ni);
    memcpy(digits + ni, t->fp, (size_t)nf);
    memcpy(text, t->ip, (size_t)ni);
    text[ni] = '.';
    memcpy(text + ni + 1, t->fp, (size_t)nf);
    text[ni + 1 + nf] = 0;
    double x = strtod(text, NULL);
    if (!shortest(digits, ni + nf, nf, ip, x)) return 0;
    *us = (int64_t)round(x * 1e6);
    if (nf) {
        memcpy(raw, text, (size_t)(ni + 1 + nf));
        *nraw = (size_t)(ni + 1 + nf);
    } else {
        memcpy(raw, t->ip, (size_t)ni);
        raw[ni] = '.';
        raw[ni + 1] = '0';
        *nraw = (size_t)(ni + 2);
    }
    return 1;
}

typedef struct {
    Py_ssize_t cap, n; /* rows */
    col_t cols[NCOLS];
    int64_t *line_no;
    Py_ssize_t nfb, nbad;
    int64_t *fb_line_no, *fb_start, *fb_end;
    int64_t *bad_line_no, *bad_start, *bad_end;
    Py_ssize_t blank;
    char *scratch; /* decoded strings of the current line */
} out_t;

static inline void put_null(out_t *o, int c) {
    col_t *k = &o->cols[c];
    bit_set(k->valid, o->n, 0);
    if (k->kind == C_STR) k->off[o->n + 1] = (int32_t)k->sdata.len;
}

static inline int put_str(out_t *o, int c, const char *s, size_t n) {
    col_t *k = &o->cols[c];
    if (buf_put(&k->sdata, s, n)) return -1;
    bit_set(k->valid, o->n, 1);
    k->off[o->n + 1] = (int32_t)k->sdata.len;
    return 0;
}

static inline void put_i64(out_t *o, int c, int64_t v) {
    col_t *k = &o->cols[c];
    ((int64_t *)k->data)[o->n] = v;
    bit_set(k->valid, o->n, 1);
}

static inline void put_i32(out_t *o, int c, int32_t v) {
    col_t *k = &o->cols[c];
    ((int32_t *)k->data)[o->n] = v;
    bit_set(k->valid, o->n, 1);
}

static inline void put_bool(out_t *o, int c, int v) {
    col_t *k = &o->cols[c];
    bit_set((uint8_t *)k->data, o->n, v);
    bit_set(k->valid, o->n, 1);
}

static inline int absent(const tok_t *t) { return t->type == T_ABSENT || t->type == T_NULL; }

/* an optional int column: absent/null -> null, a JSON integer in range -> value; 0 = fallback */
static inline int opt_int32(out_t *o, int c, const tok_t *t) {
    int64_t v;
    if (absent(t)) {
        put_null(o, c);
        return 1;
    }
    if (!tok_int(t, 9, &v)) return 0;
    put_i32(o, c, (int32_t)v);
    return 1;
}

static inline int str_or_null(out_t *o, int c, const tok_t *t) {
    if (absent(t)) {
        put_null(o, c);
        return 1;
    }
    if (t->type != T_STR) return 0;
    return put_str(o, c, t->s, (size_t)(t->e - t->s)) ? -1 : 1;
}

static size_t u128_dec(unsigned __int128 v, char *out) {
    char tmp[48];
    size_t n = 0;
    if (v <= UINT64_MAX) { /* the common 64-bit checksum: no 128-bit division */
        uint64_t w = (uint64_t)v;
        do {
            tmp[n++] = (char)('0' + (int)(w % 10));
            w /= 10;
        } while (w);
        for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
        return n;
    }
    do {
        tmp[n++] = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

static const char *KIND_NAMES[4] = {"kv", "aux", "state", "index_k"};
static const char *EVENT_NAMES[6] = {"post", "done", "fail", "notif", "abort", "checksum"};

static inline int in_list(const tok_t *t, const char **names, int n) {
    size_t len = (size_t)(t->e - t->s);
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && !memcmp(names[i], t->s, len)) return 1;
    return 0;
}

static inline int tok_is(const tok_t *t, const char *lit) {
    size_t n = strlen(lit);
    return t->type == T_STR && (size_t)(t->e - t->s) == n && !memcmp(t->s, lit, n);
}

/* All the columns of one line, or 0 to hand it back (nothing written stays: the caller rewinds). */
static int line(out_t *o, const char *p, const char *e) {
    tok_t tk[NKEYS];
    const char *xk[MAX_EXTRA], *xke[MAX_EXTRA], *xv[MAX_EXTRA], *xve[MAX_EXTRA];
    int nx = 0;
    for (int i = 0; i < NKEYS; i++) tk[i].type = T_ABSENT;
    p = ws(p, e);
    if (p >= e || *p != '{') return 0;
    p = ws(p + 1, e);
    if (p < e && *p == '}') return 0; /* {}: no ts, a schema error */
    for (;;) {
        if (p >= e || *p != '"') return 0;
        int kf = 0;
        const char *k = p + 1, *ke = scan_str(k, e, &kf);
        if (!ke || (kf & S_ESC)) return 0; /* an escaped key may spell a known one */
        p = ws(ke + 1, e);
        if (p >= e || *p != ':') return 0;
        p = ws(p + 1, e);
        int ki = key_index(k, (size_t)(ke - k));
        tok_t tmp, *t = ki >= 0 ? &tk[ki] : &tmp;
        if (ki >= 0 && t->type != T_ABSENT) return 0; /* duplicate key */
        const char *vs = p;
        p = scan_value(p, e, t);
        if (!p) return 0;
        if (ki < 0) {
            /* extra is DuckDB's JSON text: escapes are written back its way, which is not taken */
            if (nx == MAX_EXTRA || (t->type == T_STR && (t->flags & S_ESC))) return 0;
            if (t->type == T_NUM) {
                /* integers print back as written; floats need not */
                if (t->has_frac || t->has_exp || neg_zero(t) || t->ipe - t->ip > 18) return 0;
            }
            size_t kl = (size_t)(ke - k);
            for (int j = 0; j < nx; j++)
                if ((size_t)(xke[j] - xk[j]) == kl && !memcmp(xk[j], k, kl)) return 0;
            xk[nx] = k;
            xke[nx] = ke;
            xv[nx] = vs;
            xve[nx] = p;
            nx++;
        }
        p = ws(p, e);
        if (p >= e) return 0;
        if (*p == ',') {
            p = ws(p + 1, e);
            continue;
        }
        if (*p == '}') break;
        return 0;
    }
    if (ws(p + 1, e) != e) return 0;
    /* known strings with escapes are read decoded, as json_extract_string gives them */
    char *sc = o->scratch;
    for (int i = 0; i < NKEYS; i++) {
        tok_t *u = &tk[i];
        if (u->type != T_STR || !(u->flags & S_ESC)) continue;
        size_t n = unescape(u->s, u->e, sc);
        u->s = sc;
        u->e = sc + n;
        sc += n;
    }

    int64_t v, us;
    int naive = 0;
    /* the checks of CHECK_ORDER: a line failing any goes back to the reference path */
    tok_t *t = &tk[K_TS];
    char tsraw[24];
    size_t ntsraw;
    if (t->type == T_NUM) {
        if (!num_ts(t, &us, tsraw, &ntsraw)) return 0;
        if (put_str(o, O_TS_RAW, tsraw, ntsraw)) return -1;
    } else if (t->type == T_STR) {
        if (!iso_ts(t->s, t->e, &us, &naive)) return 0;
        if (put_str(o, O_TS_RAW, t->s, (size_t)(t->e - t->s))) return -1;
    } else {
        return 0;
    }
    put_i64(o, O_TS, us);
    put_bool(o, O_TS_NAIVE, naive);

    t = &tk[K_HOST];
    if (t->type != T_STR || t->e == t->s) return 0;
    if (put_str(o, O_HOST, t->s, (size_t)(t->e - t->s))) return -1;
    t = &tk[K_SIDE];
    if (!tok_is(t, "prefill") && !tok_is(t, "decode")) return 0;
    if (put_str(o, O_SIDE, t->s, (size_t)(t->e - t->s))) return -1;
    if (!tok_int(&tk[K_ENGINE_RANK], 9, &v)) return 0;
    put_i32(o, O_ENGINE_RANK, (int32_t)v);
    t = &tk[K_ROOM];
    if (t->type == T_NUM) {
        if (t->neg || t->has_frac || t->has_exp || !digits_u63(t->ip, t->ipe, &v)) return 0;
    } else if (t->type == T_STR) {
        if (!digits_u63(t->s, t->e, &v)) return 0;
    } else {
        return 0;
    }
    put_i64(o, O_ROOM, v);
    if (tk[K_KIND].type != T_STR || tk[K_EVENT].type != T_STR) return 0;
    t = &tk[K_KIND];
    if (put_str(o, O_KIND, t->s, (size_t)(t->e - t->s))) return -1;
    t = &tk[K_EVENT];
    if (put_str(o, O_EVENT, t->s, (size_t)(t->e - t->s))) return -1;
    put_bool(o, O_UNKNOWN_ENUM, !in_list(&tk[K_KIND], KIND_NAMES, 4) || !in_list(&tk[K_EVENT], EVENT_NAMES, 6));
    t = &tk[K_PID];
    if (absent(t)) {
        put_null(o, O_PID);
    } else {
        if (!tok_int(t, 18, &v)) return 0;
        put_i64(o, O_PID, v);
    }
    if (!opt_int32(o, O_DP_RANK, &tk[K_DP_RANK]) || !opt_int32(o, O_CHUNK, &tk[K_CHUNK])) return 0;
    t = &tk[K_IS_LAST];
    if (absent(t))
        put_null(o, O_IS_LAST);
    else if (t->type == T_TRUE || t->type == T_FALSE)
        put_bool(o, O_IS_LAST, t->type == T_TRUE);
    else if (t->type == T_NUM && !t->neg && t->e - t->s == 1 && (*t->s == '0' || *t->s == '1'))
        put_bool(o, O_IS_LAST, *t->s == '1');
    else
        return 0;
    t = &tk[K_BYTES];
    if (absent(t)) {
        put_null(o, O_BYTES);
    } else if (t->type == T_NUM) {
        if (!tok_int(t, 18, &v)) return 0;
        put_i64(o, O_BYTES, v);
    } else if (t->type == T_STR) {
        if (t->e - t->s > 18 || !digits_u63(t->s, t->e, &v)) return 0;
        put_i64(o, O_BYTES, v);
    } else {
        return 0;
    }
    t = &tk[K_CHECKSUM];
    if (absent(t)) {
        if (tok_is(&tk[K_EVENT], "checksum")) return 0;
        put_null(o, O_CHECKSUM);
        put_null(o, O_CHECKSUM_INT);
    } else {
        if (t->type != T_STR) return 0;
        const char *h = t->s;
        if (t->e - h >= 3 && h[0] == '0' && (h[1] == 'x' || h[1] == 'X')) h += 2;
        if (h == t->e) return 0;
        char low[40];
        size_t nh = (size_t)(t->e - h);
        const char *sig = NULL;
        unsigned __int128 cv = 0;
        for (const char *q = h; q < t->e; q++) {
            int d = hex_digit(*q);
            if (d < 0) return 0;
            if (!sig && d) sig = q;
            if (sig) cv = (cv << 4) | (unsigned)d;
        }
        size_t nsig = sig ? (size_t)(t->e - sig) : 0;
        if (nsig > 32) return 0; /* wider than 128 bits: the reference path's Python */
        col_t *ck = &o->cols[O_CHECKSUM];
        if (buf_reserve(&ck->sdata, nh)) return -1;
        for (size_t i = 0; i < nh; i++) {
            char c = h[i];
            ck->sdata.p[ck->sdata.len + i] = (c >= 'A' && c <= 'F') ? (char)(c + 32) : c;
        }
        ck->sdata.len += nh;
        bit_set(ck->valid, o->n, 1);
        ck->off[o->n + 1] = (int32_t)ck->sdata.len;
        size_t nd = u128_dec(cv, low);
        if (put_str(o, O_CHECKSUM_INT, low, nd)) return -1;
    }
    /* the rest never fail a line, but may be values the fast path does not print */
    int r;
    if ((r = str_or_null(o, O_RID, &tk[K_RID])) != 1) return r;
    t = &tk[K_STATUS];
    if (absent(t)) {
        put_null(o, O_STATUS);
        put_null(o, O_STATUS_RAW);
    } else if (t->type == T_STR) {
        if (put_str(o, O_STATUS, t->s, (size_t)(t->e - t->s))) return -1;
        put_null(o, O_STATUS_RAW);
    } else if (t->type == T_NUM && !neg_zero(t) && tok_int(t, 18, &v)) {
        const char *name = (v <= 1 && v >= -12) ? STATUS_NAMES[1 - v] : "BAD_STATUS";
        if (put_str(o, O_STATUS, name, strlen(name))) return -1;
        if (put_str(o, O_STATUS_RAW, t->s, (size_t)(t->e - t->s))) return -1;
    } else {
        return 0;
    }
    if ((r = str_or_null(o, O_PEER, &tk[K_PEER])) != 1) return r;
    if ((r = str_or_null(o, O_ERROR, &tk[K_ERROR])) != 1) return r;
    if (nx == 0) {
        put_null(o, O_EXTRA);
    } else {
        col_t *x = &o->cols[O_EXTRA];
        if (buf_put(&x->sdata, "{", 1)) return -1;
        for (int j = 0; j < nx; j++) {
            if ((j && buf_put(&x->sdata, ",", 1)) || buf_put(&x->sdata, xk[j] - 1, (size_t)(xke[j] - xk[j]) + 2) ||
                buf_put(&x->sdata, ":", 1) || buf_put(&x->sdata, xv[j], (size_t)(xve[j] - xv[j])))
                return -1;
        }
        if (buf_put(&x->sdata, "}", 1)) return -1;
        bit_set(x->valid, o->n, 1);
        x->off[o->n + 1] = (int32_t)x->sdata.len;
    }
    return 1;
}

static void out_free(out_t *o) {
    for (int c = 0; c < NCOLS; c++) {
        col_t *k = &o->cols[c];
        free(k->data), free(k->valid), free(k->off);
        buf_free(&k->sdata);
        k->data = NULL, k->valid = NULL, k->off = NULL;
    }
    int64_t **arrays[] = {&o->line_no, &o->fb_line_no, &o->fb_start, &o->fb_end, &o->bad_line_no, &o->bad_start,
                          &o->bad_end};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(*arrays[i]), *arrays[i] = NULL;
    free(o->scratch);
    o->scratch = NULL;
}

/* with the GIL: every buffer at its largest (`body` bytes of text, `cap` lines); out_free frees
 * what was allocated when a later allocation fails */
static int out_init(out_t *o, Py_ssize_t cap, Py_ssize_t body) {
    memset(o, 0, sizeof *o);
    o->cap = cap;
    size_t bm = bitmap_bytes(cap) + 1;
    /* a string column holds at most the line's bytes, and a status name or a 128-bit decimal more */
    size_t sbound = (size_t)body + 48 * (size_t)cap;
    for (int c = 0; c < NCOLS; c++) {
        col_t *k = &o->cols[c];
        k->name = COLS[c].name;
        k->kind = COLS[c].kind;
        if (!(k->valid = calloc(bm, 1))) return -1;
        if (k->kind == C_STR) {
            if (!(k->off = malloc(((size_t)cap + 1) * 4)) || buf_reserve(&k->sdata, sbound)) return -1;
            k->off[0] = 0;
        } else {
            size_t w = k->kind == C_I64 ? (size_t)cap * 8 : k->kind == C_I32 ? (size_t)cap * 4 : bm;
            if (!(k->data = k->kind == C_BOOL ? calloc(w, 1) : malloc(w))) return -1;
        }
    }
    int64_t **arrays[] = {&o->line_no, &o->fb_line_no, &o->fb_start, &o->fb_end, &o->bad_line_no, &o->bad_start,
                          &o->bad_end};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
        if (!(*arrays[i] = malloc((size_t)cap * 8))) return -1;
    if (!(o->scratch = malloc((size_t)body + 16))) return -1;
    return 0;
}

/* A line that opens an object and ends in a printable character other than its closing brace is no
 * JSON whatever its middle holds (DuckDB's reader takes no comments and nothing after the value):
 * a line cut by a crash or a rotation. `]` stays with the reference path, which tells a line cut
 * to MAX_LINE_BYTES (its marker ends in `]`) from others. */
static inline int cut_object(const char *p, const char *e) {
    p = ws(p, e);
    while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
    if (p >= e || *p != '{') return 0;
    char c = e[-1];
    return c > 0x20 && c < 0x7f && c != '}' && c != ']';
}

/* undo what a handed-back line wrote to the string columns (the fixed-width ones are overwritten) */
static void rewind_row(out_t *o, size_t *marks) {
    for (int c = 0; c < NCOLS; c++)
        if (o->cols[c].kind == C_STR) o->cols[c].sdata.len = marks[c];
}

static int scan_block(out_t *o, const char *body, Py_ssize_t len, int64_t first) {
    const char *p = body, *end = body + len;
    int64_t ln = first;
    size_t marks[NCOLS];
    for (;;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *e = le;
        if (e > p && e[-1] == '\r') e--;
        const char *q = p;
        while (q < e && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
        if (q == e) {
            o->blank++;
        } else {
            if (o->n >= o->cap || o->nfb >= o->cap) return -2;
            for (int c = 0; c < NCOLS; c++)
                if (o->cols[c].kind == C_STR) marks[c] = o->cols[c].sdata.len;
            int r = line(o, p, e);
            if (r < 0) return -1;
            if (r == 1) {
                o->line_no[o->n] = ln;
                o->n++;
            } else if (cut_object(p, e)) {
                rewind_row(o, marks);
                o->bad_line_no[o->nbad] = ln;
                o->bad_start[o->nbad] = p - body;
                o->bad_end[o->nbad] = e - body;
                o->nbad++;
            } else {
                rewind_row(o, marks);
                o->fb_line_no[o->nfb] = ln;
                o->fb_start[o->nfb] = p - body;
                o->fb_end[o->nfb] = le - body;
                o->nfb++;
            }
        }
        ln++;
        if (!nl) break;
        p = nl + 1;
    }
    return 0;
}

PyDoc_STRVAR(scan_doc,
             "scan(body, first_line_no, lines) -> dict\n\n"
             "The lines of a block of a transfer trace (no newline after the last): `n` rows taken, "
             "their `line_no`, per column `<name>` (values or a bool bitmap), `<name>.valid` (bitmap), "
             "for strings `<name>.off` (int32) and `<name>.data`; `blank`, the count of blank lines; "
             "`fb.n`, `fb.line_no`, `fb.start`, `fb.end` (int64), the lines handed back, by byte range; "
             "`bad.*` the same for lines that are no JSON (`cut_object`), their end without the CR.");

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    long long first, lines;
    if (!PyArg_ParseTuple(args, "y*LL", &view, &first, &lines)) return NULL;
    out_t o;
    if (lines < 1) lines = 1;
    int rc;
    if (out_init(&o, (Py_ssize_t)lines, view.len)) {
        rc = -3;
    } else {
        Py_BEGIN_ALLOW_THREADS
        rc = scan_block(&o, (const char *)view.buf, view.len, first);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    if (rc == -2) {
        out_free(&o);
        PyErr_SetString(PyExc_ValueError, "the block has more lines than `lines`");
        return NULL;
    }
    if (rc < 0) { /* -3: out_init, -1: a string column growing past its bound */
        out_free(&o);
        return PyErr_NoMemory();
    }
    for (int c = 0; c < NCOLS; c++)
        if (o.cols[c].sdata.len > INT32_MAX) {
            out_free(&o);
            PyErr_SetString(PyExc_ValueError, "a column of the block exceeds 2 GiB");
            return NULL;
        }
    PyObject *d = PyDict_New();
    if (!d) goto fail;
    Py_ssize_t n = o.n;
    size_t bm = bitmap_bytes(n), rows = (size_t)n;
    if (put_ssize(d, "n", n) || put_ssize(d, "blank", o.blank) || put_ssize(d, "fb.n", o.nfb) ||
        put_ssize(d, "bad.n", o.nbad))
        goto fail;
    if (put(d, "line_no", mem((void **)&o.line_no, rows * 8)) ||
        put(d, "fb.line_no", mem((void **)&o.fb_line_no, (size_t)o.nfb * 8)) ||
        put(d, "fb.start", mem((void **)&o.fb_start, (size_t)o.nfb * 8)) ||
        put(d, "fb.end", mem((void **)&o.fb_end, (size_t)o.nfb * 8)) ||
        put(d, "bad.line_no", mem((void **)&o.bad_line_no, (size_t)o.nbad * 8)) ||
        put(d, "bad.start", mem((void **)&o.bad_start, (size_t)o.nbad * 8)) ||
        put(d, "bad.end", mem((void **)&o.bad_end, (size_t)o.nbad * 8)))
        goto fail;
    char key[64];
    for (int c = 0; c < NCOLS; c++) {
        col_t *k = &o.cols[c];
        snprintf(key, sizeof key, "%s.valid", k->name);
        if (put(d, key, mem((void **)&k->valid, bm))) goto fail;
        if (k->kind == C_STR) {
            snprintf(key, sizeof key, "%s.off", k->name);
            if (put(d, key, mem((void **)&k->off, (rows + 1) * 4))) goto fail;
            snprintf(key, sizeof key, "%s.data", k->name);
            if (put_buf(d, key, &k->sdata)) goto fail;
        } else {
            size_t w = k->kind == C_I64 ? rows * 8 : k->kind == C_I32 ? rows * 4 : bm;
            if (put(d, k->name, mem((void **)&k->data, w))) goto fail;
        }
    }
    out_free(&o);
    return d;
fail:
    out_free(&o);
    Py_XDECREF(d);
    return NULL;
}

static PyMethodDef methods[] = {{"scan", scan, METH_VARARGS, scan_doc}, {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fasttrace", "Field splitter for KV transfer traces.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fasttrace(void) {
    for (int i = 0; i < 256; i++) STOP[i] = (i == '"' || i == '\\' || i < 0x20 || i >= 0x80);
    if (native_ready() < 0) return NULL;
    return PyModule_Create(&module);
}
