/* The compiled part of BM25 search: the top k passages of a query, exactly as the numpy path ranks them.

Why C: a query of frequent words touches millions of postings, and numpy costs a few nanoseconds per posting
per operation where one loop costs about one; a query on a small corpus is a few hundred postings, where
numpy's per-call overhead (tens of microseconds) is the whole cost. This module needs nothing beyond CPython
(arrays come in through the buffer protocol), is compiled when the package is installed (hatch_build.py), and
is optional: kernel.py loads it if it is there, and search falls back to numpy if it is not.

What it computes is what postings.py's numpy path computes: a passage's score is the float64 sum of its
weights times the query-term counts, added in ascending term id, plus a constant (BM25+), rounded to float32;
the top k are ordered by that float32 score descending, then id ascending.

How, two ways, chosen per query by a cost estimate (`search`):
- Term at a time (`taat`): every posting's weight is added into a scratch array, then the touched passages go
  through a heap of k, one block of BLOCK_ROWS rows at a time so the block's scratch stays in cache (at 1M rows,
  a tenth faster than the whole array at once). Under 2 ns a posting; the way for queries whose terms are all
  frequent.
- Document at a time with MaxScore (Turtle and Flood 1995; `daat`): every query term has an upper bound, its
  largest weight times its count. Once k hits are kept, the k-th score is a threshold, and the terms whose
  bounds together stay below it cannot bring a passage into the top k on their own: passages are enumerated
  from the other ("essential") terms only, and the rest are looked up (galloping search in their sorted
  blocks) only while the passage can still reach the threshold. A frequent term also keeps its best-weighted
  passages apart (the impact list, postings.py) and a bound on all its others (its tail), so it is split in
  two: its best passages, walked on their own once the tail is too small to matter, and the rest, looked up.
  Before the walk, a threshold is seeded from the impact lists alone (`seed`), so pruning starts at once.
A term-at-a-time search with enough postings (`split`) runs on two threads (`taat_split`), one per half of the
rows: each adds the postings of its own rows, so every sum is added in the same order as on one thread. The second
is a helper thread kept between searches, which watches for work a moment after each one (see `helper`).
Passages are visited in ascending id, so a passage that only ties the k-th kept score never displaces it (the
kept one has the smaller id); a seeded threshold is lowered by a float32 step so that ties with it are kept.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KERNEL_VERSION 1
#ifndef SOURCE_SHA256 /* set by the build (hatch_build.py): kernel.py ignores a module built from other source */
#define SOURCE_SHA256 ""
#endif
#define MAX_TERMS 64
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 16384 /* rows of acc and mark (9 bytes each) one block of term-at-a-time scoring covers */
#endif
#define END INT64_MAX
#define SCAN_ROWS 16 /* rows a term-at-a-time scan passes over at once when none of them can be taken */

typedef struct {
    const int32_t *docs; /* the term's postings: passage ids ascending, and their weights */
    const float *w;
    int64_t n;
    const int32_t *idocs; /* its impact list (its best-weighted postings, ids ascending), or its postings */
    const float *iw;
    int64_t in;
    double mult;  /* how many times the query holds the term */
    double ub;    /* its largest weight times mult (at least 0) */
    double rest;  /* the bound of the postings outside the impact list (when it has one) */
    float tail;   /* the largest weight outside the impact list */
    int has_top;  /* whether it has an impact list */
} Term;

/* Each term's bounds (ub, rest): its largest weight, read from its impact list, times its count. Only document
   at a time needs them, so a term-at-a-time search never reads the lists twice. */
static void set_bounds(Term *t, int n) {
    for (int i = 0; i < n; i++) {
        float top = -INFINITY;
        for (int64_t j = 0; j < t[i].in; j++)
            if (t[i].iw[j] > top) top = t[i].iw[j];
        double m = t[i].mult;
        t[i].ub = t[i].in && (double)top * m > 0 ? (double)top * m : 0.0;
        double r = (double)t[i].tail * m;
        t[i].rest = r > 0 ? (r < t[i].ub ? r : t[i].ub) : 0.0;
    }
}

typedef struct {
    float score;
    int32_t id;
} Hit;

/* a ranks below b: lower score, or the same score and a larger id */
static inline int below(Hit a, Hit b) { return a.score < b.score || (a.score == b.score && a.id > b.id); }

static void sift_down(Hit *h, int64_t n, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && below(h[l], h[m])) m = l;
        if (r < n && below(h[r], h[m])) m = r;
        if (m == i) return;
        Hit t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void sift_up(Hit *h, int64_t i) {
    while (i > 0) {
        int64_t p = (i - 1) / 2;
        if (!below(h[i], h[p])) return;
        Hit t = h[i];
        h[i] = h[p];
        h[p] = t;
        i = p;
    }
}

/* Keeps h if it ranks among the best k; returns 1 when the k-th kept hit changed. */
static inline int offer(Hit *heap, int64_t *kept, int64_t k, Hit h) {
    if (*kept < k) {
        heap[*kept] = h;
        sift_up(heap, *kept);
        (*kept)++;
        return *kept == k;
    }
    if (!below(heap[0], h)) return 0;
    heap[0] = h;
    sift_down(heap, k, 0);
    return 1;
}

static int best_first(const void *pa, const void *pb) {
    Hit a = *(const Hit *)pa, b = *(const Hit *)pb;
    return below(b, a) ? -1 : (below(a, b) ? 1 : 0);
}

