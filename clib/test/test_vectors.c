/* The library against fixtures/vectors/vectors.h (SPEC 11: items 1-3, as far as the C arrays carry
 * them; tests/test_clib.py checks the fields, the NAKs and the algorithm tables through probe.c).
 * Prints one line per failure and "N passed, N failed" at the end; exits non-zero on a failure. */
#include <stdio.h>
#include <string.h>

#include "vectors.h"
#include "../uhil_algorithms.h"
#include "../uhil_catalogue.h"
#include "../uhil_framing.h"
#include "../uhil_messages.h"
#include "../uhil_rng.h"
#include "../uhil_rx.h"

static unsigned passed, failed;

static void check(int ok, const char *what, const char *label)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s %s\n", what, label);
    }
}

static void frames(void)
{
    size_t i, k;
    for (i = 0; i < UHIL_N_FRAME_VECTORS; i++) {
        const struct uhil_frame_vector *v = &uhil_frame_vectors[i];
        struct uhil_rx rx;
        struct uhil_msg m;
        uint8_t wire[UHIL_MAX_ENCODED];
        int results = 0, last = UHIL_RX_NONE;
        size_t n;
        /* the receiver takes the wire bytes back to the decoded frame */
        uhil_rx_init(&rx);
        for (k = 0; k < v->wire_len; k++) {
            int r = uhil_rx_byte(&rx, v->wire[k], uhil_host_payload_size);
            if (r != UHIL_RX_NONE) {
                last = r;
                results++;
            }
        }
        check(results == 1 && last == UHIL_RX_FRAME && rx.frame_len == v->raw_len &&
              memcmp(rx.buf, v->raw, v->raw_len) == 0, "rx", v->label);
        /* the message decoder reads it, the encoder gives the wire bytes again */
        check(uhil_msg_decode(v->raw, v->raw_len, &m) == 0 && m.type == v->type, "decode", v->label);
        n = uhil_msg_encode(&m, wire);
        check(n == v->wire_len && memcmp(wire, v->wire, n) == 0, "encode", v->label);
        check(uhil_message_name(v->type) != NULL, "name", v->label);
        check(uhil_host_payload_size[v->type] == uhil_payload_size[v->type], "size", v->label);
    }
    {
        int same = 1;
        for (i = 0; i < 256; i++)
            same &= uhil_host_payload_size[i] == uhil_payload_size[i];
        check(same, "payload size table", "");
    }
}

static void streams(void)
{
    size_t i, k;
    for (i = 0; i < UHIL_N_STREAM_VECTORS; i++) {
        const struct uhil_stream_vector *v = &uhil_stream_vectors[i];
        struct uhil_rx rx;
        size_t got = 0;
        int pass;
        /* one byte at a time is the only way this receiver takes bytes: a block is the same loop */
        uhil_rx_init(&rx);
        pass = 1;
        for (k = 0; k < v->stream_len; k++) {
            int r = uhil_rx_byte(&rx, v->stream[k], uhil_host_payload_size);
            if (r == UHIL_RX_NONE)
                continue;
            if (got >= v->n_expect || strcmp(uhil_rx_kind(r), v->expect[got]) != 0)
                pass = 0;
            got++;
        }
        check(pass && got == v->n_expect && rx.len == v->pending, "stream", v->label);
    }
}

static void algorithms(void)
{
    size_t i;
    int k;
    check(uhil_crc16((const uint8_t *)"123456789", 9) == 0x29B1, "crc check value", "");
    check(uhil_diff(0x00000010u, 0xFFFFFFF0u) == 0x20 && uhil_diff(0xFFFFFFF0u, 0x00000010u) == -0x20, "diff", "");
    for (i = 0; i < UHIL_N_RNG_VECTORS; i++) {
        const struct uhil_rng_vector *v = &uhil_rng_vectors[i];
        uhil_rng g;
        int ok = 1;
        uhil_rng_seed(&g, v->rng_seed);
        for (k = 0; k < 8; k++)
            ok &= uhil_rng32(&g) == v->next32[k];
        check(ok, "rng", "");
    }
    for (i = 0; i < UHIL_N_UNIFORM_VECTORS; i++) {
        const struct uhil_uniform_vector *v = &uhil_uniform_vectors[i];
        uhil_rng g;
        int ok = 1;
        uhil_rng_seed(&g, v->rng_seed);
        for (k = 0; k < 6; k++)
            ok &= uhil_uniform(&g, v->n) == v->draws[k];
        check(ok, "uniform", "");
    }
    /* SPEC 6.5's worked example: the defaults' weights and total */
    {
        static const uint32_t w[12] = {9, 18, 27, 36, 32, 28, 24, 20, 16, 12, 8, 4};
        uint32_t counts[13] = {0}, r;
        int ok = uhil_burst_total(1, 4, 12) == 234;
        for (r = 0; r < 234; r++)
            counts[uhil_burst_from_draw(1, 4, 12, r)]++;
        for (k = 1; k <= 12; k++)
            ok &= counts[k] == w[k - 1];
        check(ok, "burst weights 1 4 12", "");
    }
    check(uhil_fire_chance(250, 150, 5) == 1000 && uhil_fire_chance(250, 150, 2) == 550 &&
          uhil_fire_chance(1000, 1000, 0xFFFFFFFFu) == 1000, "fire chance", "");
}

int main(void)
{
    frames();
    streams();
    algorithms();
    printf("%u passed, %u failed\n", passed, failed);
    return failed != 0;
}
