/* Text work done for every page that is indexed, in C: sentence spans and passage chunks (what sentences.py's
split_sentences and chunk_spans return) and the spacing of a page's text (html_content.collapse_spaces).

Why C: the Python splitter runs a few regular expressions and a function call per full stop, and chunking a
manual spent most of its time there; collapsing spaces took five passes over each page's text. This module
walks the text once, character by character, with the rules of sentences.py written out as loops (each regular
expression there is named where its loop stands), and gives the same spans and text for every text: tests
compare both on random and real texts. Characters are classed as Python's
regular expressions and str methods class them: \s and str.split are Py_UNICODE_ISSPACE, \d is
Py_UNICODE_ISDECIMAL, str.islower of one character is Py_UNICODE_ISLOWER. The one step done through Python
objects is the abbreviation test (the word before a period, lowercased by str.lower, looked up in the set
sentences.py passes in), so the list of abbreviations lives in one place.

Optional like the search kernel: compiled when the package is installed (hatch_build.py), loaded by kernel.py
if it is there and built from this source; sentences.py and html_content.py use their own Python otherwise.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

#define TEXT_VERSION 1
#ifndef SOURCE_SHA256 /* set by the build (hatch_build.py): kernel.py ignores a module built from other source */
#define SOURCE_SHA256 ""
#endif

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
    PyObject *text;
    PyObject *abbreviations;
} Text;

typedef struct {
    Py_ssize_t *at;
    Py_ssize_t len, cap;
} Offsets;

static int push(Offsets *o, Py_ssize_t value) {
    if (o->len == o->cap) {
        Py_ssize_t cap = o->cap ? 2 * o->cap : 64;
        Py_ssize_t *at = PyMem_Realloc(o->at, (size_t)cap * sizeof *at);
        if (!at) {
            PyErr_NoMemory();
            return -1;
        }
        o->at = at;
        o->cap = cap;
    }
    o->at[o->len++] = value;
    return 0;
}

static inline Py_UCS4 ch(const Text *t, Py_ssize_t i) { return PyUnicode_READ(t->kind, t->data, i); }
static inline int is_space(Py_UCS4 c) { return Py_UNICODE_ISSPACE(c); }
static inline int is_latin_mark(Py_UCS4 c) { return c == '.' || c == '!' || c == '?' || c == 0x2026; }
static inline int is_cjk_mark(Py_UCS4 c) { return c == 0x3002 || c == 0xFF01 || c == 0xFF1F; }
static inline int is_closer(Py_UCS4 c) {
    return c == '"' || c == '\'' || c == 0x201D || c == 0x2019 || c == 0xBB || c == ')' || c == ']';
}

/* Where the sentence end that starts at the mark `at` ends, or -1 where there is none (_END_RE matched at `at`). A
   run of marks and the closing quotes after it end a sentence only when whitespace or the text's end follows; a
   run of CJK marks ends one before any non-space too. */
static Py_ssize_t end_at(const Text *t, Py_ssize_t at) {
    Py_UCS4 c = ch(t, at);
    int latin = is_latin_mark(c);
    if (latin && at > 0 && is_latin_mark(ch(t, at - 1))) return -1; /* only from the first mark of a run */
    Py_ssize_t run = at;
    while (run < t->n && (latin ? is_latin_mark(ch(t, run)) : is_cjk_mark(ch(t, run)))) run++;
    Py_ssize_t closed = run;
    while (closed < t->n && is_closer(ch(t, closed))) closed++;
    if (closed == t->n || is_space(ch(t, closed))) return closed;
    return latin ? -1 : run;
}

/* Whether only spaces or tabs stand between the previous line break (or the text's start) and `at`. */
static int starts_line(const Text *t, Py_ssize_t at) {
    while (at > 0 && (ch(t, at - 1) == ' ' || ch(t, at - 1) == '\t')) at--;
    return at == 0 || ch(t, at - 1) == '\n';
}