/* The first position at or after `pos` whose id is >= target. */
static inline int64_t gallop(const int32_t *a, int64_t pos, int64_t n, int64_t target) {
    if (pos >= n || a[pos] >= target) return pos;
    int64_t lo = pos, hi, step = 1;
    for (;;) {
        hi = lo + step;
        if (hi >= n) {
            hi = n;
            break;
        }
        if (a[hi] >= target) break;
        lo = hi;
        step <<= 1;
    }
    while (hi - lo > 1) { /* a[lo] < target <= a[hi] (or hi == n) */
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] >= target)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* A bound summed in another order than the exact score may round differently: a relative slack far above
   float64 rounding (64 terms at most) keeps every comparison on the safe side. */
static inline int may_reach(double bound, double thr) { return bound + fabs(bound) * 1e-9 + 1e-300 >= thr; }

static inline float round_down(double x) {
    float f = (float)x;
    return (double)f > x ? nextafterf(f, -INFINITY) : f;
}

/* The exact score of passage d (0 terms found: not a hit, returns 0). */
static int exact_score(const Term *t, int n, double cnst, int32_t d, float *out) {
    double sum = 0.0;
    int found = 0;
    for (int i = 0; i < n; i++) {
        int64_t p = gallop(t[i].docs, 0, t[i].n, d);
        if (p < t[i].n && t[i].docs[p] == d) {
            sum += (double)t[i].w[p] * t[i].mult;
            found = 1;
        }
    }
    *out = (float)(sum + cnst);
    return found;
}

/* ---- document at a time ---------------------------------------------------------------------------------- */

enum { WHOLE, REST, TOP }; /* a list: a term's postings, those outside its impact list, or its impact list */
enum { PROBE, WALK, WALK_TOP };

typedef struct {
    int term, kind;
    double ub;
} List;

typedef struct {
    int mode;
    int64_t pos;      /* in the term's postings (walked, or looked up) */
    int64_t top_pos;  /* in its impact list, when that is walked */
    int64_t seen;     /* the passage whose contribution from this term is known */
} State;

/* The lists of terms t[0..n-1], into l: a term with an impact list gives two (the rest of its postings, then that
   list), any other its whole postings; returns how many. */
static int split_lists(const Term *t, int n, List *l) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].has_top) {
            l[m++] = (List){i, REST, t[i].rest};
            l[m++] = (List){i, TOP, t[i].ub};
        } else {
            l[m++] = (List){i, WHOLE, t[i].ub};
        }
    }
    return m;
}

/* The mode of each term once lists first..m-1 are the essential ones; `cur` is the last passage visited. */
static void set_modes(const Term *t, State *st, const List *l, int m, int first, int64_t cur) {
    int walk[MAX_TERMS] = {0};
    for (int i = first; i < m; i++) walk[l[i].term] |= l[i].kind == TOP ? 1 : 2;
    for (int i = 0; i < m; i++) {
        if (l[i].kind == TOP || l[i].kind == WHOLE) {
            int j = l[i].term;
            int mode = (walk[j] & 2) ? WALK : (walk[j] & 1) ? WALK_TOP : PROBE;
            if (mode == WALK_TOP && st[j].mode != WALK_TOP)
                st[j].top_pos = gallop(t[j].idocs, st[j].top_pos, t[j].in, cur == END ? 0 : cur + 1);
            st[j].mode = mode;
        }
    }
}

/* Offers every passage that can reach the threshold to the heap; returns how many hits are kept.

   `exact`: scores are the float64 sums in ascending term id, plus cnst, rounded to float32, as the numpy path
   computes them. Otherwise (the seed pass, whose terms are impact lists) a passage's score is the sum of the
   weights found, rounded down: a lower bound of its exact score when no weight is negative.
   `thr0`: passages that cannot reach it are skipped from the start (it must lie below every passage of the
   true top k). After k hits, the k-th kept score is the threshold: passages come in ascending id, so a later
   one must score above it, not tie it. */
