/* A line-oriented front end to the library, for the tests that compare it with the Python codec
 * (tests/test_clib.py). One command per line on stdin, one answer line per command on stdout:
 *
 *   decode HEX                          decoded frame -> "NAME version seq time_us f1 f2 ..." | "error"
 *   encode TYPE VERSION SEQ TIME f1...  -> the wire bytes in hex | "error"
 *   stream host|device HEX              -> "KIND[:NAK cmd_seq cmd_type error detail][:HEX frame] ..." then
 *                                          "| pending N"
 *   rng SEED K                          -> K outputs of the reference generator
 *   uniform SEED N K                    -> K draws U(N) from a fresh SEED
 *   burst LO M HI                       -> "TOTAL w(lo) ... w(hi)" counted over every draw
 *   chance BASE STEP STREAK             -> the fire chance
 *   line W D                            -> how many of the 2W draws put a card on B's side
 *   countdown SEED LO HI K / pick SEED N K / burstdraw SEED LO M HI K / lands SEED D W K / fires SEED C K
 *                                       -> K successive draws of the algorithm from a fresh SEED
 * Numbers are decimal (hex with 0x). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uhil_fields.h"
#include "../uhil_algorithms.h"
#include "../uhil_catalogue.h"
#include "../uhil_framing.h"
#include "../uhil_messages.h"
#include "../uhil_rng.h"
#include "../uhil_rx.h"

#define MAX_WORDS 80
#define MAX_BYTES 4096

static size_t unhex(const char *s, uint8_t *out, size_t max)
{
    size_t n = 0;
    while (s[0] && s[1] && n < max) {
        char pair[3] = {s[0], s[1], 0};
        out[n++] = (uint8_t)strtoul(pair, NULL, 16);
        s += 2;
    }
    return n;
}

static void puthex(const uint8_t *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        printf("%02x", p[i]);
}

/* a decimal or 0x number, negative ones as their two's complement bits */
static uint64_t num(const char *s)
{
    return s[0] == '-' ? (uint64_t)strtoll(s, NULL, 0) : (uint64_t)strtoull(s, NULL, 0);
}

static void cmd_decode(char **w, int n)
{
    static uint8_t raw[MAX_BYTES];
    struct uhil_msg m;
    uint64_t f[64];
    uint8_t is_signed[64];
    int k, i;
    size_t len = n > 1 ? unhex(w[1], raw, sizeof raw) : 0;
    if (uhil_msg_decode(raw, len, &m) != 0 || (k = uhil_fields_get(&m, f, is_signed, 64)) < 0) {
        puts("error");
        return;
    }
    printf("%s %u %u %" PRIu32, uhil_message_name(m.type), m.version, m.seq, m.time_us);
    for (i = 0; i < k; i++) {
        if (is_signed[i])
            printf(" %" PRId64, (int64_t)f[i]);
        else
            printf(" %" PRIu64, f[i]);
    }
    putchar('\n');
}

static void cmd_encode(char **w, int n)
{
    struct uhil_msg m;
    uint64_t f[64];
    uint8_t wire[UHIL_MAX_ENCODED];
    size_t len;
    int i;
    if (n < 5 || n - 5 > 64) {
        puts("error");
        return;
    }
    memset(&m, 0, sizeof m);
    m.type = (uint8_t)num(w[1]);
    m.version = (uint8_t)num(w[2]);
    m.seq = (uint16_t)num(w[3]);
    m.time_us = (uint32_t)num(w[4]);
    for (i = 5; i < n; i++)
        f[i - 5] = num(w[i]);
    if (uhil_fields_set(&m, f, (size_t)(n - 5)) != 0 || (len = uhil_msg_encode(&m, wire)) == 0) {
        puts("error");
        return;
    }
    puthex(wire, len);
    putchar('\n');
}

static void cmd_stream(char **w, int n)
{
    static uint8_t bytes[MAX_BYTES];
    const int16_t *table = n > 1 && strcmp(w[1], "device") == 0 ? uhil_device_payload_size : uhil_host_payload_size;
    size_t len = n > 2 ? unhex(w[2], bytes, sizeof bytes) : 0, i;
    struct uhil_rx rx;
    uint16_t nak[4];
    uhil_rx_init(&rx);
    for (i = 0; i < len; i++) {
        int r = uhil_rx_byte(&rx, bytes[i], table);
        if (r == UHIL_RX_NONE)
            continue;
        printf("%s", uhil_rx_kind(r));
        if (uhil_rx_nak(&rx, r, nak))
            printf(":NAK %u %u %u %u", nak[0], nak[1], nak[2], nak[3]);
        if (r == UHIL_RX_FRAME) {
            putchar(':');
            puthex(rx.buf, rx.frame_len);
        }
        putchar(' ');
    }
    printf("| pending %u\n", rx.len);
}

