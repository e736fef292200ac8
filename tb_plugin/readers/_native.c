/* The readers' compiled helpers (module tb_plugin.readers._native; optional: each has a
 * numpy/msgspec counterpart that gives the same results, see the callers).
 *
 * Where each trace event's fields lie in a chunk of Chrome-trace JSON, in one C pass:
 * scan(data) -> bytes | None
 *   data: one chunk as trace_chunks cuts it, "[ {event}, {event}, ... ]".
 *   Returns, for each event in order, NFIELDS (start, end) byte offsets into `data` as
 *   native int64: the value of each key of FIELD_NAMES (start == end == 0 where the key is
 *   absent; the last occurrence where it is repeated), then the event object itself.
 *   Returns None for anything this pass does not take on, so that the caller decodes the
 *   chunk the general way (msgspec into structs), which decides what it means and reports
 *   it: JSON that is invalid or that msgspec might read otherwise (a \u escape of a
 *   surrogate), an element that is not an object, a key of an event written with an
 *   escape, nesting deeper than MAX_DEPTH.
 *
 * Why: decoding an event into a Python struct and taking each field out of it costs about
 * a microsecond per event; the offsets cost a few nanoseconds, and the columns are then
 * made from them by numpy and Arrow without a Python object per event (trace_builder).
 * The grammar checked is RFC 8259's, as strictly as msgspec's decoder: a chunk is taken
 * here only if msgspec would decode it too, so both paths give the same events.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define NFIELDS 12 /* 11 keys + the object */
#define MAX_DEPTH 256

static const char *FIELD_NAMES[NFIELDS - 1] = {
    "ph", "name", "cat", "pid", "tid", "ts", "dur", "id", "id2", "s", "args"};

typedef struct {
    const unsigned char *p;
    Py_ssize_t n;
    Py_ssize_t i;
} Cursor;

static inline void skip_ws(Cursor *c) {
    while (c->i < c->n) {
        unsigned char ch = c->p[c->i];
        if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')
            c->i++;
        else
            break;
    }
}

/* Word-at-a-time tests (8 bytes): some byte is zero; some byte is below n (n <= 128). */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static inline uint64_t has_zero(uint64_t v) { return (v - ONES) & ~v & HIGHS; }
static inline uint64_t has_less(uint64_t v, unsigned n) { return (v - ONES * n) & ~v & HIGHS; }

static inline int hexval(unsigned char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

/* A string starting at c->i (a '"'); on success c->i is after the closing quote.
 * *escaped tells whether it held a backslash. */
static int scan_string(Cursor *c, int *escaped) {
    const unsigned char *p = c->p;
    Py_ssize_t i = c->i + 1, n = c->n;
    *escaped = 0;
    for (;;) {
        /* the common run: plain bytes, 8 at a time while none of them ends it */
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (has_zero(w ^ (ONES * '"')) | has_zero(w ^ (ONES * '\\')) | has_less(w, 0x20))
                break;
            i += 8;
        }
        while (i < n && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20) i++;
        if (i >= n) return -1;
        unsigned char ch = p[i];
        if (ch == '"') {
            c->i = i + 1;
            return 0;
        }
        if (ch < 0x20) return -1;
        /* a backslash */
        *escaped = 1;
        if (i + 1 >= n) return -1;
        ch = p[i + 1];
        switch (ch) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                i += 2;
                break;
            case 'u': {
                if (i + 5 >= n) return -1;
                int v = 0;
                for (int k = 2; k < 6; k++) {
                    int h = hexval(p[i + k]);
                    if (h < 0) return -1;
                    v = v * 16 + h;
                }
                if (v >= 0xD800 && v <= 0xDFFF) return -1; /* surrogates: msgspec decides */
                i += 6;
                break;
            }
            default:
                return -1;
        }
    }
}