static int64_t daat(const Term *t, int n, int64_t k, double cnst, double thr0, int exact, Hit *heap) {
    List l[2 * MAX_TERMS];
    double cum[2 * MAX_TERMS];
    State st[MAX_TERMS];
    int m = split_lists(t, n, l);
    for (int i = 0; i < n; i++) st[i] = (State){PROBE, 0, 0, -1};
    for (int i = 1; i < m; i++) { /* ascending bound; a term's rest before its impact list */
        List x = l[i];
        int j = i - 1;
        while (j >= 0 && (l[j].ub > x.ub || (l[j].ub == x.ub && l[j].term == x.term && l[j].kind > x.kind))) {
            l[j + 1] = l[j];
            j--;
        }
        l[j + 1] = x;
    }
    double total = 0.0;
    for (int i = 0; i < m; i++) cum[i] = (total += l[i].ub);

    int64_t kept = 0;
    double thr = thr0;
    int first = 0; /* lists first..m-1 are essential: a passage in none of them cannot reach thr */
    while (first < m && !may_reach(cum[first] + cnst, thr)) first++;
    set_modes(t, st, l, m, first, END);
    double v[MAX_TERMS];
    int64_t cur = END;
    for (int i = 0; i < n; i++) {
        if (st[i].mode == WALK && t[i].n && t[i].docs[0] < cur) cur = t[i].docs[0];
        if (st[i].mode == WALK_TOP && st[i].top_pos < t[i].in && t[i].idocs[st[i].top_pos] < cur)
            cur = t[i].idocs[st[i].top_pos];
    }
    while (first < m && cur != END) {
        double s = 0.0;
        int64_t next = END;
        uint64_t found = 0; /* bit i: term i holds the passage (v[i] its contribution) */
        for (int i = 0; i < n; i++) {
            State *x = &st[i];
            if (x->mode == WALK) {
                if (x->pos < t[i].n && t[i].docs[x->pos] == cur) {
                    v[i] = (double)t[i].w[x->pos] * t[i].mult;
                    s += v[i];
                    found |= 1ull << i;
                    x->pos++;
                }
                x->seen = cur;
                if (x->pos < t[i].n && t[i].docs[x->pos] < next) next = t[i].docs[x->pos];
            } else if (x->mode == WALK_TOP) {
                if (x->top_pos < t[i].in && t[i].idocs[x->top_pos] == cur) {
                    v[i] = (double)t[i].iw[x->top_pos] * t[i].mult;
                    s += v[i];
                    found |= 1ull << i;
                    x->seen = cur;
                    x->top_pos++;
                }
                if (x->top_pos < t[i].in && t[i].idocs[x->top_pos] < next) next = t[i].idocs[x->top_pos];
            }
        }
        int alive = 1;
        for (int i = first - 1; i >= 0; i--) {
            int j = l[i].term;
            State *x = &st[j];
            if (x->seen == cur) continue; /* known already; its bound still counts in cum: safe */
            if (!may_reach(s + cum[i] + cnst, thr)) {
                alive = 0;
                break;
            }
            x->pos = gallop(t[j].docs, x->pos, t[j].n, cur);
            if (x->pos < t[j].n && t[j].docs[x->pos] == cur) {
                v[j] = (double)t[j].w[x->pos] * t[j].mult;
                s += v[j];
                found |= 1ull << j;
            }
            x->seen = cur;
        }
        if (alive && found) {
            Hit h;
            h.id = (int32_t)cur;
            if (exact) {
                double sum = 0.0; /* ascending term id: the order of the numpy path's sums */
                for (int i = 0; i < n; i++)
                    if (found & (1ull << i)) sum += v[i];
                h.score = (float)(sum + cnst);
            } else {
                h.score = round_down(s + cnst);
            }
            if (offer(heap, &kept, k, h)) {
                if ((double)heap[0].score > thr) thr = (double)heap[0].score;
                int was = first;
                while (first < m && !may_reach(cum[first] + cnst, thr)) first++;
                if (first != was) {
                    set_modes(t, st, l, m, first, cur);
                    next = END; /* the walked lists changed */
                    for (int i = 0; i < n; i++) {
                        if (st[i].mode == WALK) {
                            st[i].pos = gallop(t[i].docs, st[i].pos, t[i].n, cur + 1);
                            if (st[i].pos < t[i].n && t[i].docs[st[i].pos] < next) next = t[i].docs[st[i].pos];
                        } else if (st[i].mode == WALK_TOP) {
                            if (st[i].top_pos < t[i].in && t[i].idocs[st[i].top_pos] < next)
                                next = t[i].idocs[st[i].top_pos];
                        }
                    }
                }
            }
        }
        cur = next;
    }
    return kept;
}

/* A threshold below the k-th best exact score, from the impact lists: every passage listed there gets the sum
   of the weights listed for it (a lower bound of its score when no weight is negative), the best `want` of
   those are scored exactly, and the k-th best exact score, one float32 step down, is the threshold (so that a
   passage tying it is still visited). -inf when there are fewer than k. */
static double seed(const Term *t, int n, int64_t k, double cnst, Hit *heap, int64_t want) {
    Term s[MAX_TERMS];
    for (int i = 0; i < n; i++) {
        s[i] = t[i];
        s[i].docs = t[i].idocs;
        s[i].w = t[i].iw;
        s[i].n = t[i].in;
        s[i].has_top = 0;
    }
    int64_t got = daat(s, n, want, cnst, -INFINITY, 0, heap);
    if (got < k) return -INFINITY;
    int64_t kept = 0;
    Hit *best = heap + want; /* the exact scores, in a heap of k after the candidates */
    for (int64_t i = 0; i < got; i++) {
        Hit h = {0.0f, heap[i].id};
        if (exact_score(t, n, cnst, h.id, &h.score)) offer(best, &kept, k, h);
    }
    if (kept < k) return -INFINITY;
    return (double)nextafterf(best[0].score, -INFINITY);
}

/* ---- term at a time -------------------------------------------------------------------------------------- */

/* Whether row d was touched: its sum is not 0, or (weights of 0, or of opposite signs; rare, so no cursors) it is
   in one of the terms' postings. A row of a dense block keeps no mark. */
static inline int touched(const Term *t, int n, const double *acc, int64_t d) {
    float unused;
    return acc[d] != 0.0 || exact_score(t, n, 0.0, (int32_t)d, &unused);
}

/* Offers the touched rows lo <= d < hi that score above the k-th of a full heap of k (rows come in ascending
   id, so one that only ties it never displaces it). The score test comes first: it is rarely true, so its
   branch is predicted, where whether a row was touched (about as often as not) is not. */
static inline void take_above(const Term *t, int n, const double *acc, double cnst, int64_t lo, int64_t hi,
                              Hit *heap, int64_t k) {
    int64_t kept = k;
    for (int64_t d = lo; d < hi; d++) {
        float s = (float)(acc[d] + cnst);
        if (s > heap[0].score && touched(t, n, acc, d)) offer(heap, &kept, k, (Hit){s, (int32_t)d});
    }
}

/* The touched rows of a dense block (a quarter of its rows or more) into the heap; acc's rows are zeroed.
   `from`: each term's first posting in the block. Until k are kept every row is looked at, and one whose sum is
   0 is looked up in the postings from cursors that only move forward. */