static void draws(char **w, int n)
{
    uhil_rng g;
    int64_t k, i;
    const char *what = w[0];
    static const char *const known[] = {"rng", "uniform", "countdown", "pick", "burstdraw", "lands", "fires"};
    int found = 0;
    for (i = 0; i < 7; i++)
        found |= strcmp(what, known[i]) == 0;
    if (n < 3 || !found) {
        puts("error");
        return;
    }
    uhil_rng_seed(&g, (uint32_t)num(w[1]));
    k = num(w[n - 1]);
    for (i = 0; i < k; i++) {
        uint32_t v;
        if (strcmp(what, "rng") == 0)
            v = uhil_rng32(&g);
        else if (strcmp(what, "uniform") == 0)
            v = uhil_uniform(&g, (uint32_t)num(w[2]));
        else if (strcmp(what, "countdown") == 0)
            v = uhil_countdown_us(&g, (uint32_t)num(w[2]), (uint32_t)num(w[3]));
        else if (strcmp(what, "pick") == 0)
            v = uhil_pick(&g, (uint32_t)num(w[2]));
        else if (strcmp(what, "burstdraw") == 0)
            v = uhil_burst_draw(&g, (uint32_t)num(w[2]), (uint32_t)num(w[3]), (uint32_t)num(w[4]));
        else if (strcmp(what, "lands") == 0)
            v = (uint32_t)uhil_lands_on_b(&g, (int32_t)(int64_t)num(w[2]), (uint32_t)num(w[3]));
        else
            v = (uint32_t)uhil_fires(&g, (uint32_t)num(w[2]));
        printf(i ? " %" PRIu32 : "%" PRIu32, v);
    }
    putchar('\n');
}

static void tables(char **w, int n)
{
    if (strcmp(w[0], "burst") == 0 && n == 4) {
        uint32_t lo = (uint32_t)num(w[1]), m = (uint32_t)num(w[2]), hi = (uint32_t)num(w[3]);
        uint32_t t = uhil_burst_total(lo, m, hi), counts[41] = {0}, r, k;
        for (r = 0; r < t; r++)
            counts[uhil_burst_from_draw(lo, m, hi, r)]++;
        printf("%" PRIu32, t);
        for (k = lo; k <= hi; k++)
            printf(" %" PRIu32, counts[k]);
        putchar('\n');
    } else if (strcmp(w[0], "chance") == 0 && n == 4) {
        printf("%" PRIu32 "\n", uhil_fire_chance((uint32_t)num(w[1]), (uint32_t)num(w[2]), (uint32_t)num(w[3])));
    } else if (strcmp(w[0], "line") == 0 && n == 3) {
        uint32_t win = (uint32_t)num(w[1]), r, on_b = 0;
        for (r = 0; r < 2 * win; r++)
            on_b += (uint32_t)uhil_lands_on_b_from_draw(r, (int32_t)(int64_t)num(w[2]), win);
        printf("%" PRIu32 "\n", on_b);
    } else {
        puts("error");
    }
}

int main(void)
{
    static char line[3 * MAX_BYTES];
    while (fgets(line, sizeof line, stdin)) {
        char *w[MAX_WORDS];
        int n = 0;
        char *tok = strtok(line, " \t\r\n");
        while (tok && n < MAX_WORDS) {
            w[n++] = tok;
            tok = strtok(NULL, " \t\r\n");
        }
        if (n == 0)
            continue;
        if (strcmp(w[0], "decode") == 0)
            cmd_decode(w, n);
        else if (strcmp(w[0], "encode") == 0)
            cmd_encode(w, n);
        else if (strcmp(w[0], "stream") == 0)
            cmd_stream(w, n);
        else if (strcmp(w[0], "burst") == 0 || strcmp(w[0], "chance") == 0 || strcmp(w[0], "line") == 0)
            tables(w, n);
        else
            draws(w, n);
        fflush(stdout);
    }
    return 0;
}
