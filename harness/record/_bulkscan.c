/* The history reader's compact bulk lines, read in one pass (harness/record/columns.py says why by hand).

   scan(buf, first, codes, mdef) reads the complete lines of a block (buf ends with a newline) and returns, per line,
   where it starts and ends, its kind (1 processed, 2 committed, 3 acked, 4 failed; 255: not read here, left to the
   JSON parser; 0: the header, line 0 when `first`), and the columns of the lines it read; committed lines' offsets
   go to a table of their own, in line order. A line is read here only when it is laid out as the harness's writers
   write it (json.dumps with separators=(",", ":")) and every value is one the columns take as it is written:

   - bytes 8 to 15 are those of {"type":"processed",... (as the numpy path selects its lines), "type" is that type;
   - no spaces, no escapes, no byte below 32 or above 127, no duplicate key;
   - numbers are plain: digits, for floats one dot too; not negative, no exponent, no leading zero; integers of at
     most 18 digits, other numbers of at most 24 characters; floats are m / 10**k when that is exact, else Python's
     own correctly rounded conversion;
   - a processed line's "count", when there, is its offset range's (last - first + 1): any other is the JSON
     parser's to read, and the reader's to refuse (docs/history.md, "Totals");
   - a string column (member, topic, task) holds a string or null; "ok" is true, false or null; committed's
     "offsets" is [["topic",partition,offset],...] of 1 to 16 entries, its "requested_mono" a number; the type's
     numeric fields are there; any other field is a string, number, true, false or null.

   Strings become codes as History._code_list makes them: codes[s], a new one len(codes) when s is new. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_OFFSETS 16
#define MAX_KEYS 64

enum { PROCESSED = 1, COMMITTED, ACKED, FAILED, NTYPES, REST = 255 };
/* the fields a line may have that mean something, and what each is to a type */
enum { KEY_TYPE, KEY_MONO, KEY_MEMBER, KEY_TOPIC, KEY_TASK, KEY_PARTITION, KEY_FIRST, KEY_LAST, KEY_OFFSET, KEY_OK,
       KEY_OFFSETS, KEY_REQUESTED, KEY_COUNT, NFIELDS, KEY_OTHER = NFIELDS };
enum { ANY, FLOAT, INT, CODE, TYPE, OK, OFFSETS };
static const char *const NAMES[NFIELDS] = {"type", "mono", "member", "topic", "task", "partition", "first_offset",
                                           "last_offset", "offset", "ok", "offsets", "requested_mono", "count"};
static const char ROLE[NTYPES][NFIELDS] = {
    [PROCESSED] = {TYPE, FLOAT, CODE, CODE, CODE, INT, INT, INT, ANY, OK, ANY, ANY, INT},
    [COMMITTED] = {TYPE, FLOAT, CODE, ANY, ANY, ANY, ANY, ANY, ANY, OK, OFFSETS, FLOAT},
    [ACKED] = {TYPE, FLOAT, ANY, CODE, ANY, INT, ANY, ANY, INT, OK, ANY, ANY},
    [FAILED] = {TYPE, FLOAT, ANY, ANY, ANY, ANY, ANY, ANY, ANY, OK, ANY, ANY},
};
static const unsigned REQUIRED[NTYPES] = {
    [PROCESSED] = 1u << KEY_TYPE | 1u << KEY_MONO | 1u << KEY_PARTITION | 1u << KEY_FIRST | 1u << KEY_LAST,
    [COMMITTED] = 1u << KEY_TYPE | 1u << KEY_MONO | 1u << KEY_OFFSETS,
    [ACKED] = 1u << KEY_TYPE | 1u << KEY_MONO | 1u << KEY_PARTITION | 1u << KEY_OFFSET,
    [FAILED] = 1u << KEY_TYPE | 1u << KEY_MONO,
};
static const char *const TYPES[NTYPES] = {NULL, "processed", "committed", "acked", "failed"};

typedef struct { const char *p; Py_ssize_t n; } span;

/* one line's values while it is read; kept only when the whole line is */
typedef struct {
    unsigned seen;
    double mono, requested;
    int64_t partition, first, last, offset, ok, nofs, count;
    span member, topic, task, otopic[MAX_OFFSETS];
    int64_t opart[MAX_OFFSETS], ooff[MAX_OFFSETS];
} line_t;