static void take_dense(const Term *t, int n, int64_t k, double cnst, double *acc, const int64_t *from, int64_t lo,
                       int64_t hi, Hit *heap, int64_t *kept) {
    int64_t at[MAX_TERMS], d = lo;
    memcpy(at, from, sizeof(int64_t) * (size_t)n);
    for (; d < hi && *kept < k; d++) {
        int hit = acc[d] != 0.0;
        for (int i = 0; i < n && !hit; i++) {
            at[i] = gallop(t[i].docs, at[i], t[i].n, d);
            hit = at[i] < t[i].n && t[i].docs[at[i]] == d;
        }
        if (hit) offer(heap, kept, k, (Hit){(float)(acc[d] + cnst), (int32_t)d});
    }
    if (*kept == k) {
        for (; d + SCAN_ROWS <= hi; d += SCAN_ROWS) {
            /* Rounding is monotonic, so the group's largest sum says whether any of its rows can be taken:
               most groups are passed over on this one test. */
            double a = acc[d], b = acc[d + 1];
            for (int64_t e = d + 2; e < d + SCAN_ROWS; e += 2) {
                a = acc[e] > a ? acc[e] : a;
                b = acc[e + 1] > b ? acc[e + 1] : b;
            }
            if ((float)((a > b ? a : b) + cnst) > heap[0].score)
                take_above(t, n, acc, cnst, d, d + SCAN_ROWS, heap, k);
        }
        take_above(t, n, acc, cnst, d, hi, heap, k);
    }
    memset(acc + lo, 0, sizeof(double) * (size_t)(hi - lo));
}

/* The touched rows of a sparse block into the heap, found again through the postings; acc and mark are zeroed
   behind them. Passages come in term order here, so a tie with the k-th kept may still displace it (offer
   decides), and a row met again (its mark cleared) is not offered twice. */
static void take_sparse(const Term *t, int n, int64_t k, double cnst, double *acc, uint8_t *mark,
                        const int64_t *from, const int64_t *to, int64_t lo, int64_t hi, Hit *heap, int64_t *kept) {
    uint64_t span = (uint64_t)(hi - lo);
    for (int i = 0; i < n; i++) {
        for (int64_t j = from[i]; j < to[i]; j++) {
            int64_t d = t[i].docs[j];
            if ((uint64_t)(d - lo) >= span) continue;
            Hit h = {(float)(acc[d] + cnst), (int32_t)d};
            if ((*kept < k || h.score >= heap[0].score) && mark[d]) offer(heap, kept, k, h);
            acc[d] = 0.0;
            mark[d] = 0;
        }
    }
}

/* Every posting's weight added into acc (ascending term id: the numpy path's order), then the best k of the
   touched passages; only rows lo <= d < hi (each term's postings for them, `t`, and the rows scanned). acc and
   mark (one per row) come in zeroed and are left zeroed. The rows go BLOCK_ROWS at a time (every term's
   postings for a block, then the block's touched rows into the heap), so the block's part of acc stays in the
   core's cache while every term adds into it: a passage's terms still add up in ascending term id. A block
   whose postings touch few of its rows marks them, and finds them again through the postings; a dense one
   keeps no marks (a store per posting saved) and scans its rows. */
static int64_t taat_rows(const Term *t, int n, int64_t k, double cnst, double *acc, uint8_t *mark, int64_t lo,
                         int64_t hi, Hit *heap) {
    int64_t pos[MAX_TERMS] = {0}, next[MAX_TERMS];
    int64_t kept = 0;
    for (int64_t blo = lo; blo < hi; blo += BLOCK_ROWS) {
        int64_t bhi = hi - blo > BLOCK_ROWS ? blo + BLOCK_ROWS : hi;
        uint64_t span = (uint64_t)(bhi - blo);
        /* The last block takes every posting left, so an id past the rows (corrupt) is skipped, not a stop. */
        int64_t total = 0;
        for (int i = 0; i < n; i++) {
            next[i] = bhi == hi ? t[i].n : gallop(t[i].docs, pos[i], t[i].n, bhi);
            total += next[i] - pos[i];
        }
        int dense = total * 4 > bhi - blo;
        uint8_t *marks = dense ? NULL : mark;
        for (int i = 0; i < n; i++) {
            const int32_t *docs = t[i].docs;
            const float *w = t[i].w;
            double m = t[i].mult;
            for (int64_t j = pos[i]; j < next[i]; j++) {
                int64_t d = docs[j];
                if ((uint64_t)(d - blo) >= span) continue; /* a corrupt id: never write outside these rows */
                acc[d] += (double)w[j] * m;
                if (marks) marks[d] = 1;
            }
        }
        if (dense)
            take_dense(t, n, k, cnst, acc, pos, blo, bhi, heap, &kept);
        else
            take_sparse(t, n, k, cnst, acc, mark, pos, next, blo, bhi, heap, &kept);
        memcpy(pos, next, sizeof(int64_t) * (size_t)n);
    }
    return kept;
}

static int64_t taat(const Term *t, int n, int64_t k, double cnst, double *acc, uint8_t *mark, int64_t n_rows,
                    Hit *heap) {
    return taat_rows(t, n, k, cnst, acc, mark, 0, n_rows, heap);
}

typedef struct {
    const Term *t;
    int n;
    int64_t k;
    double cnst;
    double *acc;
    uint8_t *mark;
    int64_t lo, hi;
    Hit *heap;
    int64_t kept;
} Rows;

static void *rows_main(void *arg) {
    Rows *r = arg;
    r->kept = taat_rows(r->t, r->n, r->k, r->cnst, r->acc, r->mark, r->lo, r->hi, r->heap);
    return NULL;
}