static int scan_number(Cursor *c) {
    const unsigned char *p = c->p;
    Py_ssize_t i = c->i, n = c->n;
    if (i < n && p[i] == '-') i++;
    if (i >= n) return -1;
    if (p[i] == '0') {
        i++;
    } else if (p[i] >= '1' && p[i] <= '9') {
        while (i < n && p[i] >= '0' && p[i] <= '9') i++;
    } else {
        return -1;
    }
    if (i < n && p[i] == '.') {
        i++;
        if (i >= n || p[i] < '0' || p[i] > '9') return -1;
        while (i < n && p[i] >= '0' && p[i] <= '9') i++;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-')) i++;
        if (i >= n || p[i] < '0' || p[i] > '9') return -1;
        while (i < n && p[i] >= '0' && p[i] <= '9') i++;
    }
    /* a number must end at a delimiter (msgspec: "invalid number" for 01, 1x) */
    if (i < n) {
        unsigned char ch = p[i];
        if (!(ch == ',' || ch == '}' || ch == ']' || ch == ' ' || ch == '\n' || ch == '\r' ||
              ch == '\t'))
            return -1;
    }
    c->i = i;
    return 0;
}

static int scan_literal(Cursor *c, const char *word, Py_ssize_t len) {
    if (c->i + len > c->n || memcmp(c->p + c->i, word, len) != 0) return -1;
    c->i += len;
    return 0;
}

static int scan_value(Cursor *c, int depth);

/* After a member of an object or array: 1 at a ',' (skipped, with the blanks after it),
 * 0 at the closing bracket (skipped), -1 at anything else. */
static inline int after_member(Cursor *c, unsigned char close) {
    skip_ws(c);
    if (c->i >= c->n) return -1;
    if (c->p[c->i] == ',') {
        c->i++;
        skip_ws(c);
        return 1;
    }
    if (c->p[c->i] == close) {
        c->i++;
        return 0;
    }
    return -1;
}

static int scan_container(Cursor *c, int depth, unsigned char close) {
    int escaped;
    if (depth >= MAX_DEPTH) return -1;
    c->i++; /* the opening bracket */
    skip_ws(c);
    if (c->i < c->n && c->p[c->i] == close) {
        c->i++;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            if (c->i >= c->n || c->p[c->i] != '"') return -1;
            if (scan_string(c, &escaped)) return -1;
            skip_ws(c);
            if (c->i >= c->n || c->p[c->i] != ':') return -1;
            c->i++;
            skip_ws(c);
        }
        if (scan_value(c, depth + 1)) return -1;
        int more = after_member(c, close);
        if (more <= 0) return more;
    }
}

static int scan_value(Cursor *c, int depth) {
    int escaped;
    if (c->i >= c->n) return -1;
    switch (c->p[c->i]) {
        case '"': return scan_string(c, &escaped);
        case '{': return scan_container(c, depth, '}');
        case '[': return scan_container(c, depth, ']');
        case 't': return scan_literal(c, "true", 4);
        case 'f': return scan_literal(c, "false", 5);
        case 'n': return scan_literal(c, "null", 4);
        default: return scan_number(c);
    }
}

/* Which of FIELD_NAMES the key p[a:b] (without quotes) is, or -1. */
static inline int field_of(const unsigned char *p, Py_ssize_t a, Py_ssize_t b) {
    Py_ssize_t len = b - a;
    if (len < 1 || len > 4) return -1;
    for (int f = 0; f < NFIELDS - 1; f++) {
        const char *name = FIELD_NAMES[f];
        if ((Py_ssize_t)strlen(name) == len && memcmp(p + a, name, len) == 0) return f;
    }
    return -1;
}