/* a small cache of the codes of recent strings, so that most strings make no Python object */
#define CACHE 256
#define CACHED_LEN 48
typedef struct { Py_ssize_t n; int64_t code; char s[CACHED_LEN]; } slot_t;
typedef struct { PyObject *codes, *mdef; int64_t mdef_code; slot_t cache[CACHE]; } coder_t;

static int64_t code_of(coder_t *c, const char *p, Py_ssize_t n)
{
    uint64_t head = 0, tail = 0;  /* the slot: from the length and the first and last 8 bytes */
    memcpy(&head, p, n < 8 ? n : 8);
    memcpy(&tail, p + (n < 8 ? 0 : n - 8), n < 8 ? n : 8);
    slot_t *slot = &c->cache[((head * 31 + tail) * 0x9E3779B97F4A7C15u + (uint64_t)n) >> 56];
    if (n < CACHED_LEN && slot->n == n + 1 && memcmp(slot->s, p, n) == 0) return slot->code;  /* n + 1: 0 is empty */
    PyObject *s = PyUnicode_DecodeASCII(p, n, NULL);
    if (!s) return -1;
    PyObject *got = PyDict_GetItemWithError(c->codes, s);  /* borrowed */
    int64_t code = -1;
    if (got) code = PyLong_AsLongLong(got);
    else if (!PyErr_Occurred()) {
        PyObject *v = PyLong_FromSsize_t(PyDict_Size(c->codes));
        if (v && PyDict_SetItem(c->codes, s, v) == 0) code = PyLong_AsLongLong(v);
        Py_XDECREF(v);
    }
    Py_DECREF(s);
    if (code >= 0 && n < CACHED_LEN) {
        slot->n = n + 1, slot->code = code;
        memcpy(slot->s, p, n);
    }
    return code;
}

static int64_t code_or_default(coder_t *c, span s, int is_member)
{
    if (s.p) return s.n < 0 ? 0 : code_of(c, s.p, s.n);  /* n < 0: null, code 0 as None's */
    if (!is_member || c->mdef == Py_None) return 0;  /* absent: the file's member for `member`, else None */
    if (c->mdef_code < 0) {
        PyObject *got = PyDict_GetItemWithError(c->codes, c->mdef);
        if (got) c->mdef_code = PyLong_AsLongLong(got);
        else if (!PyErr_Occurred()) {
            PyObject *v = PyLong_FromSsize_t(PyDict_Size(c->codes));
            if (v && PyDict_SetItem(c->codes, c->mdef, v) == 0) c->mdef_code = PyLong_AsLongLong(v);
            Py_XDECREF(v);
        }
    }
    return c->mdef_code;
}

/* the end of the run of digits at p: 8 bytes at a time, a byte's bits set in `other` where it is not a digit (its
   high nibble is not 3, or adding 6 carries out of its low nibble), exact up to the first such byte */
static const char *digits(const char *p, const char *end)
{
    const uint64_t HIGH_NIBBLES = 0xF0F0F0F0F0F0F0F0u, THREES = 0x3030303030303030u, SIXES = 0x0606060606060606u;
    for (uint64_t w; end - p >= 8; p += 8) {
        memcpy(&w, p, 8);
        uint64_t other = ((w & HIGH_NIBBLES) ^ THREES) | (((w + SIXES) & HIGH_NIBBLES) ^ THREES);
        if (other) return p + __builtin_ctzll(other) / 8;
    }
    while (p < end && (unsigned)(*p - '0') < 10) p++;
    return p;
}

/* A plain number at p (before end): its end, or NULL. Digits, and for a float one dot between digits; integers of
   at most 18 digits, floats of at most 24 characters; a leading 0 only as "0" or "0.". */
static const char *number(const char *p, const char *end, int integer)
{
    const char *q = digits(p, end);
    if (q == p) return NULL;
    if (!integer && q < end && *q == '.') {
        const char *r = digits(q + 1, end);
        if (r == q + 1) return NULL;
        q = r;
    }
    if (q - p > (integer ? 18 : 24) || (*p == '0' && q - p > 1 && p[1] != '.')) return NULL;
    return q;
}

static const double P10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static int64_t as_int(const char *p, const char *q)
{
    int64_t m = 0;
    for (; p < q; p++) m = m * 10 + (*p - '0');
    return m;
}

/* a plain number's value, exact: m / 10**k with m of at most 15 digits and k at most 22 (both exact doubles, one
   rounding), else Python's correctly rounded conversion */