/* The first position in sorted a[0..n) whose value is at least x. */
static int64_t lower_bound(const int32_t *a, int64_t n, int64_t x) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The helper: one thread kept for the second half of split searches, so that a search in a burst of them hands
   its rows over instead of starting a thread (about 0.1 ms here). Waking a sleeping thread costs about as much
   on this virtual machine (10 us when its core was busy 50 us before, 30-40 us after a millisecond, 90 us after
   ten), so after each search the helper watches for the next one for SPIN_NS before it sleeps, as a search
   watches for the helper's half: a handover between two watching cores takes 0.3 us.
   - A search that comes within BURST_NS of the last but finds the helper asleep runs without it and wakes it
     (`helper_nudge`, which starts it the first time), so that the searches after it find it watching.
   - A search that finds it asleep or taken by another runs on one thread, or starts a thread of its own when it
     has enough postings to pay for one (`pays_start`).
   - A forked child has no copy of the helper (only the forking thread survives a fork): it forgets it
     (`helper_forget`, at fork) and starts its own.
   Each side stores its flag and then reads the other's (sequentially consistent atomics), so a sleeper is
   always woken. */
#define SPIN_NS 200000 /* how long either side watches before it sleeps */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    Rows *_Atomic job;   /* the rows handed over, or NULL once they are done */
    atomic_int sleeping; /* how many of the two wait on cv */
    atomic_int taken;    /* a search is using the helper */
    atomic_int started;  /* the helper exists in this process */
    atomic_int forks;    /* a forked child forgets the helper (helper_forget): without that, none is used */
} helper = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One turn of a watching loop: on x86 a pause, which leaves a core's other hardware thread (if it has one) its
   share and spares power. */
static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Waits until helper.job is set (busy) or clear (!busy): watching for SPIN_NS, then asleep on cv, then
   watching again after any wake-up (a nudge wakes the helper with no job). */
static void helper_await(int busy) {
    for (;;) {
        int64_t since = now_ns();
        for (int i = 1; (atomic_load(&helper.job) != NULL) != busy; i++) {
            relax();
            if (i % 256 == 0 && now_ns() - since > SPIN_NS) break;
        }
        if ((atomic_load(&helper.job) != NULL) == busy) return;
        pthread_mutex_lock(&helper.mu);
        atomic_fetch_add(&helper.sleeping, 1);
        if ((atomic_load(&helper.job) != NULL) != busy) pthread_cond_wait(&helper.cv, &helper.mu);
        atomic_fetch_sub(&helper.sleeping, 1);
        pthread_mutex_unlock(&helper.mu);
    }
}

/* Wakes whoever sleeps on cv. */
static void helper_wake(void) {
    if (atomic_load(&helper.sleeping)) {
        pthread_mutex_lock(&helper.mu);
        pthread_cond_broadcast(&helper.cv);
        pthread_mutex_unlock(&helper.mu);
    }
}

/* Sets helper.job (rows handed over, or NULL: done) and wakes the other side if it sleeps. */
static void helper_post(Rows *job) {
    atomic_store(&helper.job, job);
    helper_wake();
}

static void *helper_main(void *arg) {
    (void)arg;
    for (;;) {
        helper_await(1);
        rows_main(atomic_load(&helper.job));
        helper_post(NULL);
    }
    return NULL;
}

/* Takes the helper for one search, starting it the first time; 0 when another search has it or it cannot
   start. */
static int helper_take(void) {
    int free = 0;
    if (!atomic_load(&helper.forks) || !atomic_compare_exchange_strong(&helper.taken, &free, 1)) return 0;
    if (!atomic_load(&helper.started)) {
        pthread_t thread;
        pthread_attr_t attr;
        int ok = pthread_attr_init(&attr) == 0;
        if (ok) {
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            ok = pthread_create(&thread, &attr, helper_main, NULL) == 0;
            pthread_attr_destroy(&attr);
        }
        if (!ok) {
            atomic_store(&helper.taken, 0);
            return 0;
        }
        atomic_store(&helper.started, 1);
    }
    return 1;
}

/* Whether the helper is free and watching now: handing it rows costs a microsecond, not a wake-up. */
static int helper_watching(void) {
    return atomic_load(&helper.started) && !atomic_load(&helper.taken) && !atomic_load(&helper.sleeping);
}

/* Wakes the helper with no job (starting it the first time), so that it watches for the next search. */
static void helper_nudge(void) {
    if (helper_take()) {
        helper_wake();
        atomic_store(&helper.taken, 0);
    }
}

/* In a forked child: no helper thread, and its lock as if new (the fork may have caught it held). */
static void helper_forget(void) {
    pthread_mutex_init(&helper.mu, NULL);
    pthread_cond_init(&helper.cv, NULL);
    atomic_store(&helper.job, NULL);
    atomic_store(&helper.sleeping, 0);
    atomic_store(&helper.taken, 0);
    atomic_store(&helper.started, 0);
}

/* taat on two threads: each adds the postings of its half of the rows (every list is sorted by passage id, so
   a binary search splits it) into its own rows of acc, in the same term order, so every sum is the one a single
   thread makes; the two heaps of k then merge into one (heap must hold 2k hits). The second half goes to the
   helper if `handover` and it is free, else to a thread of its own if `may_start`, else one thread does both. */