/* One event object at c->i; its spans go to out[0 .. 2 * NFIELDS). */
static int scan_event(Cursor *c, int64_t *out) {
    int escaped;
    Py_ssize_t obj_start = c->i;
    memset(out, 0, sizeof(int64_t) * 2 * NFIELDS);
    c->i++;
    skip_ws(c);
    if (c->i < c->n && c->p[c->i] == '}') {
        c->i++;
    } else {
        for (;;) {
            if (c->i >= c->n || c->p[c->i] != '"') return -1;
            Py_ssize_t key_start = c->i + 1;
            if (scan_string(c, &escaped)) return -1;
            if (escaped) return -1; /* a key written with escapes: msgspec decides */
            int f = field_of(c->p, key_start, c->i - 1);
            skip_ws(c);
            if (c->i >= c->n || c->p[c->i] != ':') return -1;
            c->i++;
            skip_ws(c);
            Py_ssize_t value_start = c->i;
            if (scan_value(c, 2)) return -1;
            if (f >= 0) {
                out[2 * f] = value_start;
                out[2 * f + 1] = c->i;
            }
            int more = after_member(c, '}');
            if (more < 0) return -1;
            if (more == 0) break;
        }
    }
    out[2 * (NFIELDS - 1)] = obj_start;
    out[2 * (NFIELDS - 1) + 1] = c->i;
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    Cursor c = {(const unsigned char *)view.buf, view.len, 0};
    Py_ssize_t cap = 1024, count = 0;
    int64_t *spans = NULL;
    int ok = 0;

    Py_BEGIN_ALLOW_THREADS
    spans = (int64_t *)malloc(sizeof(int64_t) * 2 * NFIELDS * cap);
    if (spans != NULL) {
        skip_ws(&c);
        if (c.i < c.n && c.p[c.i] == '[') {
            c.i++;
            skip_ws(&c);
            if (c.i < c.n && c.p[c.i] == ']') {
                c.i++;
                ok = 1;
            } else {
                for (;;) {
                    if (c.i >= c.n || c.p[c.i] != '{') break;
                    if (count == cap) {
                        int64_t *grown = (int64_t *)realloc(
                            spans, sizeof(int64_t) * 2 * NFIELDS * cap * 2);
                        if (grown == NULL) break;
                        spans = grown;
                        cap *= 2;
                    }
                    if (scan_event(&c, spans + 2 * NFIELDS * count)) break;
                    count++;
                    skip_ws(&c);
                    if (c.i < c.n && c.p[c.i] == ',') {
                        c.i++;
                        skip_ws(&c);
                        continue;
                    }
                    if (c.i < c.n && c.p[c.i] == ']') {
                        c.i++;
                        ok = 1;
                    }
                    break;
                }
            }
            skip_ws(&c);
            if (c.i != c.n) ok = 0;
        }
    }
    Py_END_ALLOW_THREADS

    PyBuffer_Release(&view);
    if (spans == NULL) return PyErr_NoMemory();
    if (!ok) {
        free(spans);
        Py_RETURN_NONE;
    }
    PyObject *result =
        PyBytes_FromStringAndSize((const char *)spans, sizeof(int64_t) * 2 * NFIELDS * count);
    free(spans);
    return result;
}

/* gather(data, starts, ends) -> bytes: data[starts[0]:ends[0]] + data[starts[1]:ends[1]] + ...
 * (starts, ends: buffers of native int64). The raw texts of one field of many events as one
 * buffer, for an Arrow array over it; numpy's fancy indexing would build an index per byte. */
