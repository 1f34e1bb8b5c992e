/* The Cortex-M3 port of the sample firmware: the HAL of hal.h on Arm's MPS2 FPGA image AN385, the board
 * QEMU models as `mps2-an385` (qemu-system-arm -machine mps2-an385 -kernel UNIT.elf).
 *
 * Why this board: QEMU models it whole (CMSDK UARTs with their interrupts, CMSDK 32-bit timers, the NVIC),
 * it is a plain Cortex-M3 at 25 MHz like the microcontrollers the units are built on, and Arm's
 * documentation of every register it uses is public; the port is bare metal (no vendor SDK).
 *
 *   UART0   the protocol link, 115200 8N1: receive interrupt-driven into a ring, transmit interrupt-driven
 *           from a ring that holds a whole EVENT_RESEND (a frame waits for room, up to a second)
 *   UART1   the debug console: one line per event the unit sends (state changes, verdicts, boot)
 *   TIMER0  the free-running microsecond counter: counts SYSCLK down over one second; its interrupt counts
 *           the seconds; hal_micros() joins the two, safe against the interrupt being pending
 *   TIMER1  wakes the main loop (asleep in WFI) at the unit's next deadline
 *
 * The unit kind is mps2_an385/kind_KIND.c's (fw_kind_start): the port knows no game.
 * The launcher (harness/links/qemu.py) writes the boot parameters into RAM before reset: serial, seed, a
 * nonce for the boot id and the unit's variant. A board without such a launcher reads them from its
 * unique-id register and option bytes instead.
 *
 * Build-time faults (for the harness's own tests; a real port has none):
 *   -DFW_RX_RING=16   a receive ring too small for a burst of commands: bytes are lost while the main
 *                     loop is busy with the first command of the burst (the receive interrupt goes on
 *                     taking bytes, as a UART with a one-byte holding register makes it)
 *   -DFW_DEBUG_CONSOLE=1  a debug build's console: every frame logged, replies too, and each character
 *                     held for its byte time at 115200 baud (87 us), as a polled UART holds the main loop
 *                     on silicon (QEMU's UART sends at once). With the 16-byte ring: the bug of a debug
 *                     build on a real board, the next command of a burst cut while a reply is logged */
#include <string.h>

#include "hal.h"
#include "unit.h"
#include "../uhil_framing.h"
#include "mps2_an385/board.h"
#include "mps2_an385/kind.h"

#ifndef FW_RX_RING
#define FW_RX_RING 256          /* a power of two; holds a burst of several commands of 64 bytes */
#endif
/* a power of two: an EVENT_RESEND of the whole 64-event buffer (64 frames of at most 64 bytes) fits */
#define TX_RING 4096
#define SEND_WAIT_US 1000000u   /* a full ring is waited on this long (4 kB leave at 115200 baud in 0.36 s) */
#define TICKS_PER_US (SYSCLK_HZ / 1000000u)
#define COUNTER_PERIOD_US 1000000u
#define BAUD 115200u
#define BOOT_PARAMS_MAGIC 0x55484231u       /* "UHB1" */

/* written by the launcher before reset; start-up does not touch them (section .boot_params, NOLOAD) */
struct boot_params {
    uint32_t magic, serial, seed, nonce, flags;
};
__attribute__((section(".boot_params"))) volatile struct boot_params boot_params;

static volatile uint32_t counter_periods;      /* TIMER0 periods completed */

static uint8_t rx_ring[FW_RX_RING];
static uint32_t rx_stamp[FW_RX_RING];           /* hal_micros() when each byte was read from the UART */
static volatile uint32_t rx_head, rx_tail;      /* head: written by the interrupt; tail: by the main loop */
static volatile uint32_t rx_dropped;            /* bytes the ring had no room for */

static uint8_t tx_ring[TX_RING];
static volatile uint32_t tx_head, tx_tail;      /* head: main loop; tail: the interrupt */

/* ---- time ---- */

void timer0_isr(void)
{
    TIMER0->intstatus = 1;
    counter_periods++;
}

uint32_t hal_micros(void)
{
    uint32_t mask = irq_save();
    uint32_t periods = counter_periods;
    uint32_t left = TIMER0->value;
    if (TIMER0->intstatus & 1u) {
        /* the counter passed 0 and its interrupt has not run (interrupts are masked here, or it is only
         * now pending): that period is complete, and `left` may be from before or after the reload, so
         * it is read again, after it */
        periods++;
        left = TIMER0->value;
    }
    irq_restore(mask);
    /* wraps at 2^32 µs (SPEC 3.2): unsigned arithmetic is modulo 2^32 whatever the period */
    return periods * COUNTER_PERIOD_US + (COUNTER_PERIOD_US * TICKS_PER_US - 1u - left) / TICKS_PER_US;
}