static int64_t taat_split(const Term *t, int n, int64_t k, double cnst, double *acc, uint8_t *mark, int64_t n_rows,
                          Hit *heap, int handover, int may_start) {
    Term half[2][MAX_TERMS];
    int64_t mid = n_rows / 2;
    for (int i = 0; i < n; i++) {
        int64_t cut = lower_bound(t[i].docs, t[i].n, mid);
        half[0][i] = t[i];
        half[0][i].n = cut;
        half[1][i] = t[i];
        half[1][i].docs += cut;
        half[1][i].w += cut;
        half[1][i].n -= cut;
    }
    Rows r[2] = {{half[0], n, k, cnst, acc, mark, 0, mid, heap, 0},
                 {half[1], n, k, cnst, acc, mark, mid, n_rows, heap + k, 0}};
    pthread_t other;
    if (handover && helper_take()) {
        helper_post(&r[1]);
        rows_main(&r[0]);
        helper_await(0);
        atomic_store(&helper.taken, 0);
    } else if (may_start && pthread_create(&other, NULL, rows_main, &r[1]) == 0) {
        rows_main(&r[0]);
        pthread_join(other, NULL);
    } else {
        return taat(t, n, k, cnst, acc, mark, n_rows, heap);
    }
    int64_t kept = r[0].kept;
    for (int64_t i = 0; i < r[1].kept; i++) offer(heap, &kept, k, heap[k + i]);
    return kept;
}

/* When two threads pay, measured on 2 cores (AMD EPYC under a hypervisor), the time of a search split in two
   against one thread's:
   - Handed to a watching helper, from a few thousand postings: 0.7x at 100k rows, 0.8x at 10k.
   - Starting a thread (or waking the helper from its sleep) costs about 0.1 ms, and on rows that fit the caches
     the two threads then add no faster than one (100k rows: 1.2-1.5x slower up to 500k postings). Beyond the
     caches each thread's half stays closer to its core: at 1M rows two threads pay from about 50k postings
     (0.87x the time of one at 50k-100k, 0.64-0.77x beyond).
   A search after a pause (a person's question, an agent's step) finds the helper asleep. Waking it there, to
   watch for searches that may never come, cost such searches about 2% (100k rows, 20 ms apart) and spends
   SPIN_NS of the other core, where llama.cpp may be about to run. So only a search that follows another within
   BURST_NS wakes it. */
#define SPLIT_WATCHED 4096  /* postings, with the helper watching */
#define SPLIT_FROM 65536    /* postings, on rows beyond SPLIT_ROWS, starting a thread */
#define SPLIT_ROWS 262144   /* rows */
#define SPLIT_ALWAYS 524288 /* postings: enough work to pay for starting a thread on rows of any number */
#define BURST_NS 1000000    /* a search that ends within this of the next is one of a burst */

/* Whether a term-at-a-time search of `total` postings over `n_rows` rows pays for starting a thread. */
static inline int pays_start(int64_t total, int64_t n_rows) {
    return n_rows >= 2 && (total >= SPLIT_ALWAYS || (total >= SPLIT_FROM && n_rows >= SPLIT_ROWS));
}

/* Whether a term-at-a-time search of `total` postings over `n_rows` rows pays for a handover to a watching helper. */
static inline int pays_handover(int64_t total, int64_t n_rows) { return n_rows >= 2 && total >= SPLIT_WATCHED; }

enum { ONE_THREAD, HANDOVER, START }; /* how a term-at-a-time search runs (`split`) */

/* How a term-at-a-time search of `total` postings over `n_rows` rows runs now: handed over in part to a watching
   helper, on a thread of its own as well, or on one. */
static int split(int64_t total, int64_t n_rows) {
    if (pays_handover(total, n_rows) && helper_watching()) return HANDOVER;
    return pays_start(total, n_rows) ? START : ONE_THREAD;
}

/* Term at a time as `split` says. One that the helper would have sped up, in a burst of searches, wakes it to
   watch for the next one. */
static int64_t taat_any(const Term *t, int n, int64_t k, double cnst, double *acc, uint8_t *mark, int64_t n_rows,
                        Hit *heap, int64_t total, int threads) {
    static _Atomic int64_t last_end = 0; /* when the last search that could use the helper ended */
    int watched = pays_handover(total, n_rows); /* only such a search reads the clock */
    int64_t kept, start = watched ? now_ns() : 0;
    if (threads == ONE_THREAD)
        kept = taat(t, n, k, cnst, acc, mark, n_rows, heap);
    else
        kept = taat_split(t, n, k, cnst, acc, mark, n_rows, heap, threads == HANDOVER, pays_start(total, n_rows));
    if (watched) {
        if (threads != HANDOVER && start - atomic_load(&last_end) < BURST_NS) helper_nudge();
        atomic_store(&last_end, now_ns());
    }
    return kept;
}

/* ---- choosing ------------------------------------------------------------------------------------------- */

enum { AUTO, DAAT, SEEDED_DAAT, TAAT, TAAT_SPLIT }; /* how to search: tests force each one */

/* Costs per posting, relative, as measured on 2 cores (AMD EPYC, AVX2; synthetic Zipf text at 10k, 100k and 1M
   passages, every way timed on the same queries): TAAT adds each posting and then passes over the rows, 1.4-1.8 ns
   a posting (2.4-3.6 ns before its row scan was made branch-predictable and dense blocks stopped marking rows);
   DAAT steps every walked list at each passage it visits, 3.7-6.3 ns per posting and walked list; a
   scratch array beyond the caches makes TAAT's writes misses, about 1.3x (3x was a guess, and chose DAAT for
   8-term queries of frequent words at 1M, 2.4x slower than TAAT). The seed costs more than its lists' length
   suggests: on 8-term queries of frequent words, at 100k rows, seeding and then choosing TAAT anyway took 1.8 ms
   where TAAT alone took 0.8; hence SEED_COST per impact posting and term squared, and more beyond the caches
   (fitted on the same queries, 1-, 3- and 8-term, at 100k and 1M). */