static PyObject *gather(PyObject *self, PyObject *args) {
    Py_buffer data, starts, ends;
    if (!PyArg_ParseTuple(args, "y*y*y*", &data, &starts, &ends)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = starts.len / (Py_ssize_t)sizeof(int64_t), total = 0;
    const int64_t *s = (const int64_t *)starts.buf, *e = (const int64_t *)ends.buf;
    if (ends.len != starts.len) {
        PyErr_SetString(PyExc_ValueError, "starts and ends differ in length");
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        if (s[k] < 0 || e[k] < s[k] || e[k] > data.len) {
            PyErr_SetString(PyExc_ValueError, "a span outside the data");
            goto done;
        }
        total += e[k] - s[k];
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) goto done;
    char *dst = PyBytes_AS_STRING(out);
    const char *src = (const char *)data.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n; k++) {
        Py_ssize_t len = e[k] - s[k];
        memcpy(dst, src + s[k], len);
        dst += len;
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    return out;
}

/* us_to_ns(buf, starts, ends) -> (ns bytearray, slow bytes): microseconds written as decimal
 * text, buf[starts[i]:ends[i]], to int64 ns exactly, as us_text._us_spans_numpy does for
 * plain decimals: up to 3 quotes/blanks stripped at each end, an optional sign, up to 16
 * whole digits, an optional point and digits of which the first 4 count (the 4th rounds
 * to the nearest ns); empty -> 0. slow[i] = 1 where the text is anything else (an
 * exponent, junk, too long or too large), for the general parser; ns[i] is then 0. */
static const int64_t MAX_US = 9223372036854774LL; /* int64 max // 1000 - 1 */

static inline int strip_char(unsigned char ch) {
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '"';
}

static int us_one(const unsigned char *p, int64_t a, int64_t b, int64_t *ns) {
    for (int r = 0; r < 3 && b > a; r++) {
        int lead = strip_char(p[a]);
        int trail = strip_char(p[b - 1]) && b - 1 > a;
        a += lead;
        b -= trail;
    }
    *ns = 0;
    if (b <= a) return 0;
    if (b - a > 24) return 1;
    int neg = 0;
    if (p[a] == '+' || p[a] == '-') {
        neg = p[a] == '-';
        a++;
    }
    int64_t us = 0;
    int whole = 0;
    while (a < b && p[a] >= '0' && p[a] <= '9') {
        if (++whole > 16) return 1;
        us = us * 10 + (p[a] - '0');
        a++;
    }
    int64_t frac = 0;
    int fdigits = 0;
    if (a < b && p[a] == '.') {
        a++;
        while (a < b && p[a] >= '0' && p[a] <= '9') {
            if (fdigits < 4) {
                frac = frac * 10 + (p[a] - '0');
                fdigits++;
            }
            a++;
        }
    }
    if (a != b) return 1;
    if (us > MAX_US) return 1;
    for (; fdigits < 4; fdigits++) frac *= 10;
    int64_t v = us * 1000 + (frac + 5) / 10;
    *ns = neg ? -v : v;
    return 0;
}

static PyObject *us_to_ns(PyObject *self, PyObject *args) {
    Py_buffer buf, starts, ends;
    if (!PyArg_ParseTuple(args, "y*y*y*", &buf, &starts, &ends)) return NULL;
    PyObject *result = NULL, *ns_obj = NULL, *slow_obj = NULL;
    Py_ssize_t n = starts.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *s = (const int64_t *)starts.buf, *e = (const int64_t *)ends.buf;
    if (ends.len != starts.len) {
        PyErr_SetString(PyExc_ValueError, "starts and ends differ in length");
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        if (s[k] < 0 || e[k] > buf.len || (e[k] > s[k] && s[k] >= buf.len)) {
            PyErr_SetString(PyExc_ValueError, "a span outside the buffer");
            goto done;
        }
    }
    /* a bytearray: the caller fills in the slow rows */
    ns_obj = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    slow_obj = PyBytes_FromStringAndSize(NULL, n);
    if (ns_obj == NULL || slow_obj == NULL) goto done;
    int64_t *ns = (int64_t *)PyByteArray_AS_STRING(ns_obj);
    char *slow = PyBytes_AS_STRING(slow_obj);
    const unsigned char *p = (const unsigned char *)buf.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n; k++) slow[k] = (char)us_one(p, s[k], e[k], &ns[k]);
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(2, ns_obj, slow_obj);
done:
    Py_XDECREF(ns_obj);
    Py_XDECREF(slow_obj);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    return result;
}

/* boundary_bytes(data, offsets, validity, offset, n, wide, first, last) -> bool: whether a
 * present, non-empty cell of an Arrow string array (its buffers: data bytes, int32 or, with
 * wide, int64 offsets, validity bitmap or b"" when every cell is present; cells offset ..
 * offset + n - 1) has a first byte marked in `first` or a last byte marked in `last` (256
 * bytes each, non-zero = marked; b"" skips that end). text_cells._boundary_bytes_in without
 * its numpy temporaries: it runs over every column of every CSV. */
