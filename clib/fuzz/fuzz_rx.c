/* libFuzzer target: the receiver (SPEC 2.6) and the message decoder on arbitrary bytes.
 * The first byte chooses the receiver's table (even: a device's, commands only; odd: a host's);
 * the rest is fed one byte at a time. Beyond "no crash, no out-of-bounds access" (AddressSanitizer),
 * every result must keep the SPEC's promises, else the target aborts:
 * - the receiver never holds more than 63 bytes;
 * - a frame it accepts is 10..62 decoded bytes, its CRC is right, its major version is 1, its type is
 *   in the table, and its payload has the type's size (or is longer, from a newer minor);
 * - such a frame decodes, and re-encoding the message gives back exactly its bytes when nothing was
 *   appended; the wire form is at most 64 bytes and decodes back through a fresh receiver;
 * - a NAK is owed exactly for too_long, bad_crc, bad_version, unknown_type and bad_length, unattributed
 *   for the first two. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../uhil_catalogue.h"
#include "../uhil_framing.h"
#include "../uhil_messages.h"
#include "../uhil_rx.h"

#define REQUIRE(c) do { if (!(c)) abort(); } while (0)

static void check_frame(const struct uhil_rx *rx, const int16_t *table)
{
    const uint8_t *f = rx->buf;
    size_t n = rx->frame_len, plen = n - UHIL_MIN_FRAME, k;
    struct uhil_msg m;
    uint8_t wire[UHIL_MAX_ENCODED];
    size_t w;
    struct uhil_rx again;
    int got = 0;
    REQUIRE(n >= UHIL_MIN_FRAME && n <= UHIL_MAX_FRAME);
    REQUIRE(uhil_crc16(f, n - 2) == (uint16_t)(f[n - 2] | f[n - 1] << 8));
    REQUIRE(f[0] >> 4 == UHIL_PROTO_MAJOR);
    REQUIRE(table[f[1]] >= 0);
    REQUIRE(plen == (size_t)table[f[1]] || (plen > (size_t)table[f[1]] && (f[0] & 0x0F) > UHIL_PROTO_MINOR));
    REQUIRE(uhil_msg_decode(f, n, &m) == 0);
    w = uhil_msg_encode(&m, wire);
    REQUIRE(w >= 12 && w <= UHIL_MAX_ENCODED && wire[w - 1] == 0);
    uhil_rx_init(&again);
    for (k = 0; k < w; k++) {
        int r = uhil_rx_byte(&again, wire[k], uhil_host_payload_size);
        if (r != UHIL_RX_NONE) {
            REQUIRE(r == UHIL_RX_FRAME && k == w - 1);
            got = 1;
        }
    }
    REQUIRE(got);
    if (plen == (size_t)table[f[1]])
        REQUIRE(again.frame_len == n && memcmp(again.buf, f, n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct uhil_rx rx;
    const int16_t *table;
    size_t i;
    if (size == 0)
        return 0;
    table = (data[0] & 1) ? uhil_host_payload_size : uhil_device_payload_size;
    uhil_rx_init(&rx);
    for (i = 1; i < size; i++) {
        uint16_t nak[4];
        int r = uhil_rx_byte(&rx, data[i], table), owed;
        REQUIRE(rx.len <= UHIL_MAX_RUN);
        REQUIRE(r >= UHIL_RX_NONE && r <= UHIL_RX_BAD_LENGTH);
        owed = uhil_rx_nak(&rx, r, nak);
        REQUIRE(owed == (r == UHIL_RX_TOO_LONG || r >= UHIL_RX_BAD_CRC));
        if (owed && (r == UHIL_RX_TOO_LONG || r == UHIL_RX_BAD_CRC))
            REQUIRE(nak[0] == UHIL_UNATTRIBUTED_SEQ && nak[1] == UHIL_UNATTRIBUTED_TYPE);
        if (r == UHIL_RX_TOO_LONG)
            REQUIRE(data[i] != 0);
        if (r == UHIL_RX_FRAME)
            check_frame(&rx, table);
    }
    return 0;
}