void timer1_isr(void)
{
    TIMER1->intstatus = 1;
    TIMER1->ctrl = 0;           /* one shot: the main loop arms it again */
}

/* wake the main loop in `us` microseconds at the latest */
static void wake_in(uint32_t us)
{
    if (us > COUNTER_PERIOD_US)
        us = COUNTER_PERIOD_US;
    TIMER1->ctrl = 0;
    TIMER1->intstatus = 1;
    TIMER1->reload = us * TICKS_PER_US;
    TIMER1->value = us * TICKS_PER_US;
    TIMER1->ctrl = TIMER_CTRL_EN | TIMER_CTRL_INTEN;
}

/* ---- the protocol UART ---- */

void uart0_rx_isr(void)
{
    uint32_t now = hal_micros();
    UART0->intstatus = UART_INT_RX;
    while (UART0->state & UART_STATE_RXFULL) {
        uint8_t b = (uint8_t)UART0->data;
        uint32_t head = rx_head;
        if (head - rx_tail >= FW_RX_RING) {
            rx_dropped++;
            continue;
        }
        rx_ring[head % FW_RX_RING] = b;
        rx_stamp[head % FW_RX_RING] = now;
        rx_head = head + 1;
    }
}

void uart0_tx_isr(void)
{
    UART0->intstatus = UART_INT_TX;
    while (tx_tail != tx_head && !(UART0->state & UART_STATE_TXFULL)) {
        UART0->data = tx_ring[tx_tail % TX_RING];
        tx_tail = tx_tail + 1;
    }
}

static void console_frame(const uint8_t *bytes, size_t n);
static void console_overrun(void);

void hal_send(const uint8_t *bytes, size_t n)
{
    uint32_t mask, i;
    uint32_t since = hal_micros();
    console_frame(bytes, n);
    /* a dropped frame is a gap in the header seq: wait for the transmitter to make room, unless the
     * host has stopped reading altogether */
    while (n > TX_RING - (tx_head - tx_tail))
        if (hal_micros() - since > SEND_WAIT_US)
            return;             /* the frame is dropped whole; EVENT_RESEND recovers events */
    for (i = 0; i < n; i++)
        tx_ring[(tx_head + i) % TX_RING] = bytes[i];
    mask = irq_save();
    tx_head += n;
    irq_restore(mask);
    /* start the transmitter; its interrupt sends the rest */
    mask = irq_save();
    uart0_tx_isr();
    irq_restore(mask);
}

/* ---- the debug console (UART1, polled) ---- */

#define CONSOLE_STALL_US 2000u
#ifndef FW_DEBUG_CONSOLE
#define FW_DEBUG_CONSOLE 0
#endif
#define CONSOLE_BYTE_US (FW_DEBUG_CONSOLE ? 87u : 0u)

/* A debug line waits for the transmitter, but never for long: a console nobody drains (a cable not
 * plugged in, a host that does not read) drops the rest of the line rather than stall the unit. */
static void console_put(const char *s)
{
    for (; *s; s++) {
        uint32_t since = hal_micros();
        while (UART1->state & UART_STATE_TXFULL)
            if (hal_micros() - since > CONSOLE_STALL_US)
                return;
        UART1->data = (uint8_t)*s;
#if FW_DEBUG_CONSOLE
        since = hal_micros();
        while (hal_micros() - since < CONSOLE_BYTE_US)
            ;
#endif
    }
}