static PyObject *boundary_bytes(PyObject *self, PyObject *args) {
    Py_buffer data, offsets, validity, first, last;
    Py_ssize_t offset, n;
    int wide;
    if (!PyArg_ParseTuple(args, "y*y*y*nnpy*y*", &data, &offsets, &validity, &offset, &n,
                          &wide, &first, &last))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t item = wide ? 8 : 4;
    if (offset < 0 || n < 0 || offsets.len < (offset + n + 1) * item
        || (validity.len && validity.len * 8 < offset + n)
        || (first.len && first.len != 256) || (last.len && last.len != 256)) {
        PyErr_SetString(PyExc_ValueError, "buffers too short for the cells");
        goto done;
    }
    const unsigned char *d = (const unsigned char *)data.buf;
    const unsigned char *v = validity.len ? (const unsigned char *)validity.buf : NULL;
    const unsigned char *ft = first.len ? (const unsigned char *)first.buf : NULL;
    const unsigned char *lt = last.len ? (const unsigned char *)last.buf : NULL;
    int found = 0, bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = offset; i < offset + n && !found; i++) {
        int64_t a, b;
        if (wide) {
            a = ((const int64_t *)offsets.buf)[i];
            b = ((const int64_t *)offsets.buf)[i + 1];
        } else {
            a = ((const int32_t *)offsets.buf)[i];
            b = ((const int32_t *)offsets.buf)[i + 1];
        }
        if (b <= a || (v && !((v[i >> 3] >> (i & 7)) & 1))) continue;
        if (a < 0 || b > data.len) {
            bad = 1;
            break;
        }
        found = (ft && ft[d[a]]) || (lt && lt[d[b - 1]]);
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "an offset outside the data");
        goto done;
    }
    result = PyBool_FromLong(found);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&validity);
    PyBuffer_Release(&first);
    PyBuffer_Release(&last);
    return result;
}

/* plain_numbers(data, offsets, offset, n, wide, max_len) -> bool: whether every byte of
 * the cells offset .. offset + n - 1 of an Arrow string array (the bytes from the first
 * cell's start to the last cell's end, null slots' bytes included) is one of "+,-./0123456789"
 * and no cell (null slots included) has max_len bytes or more: such cells spell no NaN or
 * inf and no overflowing number. text_cells._no_cell_is_non_finite without its numpy
 * temporaries: it runs over every column of every CSV. */
static PyObject *plain_numbers(PyObject *self, PyObject *args) {
    Py_buffer data, offsets;
    Py_ssize_t offset, n, max_len;
    int wide;
    if (!PyArg_ParseTuple(args, "y*y*nnpn", &data, &offsets, &offset, &n, &wide, &max_len))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t item = wide ? 8 : 4;
    if (offset < 0 || n < 0 || offsets.len < (offset + n + 1) * item) {
        PyErr_SetString(PyExc_ValueError, "buffers too short for the cells");
        goto done;
    }
    const unsigned char *d = (const unsigned char *)data.buf;
    int plain = 1, bad = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t prev = 0, lo = 0, hi = 0;
    for (Py_ssize_t i = offset; i <= offset + n; i++) {
        int64_t o = wide ? ((const int64_t *)offsets.buf)[i] : ((const int32_t *)offsets.buf)[i];
        if (i == offset) lo = o;
        else if (o - prev >= max_len) plain = 0;
        prev = o;
    }
    hi = prev;
    if (n > 0 && (lo < 0 || hi > data.len || hi < lo)) bad = 1;
    for (int64_t j = lo; plain && !bad && j < hi; j++)
        if (d[j] < '+' || d[j] > '9') plain = 0;
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "an offset outside the data");
        goto done;
    }
    result = PyBool_FromLong(plain);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&offsets);
    return result;
}

static PyMethodDef methods[] = {
    {"boundary_bytes", boundary_bytes, METH_VARARGS,
     "boundary_bytes(data, offsets, validity, offset, n, wide, first, last) -> bool (see"
     " source)."},
    {"plain_numbers", plain_numbers, METH_VARARGS,
     "plain_numbers(data, offsets, offset, n, wide, max_len) -> bool (see source)."},
    {"us_to_ns", us_to_ns, METH_VARARGS,
     "us_to_ns(buf, starts, ends) -> (ns, slow): decimal µs texts to int64 ns (see source)."},
    {"gather", gather, METH_VARARGS,
     "gather(data, starts, ends) -> bytes: the spans of data (int64 offsets), joined."},
    {"scan", scan, METH_VARARGS,
     "scan(data) -> bytes | None: each event's field spans (int64 start, end pairs)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native",
                                    "The readers' compiled helpers (see the source).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    PyObject *names = PyTuple_New(NFIELDS - 1);
    if (names == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    for (int f = 0; f < NFIELDS - 1; f++)
        PyTuple_SET_ITEM(names, f, PyUnicode_FromString(FIELD_NAMES[f]));
    if (PyModule_AddObject(m, "FIELDS", names) < 0) {
        Py_DECREF(names);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