#define TAAT_COST 0.4      /* one unit is about 4 ns */
#define DAAT_COST 1.25     /* per walked posting and walked list */
#define UNCACHED 1.3       /* TAAT's cost beyond CACHED_ROWS */
#define CACHED_ROWS 131072 /* rows whose scratch (9 bytes each) stays in a core's cache */
#define SEED_FROM 20000    /* postings; below, seeding costs more than it saves */
#define SEED_COST 0.75     /* the seed, per impact-list posting and query term squared */
#define SEED_UNCACHED 3.5  /* the seed's cost beyond CACHED_ROWS (its lookups miss the caches) */
#define SPLIT_GAIN 1.6     /* term at a time on two threads (taat_split) against one */

static int64_t search(Term *t, int n, int64_t k, double cnst, int nonneg, int how, double *acc, uint8_t *mark,
                      int64_t n_rows, Hit *heap, int64_t want) {
    int64_t total = 0, listed = 0;
    int tops = 0;
    for (int i = 0; i < n; i++) {
        total += t[i].n;
        listed += t[i].in;
        tops += t[i].has_top;
    }
    if (how == TAAT && acc) return taat(t, n, k, cnst, acc, mark, n_rows, heap);
    if (how == TAAT_SPLIT && acc) return taat_split(t, n, k, cnst, acc, mark, n_rows, heap, 1, 1);
    double taat_cost = acc ? (double)total * TAAT_COST * (n_rows > CACHED_ROWS ? UNCACHED : 1.0) : INFINITY;
    int threads = acc ? split(total, n_rows) : ONE_THREAD;
    if (threads != ONE_THREAD) taat_cost /= SPLIT_GAIN;
    /* Document at a time reads every impact list at least once (for the bounds, and the seed walks them): on a
       small corpus, where those lists hold most postings, that alone costs more than adding them all up. */
    if (how == AUTO && taat_cost < (double)listed * DAAT_COST * n)
        return taat_any(t, n, k, cnst, acc, mark, n_rows, heap, total, threads);
    set_bounds(t, n);
    if (how == DAAT || !nonneg) return daat(t, n, k, cnst, -INFINITY, 1, heap);
    if (how == SEEDED_DAAT) return daat(t, n, k, cnst, seed(t, n, k, cnst, heap, want), 1, heap);
    /* AUTO */
    if (total < SEED_FROM || !tops) {
        double daat_cost = (double)total * DAAT_COST * n;
        if (taat_cost < daat_cost) return taat_any(t, n, k, cnst, acc, mark, n_rows, heap, total, threads);
        return daat(t, n, k, cnst, -INFINITY, 1, heap);
    }
    /* The seed walks the impact lists document at a time, every list at each passage, and scores its candidates
       by lookups in the whole lists: when that alone costs more than adding up every posting, seeding cannot
       pay (and the walk after it is dearer still). */
    double seed_cost = (double)listed * n * n * SEED_COST * (n_rows > CACHED_ROWS ? SEED_UNCACHED : 1.0);
    if (taat_cost < seed_cost) return taat_any(t, n, k, cnst, acc, mark, n_rows, heap, total, threads);
    double thr0 = seed(t, n, k, cnst, heap, want);
    /* What the walk would cover with that threshold: the lists whose bounds reach it, as daat splits them. */
    List l[2 * MAX_TERMS];
    int m = split_lists(t, n, l);
    for (int i = 1; i < m; i++) {
        List x = l[i];
        int j = i - 1;
        while (j >= 0 && l[j].ub > x.ub) {
            l[j + 1] = l[j];
            j--;
        }
        l[j + 1] = x;
    }
    double c = 0.0, walked = 0.0;
    int lists = 0;
    for (int i = 0; i < m; i++) {
        c += l[i].ub;
        if (!may_reach(c + cnst, thr0)) continue;
        const Term *x = &t[l[i].term];
        walked += l[i].kind == TOP ? (double)x->in : l[i].kind == REST ? (double)(x->n - x->in) : (double)x->n;
        lists++;
    }
    double daat_cost = (walked + (double)listed) * DAAT_COST * (lists ? lists : 1);
    if (taat_cost < daat_cost) return taat_any(t, n, k, cnst, acc, mark, n_rows, heap, total, threads);
    return daat(t, n, k, cnst, thr0, 1, heap);
}