static double as_float(const char *p, const char *q)
{
    uint64_t m = 0;
    int digits = 0, frac = 0, dot = 0;
    for (const char *r = p; r < q; r++) {
        if (*r == '.') dot = 1;
        else m = m * 10 + (uint64_t)(*r - '0'), digits++, frac += dot;
    }
    if (digits <= 15 && frac <= 22) return (double)m / P10[frac];
    char tmp[32];
    memcpy(tmp, p, q - p);
    tmp[q - p] = 0;
    return PyOS_string_to_double(tmp, NULL, NULL);
}

/* a string's body from p (after its opening quote): its closing quote, or NULL if it has a byte that is not plain.
   8 bytes at a time: a byte's high bit is set in `quote` where it is a quote, in `bad` where it is a backslash, below
   32 or above 127 (exact up to the first such byte, which is all that is read of them) */
static const char *string(const char *p, const char *end)
{
    const uint64_t ONES = 0x0101010101010101u, HIGH = 0x8080808080808080u;
    for (uint64_t w, q, b; end - p >= 8; p += 8) {
        memcpy(&w, p, 8);
        q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
        uint64_t quote = (q - ONES) & ~q & HIGH, bad = (w | ((w - ONES * 32) & ~w) | ((b - ONES) & ~b)) & HIGH;
        if (quote | bad)
            return quote && (!bad || __builtin_ctzll(quote) < __builtin_ctzll(bad)) ? p + __builtin_ctzll(quote) / 8
                                                                                   : NULL;
    }
    unsigned bad = 0;
    for (; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') return bad ? NULL : p;
        bad |= (c < 32) | (c > 127) | (c == '\\');
    }
    return NULL;
}

static int field_of(const char *k, Py_ssize_t n)
{
    for (int f = 0; f < NFIELDS; f++)  /* a name's length is a constant: the compiler unrolls this to a few compares */
        if (n == (Py_ssize_t)strlen(NAMES[f]) && !memcmp(k, NAMES[f], strlen(NAMES[f]))) return f;
    return KEY_OTHER;
}

/* committed's offsets at p ('['): their end, or NULL */
static const char *offsets(const char *p, const char *end, line_t *L)
{
    p++;
    for (L->nofs = 0; L->nofs < MAX_OFFSETS; L->nofs++) {
        const char *q;
        if (end - p < 2 || p[0] != '[' || p[1] != '"' || !(q = string(p + 2, end))) return NULL;
        L->otopic[L->nofs] = (span){p + 2, q - p - 2};
        if (q + 1 >= end || q[1] != ',' || !(p = number(q + 2, end, 1))) return NULL;
        L->opart[L->nofs] = as_int(q + 2, p);
        if (p >= end || *p != ',' || !(q = number(p + 1, end, 1))) return NULL;
        L->ooff[L->nofs] = as_int(p + 1, q);
        if (q + 1 >= end || *q != ']') return NULL;
        if (q[1] == ']') return L->nofs++, q + 2;
        if (q[1] != ',') return NULL;
        p = q + 2;
    }
    return NULL;  /* more than MAX_OFFSETS */
}

/* one value of field f (role r) at p: its end, or NULL when the line is not one to read here */
static const char *value(const char *p, const char *end, int type, int f, int r, line_t *L)
{
    const char *q;
    if (*p == '"') {
        if (!(q = string(p + 1, end))) return NULL;
        span s = {p + 1, q - p - 1};
        if (r == TYPE) return (size_t)s.n == strlen(TYPES[type]) && !memcmp(s.p, TYPES[type], s.n) ? q + 1 : NULL;
        if (r == CODE) *(f == KEY_MEMBER ? &L->member : f == KEY_TOPIC ? &L->topic : &L->task) = s;
        return r == ANY || r == CODE ? q + 1 : NULL;
    }
    if (*p == '[') return r == OFFSETS ? offsets(p, end, L) : NULL;
    if ((unsigned)(*p - '0') < 10) {
        if (r != ANY && r != FLOAT && r != INT) return NULL;
        if (!(q = number(p, end, r == INT))) return NULL;
        if (f == KEY_MONO) L->mono = as_float(p, q);
        if (f == KEY_REQUESTED) L->requested = as_float(p, q);
        if (r == INT)
            *(f == KEY_PARTITION ? &L->partition : f == KEY_FIRST ? &L->first : f == KEY_LAST ? &L->last
              : f == KEY_COUNT ? &L->count : &L->offset) = as_int(p, q);
        return q;
    }
    int is_true = end - p >= 4 && !memcmp(p, "true", 4), is_null = end - p >= 4 && !memcmp(p, "null", 4);
    if (is_true || is_null || (end - p >= 5 && !memcmp(p, "false", 5))) {
        if (r == CODE && is_null)  /* n -1: null, code 0 */
            *(f == KEY_MEMBER ? &L->member : f == KEY_TOPIC ? &L->topic : &L->task) = (span){p, -1};
        if (r == OK) L->ok = is_true;
        return r == ANY || r == OK || (r == CODE && is_null) ? p + 4 + !(is_true || is_null) : NULL;
    }
    return NULL;
}

