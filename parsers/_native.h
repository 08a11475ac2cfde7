/* What the two native modules share (parsers/_fastlog.c, parsers/_fasttrace.c): growable buffers,
 * Arrow validity bitmaps, the Mem object that hands a filled buffer to Python without a copy, the
 * dict helpers that build a scan's result, and the small parsers both need.
 *
 * One buffer convention for both: a scan fills malloc'd buffers (reserved up front for the block's
 * worst case where the scan runs without the GIL, so that nothing is copied by growing and pages
 * never written cost nothing), and hands each to Python as a Mem, which frees it with its last
 * reference. Arrow and numpy wrap a Mem through the buffer protocol (parsers/native.py,
 * parsers/transfer_trace.py).
 *
 * Everything here is static inline: each module gets its own copy, and a helper one of them does
 * not use costs nothing. Define NATIVE_MODULE (the module's name, a string literal) before the
 * include: it names the Mem type.
 */
#ifndef FORENSICS_NATIVE_H
#define FORENSICS_NATIVE_H

#ifndef NATIVE_MODULE
#error "define NATIVE_MODULE, the module's name as a string literal, before including _native.h"
#endif

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- growable buffers ---------------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static inline int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *src, size_t n) {
    if (buf_reserve(b, n)) return -1;
    memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

static inline void buf_free(Buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- validity bitmaps and bool columns (Arrow's: bit i of byte i / 8, least significant first) */

static inline size_t bitmap_bytes(int64_t rows) { return (size_t)(rows + 7) / 8; }

static inline void bit_on(uint8_t *bm, int64_t i) { bm[i >> 3] |= (uint8_t)(1u << (i & 7)); }

static inline void bit_set(uint8_t *bm, int64_t i, int v) {
    if (v)
        bm[i >> 3] |= (uint8_t)(1u << (i & 7));
    else
        bm[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}

/* bit `i` of a bitmap that grows by a byte every eight rows */
static inline int bit_append(Buf *bits, int64_t i, int v) {
    if ((i & 7) == 0) {
        char z = 0;
        if (buf_put(bits, &z, 1)) return -1;
    }
    if (v) bits->p[i >> 3] |= (char)(1 << (i & 7));
    return 0;
}

/* ---- small parsers --------------------------------------------------------------------------- */

#define ISD(c) ((c) >= '0' && (c) <= '9')

/* Days from 1970-01-01 to the proleptic Gregorian date y-m-d (H. Hinnant's days_from_civil). */
static inline int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static inline int is_leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static inline int days_in_month(int y, int m) {
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : dm[m - 1];
}

/* The length of the character at p (before e) as Python's strict UTF-8 decoder reads it: 1 for
 * ASCII, 2-4 for a well-formed sequence, 0 for a byte that starts none (an overlong form, a
 * surrogate, past U+10FFFF, a stray continuation byte, a sequence cut by e). */
static inline int utf8_len(const uint8_t *p, const uint8_t *e) {
    uint8_t c = p[0];
    if (c < 0x80) return 1;
    int n;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 0;
    if (e - p < n || p[1] < lo || p[1] > hi) return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return n;
}

static inline int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* ---- handing buffers to Python --------------------------------------------------------------- */

/* Read-only memory a scan filled, exported through the buffer protocol; freed with the last
 * reference. Copying every column into a bytes object cost a copy and a page fault per page. */
typedef struct {
    PyObject_HEAD
    void *p;
    Py_ssize_t n;
} Mem;

static void mem_dealloc(PyObject *self) {
    free(((Mem *)self)->p);
    Py_TYPE(self)->tp_free(self);
}

static int mem_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    Mem *m = (Mem *)self;
    return PyBuffer_FillInfo(view, self, m->p ? m->p : (void *)"", m->n, 1, flags);
}

static PyBufferProcs mem_as_buffer = {mem_getbuffer, NULL};

static PyTypeObject MemType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = NATIVE_MODULE ".Mem",
    .tp_basicsize = sizeof(Mem),
    .tp_dealloc = mem_dealloc,
    .tp_as_buffer = &mem_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only memory the scan filled (buffer protocol)",
};

/* The first n bytes of *pp as a Mem, which takes the memory over (*pp becomes NULL). */
static inline PyObject *mem(void **pp, size_t n) {
    Mem *m = PyObject_New(Mem, &MemType);
    if (!m) return NULL;
    m->p = *pp;
    m->n = (Py_ssize_t)n;
    *pp = NULL;
    return (PyObject *)m;
}

/* The used part of a buffer as a Mem, which takes it over (the buffer is left empty). */
static inline PyObject *buf_mem(Buf *x) {
    PyObject *m = mem((void **)&x->p, x->len);
    if (m) x->len = x->cap = 0;
    return m;
}

/* d[k] = v, taking the reference to v; -1 with the exception set (also when v is NULL) */
static inline int put(PyObject *d, const char *k, PyObject *v) {
    if (!v) return -1;
    int rc = PyDict_SetItemString(d, k, v);
    Py_DECREF(v);
    return rc;
}

static inline int put_ssize(PyObject *d, const char *k, Py_ssize_t v) { return put(d, k, PyLong_FromSsize_t(v)); }

/* d[k] = the used part of the buffer, which the dict takes over */
static inline int put_buf(PyObject *d, const char *k, Buf *x) { return put(d, k, buf_mem(x)); }

/* Call once from the module's init: the Mem type must be ready before a scan makes one. */
static inline int native_ready(void) { return PyType_Ready(&MemType); }

#endif /* FORENSICS_NATIVE_H */