static int get_buffer(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t itemsize, const char *name) {
    if (PyObject_GetBuffer(obj, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) return -1;
    if (view->len % itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of items", name, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(top_k_doc,
             "top_k(docs, weights, offsets, impact_offsets, impact_docs, impact_weights, term_tail, terms, mults, k, "
             "const, nonneg, how, acc, mark, out_ids, out_scores) -> n\n\n"
             "The best k passages for the query terms `terms` (unique ascending term ids, term i asked mults[i] "
             "times): writes their ids and float32 scores to out_ids (int64) and out_scores (float32), by score "
             "descending then id ascending, and returns how many there are. docs (int32), weights (float32) and "
             "offsets (int64) are the term-major postings; impact_offsets (int64), impact_docs (int32) and "
             "impact_weights (float32) the best-weighted postings of the frequent terms, term_tail (float32) the "
             "largest weight of each term outside its impact list. `nonneg` promises that no "
             "weight of these terms is negative (what pruning from the impact lists needs); `how` is 0 (choose), or "
             "forces 1 (document at a time), 2 (the same after a threshold from the impact lists), 3 (term at a "
             "time) or 4 (term at a time on two threads). acc (float64) and mark "
             "(uint8), one per passage row and all zero, are scratch for term-at-a-time scoring (or None); they "
             "are left zeroed.");

static PyObject *top_k(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a_docs, *a_w, *a_off, *a_ioff, *a_idocs, *a_iw, *a_tail, *terms, *mults, *a_acc, *a_mark, *a_ids,
        *a_scores;
    Py_ssize_t k;
    double cnst;
    int nonneg, how;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOndpiOOOO", &a_docs, &a_w, &a_off, &a_ioff, &a_idocs, &a_iw, &a_tail, &terms,
                          &mults, &k, &cnst, &nonneg, &how, &a_acc, &a_mark, &a_ids, &a_scores))
        return NULL;
    if (!PyList_Check(terms) || !PyList_Check(mults) || PyList_GET_SIZE(terms) != PyList_GET_SIZE(mults)) {
        PyErr_SetString(PyExc_TypeError, "terms and mults must be lists of the same length");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(terms);
    if (n > MAX_TERMS) {
        PyErr_Format(PyExc_ValueError, "at most %d terms", MAX_TERMS);
        return NULL;
    }
    int scratch = a_acc != Py_None;
    Py_buffer b[11];
    int got = 0;
    PyObject *result = NULL;
    Hit *heap = NULL;
    static const char *names[11] = {"docs",    "weights", "offsets",    "impact_offsets", "impact_docs", "impact_weights",
                                    "term_tail", "out_ids", "out_scores", "acc",            "mark"};
    PyObject *objs[11] = {a_docs, a_w, a_off, a_ioff, a_idocs, a_iw, a_tail, a_ids, a_scores, a_acc, a_mark};
    static const Py_ssize_t sizes[11] = {4, 4, 8, 8, 4, 4, 4, 8, 4, 8, 1};
    int n_buffers = scratch ? 11 : 9;
    for (; got < n_buffers; got++)
        if (get_buffer(objs[got], &b[got], got >= 7, sizes[got], names[got]) < 0) goto done;

    const int32_t *docs = b[0].buf, *idocs = b[4].buf;
    const float *w = b[1].buf, *iw = b[5].buf, *tail = b[6].buf;
    const int64_t *off = b[2].buf, *ioff = b[3].buf;
    int64_t n_post = b[0].len / 4, n_off = b[2].len / 8, n_ioff = b[3].len / 8;
    int64_t n_imp = b[4].len / 4, n_tail = b[6].len / 4;
    if (b[1].len / 4 < n_post) n_post = b[1].len / 4;
    if (b[5].len / 4 < n_imp) n_imp = b[5].len / 4;
    if (k > b[7].len / 8) k = b[7].len / 8;
    if (k > b[8].len / 4) k = b[8].len / 4;
    int64_t n_rows = 0;
    if (scratch) {
        n_rows = b[9].len / 8;
        if (b[10].len != n_rows) {
            PyErr_SetString(PyExc_ValueError, "acc and mark must have one entry per row");
            goto done;
        }
    }
    Term t[MAX_TERMS];
    for (Py_ssize_t i = 0; i < n; i++) {
        long long id = PyLong_AsLongLong(PyList_GET_ITEM(terms, i));
        long long m = PyLong_AsLongLong(PyList_GET_ITEM(mults, i));
        if (PyErr_Occurred()) goto done;
        if (id < 0 || id + 1 >= n_off || id + 1 >= n_ioff || id >= n_tail) {
            PyErr_Format(PyExc_ValueError, "term id %lld out of range", id);
            goto done;
        }
        int64_t lo = off[id], hi = off[id + 1], ilo = ioff[id], ihi = ioff[id + 1];
        if (lo < 0 || hi < lo || hi > n_post || ilo < 0 || ihi < ilo || ihi > n_imp) {
            PyErr_Format(PyExc_ValueError, "postings of term %lld out of range", id);
            goto done;
        }
        t[i].docs = docs + lo;
        t[i].w = w + lo;
        t[i].n = hi - lo;
        t[i].has_top = ihi > ilo;
        t[i].idocs = t[i].has_top ? idocs + ilo : t[i].docs;
        t[i].iw = t[i].has_top ? iw + ilo : t[i].w;
        t[i].in = t[i].has_top ? ihi - ilo : t[i].n;
        t[i].mult = (double)m;
        t[i].tail = tail[id];
    }
    int64_t kept = 0;
    if (k > 0 && n > 0) {
        int64_t want = 2 * k + 16; /* candidates the seed scores exactly */
        heap = PyMem_RawMalloc(sizeof(Hit) * (size_t)(want + k));
        if (!heap) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS;
        kept = search(t, (int)n, k, cnst, nonneg, how, scratch ? b[9].buf : NULL, scratch ? b[10].buf : NULL,
                      n_rows, heap, want);
        qsort(heap, (size_t)kept, sizeof(Hit), best_first);
        Py_END_ALLOW_THREADS;
    }
    int64_t *out_ids = b[7].buf;
    float *out_scores = b[8].buf;
    for (int64_t i = 0; i < kept; i++) {
        out_ids[i] = heap[i].id;
        out_scores[i] = heap[i].score;
    }
    result = PyLong_FromLongLong(kept);
done:
    PyMem_RawFree(heap);
    for (int i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    return result;
}

static PyMethodDef methods[] = {{"top_k", top_k, METH_VARARGS, top_k_doc}, {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "_kernel",
    .m_doc = "BM25 top-k search: document at a time with MaxScore pruning, or term at a time.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__kernel(void) {
    if (!atomic_load(&helper.forks)) atomic_store(&helper.forks, pthread_atfork(NULL, NULL, helper_forget) == 0);
    PyObject *m = PyModule_Create(&module);
    if (m && (PyModule_AddIntConstant(m, "VERSION", KERNEL_VERSION) < 0 ||
              PyModule_AddIntConstant(m, "MAX_TERMS", MAX_TERMS) < 0 ||
              PyModule_AddStringConstant(m, "SOURCE_SHA256", SOURCE_SHA256) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