/* read one line [p, end) of a type: 1 when it is one to read here (its values in L), else 0 */
static int read_line(const char *p, const char *end, int type, line_t *L)
{
    span others[MAX_KEYS];
    int nothers = 0;
    L->seen = 0, L->ok = 0, L->nofs = 0, L->member = L->topic = L->task = (span){NULL, 0};
    if (*p++ != '{') return 0;
    for (;;) {
        const char *k = p + 1, *q;
        if (p >= end || *p != '"' || !(q = string(k, end)) || q + 1 >= end || q[1] != ':') return 0;
        int f = field_of(k, q - k);
        if (f == KEY_OTHER) {  /* a field the columns do not hold: a duplicate is still the parser's to read */
            for (int i = 0; i < nothers; i++)
                if (others[i].n == q - k && !memcmp(others[i].p, k, q - k)) return 0;
            if (nothers == MAX_KEYS) return 0;
            others[nothers++] = (span){k, q - k};
        } else if (L->seen & 1u << f) return 0;
        else L->seen |= 1u << f;
        if (!(p = value(q + 2, end, type, f, f == KEY_OTHER ? ANY : ROLE[type][f], L))) return 0;
        if (p < end && *p == ',') p++;
        else return p + 1 == end && *p == '}' && (L->seen & REQUIRED[type]) == REQUIRED[type]
                    && (type != PROCESSED || !(L->seen & 1u << KEY_COUNT) || L->count == L->last - L->first + 1);
    }
}

/* the 8 bytes from 8 of a line of each type: {"type":"processed",... */
static int type_of(const char *p, Py_ssize_t n)
{
    static const char WORD[NTYPES][9] = {"", "\"process", "\"committ", "\"acked\",", "\"failed\""};
    if (n < 16) return REST;
    for (int t = PROCESSED; t < NTYPES; t++)
        if (!memcmp(p + 8, WORD[t], 8)) return t;
    return REST;
}

/* the per-line columns, in the order of the tuple scan() returns after its line count */
enum { C_S, C_E, C_KIND, C_MONO, C_MEMBER, C_TOPIC, C_TASK, C_PARTITION, C_FIRST, C_LAST, C_REQUESTED, C_OK, C_NOFS,
       NCOLS };
/* and the offsets table's */
enum { T_TOPIC, T_PARTITION, T_OFFSET, NTABLE };

typedef struct {
    char *col[NCOLS];
    int64_t *table[NTABLE];
    Py_ssize_t ntable, cap;
} out_t;

static int keep(out_t *o, Py_ssize_t i, int type, line_t *L, coder_t *c)
{
    ((uint8_t *)o->col[C_KIND])[i] = (uint8_t)type;
    ((double *)o->col[C_MONO])[i] = L->mono;
    ((double *)o->col[C_REQUESTED])[i] = L->seen & 1u << KEY_REQUESTED ? L->requested : L->mono;
    int64_t *v[] = {(int64_t *)o->col[C_MEMBER], (int64_t *)o->col[C_TOPIC], (int64_t *)o->col[C_TASK]};
    const char *r = ROLE[type];  /* the string columns of the type only: a code is made for what a column holds */
    if ((r[KEY_MEMBER] == CODE && (v[0][i] = code_or_default(c, L->member, 1)) < 0) ||
        (r[KEY_TOPIC] == CODE && (v[1][i] = code_or_default(c, L->topic, 0)) < 0) ||
        (r[KEY_TASK] == CODE && (v[2][i] = code_or_default(c, L->task, 0)) < 0))
        return -1;
    ((int64_t *)o->col[C_PARTITION])[i] = L->partition;
    ((int64_t *)o->col[C_FIRST])[i] = type == ACKED ? L->offset : L->first;
    ((int64_t *)o->col[C_LAST])[i] = L->last;
    ((int64_t *)o->col[C_OK])[i] = L->ok;
    ((int64_t *)o->col[C_NOFS])[i] = L->nofs;
    if (o->ntable + L->nofs > o->cap) {
        o->cap = 2 * o->cap + MAX_OFFSETS;
        for (int t = 0; t < NTABLE; t++)
            if (!(o->table[t] = PyMem_Realloc(o->table[t], o->cap * sizeof(int64_t)))) return PyErr_NoMemory(), -1;
    }
    for (int j = 0; j < L->nofs; j++, o->ntable++) {
        if ((o->table[T_TOPIC][o->ntable] = code_of(c, L->otopic[j].p, L->otopic[j].n)) < 0) return -1;
        o->table[T_PARTITION][o->ntable] = L->opart[j];
        o->table[T_OFFSET][o->ntable] = L->ooff[j];
    }
    return 0;
}