static void console_u32(uint32_t v)
{
    char text[11];
    int i = 10;
    text[i] = 0;
    do {
        text[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v);
    console_put(text + i);
}

/* one line per event frame the unit sends, in device time: "12345 state 1 -> 2", "12345 event 0x76 #7" */
static void console_frame(const uint8_t *bytes, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t frame[UHIL_MAX_ENCODED];
    struct uhil_msg m;
    int len;
    char type[5] = {'0', 'x', 0, 0, 0};
    if (n < 2 || n - 1 > sizeof frame)
        return;
    len = uhil_cobs_decode(bytes, n - 1, frame);
    if (len <= 0 || uhil_msg_decode(frame, (size_t)len, &m) != 0 || (m.type < UHIL_BOOT_ID && !FW_DEBUG_CONSOLE))
        return;                 /* replies are not logged (the host has them), but by a debug build */
    console_u32(m.time_us);
    if (m.type == UHIL_STATE_ID) {
        console_put(" state ");
        console_u32(m.u.state.previous);
        console_put(" -> ");
        console_u32(m.u.state.state);
    } else if (m.type == UHIL_BOOT_ID) {
        console_put(" boot reason ");
        console_u32(m.u.boot.reason);
    } else if (m.type == UHIL_SD_VERDICT_ID) {
        console_put(" verdict reason ");
        console_u32(m.u.sd_verdict.reason);
        console_put(" loser ");
        console_u32(m.u.sd_verdict.loser);
    } else {
        type[2] = hex[m.type >> 4];
        type[3] = hex[m.type & 15u];
        console_put(m.type < UHIL_BOOT_ID ? " reply " : " event ");
        console_put(type);
    }
    console_put("\r\n");
}

/* the receive ring overran since the last report: say so, once per overrun, on the console */
static void console_overrun(void)
{
    static uint32_t reported;
    uint32_t dropped = rx_dropped;
    if (dropped == reported)
        return;
    console_put("receive ring overrun: ");
    console_u32(dropped - reported);
    console_put(" bytes lost (ring of ");
    console_u32(FW_RX_RING);
    console_put(" bytes); commands in them go unanswered\r\n");
    reported = dropped;
}

/* ---- pins, lights, entropy ---- */

int hal_read_pin(uint8_t pin)
{
    return pin < 2 ? (int)((FPGAIO_BUTTON >> pin) & 1u) : 0;
}

void hal_set_light(uint8_t light, uint8_t mode, uint8_t target)
{
    (void)target;
    if (light < 2)
        FPGAIO_LED = (FPGAIO_LED & ~(1u << light)) | ((mode ? 1u : 0u) << light);
}

uint32_t hal_entropy(void)
{
    return boot_params.nonce ^ TIMER0->value;
}

/* ---- start-up and the main loop ---- */

static void start_hardware(void)
{
    TIMER0->reload = COUNTER_PERIOD_US * TICKS_PER_US - 1u;
    TIMER0->value = COUNTER_PERIOD_US * TICKS_PER_US - 1u;
    TIMER0->ctrl = TIMER_CTRL_EN | TIMER_CTRL_INTEN;
    UART0->bauddiv = SYSCLK_HZ / BAUD;
    UART0->ctrl = UART_CTRL_TXEN | UART_CTRL_RXEN | UART_CTRL_TXINT | UART_CTRL_RXINT;
    UART1->bauddiv = SYSCLK_HZ / BAUD;
    UART1->ctrl = UART_CTRL_TXEN;
    NVIC_ISER = (1u << IRQ_UART0_RX) | (1u << IRQ_UART0_TX) | (1u << IRQ_TIMER0) | (1u << IRQ_TIMER1);
}

/* hand the unit what the receive interrupt queued, a frame at a time, each with the time its last byte
 * (the delimiter) arrived */
static void receive(struct unit *u)
{
    uint8_t chunk[64];
    size_t n = 0;
    while (rx_tail != rx_head) {
        uint32_t at = rx_tail % FW_RX_RING, stamp = rx_stamp[at];
        chunk[n++] = rx_ring[at];
        rx_tail = rx_tail + 1;          /* from here the interrupt may reuse the slot */
        if (chunk[n - 1] == 0 || n == sizeof chunk || rx_tail == rx_head) {
            unit_receive(u, chunk, n, stamp - u->epoch);
            n = 0;
        }
    }
}

int main(void)
{
    static struct unit u;
    uint32_t serial = 1, seed = 1, flags = 0;
    if (boot_params.magic == BOOT_PARAMS_MAGIC) {
        serial = boot_params.serial;
        seed = boot_params.seed;
        flags = boot_params.flags;
    }
    start_hardware();
    console_put(fw_kind_name);
    console_put(" firmware on mps2-an385\r\n");
    fw_kind_start(&u, serial, seed, flags);
    for (;;) {
        uint32_t at, mask;
        int32_t ahead = (int32_t)COUNTER_PERIOD_US;
        receive(&u);
        console_overrun();
        unit_poll(&u);
        if (unit_next_due(&u, &at)) {
            ahead = uhil_diff(at, unit_now(&u));
            if (ahead <= 0)
                continue;
        }
        wake_in((uint32_t)ahead);
        /* sleep unless a byte arrived since receive(): WFI wakes on an interrupt pending even while
         * masked, so none is lost between the test and the sleep */
        mask = irq_save();
        if (rx_tail == rx_head)
            __asm volatile ("wfi");
        irq_restore(mask);
    }
}