/* Whether a lowercased word is a section's or list item's number: "20", "20.3", "f.3" (_NUMBER_LABEL_RE). */
static int is_number_label(PyObject *word) {
    int kind = PyUnicode_KIND(word);
    const void *data = PyUnicode_DATA(word);
    Py_ssize_t n = PyUnicode_GET_LENGTH(word), i = 0;
    if (n == 0) return 0;
    Py_UCS4 c = PyUnicode_READ(kind, data, 0);
    if (Py_UNICODE_ISDECIMAL(c)) {
        while (i < n && Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, i))) i++;
    } else if (c >= 'a' && c <= 'z') {
        i = 1;
    } else {
        return 0;
    }
    while (i < n) {
        if (PyUnicode_READ(kind, data, i) != '.' || i + 1 >= n) return 0;
        if (!Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, i + 1))) return 0;
        i++;
        while (i < n && Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, i))) i++;
    }
    return 1;
}

/* text[from:end].lower() as a new str: an ASCII word lowercased here (most are), any other by str.lower. */
static PyObject *lowercase(const Text *t, Py_ssize_t from, Py_ssize_t end) {
    char ascii[64];
    Py_ssize_t n = end - from;
    int is_ascii = n <= (Py_ssize_t)sizeof ascii;
    for (Py_ssize_t i = 0; is_ascii && i < n; i++) {
        Py_UCS4 c = ch(t, from + i);
        is_ascii = c < 128;
        ascii[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    if (is_ascii) return PyUnicode_FromStringAndSize(ascii, n);
    PyObject *part = PyUnicode_Substring(t->text, from, end);
    if (!part) return NULL;
    PyObject *lower = PyObject_CallMethod(part, "lower", NULL);
    Py_DECREF(part);
    return lower;
}

/* Whether the period at `start` is an abbreviation's, an initial's or a leading number's (not a sentence's end):
   the word before it (_WORD_BEFORE_RE: the non-spaces that end at the period, or before a line break there), its
   opening quotes and brackets stripped, lowercased. -1 on a Python error. */
static int period_continues(const Text *t, Py_ssize_t start) {
    Py_ssize_t end = start;
    if (end > 0 && ch(t, end - 1) == '\n') end--;
    if (end == 0 || is_space(ch(t, end - 1))) return 0;
    Py_ssize_t word = end;
    while (word > 0 && !is_space(ch(t, word - 1))) word--;
    Py_ssize_t from = word;
    while (from < end) {
        Py_UCS4 c = ch(t, from);
        if (c != '(' && c != '"' && c != '\'' && c != 0x201C && c != 0x2018) break;
        from++;
    }
    PyObject *lower = lowercase(t, from, end);
    if (!lower) return -1;
    int found = PySet_Contains(t->abbreviations, lower);
    if (found == 0 && PyUnicode_GET_LENGTH(lower) == 1)
        found = Py_UNICODE_ISALPHA(PyUnicode_READ_CHAR(lower, 0)) ? 1 : 0;
    if (found == 0) found = is_number_label(lower) && starts_line(t, word);
    Py_DECREF(lower);
    return found;
}

/* Whether the end mark run from `start` to `end` ends a sentence (sentences.py's _is_sentence_end); -1 on error. */
static int ends_sentence(const Text *t, Py_ssize_t start, Py_ssize_t end) {
    Py_UCS4 c = ch(t, start);
    if (is_cjk_mark(c)) return 1;
    Py_ssize_t next = end;
    while (next < t->n && is_space(ch(t, next))) next++;
    if (next == t->n) return 1;
    if (Py_UNICODE_ISLOWER(ch(t, next))) return 0;
    if (c != '.') return 1;
    int continues = period_continues(t, start);
    return continues < 0 ? -1 : !continues;
}

/* The offsets after each forced break (_BREAK_RE): a blank line (and all the whitespace after it), or a line break
   before a list item ("- ", "1. ", "2) ") or a Markdown heading ("## "). */
static int breaks(const Text *t, Offsets *out) {
    for (Py_ssize_t p = 0; p < t->n; p++) {
        if (ch(t, p) != '\n') continue;
        Py_ssize_t q = p + 1;
        while (q < t->n && (ch(t, q) == ' ' || ch(t, q) == '\t')) q++;
        if (q < t->n && ch(t, q) == '\n') {
            Py_ssize_t r = q + 1;
            while (r < t->n && is_space(ch(t, r))) r++;
            if (push(out, r) < 0) return -1;
            p = r - 1;
            continue;
        }
        if (q >= t->n) continue;
        Py_UCS4 c = ch(t, q);
        Py_ssize_t r = q;
        if (c == '-' || c == '*' || c == '+' || c == 0x2022) {
            r = q + 1;
        } else if (Py_UNICODE_ISDECIMAL(c)) {
            while (r < t->n && Py_UNICODE_ISDECIMAL(ch(t, r))) r++;
            if (r < t->n && (ch(t, r) == '.' || ch(t, r) == ')')) r++;
            else continue;
        } else if (c == '#') {
            while (r < t->n && ch(t, r) == '#') r++;
            if (r - q > 6) continue;
        } else {
            continue;
        }
        if (r < t->n && is_space(ch(t, r)) && push(out, p + 1) < 0) return -1;
    }
    return 0;
}

/* The offsets where a sentence ends (after its marks and closing quotes), ascending. */
static int sentence_ends(const Text *t, Offsets *out) {
    Py_ssize_t after = 0;
    for (Py_ssize_t at = 0; at < t->n; at++) {
        Py_UCS4 c = ch(t, at);
        if (at < after || !(is_latin_mark(c) || is_cjk_mark(c))) continue;
        Py_ssize_t end = end_at(t, at);
        if (end < 0) continue;
        after = end;
        int ends = ends_sentence(t, at, end);
        if (ends < 0 || (ends && push(out, end) < 0)) return -1;
    }
    return 0;
}

/* The sentences of the text as (start, end) pairs, stripped and non-empty (split_sentences), into `out`. */
static int sentences(const Text *t, Offsets *out) {
    Offsets cut_at = {0}, end_of = {0};
    int rc = -1;
    if (breaks(t, &cut_at) < 0 || sentence_ends(t, &end_of) < 0) goto done;
    Py_ssize_t i = 0, j = 0, start = 0;
    for (;;) { /* both lists ascend: merge them, the text's end last (an offset in both gives an empty part) */
        Py_ssize_t cut;
        if (i < cut_at.len && (j >= end_of.len || cut_at.at[i] <= end_of.at[j])) cut = cut_at.at[i++];
        else if (j < end_of.len) cut = end_of.at[j++];
        else cut = t->n;
        Py_ssize_t a = start, b = cut;
        while (a < b && is_space(ch(t, a))) a++;
        while (b > a && is_space(ch(t, b - 1))) b--;
        if (a < b && (push(out, a) < 0 || push(out, b) < 0)) goto done;
        start = cut;
        if (cut == t->n && i >= cut_at.len && j >= end_of.len) break;
    }
    rc = 0;
done:
    PyMem_Free(cut_at.at);
    PyMem_Free(end_of.at);
    return rc;
}

static Py_ssize_t count_words(const Text *t, Py_ssize_t start, Py_ssize_t end, Py_ssize_t stop_after) {
    Py_ssize_t words = 0;
    int in_word = 0;
    for (Py_ssize_t i = start; i < end && words <= stop_after; i++) {
        int space = is_space(ch(t, i));
        if (!space && !in_word) words++;
        in_word = !space;
    }
    return words;
}

/* The bounded pieces of one sentence as (start, end, words) triples (sentences.py's _bounded_units). */
static int bounded_units(const Text *t, Py_ssize_t start, Py_ssize_t end, Py_ssize_t size, Py_ssize_t max_chars,
                         Offsets *out) {
    if (end - start <= max_chars) {
        Py_ssize_t count = count_words(t, start, end, size);
        if (count <= size) return (push(out, start) < 0 || push(out, end) < 0 || push(out, count) < 0) ? -1 : 0;
    }
    Py_ssize_t piece_start = -1, count = 0, prev_end = start, i = start;
    while (i < end) {
        while (i < end && is_space(ch(t, i))) i++;
        if (i >= end) break;
        Py_ssize_t ws = i, we = i;
        while (we < end && !is_space(ch(t, we))) we++;
        i = we;
        while (we - ws > max_chars) { /* one enormous "word": fixed-size runs */
            if (piece_start >= 0) {
                if (push(out, piece_start) < 0 || push(out, prev_end) < 0 || push(out, count) < 0) return -1;
                piece_start = -1;
                count = 0;
            }
            if (push(out, ws) < 0 || push(out, ws + max_chars) < 0 || push(out, 1) < 0) return -1;
            ws += max_chars;
        }
        if (piece_start >= 0 && (count + 1 > size || we - piece_start > max_chars)) {
            if (push(out, piece_start) < 0 || push(out, prev_end) < 0 || push(out, count) < 0) return -1;
            piece_start = -1;
            count = 0;
        }
        if (piece_start < 0) piece_start = ws;
        count++;
        prev_end = we;
    }
    if (piece_start >= 0 && (push(out, piece_start) < 0 || push(out, prev_end) < 0 || push(out, count) < 0)) return -1;
    return 0;
}

/* Passages of whole sentences (or bounded pieces of one) as (start, end) pairs (sentences.py's _chunk_units, which
   gives what its chunk_spans gives for any text). */
static int chunks(const Text *t, Py_ssize_t size, Py_ssize_t overlap, Py_ssize_t max_chars, Offsets *out) {
    Offsets spans = {0}, units = {0};
    int rc = -1;
    if (sentences(t, &spans) < 0) goto done;
    for (Py_ssize_t s = 0; s < spans.len; s += 2)
        if (bounded_units(t, spans.at[s], spans.at[s + 1], size, max_chars, &units) < 0) goto done;
    Py_ssize_t n = units.len / 3, i = 0;
    const Py_ssize_t *u = units.at; /* unit k: u[3k] start, u[3k+1] end, u[3k+2] words */
    while (i < n) {
        Py_ssize_t words = 0, j = i;
        while (j < n && (j == i || (words + u[3 * j + 2] <= size && u[3 * j + 1] - u[3 * i] <= max_chars))) {
            words += u[3 * j + 2];
            j++;
        }
        if (push(out, u[3 * i]) < 0 || push(out, u[3 * (j - 1) + 1]) < 0) goto done;
        if (j >= n) break;
        /* Step back over whole trailing units while they fit in the overlap, leaving room for unit j. */
        Py_ssize_t back = 0, k = j;
        while (k - 1 > i && back + u[3 * (k - 1) + 2] <= overlap) {
            int room = back + u[3 * (k - 1) + 2] + u[3 * j + 2] <= size && u[3 * j + 1] - u[3 * (k - 1)] <= max_chars;
            if (!room) break;
            back += u[3 * (k - 1) + 2];
            k--;
        }
        i = k;
    }
    rc = 0;
done:
    PyMem_Free(spans.at);
    PyMem_Free(units.at);
    return rc;
}

/* The pairs in `o` as a list of (start, end) tuples. */
static PyObject *pairs(const Offsets *o) {
    PyObject *list = PyList_New(o->len / 2);
    if (!list) return NULL;
    for (Py_ssize_t k = 0; k < o->len / 2; k++) {
        PyObject *pair = PyTuple_New(2), *start = PyLong_FromSsize_t(o->at[2 * k]);
        PyObject *end = PyLong_FromSsize_t(o->at[2 * k + 1]);
        if (!pair || !start || !end) {
            Py_XDECREF(pair);
            Py_XDECREF(start);
            Py_XDECREF(end);
            Py_DECREF(list);
            return NULL;
        }
        PyTuple_SET_ITEM(pair, 0, start);
        PyTuple_SET_ITEM(pair, 1, end);
        PyList_SET_ITEM(list, k, pair);
    }
    return list;
}

static int text_of(PyObject *text, PyObject *abbreviations, Text *t) {
    if (!PyUnicode_Check(text) || !PyAnySet_Check(abbreviations)) {
        PyErr_SetString(PyExc_TypeError, "expected a str and a set of abbreviations");
        return -1;
    }
    t->kind = PyUnicode_KIND(text);
    t->data = PyUnicode_DATA(text);
    t->n = PyUnicode_GET_LENGTH(text);
    t->text = text;
    t->abbreviations = abbreviations;
    return 0;
}

PyDoc_STRVAR(split_sentences_doc, "split_sentences(text, abbreviations) -> [(start, end)]: sentences.split_sentences.");

static PyObject *split_sentences(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *text, *abbreviations;
    Text t;
    if (!PyArg_ParseTuple(args, "OO", &text, &abbreviations) || text_of(text, abbreviations, &t) < 0) return NULL;
    Offsets spans = {0};
    PyObject *result = sentences(&t, &spans) < 0 ? NULL : pairs(&spans);
    PyMem_Free(spans.at);
    return result;
}

PyDoc_STRVAR(chunk_spans_doc,
             "chunk_spans(text, size, overlap, max_chars, abbreviations) -> [(start, end)]: sentences.chunk_spans.");

static PyObject *chunk_spans(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *text, *abbreviations;
    Py_ssize_t size, overlap, max_chars;
    Text t;
    if (!PyArg_ParseTuple(args, "OnnnO", &text, &size, &overlap, &max_chars, &abbreviations) ||
        text_of(text, abbreviations, &t) < 0)
        return NULL;
    if (size < 1 || overlap < 0 || overlap >= size || max_chars < 1) {
        PyErr_SetString(PyExc_ValueError, "need size >= 1, 0 <= overlap < size and max_chars >= 1");
        return NULL;
    }
    Offsets spans = {0};
    PyObject *result = chunks(&t, size, overlap, max_chars, &spans) < 0 ? NULL : pairs(&spans);
    PyMem_Free(spans.at);
    return result;
}

PyDoc_STRVAR(collapse_spaces_doc, "collapse_spaces(text) -> str: html_content.collapse_spaces.");

/* One pass of what collapse_spaces does in five: tabs, carriage returns, form feeds, vertical tabs and no-break
   spaces are spaces; a run of spaces is one; a space beside a line break goes; three or more line breaks in a row
   (spaces aside) are two; then the ends are stripped of whitespace (Py_UNICODE_ISSPACE, as str.strip). */
static PyObject *collapse_spaces(PyObject *Py_UNUSED(self), PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "expected a str");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), out = 0;
    Py_UCS4 *buf = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *buf);
    if (!buf) return PyErr_NoMemory();
    Py_ssize_t breaks = 0;
    int space = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == 0xA0) {
            space = 1;
        } else if (c == '\n') {
            breaks++;
            space = 0; /* a space before a break goes, and one after it (space is not set while breaks > 0) */
        } else {
            if (out > 0) { /* the whitespace before the first character is stripped */
                if (breaks) {
                    buf[out++] = '\n';
                    if (breaks > 1) buf[out++] = '\n';
                } else if (space) {
                    buf[out++] = ' ';
                }
            }
            breaks = 0;
            space = 0;
            buf[out++] = c;
        }
        if (breaks) space = 0;
    }
    Py_ssize_t start = 0, end = out; /* other whitespace (U+2003, U+2028 ...) at either end goes too */
    while (start < end && Py_UNICODE_ISSPACE(buf[start])) start++;
    while (end > start && Py_UNICODE_ISSPACE(buf[end - 1])) end--;
    PyObject *result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf + start, end - start);
    PyMem_Free(buf);
    return result;
}

static PyMethodDef methods[] = {
    {"collapse_spaces", collapse_spaces, METH_O, collapse_spaces_doc},
    {"split_sentences", split_sentences, METH_VARARGS, split_sentences_doc},
    {"chunk_spans", chunk_spans, METH_VARARGS, chunk_spans_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_text",
    .m_doc = "Sentence spans, passage chunks and collapsed spaces of a text, as sentences.py and html_content.py "
             "compute them.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__text(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddIntConstant(m, "VERSION", TEXT_VERSION) < 0 ||
              PyModule_AddStringConstant(m, "SOURCE_SHA256", SOURCE_SHA256) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