static int scan_lines(const char *buf, Py_ssize_t len, int first, out_t *o, coder_t *c)
{
    line_t L;
    const char *p = buf, *end = buf + len, *nl;
    for (Py_ssize_t i = 0; p < end && (nl = memchr(p, '\n', end - p)); i++, p = nl + 1) {
        ((int64_t *)o->col[C_S])[i] = p - buf;
        ((int64_t *)o->col[C_E])[i] = nl - buf;
        int type = i == 0 && first ? 0 : type_of(p, nl - p);
        if (type != 0 && type != REST && read_line(p, nl, type, &L)) {
            if (keep(o, i, type, &L, c) < 0) return -1;
        } else
            ((uint8_t *)o->col[C_KIND])[i] = type == 0 ? 0 : REST;
    }
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer b;
    int first;
    coder_t *c = NULL;
    PyObject *codes, *mdef, *cols[NCOLS] = {0}, *result = NULL;
    out_t o = {0};
    if (!PyArg_ParseTuple(args, "y*pO!O", &b, &first, &PyDict_Type, &codes, &mdef)) return NULL;
    Py_ssize_t n = 0;
    for (const char *p = b.buf, *end = p + b.len; p < end && (p = memchr(p, '\n', end - p)); p++) n++;
    static const int WIDTH[NCOLS] = {8, 8, 1, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
    for (int k = 0; k < NCOLS; k++) {
        if (!(cols[k] = PyByteArray_FromStringAndSize(NULL, n * WIDTH[k]))) goto done;
        memset(o.col[k] = PyByteArray_AS_STRING(cols[k]), 0, n * WIDTH[k]);
    }
    if (!(c = PyMem_Calloc(1, sizeof *c))) {
        PyErr_NoMemory();
        goto done;
    }
    c->codes = codes, c->mdef = mdef, c->mdef_code = -1;
    if (scan_lines(b.buf, b.len, first, &o, c) < 0 || !(result = PyTuple_New(1 + NCOLS + NTABLE))) goto done;
    PyTuple_SET_ITEM(result, 0, PyLong_FromSsize_t(n));
    for (int k = 0; k < NCOLS; k++) PyTuple_SET_ITEM(result, 1 + k, cols[k]), cols[k] = NULL;  /* passed on */
    for (int k = 0; k < NTABLE; k++)
        PyTuple_SET_ITEM(result, 1 + NCOLS + k,
                         PyByteArray_FromStringAndSize(o.table[k] ? (char *)o.table[k] : "", o.ntable * 8));
    for (int k = 0; result && k < 1 + NCOLS + NTABLE; k++)
        if (!PyTuple_GET_ITEM(result, k)) Py_CLEAR(result);  /* out of memory */
done:
    for (int k = 0; k < NCOLS; k++) Py_XDECREF(cols[k]);
    for (int k = 0; k < NTABLE; k++) PyMem_Free(o.table[k]);
    PyMem_Free(c);
    PyBuffer_Release(&b);
    return result;
}

static PyMethodDef METHODS[] = {
    {"scan", scan, METH_VARARGS, "scan(buf, first, codes, mdef): a block's lines, the columns of its compact bulk lines"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {
    PyModuleDef_HEAD_INIT, .m_name = "_bulkscan", .m_doc = "The history reader's compact bulk lines.", .m_size = -1,
    .m_methods = METHODS,
};

PyMODINIT_FUNC PyInit__bulkscan(void)
{
    PyObject *m = PyModule_Create(&MODULE);
    if (m && PyModule_AddIntConstant(m, "VERSION", 2) < 0) Py_CLEAR(m);
    return m;
}
